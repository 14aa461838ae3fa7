#!/bin/bash
# test-shares: none
# A flood of short hostile connections (rdmablk-hostile churn: destroyed before the accept, no
# HELLO, a garbage HELLO, a HELLO abandoned before its reply), 4 flooders at once, while a good
# client on another export keeps writing and reading back verified data with a 30 s timeout: the
# good client sees no error, the target frees every connection (its fd count returns to the
# baseline) and exits 0 on SIGTERM.
# 100 connections; 1,000 under make check-long (RDMABLK_LONG=1), or RDMABLK_TEST_FLOOD_CONNS.
# Prints one summary line: "hostile-connections: N connections tried, good-client errors E".
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-hostile"

CONNS=${RDMABLK_TEST_FLOOD_CONNS:-100}
[ "${RDMABLK_LONG:-0}" = 1 ] && CONNS=${RDMABLK_TEST_FLOOD_CONNS:-1000}
FLOODERS=4

target_conf "$T/target.conf" max-io=256K buffer-pool=8M queue-depth=32 handshake-timeout=5 <<EOF
[export good]
path = $T/good.img
size = 64M

[export hostile]
path = $T/hostile.img
size = 64M
EOF
start_target "$T/target.conf" -v
nfds() { find "/proc/$TARGET_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
IO_OPTS="-t 60"
step warmup rdmablk_io -e hostile write 0 1M 1 || fail "first write failed"
wait_for 60 conns_are "$T/target.conf" 0 || fail "the first connection was not freed"
base_fds=$(nfds)

start_good_client good 36000 262144
good=$GOOD_PID

pids=()
for ((i = 0; i < FLOODERS; i++)); do
    "$BUILD/tests/rdmablk-hostile" -H "$RDMABLK_ADDR" -e hostile -t 30 \
        churn $(((CONNS + FLOODERS - 1) / FLOODERS)) >"$LOGS/flood$i.log" 2>&1 &
    pids+=($!)
    track_pid $!
done
tried=0
for ((i = 0; i < FLOODERS; i++)); do
    rc=0
    wait_exit 3000 "${pids[i]}" || rc=$?
    [ "$rc" = 0 ] || fail "flooder $i failed (exit $rc): $(tail -n 2 "$LOGS/flood$i.log")"
    n=$(sed -nE 's/^churn: ([0-9]+) connections tried.*/\1/p' "$LOGS/flood$i.log")
    [ -n "$n" ] || fail "flooder $i printed no summary"
    tried=$((tried + n))
    echo "flooder $i: $(grep '^churn:' "$LOGS/flood$i.log")"
done

errors=0
if _gone "$good"; then
    errors=1
    wait "$good" || true
fi
echo "hostile-connections: $tried connections tried, good-client errors $errors"
[ "$errors" = 0 ] || fail "the good client failed: $(tail -n 2 "$LOGS/good.log")"
ok "$tried hostile connections; the good client kept verifying its data"

kill -TERM "$good"
wait "$good" 2>/dev/null || true
wait_for 120 conns_are "$T/target.conf" 0 ||
    fail "connections not freed after the flood: $(live_conns "$T/target.conf") still live"
wait_for 120 sh -c "[ \$(find /proc/$TARGET_PID/fd -mindepth 1 -maxdepth 1 | wc -l) -le $base_fds ]" ||
    fail "the target holds $(nfds) fds after the flood, $base_fds before"
ok "every connection freed: $(nfds) fds, $base_fds before"
stop_target
ok "the target exits cleanly"
