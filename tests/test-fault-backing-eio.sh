#!/bin/bash
# test-shares: none
# A failing backing disk reaches the client as EIO and hurts nothing else: an export on a
# device-mapper disk whose second half is dm-error. Reads and writes there fail with EIO
# (rdmablk-io, qemu-io and nbdcopy through NBD), the first half still works; then the whole
# table is swapped to dm-error live (a disk dying in service) and every read fails with EIO.
# Throughout, the target stays up and a healthy export keeps serving.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fault-lib.sh
. "$(dirname "$0")/fault-lib.sh"

require_rdma
requires dmsetup losetup blockdev
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
[ "$(id -u)" = 0 ] || skip "needs root (creates loop and dm devices)"
modprobe dm_mod 2>/dev/null || true
modprobe loop 2>/dev/null || true
dmsetup targets 2>/dev/null | grep -q '^error' || skip "no dm-error target"

DM=rdmablk-test-err-$$
loopdev=
# The target holds the dm device open: stop it (and nbdkit) before taking it away.
# Registered before anything is created; each step tolerates what does not exist.
cleanup_backing() {
    local pid
    for pid in "${NBDKIT_PID:-}" "${TARGET_PID:-}"; do
        [ -n "$pid" ] && _kill_wait "$pid"
    done
    dmsetup remove --retry "$DM" 2>/dev/null
    [ -n "$loopdev" ] && losetup -d "$loopdev"
    return 0
}
on_exit cleanup_backing

truncate -s 64M "$T/disk.raw"
loopdev=$(losetup -f --show "$T/disk.raw") || fail "losetup failed"
# 64M: the first 32M map to the loop device, the second 32M fail every I/O.
dmsetup create "$DM" --table "0 65536 linear $loopdev 0
65536 65536 error" || fail "dmsetup create failed"
dmsetup mknodes "$DM"    # no udev in the guest
[ -b "/dev/mapper/$DM" ] || fail "/dev/mapper/$DM missing after dmsetup create"
ok "dm device /dev/mapper/$DM (second half dm-error)"

target_conf "$T/target.conf" max-io=256K buffer-pool=4M <<EOF
[export good]
path = $T/good.img
size = 64M

[export dmerr]
path = /dev/mapper/$DM
EOF
start_target "$T/target.conf"
still_serves start 1

step dm-good-write rdmablk_io -e dmerr write 0 1M 4 || fail "writing the healthy half failed"
step dm-good-read rdmablk_io -e dmerr read 0 1M 4 || fail "reading the healthy half failed"
expect_fail eio-read EIO rdmablk_io -e dmerr dump 48M 64K
expect_fail eio-write EIO rdmablk_io -e dmerr write 40M 1M 5
ok "dm-error half: $(tail -n 1 "$LOGS/eio-read.log"); $(tail -n 1 "$LOGS/eio-write.log")"
step dm-good-read-2 rdmablk_io -e dmerr read 0 1M 4 || fail "the healthy half failed after the errors"
still_serves eio 6

if have_nbd_tools; then
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
    echo "note: nbdkit, qemu-io or the rdma plugin missing: EIO checked through rdmablk-io only"
fi
still_serves nbd 7

# The disk dies in service: every sector fails from now on.
dmsetup suspend "$DM" && dmsetup load "$DM" --table "0 131072 error" && dmsetup resume "$DM" ||
    fail "cannot swap the table to dm-error"
dmsetup mknodes "$DM"
blockdev --flushbufs "/dev/mapper/$DM"
expect_fail dead-read EIO rdmablk_io -e dmerr dump 0 64K
ok "disk swapped to dm-error live: $(tail -n 1 "$LOGS/dead-read.log")"
still_serves dead 8

stop_target
ok "the target stayed up throughout and exits cleanly"
