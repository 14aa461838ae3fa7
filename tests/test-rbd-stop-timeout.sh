#!/bin/bash
# test-shares: alone
# A failover from a hung target fits in the initiator's default timeout, however long Ceph's
# watch timeout is (docs/rbd.md, "The timing rule"). Targets a and b serve one RBD image; the
# cluster's watch timeout is 60 s, twice Ceph's default, so that waiting for it cannot fit in
# the initiator's 30 s by luck (with the 30 s default the old target's takeover came 30 s after
# the stop, right at the deadline, and passed). A client with every default (timeout 30 s,
# keepalive 2 s; rdmablk-pair, one client) writes a block and reads it back every 200 ms
# through a, so a write is in flight when a is stopped (SIGSTOP). b must break the lock of a,
# which keeps its watch but answers nothing (its `breaks` count is 1), and serve that write
# within its 30 s: the client sees no error. A target that waits for the holder's watch to
# lapse before librbd breaks the lock answers after the write's deadline, and the client
# reports the error (the build before the break: "request timed out" at b, and
# "error 1: Input/output error").
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"

PAIR=$BUILD/tests/rdmablk-pair
requires_file "$PAIR" "$BUILD/rdmablk-target"
start_two_rbd_targets 60

"$PAIR" 60 hostname="$RDMABLK_ADDR,$ADDR2" export=disk0 >"$LOGS/pair.log" 2>&1 &
pair=$!
track_pid "$pair"
wait_for 60 grep -qx ready "$LOGS/pair.log" || fail "rdmablk-pair did not connect"
wait_for 60 rbd_lock_is "$T/a.conf" disk0 owner || fail "a does not hold the image's lock"
sleep 2
kill -STOP "$PID_A"
on_exit kill -CONT "$PID_A"
t0=$SECONDS
wait_for 90 grep -qx "1: failed over" "$LOGS/pair.log" ||
    fail "the client did not fail over to b: $(grep -E '^error|timed out|within the timeout' "$LOGS/pair.log" | head -n 3)"
took=$((SECONDS - t0))
# "failed over" follows a round trip that moved to b; when a was stopped during the round's
# read, that read needed no lock, and the write that does is the next round's.
wait_for 60 rbd_lock_is "$T/b.conf" disk0 owner ||
    fail "the client failed over, but b does not take the lock"
breaks=$(rbd_lock_stat "$T/b.conf" disk0 breaks)
[ "$breaks" = 1 ] || fail "b took the lock, but counts $breaks silent holders' locks broken, not 1"
kill -CONT "$PID_A"
# Its 60 s are an upper bound: the failover to check is done. The client goes on through b for
# a few more rounds (5 s, 25 of them) while a wakes up, which is what a's wake-up could
# disturb, then ends (SIGUSR1; it may have ended already).
nap 5
kill -USR1 "$pair" 2>/dev/null || true
wait_exit 120 "$pair" || fail "the client reported an error: $(grep '^error' "$LOGS/pair.log")"
grep -qx done "$LOGS/pair.log" || fail "the client did not end its run: $(tail -n 2 "$LOGS/pair.log")"
ok "a stopped: b took its lock and the client's write went through b within its default" \
    "timeout (failed over after ${took}s), with no error"
