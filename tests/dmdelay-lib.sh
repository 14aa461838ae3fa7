# Shared by the tests that slow a block device down: a dm "delay" device over a loop device of
# its own. Sourced after lib.sh.
# shellcheck shell=bash

# dmdelay_create NAME MIB: /dev/mapper/rdmablk-NAME-PID (DM_DEV) over a loop device on a sparse
# $T/NAME.raw of MIB MiB, with no delay yet; skips where there is no dm-delay or no root.
# Removed at exit, once the test's target and nbdkit have stopped (they hold it open).
dmdelay_create() {
    [ "$(id -u)" = 0 ] || skip "needs root (creates loop and dm devices)"
    requires dmsetup losetup
    modprobe dm_mod 2>/dev/null || true
    modprobe dm_delay 2>/dev/null || true
    modprobe loop 2>/dev/null || true
    dmsetup targets 2>/dev/null | grep -q '^delay' || skip "no dm-delay target"
    DM_NAME=rdmablk-$1-$$
    DM_SECTORS=$(($2 * 2048))
    truncate -s "$2M" "$T/$1.raw"
    on_exit _dmdelay_remove
    DM_LOOP=$(losetup -f --show "$T/$1.raw") || fail "losetup failed"
    dmsetup create "$DM_NAME" --table "0 $DM_SECTORS delay $DM_LOOP 0 0 $DM_LOOP 0 0" ||
        fail "dmsetup create failed"
    dmsetup mknodes "$DM_NAME"    # no udev in the guest
    # shellcheck disable=SC2034  # the sourcing test's
    DM_DEV=/dev/mapper/$DM_NAME
}

_dmdelay_remove() {
    [ -n "${NBDKIT_PID:-}" ] && _kill_wait "$NBDKIT_PID"
    [ -n "${TARGET_PID:-}" ] && _kill_wait "$TARGET_PID"
    dmsetup remove --retry "$DM_NAME" 2>/dev/null
    [ -n "${DM_LOOP:-}" ] && losetup -d "$DM_LOOP"
    return 0
}

# dmdelay_set READ_MS WRITE_MS: every read, and every write (and flush), of DM_DEV waits that
# long from now on.
dmdelay_set() {
    if ! { dmsetup suspend "$DM_NAME" &&
        dmsetup load "$DM_NAME" --table "0 $DM_SECTORS delay $DM_LOOP 0 $1 $DM_LOOP 0 $2" &&
        dmsetup resume "$DM_NAME"; }; then
        fail "cannot set the delays to $1 ms (reads) and $2 ms (writes)"
    fi
}
