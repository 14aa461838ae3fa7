#!/bin/bash
# test-shares: none
# A relayed authentication fails (docs/security.md, "Bound to the connection"). An on-path
# attacker, tests/tools/rdmablk-relay, poses as the target to a genuine initiator that holds the
# secret, connects to the real target itself and passes HELLO, CHALLENGE and AUTH through
# byte for byte, to get an authenticated connection of its own. The proofs cover both ends'
# GIDs and QPNs as each side sees them, so the initiator finds the relayed CHALLENGE wrong and
# sends no AUTH, and the relay is never served. Here all three run on one address, so the GIDs
# are the same everywhere and only the QPNs tell the connections apart: the hardest case.
# Before the binding (commit "auth: bind CHALLENGE/AUTH proofs to both GIDs and QPNs") this
# test failed: the relay printed "HIJACKED" and read from the export.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-relay"

RELAY_PORT=10899
head -c 48 /dev/urandom | base64 >"$T/k.key"
chmod 600 "$T/k.key"

target_conf "$T/target.conf" <<CONF
[export sec]
path = $T/sec.img
size = 4M
secret-file = $T/k.key
CONF
start_target "$T/target.conf"

IO_OPTS="-e sec -S $T/k.key"

step direct rdmablk_io -H "$RDMABLK_ADDR" write 0 64K 9 || fail "direct connection with the key failed"
ok "the genuine initiator authenticates directly"

"$BUILD/tests/rdmablk-relay" -l "$RDMABLK_ADDR" -p "$RELAY_PORT" -H "$RDMABLK_ADDR" -t 90 \
    >"$LOGS/relay.log" 2>&1 &
relay=$!
track_pid "$relay"
wait_for 60 grep -q '^listening' "$LOGS/relay.log" || fail "the relay did not start listening"

if step via-relay rdmablk_io -H "$RDMABLK_ADDR" -p "$RELAY_PORT" info; then
    fail "the initiator authenticated through the relay"
fi
grep -q 'target failed to prove it knows the secret' "$LOGS/via-relay.log" ||
    fail "the initiator did not refuse the relayed CHALLENGE"
grep -q 'Permission denied (EACCES)' "$LOGS/via-relay.log" || fail "the refusal was not EACCES"
ok "the initiator refuses the relayed CHALLENGE (EACCES)"

rc=0
wait_exit 90 "$relay" || rc=$?
grep -q 'target -> initiator: CHALLENGE' "$LOGS/relay.log" ||
    fail "the relay never passed a CHALLENGE on: the attack was not tried"
if grep -q HIJACKED "$LOGS/relay.log"; then fail "the target served the relay"; fi
[ "$rc" = 0 ] || fail "the relay exited with $rc, not 0 (the attack failed)"
grep -q 'attack failed: the initiator gave up after the relayed CHALLENGE and sent no AUTH' \
    "$LOGS/relay.log" || fail "the relay did not report the initiator's refusal"
if grep -q 'initiator -> target: AUTH' "$LOGS/relay.log"; then fail "an AUTH was relayed"; fi
wait_for 30 stat_reaches "$T/target.conf" refused auth_failure 1 ||
    fail "the target did not count the failed authentication"
grep -q 'export sec: authentication failed: no response' "$LOGS/target.log" ||
    fail "the target did not log why the authentication failed"
ok "the relay got no AUTH to pass on and no connection; the target logged the failure"

step direct-after rdmablk_io -H "$RDMABLK_ADDR" read 0 64K 9 || fail "direct connection broken afterwards"
n=$(sessions_of "$T/target.conf" sec)
[ "$n" = 2 ] || fail "$n sessions on export sec, expected 2 (the direct ones)"
ok "only the two direct connections were ever authenticated"
stop_target
ok "target exits cleanly"
