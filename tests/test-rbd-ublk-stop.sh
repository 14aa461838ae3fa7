#!/bin/bash
# guest-kernel: 6.12
# test-shares: ceph
# ext4 on rdmablk-ublk over one RBD image behind targets a and b (hostname=A,B), all timeouts at
# their defaults (the initiator's 30 s and 2 s keepalive, Ceph's 30 s watch timeout): target a,
# which writes the image, is stopped (SIGSTOP) for 60 s while a writer keeps writing files with
# fsync. The device fails over to b; b finds a's lock held by a holder that keeps its watch but
# answers nothing, breaks it after 5 s (RBD_SILENT_S), blocklisting a first, and serves the
# writes. Then a continues (SIGCONT): it can write nothing (it is on the OSDs' blocklist), the
# files written before the fault and every file the writer wrote read back the same, and the
# kernel logged no I/O error on the device. Without the break, b would wait for a's watch to
# lapse (30 s) and the writes resent to it would reach their 30 s deadline: EIO.
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
kill -STOP "$PID_A"
on_exit kill -CONT "$PID_A"
t0=$SECONDS
ok "target a stopped (SIGSTOP) with $(wc -l <"$T/writer.sums") files written"

wait_for 90 rbd_lock_is "$T/b.conf" disk0 owner || fail "b does not take the image over"
took=$((SECONDS - t0))
margin_note "$took" "the lock break after the stop"
[ "$(rbd_lock_stat "$T/b.conf" disk0 breaks)" = 1 ] || fail "b's --stats counts no broken lock"
holder=$(sed -n "s/.*the lock's holder \([^ ]*\) keeps its watch but answers nothing.*/\1/p" \
    "$LOGS/b.log" | head -n 1)
[ -n "$holder" ] || fail "b does not say whose lock it broke"
wait_for 180 on_blocklist "$holder" || fail "a ($holder) is not on the OSDs' blocklist: $(cat "$LOGS/blocklist.log")"
ok "b broke the silent a's lock and wrote within ${took} s, a ($holder) blocklisted first"

while [ $((SECONDS - t0)) -lt 60 ]; do sleep 1; done
kill -CONT "$PID_A"
ok "target a continued after 60 s"
check_after_fault
