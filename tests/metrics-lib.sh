# Shared by the metrics tests: the target's /metrics, promtool, and a real Prometheus server
# that scrapes it every second. Sourced after lib.sh.
# shellcheck shell=bash
# Each lane of run-suite -j has ports of its own.
METRICS_ADDR=127.0.0.1:$((9480 + ${RDMABLK_LANE:-0}))
PROM_ADDR=127.0.0.1:$((9090 + ${RDMABLK_LANE:-0}))

# scrape [FILE]: one GET /metrics from the target (to FILE, default $T/scrape.txt).
scrape() {
    curl -sf --max-time 10 "http://$METRICS_ADDR/metrics" >"${1:-$T/scrape.txt}"
}

# metric_value NAME{LABELS} [FILE]: the value of that exact series in a scrape.
metric_value() {
    awk -v s="$1" '$1 == s { print $2; found = 1 } END { exit !found }' "${2:-$T/scrape.txt}"
}

# prom_start: Prometheus on $PROM_ADDR, scraping the target every second, its data in $T.
prom_start() {
    cat >"$T/prometheus.yml" <<EOF2
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: rdmablk
    static_configs:
      - targets: ['$METRICS_ADDR']
EOF2
    step promtool-config promtool check config "$T/prometheus.yml" ||
        fail "promtool check config refused the scrape configuration"
    prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
        --web.listen-address="$PROM_ADDR" >"$LOGS/prometheus.log" 2>&1 &
    PROM_PID=$!
    track_pid "$PROM_PID"
    local t0=$SECONDS
    wait_for 120 curl -sf "http://$PROM_ADDR/-/ready" || fail "Prometheus did not get ready"
    wait_for 60 prom_is 'up{job="rdmablk"}' 1 || fail "Prometheus does not see the target up"
    echo "Prometheus ready and scraping after $((SECONDS - t0))s"
}

# prom_query EXPR: the values of EXPR's instant vector through Prometheus' HTTP API, one per
# line with its labels ("value {labels}"), nothing for an empty result. Read with rdmablk-json
# (two starts of about 35 ms under TCG, where python3 cost 0.4 s: wait_for polls this).
prom_query() {
    local f=$T/prom-answer.json status n i paths=() v m
    curl -sf --max-time 10 --get --data-urlencode "query=$1" \
        "http://$PROM_ADDR/api/v1/query" >"$f" || return 1
    { read -r status && read -r n; } < <("$BUILD/tests/rdmablk-json" "$f" status '#data.result') ||
        { echo "prom_query: no status or result in $(cat "$f")" >&2; return 1; }
    [ "$status" = success ] || { echo "prom_query: $(cat "$f")" >&2; return 1; }
    for ((i = 0; i < n; i++)); do paths+=("data.result[$i].value[1]" "data.result[$i].metric"); done
    [ "$n" -gt 0 ] || return 0
    "$BUILD/tests/rdmablk-json" "$f" "${paths[@]}" | while read -r v && read -r m; do
        echo "$v $m"
    done
}

# prom_is EXPR VALUE: true when EXPR has one series and its value is VALUE (for wait_for).
prom_is() {
    local got
    got=$(prom_query "$1") || return 1
    echo "$1 = ${got:-nothing}, expected $2"
    [ "$(echo "$got" | grep -c .)" = 1 ] && [ "${got%% *}" = "$2" ]
}

# prom_has FAMILY...: each family answers a query with at least one series.
prom_has() {
    local f n
    for f in "$@"; do
        n=$(prom_query "$f" | grep -c .) || true
        [ "${n:-0}" -ge 1 ] || fail "Prometheus has no series of $f"
    done
    ok "Prometheus answers a query for each of: $*"
}
