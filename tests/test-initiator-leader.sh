#!/bin/bash
# test-shares: alone
# The initiator's leader/follower wait (initiator/NOTES.md): with one thread at a time the
# caller reaps its own completion, sleeping at most once in poll() per request and never on a
# condvar; with eight threads on one connection the lead passes between them, every byte still
# verifies; in busy-poll mode the leader never sleeps.  Counted by rb_client_stats.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
IO=$BUILD/tests/rdmablk-io
requires_file "$IO" "$BUILD/rdmablk-target"

start_disk0_target port=10812 queue-depth=32 max-io=1M

IO_OPTS="-p 10812 -e disk0 -t 60"

step qd1 rdmablk_io -s stress 4 1 4K || fail "single-thread stress failed"
req=$(io_stat qd1 requests) sleeps=$(io_stat qd1 leader_sleeps)
wakes=$(io_stat qd1 follower_wakes) handoffs=$(io_stat qd1 handoffs)
[ "${req:-0}" -gt 20 ] || fail "single-thread stress made only ${req:-no} requests"
[ "$wakes" -eq 0 ] || fail "one thread, yet $wakes condvar wake-ups"
[ "$handoffs" -eq 0 ] || fail "one thread, yet $handoffs leader hand-offs"
[ "$sleeps" -le "$req" ] || fail "$sleeps sleeps in poll() for $req requests"
ok "one thread: $req requests, $sleeps sleeps in poll(), no condvar wake-up, no hand-off"

step many rdmablk_io -s stress 8 8 64K || fail "eight-thread stress failed (or data mismatch)"
handoffs=$(io_stat many handoffs) wakes=$(io_stat many follower_wakes)
[ "${handoffs:-0}" -gt 0 ] || fail "eight threads, yet the lead never passed on"
[ "${wakes:-0}" -gt 0 ] || fail "eight threads, yet no follower was woken"
ok "eight threads: $(grep '^ops=' "$LOGS/many.log"), $handoffs hand-offs, $wakes follower wake-ups, verified"

step busy rdmablk_io -b -s stress 3 2 16K || fail "busy-poll stress failed"
sleeps=$(io_stat busy leader_sleeps)
[ "$sleeps" -eq 0 ] || fail "busy-poll leader slept $sleeps times"
ok "busy-poll: $(grep '^ops=' "$LOGS/busy.log"), the leader spins and never sleeps"
stop_target
