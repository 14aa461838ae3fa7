#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# The target goes away and stays away: I/O on /dev/ublkbN fails with EIO within timeout= (plus
# slack for TCG), instead of hanging, and never returns data; del still removes the device.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

TMO=8
SLACK=40
ublk_setup 16M timeout=$TMO keepalive=1
step first-read dd if="$DEV" of=/dev/null bs=4k count=16 iflag=direct || fail "no read before the kill"
kill -KILL "$TARGET_PID"
wait "$TARGET_PID" 2>/dev/null || true
TARGET_PID=
t0=$SECONDS
rc=0
step read-during timeout $((TMO + SLACK)) dd if="$DEV" of="$T/out" bs=4k count=1 skip=100 iflag=direct || rc=$?
took=$((SECONDS - t0))
[ "$rc" != 0 ] || fail "a read with the target gone succeeded"
[ "$rc" != 124 ] || fail "a read with the target gone hung past $((TMO + SLACK)) s"
grep -q 'Input/output error' "$LOGS/read-during.log" || fail "not EIO: $(cat "$LOGS/read-during.log")"
[ ! -s "$T/out" ] || fail "the failed read returned data"
ok "read failed with EIO after $took s (timeout=$TMO)"
step del timeout 120 "$UBLK" del "$DEV" || fail "del with the target gone failed"
ok "del removed the device with the target gone"
