#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# A fence that cannot revoke is never counted as done (initiator/slots.c, direct.c). With the
# RDMABLK_TEST_FAULT_FENCE hook every memory window deallocation and the deregistration of
# rdmablk-ublk's registered buffers "fail", as a device could. The target is killed (-9) under a
# verified fio write and restarted: the server says the windows cannot be deallocated and that
# the region stays registered, and hands the buffers back to the kernel only because the dead
# QP is in the error state (through which the target can no longer reach them); the pool under
# the failed windows is never freed ("stay allocated"). fio's crc32c verify passes. Without the
# hook (the control) the same run revokes everything and logs none of it.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
require_rdma
require_ublk
write_target_conf 64M
start_target "$T/target.conf"

# round NAME: a device, fio with verify, the target killed and restarted under it.
round() {
    local name=$1 rc=0
    ublk_add "$name" hostname="$RDMABLK_ADDR" export=disk0 queues=1 keepalive=1 timeout=90
    fio --name=w --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 \
        --rw=randwrite --bs=64k --iodepth=8 --size=16M --verify=crc32c --do_verify=1 \
        >"$LOGS/fio-$name.log" 2>&1 &
    local fio_pid=$!
    track_pid "$fio_pid"
    wait_for 60 sh -c "[ \$(stat -c %b '$T/disk0.img') -gt 2048 ]" || fail "$name: fio never wrote"
    kill -KILL "$TARGET_PID"
    wait "$TARGET_PID" 2>/dev/null || true
    wait_for 60 grep -q 'lost:' "$LOGS/$name.log" || fail "$name: the server never noticed"
    mv "$LOGS/target.log" "$LOGS/target-$name.log"
    start_target "$T/target.conf"
    wait_exit 280 "$fio_pid" || rc=$?
    [ "$rc" = 0 ] || fail "$name: fio exited $rc across the target restart"
    grep -q 'err= 0' "$LOGS/fio-$name.log" || fail "$name: fio reported errors"
    step "del-$name" timeout 120 "$UBLK" del "$DEV" || fail "$name: rdmablk-ublk del failed"
    wait_for 30 _gone "$UBLK_PID" || fail "$name: the server did not exit"
}

RDMABLK_TEST_FAULT_FENCE=1 round fault
grep -q 'memory window(s) cannot be deallocated' "$LOGS/fault.log" ||
    fail "the failed window deallocation was not reported"
grep -q 'ibv_dereg_mr of the direct I/O region' "$LOGS/fault.log" ||
    fail "the failed deregistration of the ublk buffers was not reported"
grep -q 'the QP is in the error state' "$LOGS/fault.log" ||
    fail "the buffers went back without the QP's fence"
grep -q "the pool's [0-9]* bytes stay allocated" "$LOGS/fault.log" ||
    fail "the pool under unrevoked windows was freed"
ok "hook: unrevoked windows and region reported, buffers fenced by the QP in error, pool kept; fio verified"

round control
if grep -E 'cannot be deallocated|stay allocated|ibv_dereg_mr of the direct' "$LOGS/control.log"; then
    fail "control: a fence failure was reported without the hook"
fi
ok "control: without the hook every window and the region were revoked"
