#!/bin/bash
# With keepalive = 1 the target probes an idle live connection (a zero-length RDMA WRITE): the
# probes succeed, the connection still serves, and they count as no request.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf yes keepalive=1
start_target "$T/target.conf" -v
start_session disk0
sess write 0 4096 9
# The session now sits idle until the target has probed it a few times.
probes() { [ "$(grep -c 'liveness probe posted' "$LOGS/target.log")" -ge 3 ]; }
wait_for 60 probes || fail "the idle session was not probed 3 times (keepalive = 1)"
sess read 0 4096 9
if grep -q 'liveness probe completion failed' "$LOGS/target.log"; then
    fail "a liveness probe of a live session failed"
fi
wait_for 60 stats_json "$T/s.json" \
    '[(c["writes"], c["reads"], c["nops"]) for c in s["connection_list"]] == [(1, 1, 0)]' ||
    fail "the probes were counted as requests (see $T/s.json)"
cp "$T/s.json" "$LOGS/stats.json"
ok "$(grep -c 'liveness probe posted' "$LOGS/target.log") liveness probes of an idle session: none failed, none counted, it still serves"
stop_session
stop_target
