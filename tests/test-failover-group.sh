#!/bin/bash
# test-shares: none
# The connections of one device fail over together (initiator/group.c, docs/rbd.md "Failover").
# Two clients of one export in one process, as the queues of one ublk device or the NBD
# connections of one nbdkit are (rdmablk-pair), write through targets a and b (hostname=A,B, one
# shared file). Client 1 has keepalive=1; client 2 has no keepalive and a 60 s timeout, so on its
# own it would notice nothing while a is stopped. Target a is stopped (SIGSTOP): client 1 finds
# it dead and fails over to b, and client 2 follows it there: b serves both, and once a runs again
# it holds no connection (none left behind to keep its export, and an RBD image's lock, busy).
# Both clients verified every write and read. Negative control: the same two clients in two
# processes (no group): client 2 stays with a, so a check that a holds nothing can see one left
# behind.
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/failover-lib.sh"

PAIR=$BUILD/tests/rdmablk-pair
require_rdma
requires_file "$PAIR" "$BUILD/rdmablk-target"
add_second_address
truncate -s 64M "$T/disk0.img"
start_two_targets

c1="hostname=$RDMABLK_ADDR,$ADDR2 export=disk0 keepalive=1"
c2="hostname=$RDMABLK_ADDR,$ADDR2 export=disk0 keepalive=0 timeout=60"

# stop_a_until_b_serves N: SIGSTOP target a until b serves N connections (at most 90 s), then
# SIGCONT it.
stop_a_until_b_serves() {
    kill -STOP "$PID_A"
    wait_for 90 conns_are "$T/b.conf" "$1"
    rc=$?
    kill -CONT "$PID_A"
    return $rc
}

# One process, two clients: one group.
# shellcheck disable=SC2086  # c1 and c2 are lists of key=value words
"$PAIR" 120 $c1 -- $c2 >"$LOGS/pair.log" 2>&1 &
pair=$!
track_pid "$pair"
wait_for 60 grep -qx ready "$LOGS/pair.log" || fail "rdmablk-pair did not connect"
wait_for 30 conns_are "$T/a.conf" 2 || fail "a does not serve both clients"
stop_a_until_b_serves 2 || fail "b does not serve both clients while a is stopped"
wait_for 60 conns_are "$T/a.conf" 0 || fail "a still holds a connection of the device"
for n in 1 2; do
    grep -qx "$n: failed over" "$LOGS/pair.log" || fail "rdmablk-pair counts no failover of client $n"
done
grep -q "the device's other connections moved" "$LOGS/pair.log" ||
    fail "client 2's connection was not left for its group's move"
_gone "$pair" && fail "rdmablk-pair stopped: $(grep error "$LOGS/pair.log")"
kill -TERM "$pair"
wait "$pair" 2>/dev/null || true
ok "a stopped: client 1 failed over, client 2 (no keepalive) followed it, a holds nothing"

# Control: the same clients in two processes.
wait_for 60 conns_are "$T/b.conf" 0 || fail "control: b still holds connections"
# shellcheck disable=SC2086
"$PAIR" 120 $c1 >"$LOGS/control-1.log" 2>&1 &
track_pid $!
# shellcheck disable=SC2086
"$PAIR" -b 8 120 $c2 >"$LOGS/control-2.log" 2>&1 &
control2=$!
track_pid "$control2"
wait_for 60 grep -qx ready "$LOGS/control-1.log" || fail "control: client 1 did not connect"
wait_for 60 grep -qx ready "$LOGS/control-2.log" || fail "control: client 2 did not connect"
wait_for 30 conns_are "$T/a.conf" 2 || fail "control: a does not serve both clients"
stop_a_until_b_serves 1 || fail "control: client 1 did not fail over to b"
! wait_for 20 conns_are "$T/a.conf" 0 ||
    fail "control: a holds no connection, although client 2 had no reason to leave it"
_gone "$control2" && fail "control: client 2 stopped: $(grep error "$LOGS/control-2.log")"
ok "control: in two processes client 2 stays with a, and the check sees it"
