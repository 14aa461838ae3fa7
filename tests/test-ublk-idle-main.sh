#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# An idle rdmablk-ublk's main thread sleeps until it has something to do: a stop signal, or
# the end of its queue threads. Over 4 s with no I/O it is woken at most twice (the build
# before this polled every 200 ms: about 20 wake-ups), and it still notices at once when
# another process removes the device (`del` ends the queue threads, and each says so to the
# main thread): the server exits within 10 s. Counted from the main thread's own
# voluntary_ctxt_switches (/proc/PID/status: the thread-group leader alone).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

ublk_setup 16M queues=2
main_switches() { sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "/proc/$UBLK_PID/status"; }

sleep 1     # past add's own start-up
before=$(main_switches)
sleep 4
after=$(main_switches)
if [ -z "$before" ] || [ -z "$after" ]; then fail "cannot read the server's switches (pid $UBLK_PID)"; fi
woken=$((after - before))
echo "the idle server's main thread was woken $woken times in 4 s"
[ "$woken" -le 2 ] || fail "the idle server's main thread was woken $woken times in 4 s (at most 2)"
ok "idle: the main thread was woken $woken times in 4 s"

# The queue threads end when another process removes the device: the main thread, asleep
# with no tick, must learn it from them and exit.
step del timeout 60 "$UBLK" del "$DEV" || fail "rdmablk-ublk del $DEV failed"
t0=$SECONDS
wait_for 10 _gone "$UBLK_PID" || fail "the server (pid $UBLK_PID) did not exit within 10 s of del"
ok "del: the server exited $((SECONDS - t0)) s after the device was removed"
