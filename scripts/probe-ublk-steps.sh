#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# Not a test: a measurement, run as one (alone on the host, nothing else running):
#   tests/run-integration scripts/probe-ublk-steps.sh
# Where a 4 KiB QD1 IO's time goes, from the project's own clocks, without a tracer: for each
# build, three rounds of a 10 s fio randread and randwrite row at QD1 on rdmablk-ublk (its
# defaults, step-times=yes; one device per row) over the bench's target setup (a 512 MiB file
# on ext4, in the page cache, durability = fua). Per row it prints IOPS, fio's p50, the guest's
# busy CPU per IO, voluntary and involuntary switches per IO of the server and the target, the
# target's stage means (its metrics) and the server's step-times and spin lines at del.
# The builds: this tree's, and a second one if ../wt-base/build holds one (e.g. `git worktree
# add ../wt-base REV && make -C ../wt-base`), alternating, this tree's first.
# shellcheck source=scripts/probe-lib.sh
. "$(dirname "$0")/probe-lib.sh"
# shellcheck source=tests/metrics-lib.sh
. "$(dirname "$0")/../tests/metrics-lib.sh"
requires fio curl
require_rdma
require_ublk
ROUNDS=3 RT=10
top=$(cd "$(dirname "$0")/.." && pwd)
builds=new
[ -x "$top/../wt-base/build/rdmablk-ublk" ] && builds="new base"
probe_target 512 metrics-listen="$METRICS_ADDR"
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
vcs() { grep -h '^voluntary_ctxt_switches' /proc/"$1"/task/*/status | awk '{s+=$2} END {print s}'; }
nvcs() { grep -h '^nonvoluntary_ctxt_switches' /proc/"$1"/task/*/status | awk '{s+=$2} END {print s}'; }
for r in $(seq "$ROUNDS"); do
  for q in $builds; do
    case $q in new) UBLK=$top/build/rdmablk-ublk ;; base) UBLK=$top/../wt-base/build/rdmablk-ublk ;; esac
    # A build from before step-times (55ba05d) refuses the key: its rows have no step lines.
    steps=(step-times=yes)
    usage=$("$UBLK" 2>&1 || true)    # its usage (exit 2); a pipe would fail under pipefail
    case $usage in *step-times*) ;; *) steps=() ;; esac
    for rw in randread randwrite; do
      n=s$r-$q-$rw
      scrape "$T/m0"
      ublk_add "$n" hostname="$RDMABLK_ADDR" export=bench queue-depth=32 "${steps[@]}"
      sleep 1
      b0=$(busy); v0=$(vcs "$UBLK_PID"); tv0=$(vcs "$TARGET_PID"); n0="$(nvcs "$UBLK_PID") $(nvcs "$TARGET_PID")"
      fio --name=x --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=$rw \
          --bs=4k --iodepth=1 --size=512M --time_based --runtime="$RT" --output-format=json \
          --output="$T/$n.json" || fail "fio $n"
      b1=$(busy); v1=$(vcs "$UBLK_PID"); tv1=$(vcs "$TARGET_PID"); n1="$(nvcs "$UBLK_PID") $(nvcs "$TARGET_PID")"
      ublk_del_wait "$n"
      scrape "$T/m1"
      python3 - "$n" "$T/$n.json" "$b0" "$b1" "$v0" "$v1" "$tv0" "$tv1" "$T/m0" "$T/m1" "$LOGS/$n.log" "$(getconf CLK_TCK)" "$n0" "$n1" <<'PY' || fail "no figures for $n"
import json, re, sys
n, js, b0, b1, v0, v1, tv0, tv1, m0, m1, log, hz, n0, n1 = sys.argv[1:]
j = json.load(open(js))["jobs"][0]
op = "read" if "read" in n else "write"
r = j[op]; ios = r["total_ios"]; iops = r["iops"]
p50 = r["clat_ns"]["percentile"]["50.000000"] / 1000
bb0, ib0 = map(float, b0.split()); bb1, ib1 = map(float, b1.split())
cpu = (bb1 - bb0) / float(hz) * 1000 / ios
def stages(f):
    d = {}
    for l in open(f):
        m = re.match(r'rdmablk_request_stage_seconds_(sum|count)\{op="%s",stage="(\w+)"\} (\S+)' % op, l)
        if m: d[(m.group(2), m.group(1))] = float(m.group(3))
        m = re.match(r'rdmablk_request_duration_seconds_(sum|count)\{op="%s"\} (\S+)' % op, l)
        if m: d[("total", m.group(1))] = float(m.group(2))
    return d
a, b = stages(m0), stages(m1)
st = []
for s in ("data", "backing_write", "flush", "reply", "total"):
    c = b.get((s, "count"), 0) - a.get((s, "count"), 0)
    if c > 0:
        st.append("%s %.0f" % (s, (b[(s, "sum")] - a[(s, "sum")]) / c * 1e6))
nv = [(int(y) - int(x)) / ios for x, y in zip(n0.split(), n1.split())]
print("   involuntary switches per IO: server %.2f, target %.2f" % tuple(nv))
print("%s: %d IOPS p50 %.0f us, busy CPU %.3f ms/IO, server vcs/IO %.2f, target vcs/IO %.2f; target stages us: %s"
      % (n, iops, p50, cpu, (int(v1) - int(v0)) / ios, (int(tv1) - int(tv0)) / ios, ", ".join(st)))
for l in open(log):
    m = re.search(r'queue (\d+): busy-poll=adaptive: (.*)', l)
    if m: print("   q%s: %s" % (m.group(1), m.group(2)))
    m = re.search(r'queue (\d+): step-times: (.*)', l)
    if m: print("   q%s: %s" % (m.group(1), m.group(2)))
PY
    done
  done
done
ok "probe done"
