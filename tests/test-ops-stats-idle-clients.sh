#!/bin/bash
# test-shares: none
# Admin clients that connect and never send a request do not stall the target: I/O goes on
# meanwhile, and the target drops them (after 5 s), after which --stats still answers.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf yes
start_target "$T/target.conf"

python3 - "$sock" >"$LOGS/idle.log" 2>&1 <<'EOF' &
import socket, sys, time
held = []
for i in range(8):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    held.append(s)
print("held", flush=True)
t = time.time()
for s in held:
    s.settimeout(30)
    if s.recv(16) != b"":
        print("got data", flush=True)
        sys.exit(1)
print("dropped after %.1f s" % (time.time() - t), flush=True)
EOF
idle_pid=$!
track_pid "$idle_pid"
wait_for 30 grep -q held "$LOGS/idle.log" || fail "idle admin clients did not connect"
run write 2097152 65536 11
run read 2097152 65536 11
rc=0
wait_exit 60 "$idle_pid" || rc=$?
[ "$rc" = 0 ] || fail "idle admin clients were not dropped (exit $rc)"
step after-idle stats || fail "--stats failed after the idle clients"
ok "8 idle admin clients: I/O unaffected, $(grep dropped "$LOGS/idle.log")"
stop_target
