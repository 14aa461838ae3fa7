# Shared by the tests that put a file system on /dev/nbdN: attach, mkfs.ext4, files, checksums,
# reattach, e2fsck. Sourced after lib.sh.
# shellcheck shell=bash

# nbd_setup CONNS BYTES: the device the test uses, DEV=/dev/nbd0, attached with CONNS
# connections and showing BYTES, and its mount point MNT=$T/mnt; both undone at exit.
nbd_setup() {
    DEV=/dev/nbd0
    MNT=$T/mnt
    NBD_CONNS=$1
    NBD_BYTES=$2
    mkdir -p "$MNT"
    on_exit nbd-client -d "$DEV"
    on_exit umount "$MNT"
}

# nbd_attach N: attach $DEV to $NBD_SOCK (step attach-N) and wait until it shows its size.
nbd_attach() {
    step "attach-$1" nbd-client -unix "$NBD_SOCK" "$DEV" -b 4096 -C "$NBD_CONNS" ||
        fail "nbd-client attach failed"
    wait_for 60 test "$(blockdev --getsize64 "$DEV")" = "$NBD_BYTES" || fail "$DEV has the wrong size"
}

# nbd_fs_write DEV MNT FILES MB: mkfs.ext4 on DEV, mount it on MNT, write FILES files of
# MB, 2 x MB, ... MiB of random data, keep their checksums in $T/sums, unmount, detach.
nbd_fs_write() {
    local dev=$1 mnt=$2 files=$3 mb=$4 i
    step mkfs mkfs.ext4 -q -F "$dev" || fail "mkfs.ext4 failed"
    step mount mount "$dev" "$mnt" || fail "mount failed"
    for ((i = 1; i <= files; i++)); do
        head -c $((i * mb))M /dev/urandom >"$mnt/file$i"
    done
    (cd "$mnt" && md5sum file*) >"$T/sums"
    step umount umount "$mnt" || fail "umount failed"
    step detach nbd-client -d "$dev" || fail "nbd-client -d failed"
}

# nbd_fs_verify DEV MNT: on a reattached DEV, e2fsck -fn is clean and the files of
# nbd_fs_write have their checksums.
nbd_fs_verify() {
    local dev=$1 mnt=$2
    step fsck e2fsck -fn "$dev" || fail "e2fsck -fn found problems"
    step mount2 mount "$dev" "$mnt" || fail "remount failed"
    (cd "$mnt" && md5sum -c "$T/sums") >"$LOGS/md5.log" 2>&1 || fail "checksums differ"
    step umount2 umount "$mnt" || fail "umount failed"
}
