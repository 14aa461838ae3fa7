#!/bin/bash
# guest-kernel: 6.12
# rdmablk-ublk's default wait, busy-poll=adaptive: fio writes and reads back crc32c-verified data
# at QD1 and QD8 (replies reaped by the spin's unarmed polls, and by arming before a sleep), at
# QD1 the queue thread sleeps about once per IO (for the next request) instead of twice, and
# the server's log says that replies came while it spun. A device with busy-poll=no on the same
# target is the control: above 1.5 sleeps per IO.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queue-depth=16
SPIN=$DEV SPIN_PID=$UBLK_PID

for qd in 1 8; do
    step "fio-qd$qd" fio --name="spin$qd" --filename="$SPIN" --allow_file_create=0 --ioengine=libaio \
        --direct=1 --rw=randwrite --bs=4k --iodepth="$qd" --size=8M --offset=$((qd << 20)) \
        --verify=crc32c --do_verify=1 || fail "fio at QD$qd on $SPIN failed"
    grep -q 'err= 0' "$LOGS/fio-qd$qd.log" || fail "fio at QD$qd reported errors"
done
ok "busy-poll=adaptive (the default): crc32c-verified writes at QD1 and QD8"

ublk_add plain hostname="$RDMABLK_ADDR" export=disk0 queue-depth=16 busy-poll=no
PLAIN=$DEV PLAIN_PID=$UBLK_PID

spin=$(sleeps_per_io "$SPIN" "$SPIN_PID")
plain=$(sleeps_per_io "$PLAIN" "$PLAIN_PID")
echo "queue thread sleeps per QD1 read: adaptive $spin, busy-poll=no $plain"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 1.5)' "$plain" ||
    fail "control: with busy-poll=no the queue thread slept only $plain times per IO"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 1.5)' "$spin" ||
    fail "with busy-poll=adaptive the queue thread still slept $spin times per IO"
ok "queue thread sleeps per QD1 read: $spin with the adaptive spin, $plain with busy-poll=no"

step del-spin timeout 120 "$UBLK" del "$SPIN" || fail "rdmablk-ublk del $SPIN failed"
wait_for 30 grep -q 'busy-poll=adaptive: [1-9][0-9]* replies came while it spun' "$LOGS/ublk.log" ||
    fail "the server did not report replies reaped while it spun: $(grep -i 'queue 0' "$LOGS/ublk.log")"
ok "$(grep -o 'busy-poll=adaptive: .*' "$LOGS/ublk.log" | head -n 1)"
