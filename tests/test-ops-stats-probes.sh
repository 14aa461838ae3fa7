#!/bin/bash
# test-shares: none
# With keepalive = 1 the target probes an idle live connection (a zero-length RDMA WRITE): the
# probes succeed, the connection still serves, and they count as no request.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf yes keepalive=1
start_target "$T/target.conf"
start_session disk0
sess write 0 4096 9
# The session now sits idle until the target has probed it a few times.
wait_for 60 stat_reaches "$T/target.conf" liveness_probes posted 3 ||
    fail "the idle session was not probed 3 times (keepalive = 1)"
sess read 0 4096 9
probes=$(target_stat "$T/target.conf" liveness_probes posted) || fail "--stats failed"
for k in failed unanswered; do
    n=$(target_stat "$T/target.conf" liveness_probes $k) || fail "--stats failed"
    [ "$n" = 0 ] || fail "$n liveness probes of a live session $k"
done
wait_for 60 stats_json "$T/s.json" \
    '[(c["writes"], c["reads"], c["nops"]) for c in s["connection_list"]] == [(1, 1, 0)]' ||
    fail "the probes were counted as requests (see $T/s.json)"
cp "$T/s.json" "$LOGS/stats.json"
ok "$probes liveness probes of an idle session: none failed, none counted, it still serves"
stop_session
stop_target
