#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# The target is killed (-9) while fio writes through /dev/ublkbN and restarted 3 s later: the
# queues reconnect and resend, fio finishes without an error and its crc32c verify of
# everything it wrote passes (acknowledged data intact, nothing wrong returned).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queues=2 timeout=90 keepalive=1

fio --name=w --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=randwrite \
    --bssplit=4k/60:64k/30:1m/10 --iodepth=16 --numjobs=2 --offset_increment=32M --size=32M \
    --verify=crc32c --do_verify=1 --group_reporting >"$LOGS/fio.log" 2>&1 &
fio_pid=$!
track_pid "$fio_pid"
wait_for 60 sh -c "[ \$(stat -c %b '$T/disk0.img') -gt 4096 ]" || fail "fio never wrote"
kill -KILL "$TARGET_PID"
wait "$TARGET_PID" 2>/dev/null || true
ok "target killed with fio running"
# The server has noticed (keepalive = 1) before the target comes back.
wait_for 60 grep -q 'lost:' "$LOGS/ublk.log" || fail "the server never noticed the dead target"
mv "$LOGS/target.log" "$LOGS/target-1.log"
start_target "$T/target.conf"
ok "target restarted"
rc=0
wait_exit 280 "$fio_pid" || rc=$?
[ "$rc" = 0 ] || fail "fio exited $rc across the target restart"
grep -q 'err= 0' "$LOGS/fio.log" || fail "fio reported errors"
grep -q 'verify' "$LOGS/fio.log" && grep -qi 'bad\|mismatch' "$LOGS/fio.log" && fail "verify mismatch"
grep -q 'reconnected to' "$LOGS/ublk.log" || fail "the server never reconnected"
ok "fio finished, crc32c verify passed after the restart ($(grep -c 'reconnected to' "$LOGS/ublk.log") reconnects)"
