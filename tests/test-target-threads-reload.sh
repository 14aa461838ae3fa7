#!/bin/bash
# test-shares: none
# threads = 2: a reload that revokes two exports' address reaches their connections on both
# event loops, while the two other clients, on both loops too, are untouched and verify their
# data.
# shellcheck source=tests/threads-lib.sh
. "$(dirname "$0")/threads-lib.sh"

four_clients
write_conf 192.0.2.7
progress "reloading"
reload v1 v2 b1 b2
progress "reloaded"
revoked v1 v1 "its address is no longer in the export's allow list" 'address not allowed|EACCES'
revoked v2 v2 "its address is no longer in the export's allow list" 'address not allowed|EACCES'
revocations_are address_not_allowed 2
progress "revoked"
settle 1
wait_for 60 both_loops_busy 1 || fail "the bystanders do not run on both loops after the reload"
progress "stopping the bystanders"
untouched b1 b2
ok "a reload revoked the victims' connections on both loops; the bystanders', on both loops, verified their data"

