#!/bin/bash
# test-shares: nbd
# The kernel NBD client over nbdkit rdma with 4 connections (4 RDMA connections): mkfs.ext4,
# mount, write files, checksum, unmount, disconnect, reattach, e2fsck -fn, checksums match.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"
# shellcheck source=tests/nbd-fs.sh
. "$(dirname "$0")/nbd-fs.sh"

requires nbdkit nbd-client mkfs.ext4 e2fsck md5sum blockdev
require_rdma
requires_file "$PLUGIN"
[ -b /dev/nbd0 ] || skip "no /dev/nbd0 (modprobe nbd)"
[ "$(id -u)" = 0 ] || skip "needs root"

write_target_conf 128M
start_target "$T/target.conf"
start_nbdkit hostname="$RDMABLK_ADDR" export=disk0

nbd_setup 4 $((128 << 20))
nbd_attach 1
conns=$(grep -c 'rdma: open\|newstyle negotiation' "$LOGS/nbdkit.log" || true)
ok "attached with -C 4"

nbd_fs_write "$DEV" "$MNT" 5 3
ok "mkfs, mount, 45M of files, umount, disconnect"

nbd_attach 2
nbd_fs_verify "$DEV" "$MNT"
ok "reattached: e2fsck clean, all checksums match"

# The backing file holds exactly what the client sees.
cmp "$DEV" "$T/disk0.img" || fail "the backing file differs from what $DEV shows"
ok "the backing file's bytes equal $DEV's"

# fio through the kernel path too: O_DIRECT libaio on /dev/nbd0, mixed sizes, verified.
# The device was attached with -b 4096, so O_DIRECT needs 4 KiB multiples (512 B writes are
# covered through the nbd engine in test-plugin-fio).
step fio-libaio fio --name=nbd0 --filename="$DEV" --ioengine=libaio --direct=1 --rw=randwrite \
    --bssplit=4k/50:64k/30:256k/10:1m/10 --iodepth=32 --numjobs=2 \
    --offset_increment=48M --size=48M --verify=crc32c --do_verify=1 --group_reporting ||
    fail "fio libaio on $DEV failed"
grep -q 'err= 0' "$LOGS/fio-libaio.log" || fail "fio reported errors"
step detach2 nbd-client -d "$DEV" || fail "nbd-client -d failed"
ok "fio libaio --direct=1 on $DEV: mixed random writes, crc32c verified"
