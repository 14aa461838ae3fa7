#!/bin/bash
# test-shares: none
# allow = lists: an export whose list excludes the initiator refuses it with EACCES at HELLO
# and is hidden from LIST; a target none of whose exports allow the initiator refuses the
# RDMA CM connection itself with EACCES. Allowed exports keep working.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

target_conf "$T/target.conf" <<EOF
[export open]
path = $T/open.img
size = 4M
allow = 10.55.0.0/24 fd00::/8

[export closed]
path = $T/closed.img
size = 4M
allow = 192.0.2.0/24 10.55.0.7
EOF
start_target "$T/target.conf"


step open rdmablk_io -e open write 0 4096 3 || fail "allowed export refused"
ok "allowed export serves"
if step closed rdmablk_io -e closed info; then fail "export with a non-matching allow list accepted us"; fi
grep -q 'EACCES' "$LOGS/closed.log" || fail "refusal was not EACCES"
ok "non-matching allow list: EACCES at HELLO"
step list rdmablk_io -e open list || fail "list failed"
grep -q '^open' "$LOGS/list.log" || fail "LIST misses the allowed export"
if grep -q '^closed' "$LOGS/list.log"; then fail "LIST shows an export we may not use"; fi
ok "LIST shows only allowed exports"

target_conf "$T/target2.conf" port=10811 <<EOF
[export closed]
path = $T/closed.img
allow = 192.0.2.0/24
EOF
TARGET_NAME=target2 start_target "$T/target2.conf"
if step cm-reject rdmablk_io -p 10811 -e closed info; then fail "target 2 accepted a disallowed peer"; fi
grep -q 'EACCES' "$LOGS/cm-reject.log" || fail "CM refusal was not EACCES"
grep -q 'connection refused: address not allowed' "$LOGS/target2.log" ||
    fail "target 2 did not log the refusal"
ok "no export allows us: RDMA CM connection rejected with EACCES"
step open-again rdmablk_io -e open read 0 4096 3 || fail "allowed export broken afterwards"

# A clean exit: status 0 (LeakSanitizer and ASan make it non-zero), nothing reported.
stop_target
ok "target exits cleanly"
