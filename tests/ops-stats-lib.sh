# tests/ops-stats-lib.sh: what the test-ops-stats-*.sh tests share (each sources this instead of
# lib.sh): a target with an admin socket and two exports, disk0 (16 MiB) and d1 (4 MiB,
# durability = fua, max-connections = 1), and clients that open one connection per command.
# shellcheck shell=bash
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_rdma
requires python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-session"

sock=$T/admin.sock

# stats_conf yes|no [KEY=VALUE...]: write $T/target.conf with stats = yes|no. A small pool
# (16 buffers): registering the default 64 MiB costs each test's start seconds under TCG.
stats_conf() {
    local on=$1
    shift
    target_conf "$T/target.conf" admin-socket="$sock" max-io=256K buffer-pool=4M io-threads=2 \
        stats="$on" "$@" <<EOF
[export disk0]
path = $T/disk0.img
size = 16M

[export d1]
path = $T/d1.img
size = 4M
durability = fua
max-connections = 1
EOF
}

# stats [ARGS]: rdmablk-target --stats for this target.
stats() { "$BUILD/rdmablk-target" --stats -c "$T/target.conf" "$@"; }

# io ARGS: one rdmablk-io connection to ${EXPORT:-disk0}, no keepalive NOPs (they would count).
io() { IO_TIMEOUT=60 rdmablk_io -e "${EXPORT:-disk0}" -k 0 "$@"; }

# run ARGS: io ARGS as step ioN, which must succeed.
n=0
run() { n=$((n + 1)); step "io$n" io "$@" || fail "rdmablk-io $* failed"; }

# stats_json FILE PYTHON-EXPR: --stats into FILE, then true when PYTHON-EXPR (over s, the JSON)
# holds (for wait_for).
stats_json() { stats_check "$T/target.conf" "$@"; }

# start_session EXPORT: an rdmablk-session holding one connection to EXPORT (a coprocess: sess
# CMD talks to it), once it said it is ready; sets SESS_PID.
start_session() {
    coproc SESS { exec "$BUILD/tests/rdmablk-session" -H "$RDMABLK_ADDR" -e "$1" -t 30 -k 0 2>&1; }
    track_pid "$SESS_PID"
    sess
}

# sess [CMD...]: send CMD to the session (none: read its greeting); it must answer ready or ok.
sess() {
    local line
    [ $# -eq 0 ] || echo "$*" >&"${SESS[1]}"
    read -t 60 -r line <&"${SESS[0]}" || fail "rdmablk-session: no answer to '$*'"
    echo "session: $* -> $line" >>"$LOGS/session.log"
    case $line in ready | ok) ;; *) fail "rdmablk-session: '$*': $line" ;; esac
}

# stop_session: EOF to the session; it must exit.
stop_session() {
    eval "exec ${SESS[1]}>&-"
    wait_exit 60 "$SESS_PID" || fail "rdmablk-session did not exit at EOF"
}
