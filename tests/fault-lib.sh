# Shared by the backing-store fault tests (test-fault-backing-*.sh): a target with a healthy
# export beside the failing one, and the checks that a failure reaches the client with its own
# error while everything else keeps serving. Sourced after lib.sh.
# shellcheck shell=bash

# io_quiet ARGS...: rdmablk_io without the data on stdout (dump).
io_quiet() { rdmablk_io "$@" >/dev/null; }

# errno_text ERRNO: strerror's text of ERRNO.
errno_text() {
    case $1 in
    ENOSPC) echo 'No space left on device' ;;
    EIO) echo 'Input/output error' ;;
    esac
}

# expect_fail NAME ERRNO CMD...: CMD must fail and name ERRNO (its output in $LOGS/NAME.log).
expect_fail() {
    local name=$1 err=$2
    shift 2
    if step "$name" "$@"; then
        fail "$name: succeeded, expected $err"
    fi
    grep -q "($err)\|$(errno_text "$err")" "$LOGS/$name.log" ||
        fail "$name: failed without $err: $(tail -n 1 "$LOGS/$name.log")"
}

# still_serves WHEN SEED: the target is up and its export "good" takes a 1M write and reads
# it back.
still_serves() {
    _gone "$TARGET_PID" && fail "$1: the target died"
    step "good-$1" rdmablk_io -e good write 0 1M "$2" || fail "$1: the healthy export failed a write"
    step "good-$1-read" rdmablk_io -e good read 0 1M "$2" || fail "$1: the healthy export failed a read"
}

# have_nbd_tools: nbdkit, qemu-io and the rdma plugin are there (the NBD checks run).
have_nbd_tools() {
    command -v nbdkit >/dev/null && command -v qemu-io >/dev/null &&
        [ -e "$BUILD/nbdkit-rdma-plugin.so" ]
}
