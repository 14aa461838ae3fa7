#!/bin/bash
# test-shares: none
# A hostile initiator (tests/tools/rdmablk-hostile.c, raw verbs) sends truncated and malformed
# messages, unknown opcodes and types, non-zero reserved fields, requests before HELLO and a
# second HELLO, out-of-range, overflowing, oversized and misaligned requests, bogus rkeys and
# addresses, more requests than credits, garbage handshakes and disconnects mid-handshake, each
# on its own connection. Every reaction must be one docs/protocol.md allows (checked by the
# tool), a well-behaved client on another export keeps verifying its data meanwhile, and the
# target never crashes: it still serves, frees every connection, leaks no fd or registered
# memory, exits 0 on SIGTERM and its log has no sanitizer report.
# Runs against the sanitizer build ($TOP/build-san/rdmablk-target, make SANITIZE=1) when it
# exists.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires rdma
requires_file "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-hostile"

target_build=$BUILD
if [ -x "$TOP/build-san/rdmablk-target" ]; then
    target_build=$TOP/build-san
else
    echo "note: $TOP/build-san/rdmablk-target not built (make SANITIZE=1); using $BUILD"
fi
requires_file "$target_build/rdmablk-target"

# handshake-timeout: scenario "silent" waits for this. inline-max: below a receive buffer, so
# that an over-long inline WRITE is refused with EINVAL.
target_conf "$T/target.conf" max-io=256K buffer-pool=4M queue-depth=32 handshake-timeout=3 \
    inline-max=1K <<EOF
[export good]
path = $T/good.img
size = 64M

[export hostile]
path = $T/hostile.img
size = 64M
EOF
BUILD=$target_build start_target "$T/target.conf" -v
ok "target: $target_build/rdmablk-target"

IO_OPTS="-t 60"
step warmup rdmablk_io -e hostile write 0 1M 1 || fail "first write failed"
wait_for 60 conns_are "$T/target.conf" 0 || fail "the first connection was not freed"
base=$(target_resources)
ok "baseline: $base"

# The well-behaved client: it exits non-zero on the first mismatch or I/O error.
"$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e good -t 60 stress 3600 2 65536 \
    >"$LOGS/verifier.log" 2>&1 &
verifier=$!
track_pid "$verifier"
wait_for 60 sessions_reach "$T/target.conf" good 1 ||
    fail "the verifier never connected"

start_s=$SECONDS
rc=0
timeout 600 "$BUILD/tests/rdmablk-hostile" -H "$RDMABLK_ADDR" -e hostile -t 20 all \
    >"$LOGS/hostile.log" 2>&1 || rc=$?
grep '^FAIL' "$LOGS/hostile.log" >&2 || true
[ "$rc" = 0 ] || fail "rdmablk-hostile exited with $rc: $(tail -n 1 "$LOGS/hostile.log")"
ok "rdmablk-hostile: $(tail -n 1 "$LOGS/hostile.log") in $((SECONDS - start_s)) s"

_gone "$TARGET_PID" && fail "the target died"
# The bogus-key READs: the target's RDMA WRITE failed on that connection only.
grep -q 'RDMA completion failed: remote access error' "$LOGS/target.log" ||
    fail "the target never saw a remote access error for the bogus-key READs"
ok "bogus keys: the target's RDMA operations failed with a remote access error"

stop_verifier "$verifier" "$LOGS/verifier.log"
ok "the concurrent client kept verifying its data throughout"

step after-write rdmablk_io -e hostile write 2097152 262144 7 || fail "write after the attack failed"
step after-read rdmablk_io -e hostile read 2097152 262144 7 || fail "read after the attack failed"
ok "the target still serves"

wait_for 120 conns_are "$T/target.conf" 0 ||
    fail "connections not freed: $(live_conns "$T/target.conf") still live"
wait_for 60 resources_are "$base" || fail "resources leaked: baseline $base, now $(target_resources)"
ok "every connection freed; back to $base"
if grep -q 'buffers in use\|requests still active\|never flushed' "$LOGS/target.log"; then
    fail "the target reports leaked buffers or requests"
fi

stop_target
ok "target exits cleanly, no sanitizer report"
