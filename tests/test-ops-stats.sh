#!/bin/bash
# rdmablk-target --stats: after a known workload the counters match it exactly (requests and
# bytes per opcode, errors, per export, for a live connection and in total; group-commit
# coverage; connections and refusals by reason); --human renders; the admin socket is 0600;
# clients that never send a request do not stall I/O and are dropped; stats = no stops the
# request counters (and a SIGHUP turns them back on); without a daemon --stats fails clearly.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-session"

sock=$T/admin.sock
write_conf() {
    cat >"$T/target.conf" <<EOF
[target]
listen = $RDMABLK_ADDR
admin-socket = $sock
max-io = 256K
threads = 2
stats = $1
# The sessions sit idle between steps: the target probes them (a zero-length RDMA WRITE), which
# must neither disturb them nor count as a request.
keepalive = 1

[export disk0]
path = $T/disk0.img
size = 16M

[export d1]
path = $T/d1.img
size = 4M
durability = fua
max-connections = 1
EOF
}
write_conf yes

stats() { "$BUILD/rdmablk-target" --stats -c "$T/target.conf" "$@"; }

# ---- no daemon: a clear failure
rc=0
stats >"$LOGS/nodaemon.out" 2>"$LOGS/nodaemon.err" || rc=$?
[ "$rc" = 1 ] || fail "--stats without a daemon exited $rc, not 1"
want="rdmablk-target: cannot reach the admin socket $sock: is the daemon running? (connect: No such file or directory)"
[ "$(cat "$LOGS/nodaemon.err")" = "$want" ] || fail "--stats without a daemon: wrong message"
[ ! -s "$LOGS/nodaemon.out" ] || fail "--stats without a daemon printed to stdout"
ok "--stats without a daemon: exit 1, '$want'"

start_target "$T/target.conf" -v
[ -S "$sock" ] || fail "no admin socket at $sock"
[ "$(stat -c %a "$sock")" = 600 ] || fail "admin socket mode $(stat -c %a "$sock"), not 600"
ok "admin socket $sock, mode 0600"

# ---- the workload: one connection per command, no keepalive NOPs
io() { timeout 60 "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e "${EXPORT:-disk0}" -t 30 -k 0 "$@"; }
n=0
run() { n=$((n + 1)); step "io$n" io "$@" || fail "rdmablk-io $* failed"; }
run write 0 512 1                 # inline
run write 65536 65536 3           # RDMA READ
run write 1048576 524288 4        # two max-io requests
run read 1048576 524288 4         # two requests
run flush
run trim 4194304 1048576          # four requests
run zero 8388608 65536
if step beyond io write 16777216 4096 5; then fail "write beyond the end succeeded"; fi
grep -q EOVERFLOW "$LOGS/beyond.log" || fail "write beyond the end: not EOVERFLOW"
if EXPORT=nosuch step nosuch io info; then fail "unknown export accepted"; fi
ok "workload: 5 writes (1 refused), 2 reads, 1 flush, 4 trims, 1 zero on 9 connections"

# A live connection on disk0, and one on d1 that fills its max-connections.
coproc SESS { exec "$BUILD/tests/rdmablk-session" -H "$RDMABLK_ADDR" -e disk0 -t 30 -k 0 2>&1; }
sess_pid=$SESS_PID
track_pid "$sess_pid"
sess() {
    local line
    [ $# -eq 0 ] || echo "$*" >&"${SESS[1]}"
    read -t 60 -r line <&"${SESS[0]}" || fail "rdmablk-session: no answer to '$*'"
    echo "session: $* -> $line" >>"$LOGS/session.log"
    case $line in ready | ok) ;; *) fail "rdmablk-session: '$*': $line" ;; esac
}
sess
sess write 0 4096 9
sess read 0 4096 9
sess flush
sess zero 8192 4096
sess trim 12288 4096
# The d1 holder: stdin from a fifo kept open by this shell, so it stays connected.
mkfifo "$T/d1.in"
"$BUILD/tests/rdmablk-session" -H "$RDMABLK_ADDR" -e d1 -t 30 -k 0 <"$T/d1.in" \
    >"$LOGS/d1-session.log" 2>&1 &
d1_pid=$!
track_pid "$d1_pid"
exec 7>"$T/d1.in"
wait_for 60 grep -qx ready "$LOGS/d1-session.log" || fail "d1 session did not connect"
if EXPORT=d1 step busy io info; then fail "max-connections = 1 let a second connection in"; fi
ok "a live session on disk0 (5 requests) and one on d1; a second d1 connection refused"

# Closed connections are freed asynchronously: wait until only the two sessions remain.
current_is() {
    stats >"$T/s.json" && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["connections"]["current"] != int(sys.argv[2]))' "$T/s.json" "$1"
}
wait_for 60 current_is 2 || fail "connections did not drop to the two sessions"
step stats stats || fail "--stats failed"
cp "$T/s.json" "$LOGS/stats.json"

python3 - "$T/s.json" >"$LOGS/check.log" 2>&1 <<'EOF' || fail "statistics differ from the workload (see check.log)"
import json, sys
s = json.load(open(sys.argv[1]))
bad = []
def expect(where, got, want):
    for k, v in want.items():
        if got.get(k) != v:
            bad.append(f"{where}.{k}: got {got.get(k)!r}, want {v!r}")
def latency_sane(where, o):
    for op, l in o["latency_us"].items():
        if l["count"] and not (0 <= l["p50"] <= l["p99"] <= l["max"]):
            bad.append(f"{where}.latency_us.{op}: p50 {l['p50']} p99 {l['p99']} max {l['max']}")
        if not l["count"] and (l["p50"] or l["p99"] or l["max"]):
            bad.append(f"{where}.latency_us.{op}: latency without requests")

# rdmablk-io, one connection per command, closed by now
closed = dict(reads=2, writes=5, flushes=1, trims=4, zeroes=1, nops=0,
              bytes_read=524288, bytes_written=512 + 65536 + 524288,
              bytes_trimmed=1048576, bytes_zeroed=65536, errors=1)
# the live session
live = dict(reads=1, writes=1, flushes=1, trims=1, zeroes=1, nops=0, bytes_read=4096,
            bytes_written=4096, bytes_trimmed=4096, bytes_zeroed=4096, errors=0, in_flight=0)
disk0 = {k: closed[k] + live[k] for k in closed}
disk0["in_flight"] = 0
zero = {k: 0 for k in live}

conns = [c for c in s["connection_list"] if c["export"] == "disk0"]
if len(conns) != 1:
    bad.append(f"{len(conns)} live connections on disk0, want 1")
else:
    c = conns[0]
    expect("connection", c, live)
    expect("connection", c, dict(state="ready"))
    latency_sane("connection", c)
    expect("connection.latency_us.write", c["latency_us"]["write"], dict(count=1, errors=0))
exps = {e["name"]: e for e in s["exports"]}
expect("exports.disk0", exps["disk0"], disk0)
expect("exports.disk0", exps["disk0"], dict(connections=1, removed=False))
expect("exports.disk0.latency_us.write", exps["disk0"]["latency_us"]["write"],
       dict(count=6, errors=1))
latency_sane("exports.disk0", exps["disk0"])
expect("exports.d1", exps["d1"], zero)
expect("exports.d1", exps["d1"], dict(connections=1))
expect("total", s["total"], disk0)
latency_sane("total", s["total"])
# durability = always: every successful write, trim and zero waited for an fdatasync, and
# so did the FLUSHes: 4 + 4 + 1 + 1 before the session, 4 in it.
g = exps["disk0"]["group_commit"]
expect("exports.disk0.group_commit", g, dict(requests_covered=14, errors=0))
if not (1 <= g["syncs"] <= 14 and 1 <= g["max_batch"] <= 14):
    bad.append(f"group_commit: syncs {g['syncs']} max_batch {g['max_batch']}")
expect("exports.d1.group_commit", exps["d1"]["group_commit"],
       dict(syncs=0, requests_covered=0, max_batch=0))
# 8 rdmablk-io connections + nosuch + busy + 2 sessions
expect("connections", s["connections"], dict(current=2, accepted=12, closed=10))
expect("refused", s["refused"], dict(total=2, unknown_export=1, busy=1, bad_private_data=0,
                                     address_not_allowed=0, shutting_down=0, auth_failure=0))
expect("top", s, dict(stats=True, version=1))
for b in bad:
    print(b)
print("checked:", "FAILED" if bad else "all match")
sys.exit(1 if bad else 0)
EOF
ok "--stats JSON matches the workload exactly (connection, exports, total, group commit, refusals)"

step human stats --human || fail "--stats --human failed"
for want in 'EXPORT' 'disk0' 'LATENCY (us)' 'GROUP COMMIT' 'unknown_export 1' 'busy 1'; do
    grep -qF "$want" "$LOGS/human.log" || fail "--stats --human lacks '$want'"
done
sed 's/^/  | /' "$LOGS/human.log"
ok "--stats --human renders the table"

# ---- admin clients that never send a request: I/O goes on, they are dropped after 5 s
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
probes=$(grep -c 'liveness probe posted' "$LOGS/target.log" || true)
[ "$probes" -gt 0 ] || fail "the idle sessions were never probed (keepalive = 1)"
if grep -q 'liveness probe completion failed' "$LOGS/target.log"; then
    fail "a liveness probe of a live session failed"
fi
ok "$probes liveness probes of idle live sessions: none failed, none counted, sessions still serve"

# ---- a clean exit removes the socket
eval "exec ${SESS[1]}>&-"
exec 7>&-
wait_exit 60 "$sess_pid" || fail "rdmablk-session (disk0) did not exit at EOF"
wait_exit 60 "$d1_pid" || fail "rdmablk-session (d1) did not exit at EOF"
stop_target
[ ! -e "$sock" ] || fail "admin socket left behind after exit"
mv "$LOGS/target.log" "$LOGS/target-1.log"
ok "clean exit removes the admin socket"

# ---- stats = no: request counters stay at zero; SIGHUP with stats = yes turns them on
write_conf no
start_target "$T/target.conf"
run write 0 4096 12
stats >"$T/off.json" || fail "--stats failed with stats = no"
cp "$T/off.json" "$LOGS/off.json"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
t = s["total"]
sys.exit(0 if s["stats"] is False and t["writes"] == 0 and t["bytes_written"] == 0
         and s["connections"]["accepted"] == 1 else 1)' "$T/off.json" ||
    fail "stats = no: wrong statistics"
write_conf yes
kill -HUP "$TARGET_PID"
stats_on() { stats >"$T/on.json" && grep -q '"stats": true' "$T/on.json"; }
wait_for 60 stats_on || fail "SIGHUP did not turn stats on"
run write 0 4096 13
stats >"$T/on.json" || fail "--stats failed"
python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
sys.exit(0 if t["writes"] == 1 and t["bytes_written"] == 4096 else 1)' "$T/on.json" ||
    fail "stats = yes after SIGHUP: the write was not counted"
ok "stats = no counts no requests; SIGHUP with stats = yes counts again"

stop_target
ok "target exits cleanly"
