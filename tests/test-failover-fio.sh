#!/bin/bash
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
start_nbdkit hostname="$RDMABLK_ADDR,$ADDR2" export=disk0 timeout=60 keepalive=1

SECONDS=0
fio --name=failover --ioengine=nbd --uri="$NBD_URI" --rw=randwrite \
    --bssplit=512/10:4k/40:64k/30:256k/10:1m/10 --iodepth=32 --numjobs=2 \
    --size=32M --offset_increment=32M --verify=crc32c --verify_fatal=1 \
    --do_verify=1 --rate=,1m --group_reporting >"$LOGS/fio.log" 2>&1 &
fio_pid=$!
track_pid "$fio_pid"

# Progress is what nbdkit read from its NBD socket (the file's allocation says nothing: the
# guest's tmpfs allocates in huge pages). That both NBD connections were on target a shows at
# the end: both fail over from it.
written() { awk '$1 == "rchar:" { print $2 }' "/proc/$NBDKIT_PID/io"; }
kill_a_mid_write written

rc=0
wait_exit 600 "$fio_pid" || rc=$?
if [ "$negative" = 1 ]; then
    [ "$rc" != 0 ] || fail "negative control: fio verify passed although b serves another file"
    grep -q 'verify' "$LOGS/fio.log" || fail "negative control: fio failed, but not in verify"
    ok "negative control: fio verify failed (status $rc) when b does not share a's data"
    exit 0
fi
[ "$rc" = 0 ] || fail "fio failed across the failover (status $rc)"
grep -q 'err= 0' "$LOGS/fio.log" || fail "fio reported errors"
n=$(failovers_in "$LOGS/nbdkit.log")
[ "$n" -ge 2 ] || fail "nbdkit log shows $n failovers to b, expected one per NBD connection"
accepted=$(target_stat "$T/b.conf" connections accepted) || fail "--stats of b failed"
[ "$accepted" -ge 2 ] || fail "target b accepted $accepted connections"
ok "fio randwrite + crc32c verify passed across the failover in ${SECONDS}s ($n failovers)"
