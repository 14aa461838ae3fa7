#!/bin/bash
# test-shares: none
# A full backing file system reaches the client as ENOSPC and hurts nothing else: a 64M sparse
# export on a 4M tmpfs. Writes past the space fail with ENOSPC (rdmablk-io, and qemu-io through
# nbdkit + the rdma plugin) and the target logs it; reads still work; once a TRIM frees space,
# writes succeed again. Throughout, the target stays up and a healthy export keeps serving.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fault-lib.sh
. "$(dirname "$0")/fault-lib.sh"

require_rdma
requires mount umount
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
[ "$(id -u)" = 0 ] || skip "needs root (mounts a tmpfs)"

mkdir -p "$T/small"
# The target holds the tmpfs file open: stop it (and nbdkit) before unmounting. Registered
# before anything is created; each step tolerates what does not exist.
cleanup_backing() {
    local pid
    for pid in "${NBDKIT_PID:-}" "${TARGET_PID:-}"; do
        [ -n "$pid" ] && _kill_wait "$pid"
    done
    mountpoint -q "$T/small" && umount "$T/small"
    return 0
}
on_exit cleanup_backing

mount -t tmpfs -o size=4M rdmablk-test-small "$T/small" || fail "cannot mount a tmpfs"
target_conf "$T/target.conf" max-io=256K buffer-pool=4M <<EOF
[export good]
path = $T/good.img
size = 64M

[export full]
path = $T/small/full.img
size = 64M
EOF
start_target "$T/target.conf"
still_serves start 1

expect_fail enospc-write ENOSPC rdmablk_io -e full write 0 8M 2
ok "writing 8M on a 4M file system: $(tail -n 1 "$LOGS/enospc-write.log")"
grep -q 'export full: WRITE.*No space left on device' "$LOGS/target.log" ||
    fail "the target did not log the ENOSPC"
step enospc-read io_quiet -e full dump 0 1M || fail "reading the full export failed"
still_serves enospc 3

if have_nbd_tools; then
    start_nbdkit hostname="$RDMABLK_ADDR" export=full
    step nbd-enospc qemu-io -f raw -c 'write -P 0xa5 16M 1M' "$NBD_URI" || true
    grep -q 'write failed: No space left on device' "$LOGS/nbd-enospc.log" ||
        fail "NBD write did not fail with ENOSPC: $(tail -n 2 "$LOGS/nbd-enospc.log")"
    ok "NBD (qemu-io): $(grep 'write failed' "$LOGS/nbd-enospc.log")"
    _kill_wait "$NBDKIT_PID"
    NBDKIT_PID=
else
    echo "note: nbdkit, qemu-io or the rdma plugin missing: ENOSPC checked through rdmablk-io only"
fi
still_serves nbd 4

step trim rdmablk_io -e full trim 0 64M || fail "TRIM of the full export failed"
step enospc-recover rdmablk_io -e full write 0 1M 9 || fail "write after freeing space failed"
step enospc-recover-read rdmablk_io -e full read 0 1M 9 || fail "read after freeing space failed"
ok "after a TRIM freed space, the full export takes writes again"

stop_target
ok "the target stayed up throughout and exits cleanly"
