#!/bin/bash
# test-shares: none
# Scoped exposure of initiator memory (docs/security.md): a hostile fake target
# (tests/tools/rdmablk-mw-check) keeps the key of a completed READ and RDMA WRITEs with it
# again after its reply. With memory windows (mr=window) that write must fail with a
# remote access error and leave the initiator's memory untouched, whether the reply
# invalidated the key (SEND_WITH_INV) or the initiator did (LOCAL_INV). With mr=static the
# same write lands: the documented risk of the static MR.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/tests/rdmablk-mw-check"

check() { timeout 120 "$BUILD/tests/rdmablk-mw-check" -a "$RDMABLK_ADDR" "$@"; }

step window-inv check -p 10891 || fail "window + SEND_WITH_INV: rdmablk-mw-check failed"
# The flags also carry AUTH_BIND (0x2, docs/protocol.md): only SEND_INV is checked here.
grep -q 'HELLO flags 0x[0-9a-f]* (SEND_INV yes)' "$LOGS/window-inv.log" || fail "no SEND_INV in HELLO"
grep -q 'reply with SEND_WITH_INV' "$LOGS/window-inv.log" || fail "reply did not invalidate"
grep -q 'stale write: remote access error; initiator memory: untouched' \
    "$LOGS/window-inv.log" || fail "window + SEND_WITH_INV: unexpected result"
ok "window, invalidated by the reply: the old key gets a remote access error"

step window-local check -p 10892 -n || fail "window + LOCAL_INV: rdmablk-mw-check failed"
grep -q 'reply with a plain SEND' "$LOGS/window-local.log" || fail "reply invalidated"
grep -q 'stale write: remote access error; initiator memory: untouched' \
    "$LOGS/window-local.log" || fail "window + LOCAL_INV: unexpected result"
ok "window, invalidated locally: the old key gets a remote access error"

step static check -p 10893 -M static || fail "mr=static: expected the stale write to land"
grep -q 'HELLO flags [0-9a-fx]* (SEND_INV no)' "$LOGS/static.log" || fail "static: SEND_INV asked"
grep -q 'stale write: success; initiator memory: MODIFIED' "$LOGS/static.log" ||
    fail "mr=static: unexpected result"
ok "mr=static: the old key still writes into the pool (the documented risk)"

# The real initiator against the real target: windows are the default, and a bind the device
# refuses (forced every 150th bind by the RDMABLK_TEST_FAULT_BIND hook, docs/testing.md) costs
# one connection, not data: the connection is torn down at once (the windows are deallocated
# before the QP, so rxe does not wait 50 s for their references), the client reconnects and
# resends what was never acknowledged, and every byte verifies. Before it resends, the client
# waits until no unanswered write of the lost connection can still start at the target (its
# ttl, docs/durability.md: about 10 s), so the stress runs 40 s to see two refused binds.
target_conf "$T/target.conf" port=10894 admin-socket="$T/admin.sock" <<CONF
[export disk0]
path = $T/disk0.img
size = 64M
CONF
start_target "$T/target.conf"
IO=$BUILD/tests/rdmablk-io
step default "$IO" -H "$RDMABLK_ADDR" -p 10894 -e disk0 -v write 0 64K 7 ||
    fail "a write with the default options failed"
grep -q 'a type-2 memory window per request (mr=window)' "$LOGS/default.log" ||
    fail "the initiator's default is not per-request memory windows"
ok "the initiator's default is a memory window per request"

RDMABLK_TEST_FAULT_BIND=150 step fault-bind timeout 200 "$IO" -H "$RDMABLK_ADDR" -p 10894 \
    -e disk0 -t 20 -s stress 40 8 256K || fail "stress with refused binds failed"
refused=$(grep -c 'memory window bind failed' "$LOGS/fault-bind.log")
reconnects=$(sed -n 's/.* reconnects=\([0-9]*\).*/\1/p' "$LOGS/fault-bind.log")
[ "$refused" -ge 2 ] || fail "only $refused refused binds: the hook did not fire"
[ "${reconnects:-0}" -ge 2 ] || fail "$refused refused binds but ${reconnects:-no} reconnects"
ok "$refused refused binds, $reconnects reconnects, $(grep '^ops=' "$LOGS/fault-bind.log"), all verified"
