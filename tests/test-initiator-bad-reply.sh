#!/bin/bash
# test-shares: none
# The initiator refuses a READ reply that carries data it did not ask for (docs/protocol.md,
# "Inline reads"): a fake target (tests/tools/rdmablk-bad-reply) grants inline reads, then
# answers a 64 KiB READ that went by RDMA WRITE with 64 bytes of data in the reply, or a 4 KiB
# inline READ with 100 bytes. Either is a protocol violation: the READ fails, the initiator
# closes the connection, and the caller's buffer is left as it was (nothing of the reply is
# copied). The control: the same fake target's correct inline reply, 4096 bytes, is accepted
# and its data lands in the caller's buffer. The same for a reply sent as the data alone with
# immediate (READ_IMM): accepted when granted and asked for (the control), refused as the
# reply to a READ by RDMA WRITE, and refused on a connection not granted READ_IMM; one whose
# immediate names another generation of the slot answers no outstanding request: dropped, and
# the READ fails at its timeout with the caller's buffer untouched. An RDMA WRITE with immediate
# (it consumes a receive, but its data is not in it) is refused as well.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/tests/rdmablk-bad-reply"

bad_reply() { timeout 120 "$BUILD/tests/rdmablk-bad-reply" -a "$RDMABLK_ADDR" "$@"; }

step good bad_reply -p 10895 -m good || fail "control: the correct inline reply was not accepted"
grep -q 'fake target: READ of 4096 bytes, inline' "$LOGS/good.log" || fail "control: the READ was not inline"
grep -q "READ: OK (no error); caller's buffer: the data; connection: up" "$LOGS/good.log" ||
    fail "control: unexpected result"
ok "control: a correct inline reply of 4096 bytes is accepted, its data in the caller's buffer"

step unasked bad_reply -p 10896 -m unasked || fail "data in the reply to a READ by RDMA WRITE was accepted"
grep -q 'fake target: READ of 65536 bytes, by RDMA WRITE' "$LOGS/unasked.log" ||
    fail "unasked: the READ did not go by RDMA WRITE"
grep -q 'bad reply: 64 bytes of data in the reply to a READ that asked for none' "$LOGS/unasked.log" ||
    fail "unasked: no error naming the unasked data"
grep -q "READ: FAILED (.*); caller's buffer: untouched; connection: closed by the initiator" \
    "$LOGS/unasked.log" || fail "unasked: unexpected result"
ok "64 bytes of data in the reply to a READ by RDMA WRITE: refused, the connection closed"

step short bad_reply -p 10897 -m short || fail "a short inline reply was accepted"
grep -q 'bad reply: 100 bytes of data in the reply to a READ that asked for another length' \
    "$LOGS/short.log" || fail "short: no error naming the length"
grep -q "READ: FAILED (.*); caller's buffer: untouched; connection: closed by the initiator" \
    "$LOGS/short.log" || fail "short: unexpected result"
ok "100 bytes in the reply to an inline READ of 4096: refused, the connection closed"

# READ_IMM: the same data alone, in a SEND with immediate.
step imm bad_reply -p 10886 -m imm || fail "control: the correct reply with immediate was not accepted"
grep -q 'initiator: inline reads granted, with immediate granted' "$LOGS/imm.log" ||
    fail "imm: READ_IMM was not granted"
grep -q "READ: OK (no error); caller's buffer: the data; connection: up" "$LOGS/imm.log" ||
    fail "imm: unexpected result"
grep -q 'initiator: 1 replies with immediate' "$LOGS/imm.log" || fail "imm: the reply was not counted"
ok "control: a correct reply with immediate, 4096 bytes alone, is accepted, its data in the caller's buffer"

step imm-unasked bad_reply -p 10887 -m imm-unasked ||
    fail "data with immediate in the reply to a READ by RDMA WRITE was accepted"
grep -q 'bad reply: 64 bytes of data in the reply to a READ that asked for none' \
    "$LOGS/imm-unasked.log" || fail "imm-unasked: no error naming the unasked data"
grep -q "READ: FAILED (.*); caller's buffer: untouched; connection: closed by the initiator" \
    "$LOGS/imm-unasked.log" || fail "imm-unasked: unexpected result"
ok "64 bytes with immediate in the reply to a READ by RDMA WRITE: refused, the connection closed"

step imm-ungranted bad_reply -p 10888 -m imm-ungranted ||
    fail "a reply with immediate on a connection not granted READ_IMM was accepted"
grep -q 'bad reply: a SEND with immediate on a connection that was not granted READ_IMM' \
    "$LOGS/imm-ungranted.log" || fail "imm-ungranted: no error naming the missing grant"
grep -q "READ: FAILED (.*); caller's buffer: untouched; connection: closed by the initiator" \
    "$LOGS/imm-ungranted.log" || fail "imm-ungranted: unexpected result"
ok "a reply with immediate where READ_IMM was not granted: refused, the connection closed"

step imm-stale bad_reply -p 10889 -m imm-stale ||
    fail "a reply with immediate whose generation bits are another request's was accepted"
grep -q 'rejected a reply with a stale or unknown tag' "$LOGS/imm-stale.log" ||
    fail "imm-stale: no error naming the stale tag"
grep -q "READ: FAILED (.*); caller's buffer: untouched" "$LOGS/imm-stale.log" ||
    fail "imm-stale: unexpected result"
ok "a reply with immediate of another generation of the slot: dropped, the READ failed at its timeout, untouched"

step imm-write bad_reply -p 10885 -m imm-write || fail "an RDMA WRITE with immediate was taken for a reply"
grep -q 'bad reply: an RDMA WRITE with immediate' "$LOGS/imm-write.log" ||
    fail "imm-write: no error naming the RDMA WRITE with immediate"
grep -q "READ: FAILED (.*); caller's buffer: untouched; connection: closed by the initiator" \
    "$LOGS/imm-write.log" || fail "imm-write: unexpected result"
ok "an RDMA WRITE with immediate in answer to a READ: refused, the connection closed"
