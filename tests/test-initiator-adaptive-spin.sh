#!/bin/bash
# test-shares: alone
# The initiator's synchronous wait with busy-poll=adaptive (the nbdkit plugin's path): one
# thread at a time, its leader polls the CQ for about two mean round trips before it arms and
# sleeps, so it sleeps in poll() for fewer than half its requests, and every byte still
# verifies (with eight threads too, where only a lone waiter spins). The same run with the
# default busy-poll=no is the control: it sleeps for at least half its requests; the adaptive
# run makes at least half as many requests as it in the same time. Counted by rb_client_stats.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/tests/rdmablk-io" "$BUILD/rdmablk-target"

start_disk0_target port=10812 queue-depth=32 max-io=1M

IO_OPTS="-p 10812 -e disk0 -t 60"

step control rdmablk_io -s stress 4 1 4K || fail "single-thread stress (busy-poll=no) failed"
req=$(io_stat control requests) sleeps=$(io_stat control leader_sleeps)
[ "${req:-0}" -gt 20 ] || fail "control: single-thread stress made only ${req:-no} requests"
[ $((2 * sleeps)) -ge "$req" ] ||
    fail "control: with busy-poll=no the leader slept only $sleeps times for $req requests"
ok "control: busy-poll=no, $req requests, $sleeps sleeps in poll()"

control=$req
step spin rdmablk_io -a -s stress 4 1 4K || fail "single-thread stress (adaptive) failed"
req=$(io_stat spin requests) sleeps=$(io_stat spin leader_sleeps)
[ -n "$sleeps" ] || fail "rdmablk-io printed no leader_sleeps"
# A lost wake-up would cost a leader's 1 s sleep bound each time: far fewer requests.
[ "${req:-0}" -gt 20 ] && [ $((2 * req)) -ge "$control" ] ||
    fail "single-thread stress made only ${req:-no} requests (busy-poll=no: $control)"
[ $((2 * sleeps)) -lt "$req" ] ||
    fail "busy-poll=adaptive: the leader still slept $sleeps times for $req requests"
ok "busy-poll=adaptive: $(grep '^ops=' "$LOGS/spin.log"), $sleeps sleeps in poll() for $req requests"

step many rdmablk_io -a -s stress 4 8 64K || fail "eight-thread stress (adaptive) failed (or data mismatch)"
ok "busy-poll=adaptive, eight threads: $(grep '^ops=' "$LOGS/many.log"), verified"
stop_target
