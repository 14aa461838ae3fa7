#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# An idle rdmablk-ublk's main thread sleeps until it has something to do: a stop signal, or
# the end of its queue threads. Over 4 s with no I/O it is woken at most twice (the build
# before this polled every 200 ms: about 20 wake-ups), and it still notices at once when
# another process removes the device: `del` stops the device, which ends the queue threads,
# each of which says so to the main thread, which must then close /dev/ublkcN before `del`'s
# DEL_DEV can return: `del` returns within 10 s and the server exits. Counted from the main
# thread's own voluntary_ctxt_switches (/proc/PID/status: the thread-group leader alone).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

ublk_setup 16M queues=2
main_switches() { sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "/proc/$UBLK_PID/status"; }

nap 1       # past add's own start-up
before=$(main_switches)
nap 4
after=$(main_switches)
if [ -z "$before" ] || [ -z "$after" ]; then fail "cannot read the server's switches (pid $UBLK_PID)"; fi
woken=$((after - before))
echo "the idle server's main thread was woken $woken times in 4 s"
[ "$woken" -le 2 ] || fail "the idle server's main thread was woken $woken times in 4 s (at most 2)"
ok "idle: the main thread was woken $woken times in 4 s"

# The queue threads end when another process removes the device: the main thread, asleep
# with no tick, must learn it from them and exit.
t0=$SECONDS
ublk_del_wait idle 10
ok "del: returned and the server exited within $((SECONDS - t0)) s"
