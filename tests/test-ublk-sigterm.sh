#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# SIGTERM to the rdmablk-ublk server while fio writes: the server drains in-flight I/O,
# removes the device and exits; `list` no longer shows it (checked by the device and the
# server's pid: another lane's `add` may take the freed number at once).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queues=2

fio --name=w --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=randwrite --bs=16k --iodepth=16 \
    --size=64M --time_based --runtime=120 >"$LOGS/fio.log" 2>&1 &
fio_pid=$!
track_pid "$fio_pid"
wait_for 60 sh -c "[ \$(stat -c %b '$T/disk0.img') -gt 2048 ]" || fail "fio never wrote"
kill -TERM "$UBLK_PID"
wait_for 120 _gone "$UBLK_PID" || fail "the server did not exit within 120 s of SIGTERM"
wait_for 10 ublk_unlisted "$DEV" "$UBLK_PID" ||
    fail "$DEV of server $UBLK_PID is still listed after SIGTERM: $(cat "$T/wait_for.out")"
wait_exit 60 "$fio_pid" || true
kill -0 "$fio_pid" 2>/dev/null && fail "fio still runs against a removed device"
ok "SIGTERM: server exited, device removed, fio ended"
