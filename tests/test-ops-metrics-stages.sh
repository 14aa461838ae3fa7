#!/bin/bash
# test-shares: alone
# The stage histograms explain a slow disk. A block export (direct-io = yes, so that a write
# reaches the device before it is acknowledged) sits on a dm-delay device over a loop device.
# fio writes through nbdkit rdma twice: first with no delay, then with 60 ms added to every
# write of the device. Between two scrapes of /metrics, the write requests' backing_write stage
# p50 moves from under 20 ms to over 50 ms, while their data and reply stages stay under 20 ms.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/metrics-lib.sh
. "$(dirname "$0")/metrics-lib.sh"
# shellcheck source=tests/dmdelay-lib.sh
. "$(dirname "$0")/dmdelay-lib.sh"

requires nbdkit fio curl python3
require_rdma
requires_file "$BUILD/nbdkit-rdma-plugin.so"
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"
dmdelay_create slow 64
target_conf "$T/target.conf" port=10810 queue-depth=32 metrics-listen=$METRICS_ADDR <<EOF
[export slow]
path = $DM_DEV
direct-io = yes
durability = fua
EOF
start_target "$T/target.conf"
grep -q "export slow: $DM_DEV, 67108864 bytes, direct-io" "$LOGS/target.log" ||
    fail "the target did not open the export with direct-io"
start_nbdkit hostname="$RDMABLK_ADDR" export=slow

writes() {
    fio --name="$1" --ioengine=nbd --uri="$NBD_URI" --rw=randwrite --bs=4k --iodepth=4 \
        --size=32M --time_based --runtime=8 >"$LOGS/fio-$1.log" 2>&1 || fail "fio $1 failed"
}

# p50s FROM TO: the write requests' p50 per stage, in ms, over what happened between two
# scrapes (bucket deltas; the p50 is the upper bound of the bucket it falls in).
p50s() {
    python3 - "$1" "$2" <<'EOF'
import re, sys
def load(path):
    h = {}
    for line in open(path):
        m = re.match(r'rdmablk_request_stage_seconds_bucket\{op="write",stage="(\w+)",le="([^"]+)"\} (\d+)', line)
        if m:
            h.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(3))))
    return h
a, b = load(sys.argv[1]), load(sys.argv[2])
for stage in ("data", "backing_write", "reply"):
    d = [(le, nb - na) for (le, nb), (_, na) in zip(b[stage], a[stage])]
    total = d[-1][1]
    p50 = next(le for le, n in d if n * 2 >= total) if total else float("nan")
    print(stage, total, "%.3f" % (p50 * 1000))
EOF
}

scrape "$T/s0.txt" || fail "GET /metrics failed"
writes fast
scrape "$T/s1.txt" || fail "GET /metrics failed"
dmdelay_set 0 60
writes slow
scrape "$T/s2.txt" || fail "GET /metrics failed"
p50s "$T/s0.txt" "$T/s1.txt" >"$T/fast.p50"
p50s "$T/s1.txt" "$T/s2.txt" >"$T/slow.p50"
cat "$T/fast.p50" "$T/slow.p50" >"$LOGS/p50.log"
echo "no delay: $(tr '\n' ';' <"$T/fast.p50")  60 ms: $(tr '\n' ';' <"$T/slow.p50")"
stage() { awk -v s="$2" '$1 == s { print $3 }' "$1"; }
count() { awk -v s="$2" '$1 == s { print $2 }' "$1"; }
below() { python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$1" "$2"; }
[ "$(count "$T/slow.p50" backing_write)" -gt 20 ] || fail "too few writes with the delay"
below "$(stage "$T/fast.p50" backing_write)" 20 ||
    fail "without a delay the backing_write p50 is already $(stage "$T/fast.p50" backing_write) ms"
below 50 "$(stage "$T/slow.p50" backing_write)" ||
    fail "with 60 ms per device write, the backing_write p50 is only $(stage "$T/slow.p50" backing_write) ms"
for s in data reply; do
    below "$(stage "$T/slow.p50" $s)" 20 ||
        fail "the $s stage moved with the disk's delay: p50 $(stage "$T/slow.p50" $s) ms"
done
ok "a 60 ms write delay moved backing_write's p50 from $(stage "$T/fast.p50" backing_write) to $(stage "$T/slow.p50" backing_write) ms; data $(stage "$T/slow.p50" data) ms and reply $(stage "$T/slow.p50" reply) ms did not"
