#!/bin/bash
# test-shares: none
# stats = no: the target counts no requests (--stats still answers, with "stats": false, and
# still counts connections).
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf no
start_target "$T/target.conf"
run write 0 4096 12
wait_for 60 stats_json "$T/off.json" 's["connections"]["accepted"] == 1 and s["connections"]["current"] == 0' ||
    fail "stats = no: the connection was not counted and closed"
cp "$T/off.json" "$LOGS/off.json"
stats_json "$T/off.json" 's["stats"] is False and s["total"]["writes"] == 0 and s["total"]["bytes_written"] == 0' ||
    fail "stats = no: requests were counted"
ok "stats = no counts no requests"
stop_target
