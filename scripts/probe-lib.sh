# Shared by the probes (scripts/probe-*.sh: measurements run as guest tests, alone on the
# host). A probe sources this file only (it brings tests/ublk-lib.sh and so tests/lib.sh).
# shellcheck shell=bash
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/ublk-lib.sh"

# probe_target MB [KEY=VALUE...]: the bench's target setup. MB MiB of random data in
# $T/mnt/disk.img on ext4 on a loop device, read once into the page cache, exported as "bench"
# with durability = fua by a target (TARGET_PID) with the bench's keys and KEY=VALUE; all of it
# undone at exit. TARGET_WRAP (tests/lib.sh) wraps the target, e.g. in valgrind.
probe_target() {
    local mb=$1
    shift
    modprobe loop 2>/dev/null || true
    truncate -s $((mb * 4 / 3 + 32))M "$T/fs.raw"
    PROBE_LOOP=$(losetup -f --show "$T/fs.raw") || fail "losetup failed"
    on_exit _probe_undo
    mkfs.ext4 -q "$PROBE_LOOP" || fail "mkfs.ext4 failed"
    mkdir -p "$T/mnt"
    mount "$PROBE_LOOP" "$T/mnt" || fail "mount failed"
    dd if=/dev/urandom of="$T/mnt/disk.img" bs=1M count="$mb" conv=fsync status=none
    cat "$T/mnt/disk.img" >/dev/null
    target_conf "$T/target.conf" queue-depth=64 max-io=1M io-threads=2 log-level=warn "$@" <<EOF
[export bench]
path = $T/mnt/disk.img
durability = fua
EOF
    start_target "$T/target.conf"
}

_probe_undo() {
    [ -n "${TARGET_PID:-}" ] && _kill_wait "$TARGET_PID"
    mountpoint -q "$T/mnt" && { umount "$T/mnt" || umount -l "$T/mnt"; }
    losetup -d "$PROBE_LOOP"
    return 0
}
