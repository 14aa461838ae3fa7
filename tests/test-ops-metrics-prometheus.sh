#!/bin/bash
# test-shares: none
# Prometheus scrapes the target's metrics-listen: promtool check metrics finds no problem in a
# scrape, a real Prometheus server answers a query for each metric family of a file export,
# its request counter rises during a fio run through nbdkit rdma, and afterwards the stage
# histograms count exactly the requests made (fio's own count, and the target's counter).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/metrics-lib.sh
. "$(dirname "$0")/metrics-lib.sh"

requires nbdkit fio prometheus promtool curl python3
require_rdma
requires_file "$BUILD/nbdkit-rdma-plugin.so"
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"

target_conf "$T/target.conf" port=10810 queue-depth=64 metrics-listen=$METRICS_ADDR <<EOF
[export disk0]
path = $T/disk0.img
size = 64M
EOF
start_target "$T/target.conf"
grep -q "metrics on http://$METRICS_ADDR/metrics" "$LOGS/target.log" ||
    fail "the target did not say where it serves its metrics"
scrape "$T/scrape0.txt" || fail "GET /metrics failed"
promtool check metrics <"$T/scrape0.txt" >"$LOGS/promtool.log" 2>&1 ||
    fail "promtool check metrics found problems (see $LOGS/promtool.log)"
[ ! -s "$LOGS/promtool.log" ] || fail "promtool check metrics printed problems: $(head -n 3 "$LOGS/promtool.log")"
ok "promtool check metrics: no problems in $(grep -vc '^#' "$T/scrape0.txt") samples"

prom_start
start_nbdkit hostname="$RDMABLK_ADDR" export=disk0
fio --name=m --ioengine=nbd --uri="$NBD_URI" --rw=randwrite --bs=4k --iodepth=4 --size=32M \
    --time_based --runtime=12 --output-format=json --output="$T/fio.json" \
    >"$LOGS/fio.log" 2>&1 &
FIO_PID=$!
track_pid "$FIO_PID"
q='sum(rdmablk_requests_total{op="write"})'
sleep 6
first=$(prom_query "$q" | cut -d' ' -f1)
sleep 6
second=$(prom_query "$q" | cut -d' ' -f1)
[ -n "$first" ] && [ -n "$second" ] && [ "$second" -gt "$first" ] ||
    fail "Prometheus did not see writes rise during fio ($first, then $second)"
ok "during fio, Prometheus saw $q rise from $first to $second"
wait "$FIO_PID" || fail "fio failed (see $LOGS/fio.log)"
made=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["jobs"][0]["write"]["total_ios"])' "$T/fio.json")

# Every write is one request (4 KiB, below max-io): the target's counter, and each stage
# histogram a write went through, count fio's writes, once Prometheus has the last scrape.
wait_for 30 prom_is "$q" "$made" || fail "Prometheus' write count is not fio's $made"
for st in data backing_write reply; do
    prom_is "sum(rdmablk_request_stage_seconds_count{op=\"write\",stage=\"$st\"})" "$made" ||
        fail "the $st stage histogram does not count fio's $made writes"
done
prom_is 'sum(rdmablk_request_stage_seconds_bucket{op="write",stage="reply",le="+Inf"})' "$made" ||
    fail "the reply stage's +Inf bucket is not the write count"
ok "fio made $made writes: rdmablk_requests_total and the data, backing_write and reply stage histograms count $made"

prom_has rdmablk_build_info rdmablk_requests_total rdmablk_bytes_total \
    rdmablk_request_errors_total rdmablk_connections rdmablk_handshakes \
    rdmablk_connections_accepted_total rdmablk_refusals_total rdmablk_revocations_total \
    rdmablk_reloads_total rdmablk_pool_buffers rdmablk_pool_buffers_in_use \
    rdmablk_export_failed rdmablk_requests_in_flight rdmablk_request_duration_seconds_count \
    rdmablk_request_stage_seconds_bucket
prom_is 'rdmablk_export_failed{export="disk0"}' 0 || fail "disk0 is reported failed"
prom_is 'rdmablk_bytes_total{export="disk0",op="write"}' $((made * 4096)) ||
    fail "the byte counter is not fio's writes x 4 KiB"
