#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# connections=2: one ublk queue sends over two RDMA connections, each request on the one with
# the fewest outstanding. At QD1 every request takes the first (500 reads: 500 and 0, the
# control that the counts see which connection carried a request); at QD32 crc32c-verified
# writes spread over both, each carrying a share, and the data reads back from the backing file.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio cmp
ublk_setup 64M queues=1 queue-depth=32 connections=2

# reqs NAME CONN: requests connection CONN of queue 0 carried, from NAME.log's exit lines.
reqs() {
    sed -n "s/.*: queue 0 connection $2: \([0-9]*\) requests, .*/\1/p" "$LOGS/$1.log" | tail -n 1
}
step fio-qd1 fio --name=qd1 --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 \
    --rw=randread --bs=4k --iodepth=1 --size=16M --number_ios=500 || fail "fio at QD1 on $DEV failed"
ublk_del_wait ublk
c0=$(reqs ublk 0) c1=$(reqs ublk 1)
[ -n "$c0" ] && [ -n "$c1" ] || fail "no per-connection counts: $(grep 'queue 0' "$LOGS/ublk.log")"
[ "$c0" -ge 500 ] && [ "$c1" = 0 ] ||
    fail "control: QD1 reads went $c0 to the first connection and $c1 to the second (want all, none)"
ok "QD1: $c0 reads on the first connection, $c1 on the second"

ublk_add deep hostname="$RDMABLK_ADDR" export=disk0 queues=1 queue-depth=32 connections=2
step fio-qd32 fio --name=qd32 --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 \
    --rw=randwrite --bs=4k --iodepth=32 --size=16M --verify=crc32c --do_verify=1 ||
    fail "fio at QD32 on $DEV failed"
grep -q 'err= 0' "$LOGS/fio-qd32.log" || fail "fio at QD32 reported errors"
step cmp-backing cmp -n $((16 << 20)) "$DEV" "$T/disk0.img" || fail "$DEV and the backing file differ"
ublk_del_wait deep
c0=$(reqs deep 0) c1=$(reqs deep 1)
[ -n "$c0" ] && [ -n "$c1" ] || fail "no per-connection counts: $(grep 'queue 0' "$LOGS/deep.log")"
[ "$c0" -ge 100 ] && [ "$c1" -ge 100 ] ||
    fail "QD32 did not spread: $c0 requests on the first connection, $c1 on the second"
ok "QD32: crc32c-verified writes, $c0 requests on the first connection and $c1 on the second"
