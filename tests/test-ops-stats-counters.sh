#!/bin/bash
# test-shares: none
# rdmablk-target --stats: after a known workload the counters match it exactly: requests and
# bytes per opcode, errors, per export, for a live connection and in total; group-commit
# coverage; connections, and refusals by reason.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf yes
start_target "$T/target.conf"

# ---- the workload: one connection per command, no keepalive NOPs
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
start_session disk0
sess write 0 4096 9
sess read 0 4096 9
sess flush
sess zero 8192 4096
sess trim 12288 4096
# The d1 holder: stdin from a fifo kept open by this shell, so it stays connected.
hold_session d1 d1
d1_pid=$SESSION_PID
if EXPORT=d1 step busy io info; then fail "max-connections = 1 let a second connection in"; fi
ok "a live session on disk0 (5 requests) and one on d1; a second d1 connection refused"

# Closed connections are freed asynchronously: wait until only the two sessions remain.
wait_for 60 stats_json "$T/s.json" 's["connections"]["current"] == 2' ||
    fail "connections did not drop to the two sessions"
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


# Both sessions end at EOF; the target exits cleanly.
stop_session
exec 7>&-
wait_exit 60 "$d1_pid" || fail "rdmablk-session (d1) did not exit at EOF"
stop_target
ok "target exits cleanly"
