#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# rdmablk-ublk step-times=yes splits each request's time in the server by step, and the split
# is true. The export is a block device on dm-delay (direct-io = yes, so every read reaches the
# device). One device reads at QD1 with no delay, then a second one with 50 ms added to every
# read of the device: the round trip (sent to reaped) grows past 40 ms (dm-delay's timer has
# jiffy steps) and by at least 30 ms more than the first device's (the control), while the
# server's own steps and the idle gap stay within 5 ms of the control's. In both runs the steps
# and the idle gap add up to fio's time per IO within 25 %. A bad value is refused.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"
# shellcheck source=tests/dmdelay-lib.sh
. "$(dirname "$0")/dmdelay-lib.sh"

requires fio python3
require_rdma
require_ublk
dmdelay_create steps 32

out=$("$UBLK" add hostname="$RDMABLK_ADDR" export=x step-times=maybe 2>&1) &&
    fail "step-times=maybe was accepted: $out"
grep -q "invalid step-times 'maybe': expected a boolean" <<<"$out" ||
    fail "step-times=maybe: the error does not name the key and its values: $out"
ok "step-times=maybe refused: $out"

target_conf "$T/target.conf" port=10810 queue-depth=16 <<EOF
[export steps]
path = $DM_DEV
direct-io = yes
EOF
start_target "$T/target.conf"

# run NAME IOS: a device with step-times=yes, IOS 4 KiB reads at QD1, the device removed; writes
# "sent rt hand gap gaps sent_n wall ios pause_ms" to $T/NAME.fig: the step means and fio's
# time per IO in us, and the pauses' time in ms.
run() {
    local name=$1 ios=$2 line
    ublk_add "$name" hostname="$RDMABLK_ADDR" export=steps queues=1 queue-depth=16 step-times=yes
    step "fio-$name" fio --name="$name" --filename="$DEV" --allow_file_create=0 --ioengine=libaio \
        --direct=1 --rw=randread --bs=4k --iodepth=1 --size=32M --number_ios="$ios" \
        --output-format=json --output="$T/$name.json" || fail "fio QD1 reads on $DEV failed"
    ublk_del_wait "$name"
    line=$(grep -o 'queue 0: step-times: .*' "$LOGS/$name.log") ||
        fail "$name: no step-times line in the server's log: $(cat "$LOGS/$name.log")"
    echo "$name: $line"
    python3 - "$line" "$T/$name.json" >"$T/$name.fig" <<'PY' || fail "$name: no figures"
import json, re, sys
m = re.search(r'(\d+) requests sent, (\d+) results handed back; mean us: fetched to sent ([\d.]+), '
              r'sent to reaped ([\d.]+), reaped to handed back ([\d.]+); idle gap \(handed back to '
              r'the next request, nothing in flight\) ([\d.]+) over (\d+) gaps, and (\d+) pauses over 10 ms '
              r'\(([\d.]+) ms in all\)', sys.argv[1])
if not m:
    sys.exit("the step-times line does not parse: " + sys.argv[1])
sent_n, handed, s, rt, h, gap, gaps, pauses, pause_ms = m.groups()
r = json.load(open(sys.argv[2]))["jobs"][0]["read"]
wall = r["runtime"] * 1000.0 / r["total_ios"]
print(s, rt, h, gap, gaps, sent_n, "%.1f" % wall, r["total_ios"], pause_ms)
PY
}

# check WHAT NAME RT_MIN [CONTROL]: run NAME's figures add up, its round trip is RT_MIN ms or
# more, and with CONTROL at least 30 ms more than run CONTROL's, its other steps within 5 ms.
check() {
    python3 - "$1" "$(cat "$T/$2.fig")" "$3" "$(cat "$T/${4:-$2}.fig")" "${4:-}" <<'PY' || exit 1
import sys
name, f, lo = sys.argv[1], sys.argv[2].split(), float(sys.argv[3])
c, control = sys.argv[4].split(), sys.argv[5]
s, rt, h, gap = map(float, f[:4])
gaps, sent, wall, ios = int(f[4]), int(f[5]), float(f[6]), int(f[7])
def bad(why):
    print("FAIL: %s: %s (%s)" % (name, why, " ".join(f)), file=sys.stderr)
    sys.exit(1)
if sent < ios:
    bad("%d requests sent for %d reads" % (sent, ios))
if gaps < ios * 0.9:
    bad("%d idle gaps for %d QD1 reads" % (gaps, ios))
if rt / 1000 < lo:
    bad("round trip %.1f ms, under %g ms" % (rt / 1000, lo))
if control and rt - float(c[1]) < 30000:
    bad("round trip %.1f ms, not 30 ms more than the control's %.1f" % (rt / 1000, float(c[1]) / 1000))
if s >= 5000 or h >= 5000:
    bad("the server's own steps take %.0f and %.0f us" % (s, h))
for i, what in ((0, "fetched to sent"), (2, "reaped to handed back"), (3, "the idle gap")):
    if abs(float(f[i]) - float(c[i])) > 5000:
        bad("%s moved with the delay: %s us against %s" % (what, f[i], c[i]))
total = s + rt + h + gap      # pauses left out: the one before fio's first read is not in its run
if abs(total - wall) > 0.25 * wall:
    bad("the steps add up to %.0f us per IO, fio saw %.0f" % (total, wall))
print("%s: fetched to sent %.0f us, round trip %.0f us, reaped to handed back %.0f us, "
      "idle gap %.0f us; sum %.0f us against fio's %.0f us per IO" % (name, s, rt, h, gap, total, wall))
PY
}

run nodelay 400
check "no delay (control)" nodelay 0
dmdelay_set 50 0
run delay50 100
check "50 ms read delay" delay50 40 nodelay
ok "step-times: the target's 50 ms read delay shows in the round trip, and nowhere else"
