#!/bin/bash
# test-shares: none
# `max-connections = N` per export (docs/security.md): with one session holding an export of
# max-connections = 1, another connection to it gets EBUSY at HELLO, and succeeds once the
# holder closes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-session"

target_conf "$T/target.conf" <<CONF
[export one]
path = $T/one.img
size = 4M
max-connections = 1
CONF
start_target "$T/target.conf"

hold_session one one
one_pid=$SESSION_PID
if step busy rdmablk_io -e one info; then fail "a second connection was accepted"; fi
grep -q 'EBUSY' "$LOGS/busy.log" || fail "the second connection failed without EBUSY"
exec 7>&-
wait_exit 60 "$one_pid" || fail "holder session did not exit"
wait_for 60 rdmablk_io -e one info || fail "export 'one' still refused after the holder closed"
ok "max-connections = 1: the extra connection gets EBUSY, and succeeds after the first closes"

stop_target
ok "target exits cleanly"
