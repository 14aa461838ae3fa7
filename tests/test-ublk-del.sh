#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# rdmablk-ublk del while fio writes to the device: del returns, the device and its server are
# gone, fio ends (its I/O after the removal fails; what it had in flight was drained), `list`
# no longer shows it, and a new device on the export serves verified I/O. Checked by the device
# and its server's pid, not by name: another lane's `add` may take the freed number at once.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queues=2

fio --name=w --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=write --bs=64k --iodepth=16 \
    --size=64M --loops=100 --time_based --runtime=120 >"$LOGS/fio.log" 2>&1 &
fio_pid=$!
track_pid "$fio_pid"
wait_for 60 sh -c "[ \$(stat -c %b '$T/disk0.img') -gt 2048 ]" || fail "fio never wrote"
t0=$SECONDS
step del timeout 120 "$UBLK" del "$DEV" || fail "del while I/O runs failed or hung"
ok "del returned after $((SECONDS - t0)) s with fio running"
wait_for 10 ublk_unlisted "$DEV" "$UBLK_PID" || fail "$DEV of server $UBLK_PID is still listed: $(cat "$T/wait_for.out")"
wait_for 30 _gone "$UBLK_PID" || fail "the server (pid $UBLK_PID) did not exit"
wait_exit 60 "$fio_pid" || true
kill -0 "$fio_pid" 2>/dev/null && fail "fio still runs against a removed device"
ok "device and server gone; fio ended"
grep -q 'Sanitizer\|runtime error' "$LOGS/ublk.log" && fail "sanitizer report"

# The device serves again afterwards: a verified write round.
ublk_add ublk2 hostname="$RDMABLK_ADDR" export=disk0 queues=2
step fio2 fio --name=v --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
    --iodepth=8 --size=8M --verify=crc32c --do_verify=1 || fail "fio verify after del failed"
ok "a new device on the export serves verified I/O"
