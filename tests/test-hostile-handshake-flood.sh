#!/bin/bash
# test-shares: alone
# A flood of connections held open before authentication (rdmablk-hostile hold) from two source
# addresses, while a good client connected before it keeps writing and reading back verified
# data with a 30 s timeout. The target's [target] limits hold: the first address gets
# max-connections-per-address connections and the rest are refused as address_limit, the
# second gets what max-handshakes leaves and the rest are refused as handshake_limit (--stats
# counts both, exactly); the held handshakes pin the small receive ring (CONN_HANDSHAKE_RECVS
# buffers), not queue depth + 1 (the target's MR bytes); the good client sees no error and its
# export keeps serving during the hold; once the flood ends every held connection is freed and
# a new good connection is served.
# 40 connections per address; 500 (1,000 in all) under make check-long (RDMABLK_LONG=1), or
# RDMABLK_TEST_HOLD_CONNS per address. Prints one summary line:
# "hostile-handshakes: N connections tried, H held, good-client errors E".
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires ip
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-hostile"

PER_SRC=${RDMABLK_TEST_HOLD_CONNS:-40}
[ "${RDMABLK_LONG:-0}" = 1 ] && PER_SRC=${RDMABLK_TEST_HOLD_CONNS:-500}
PER_ADDR=12
HANDSHAKES=16
SRC_A=10.55.0.2
SRC_B=10.55.0.3
NETDEV=${RDMABLK_NETDEV:-d0}
RXE=${RDMABLK_DEV:-rxe0}
# What one held handshake may register at most: CONN_HANDSHAKE_RECVS (2) receive buffers of
# RB_MSG_BUF_SIZE (4160) and the control buffer (4096), with room to spare; a full ring at
# queue depth 128 would be 129 x 4160 bytes.
HELD_MAX_BYTES=16384

printf 'flood test secret: nobody in the flood knows it\n' >"$T/hostile.key"
chmod 600 "$T/hostile.key"
target_conf "$T/target.conf" max-io=256K buffer-pool=8M queue-depth=128 handshake-timeout=300 \
    max-connections-total=64 max-handshakes="$HANDSHAKES" max-connections-per-address="$PER_ADDR" <<EOF
[export good]
path = $T/good.img
size = 64M

[export hostile]
path = $T/hostile.img
size = 16M
secret-file = $T/hostile.key
EOF
start_target "$T/target.conf" -v
mr_bytes() { target_resources | sed -nE 's/.* ([0-9]+) bytes$/\1/p'; }
refused() { target_stat "$T/target.conf" refused "$1" || fail "--stats failed"; }
# good_ops: the good export's reads and writes so far (--stats).
good_ops() {
    "$BUILD/rdmablk-target" --stats -c "$T/target.conf" >"$LOGS/stats.json" || return 1
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(e["reads"] + e["writes"] for e in d["exports"] if e["name"] == "good"))' \
        "$LOGS/stats.json"
}
# served_at_least N: the good export has served N requests (for wait_for).
served_at_least() {
    local n
    n=$(good_ops) || return 1
    echo "the good export served $n requests, waiting for $1"
    [ "$n" -ge "$1" ]
}

# Two more addresses on the rxe netdev, so the flood has sources of its own.
for a in "$SRC_A" "$SRC_B"; do
    ip addr add "$a/24" dev "$NETDEV" || fail "cannot add $a to $NETDEV"
    on_exit ip addr del "$a/24" dev "$NETDEV"
done
# has_gid A.B.C.D: rxe has the IPv4-mapped GID of that address (it adds one per netdev address).
has_gid() {
    local gid o1 o2 o3 o4
    IFS=. read -r o1 o2 o3 o4 <<<"$1"
    gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$o1" "$o2" "$o3" "$o4")
    echo "waiting for GID $gid on $RXE"
    grep -qsx "$gid" /sys/class/infiniband/"$RXE"/ports/1/gids/*
}
for a in "$SRC_A" "$SRC_B"; do
    wait_for 120 has_gid "$a" ||
        fail "$RXE has no GID for $a: $(ip -o addr show dev "$NETDEV" | awk '{ print $4 }' | tr '\n' ' ')"
done

start_good_client good 36000 262144
good=$GOOD_PID
wait_for 60 conns_are "$T/target.conf" 1 || fail "the good client's connection is not the only one"
before_bytes=$(mr_bytes)
[ -n "$before_bytes" ] || fail "cannot read the target's MRs: $(target_resources)"
ok "the good client runs; the target registers $before_bytes bytes"

# hold SRC LOG: PER_SRC connections from SRC, held un-authenticated until killed; sets
# HOLD_PID.
hold() {
    "$BUILD/tests/rdmablk-hostile" -H "$RDMABLK_ADDR" -B "$1" -e hostile -t 30 \
        hold "$PER_SRC" 3000 >"$LOGS/$2.log" 2>&1 &
    HOLD_PID=$!
    track_pid "$HOLD_PID"
    wait_for $((60 + 2 * PER_SRC)) grep -q '^hold: .*holding$' "$LOGS/$2.log" ||
        fail "hostile $2 did not finish its connects: $(tail -n 2 "$LOGS/$2.log")"
    echo "$2: $(grep '^hold: .*holding$' "$LOGS/$2.log")"
}
# held LOG: how many connections that flooder holds (established, not closed by the target).
held() {
    sed -nE 's/^hold: [0-9]+ connections tried, ([0-9]+) established, .*closed ([0-9]+); holding$/\1 \2/p' \
        "$LOGS/$1.log" | awk '{ print $1 - $2 }'
}
hold "$SRC_A" flood-a
pid_a=$HOLD_PID
hold "$SRC_B" flood-b
pid_b=$HOLD_PID

a=$(held flood-a)
b=$(held flood-b)
[ "$a" = "$PER_ADDR" ] ||
    fail "$SRC_A holds $a connections, not max-connections-per-address ($PER_ADDR)"
[ "$b" = $((HANDSHAKES - PER_ADDR)) ] ||
    fail "$SRC_B holds $b connections, not the $((HANDSHAKES - PER_ADDR)) max-handshakes leaves"
n=$(target_stat "$T/target.conf" connections handshakes) || fail "--stats failed"
[ "$n" = "$HANDSHAKES" ] || fail "the target counts $n handshakes in progress, not $HANDSHAKES"
n=$(refused address_limit)
[ "$n" = $((PER_SRC - PER_ADDR)) ] ||
    fail "refused.address_limit is $n, expected $((PER_SRC - PER_ADDR)) (all of $SRC_A's extra)"
n=$(refused handshake_limit)
[ "$n" = $((PER_SRC - HANDSHAKES + PER_ADDR)) ] ||
    fail "refused.handshake_limit is $n, expected $((PER_SRC - HANDSHAKES + PER_ADDR))"
grep -q "connection refused: max-connections-per-address ($PER_ADDR) reached" "$LOGS/target.log" ||
    fail "no log line names max-connections-per-address"
grep -q "connection refused: max-handshakes ($HANDSHAKES) in progress" "$LOGS/target.log" ||
    fail "no log line names max-handshakes"
ok "$((2 * PER_SRC)) connects: $SRC_A holds $a (address_limit $((PER_SRC - PER_ADDR))), $SRC_B holds $b" \
    "(handshake_limit $((PER_SRC - HANDSHAKES + PER_ADDR))); $HANDSHAKES handshakes in progress"

during_bytes=$(mr_bytes)
per=$(((during_bytes - before_bytes) / HANDSHAKES))
[ "$per" -le "$HELD_MAX_BYTES" ] ||
    fail "each held handshake registers $per bytes (more than $HELD_MAX_BYTES): the full ring before any proof"
ok "each held handshake registers $per bytes ($during_bytes in all, $before_bytes before the flood)"

ops0=$(good_ops) || fail "--stats failed"
wait_for 120 served_at_least $((ops0 + 100)) ||
    fail "the good export served fewer than 100 requests during the hold"
if _gone "$good"; then
    echo "hostile-handshakes: $((2 * PER_SRC)) connections tried, $((a + b)) held, good-client errors 1"
    fail "the good client failed during the hold: $(tail -n 2 "$LOGS/good.log")"
fi
echo "hostile-handshakes: $((2 * PER_SRC)) connections tried, $((a + b)) held, good-client errors 0"
ok "during the hold the good client served 100 more verified requests and saw no error"

kill -TERM "$pid_a" "$pid_b"
wait_exit 60 "$pid_a" >/dev/null || true
wait_exit 60 "$pid_b" >/dev/null || true
wait_for 120 conns_are "$T/target.conf" 1 ||
    fail "held connections not freed after the flood: $(live_conns "$T/target.conf") still live"
n=$(target_stat "$T/target.conf" connections handshakes) || fail "--stats failed"
[ "$n" = 0 ] || fail "$n handshakes still counted after the flood"
# The flood's export, with its secret: an authenticated connection gets the full ring.
step fresh rdmablk_io -e hostile -S "$T/hostile.key" write 0 1M 7 ||
    fail "a new good connection failed after the flood"
step fresh-read rdmablk_io -e hostile -S "$T/hostile.key" read 0 1M 7 ||
    fail "a new good connection could not read back"
_gone "$good" && fail "the good client failed: $(tail -n 2 "$LOGS/good.log")"
ok "after the flood: every held connection freed, a new good connection writes and reads back"

kill -TERM "$good"
wait "$good" 2>/dev/null || true
wait_for 120 conns_are "$T/target.conf" 0 || fail "the good client's connection was not freed"
stop_target
ok "the target exits cleanly"
