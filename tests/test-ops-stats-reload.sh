#!/bin/bash
# test-shares: none
# stats = no, then a SIGHUP with stats = yes: the target counts requests again from then on.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf no
start_target "$T/target.conf"
run write 0 4096 12
stats_json "$T/off.json" 's["stats"] is False and s["total"]["writes"] == 0' ||
    fail "stats = no: requests were counted"
stats_conf yes
kill -HUP "$TARGET_PID"
wait_for 60 stats_json "$T/on.json" 's["stats"] is True' || fail "SIGHUP did not turn stats on"
run write 0 4096 13
stats_json "$T/on.json" 's["total"]["writes"] == 1 and s["total"]["bytes_written"] == 4096' ||
    fail "stats = yes after SIGHUP: the write was not counted"
cp "$T/on.json" "$LOGS/on.json"
ok "stats = no counts no requests; SIGHUP with stats = yes counts again"
stop_target
