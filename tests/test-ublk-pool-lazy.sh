#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# A connection registers its request pool (queue depth x max-io, pinned) only when a request
# needs it. rdmablk-ublk's reads and writes are direct (its queues' buffers are registered), so
# its connections never do: after 1 MiB and 4 KiB writes and reads, data verified, the exit
# lines say 0 bytes of request pool registered, and the server pinned (VmPin) less than one
# pool. The control: the same I/O with mr=static (no direct I/O, every request through the
# pool) registers pools, and the server pinned at least that much more.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires dd sha256sum
ublk_setup 64M queues=1
head -c 4M /dev/urandom >"$T/src"
want=$(sha256sum <"$T/src" | cut -d' ' -f1)

# io_then_pin NAME: 4 MiB written to $DEV in 1 MiB and 4 KiB pieces, read back and verified;
# prints the server's VmPin in bytes, read while the device still lives.
io_then_pin() {
    local got
    step "$1-w1m" dd if="$T/src" of="$DEV" bs=1M count=3 oflag=direct conv=notrunc ||
        fail "$1: 1 MiB writes failed"
    step "$1-w4k" dd if="$T/src" of="$DEV" bs=4k skip=768 seek=768 count=256 oflag=direct \
        conv=notrunc || fail "$1: 4 KiB writes failed"
    got=$(dd if="$DEV" bs=1M count=4 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || fail "$1: read back $got, wrote $want"
    awk '/^VmPin:/ { print $2 * 1024 }' "/proc/$UBLK_PID/status"
}

pin=$(io_then_pin direct) || exit 1
ublk_del_wait ublk
pool=$(ublk_exit_sum "$LOGS/ublk.log" pool)
conns=$(grep -c 'bytes of request pool registered' "$LOGS/ublk.log")
[ "$pool" = 0 ] || fail "direct I/O registered $pool bytes of request pool (want 0)"
echo "direct: $conns connection(s), pool 0 bytes, VmPin $pin bytes"

ublk_add ublk2 hostname="$RDMABLK_ADDR" export=disk0 queues=1 mr=static
pin2=$(io_then_pin static) || exit 1
ublk_del_wait ublk2
pool2=$(ublk_exit_sum "$LOGS/ublk2.log" pool)
[ "$pool2" != none ] && [ "$pool2" -gt 0 ] ||
    fail "control: mr=static registered $pool2 bytes of request pool, want more than 0"
echo "control: pool $pool2 bytes, VmPin $pin2 bytes"
[ "$pin2" -ge "$pool2" ] ||
    fail "control: VmPin $pin2 is less than the $pool2 bytes of pool registered: VmPin does not see it"
# Direct I/O pins the queue's buffers once per connection that served a request (at QD1 only
# the first: the fewest outstanding, the first on a tie), about one pool's size. Registered
# eagerly, each of the two connections' pools would add as much again.
one=$((pool2 / $(grep -c 'bytes copied by the library, [0-9]* empty reads of the completion channel, [1-9]' "$LOGS/ublk2.log")))
[ "$pin" -lt $((one + one / 2)) ] ||
    fail "direct I/O pinned $pin bytes: more than its buffers, with pools of $one bytes"
ok "direct I/O: no request pool registered on $conns connection(s), $((pin >> 20)) MiB pinned;" \
    "control (mr=static): $((pool2 >> 20)) MiB of pool registered, $((pin2 >> 20)) MiB pinned"
