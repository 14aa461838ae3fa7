#!/bin/bash
# test-shares: none
# One tenant cannot starve the shared buffer pool. Six hostile initiators
# (rdmablk-hostile starve) each connect asking for infinite RNR retry, post no receive after
# HELLO_REPLY and send 16 READs of 1 MiB, whose replies can never be delivered; 6 x 16 buffers
# are more than the pool's 64. Meanwhile a good client on the same export keeps writing and
# reading back verified data with its 30 s timeout, and must never see an error. The target
# must close the attackers' connections (its own finite RNR retry, the send-queue stall bound),
# and SIGTERM with attackers still connected must finish within a bound.
# Before the fix the good client's I/O failed after its 30 s timeout, and SIGTERM's drain hung.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-hostile"

ATTACKERS=6
# The defaults, written out: 64 buffers of 1 MiB.
target_conf "$T/target.conf" max-io=1M buffer-pool=64M <<EOF
[export disk]
path = $T/disk.img
size = 256M
EOF
start_target "$T/target.conf"

attack() {
    local i
    for ((i = 1; i <= ATTACKERS; i++)); do
        # shellcheck disable=SC2086  # ATTACK_OPTS is a list of words
        "$BUILD/tests/rdmablk-hostile" -H "$RDMABLK_ADDR" -e disk -q 16 -t 30 -S "$i" \
            ${ATTACK_OPTS:-} starve "$1" >"$LOGS/$2-$i.log" 2>&1 &
        track_pid $!
        ATTACK_PIDS+=($!)
    done
}

# The good client: verified writes and reads up to 1 MiB for 100 s.
start_good_client disk 100 1048576
good=$GOOD_PID

ATTACK_PIDS=()
attack 60 starve
wait_for 120 sessions_reach "$T/target.conf" disk $((ATTACKERS + 1)) ||
    fail "the attackers never connected"
ok "$ATTACKERS attackers connected (16 READs of 1 MiB each, no receives, infinite RNR retry asked)"

for pid in "${ATTACK_PIDS[@]}"; do
    rc=0
    wait_exit 300 "$pid" || rc=$?
    [ "$rc" = 0 ] || fail "an attacker failed (exit $rc); see starve-*.log"
done
closed=0
longest=0
for ((i = 1; i <= ATTACKERS; i++)); do
    line=$(grep '^starve:' "$LOGS/starve-$i.log") || fail "attacker $i printed no summary"
    n=$(echo "$line" | sed -E 's/.*the target closed ([0-9]+) of them.*/\1/')
    s=$(echo "$line" | sed -E 's/.*the longest held ([0-9]+)\.[0-9] s.*/\1/')
    closed=$((closed + n))
    [ "$s" -gt "$longest" ] && longest=$s
done
[ "$closed" -gt 0 ] || fail "the target closed no attacking connection in 60 s"
# Bounded by the RNR retries the target allows (~4 s) or, at worst, the send-queue stall bound.
[ "$longest" -lt 30 ] || fail "an attacking connection held its buffers for $longest s"
if _gone "$good"; then
    wait "$good" || fail "the good client failed: $(tail -n 2 "$LOGS/good.log")"
fi
ok "the target closed $closed attacking connections (the longest held ${longest} s); the good client still runs"

rc=0
wait_exit 300 "$good" || rc=$?
[ "$rc" = 0 ] || fail "the good client failed (exit $rc): $(tail -n 2 "$LOGS/good.log")"
ok "good client: $(tail -n 1 "$LOGS/good.log")"

# SIGTERM while attackers hold buffers.
n0=$(sessions_of "$T/target.conf" disk)
ATTACK_PIDS=()
# -v: each attacker says when its READs are posted, i.e. when it holds the target's buffers.
ATTACK_OPTS=-v attack 300 term
wait_for 120 sessions_reach "$T/target.conf" disk $((n0 + ATTACKERS)) ||
    fail "the second wave of attackers never connected"
wait_for 60 sh -c "[ \$(grep -l 'READs of .* posted' '$LOGS'/term-*.log | wc -l) -ge $ATTACKERS ]" ||
    fail "the second wave of attackers never posted their READs"
t0=$SECONDS
stop_target 90
ok "SIGTERM with $ATTACKERS attackers connected: the target exited 0 in $((SECONDS - t0)) s"
