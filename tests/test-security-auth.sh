#!/bin/bash
# test-shares: none
# An export with `secret-file =` serves only an initiator that knows the secret
# (docs/security.md): the right secret works (data verified); a wrong secret, no secret, and
# secret files that are readable by others (0644), empty, shorter than 32 bytes or symlinks are
# each refused with a clear message and a non-zero exit, through rdmablk-io and through nbdkit;
# the target counts and logs the failed authentication; and an initiator with a secret refuses
# an export that does not authenticate itself.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/auth-lib.sh
. "$(dirname "$0")/auth-lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

make_keys
secret_conf "$T/target.conf" "$T/good.key"
start_target "$T/target.conf"

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

# nbdkit (with export=, the plugin's probe connection authenticates at startup).
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

stop_target
ok "target exits cleanly"
