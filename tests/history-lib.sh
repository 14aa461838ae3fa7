# The history test's rounds (tests/test-failover-history*.sh): a seeded fault schedule against two
# targets a and b on one RBD image, under rdmablk-history's register workload on a block device,
# and its checker after each round; then the checker's negative control. Sourced after lib.sh,
# ceph-lib.sh and failover-lib.sh.
# shellcheck shell=bash

HIST=$BUILD/tests/rdmablk-history
NBLOCKS=256

# history_setup: the rounds (RDMABLK_TEST_HISTORY_ROUNDS, 2; 20 under make check-long) and the
# seed (RDMABLK_TEST_HISTORY_SEED; make check's is fixed, 79776: a SIGSTOP of the writing target,
# then a kill -9 of the other; make check-long draws one), printed.
history_setup() {
    local seed=79776
    requires_file "$HIST"
    ROUNDS=${RDMABLK_TEST_HISTORY_ROUNDS:-2}
    if [ "${RDMABLK_LONG:-0}" = 1 ]; then
        ROUNDS=${RDMABLK_TEST_HISTORY_ROUNDS:-20}
        seed=$(($(date +%s) % 100000))
    fi
    SEED=${RDMABLK_TEST_HISTORY_SEED:-$seed}
    echo "history: $ROUNDS rounds, seed $SEED (RDMABLK_TEST_HISTORY_SEED=$SEED repeats them)"
    RANDOM=$SEED
}

# start NAME: (re)start target NAME on its config.
start() {
    TARGET_NAME=$1 start_target "$T/$1.conf"
    PID[$1]=$TARGET_PID
}

# active: the target that holds the image's lock now (a when neither says so).
active() {
    if rbd_lock_is "$T/b.conf" disk0 owner >/dev/null 2>&1; then echo b; else echo a; fi
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
        ceph_blocklist_add "$addr" 600 >>"$LOGS/fence.log" 2>&1 ;;
    esac
}

# history_run CLIENT DEV CLIENT_LOG: the rounds on DEV (PID_A, PID_B: the targets), then the
# control. CLIENT names the client in the summary line; CLIENT_LOG is its log, whose errors are
# shown for a round with failed writes.
history_run() {
    local client=$1 DEV=$2 clog=$3 kinds=(kill stop flap restart fence) total=0 round kind delay run t
    local line failed b
    declare -gA PID=([a]=$PID_A [b]=$PID_B) ADDR=([a]=$RDMABLK_ADDR [b]=$ADDR2)
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
        failed=$(echo "$line" | sed -n 's/.*, \([0-9]*\) failed,.*/\1/p')
        if [ "${failed:-0}" != 0 ]; then
            # Not an anomaly (a failed write may or may not have landed), but an error the
            # application saw: say what it was.
            echo "round $round: failed writes (errno): $(awk '$1 == "E" { print $4 }' "$T/hist.$round" | sort | uniq -c | tr -s ' \n' ' ')"
            grep -E 'error|timed out|lost:' "$clog" | tail -n 5 | sed 's/^/  | /'
            for n in a b; do
                grep -E 'lock|reopen|fenced|blocklist|ETIMEDOUT|ESHUTDOWN' "$LOGS/$n.log" |
                    tail -n 8 | sed "s/^/  | $n: /"
            done
        fi
        total=$((total + $(echo "$line" | sed -n 's/^history: \([0-9]*\) writes.*/\1/p')))
        # The next round starts afresh: generations start at 1 again, so zero the blocks.
        step "zero-$round" dd if=/dev/zero of="$DEV" bs=1M count=1 oflag=direct ||
            fail "zeroing the blocks failed"
    done
    ok "history ($client): $ROUNDS rounds, seed $SEED: $total writes, 0 anomalies"

    # Negative control: a short history, with a block twice written set back to the generation
    # of its older acknowledged write (a stale write landing late).
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
}
