#!/bin/bash
# test-shares: none
# READs whose data is wholly in the page cache are served on the target's event loop
# (preadv2 RWF_NOWAIT) without a worker round trip; the others still go to a worker. The
# export lives on ext4 (a loop device), where RWF_NOWAIT works; tmpfs, where the other tests
# keep their backing files, does not support it on 6.1. Checked with the `reads_cached`
# counter of `rdmablk-target --stats`, and every byte read is verified.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires losetup mkfs.ext4 mount umount python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
[ "$(id -u)" = 0 ] || skip "needs root (creates a loop device and mounts ext4)"
modprobe loop 2>/dev/null || true

loopdev=
cleanup_fs() {
    [ -n "${TARGET_PID:-}" ] && _kill_wait "$TARGET_PID"
    mountpoint -q "$T/fs" && umount "$T/fs"
    [ -n "$loopdev" ] && losetup -d "$loopdev"
    return 0
}
on_exit cleanup_fs

truncate -s 128M "$T/fs.raw"
mkfs.ext4 -q -F "$T/fs.raw" || fail "mkfs.ext4 failed"
loopdev=$(losetup -f --show "$T/fs.raw") || fail "losetup failed"
mkdir "$T/fs"
mount "$loopdev" "$T/fs" || fail "cannot mount ext4 on $loopdev"

sock=$T/admin.sock
target_conf "$T/target.conf" admin-socket="$sock" max-io=256K <<CONF
[export disk0]
path = $T/fs/disk0.img
size = 32M

# On tmpfs, which lacks RWF_NOWAIT before Linux 6.6: the first READ finds that out and the
# export stops trying.
[export tmp]
path = $T/tmp.img
size = 4M
CONF
start_target "$T/target.conf"
IO_OPTS="-t 60 -e disk0"
cached() {
    "$BUILD/rdmablk-target" --stats -c "$T/target.conf" >"$LOGS/stats.json" ||
        fail "--stats failed"
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["total"]["reads_cached"])' \
        "$LOGS/stats.json"
}

step write rdmablk_io write 0 4M 21 || fail "write failed"
# Nothing of the file in the page cache: every READ goes to a worker.
# (dd's nocache with count=0 asks the kernel to drop the whole file's pages: this file only,
# not every test's page cache, as drop_caches would.)
sync
dd if="$T/fs/disk0.img" iflag=nocache count=0 status=none || fail "cannot drop disk0.img's pages"
step read-cold rdmablk_io read 0 1M 21 || fail "cold read failed or returned wrong data"
n0=$(cached)
# 1M with max-io 256K is 4 READs; readahead may have pulled in the later ones by the time
# they run, so only the first is sure to go to a worker.
[ "$n0" -le 3 ] || fail "$n0 of 4 READs of a dropped page cache counted as cached"
ok "cold: $n0 of 4 READs found their data cached"

step read-fill rdmablk_io read 0 4M 21 || fail "read failed or returned wrong data"
n1=$(cached)
step read-warm rdmablk_io read 0 4M 21 || fail "warm read failed or returned wrong data"
n2=$(cached)
[ $((n2 - n1)) -eq 16 ] || fail "warm: $((n2 - n1)) of 16 READs served from the page cache"
ok "warm: all 16 READs served from the page cache on the event loop, data verified"

step tmp-write rdmablk_io -e tmp write 0 1M 22 || fail "write to the tmpfs export failed"
for i in 1 2 3; do
    step tmp-read-$i rdmablk_io -e tmp read 0 1M 22 || fail "read $i from the tmpfs export failed"
done
n=$(grep -c 'export tmp: the file does not support RWF_NOWAIT' "$LOGS/target.log" || true)
[ "$n" -le 1 ] || fail "the tmpfs export tried RWF_NOWAIT again after EOPNOTSUPP ($n times)"
if [ "$n" = 1 ]; then
    ok "tmpfs: RWF_NOWAIT unsupported, said once; every READ went to a worker and verified"
else
    ok "tmpfs: RWF_NOWAIT supported by this kernel; READs verified"
fi

stop_target 60
ok "target exits cleanly"
