#!/bin/bash
# test-shares: none
# A READ of 4 KiB or less that comes back in its reply (READ_INLINE) comes as its data alone,
# in a SEND with immediate carrying the tag's low half (READ_IMM): one packet at a 4096-byte
# MTU. The initiator asks for it, the target grants it and logs so. Four threads of verified
# write/read pairs of 512 bytes to 4 KiB (rdmablk-io stress, the library's pool path) keep
# several requests out at once, so the immediate has to find the right one of several slots:
# every pair verifies, and every read's reply came with immediate (the replies counted equal
# the reads, the bytes read inline equal the bytes read). The control: an initiator that does
# not ask (RDMABLK_TEST_NO_READ_IMM=1, as initiators older than the flag) runs the same pairs,
# verified, with the same bytes read inline in replies with their header, none with
# immediate, and the target does not grant it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

target_conf "$T/target.conf" <<EOF
[export disk0]
path = $T/disk0.img
size = 16M
EOF
start_target "$T/target.conf"

stress() {
    local name=$1
    step "$name" timeout 120 "$BUILD/tests/rdmablk-io" -s -H "$RDMABLK_ADDR" -t 30 -q 8 \
        -e disk0 stress 5 4 4096
}
# stat NAME FIELD: FIELD=N of the client's stats line (or its ops= line) in NAME.log.
stat() { grep -oE "(^| )$2=[0-9]+" "$LOGS/$1.log" | tail -n 1 | sed 's/.*=//'; }
# check NAME IMM: NAME's reads all came inline, IMM (all or none) of them with immediate.
check() {
    local ops bytes inl imm
    ops=$(stat "$1" ops)
    bytes=$(stat "$1" bytes)
    inl=$(stat "$1" inline_read_bytes)
    imm=$(stat "$1" imm_read_replies)
    [ -n "$ops" ] && [ "$ops" -ge 20 ] || fail "$1: ${ops:-no} ops in 5 s, want 20 or more"
    [ "$inl" = $((bytes / 2)) ] ||
        fail "$1: $inl bytes read inline, want all $((bytes / 2)) bytes read"
    case $2 in
    all) [ "$imm" = $((ops / 2)) ] || fail "$1: $imm replies with immediate, want all $((ops / 2)) reads" ;;
    none) [ "$imm" = 0 ] || fail "control: $imm replies with immediate, want none" ;;
    esac
    echo "$ops ops, $inl bytes read inline, $imm replies with immediate"
}

stress imm || fail "verified 512 B..4 KiB write/read pairs failed (imm.log)"
got=$(check imm all)
grep -q 'connected to export disk0, .*, inline reads with immediate' "$LOGS/target.log" ||
    fail "the target did not log a connection granted inline reads with immediate"
ok "four threads of verified pairs: $got"

RDMABLK_TEST_NO_READ_IMM=1 stress old ||
    fail "control: the same pairs by an initiator that does not ask for READ_IMM failed (old.log)"
got=$(check old none)
last=$(grep 'connected to export disk0' "$LOGS/target.log" | tail -n 1)
case $last in
*"inline reads with immediate"*) fail "control: the target granted READ_IMM unasked: $last" ;;
*"inline reads"*) ;;
*) fail "control: the target did not grant inline reads: $last" ;;
esac
ok "control: without READ_IMM the same pairs verify: $got"
