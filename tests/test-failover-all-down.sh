#!/bin/bash
# test-shares: alone
# Every target of a hostname= list down: with two targets of one shared export, `nbdkit rdma
# hostname=A,B timeout=5 keepalive=1` and a qemu-io holding one NBD connection, both targets
# are killed with SIGKILL; the next read fails with EIO within about the timeout (the library
# tries A and B in turn, with back-off, until the request's deadline), nothing hangs, and once
# one target (B) is back, reads succeed again through it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"

requires nbdkit qemu-io ip bc
require_rdma
requires_file "$BUILD/nbdkit-rdma-plugin.so"
add_second_address

start_two_targets
# -v: a failover is a routine event, an nbdkit debug message.
start_nbdkit -v hostname="$RDMABLK_ADDR,$ADDR2" export=disk0 timeout=5 keepalive=1
start_qemu_io "$NBD_URI"
ok "qemu-io reads through target a"

kill -KILL "$PID_A" "$PID_B"
wait "$PID_A" 2>/dev/null || true
wait "$PID_B" 2>/dev/null || true
start=$(date +%s.%N)
echo "read 0 4096" >&7
wait_for 60 grep -q 'read failed: Input/output error' "$LOGS/qemu-io.log" ||
    fail "no EIO with every target down"
took=$(echo "$(date +%s.%N) - $start" | bc)
# As in test-plugin-reconnect.sh: qemu's NBD client may resend once (twice the timeout).
echo "$took <= 14" | bc | grep -qx 1 || fail "EIO took ${took}s with timeout=5"
grep -q "failover from .* failed: none of the 2 targets could be used" "$LOGS/nbdkit.log" ||
    fail "nbdkit log does not say that no target could be used"
ok "both targets down: EIO after ${took}s (timeout=5), tried both"

TARGET_NAME=b start_target "$T/b.conf"
wait_for 60 qemu_io_read_again "$(qemu_io_reads)" || fail "reads do not succeed once target b is back"
grep -q "to $ADDR2:10810 (target 2 of 2)" "$LOGS/nbdkit.log" ||
    fail "nbdkit log does not show the failover to b"
stop_qemu_io
ok "target b back: reads succeed again through it"
