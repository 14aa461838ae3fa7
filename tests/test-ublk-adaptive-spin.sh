#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# rdmablk-ublk's default wait, busy-poll=adaptive: fio writes and reads back crc32c-verified data
# at QD1 and QD8 (replies reaped by the spin's unarmed polls, and by arming before a sleep), at
# QD1 the queue thread sleeps about once per IO (for the next request) instead of twice, and
# the server's log says that replies came while it spun, and that the spin gave its CPU up
# (sched_yield) while nothing came. A device with busy-poll=no on the same
# target is the control: above 1.5 sleeps per IO.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
# One queue: the sleeps are counted per thread, and a QD1 reader alternates between two.
ublk_setup 64M queue-depth=16 queues=1
SPIN=$DEV SPIN_PID=$UBLK_PID
verify_qd1_qd8 "$SPIN" spin
ok "busy-poll=adaptive (the default): crc32c-verified writes at QD1 and QD8"

ublk_add plain hostname="$RDMABLK_ADDR" export=disk0 queue-depth=16 queues=1 busy-poll=no
fewer_sleeps busy-poll=adaptive "$SPIN" "$SPIN_PID" "$DEV" "$UBLK_PID"

step del-spin timeout 120 "$UBLK" del "$SPIN" || fail "rdmablk-ublk del $SPIN failed"
wait_for 30 grep -q 'busy-poll=adaptive: [1-9][0-9]* replies came while it spun' "$LOGS/ublk.log" ||
    fail "the server did not report replies reaped while it spun: $(grep -i 'queue 0' "$LOGS/ublk.log")"
# A spin that found nothing gives its CPU up now and then (sched_yield, RB_SPIN_YIELD_NS): on
# two emulated CPUs a round trip is hundreds of microseconds, so every spin does.
grep -q 'spins ended in a sleep, [1-9][0-9]* yields' "$LOGS/ublk.log" ||
    fail "the spin never gave its CPU up: $(grep -o 'busy-poll=adaptive: .*' "$LOGS/ublk.log")"
ok "$(grep -o 'busy-poll=adaptive: .*' "$LOGS/ublk.log" | head -n 1)"
