#!/bin/bash
# guest-kernel: 6.12
# rdmablk-ublk with busy-poll=yes: fio libaio writes and reads back crc32c-verified data at QD1
# and QD8, and at QD1 the queue thread sleeps about once per IO (for the next request), not
# twice (for the request, then for its reply), counted from its voluntary context switches. The
# same count on a device with busy-poll=no, on the same target, is the control: above 1.5.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queue-depth=16 busy-poll=yes
BUSY=$DEV BUSY_PID=$UBLK_PID

for qd in 1 8; do
    step "fio-qd$qd" fio --name="busy$qd" --filename="$BUSY" --allow_file_create=0 --ioengine=libaio \
        --direct=1 --rw=randwrite --bs=4k --iodepth="$qd" --size=8M --offset=$((qd << 20)) \
        --verify=crc32c --do_verify=1 || fail "fio at QD$qd on $BUSY failed"
    grep -q 'err= 0' "$LOGS/fio-qd$qd.log" || fail "fio at QD$qd reported errors"
done
ok "busy-poll=yes: crc32c-verified writes at QD1 and QD8"

ublk_add plain hostname="$RDMABLK_ADDR" export=disk0 queue-depth=16 busy-poll=no
PLAIN=$DEV PLAIN_PID=$UBLK_PID

busy=$(sleeps_per_io "$BUSY" "$BUSY_PID")
plain=$(sleeps_per_io "$PLAIN" "$PLAIN_PID")
echo "queue thread sleeps per QD1 read: busy-poll $busy, without $plain"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 1.5)' "$plain" ||
    fail "control: without busy-poll the queue thread slept only $plain times per IO"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 1.5)' "$busy" ||
    fail "with busy-poll the queue thread still slept $busy times per IO"
ok "queue thread sleeps per QD1 read: $busy with busy-poll=yes, $plain without"
