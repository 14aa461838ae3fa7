#!/bin/bash
# test-shares: none
# threads = 2: SIGTERM drains a connection on each event loop and the target exits 0.
# shellcheck source=tests/threads-lib.sh
. "$(dirname "$0")/threads-lib.sh"

start_two_loops "$RDMABLK_ADDR"
client d1 d1 1
client d2 d2 2
wait_for 60 both_loops_busy 1 || fail "the two new clients are not one on each loop"
progress "SIGTERM"
n=$(grep -Ec 'connection closed \(export d[12]\): drained' "$LOGS/target.log" || true)
stop_target
[ ! -e "$T/target.pid" ] || fail "pidfile left behind"
m=$(grep -Ec 'connection closed \(export d[12]\): drained' "$LOGS/target.log" || true)
[ "$((m - n))" = 2 ] || fail "SIGTERM drained $((m - n)) connections, want 2 (one per loop)"
ok "SIGTERM drained the connection of each loop and exited 0"
