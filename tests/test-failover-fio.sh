#!/bin/bash
# test-shares: none
# Failover under load: two targets on two addresses export one shared file; fio random writes
# with crc32c verify run through `nbdkit rdma hostname=A,B` (two NBD connections), target A is
# killed with SIGKILL mid-write, both connections fail over to B, and fio's verify of every
# block passes: no acknowledged write was lost, and the unacknowledged ones were resent.
# RDMABLK_TEST_FAILOVER_NEGATIVE=1 is the negative control: B exports another, empty file (marked shared,
# a lie), so the writes A acknowledged are missing there and fio's verify must fail.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"

requires nbdkit fio ip
require_rdma
requires_file "$PLUGIN"
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"
add_second_address

negative=${RDMABLK_TEST_FAILOVER_NEGATIVE:-0}
if [ "$negative" = 1 ]; then
    start_two_targets "$T/other.img"
else
    start_two_targets
fi
ok "targets a ($RDMABLK_ADDR) and b ($ADDR2) serve disk0"
# -v: a failover is a routine event, an nbdkit debug message.
start_nbdkit -v hostname="$RDMABLK_ADDR,$ADDR2" export=disk0 timeout=60 keepalive=1

SECONDS=0
start_failover_fio --ioengine=nbd --uri="$NBD_URI" --iodepth=32 --bssplit="$FAILOVER_BSSPLIT"
fio_pid=$FIO_PID

# That both NBD connections were on target a shows at the end: both fail over from it.
kill_a_mid_write nbdkit_read

rc=0
wait_exit 600 "$fio_pid" || rc=$?
if [ "$negative" = 1 ]; then
    [ "$rc" != 0 ] || fail "negative control: fio verify passed although b serves another file"
    grep -q 'verify' "$LOGS/fio.log" || fail "negative control: fio failed, but not in verify"
    ok "negative control: fio verify failed (status $rc) when b does not share a's data"
    exit 0
fi
fio_failed_over "$rc"
ok "fio randwrite + crc32c verify passed across the failover in ${SECONDS}s ($FAILOVERS failovers)"
