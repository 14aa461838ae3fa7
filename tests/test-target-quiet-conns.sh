#!/bin/bash
# test-shares: none
# A busy connection beside quiet ones: each round's end skips a connection with nothing to do
# (target/conn/sendq.c, conn_quiet: ready, no event, no send WR queued or outstanding, nobody
# waiting), and that skip loses nothing. Eight rdmablk-sessions stay connected and silent
# (their own keepalive off) while rdmablk-io stress runs verified writes and reads on a ninth
# connection for 8 s. With the target's keepalive of 1 s it probes each silent connection
# every second second: a probe makes a quiet connection busy, and the next probe comes only
# once its completion was reaped. So at least two per connection must be posted in the 8 s,
# none failed or unanswered (the negative control: a build whose conn_quiet ignored a probe
# outstanding posted one per connection and no more). Then every one of the eight still serves
# a verified write and read, and the target stops cleanly.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-session" "$BUILD/tests/rdmablk-io"
N=8

target_conf "$T/target.conf" keepalive=1 <<EOF
[export disk]
path = $T/disk.img
size = 64M
durability = fua
EOF
start_target "$T/target.conf"
declare -A fd
for i in $(seq "$N"); do
    mkfifo "$T/q$i.in"
    "$BUILD/tests/rdmablk-session" -H "$RDMABLK_ADDR" -e disk -t 30 -k 0 <"$T/q$i.in" \
        >"$LOGS/q$i-session.log" 2>&1 &
    track_pid $!
    exec {f}>"$T/q$i.in"
    fd[$i]=$f
done
for i in $(seq "$N"); do
    wait_for 60 grep -qx ready "$LOGS/q$i-session.log" || fail "quiet session $i did not connect"
done
wait_for 20 conns_are "$T/target.conf" "$N" || fail "the target does not hold the $N sessions"
posted0=$(target_stat "$T/target.conf" liveness_probes posted) || fail "--stats failed"

step stress rdmablk_io -e disk -q 4 -s stress 8 2 65536 || fail "verified I/O beside $N quiet connections failed"
posted=$(( $(target_stat "$T/target.conf" liveness_probes posted) - posted0 ))
failed=$(target_stat "$T/target.conf" liveness_probes failed)
unanswered=$(target_stat "$T/target.conf" liveness_probes unanswered)
[ "$posted" -ge $((2 * N)) ] ||
    fail "$posted liveness probes in 8 s on $N silent connections, expected at least $((2 * N)): completions of probes on quiet connections were not reaped"
if [ "$failed" != 0 ] || [ "$unanswered" != 0 ]; then
    fail "liveness probes on quiet connections: $failed failed, $unanswered unanswered"
fi
# The stress client's disconnect reaches the target on its own time.
wait_for 20 conns_are "$T/target.conf" "$N" ||
    fail "the target does not hold the $N quiet connections after the stress: $(live_conns "$T/target.conf")"

# session_q I CMD...: one command of quiet session I; true when it answered ok.
session_q() {
    local n log=$LOGS/q$1-session.log
    n=$(grep -c . "$log")
    echo "${@:2}" >&"${fd[$1]}"
    wait_for 60 _answered "$log" "$n" || fail "quiet session $1: no answer to '${*:2}'"
    tail -n 1 "$log" | grep -qx ok
}
for i in $(seq "$N"); do
    off=$(( (i + 16) * 1048576 ))
    session_q "$i" write "$off" 65536 $((i + 100)) || fail "quiet session $i: write failed after the stress"
    session_q "$i" read "$off" 65536 $((i + 100)) || fail "quiet session $i: read did not verify"
done
stop_target 120
ok "$N quiet connections beside verified stress I/O: $posted probes answered, every one still serves"
