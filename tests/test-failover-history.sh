#!/bin/bash
# guest-kernel: 6.12
# test-timeout: 900
# No acknowledged write is ever undone across failover, proven by a history checker (Jepsen's
# register model, one register per block: tests/tools/rdmablk-history.c).
#
# Targets a and b serve one RBD image (Ceph's default 30 s watch timeout); rdmablk-ublk serves
# it on hostname=A,B with the default timeout and keepalive (2 queues). Each round, four writer
# threads write generations into 256 blocks for 45 s, recording every write's invocation and
# outcome and every FLUSH, while one fault, drawn from a seeded schedule, hits the target that
# writes the image:
#   kill     kill -9, restarted 10 s later
#   stop     SIGSTOP for 40 s (past the watch timeout), then SIGCONT
#   flap     b's address deleted for 8 s and added again (a path flap; a's address is the
#            initiator's own as well)
#   restart  SIGTERM and started again
#   fence    `ceph osd blocklist add` of its client instance (it lives on, fenced)
# Then the checker reads every block through the device: an acknowledged write older than the
# block's value, a generation never written, or a durable write missing fails the round.
# (The fault names the target it hit; flap always hits b's path.) Rounds: RDMABLK_TEST_HISTORY_ROUNDS, 2 by default, 20 under make check-long; the seed is
# RDMABLK_TEST_HISTORY_SEED or drawn, and printed. Negative control, once: a stale write of an
# acknowledged block's older generation, landing late (what finding 1's fix prevents, and what
# tests/test-rbd-stale-write.sh provokes for real), is reported as a lost acknowledged write.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"
# shellcheck source=tests/rbd-ublk-lib.sh
. "$(dirname "$0")/rbd-ublk-lib.sh"

HIST=$BUILD/tests/rdmablk-history
NBLOCKS=256
requires_file "$HIST"
require_rdma
require_ublk
require_ceph
ROUNDS=${RDMABLK_TEST_HISTORY_ROUNDS:-2}
[ "${RDMABLK_LONG:-0}" = 1 ] && ROUNDS=${RDMABLK_TEST_HISTORY_ROUNDS:-20}
SEED=${RDMABLK_TEST_HISTORY_SEED:-$(( $(date +%s) % 100000 ))}
echo "history: $ROUNDS rounds, seed $SEED (RDMABLK_TEST_HISTORY_SEED=$SEED repeats them)"
RANDOM=$SEED

rbd_ublk_device

# The running targets by name, and their addresses.
declare -A PID=([a]=$PID_A [b]=$PID_B) ADDR=([a]=$RDMABLK_ADDR [b]=$ADDR2)

# start NAME: (re)start target NAME on its config.
start() {
    TARGET_NAME=$1 start_target "$T/$1.conf"
    PID[$1]=$TARGET_PID
}

# active: the target that holds the image's lock now (a when neither says so).
active() {
    if rbd_lock_is "$T/b.conf" disk0 owner >/dev/null 2>&1; then echo b; else echo a; fi
}

# holder_addr: the lock holder's client instance, as `rbd lock ls` names it.
holder_addr() {
    rbd_cmd lock ls rbd/img0 2>/dev/null | awk 'NR > 2 && $1 ~ /^client\./ { print $NF; exit }'
}

# fault KIND NAME: the fault KIND on target NAME (see the header).
fault() {
    local kind=$1 t=$2 addr
    case $kind in
    kill)
        kill -KILL "${PID[$t]}"
        wait "${PID[$t]}" 2>/dev/null || true
        sleep 10
        start "$t" ;;
    stop)
        kill -STOP "${PID[$t]}"
        sleep 40
        kill -CONT "${PID[$t]}" ;;
    flap)
        ip addr del "${ADDR[b]}/24" dev "$NETDEV"
        sleep 8
        ip addr add "${ADDR[b]}/24" dev "$NETDEV" ;;
    restart)
        kill -TERM "${PID[$t]}"
        wait_exit 60 "${PID[$t]}" || true
        start "$t" ;;
    fence)
        addr=$(holder_addr)
        [ -n "$addr" ] || { echo "fence: no lock holder to fence"; return 0; }
        ceph_cmd osd blocklist add "$addr" 600 >>"$LOGS/fence.log" 2>&1 ;;
    esac
}

kinds=(kill stop flap restart fence)
total=0
for round in $(seq 1 "$ROUNDS"); do
    kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
    delay=$((5 + RANDOM % 10))
    "$HIST" run "$DEV" "$NBLOCKS" 45 4 "$T/hist.$round" >"$LOGS/run.$round.log" 2>&1 &
    run=$!
    track_pid "$run"
    sleep "$delay"
    t=$(active)
    echo "round $round: $kind of target $t after ${delay}s"
    fault "$kind" "$t" >>"$LOGS/faults.log" 2>&1
    wait_exit 240 "$run" || fail "round $round: the workload did not finish"
    # Both targets up again, the device served, before the check reads through it.
    for n in a b; do _gone "${PID[$n]}" && start "$n"; done
    step "check-$round" "$HIST" check "$DEV" "$NBLOCKS" "$T/hist.$round" ||
        fail "round $round ($kind of $t, seed $SEED): $(grep -v '^history:' "$LOGS/check-$round.log" | head -n 3)"
    line=$(tail -n 1 "$LOGS/check-$round.log")
    echo "round $round: $line"
    total=$((total + $(echo "$line" | sed -n 's/^history: \([0-9]*\) writes.*/\1/p')))
    # The next round starts afresh: generations start at 1 again, so zero the blocks.
    step "zero-$round" dd if=/dev/zero of="$DEV" bs=1M count=1 oflag=direct ||
        fail "zeroing the blocks failed"
done
ok "$ROUNDS rounds, seed $SEED: $total writes, 0 anomalies"

# Negative control: the last round's history, with block 0 set back to the generation of an
# older acknowledged write (a stale write landing late).
"$HIST" run "$DEV" "$NBLOCKS" 5 4 "$T/hist.control" >"$LOGS/run.control.log" 2>&1 ||
    fail "control: the workload failed"
b=$(awk '$1 == "A" && $3 >= 2 { print $2; exit }' "$T/hist.control")
[ -n "$b" ] || fail "control: no block was written twice"
step control-forge "$HIST" forge "$DEV" "$b" 1 || fail "control: forge failed"
! step control-check "$HIST" check "$DEV" "$NBLOCKS" "$T/hist.control" ||
    fail "control: the checker missed a stale write of block $b"
grep -q "block $b: holds generation 1, older than the acknowledged" "$LOGS/control-check.log" ||
    fail "control: the checker failed, but not on block $b's lost write"
ok "control: a stale write of block $b (generation 1 over a newer acknowledged one) is reported"
