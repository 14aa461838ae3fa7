# tests/lib.sh: helpers sourced by every integration test, tests/test-*.sh.
# shellcheck shell=bash
#
# A test looks like:
#
#   #!/bin/bash
#   . "$(dirname "$0")/lib.sh"
#   requires nbd-client              # exit 77 (skip) when a command is missing
#   require_rdma                     # fail (exit 1) when no RDMA device is usable
#   start_target "$T/target.conf"    # waits until the target listens
#   start_nbdkit hostname="$RDMABLK_ADDR" export=disk0
#   step nbdinfo nbdinfo "$NBD_URI"  # output goes to $LOGS/nbdinfo.log
#   ok "exported"
#
# Exit status: 0 pass, 1 fail, 77 skip. On failure, the cleanup trap prints every file in
# $LOGS, so no failing output is hidden; on any exit it kills every tracked process, runs the
# on_exit commands and removes $T (unless KEEP_TMP=1).
#
# Variables set here:
#   TOP       the checkout                     BUILD   $TOP/build unless set
#   TEST_NAME basename of the test, no .sh     T       private temp dir (mktemp -d under /tmp)
#   LOGS      $T/logs, one file per step       TMPDIR  $T/tmp (exported)
#   RDMABLK_ADDR  defaults to 10.55.0.1 (the guest's rxe address; exported)

set -eu -o pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-${RDMABLK_BUILD:-$TOP/build}}
TEST_NAME=$(basename "$0" .sh)
RDMABLK_ADDR=${RDMABLK_ADDR:-10.55.0.1}
export RDMABLK_ADDR

T=$(mktemp -d "/tmp/rdmablk-$TEST_NAME.XXXXXX")
LOGS=$T/logs
mkdir -p "$LOGS" "$T/tmp"
TMPDIR=$T/tmp
export TMPDIR

_tracked_pids=()
_exit_cmds=()

top() { printf '%s\n' "$TOP"; }

# ---------------------------------------------------------------- reporting

fail() {
    echo "FAIL: $TEST_NAME: $*" >&2
    exit 1
}

ok() {
    echo "ok: $*"
}

skip() {
    echo "SKIP: $TEST_NAME: $*"
    exit 77
}

# requires CMD...: skip the test (exit 77) when a command is missing.
requires() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "requires $c"
    done
}

# requires_file PATH...: skip when a file (e.g. a build product) is missing.
requires_file() {
    local f
    for f in "$@"; do
        [ -e "$f" ] || skip "requires $f"
    done
}

# require_rdma: fail, not skip, when no RDMA device with an ACTIVE port is visible or
# RDMABLK_ADDR is not an address of this machine: a broken guest must fail loudly.
# Every test calls it: builtins where they do (under TCG each process costs about 35 ms of CPU).
require_rdma() {
    local f state active= addrs
    for f in /sys/class/infiniband/*/ports/*/state; do
        if [ -r "$f" ] && read -r state <"$f" && [[ $state == *ACTIVE* ]]; then
            active=$f
            break
        fi
    done
    [ -n "$active" ] ||
        fail "no RDMA device with an ACTIVE port (without native RDMA use tests/run-integration)"
    addrs=$(ip -o addr show) || fail "ip -o addr show failed"
    # "inet A/N" or, on a point-to-point link, "inet A peer B/N".
    [[ $addrs == *" inet $RDMABLK_ADDR/"* || $addrs == *" inet $RDMABLK_ADDR peer "* ||
        $addrs == *" inet6 $RDMABLK_ADDR/"* || $addrs == *" inet6 $RDMABLK_ADDR peer "* ]] ||
        fail "RDMABLK_ADDR=$RDMABLK_ADDR is not an address of this machine"
}

# ---------------------------------------------------------------- processes and cleanup

# track_pid PID...: kill these processes when the test exits.
track_pid() {
    _tracked_pids+=("$@")
}

# on_exit CMD...: run CMD (e.g. nbd-client -d /dev/nbd0) at exit, before the kills, newest first.
on_exit() {
    local q
    printf -v q '%q ' "$@"
    _exit_cmds+=("$q")
}

# _kill_wait PID: SIGTERM, up to 10 s of grace, then SIGKILL.
_kill_wait() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        _gone "$pid" && break
        nap 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "$TEST_NAME: pid $pid ($(ps -o args= -p "$pid" 2>/dev/null | cut -c1-60)) ignored SIGTERM, sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# _dump_logs RC: every step's log on stderr, for a failed test.
_dump_logs() {
    local f
    echo "---- $TEST_NAME failed (exit $1); logs of every step follow" >&2
    for f in "$LOGS"/*; do
        [ -f "$f" ] || continue
        echo "---- ${f##*/}" >&2
        cat "$f" >&2
    done
    # The RDMA devices' own counters (retries, timeouts, sequence errors) since boot: a
    # connection that died under load shows here why.
    for f in /sys/class/infiniband/*/ports/*/hw_counters; do
        [ -d "$f" ] || continue
        echo "---- $f (non-zero)" >&2
        grep -H . "$f"/* 2>/dev/null | sed -n 's|.*/||; /:0$/!p' | tr '\n' ' ' >&2
        echo >&2
    done
    echo "---- end of logs of $TEST_NAME" >&2
}

_cleanup() {
    local rc=$? i f
    trap - EXIT
    set +e
    # Terminated (run-suite's timeout): the logs first, before the grace
    # period of `timeout -k` runs out during the kills below.
    [ "$rc" -ne 143 ] || _dump_logs "$rc"
    for ((i = ${#_exit_cmds[@]} - 1; i >= 0; i--)); do
        eval "${_exit_cmds[i]}" >>"$LOGS/cleanup.log" 2>&1
    done
    for ((i = ${#_tracked_pids[@]} - 1; i >= 0; i--)); do
        _kill_wait "${_tracked_pids[i]}"
    done
    for f in $(jobs -p); do
        _kill_wait "$f"
    done
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$rc" -ne 143 ]; then
        _dump_logs "$rc"
    fi
    if [ "${KEEP_TMP:-0}" = 1 ]; then
        echo "$TEST_NAME: kept $T" >&2
    else
        rm -rf "$T"
    fi
    exit "$rc"
}
trap _cleanup EXIT
trap 'echo "$TEST_NAME: interrupted" >&2; exit 130' INT
trap 'echo "$TEST_NAME: terminated (timeout?)" >&2; exit 143' TERM

# step NAME CMD...: run CMD with its output in $LOGS/NAME.log; returns CMD's status.
step() {
    local name=$1
    shift
    echo "+ $*" >>"$LOGS/$name.log"
    "$@" >>"$LOGS/$name.log" 2>&1
}

# ---------------------------------------------------------------- waiting

# nap SECS: sleep SECS (a fraction is fine) without starting a process: a read that times out
# on a FIFO opened at both ends (so it neither gets data nor EOF), opened per call so that no
# daemon the test starts inherits it. Under TCG each `sleep` is a fork and an exec, about 35 ms
# of CPU, and tests run side by side (run-suite -j) share two CPUs.
mkfifo "$T/nap.fifo"
nap() {
    read -rt "$1" _ <>"$T/nap.fifo" || true
}

# wait_for TIMEOUT_SECS CMD...: run CMD until it succeeds: every 0.1 s for the first 2 s, then
# every 0.5 s (under TCG a process start costs about 35 ms of CPU, a python3 one 0.4 s: a poll
# that starts Python back to back takes one CPU from the test itself, which is why the --stats
# helpers read the JSON with rdmablk-json). Returns 1 on timeout and shows the last
# attempt's output. Under TCG everything is slow: be generous.
wait_for() {
    local timeout=$1 deadline out start=$SECONDS
    shift
    out=$T/wait_for.out
    deadline=$((SECONDS + timeout))
    while :; do
        if "$@" >"$out" 2>&1; then
            return 0
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$TEST_NAME: timed out after ${timeout}s waiting for: $*" >&2
            sed 's/^/  | /' "$out" >&2
            return 1
        fi
        if [ $((SECONDS - start)) -lt 2 ]; then nap 0.1; else nap 0.5; fi
    done
}

# _gone PID: true when PID no longer runs (it is absent or a zombie waiting to be reaped).
# Read with builtins: it runs in every wait_exit poll and cleanup, and under TCG each process
# started costs about 35 ms of CPU. The state follows the last ") " (a comm may hold one).
_gone() {
    local stat
    read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
    stat=${stat##*) }
    [ "${stat%% *}" = Z ]
}

# wait_exit TIMEOUT PID: wait until PID (a child of the test) exits and return its exit
# status; 124 on timeout (PID is left running). Unlike `kill -0`, sees through zombies.
wait_exit() {
    local timeout=$1 pid=$2
    wait_for "$timeout" _gone "$pid" || return 124
    wait "$pid"
}

# wait_for_file PATH [TIMEOUT=60]: wait until PATH exists and is not empty.
wait_for_file() {
    wait_for "${2:-60}" test -s "$1"
}

# wait_for_socket PATH [TIMEOUT=60]: wait until PATH is a socket.
wait_for_socket() {
    wait_for "${2:-60}" test -S "$1"
}

# _wait_started NAME PID PIDFILE [SOCKET]: wait for the pidfile (and socket) of a daemon we
# started; fail with its log if it exits first.
_wait_started() {
    local name=$1 pid=$2 pidfile=$3 sock=${4:-} deadline rc
    deadline=$((SECONDS + ${START_TIMEOUT:-120}))
    while :; do
        if [ -s "$pidfile" ] && { [ -z "$sock" ] || [ -S "$sock" ]; }; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null && rc=0 || rc=$?
            fail "$name exited (status $rc) before it was ready; see $name.log"
        fi
        [ "$SECONDS" -lt "$deadline" ] || fail "$name not ready after ${START_TIMEOUT:-120}s"
        nap 0.1
    done
}

# ---------------------------------------------------------------- daemons

# start_target CONF [ARGS...]: start rdmablk-target in the foreground (as a tracked background
# job) and wait until it listens (it writes the pidfile only then). Sets TARGET_PID.
# Several targets: set TARGET_NAME (default "target"), which names $T/NAME.pid and NAME.log.
# TARGET_WRAP (words, e.g. "$UNIT_SETPRIV") goes before the command; it must exec the target.
start_target() {
    local conf=$1 name=${TARGET_NAME:-target}
    shift
    [ -x "$BUILD/rdmablk-target" ] || fail "$BUILD/rdmablk-target not built (run make)"
    rm -f "$T/$name.pid"
    # shellcheck disable=SC2086  # TARGET_WRAP is a list of words
    ${TARGET_WRAP:-} "$BUILD/rdmablk-target" -c "$conf" -f -p "$T/$name.pid" "$@" >"$LOGS/$name.log" 2>&1 &
    TARGET_PID=$!
    track_pid "$TARGET_PID"
    _wait_started "$name" "$TARGET_PID" "$T/$name.pid"
}

# stop_target [SECS]: SIGTERM the target started last; it must exit 0 within SECS (default
# 120) with no sanitizer report in its log. Clears TARGET_PID.
stop_target() {
    local rc=0 name=${TARGET_NAME:-target}
    kill -TERM "$TARGET_PID"
    wait_exit "${1:-120}" "$TARGET_PID" || rc=$?
    [ "$rc" = 0 ] || fail "target exited with $rc on SIGTERM"
    if grep -q 'Sanitizer\|runtime error' "$LOGS/$name.log"; then fail "sanitizer report"; fi
    TARGET_PID=
}

# start_nbdkit [NBDKIT-OPTIONS...] [PLUGIN-ARGS...]: serve $NBDKIT_PLUGIN (default the rdma
# plugin, $BUILD/nbdkit-rdma-plugin.so) on the Unix socket $NBD_SOCK. Leading arguments that
# start with '-' (e.g. --filter=delay, -r) go to nbdkit before the plugin; the rest
# (key=value) go to the plugin. Waits for the pidfile and socket. Sets NBDKIT_PID, NBD_SOCK
# and NBD_URI (nbd+unix:///?socket=...).
start_nbdkit() {
    local opts=() plugin=${NBDKIT_PLUGIN:-$BUILD/nbdkit-rdma-plugin.so}
    while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
        opts+=("$1")
        shift
    done
    case $plugin in
    */*) [ -e "$plugin" ] || fail "$plugin not built (run make)" ;;
    esac
    NBD_SOCK=$T/nbd.sock
    NBD_URI="nbd+unix:///?socket=$NBD_SOCK"
    export NBD_SOCK NBD_URI
    rm -f "$T/nbdkit.pid" "$NBD_SOCK"
    nbdkit --foreground --unix "$NBD_SOCK" --pidfile "$T/nbdkit.pid" "${opts[@]}" \
        "$plugin" "$@" >"$LOGS/nbdkit.log" 2>&1 &
    NBDKIT_PID=$!
    track_pid "$NBDKIT_PID"
    _wait_started nbdkit "$NBDKIT_PID" "$T/nbdkit.pid" "$NBD_SOCK"
}

# start_good_client EXPORT SECONDS MAXLEN: the good client of the hostile tests, in the background:
# rdmablk-io stress on EXPORT for SECONDS, 2 threads of verified writes and reads of up to MAXLEN
# bytes with a 30 s timeout, each thread pausing 20 ms after each pair so that the attackers
# and the target get the CPUs (it exits non-zero on the first error or mismatch), log
# $LOGS/good.log. Waits until the target running with $T/target.conf counts its session;
# sets GOOD_PID.
start_good_client() {
    local n
    n=$(sessions_of "$T/target.conf" "$1")
    "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e "$1" -t 30 -i 20 stress "$2" 2 "$3" \
        >"$LOGS/good.log" 2>&1 &
    GOOD_PID=$!
    track_pid "$GOOD_PID"
    wait_for 60 sessions_reach "$T/target.conf" "$1" $((n + 1)) ||
        fail "the good client never connected"
}

# stop_verifier PID LOG: a verifying client (rdmablk-io stress, which exits non-zero on its first
# mismatch or I/O error) must still run: stop it; its LOG must show no mismatch.
stop_verifier() {
    _gone "$1" && fail "the verifier stopped (mismatch or I/O error, see ${2##*/})"
    kill -TERM "$1"
    wait "$1" 2>/dev/null || true
    if grep -q 'mismatch' "$2"; then fail "the verifier saw a data mismatch"; fi
}

# stats_get CONF PATH...: `rdmablk-target --stats` of the target running with CONF (the JSON
# goes to $LOGS/stats.json), then its values at PATH... one per line (tests/tools/rdmablk-json:
# KEY.KEY, [N], [KEY=VALUE,...], #counts); non-zero status when the daemon does not answer or a
# PATH leads nowhere.
stats_get() {
    "$BUILD/rdmablk-target" --stats -c "$1" >"$LOGS/stats.json" || return 1
    "$BUILD/tests/rdmablk-json" "$LOGS/stats.json" "${@:2}"
}

# target_stat CONF SECTION KEY: one value of --stats for the target running with CONF.
target_stat() {
    stats_get "$1" "$2.$3"
}

# stat_reaches CONF SECTION KEY N: true when target_stat CONF SECTION KEY is at least N (for
# wait_for).
stat_reaches() {
    local n
    n=$(target_stat "$1" "$2" "$3") || return 1
    echo "--stats $2.$3 is $n, expected at least $4"
    [ "$n" -ge "$4" ]
}

# export_stat CONF EXPORT KEY [SUBKEY]: one value of EXPORT's object in the exports list of
# --stats (the configured export, not one a reload removed and whose connections linger).
export_stat() {
    stats_get "$1" "exports[name=$2,removed=false].$3${4:+.$4}"
}

# backing_stat CONF KEY: one value of the backing_io section of --stats.
backing_stat() {
    target_stat "$1" backing_io "$2" || fail "--stats failed"
}

# live_conns CONF: the connections the target holds now, accepted or half-open (--stats).
live_conns() {
    target_stat "$1" connections current || fail "--stats failed"
}

# conns_are CONF N: true when the target holds exactly N connections (for wait_for).
conns_are() {
    local n
    n=$(target_stat "$1" connections current) || return 1
    echo "the target holds $n connections, expected $2"
    [ "$n" -eq "$2" ]
}

# stats_check CONF FILE PYTHON-EXPR: --stats of the target running with CONF into FILE, then
# true when PYTHON-EXPR (over s, the JSON) holds (for wait_for).
stats_check() {
    "$BUILD/rdmablk-target" --stats -c "$1" >"$2" || return 1
    python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3"
}

# sessions_of CONF EXPORT: EXPORT's connections that finished the handshake since the target
# started (--stats sessions).
sessions_of() {
    export_stat "$1" "$2" sessions || fail "--stats failed"
}

# sessions_reach CONF EXPORT N: true when EXPORT has had at least N sessions (for wait_for).
sessions_reach() {
    local n
    n=$(export_stat "$1" "$2" sessions) || return 1
    echo "export $2 has had $n sessions, expected at least $3"
    [ "$n" -ge "$3" ]
}

# target_resources: "fds N; M MRs, B bytes" of $TARGET_PID, the MRs as the kernel's resource
# tracker (rdma res) sees them.
target_resources() {
    printf 'fds %s; ' "$(find "/proc/$TARGET_PID/fd" -mindepth 1 -maxdepth 1 | wc -l)"
    rdma res show mr pid "$TARGET_PID" |
        awk '{ for (i = 1; i < NF; i++) if ($i == "mrlen") b += $(i + 1); n++ }
             END { printf "%d MRs, %d bytes\n", n, b }'
}

# resources_are WANT: true when target_resources prints WANT (for wait_for).
resources_are() {
    local now
    now=$(target_resources)
    echo "now $now, expected $1"
    [ "$now" = "$1" ]
}

# ---------------------------------------------------------------- configs and clients

# target_conf FILE [KEY=VALUE...] <<EOF ...exports... EOF: write a target config FILE (in one
# rename, mode 0644): a [target] block listening on $RDMABLK_ADDR, with its admin socket at
# FILE.sock, then each KEY = VALUE in order (listen=ADDR replaces the address, listen= leaves
# it out; admin-socket=PATH replaces the socket), then stdin verbatim (the [export] sections;
# </dev/null for none). The socket is the test's own: tests run side by side (run-suite -j).
target_conf() {
    local conf=$1 kv listen=$RDMABLK_ADDR sock=$1.sock
    shift
    for kv in "$@"; do
        case $kv in
        listen=*) listen=${kv#listen=} ;;
        admin-socket=*) sock= ;;
        esac
    done
    {
        printf '[target]\n'
        [ -z "$listen" ] || printf 'listen = %s\n' "$listen"
        [ -z "$sock" ] || printf 'admin-socket = %s\n' "$sock"
        for kv in "$@"; do
            case $kv in
            listen=*) ;;
            *=*) printf '%s = %s\n' "${kv%%=*}" "${kv#*=}" ;;
            *) fail "target_conf: '$kv' is not KEY=VALUE" ;;
            esac
        done
        cat
    } >"$conf.new"
    chmod 0644 "$conf.new"
    mv "$conf.new" "$conf"
}

# start_disk0_target KEY=VALUE...: a target with the [target] keys given (target_conf) and one
# export, disk0 (64 MiB on $T/disk0.img), started.
start_disk0_target() {
    target_conf "$T/target.conf" "$@" <<EOF
[export disk0]
path = $T/disk0.img
size = 64M
EOF
    start_target "$T/target.conf"
}

# durability_exports SIZE: two export sections for target_conf's stdin, fua and always, on
# $T/fua.img and $T/always.img of SIZE: the two policies under which a write's FUA differs.
durability_exports() {
    printf '[export fua]\npath = %s\nsize = %s\ndurability = fua\n\n' "$T/fua.img" "$1"
    printf '[export always]\npath = %s\nsize = %s\ndurability = always\n' "$T/always.img" "$1"
}

# backing_has FILE OFF LEN SEED: FILE (an export's backing file) holds rdmablk-io's pattern
# SEED for OFF..OFF+LEN (cmp).
backing_has() {
    "$BUILD/tests/rdmablk-io" pattern "$2" "$3" "$4" >"$T/want"
    dd if="$1" of="$T/got" bs=512 skip=$(($2 / 512)) count=$(($3 / 512)) status=none
    cmp "$T/want" "$T/got"
}

# rdmablk_io ARGS...: the test client, $BUILD/tests/rdmablk-io, against $RDMABLK_ADDR with a
# 30 s request timeout and the whole run bounded by IO_TIMEOUT (default 120 s). IO_OPTS (words)
# and then ARGS follow those defaults, so they override them (-H, -t) or add to them (-e, -S).
rdmablk_io() {
    # shellcheck disable=SC2086  # IO_OPTS is a list of words
    timeout "${IO_TIMEOUT:-120}" "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -t 30 ${IO_OPTS:-} "$@"
}

# io_stat STEP KEY: KEY's number in the stats line rdmablk-io -s printed into $LOGS/STEP.log.
io_stat() {
    sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$LOGS/$1.log"
}

# hold_session EXPORT NAME: an idle rdmablk-session on EXPORT, connected until the test closes
# fd 7 (its stdin, the fifo $T/NAME.in; then it exits at EOF); its log is $LOGS/NAME-session.log.
# Sets SESSION_PID; fails the test unless the session says ready within 60 s.
hold_session() {
    mkfifo "$T/$2.in"
    "$BUILD/tests/rdmablk-session" -H "$RDMABLK_ADDR" -e "$1" -t 30 -k 0 <"$T/$2.in" \
        >"$LOGS/$2-session.log" 2>&1 &
    SESSION_PID=$!
    track_pid "$SESSION_PID"
    exec 7>"$T/$2.in"
    wait_for 60 grep -qx ready "$LOGS/$2-session.log" || fail "session $2 on $1 did not connect"
}

# session_do NAME CMD...: one command of the rdmablk-session NAME (its stdin is fd 7, its log
# $LOGS/NAME-session.log, as hold_session sets up); true when it answered ok.
session_do() {
    local n
    n=$(grep -c . "$LOGS/$1-session.log")
    echo "${@:2}" >&7
    wait_for 60 _answered "$LOGS/$1-session.log" "$n" || fail "session $1: no answer to '${*:2}'"
    tail -n 1 "$LOGS/$1-session.log" | grep -qx ok
}
_answered() { [ "$(grep -c . "$1")" -gt "$2" ]; }

# io_every_op IMG: through rdmablk_io, an inline, an RDMA and a FUA write, FLUSH, each read
# back and verified, a TRIM and a stress run; then IMG (the export's backing file) must hold
# the RDMA write's data.
io_every_op() {
    step write-inline rdmablk_io write 0 4096 1 || fail "inline write failed"
    step write-rdma rdmablk_io write 65536 1048576 2 || fail "write failed"
    step write-fua rdmablk_io write 2097152 65536 3 --fua || fail "FUA write failed"
    step flush rdmablk_io flush || fail "flush failed"
    step read-1 rdmablk_io read 0 4096 1 || fail "read back 1 failed"
    step read-2 rdmablk_io read 65536 1048576 2 || fail "read back 2 failed"
    step read-3 rdmablk_io read 2097152 65536 3 || fail "read back 3 failed"
    step trim rdmablk_io trim 8388608 1048576 || fail "trim failed"
    "$BUILD/tests/rdmablk-io" pattern 65536 1048576 2 >"$T/want"
    dd if="$1" of="$T/got" bs=65536 skip=1 count=16 status=none
    cmp "$T/want" "$T/got" || fail "the backing file does not hold the data written"
    step stress rdmablk_io -q 16 stress 4 2 || fail "stress failed"
}

# ---------------------------------------------------------------- make install and the unit

# mk_install [MAKE-ARGS]: make install PREFIX=/usr/local of what $BUILD holds: -o keeps make
# from remaking the products even if a source looks newer (it could not write to the
# checkout anyway, in the guest).
mk_install() {
    make -C "$TOP" --no-print-directory BUILD="$BUILD" \
        -o "$BUILD/rdmablk-target" -o "$BUILD/rdmablk-rbd.so" -o "$BUILD/nbdkit-rdma-plugin.so" \
        install PREFIX=/usr/local "$@"
}
# systemd_dirs: set unitdir and sysusersdir, where make install puts the unit and its
# sysusers.d file (the Makefile asks the same). Called by the tests that need them: two
# pkg-config runs cost every other test about 0.1 s of CPU under TCG.
systemd_dirs() {
    unitdir=$(pkg-config systemd --variable=systemdsystemunitdir 2>/dev/null || echo /lib/systemd/system)
    sysusersdir=$(pkg-config systemd --variable=sysusersdir 2>/dev/null || echo /usr/lib/sysusers.d)
}

# unit_key KEY: the values of KEY= in target/rdmablk-target.service, one line each.
unit_key() {
    sed -n "s/^$1=//p" "$TOP/target/rdmablk-target.service"
}

# unit_caps KEY: the capabilities a unit key names, as setpriv(1) wants them (+ipc_lock,...).
unit_caps() {
    unit_key "$1" | tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_/+/p' | paste -sd,
}

# unit_user: run the target as target/rdmablk-target.service runs it. Makes the unit's User=
# from target/rdmablk.sysusers, as make install does (removed at exit if this made it), gives
# it $T (for the target's pidfile, admin socket and exports), and sets UNIT_USER to its name
# and UNIT_SETPRIV to a setpriv(1) command (for TARGET_WRAP) that gives what follows it the
# unit's User=, Group=, AmbientCapabilities=, CapabilityBoundingSet= and NoNewPrivileges=.
# The rest of the unit's sandbox needs systemd as PID 1, which the guest has not.
unit_user() {
    local group amb bnd
    UNIT_USER=$(unit_key User)
    group=$(unit_key Group)
    amb=$(unit_caps AmbientCapabilities)
    bnd=$(unit_caps CapabilityBoundingSet)
    [ -n "$UNIT_USER" ] || fail "target/rdmablk-target.service has no User="
    UNIT_SETPRIV="setpriv --reuid=$UNIT_USER --regid=${group:-$UNIT_USER} --init-groups"
    [ -z "$amb" ] || UNIT_SETPRIV+=" --inh-caps=-all,$amb --ambient-caps=-all,$amb"
    UNIT_SETPRIV+=" --bounding-set=-all${bnd:+,$bnd}"
    [ "$(unit_key NoNewPrivileges)" != yes ] || UNIT_SETPRIV+=" --no-new-privs"
    if ! getent passwd "$UNIT_USER" >/dev/null; then
        step sysusers systemd-sysusers "$TOP/target/rdmablk.sysusers" ||
            fail "systemd-sysusers target/rdmablk.sysusers failed"
        getent passwd "$UNIT_USER" >/dev/null ||
            fail "target/rdmablk.sysusers did not make $UNIT_USER"
        on_exit userdel "$UNIT_USER"
    fi
    chown "$UNIT_USER:" "$T"
}

# unit_conf CONF NAME=PATH...: write CONF (mode 0644, in one rename) for a target that runs as
# the unit's user: it listens on $RDMABLK_ADDR, has its admin socket in $T (the test makes $T
# the user's), and serves each PATH as export NAME, 64 MiB, created by the target.
unit_conf() {
    local conf=$1 e
    shift
    for e in "$@"; do
        printf '[export %s]\npath = %s\nsize = 64M\n' "${e%%=*}" "${e#*=}"
    done | target_conf "$conf" admin-socket="$T/admin.sock"
}

# ---------------------------------------------------------------- qemu-io on one NBD connection

# start_qemu_io URI: qemu-io holding one NBD connection to URI, reading its commands from fd 7
# (echo "read 0 4096" >&7), output in $LOGS/qemu-io.log; returns once a first 4 KiB read of
# offset 0 succeeded. Sets QEMU_IO_PID; stop_qemu_io ends it.
start_qemu_io() {
    mkfifo "$T/qemu-io.in"
    qemu-io -f raw "$1" <"$T/qemu-io.in" >"$LOGS/qemu-io.log" 2>&1 &
    QEMU_IO_PID=$!
    track_pid "$QEMU_IO_PID"
    exec 7>"$T/qemu-io.in"
    echo "read 0 4096" >&7
    wait_for 60 qemu_io_reads_above 0 || fail "qemu-io cannot read"
}

# qemu_io_reads: how many 4 KiB reads qemu-io reported done so far.
qemu_io_reads() {
    grep -c 'read 4096/4096 bytes' "$LOGS/qemu-io.log" || true
}

# qemu_io_reads_above N: true when more than N reads are done (for wait_for).
qemu_io_reads_above() {
    [ "$(qemu_io_reads)" -gt "$1" ]
}

# qemu_io_read_again N: send one more read and poll up to 2 s for qemu_io_reads_above N (for
# wait_for: reads work again).
qemu_io_read_again() {
    local deadline=$((SECONDS + 2))
    echo "read 0 4096" >&7
    while [ "$SECONDS" -lt "$deadline" ]; do
        qemu_io_reads_above "$1" && return 0
        nap 0.1
    done
    return 1
}

# stop_qemu_io: quit qemu-io and wait for it.
stop_qemu_io() {
    echo quit >&7
    exec 7>&-
    wait_exit 30 "$QEMU_IO_PID" || true
}

# ---------------------------------------------------------------- sanitizers

# Under `make check SANITIZE=1` the plugin is built with ASan, and nbdkit (not built with it)
# can only load it when the ASan runtime comes first: preload it for nbdkit alone. Leak checks
# stay on in rdmablk-target and the test tools, which are linked with ASan themselves. A
# wrapper first in PATH (not a shell function) so that `timeout nbdkit ...` gets it too; it
# takes itself out of PATH before it execs the real nbdkit.
# Under SANITIZE=thread the same, with the TSan runtime.
case ${RDMABLK_SANITIZE:-0} in
1) san_preload="LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=\${NBDKIT_ASAN_OPTIONS:-detect_leaks=0}" ;;
thread) san_preload="LD_PRELOAD=$(gcc -print-file-name=libtsan.so)" ;;
*) san_preload= ;;
esac
if [ -n "$san_preload" ]; then
    mkdir -p "$T/sanbin"
    # A --run command (qemu-io, nbdcopy...) must not inherit the runtime: with ASan preloaded,
    # qemu-io's exit can deadlock in glibc as nbdkit's does (see test-plugin-params), after
    # all its I/O was done. The shim prefixes the command with an unset.
    cat >"$T/sanbin/nbdkit" <<SHIM
#!/bin/sh
PATH=\$(echo "\$PATH" | sed 's|^$T/sanbin:||')
export PATH
n=\$#
run=0
for a in "\$@"; do
    if [ "\$run" = 1 ]; then
        a="unset LD_PRELOAD ASAN_OPTIONS; \$a"
        run=0
    fi
    case \$a in
    --run) run=1 ;;
    --run=*) a="--run=unset LD_PRELOAD ASAN_OPTIONS; \${a#--run=}" ;;
    esac
    set -- "\$@" "\$a"
done
shift "\$n"
$san_preload exec nbdkit "\$@"
SHIM
    chmod +x "$T/sanbin/nbdkit"
    PATH=$T/sanbin:$PATH
    export PATH
fi
