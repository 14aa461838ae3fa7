#!/bin/bash
# test-shares: none
# The target posts a round's replies before it reads its completion channel's event and
# re-arms the receive CQ (target/conn/completion.c, conn_cq_rearm): those two syscalls are off
# each request's path. Checked under strace with 24 inline 4 KiB writes, one at a time through
# one rdmablk-session (each reaches an idle target, so that each round serves one request, and
# writes it with one pwrite on the loop): in every round that both rings a doorbell (a
# POST_SEND write on the verbs fd) and reads the channel, the doorbell comes first, and the
# loop asks for rounds without sleeping no more often than once per request (no spin). The
# build before the change read the channel first in every round (the negative control, run by
# hand: BUILD=<that build> tests/run-integration thisfile). Every write reads back, and the
# target stops cleanly.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires strace python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-session"

target_conf "$T/target.conf" max-io=4K <<EOF
[export disk]
path = $T/disk.img
size = 4M
durability = fua
EOF
start_target "$T/target.conf"
hold_session disk s
session_do s write 0 4096 1 || fail "the first write failed"

# One file per thread (-ff): no call is split into "unfinished" and "resumed" lines.
strace -ff -y -qq -e trace=read,write,epoll_wait,epoll_pwait -o "$T/strace" -p "$TARGET_PID" \
    2>"$LOGS/strace.err" &
spid=$!
# strace says nothing when attached: wait for the target's once-a-second epoll_wait to show
# (in a file that appears only then: the glob is expanded on each try).
_traced() { grep -qs epoll "$T"/strace.*; }
wait_for 20 _traced || fail "strace did not attach: $(cat "$LOGS/strace.err")"
for i in $(seq 0 23); do
    session_do s write $((i * 4096)) 4096 $((i + 7)) || fail "4 KiB write $i failed"
done
kill -INT "$spid" 2>/dev/null || true
wait "$spid" || true

python3 - "$T"/strace.* >"$LOGS/order.txt" <<'PY' || fail "the replies did not go out before the re-arm: $(cat "$LOGS/order.txt")"
import re, sys
from collections import defaultdict
rounds = defaultdict(list)   # thread (its file) -> what it did since its last epoll_wait
first = both = polls = 0
for pid, line in ((f, l) for f in sys.argv[1:] for l in open(f)):
    m = re.match(r'(\w+)\((\d+)<([^>]*)>, (\S*)', line)
    if not m:
        continue
    call, fd, path, arg = m.groups()
    if call.startswith('epoll'):
        # A round that asks for another at once waits 0 ms (epoll_wait's
        # last argument; epoll_pwait's is followed by the mask and its size).
        polls += re.search(r', 0(, NULL, \d+)?\) = ', line) is not None
        r = rounds.pop(pid, [])
        if 'doorbell' in r and 'event' in r:
            both += 1
            first += r.index('doorbell') < r.index('event')
        continue
    # uverbs' write commands: POST_SEND is 28 (strace: "\34\0\0\0...")
    if call == 'write' and 'uverbs' in path and arg.startswith('"\\34\\0\\0\\0'):
        rounds[pid].append('doorbell')
    elif call == 'read' and 'infinibandevent' in path:
        rounds[pid].append('event')
print('rounds with a doorbell and a channel read: %d, the doorbell first in %d; '
      '%d rounds without a sleep' % (both, first, polls))
sys.exit(0 if both >= 20 and first == both and polls <= 24 else 1)
PY
cat "$LOGS/order.txt"
for i in $(seq 0 23); do
    session_do s read $((i * 4096)) 4096 $((i + 7)) || fail "4 KiB write $i does not read back"
done
exec 7>&-
wait_exit 60 "$SESSION_PID" || fail "the session did not end cleanly within 60 s"
ok "$(cat "$LOGS/order.txt"); every write reads back"
stop_target
ok "target exits cleanly"
