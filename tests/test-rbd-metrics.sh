#!/bin/bash
# test-shares: ceph
# The metrics of an RBD export: promtool check metrics finds no problem in a scrape that has
# the RBD families, and a real Prometheus server answers for the image's lock: state owner
# while a session that wrote through the target is connected (and none of the other states),
# one lock acquired.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/metrics-lib.sh
. "$(dirname "$0")/metrics-lib.sh"

requires prometheus promtool curl python3
require_ceph
require_rdma
requires_file "$BUILD/tests/rdmablk-session"

ceph_up rbd img0 64M
RBD_TARGET_KEYS=metrics-listen=$METRICS_ADDR write_rbd_target_conf "$T/target.conf" 10810
start_target "$T/target.conf"
# The target lets the lock go once its export is idle: a session stays connected.
hold_session rbd0 s
session_do s write 0 4096 1 || fail "a write through the target failed"
scrape || fail "GET /metrics failed"
promtool check metrics <"$T/scrape.txt" >"$LOGS/promtool.log" 2>&1 ||
    fail "promtool check metrics found problems (see $LOGS/promtool.log)"
[ ! -s "$LOGS/promtool.log" ] || fail "promtool check metrics printed problems: $(head -n 3 "$LOGS/promtool.log")"
ok "promtool check metrics: no problems with an RBD export"

prom_start
prom_has rdmablk_rbd_lock_state rdmablk_rbd_lock_events_total rdmablk_rbd_reopens_total
prom_is 'rdmablk_rbd_lock_state{export="rbd0",state="owner"}' 1 ||
    fail "Prometheus does not see the target own the image's lock"
prom_is 'sum(rdmablk_rbd_lock_state{export="rbd0"})' 1 ||
    fail "the lock is in more than one state at once"
prom_is 'rdmablk_rbd_lock_events_total{export="rbd0",event="acquired"}' 1 ||
    fail "the lock was not acquired exactly once"
ok "Prometheus: rbd0's lock is owned, acquired once"
