#!/bin/bash
# test-timeout: 600
# test-shares: none
# An initiator killed with SIGKILL while its requests are in flight, 50 times: the target keeps
# serving a concurrent client (rdmablk-io stress on another export, data verified as it goes),
# and after the 50 kills its open fds and registered memory (MR count and bytes from
# `rdma res show mr`, VmPin) are exactly what they were after the first round of kills.
# The kills come in rounds of 5 initiators at once, each on its own export (under TCG a process
# start costs seconds, so 50 one after the other would take far too long): rdmablk-hostile's
# flood mode (8 READs/WRITEs kept outstanding, killed once its first reply is back) and
# rdmablk-io stress (killed once its first write reached its backing file), alternating.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires rdma fallocate bc
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-hostile"

CYCLES=${RDMABLK_TEST_KILL_CYCLES:-50}
PAR=${RDMABLK_TEST_KILL_PARALLEL:-5}
ROUNDS=$(((CYCLES + PAR - 1) / PAR))

{
    printf '[export good]\npath = %s/good.img\nsize = 64M\n' "$T"
    for ((j = 1; j <= PAR; j++)); do
        printf '\n[export victim%d]\npath = %s/victim%d.img\nsize = 64M\n' "$j" "$T" "$j"
    done
} | target_conf "$T/target.conf" max-io=256K buffer-pool=8M queue-depth=32
start_target "$T/target.conf" -v

IO_OPTS="-t 60"
vmpin() { awk '/^VmPin:/ { print $2 " kB" }' "/proc/$TARGET_PID/status"; }
resources() { echo "$(target_resources); VmPin $(vmpin)"; }
# settle N WHEN: wait until the target holds exactly N connections.
settle() {
    wait_for 120 conns_are "$T/target.conf" "$1" ||
        fail "$2: the killed initiators' connections were not freed ($(live_conns "$T/target.conf") live, expected $1)"
}
# victim_failed ROUND SLOT PID WHAT: a victim ended (or stalled) before it could be killed.
victim_failed() {
    local rc=0
    if _gone "$3"; then
        wait "$3" || rc=$?
        fail "round $1, victim $2: $4: it exited with status $rc"
    fi
    fail "round $1, victim $2: $4 (still running)"
}

step warmup rdmablk_io -e victim1 write 0 1M 1 || fail "first write failed"
case $(target_resources) in *"; 0 MRs, 0 bytes") false ;; esac || fail "rdma res show mr sees no MR of the target"

# The well-behaved client verifies every read against what it wrote and exits non-zero on the
# first mismatch or I/O error, so it must still be running at the end. One thread at depth 4,
# pausing 20 ms after each pair: I/O going throughout without starving the guest's two vCPUs.
"$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e good -t 60 -q 4 -i 20 stress 3600 1 65536 \
    >"$LOGS/verifier.log" 2>&1 &
verifier=$!
track_pid "$verifier"
wait_for 60 sessions_reach "$T/target.conf" good 1 ||
    fail "the verifier never connected"

start_s=$SECONDS
killed=0
pids=()
for ((r = 1; r <= ROUNDS; r++)); do
    t0=$(date +%s.%N)
    n=0
    for ((j = 1; j <= PAR && killed + j <= CYCLES; j++)); do
        out=$LOGS/victim-$r-$j.log
        if (((r + j) % 2)); then
            "$BUILD/tests/rdmablk-hostile" -H "$RDMABLK_ADDR" -e "victim$j" -q 8 \
                flood 0 32M 300 >"$out" 2>&1 &
        else
            # Its first write allocates blocks in the (freshly punched) backing file.
            fallocate --punch-hole --offset 0 --length 64M "$T/victim$j.img"
            "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e "victim$j" -t 60 -q 8 \
                stress 300 4 65536 >"$out" 2>&1 &
        fi
        pids[j]=$!
        track_pid "${pids[j]}"
        n=$j
    done
    for ((j = 1; j <= n; j++)); do
        pid=${pids[j]}
        out=$LOGS/victim-$r-$j.log
        if (((r + j) % 2)); then
            wait_for 90 sh -c "grep -q 'requests in flight' '$out' || ! kill -0 $pid" || true
            grep -q 'requests in flight' "$out" ||
                victim_failed "$r" "$j" "$pid" "the flood client never got going"
        else
            wait_for 90 sh -c "[ \$(stat -c %b '$T/victim$j.img') -gt 0 ] || ! kill -0 $pid" ||
                true
            [ "$(stat -c %b "$T/victim$j.img")" -gt 0 ] ||
                victim_failed "$r" "$j" "$pid" "the stress client never wrote"
        fi
    done
    t1=$(date +%s.%N)
    for ((j = 1; j <= n; j++)); do kill -9 "${pids[j]}"; done
    for ((j = 1; j <= n; j++)); do wait "${pids[j]}" 2>/dev/null || true; done
    killed=$((killed + n))
    echo "round $r: $n initiators doing I/O after $(echo "$t1 - $t0" | bc) s," \
        "gone $(echo "$(date +%s.%N) - $t1" | bc) s after the kill" >>"$LOGS/rounds.log"
    _gone "$TARGET_PID" && fail "round $r: the target died"
    _gone "$verifier" && fail "round $r: the verifier stopped (mismatch or I/O error, see verifier.log)"
    if ((r == 1)); then
        settle 1 "round 1"
        first=$(resources)
        ok "after the first round ($n killed): $first"
    fi
done
ok "$killed initiators killed mid-request in $((SECONDS - start_s)) s; the target lives"

settle 1 "after $killed kills"
last=$(resources)
echo "initiator-kill: $killed cycles; after the first round: $first; after the last: $last"
[ "$last" = "$first" ] ||
    fail "resources changed: after the first round $first; after $killed kills: $last"
ok "after $killed kills: $last (unchanged)"

stop_verifier "$verifier" "$LOGS/verifier.log"
ok "the concurrent client kept verifying its data throughout"

step after-write rdmablk_io -e victim1 write 1048576 262144 9 || fail "write after the kills failed"
step after-read rdmablk_io -e victim1 read 1048576 262144 9 || fail "read after the kills failed"
ok "the target still serves"
settle 0 "at the end"
if grep -q 'buffers in use\|requests still active\|never flushed' "$LOGS/target.log"; then
    fail "the target reports leaked buffers or requests"
fi

stop_target
ok "target exits cleanly"
