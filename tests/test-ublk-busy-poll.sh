#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# rdmablk-ublk with busy-poll=yes: fio libaio writes and reads back crc32c-verified data at QD1
# and QD8, and at QD1 the queue thread sleeps about once per IO (for the next request), not
# twice (for the request, then for its reply), counted from its voluntary context switches. The
# same count on a device with busy-poll=no, on the same target, is the control: above 1.5.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
# One queue: the sleeps are counted per thread, and a QD1 reader alternates between two.
ublk_setup 64M queue-depth=16 queues=1 busy-poll=yes
BUSY=$DEV BUSY_PID=$UBLK_PID
verify_qd1_qd8 "$BUSY" busy
ok "busy-poll=yes: crc32c-verified writes at QD1 and QD8"

ublk_add plain hostname="$RDMABLK_ADDR" export=disk0 queue-depth=16 queues=1 busy-poll=no
fewer_sleeps busy-poll=yes "$BUSY" "$BUSY_PID" "$DEV" "$UBLK_PID"
