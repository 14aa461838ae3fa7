#!/bin/bash
# An initiator killed with SIGKILL while its requests are in flight, 50 times: the target keeps
# serving a concurrent client (rdmablk-io stress on another export, data verified as it goes),
# and after the 50 cycles its open fds and registered memory (MR count and bytes from
# `rdma res show mr`, VmPin) are exactly what they were after the first cycle.
# Odd cycles kill rdmablk-hostile's flood mode (it keeps 16 READs/WRITEs outstanding and says so
# once the first reply is back); even cycles kill rdmablk-io stress once its first write has
# reached the backing file.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires rdma fallocate
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-hostile"

CYCLES=${RDMABLK_TEST_KILL_CYCLES:-50}

cat >"$T/target.conf" <<EOF
[target]
listen = $RDMABLK_ADDR
max-io = 256K
buffer-pool = 8M
queue-depth = 32

[export good]
path = $T/good.img
size = 64M

[export victim]
path = $T/victim.img
size = 64M
EOF
start_target "$T/target.conf" -v

io() { timeout 120 "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -t 60 "$@"; }
count() { grep -c -- "$1" "$LOGS/target.log" || true; }
# Connections the target holds: accepted and not yet freed.
live() { echo $(($(count 'accepted, queue depth') - $(count 'connection [0-9]* freed'))); }
nfds() { find "/proc/$TARGET_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
# "N MRs, B bytes": what the target has registered, as the kernel's resource tracker sees it.
mrs() {
    rdma res show mr pid "$TARGET_PID" |
        awk '{ for (i = 1; i < NF; i++) if ($i == "mrlen") b += $(i + 1); n++ }
             END { printf "%d MRs, %d bytes\n", n, b }'
}
vmpin() { awk '/^VmPin:/ { print $2 " kB" }' "/proc/$TARGET_PID/status"; }
resources() { echo "fds $(nfds); $(mrs); VmPin $(vmpin)"; }
# Wait until only the verifier's connection is left.
settle() {
    wait_for 120 sh -c "[ \$((\$(grep -c 'accepted, queue depth' '$LOGS/target.log') - \
        \$(grep -c 'connection [0-9]* freed' '$LOGS/target.log'))) -eq 1 ]" ||
        fail "$1: the killed initiators' connections were not freed ($(live) still live)"
}

# victim_failed CYCLE PID WHAT: the victim ended (or stalled) before it could be killed.
victim_failed() {
    local rc=0
    if _gone "$2"; then
        wait "$2" || rc=$?
        fail "cycle $1: $3: it exited with status $rc"
    fi
    fail "cycle $1: $3 (still running)"
}

step warmup io -e victim write 0 1M 1 || fail "first write failed"
[ "$(mrs)" != "0 MRs, 0 bytes" ] || fail "rdma res show mr sees no MR of the target"

# The well-behaved client: verifies every read against what it wrote; it exits non-zero on
# the first mismatch or I/O error, so it must still be running at the end.
"$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e good -t 60 stress 3600 2 65536 \
    >"$LOGS/verifier.log" 2>&1 &
verifier=$!
track_pid "$verifier"
wait_for 60 grep -q 'connected to export good' "$LOGS/target.log" ||
    fail "the verifier never connected"

start_s=$SECONDS
for ((i = 1; i <= CYCLES; i++)); do
    out=$LOGS/victim-$i.log
    t0=$(date +%s.%N)
    if ((i % 2)); then
        "$BUILD/tests/rdmablk-hostile" -H "$RDMABLK_ADDR" -e victim -q 16 \
            flood 0 32M 300 >"$out" 2>&1 &
        pid=$!
        wait_for 60 sh -c "grep -q 'requests in flight' '$out' || ! kill -0 $pid" || true
        grep -q 'requests in flight' "$out" || victim_failed "$i" "$pid" "the flood client never got going"
    else
        # Its first write allocates blocks in the (freshly punched) backing file.
        fallocate --punch-hole --offset 0 --length 64M "$T/victim.img"
        "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e victim -t 60 -q 16 \
            stress 300 4 65536 >"$out" 2>&1 &
        pid=$!
        wait_for 60 sh -c "[ \$(stat -c %b '$T/victim.img') -gt 0 ] || ! kill -0 $pid" || true
        [ "$(stat -c %b "$T/victim.img")" -gt 0 ] ||
            victim_failed "$i" "$pid" "the stress client never wrote"
    fi
    t1=$(date +%s.%N)
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    echo "cycle $i: I/O going after $(echo "$t1 - $t0" | bc) s, gone after $(echo "$(date +%s.%N) - $t1" | bc) s" >>"$LOGS/cycles.log"
    _gone "$TARGET_PID" && fail "cycle $i: the target died"
    _gone "$verifier" && fail "cycle $i: the verifier stopped (mismatch or I/O error, see verifier.log)"
    if ((i == 1)); then
        settle "cycle 1"
        first=$(resources)
        ok "after the first cycle: $first"
    fi
done
ok "$CYCLES initiators killed mid-request in $((SECONDS - start_s)) s; the target lives"

settle "cycle $CYCLES"
wait_for 60 sh -c "[ \"\$(echo fds \$(find /proc/$TARGET_PID/fd -mindepth 1 -maxdepth 1 | wc -l))\" = \"$(echo "$first" | cut -d';' -f1)\" ]" ||
    true
last=$(resources)
[ "$last" = "$first" ] || fail "resources changed: after the first cycle $first; after $CYCLES: $last"
ok "after $CYCLES cycles: $last (unchanged)"

_gone "$verifier" && fail "the verifier stopped (mismatch or I/O error, see verifier.log)"
kill -TERM "$verifier"
wait "$verifier" 2>/dev/null || true
if grep -q 'mismatch' "$LOGS/verifier.log"; then fail "the verifier saw a data mismatch"; fi
ok "the concurrent client kept verifying its data throughout"

step after-write io -e victim write 1048576 262144 9 || fail "write after the kills failed"
step after-read io -e victim read 1048576 262144 9 || fail "read after the kills failed"
ok "the target still serves"
wait_for 60 sh -c "[ \$((\$(grep -c 'accepted, queue depth' '$LOGS/target.log') - \
    \$(grep -c 'connection [0-9]* freed' '$LOGS/target.log'))) -eq 0 ]" ||
    fail "connections not freed: $(live) still live"
if grep -q 'buffers in use\|requests still active\|never flushed' "$LOGS/target.log"; then
    fail "the target reports leaked buffers or requests"
fi

kill -TERM "$TARGET_PID"
rc=0
wait_exit 120 "$TARGET_PID" || rc=$?
[ "$rc" = 0 ] || fail "target exited with $rc on SIGTERM"
if grep -q 'Sanitizer\|runtime error' "$LOGS/target.log"; then fail "sanitizer report"; fi
ok "target exits cleanly"
cat "$LOGS/cycles.log"
