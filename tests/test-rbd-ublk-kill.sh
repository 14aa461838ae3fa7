#!/bin/bash
# guest-kernel: 6.12
# test-shares: ceph
# ext4 on rdmablk-ublk over one RBD image behind targets a and b (hostname=A,B), all timeouts at
# their defaults (the initiator's 30 s and 2 s keepalive, Ceph's 30 s watch timeout): target a,
# which writes the image, is killed (SIGKILL) while a writer keeps writing files with fsync. The
# device fails over to b, b takes the image's lock over, the files written before the fault and
# every file the writer wrote read back the same, and the kernel logged no I/O error on the
# device (other lanes' tests make errors on theirs).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"
# shellcheck source=tests/rbd-ublk-lib.sh
. "$(dirname "$0")/rbd-ublk-lib.sh"

rbd_ublk_up
start_writer
wait_for 60 writer_wrote 5 || fail "the writer does not write"
kill -KILL "$PID_A"
wait "$PID_A" 2>/dev/null || true
t0=$SECONDS
ok "target a killed (SIGKILL) with $(wc -l <"$T/writer.sums") files written"
wait_for 90 rbd_lock_is "$T/b.conf" disk0 owner || fail "b does not take the image over"
took=$((SECONDS - t0))
ok "b took the image over $took s after the kill"
margin_note "$took" "the takeover after the kill"
check_after_fault
