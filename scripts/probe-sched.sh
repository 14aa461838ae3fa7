#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# Not a test: a measurement, run as one (alone on the host, nothing else running):
#   RDMABLK_TEST_PROBE_WHAT=slice|unpin tests/run-integration scripts/probe-sched.sh
# Two scheduling choices for the product's threads, each against the product as it is. For
# rdmablk-ublk (its defaults) over the bench's target setup, fio 4 KiB rows at QD32 and QD1,
# RDMABLK_TEST_PROBE_ROUNDS rounds (3); in each round every row runs twice on a new device, once as the
# product is ("as-is") and once with the variant, the order alternating by round:
# - slice: a shorter EEVDF slice (sched_setattr's sched_runtime, Linux 6.12), RDMABLK_TEST_PROBE_SLICE_US
#   (100), on every thread of rdmablk-ublk and rdmablk-target, so that a woken thread
#   preempts the one running;
# - unpin: rdmablk-ublk's threads allowed on every CPU (taskset), not pinned to their queue's.
# Per row: IOPS, p50, the guest's busy CPU per IO, switches per IO of both processes.
# shellcheck source=scripts/probe-lib.sh
. "$(dirname "$0")/probe-lib.sh"
requires fio python3
require_rdma
require_ublk
ROUNDS=${RDMABLK_TEST_PROBE_ROUNDS:-3} RT=${RDMABLK_TEST_PROBE_RT:-8} SLICE_US=${RDMABLK_TEST_PROBE_SLICE_US:-100} WHAT=${RDMABLK_TEST_PROBE_WHAT:-slice}
case $WHAT in slice|unpin) ;; *) fail "RDMABLK_TEST_PROBE_WHAT=$WHAT: slice or unpin" ;; esac
probe_target 512
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
sw() { grep -h "^$2" /proc/"$1"/task/*/status | awk '{s+=$2} END {print s}'; }
# setslice US PID...: sched_runtime US (0: the kernel's default) on every thread of each PID.
setslice() {
    local us=$1
    shift
    python3 - "$us" "$@" <<'PY' || fail "sched_setattr failed"
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
us = int(sys.argv[1])
for pid in sys.argv[2:]:
    for tid in os.listdir("/proc/%s/task" % pid):
        # struct sched_attr: size, policy, flags, nice, prio, runtime, deadline, period
        a = struct.pack("IIQiIQQQ", 48, 0, 0, 0, 0, us * 1000, 0, 0)
        buf = ctypes.create_string_buffer(a, 48)
        if libc.syscall(314, int(tid), buf, 0) != 0:
            e = ctypes.get_errno()
            sys.exit("sched_setattr %s: %s" % (tid, os.strerror(e)))
PY
}
# variant as-is|slice|unpin: applied to the device just added.
variant() {
    case $1 in
      as-is) setslice 0 "$UBLK_PID" "$TARGET_PID" ;;
      slice) setslice "$SLICE_US" "$UBLK_PID" "$TARGET_PID"
             grep -q "se.slice  *: *$((SLICE_US * 1000))\$" /proc/"$UBLK_PID"/sched ||
                 fail "the kernel did not take the slice: $(grep se.slice /proc/"$UBLK_PID"/sched)" ;;
      unpin) taskset -a -p "$(printf '%x' $(( (1 << $(nproc)) - 1 )))" "$UBLK_PID" >/dev/null ||
                 fail "taskset failed" ;;
    esac
}
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
echo "sched features: $(cat /sys/kernel/debug/sched/features 2>/dev/null || echo unknown)"
for r in $(seq "$ROUNDS"); do
  order="as-is $WHAT"
  [ $((r % 2)) = 0 ] && order="$WHAT as-is"
  for row in randread:32 randwrite:32 randread:1 randwrite:1; do
    rw=${row%:*} qd=${row#*:}
    for s in $order; do
      n=r$r-$rw-qd$qd-$s
      ublk_add "$n" hostname="$RDMABLK_ADDR" export=bench
      sleep 1
      variant "$s"
      b0=$(busy); s0="$(sw "$UBLK_PID" voluntary) $(sw "$TARGET_PID" voluntary) $(sw "$UBLK_PID" nonvoluntary) $(sw "$TARGET_PID" nonvoluntary)"
      fio --name=x --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw="$rw" \
          --bs=4k --iodepth="$qd" --size=512M --time_based --runtime="$RT" --output-format=json \
          --output="$T/$n.json" || fail "fio $n"
      b1=$(busy); s1="$(sw "$UBLK_PID" voluntary) $(sw "$TARGET_PID" voluntary) $(sw "$UBLK_PID" nonvoluntary) $(sw "$TARGET_PID" nonvoluntary)"
      python3 - "$n" "$T/$n.json" "$b0" "$b1" "$s0" "$s1" "$(getconf CLK_TCK)" <<'PY' || fail "no figures for $n"
import json, sys
n, js, b0, b1, s0, s1, hz = sys.argv[1:]
j = json.load(open(js))["jobs"][0]
r = j["read" if "read" in n else "write"]
ios = r["total_ios"]
cpu = (float(b1.split()[0]) - float(b0.split()[0])) / float(hz) * 1000 / ios
d = [(int(y) - int(x)) / ios for x, y in zip(s0.split(), s1.split())]
print("%s: %d IOPS p50 %.0f us, busy CPU %.3f ms/IO, vcs/IO server %.2f target %.2f, ivcs/IO server %.2f target %.2f"
      % (n, r["iops"], r["clat_ns"]["percentile"]["50.000000"] / 1000, cpu, d[0], d[1], d[2], d[3]))
PY
      ublk_del_wait "$n"
    done
  done
done
ok "probe done"
