#!/bin/bash
# test-shares: none
# The metrics listener under bad input (tests/tools/http-hostile.py): methods and paths other
# than GET /metrics get 404, requests that are not HTTP/1 get 400, a 20 KB request line is
# closed unanswered, slowloris clients are dropped after the 5 s bound while one more client is
# refused, and 200 connections at once leave none hanging. Meanwhile an RDMA client keeps
# verifying its data, and the target still serves and exits cleanly afterwards.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/metrics-lib.sh
. "$(dirname "$0")/metrics-lib.sh"

requires curl python3
require_rdma
requires_file "$BUILD/tests/rdmablk-io"

target_conf "$T/target.conf" port=10810 queue-depth=32 metrics-listen=$METRICS_ADDR <<EOF
[export good]
path = $T/good.img
size = 64M
EOF
start_target "$T/target.conf"
start_good_client good 3600 65536
step http-hostile python3 "$TOP/tests/tools/http-hostile.py" "$METRICS_ADDR" 16 5 ||
    fail "the metrics listener mishandled a hostile client: $(grep FAIL "$LOGS/http-hostile.log" | head -n 3)"
ok "$(grep -c '^ok' "$LOGS/http-hostile.log") hostile HTTP scenarios handled"
stop_verifier "$GOOD_PID" "$LOGS/good.log"
ok "the RDMA client kept verifying its data throughout"
step io rdmablk_io -e good write 0 1M 7 || fail "the target no longer serves RDMA"
step io-read rdmablk_io -e good read 0 1M 7 || fail "the target no longer serves RDMA reads"
scrape || fail "GET /metrics failed after the hostile clients"
[ "$(metric_value 'rdmablk_requests_total{export="good",op="write"}')" -gt 0 ] ||
    fail "the metrics count no write"
ok "the target still serves RDMA and metrics"
stop_target
