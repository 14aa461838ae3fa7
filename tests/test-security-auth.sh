#!/bin/bash
# Authentication and access control (docs/security.md):
# - an export with `secret-file =`: the right secret works (data verified); a wrong secret, no
#   secret, and a secret file readable by others (0644) are each refused with a clear message
#   and a non-zero exit, through rdmablk-io and through nbdkit;
# - an initiator with a secret refuses an export that does not authenticate itself;
# - a replayed AUTH (recorded from a genuine session) is refused: the target's nonce changed;
# - max-connections: the extra connection gets EBUSY, and succeeds once one closes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-replay" \
    "$BUILD/tests/rdmablk-session"

printf 'correct horse battery staple, stapled\n' >"$T/good.key"
printf 'wrong horse battery staple, unstapled\n' >"$T/bad.key"
cp "$T/good.key" "$T/loose.key"
chmod 600 "$T/good.key" "$T/bad.key"
chmod 644 "$T/loose.key"
: >"$T/empty.key"
printf 'hunter2\n' >"$T/short.key"
chmod 600 "$T/empty.key" "$T/short.key"
ln -s "$T/good.key" "$T/link.key"

target_conf "$T/target.conf" <<CONF
[export sec]
path = $T/sec.img
size = 8M
secret-file = $T/good.key

[export open]
path = $T/open.img
size = 4M

[export one]
path = $T/one.img
size = 4M
max-connections = 1
CONF
start_target "$T/target.conf"

# refused NAME REGEX CMD...: CMD must exit non-zero and its output must match REGEX.
refused() {
    local name=$1 re=$2
    shift 2
    if step "$name" "$@"; then fail "$name: accepted"; fi
    grep -Eq "$re" "$LOGS/$name.log" || fail "$name: no '$re' in its output"
}

# ---- rdmablk-io
step right-write rdmablk_io -e sec -S "$T/good.key" write 0 1M 11 || fail "right secret: write failed"
step right-read rdmablk_io -e sec -S "$T/good.key" read 0 1M 11 || fail "right secret: read failed"
n=$(sessions_of "$T/target.conf" sec)
[ "$n" = 2 ] || fail "the target counted $n sessions on export sec, expected 2"
ok "right secret: 1 MiB written and read back verified"

# With a different key the initiator finds the target's proof wrong first, and never answers.
refused wrong 'target failed to prove it knows the secret' rdmablk_io -e sec -S "$T/bad.key" info
grep -q 'Permission denied (EACCES)' "$LOGS/wrong.log" || fail "wrong secret: not EACCES"
wait_for 30 stat_reaches "$T/target.conf" refused auth_failure 1 ||
    fail "the target did not count the failed authentication"
grep -q 'export sec: authentication failed: no response' "$LOGS/target.log" ||
    fail "the target did not log why the authentication failed"
ok "wrong secret: refused (EACCES), logged on both sides"

refused none 'export requires a secret \(secret-file=\)' rdmablk_io -e sec info
ok "no secret: refused"

refused loose 'permissions 0644 are too open; chmod 600' rdmablk_io -e sec -S "$T/loose.key" info
refused empty 'secret-file .*: empty' rdmablk_io -e sec -S "$T/empty.key" info
refused short 'shorter than 32 bytes' rdmablk_io -e sec -S "$T/short.key" info
refused symlink 'symbolic link' rdmablk_io -e sec -S "$T/link.key" info
ok "secret files readable by others, empty, shorter than 32 bytes or symlinks are refused"

refused unauth 'did not authenticate' rdmablk_io -e open -S "$T/good.key" info
ok "an initiator with a secret refuses an export that does not authenticate"
step open-plain rdmablk_io -e open write 0 4096 5 || fail "export without a secret broken"

# ---- replay: record a genuine AUTH, replay it on a new connection
n_wrong=$(grep -c 'export sec: authentication failed: wrong response' "$LOGS/target.log" || true)
n_failed=$(target_stat "$T/target.conf" refused auth_failure) || fail "--stats failed"
step replay "$BUILD/tests/rdmablk-replay" -H "$RDMABLK_ADDR" -e sec -S "$T/good.key" ||
    fail "replayed AUTH was not refused with EACCES"
grep -q 'replay refused: .*target rejected authentication (EACCES)' "$LOGS/replay.log" ||
    fail "replay: no refusal reported"
wait_for 30 stat_reaches "$T/target.conf" refused auth_failure $((n_failed + 1)) ||
    fail "the target did not count the replay as a failed authentication"
[ "$(grep -c 'export sec: authentication failed: wrong response' "$LOGS/target.log")" -gt "$n_wrong" ] ||
    fail "the target did not log the replay as a wrong response"
ok "replayed AUTH refused (fresh target nonce)"

# ---- the target refuses a loose secret file in its config
sed "s|secret-file = .*|secret-file = $T/loose.key|" "$T/target.conf" >"$T/loose.conf"
refused conf-loose 'permissions 0644 are too open; chmod 600' \
    "$BUILD/rdmablk-target" -n -c "$T/loose.conf"
sed "s|secret-file = .*|secret-file = $T/short.key|" "$T/target.conf" >"$T/short.conf"
refused conf-short 'shorter than 32 bytes' "$BUILD/rdmablk-target" -n -c "$T/short.conf"
sed "s|secret-file = .*|secret-file = $T/link.key|" "$T/target.conf" >"$T/link.conf"
refused conf-link 'symbolic link' "$BUILD/rdmablk-target" -n -c "$T/link.conf"
# A key owned by another user (not root): whoever owns it could swap it.
cp "$T/good.key" "$T/foreign.key"
chown 65534 "$T/foreign.key"
sed "s|secret-file = .*|secret-file = $T/foreign.key|" "$T/target.conf" >"$T/foreign.conf"
refused conf-foreign 'owned by uid 65534' "$BUILD/rdmablk-target" -n -c "$T/foreign.conf"
ok "target: loose, short, symlinked and foreign-owned secret files in the config are refused"

# ---- nbdkit (with export=, the plugin's probe connection authenticates at startup)
if command -v nbdkit >/dev/null && command -v nbdinfo >/dev/null; then
    PLUGIN=$BUILD/nbdkit-rdma-plugin.so
    # nbdkit under a time bound; with SANITIZE=1 the ASan runtime must come first (lib.sh).
    nbdkit_bounded() {
        if [ "${RDMABLK_SANITIZE:-0}" = 1 ]; then
            LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
                timeout 120 nbdkit "$@"
        else
            timeout 120 nbdkit "$@"
        fi
    }
    start_nbdkit hostname="$RDMABLK_ADDR" export=sec secret-file="$T/good.key" timeout=30
    step nbd-right nbdinfo --size "$NBD_URI" || fail "nbdkit with the right secret failed"
    grep -qx 8388608 "$LOGS/nbd-right.log" || fail "nbdkit: wrong size"
    kill -TERM "$NBDKIT_PID"
    wait_exit 60 "$NBDKIT_PID" || true
    # nbdkit_refused NAME REGEX PLUGIN-ARGS...: nbdkit must exit non-zero, saying REGEX.
    nbdkit_refused() {
        local name=$1 re=$2 rc=0
        shift 2
        step "$name" nbdkit_bounded --foreground --unix "$T/$name.sock" "$PLUGIN" \
            hostname="$RDMABLK_ADDR" export=sec timeout=30 "$@" || rc=$?
        if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then fail "$name: nbdkit started (status $rc)"; fi
        grep -Eq "$re" "$LOGS/$name.log" || fail "$name: no '$re' in nbdkit's output"
    }
    nbdkit_refused nbd-wrong 'target failed to prove it knows the secret' secret-file="$T/bad.key"
    nbdkit_refused nbd-none 'export requires a secret \(secret-file=\)'
    nbdkit_refused nbd-loose 'permissions 0644 are too open; chmod 600' secret-file="$T/loose.key"
    ok "nbdkit: right secret works; wrong, missing and loose secrets refused"
else
    echo "nbdkit/nbdinfo missing: plugin checks skipped"
fi

# ---- max-connections: a holder, an extra refused with EBUSY, then a success after it closes
hold_session one one
one_pid=$SESSION_PID
refused busy 'EBUSY' rdmablk_io -e one info
exec 7>&-
wait_exit 60 "$one_pid" || fail "holder session did not exit"
wait_for 60 rdmablk_io -e one info || fail "export 'one' still refused after the holder closed"
ok "max-connections = 1: the extra connection gets EBUSY, and succeeds after the first closes"

stop_target
ok "target exits cleanly"
