#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# The rdmablk-ublk server is killed (-9) with I/O running: nothing hangs (the kernel fails the
# device's I/O and removes /dev/ublkbN once its server is gone; `list` still shows it, dead),
# `rdmablk-ublk del` removes what is left, and a new `add` on the same export serves the data
# acknowledged before the kill (docs/man/rdmablk-ublk.8: what the admin does after a crash).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queues=2

# Acknowledged data: 8 MiB with O_DIRECT + fsync before the crash.
head -c 8M /dev/urandom >"$T/ref"
step ref dd if="$T/ref" of="$DEV" bs=1M oflag=direct conv=fsync || fail "reference write failed"
fio --name=w --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=randwrite --bs=16k --iodepth=16 \
    --offset=16M --size=48M --time_based --runtime=300 >"$LOGS/fio.log" 2>&1 &
fio_pid=$!
track_pid "$fio_pid"
# fio is writing when the server dies: its writes reach the device (sectors written, field 7).
written() { awk '{ print $7 }' "/sys/block/${DEV##*/}/stat"; }
written_above() { [ "$(written)" -gt "$1" ]; }
wait_for 60 written_above $(($(written) + 2048)) || fail "fio never wrote to $DEV"
kill -KILL "$UBLK_PID"
ok "server killed with fio running"
rc=0
wait_exit 120 "$fio_pid" || rc=$?
[ "$rc" != 124 ] || fail "fio hangs on the device of a dead server"
[ "$rc" != 0 ] || fail "fio reported success against a dead server"
ok "fio ended with an error (exit $rc) once the server was gone"
"$UBLK" list >"$LOGS/list-dead.log" 2>&1
grep -q "^$DEV state=live" "$LOGS/list-dead.log" && fail "$DEV still live after its server died"
# The check after del can see a leftover: the dead device is listed until then.
grep -q "^$DEV state=dead pid=-1 " "$LOGS/list-dead.log" || fail "$DEV is not listed dead after its server died"
ok "after the crash: $(cat "$LOGS/list-dead.log")"
step del timeout 120 "$UBLK" del "$DEV" || fail "del after the crash failed"
ublk_unlisted "$DEV" "$UBLK_PID" >"$LOGS/list.log" ||
    fail "$DEV of the dead server $UBLK_PID is still listed after del: $(cat "$LOGS/list.log")"
ok "del removed the dead server's device"

ublk_add ublk2 hostname="$RDMABLK_ADDR" export=disk0 queues=2
cmp -n 8388608 "$DEV" "$T/ref" || fail "data acknowledged before the crash differs"
ok "a new device serves the data acknowledged before the crash"
