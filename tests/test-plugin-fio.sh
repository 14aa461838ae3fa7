#!/bin/bash
# test-shares: none
# fio's nbd engine through nbdkit rdma: random writes with sizes 512 bytes to 1M, iodepth 32,
# two jobs (two NBD connections, each its own RDMA connection), verified with crc32c.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

requires nbdkit fio
require_rdma
requires_file "$PLUGIN"
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"

write_target_conf 64M
start_target "$T/target.conf"
start_nbdkit hostname="$RDMABLK_ADDR" export=disk0

SECONDS=0
step fio fio --name=rdma --ioengine=nbd --uri="$NBD_URI" --rw=randwrite \
    --bssplit=512/10:4k/40:64k/30:256k/10:1m/10 --iodepth=32 --numjobs=2 \
    --size=32M --offset_increment=32M --verify=crc32c --verify_fatal=1 \
    --do_verify=1 --group_reporting || fail "fio failed"
grep -q 'err= 0' "$LOGS/fio.log" || fail "fio reported errors"
ok "fio randwrite + crc32c verify, iodepth 32 x 2 jobs: ${SECONDS}s"
