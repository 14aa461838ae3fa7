#!/bin/bash
# test-shares: none
# The target posts a round's replies before it reads its completion channel's event and
# re-arms the receive CQ (target/conn/completion.c, conn_cq_rearm): those two syscalls are off
# each request's path. Checked under strace with 64 inline 4 KiB writes at queue depth 1 (each
# written with one pwrite on the loop): in the rounds that both post a doorbell (write on the
# verbs fd) and read the channel (at least 16: under strace the poll after re-arming often finds
# the next request, served in the same round), the doorbell comes first in at least 90 %, and
# the loop asks for a round without sleeping no more often than once per request (no spin). The build before the change read the channel first in every round (the
# negative control, run by hand: BUILD=<that build> tests/run-integration thisfile). Every byte
# reads back, and the target stops cleanly.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires strace python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

target_conf "$T/target.conf" max-io=4K <<EOF
[export disk]
path = $T/disk.img
size = 4M
durability = fua
EOF
start_target "$T/target.conf"
IO_OPTS="-t 60 -e disk -q 1"
step warm rdmablk_io write 0 4096 1 || fail "the first write failed"

strace -f -y -qq -e trace=read,write,epoll_wait,epoll_pwait -o "$T/strace.out" -p "$TARGET_PID" \
    2>"$LOGS/strace.err" &
spid=$!
# strace says nothing when attached: wait for the target's once-a-second epoll_wait to show.
wait_for 20 grep -q epoll "$T/strace.out" || fail "strace did not attach: $(cat "$LOGS/strace.err")"
step writes rdmablk_io write 0 256K 7 || fail "64 writes of 4 KiB at queue depth 1 failed"
kill -INT "$spid"
wait "$spid" || true

python3 - "$T/strace.out" >"$LOGS/order.txt" <<'PY' || fail "the replies did not go out before the re-arm: $(cat "$LOGS/order.txt")"
import re, sys
from collections import defaultdict
rounds = defaultdict(list)   # pid -> syscalls since its last epoll_wait
first = both = polls = 0
for line in open(sys.argv[1]):
    m = re.match(r'(\d+)\s+(\w+)\((\d+)<([^>]*)>', line)
    if not m:
        continue
    pid, call, fd, path = m.groups()
    if call.startswith('epoll'):
        # A round that asks for another at once waits 0 ms: what the poll after
        # re-arming found.  Many more of those than requests would be a spin.
        polls += re.search(r', 0\) = ', line) is not None
        r = rounds.pop(pid, [])
        if 'doorbell' in r and 'event' in r:
            both += 1
            first += r.index('doorbell') < r.index('event')
        continue
    if call == 'write' and 'uverbs' in path:
        rounds[pid].append('doorbell')
    elif call == 'read' and 'infinibandevent' in path:
        rounds[pid].append('event')
print('rounds with a doorbell and a channel read: %d, the doorbell first in %d; '
      '%d rounds without a sleep' % (both, first, polls))
sys.exit(0 if both >= 16 and first * 10 >= both * 9 and polls <= 70 else 1)
PY
cat "$LOGS/order.txt"
step verify rdmablk_io read 0 256K 7 || fail "the 64 writes do not read back"
ok "$(cat "$LOGS/order.txt"); every byte reads back"
stop_target
ok "target exits cleanly"
