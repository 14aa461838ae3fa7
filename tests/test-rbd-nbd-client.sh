#!/bin/bash
# test-shares: ceph nbd
# An RBD export (path = rbd:rbd/img0) through nbdkit rdma and the kernel NBD client: mkfs.ext4,
# mount, write files, checksum, unmount, disconnect, reattach, e2fsck -fn, checksums match; and
# `rbd export` of the image (read by Ceph, not through the target) equals what the client saw.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"
# shellcheck source=tests/nbd-fs.sh
. "$(dirname "$0")/nbd-fs.sh"

requires nbdkit nbd-client mkfs.ext4 e2fsck md5sum blockdev
require_ceph
require_rdma
requires_file "$PLUGIN"
[ -b /dev/nbd0 ] || skip "no /dev/nbd0 (modprobe nbd)"
[ "$(id -u)" = 0 ] || skip "needs root"

ceph_up rbd img0 96M
write_rbd_target_conf "$T/target.conf" 10820
start_target "$T/target.conf"
grep -q 'export rbd0: rbd:rbd/img0, 100663296 bytes' "$LOGS/target.log" ||
    fail "the target did not log the RBD export with its size"
start_nbdkit hostname="$RDMABLK_ADDR" port=10820 export=rbd0

nbd_setup 2 $((96 << 20))
nbd_attach 1
nbd_fs_write "$DEV" "$MNT" 3 2
ok "mkfs, mount, 12M of files, umount, disconnect on rbd:rbd/img0"

nbd_attach 2
nbd_fs_verify "$DEV" "$MNT"
ok "reattached: e2fsck clean, all checksums match"

# What Ceph holds, read by rbd itself, is byte for byte what the client sees.
step rbd-export rbd_cmd export rbd/img0 "$T/export.img" || fail "rbd export failed"
cmp "$DEV" "$T/export.img" >"$LOGS/cmp.log" 2>&1 || fail "rbd export differs from what $DEV shows"
step detach2 nbd-client -d "$DEV" || fail "nbd-client -d failed"
ok "rbd export of rbd/img0 equals the bytes of $DEV"
[ "$(rbd_lock_stat "$T/target.conf" rbd0 acquired)" -ge 1 ] || fail "the target never took the image's lock"
wait_for 60 rbd_lock_is "$T/target.conf" rbd0 none ||
    fail "the target did not release the image's lock when its last connection closed"
stop_target
if grep -q 'rbd_lock_release:' "$LOGS/target.log"; then fail "releasing the image's lock failed"; fi
ok "the target took the exclusive lock to write and released it when idle"
