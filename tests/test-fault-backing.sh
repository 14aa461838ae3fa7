#!/bin/bash
# Backing-store failures reach the client with their own error and hurt nothing else:
#  - ENOSPC: a 64M sparse export on a 4M tmpfs. Writes past the space fail with ENOSPC
#    (rdmablk-io, and qemu-io through nbdkit + the rdma plugin); reads still work; once a TRIM
#    frees space, writes succeed again.
#  - EIO: an export on a device-mapper disk whose second half is dm-error. Reads and writes
#    there fail with EIO (rdmablk-io, qemu-io and nbdcopy through NBD), the first half still
#    works; then the whole table is swapped to dm-error live (a disk dying in service) and
#    every read fails with EIO.
# Throughout, the target stays up and a healthy export keeps serving.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires dmsetup losetup mount umount blockdev
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
[ "$(id -u)" = 0 ] || skip "needs root (mounts a tmpfs, creates loop and dm devices)"
modprobe dm_mod 2>/dev/null || true
modprobe loop 2>/dev/null || true
dmsetup targets 2>/dev/null | grep -q '^error' || skip "no dm-error target"

DM=rdmablk-test-err-$$
mkdir -p "$T/small"
loopdev=

# The target holds the tmpfs file and the dm device open: stop it (and nbdkit) before taking
# them away. Registered before anything is created; each step tolerates what does not exist.
cleanup_backing() {
    local pid
    for pid in "${NBDKIT_PID:-}" "${TARGET_PID:-}"; do
        [ -n "$pid" ] && _kill_wait "$pid"
    done
    dmsetup remove --retry "$DM" 2>/dev/null
    [ -n "$loopdev" ] && losetup -d "$loopdev"
    mountpoint -q "$T/small" && umount "$T/small"
    return 0
}
on_exit cleanup_backing

mount -t tmpfs -o size=4M rdmablk-test-small "$T/small" || fail "cannot mount a tmpfs"
truncate -s 64M "$T/disk.raw"
loopdev=$(losetup -f --show "$T/disk.raw") || fail "losetup failed"
# 64M: the first 32M map to the loop device, the second 32M fail every I/O.
dmsetup create "$DM" --table "0 65536 linear $loopdev 0
65536 65536 error" || fail "dmsetup create failed"
dmsetup mknodes "$DM"    # no udev in the guest
[ -b "/dev/mapper/$DM" ] || fail "/dev/mapper/$DM missing after dmsetup create"
ok "4M tmpfs, dm device /dev/mapper/$DM (second half dm-error)"

target_conf "$T/target.conf" max-io=256K buffer-pool=4M <<EOF
[export good]
path = $T/good.img
size = 64M

[export full]
path = $T/small/full.img
size = 64M

[export dmerr]
path = /dev/mapper/$DM
EOF
start_target "$T/target.conf"

# io without the data on stdout (dump).
io_quiet() { rdmablk_io "$@" >/dev/null; }
# expect_fail NAME ERRNO CMD...: CMD must fail and name ERRNO.
expect_fail() {
    local name=$1 err=$2
    shift 2
    if step "$name" "$@"; then
        fail "$name: succeeded, expected $err"
    fi
    grep -q "($err)\|$(errno_text "$err")" "$LOGS/$name.log" ||
        fail "$name: failed without $err: $(tail -n 1 "$LOGS/$name.log")"
}
errno_text() {
    case $1 in
    ENOSPC) echo 'No space left on device' ;;
    EIO) echo 'Input/output error' ;;
    esac
}
# The healthy export and the target itself.
still_serves() {
    _gone "$TARGET_PID" && fail "$1: the target died"
    step "good-$1" rdmablk_io -e good write 0 1M "$2" || fail "$1: the healthy export failed a write"
    step "good-$1-read" rdmablk_io -e good read 0 1M "$2" || fail "$1: the healthy export failed a read"
}

still_serves start 1

# ---- ENOSPC
expect_fail enospc-write ENOSPC rdmablk_io -e full write 0 8M 2
ok "writing 8M on a 4M file system: $(tail -n 1 "$LOGS/enospc-write.log")"
grep -q 'export full: WRITE.*No space left on device' "$LOGS/target.log" ||
    fail "the target did not log the ENOSPC"
step enospc-read io_quiet -e full dump 0 1M || fail "reading the full export failed"
still_serves enospc 3

# ---- EIO
step dm-good-write rdmablk_io -e dmerr write 0 1M 4 || fail "writing the healthy half failed"
step dm-good-read rdmablk_io -e dmerr read 0 1M 4 || fail "reading the healthy half failed"
expect_fail eio-read EIO rdmablk_io -e dmerr dump 48M 64K
expect_fail eio-write EIO rdmablk_io -e dmerr write 40M 1M 5
ok "dm-error half: $(tail -n 1 "$LOGS/eio-read.log"); $(tail -n 1 "$LOGS/eio-write.log")"
step dm-good-read-2 rdmablk_io -e dmerr read 0 1M 4 || fail "the healthy half failed after the errors"
still_serves eio 6

# ---- the same errors through NBD, when the plugin is there
if command -v nbdkit >/dev/null && command -v qemu-io >/dev/null &&
    [ -e "$BUILD/nbdkit-rdma-plugin.so" ]; then
    start_nbdkit hostname="$RDMABLK_ADDR" export=full
    step nbd-enospc qemu-io -f raw -c 'write -P 0xa5 16M 1M' "$NBD_URI" || true
    grep -q 'write failed: No space left on device' "$LOGS/nbd-enospc.log" ||
        fail "NBD write did not fail with ENOSPC: $(tail -n 2 "$LOGS/nbd-enospc.log")"
    ok "NBD (qemu-io): $(grep 'write failed' "$LOGS/nbd-enospc.log")"
    _kill_wait "$NBDKIT_PID"

    start_nbdkit hostname="$RDMABLK_ADDR" export=dmerr
    step nbd-eio qemu-io -f raw -c 'read 48M 64k' "$NBD_URI" || true
    grep -q 'read failed: Input/output error' "$LOGS/nbd-eio.log" ||
        fail "NBD read did not fail with EIO: $(tail -n 2 "$LOGS/nbd-eio.log")"
    if step nbd-copy nbdcopy "$NBD_URI" "$T/copy.img"; then
        fail "nbdcopy of the failing disk succeeded"
    fi
    grep -q 'Input/output error' "$LOGS/nbd-copy.log" ||
        fail "nbdcopy failed without EIO: $(tail -n 2 "$LOGS/nbd-copy.log")"
    ok "NBD (qemu-io, nbdcopy): $(grep 'read failed' "$LOGS/nbd-eio.log")"
    _kill_wait "$NBDKIT_PID"
    NBDKIT_PID=
else
    echo "note: nbdkit, qemu-io or the rdma plugin missing: errors checked through rdmablk-io only"
fi
still_serves nbd 7

# ---- the disk dies in service: every sector fails from now on
dmsetup suspend "$DM" && dmsetup load "$DM" --table "0 131072 error" && dmsetup resume "$DM" ||
    fail "cannot swap the table to dm-error"
dmsetup mknodes "$DM"
blockdev --flushbufs "/dev/mapper/$DM"
expect_fail dead-read EIO rdmablk_io -e dmerr dump 0 64K
ok "disk swapped to dm-error live: $(tail -n 1 "$LOGS/dead-read.log")"
still_serves dead 8

# ---- ENOSPC recovers once space is freed
step trim rdmablk_io -e full trim 0 64M || fail "TRIM of the full export failed"
step enospc-recover rdmablk_io -e full write 0 1M 9 || fail "write after freeing space failed"
step enospc-recover-read rdmablk_io -e full read 0 1M 9 || fail "read after freeing space failed"
ok "after a TRIM freed space, the full export takes writes again"

stop_target
ok "the target stayed up throughout and exits cleanly"
