#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# Failover under load through rdmablk-ublk: two targets on two addresses export one shared
# file; /dev/ublkbN is added with hostname=A,B (two queues, two RDMA connections), fio writes
# with crc32c verify, target A is killed with SIGKILL mid-write, both queues fail over to B
# and resend, and fio finishes without an error with its verify of every block passing.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"

requires fio ip
require_rdma
require_ublk
add_second_address
start_two_targets
ublk_add ublk hostname="$RDMABLK_ADDR,$ADDR2" export=disk0 queues=2 timeout=90 keepalive=1

start_failover_fio --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 \
    --iodepth=16 --bssplit=4k/60:64k/30:1m/10
fio_pid=$FIO_PID
# Progress is the device's own count of sectors written. That both queues were on target a
# shows at the end: both fail over from it.
written() { awk '{ print $7 * 512 }' "/sys/block/${DEV#/dev/}/stat"; }
kill_a_mid_write written

rc=0
wait_exit 280 "$fio_pid" || rc=$?
[ "$rc" = 0 ] || fail "fio exited $rc across the failover"
grep -q 'err= 0' "$LOGS/fio.log" || fail "fio reported errors"
n=$(failovers_in "$LOGS/ublk.log")
[ "$n" -ge 2 ] || fail "the server shows $n failovers to b, expected one per queue"
ok "fio finished, crc32c verify passed after the failover ($n failovers)"
