#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# fio libaio --direct=1 on /dev/ublkbN with queues=4 (the kernel grants at most one per CPU; each
# granted queue has its own RDMA connections, two by default), 4 fio jobs: mixed random writes of
# 4K..1M, crc32c verified; and the backing file holds the device's bytes.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 128M queues=4 queue-depth=16

step fio fio --name=ublk --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=randwrite \
    --bssplit=4k/50:64k/30:256k/10:1m/10 --iodepth=16 --numjobs=4 --offset_increment=32M \
    --size=32M --verify=crc32c --do_verify=1 --group_reporting || fail "fio on $DEV failed"
grep -q 'err= 0' "$LOGS/fio.log" || fail "fio reported errors"
nq=$(find "/sys/block/${DEV#/dev/}/mq" -mindepth 1 -maxdepth 1 | wc -l)
want=$(($(nproc) < 4 ? $(nproc) : 4))
[ "$nq" = "$want" ] || fail "$nq hardware queues, expected $want (queues=4, $(nproc) CPUs)"
ok "fio libaio on $DEV, 4 jobs x QD16 over $nq queues: mixed random writes, crc32c verified"
conns=$(sessions_of "$T/target.conf" disk0)
[ "$conns" = $((2 * nq)) ] || fail "$conns RDMA connections for $nq queues (expected two each)"
cmp "$DEV" "$T/disk0.img" || fail "the backing file differs from what $DEV shows"
ok "$conns RDMA connections, two per queue (the default); the backing file's bytes equal $DEV's"
