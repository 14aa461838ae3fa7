#!/bin/bash
# test-shares: none
# A connection registers its request pool only when a request needs it, so a locked-memory
# limit too small for the pool no longer refuses the connection: as a user without
# CAP_IPC_LOCK under `ulimit -l 2048`, rdmablk-io connects and an inline 4 KiB write
# succeeds; requests through the pool (four threads' reads and writes) fail with ENOMEM, and
# the library says so once, naming the pool and ulimit -l. The control: the same user under a
# limit that fits the pool writes and reads back the 3 MiB.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires setpriv getent
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
getent passwd nobody >/dev/null || skip "no user nobody"

target_conf "$T/target.conf" max-io=1M <<EOF
[export disk0]
path = $T/disk0.img
size = 64M
EOF
start_target "$T/target.conf"

# as_nobody LIMIT_KB STEP ARGS...: rdmablk-io ARGS as nobody, with no capability, under
# ulimit -l LIMIT_KB.
as_nobody() {
    local kb=$1 name=$2
    shift 2
    step "$name" bash -c 'ulimit -l "$1" && shift && exec "$@"' _ "$kb" \
        setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
        --bounding-set=-all --no-new-privs \
        timeout 120 "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -t 30 -q 8 -e disk0 "$@"
}

as_nobody 2048 small-inline write 0 4096 7 ||
    fail "under ulimit -l 2048, connecting and an inline 4 KiB write failed (small-inline.log)"
ok "under ulimit -l 2048 without CAP_IPC_LOCK: connected, an inline 4 KiB write succeeded"

# Four threads, each failing on its first request through the pool (reads always are).
if as_nobody 2048 small-pool stress 5 4 1M; then
    fail "under ulimit -l 2048, four threads of I/O through an 8 MiB pool succeeded"
fi
failed=$(grep -c 'Cannot allocate memory' "$LOGS/small-pool.log")
[ "$failed" -ge 2 ] ||
    fail "want at least two requests failed with ENOMEM, found $failed (small-pool.log)"
n=$(grep -c 'the request pool: ibv_reg_mr .*ulimit -l.*requests that need it fail with ENOMEM' \
    "$LOGS/small-pool.log")
[ "$n" = 1 ] || fail "the library said $n times that the pool could not be registered (want once)"
ok "through the pool: $failed requests failed with ENOMEM; the library said once that ulimit -l is too low"

as_nobody $((64 * 1024)) big-pool write 0 3M 9 ||
    fail "control: under ulimit -l 65536, 3 MiB of writes failed (big-pool.log)"
as_nobody $((64 * 1024)) big-read read 0 3M 9 ||
    fail "control: reading back the 3 MiB failed (big-read.log)"
ok "control: under ulimit -l 65536 the same user wrote and read back 3 MiB through the pool"
