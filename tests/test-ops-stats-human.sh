#!/bin/bash
# test-shares: none
# rdmablk-target --stats --human renders the counters as a table: exports, latency, group
# commit and refusals.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf yes
start_target "$T/target.conf"
run write 0 4096 1
if EXPORT=nosuch step nosuch io info; then fail "unknown export accepted"; fi

step human stats --human || fail "--stats --human failed"
for want in 'EXPORT' 'disk0' 'd1' 'LATENCY (us)' 'GROUP COMMIT' 'unknown_export 1'; do
    grep -qF "$want" "$LOGS/human.log" || fail "--stats --human lacks '$want'"
done
sed 's/^/  | /' "$LOGS/human.log"
ok "--stats --human renders the table"
stop_target
