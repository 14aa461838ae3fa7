#!/bin/bash
# test-shares: none
# A network cut: the netdev under an RDMA device goes down while a client does I/O on it, then
# comes back up. The client's in-flight requests fail cleanly (an errno, no wrong data) within
# its timeout, a client that starts during the cut fails within its timeout, the target stays
# up and keeps serving the other device during the cut, frees the broken connections (an idle
# one too: its liveness probe, `keepalive`, finds the peer gone), and after the link is back it
# still serves.
#
# The cut takes down a netdev of its own (a dummy, rbcut0, 10.55.9.1, with rxe device rxecut0),
# never d0: with rxe (seen on Debian's 6.1 kernel), once an RDMA CM connect is attempted while the
# netdev is down, no RDMA CM connection through that device works again, rping's included (its
# GSI QP still counts sends, but nothing arrives), until the device is re-created. That would
# break every later test of the suite. Reconnecting through the cut device afterwards is
# therefore required only when rping can connect through it; the test says which case it saw.
# The target listens on the wildcard address, so it serves rxe0 and rxecut0 at once, on a port
# no other test uses (PORT): a wildcard listener on the default port would take that port from
# the tests in the other lanes. So the test runs beside others: its cut is its own netdev's.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires rdma ip
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
[ "$(id -u)" = 0 ] || skip "needs root (creates a netdev and an rxe device)"

CUT_DEV=rbcut0
CUT_RXE=rxecut0
CUT_ADDR=10.55.9.1
PORT=10880
IO_OPTS="-p $PORT"
TMO=5           # the clients' -t during the cut
SLACK=40        # TCG: process start, teardown

# The target and the clients hold the rxe device: stop them before deleting it. A device still
# in use would make `rdma link delete` block, so leave it then (it harms no other test).
cleanup_cut() {
    local pid
    for pid in "${stress:-}" "${idle:-}" "${TARGET_PID:-}"; do
        [ -n "$pid" ] && _kill_wait "$pid"
    done
    if [ -e "/sys/class/infiniband/$CUT_RXE" ]; then
        if rdma res show pd dev "$CUT_RXE" 2>/dev/null | grep -q ' pid '; then
            echo "$CUT_RXE still in use; not deleting it" >&2
        else
            rdma link delete "$CUT_RXE"
        fi
    fi
    ip link del "$CUT_DEV" 2>/dev/null
    return 0
}
on_exit cleanup_cut

ip link add "$CUT_DEV" type dummy || fail "cannot create a dummy netdev"
ip link set "$CUT_DEV" mtu 9000 up
ip addr add "$CUT_ADDR/24" dev "$CUT_DEV"
rdma link add "$CUT_RXE" type rxe netdev "$CUT_DEV" || fail "cannot add an rxe device on $CUT_DEV"
port_state=/sys/class/infiniband/$CUT_RXE/ports/1/state
wait_for 30 grep -q ACTIVE "$port_state" || fail "$CUT_RXE never became ACTIVE"
ok "$CUT_RXE on $CUT_DEV ($CUT_ADDR)"

target_conf "$T/target.conf" listen=0.0.0.0 port="$PORT" max-io=256K buffer-pool=4M keepalive=2 <<EOF
[export disk0]
path = $T/disk0.img
size = 64M

[export cut]
path = $T/cut.img
size = 64M
EOF
start_target "$T/target.conf" -v

settle() { wait_for "$1" conns_are "$T/target.conf" 0; }
live() { live_conns "$T/target.conf"; }
nfds() { find "/proc/$TARGET_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
# serves NAME HOST SEED: a write and a verified read through HOST.
serves() {
    step "$1" rdmablk_io -H "$2" -e disk0 write 0 1M "$3" && step "$1-read" rdmablk_io -H "$2" -e disk0 read 0 1M "$3"
}

serves before-cut "$CUT_ADDR" 1 || fail "no service through $CUT_RXE before the cut"
serves before-d0 "$RDMABLK_ADDR" 2 || fail "no service through rxe0 before the cut"
settle 60 || fail "connections not freed before the cut"
base=$(nfds)
ok "served through both devices; baseline $base fds"

# A client doing I/O through the device that will be cut; its first write allocates blocks.
"$BUILD/tests/rdmablk-io" -H "$CUT_ADDR" -p "$PORT" -e cut -t "$TMO" -s stress 600 2 65536 \
    >"$LOGS/stress.log" 2>&1 &
stress=$!
track_pid "$stress"
wait_for 90 sh -c "[ \$(stat -c %b '$T/cut.img') -gt 0 ] || ! kill -0 $stress" || true
[ "$(stat -c %b "$T/cut.img")" -gt 0 ] || fail "the stress client never wrote: $(cat "$LOGS/stress.log")"

# An idle connection through the device that will be cut, whose client never probes (-k 0):
# only the target's own liveness probe can notice that its peer is gone.
mkfifo "$T/idle.in"
exec 7<>"$T/idle.in"     # held open by the test: the session reads no EOF until it ends
"$BUILD/tests/rdmablk-session" -H "$CUT_ADDR" -p "$PORT" -e cut -k 0 <&7 >"$LOGS/idle.log" 2>&1 &
idle=$!
track_pid "$idle"
wait_for 60 grep -q '^ready' "$LOGS/idle.log" || fail "the idle session never connected"
idle_peer=$(grep 'connected to export cut' "$LOGS/target.log" | tail -n 1 | cut -d: -f1-2)

ip link set "$CUT_DEV" down
cut_s=$SECONDS
ok "link down"

# A new client during the cut fails within its timeout (exit 1 from rdmablk-io, not 124 from
# the watchdog).
t0=$SECONDS
rc=0
step during-new timeout $((TMO + SLACK)) "$BUILD/tests/rdmablk-io" -H "$CUT_ADDR" -p "$PORT" -e disk0 \
    -t "$TMO" write 0 64K 3 || rc=$?
[ "$rc" = 1 ] || fail "a client started during the cut: exit $rc after $((SECONDS - t0)) s, expected 1"
ok "a client started during the cut failed in $((SECONDS - t0)) s: $(tail -n 1 "$LOGS/during-new.log")"

# The client whose requests were in flight: its requests fail within its timeout (never with
# wrong data), and then it exits.
wait_for $((TMO + SLACK)) grep -q '^rdmablk-io: stress:' "$LOGS/stress.log" ||
    fail "the client with requests in flight got no error $((SECONDS - cut_s)) s into the cut"
ok "the client's requests failed $((SECONDS - cut_s)) s into the cut:" \
    "$(grep '^rdmablk-io: stress:' "$LOGS/stress.log")"
if grep -q mismatch "$LOGS/stress.log"; then fail "data mismatch: $(grep mismatch "$LOGS/stress.log")"; fi
grep -q '^rdmablk-io: stress: .* (E[A-Z]*)$' "$LOGS/stress.log" ||
    fail "the client failed without an errno: $(tail -n 2 "$LOGS/stress.log")"
# Its exit may have to wait for the link: with the netdev down, rxe's QP destroy blocks
# (rxe_destroy_qp -> __rxe_cleanup, seen on 6.1). That is checked after the link is back.

# The target: up, serving the other device, and rid of the broken connection.
_gone "$TARGET_PID" && fail "the target died"
serves during-d0 "$RDMABLK_ADDR" 4 || fail "the target did not serve rxe0 during the cut"
# The target frees both broken connections during the cut: the busy one when the retries of
# its work requests run out, the idle one when its liveness probe (a zero-length RDMA WRITE,
# keepalive = 2) does.
settle 90 || fail "$(live) connection(s) still held $((SECONDS - cut_s)) s into the cut"
grep -qE "^$idle_peer: liveness probe (completion failed|unanswered)" "$LOGS/target.log" ||
    fail "the idle connection ($idle_peer) was not closed by a failed liveness probe"
stats_check "$T/target.conf" "$LOGS/stats.json" \
    "s['liveness_probes']['failed'] + s['liveness_probes']['unanswered'] >= 1" ||
    fail "--stats counts no failed or unanswered liveness probe (stats.json)"
ok "during the cut the target serves rxe0 and has freed both broken connections, the idle" \
    "one after its liveness probe failed ($((SECONDS - cut_s)) s into the cut)"

ip link set "$CUT_DEV" up
wait_for 30 grep -q ACTIVE "$port_state" || fail "$CUT_RXE not ACTIVE after the link came back"
ok "link up after $((SECONDS - cut_s)) s"

rc=0
wait_exit "$SLACK" "$stress" || rc=$?
if [ "$rc" = 124 ]; then
    for f in /proc/"$stress"/task/*/stack; do
        echo "---- ${f#/proc/}" && cat "$f"
    done >"$LOGS/stress-hung-stacks.log" 2>&1
    grep -q 'rxe_destroy_qp' "$LOGS/stress-hung-stacks.log" ||
        fail "the client reported its error but never exits, even with the link back;" \
            "kernel stacks in stress-hung-stacks.log"
    echo "note: the client that saw the cut is stuck in the kernel destroying its QP" \
        "(rxe_destroy_qp -> __rxe_cleanup), even with the link back: an rxe bug, not ours"
    rxe_broken=1
    kill -KILL "$stress" 2>/dev/null
else
    [ "$rc" = 1 ] || fail "the client with requests in flight exited with $rc"
    ok "the client that saw the cut has exited"
fi
stress=

serves after-d0 "$RDMABLK_ADDR" 5 || fail "the target does not serve after the cut"
# rping_ok: RDMA CM through the cut device works for rdma-core's own rping (port 7174, not ours).
rping_ok() {
    local srv rc=0
    rping -s -a "$CUT_ADDR" -C 2 >/dev/null 2>&1 &
    srv=$!
    # The client retries until the server listens (or 20 s passed: the path is dead).
    wait_for 20 timeout 5 rping -c -a "$CUT_ADDR" -C 2 || rc=$?
    cp "$T/wait_for.out" "$LOGS/rping-after-cut.log"
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    return "$rc"
}
if serves after-cut "$CUT_ADDR" 6; then
    ok "new connections through $CUT_RXE work again"
else
    # The rxe bug above, told apart from a bug of ours by an independent client: when rping
    # cannot connect through the device either, the kernel's RDMA CM path through it is dead.
    rping_ok && fail "no new connection through $CUT_RXE after the link came back, though rping connects"
    echo "note: no new connection through $CUT_RXE after the cut, and rping cannot connect through" \
        "it either: the rxe bug described at the top (a connect attempt was made during the cut)." \
        "The target itself still serves (rxe0, above)"
    rxe_broken=1
fi
step after-read-cut-data rdmablk_io -H "$RDMABLK_ADDR" -e disk0 read 0 1M 5 ||
    fail "data written after the cut does not read back"

if settle 120 && wait_for 60 sh -c "[ \$(find /proc/$TARGET_PID/fd -mindepth 1 -maxdepth 1 | wc -l) -eq $base ]"; then
    ok "every connection freed, fd count back to $base"
elif [ "${rxe_broken:-0}" = 1 ]; then
    # The client's QP destroy is stuck in the kernel, so its disconnect never leaves the host.
    echo "note: $(live) connection(s) still held, fd count $(nfds) (baseline $base): the peer's" \
        "QP destroy is stuck in rxe, so no disconnect ever reaches the target"
else
    fail "connections not freed at the end ($(live) live), fd count $(nfds), baseline $base"
fi

stop_target
ok "target exits cleanly"
