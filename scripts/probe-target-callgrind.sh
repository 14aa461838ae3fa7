#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# Not a test: a measurement, run as one (alone on the host, nothing else running):
#   RDMABLK_TEST_TRACE_OUT=DIR tests/run-integration scripts/probe-target-callgrind.sh
# (DIR: a directory the guest shares, e.g. the RESULTS of that run)
# The target's user-space instructions per IO, counted by callgrind (valgrind), which unlike a
# sampling profiler is exact under TCG: rdmablk-target runs under callgrind over the bench's
# target setup (a 256 MiB file on ext4 in the page cache, durability = fua), rdmablk-ublk (its
# defaults) in front, and a 6 s fio randread and randwrite row at QD32 (RDMABLK_TEST_CG_QD=N:
# at QD N). The counters are zeroed before each row and dumped after it, into
# DIR/cg-target.PID.N; DIR/cg-ios.txt holds each row's IOs. Then:
#   scripts/callgrind-report IOS DIR/cg-target.PID.N
# (rdmablk-ublk itself does not run under valgrind: its io_uring commands stall there.)
# shellcheck source=scripts/probe-lib.sh
. "$(dirname "$0")/probe-lib.sh"
requires fio valgrind callgrind_control
require_rdma
require_ublk
out=${RDMABLK_TEST_TRACE_OUT:?set RDMABLK_TEST_TRACE_OUT to a directory the guest shares}
qd=${RDMABLK_TEST_CG_QD:-32}
TARGET_WRAP="valgrind --tool=callgrind --callgrind-out-file=$out/cg-target.%p" probe_target 256
ublk_add dev hostname="$RDMABLK_ADDR" export=bench queue-depth=32
sleep 2
for rw in randread randwrite; do
    callgrind_control -z "$TARGET_PID" >/dev/null || fail "callgrind_control -z failed"
    read -r -a d1 <"/sys/block/${DEV#/dev/}/stat"
    fio --name=x --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=$rw \
        --bs=4k --iodepth="$qd" --size=256M --time_based --runtime=6 --output-format=terse \
        >/dev/null || fail "fio $rw"
    read -r -a d2 <"/sys/block/${DEV#/dev/}/stat"
    callgrind_control -d "$rw" "$TARGET_PID" >/dev/null || fail "callgrind_control -d failed"
    # diskstats: reads completed is field 1, writes completed field 5
    echo "$rw qd $qd ios $((d2[0] - d1[0] + d2[4] - d1[4]))" | tee -a "$out/cg-ios.txt"
done
ublk_del_wait dev
stop_target 300     # callgrind writes its final dump (cg-target.PID, no suffix) at exit
ok "probe done"
