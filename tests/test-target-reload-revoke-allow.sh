#!/bin/bash
# test-shares: none
# A reload that removes a connected initiator's address from an export's allow list revokes
# its connection: the target drains it (what it sent finishes) and closes it within a bound,
# logging why and counting it in --stats; its reconnect, and any new connection, is refused
# with EACCES. A busy client of another export whose allow list still holds its address is
# untouched: same connection, verified data.
# shellcheck source=tests/revoke-lib.sh
. "$(dirname "$0")/revoke-lib.sh"

# write_conf ALLOW: disk0 allows ALLOW, disk1 always allows us.
write_conf() {
    put_conf <<EOF
[export disk0]
path = $T/disk0.img
size = 64M
allow = $1

[export disk1]
path = $T/disk1.img
size = 64M
allow = 10.55.0.0/24
EOF
}

write_conf "$RDMABLK_ADDR 192.0.2.7"
start_target "$conf"
busy victim disk0 -i 0   # flat out: a revocation with requests in flight
busy bystander disk1
ok "busy clients on disk0 and disk1"

write_conf 192.0.2.7
reload disk0 disk1
revoked victim disk0 "its address is no longer in the export's allow list" \
    'address not allowed|EACCES'
if step new rdmablk_io -e disk0 info; then fail "a new connection to disk0 was accepted"; fi
grep -q 'EACCES' "$LOGS/new.log" || fail "the new connection was not refused with EACCES"
ok "a new connection to disk0 is refused (EACCES)"
revocations_are address_not_allowed 1
untouched bystander

stop_target
ok "target exits cleanly"
