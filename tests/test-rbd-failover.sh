#!/bin/bash
# test-shares: ceph
# Failover on RBD: two targets, on the two addresses of the guest's netdev, export the same RBD
# image (rbd:rbd/img0, 64M). fio random writes with crc32c verify run through `nbdkit rdma
# hostname=A,B` (two NBD connections); target A, which serves both and holds the image's
# exclusive lock, is killed with SIGKILL mid-write. Both connections fail over to B, B takes the
# lock over (librbd breaks the dead holder's lock once its watch lapsed: --stats of B shows it
# the owner after one takeover) and fio's verify of every block passes. Then `rbd export` of the
# image, Ceph's own copy read with no target involved, passes fio's --verify_only of the same
# job: no acknowledged write was lost. The verify-only check's control: the same check on that
# copy with one block overwritten fails, so it sees a lost block.
# RDMABLK_TEST_RBD_FAILOVER_NEGATIVE=1 is the negative control of the failover: nbdkit names A
# only, so the kill must fail fio's run.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"

requires nbdkit fio ip python3
require_ceph
require_rdma
requires_file "$PLUGIN" "$BUILD/rdmablk-target"
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"
add_second_address

negative=${RDMABLK_TEST_RBD_FAILOVER_NEGATIVE:-0}
ceph_up rbd img0 64M
SHARED_PATH=rbd:rbd/img0
SHARED_EXTRA="ceph-conf = $CEPH_CONF"
start_two_targets
ok "targets a ($RDMABLK_ADDR) and b ($ADDR2) serve rbd:rbd/img0 as disk0"
hosts="$RDMABLK_ADDR,$ADDR2"
if [ "$negative" = 1 ]; then hosts=$RDMABLK_ADDR; fi
# -v: a failover is a routine event, an nbdkit debug message.
start_nbdkit -v hostname="$hosts" export=disk0 timeout=60 keepalive=1

SECONDS=0
start_failover_fio --ioengine=nbd --uri="$NBD_URI" --iodepth=32 --bssplit="$FAILOVER_BSSPLIT"
# (The log, not --stats, which is too slow on a loaded TCG host to time the kill.)
wait_for 120 grep -q 'holds the image.s exclusive lock' "$LOGS/a.log" ||
    fail "a does not take the image's lock"
kill_a_mid_write nbdkit_read
rc=0
if [ "$negative" = 1 ]; then
    wait_exit 600 "$FIO_PID" || rc=$?
    [ "$rc" != 0 ] || fail "negative control: fio passed although its only target was killed"
    ok "negative control: with only a in the list, the kill failed fio (status $rc)"
    exit 0
fi
# While fio still runs (the rest of its writes, then its verify pass), b serves both NBD
# connections and holds the lock; it gives the lock back when fio's connections close.
b_serves() { conns_are "$T/b.conf" 2 && rbd_lock_is "$T/b.conf" disk0 owner; }
wait_for 240 b_serves || fail "b does not serve both NBD connections as the lock's owner"
ok "b serves both NBD connections and owns the image's lock"

wait_exit 600 "$FIO_PID" || rc=$?
fio_failed_over "$rc"
took=$(rbd_lock_stat "$T/b.conf" disk0 acquired)/$(rbd_lock_stat "$T/b.conf" disk0 takeovers)
[ "$took" = 1/1 ] || fail "b's --stats: lock acquired/takeovers $took, expected 1/1"
grep -q 'holds the image.s exclusive lock, taken over from' "$LOGS/b.log" ||
    fail "b's log does not say it took the lock over"
ok "fio randwrite + crc32c verify passed across the failover in ${SECONDS}s ($FAILOVERS failovers; b took the lock over once)"

# Ceph's copy, read by rbd itself, holds every block fio wrote (fio acknowledged them all).
step export rbd_cmd export rbd/img0 "$T/export.img" || fail "rbd export failed"
step verify-export failover_fio_job --bssplit="$FAILOVER_BSSPLIT" --ioengine=psync --filename="$T/export.img" --verify_only ||
    fail "rbd export of the image fails fio's verify: an acknowledged write is missing"
ok "rbd export of the image passes fio's verify of all 64M"
dd if=/dev/zero of="$T/export.img" bs=4k count=1 seek=300 conv=notrunc 2>/dev/null
! step verify-corrupt failover_fio_job --bssplit="$FAILOVER_BSSPLIT" --ioengine=psync --filename="$T/export.img" --verify_only ||
    fail "control: fio's verify passed on a copy with a zeroed block: the check is blind"
grep -q 'verify: bad' "$LOGS/verify-corrupt.log" || fail "control: fio failed, but not in verify"
ok "control: the same verify fails on the copy with one 4 KiB block zeroed"
