#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# rdmablk-ublk with 2 queues (2 RDMA connections): the device has the export's size and block
# sizes; mkfs.ext4, mount, write files, umount, del, add again, e2fsck -fn, the checksums match,
# and the backing file holds exactly the device's bytes.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires mkfs.ext4 e2fsck md5sum blockdev
ublk_setup 128M queues=2
MNT=$T/mnt
mkdir -p "$MNT"
on_exit umount "$MNT"
[ "$(blockdev --getsize64 "$DEV")" = $((128 << 20)) ] || fail "$DEV has size $(blockdev --getsize64 "$DEV")"
name=${DEV#/dev/}
[ "$(cat "/sys/block/$name/queue/max_sectors_kb")" = 1024 ] ||
    fail "max_sectors_kb $(cat "/sys/block/$name/queue/max_sectors_kb"), expected 1024 (max-io 1M)"
[ "$(cat "/sys/block/$name/queue/write_cache")" = "write back" ] ||
    fail "write_cache is '$(cat "/sys/block/$name/queue/write_cache")': FLUSH would never be sent"
ok "$DEV: 128 MiB, max_sectors_kb 1024, write back cache (FLUSH/FUA sent)"
"$UBLK" list >"$LOGS/list.log" 2>&1 || fail "rdmablk-ublk list failed"
grep -q "^$DEV state=live .*queues=2" "$LOGS/list.log" || fail "list does not show $DEV live with 2 queues"

step mkfs mkfs.ext4 -q -F "$DEV" || fail "mkfs.ext4 failed"
step mount mount "$DEV" "$MNT" || fail "mount failed"
for i in 1 2 3 4 5; do
    head -c $((i * 3))M /dev/urandom >"$MNT/file$i"
done
(cd "$MNT" && md5sum file*) >"$T/sums"
step umount umount "$MNT" || fail "umount failed"
step del "$UBLK" del "$DEV" || fail "rdmablk-ublk del failed"
# Its server gone, and the device with it. Not "$DEV no longer exists": a test in another lane
# may already have added a device under the freed number.
wait_for 30 _gone "$UBLK_PID" || fail "the server of $DEV (pid $UBLK_PID) still runs after del"
ublk_unlisted "$DEV" "$UBLK_PID" >"$LOGS/list-del.log" ||
    fail "$DEV is still listed after del: $(cat "$LOGS/list-del.log")"
ok "mkfs, mount, 45M of files, umount, del"

ublk_add ublk2 hostname="$RDMABLK_ADDR" export=disk0 queues=2
step fsck e2fsck -fn "$DEV" || fail "e2fsck -fn found problems"
step mount2 mount "$DEV" "$MNT" || fail "remount failed"
(cd "$MNT" && md5sum -c "$T/sums") >"$LOGS/md5.log" 2>&1 || fail "checksums differ"
step umount2 umount "$MNT" || fail "umount failed"
ok "added again: e2fsck clean, all checksums match"

cmp "$DEV" "$T/disk0.img" || fail "the backing file differs from what $DEV shows"
ok "the backing file's bytes equal $DEV's"
