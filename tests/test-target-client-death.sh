#!/bin/bash
# test-shares: none
# An initiator that dies mid-request (kill -9 of a stress client, 10 times): the target keeps
# serving other clients, frees every connection, and its open fd count returns to where it
# was: nothing leaks.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

target_conf "$T/target.conf" max-io=256K buffer-pool=1M <<EOF
[export disk0]
path = $T/disk0.img
size = 64M
EOF
start_target "$T/target.conf" -v

IO_OPTS="-e disk0 -t 60"
nfds() { ls "/proc/$TARGET_PID/fd" | wc -l; }

step warmup rdmablk_io write 0 65536 1 || fail "first write failed"
wait_for 60 conns_are "$T/target.conf" 0 || fail "first connection not freed"
base=$(nfds)
ok "baseline: $base open fds"

for round in 1 2 3 4 5 6 7 8 9 10; do
    before=$(sessions_of "$T/target.conf" disk0)
    "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e disk0 -t 60 -q 32 stress 120 4 \
        >"$LOGS/stress-$round.log" 2>&1 &
    pid=$!
    # Kill it while requests are in flight: once connected, after a random short delay (this
    # sleep is the behaviour under test: it varies the moment of the kill).
    wait_for 60 sessions_reach "$T/target.conf" disk0 $((before + 1)) ||
        fail "round $round: stress client never connected"
    sleep "0.$((RANDOM % 9 + 1))"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    kill -0 "$TARGET_PID" || fail "round $round: the target died"
done
ok "10 stress clients killed with SIGKILL mid-request; the target lives"

step after rdmablk_io write 1048576 262144 9 || fail "write after the kills failed"
step after-read rdmablk_io read 1048576 262144 9 || fail "read after the kills failed"
ok "the target still serves"

wait_for 120 conns_are "$T/target.conf" 0 ||
    fail "connections not freed: $(live_conns "$T/target.conf") still live"
wait_for 60 sh -c "[ \$(ls /proc/$TARGET_PID/fd | wc -l) -eq $base ]" ||
    fail "fd count $(nfds), baseline $base: leak"
ok "every connection freed, fd count back to $base"
if grep -q 'buffers in use\|requests still active' "$LOGS/target.log"; then
    fail "the target reports leaked buffers or requests"
fi

# A clean exit: status 0 (LeakSanitizer and ASan make it non-zero), nothing reported.
stop_target
ok "target exits cleanly"
