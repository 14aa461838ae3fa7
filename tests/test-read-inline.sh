#!/bin/bash
# test-shares: none
# A READ of 4 KiB or less comes back in its reply (READ_INLINE): the initiator asks for it in
# HELLO, the target grants it and logs so, and sends the data in the reply SEND instead of an
# RDMA WRITE into a window. Through the library's pool path (no direct buffers): an aligned
# 4 KiB read and an unaligned 3000-byte one (widened to 512-byte blocks, the caller's part
# copied out) return the written pattern, and the client's stats count exactly their bytes as
# read inline; a 64 KiB read does not come inline and still verifies. The control: an
# initiator that does not ask (RDMABLK_TEST_NO_READ_INLINE=1, as initiators older than the
# flag) reads the same bytes, correctly, with nothing inline, and its connection is not
# granted inline reads.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

target_conf "$T/target.conf" <<EOF
[export disk0]
path = $T/disk0.img
size = 16M
EOF
start_target "$T/target.conf"

io() {
    local name=$1
    shift
    step "$name" timeout 120 "$BUILD/tests/rdmablk-io" -s -H "$RDMABLK_ADDR" -t 30 -e disk0 "$@"
}
# inline NAME: the client's inline_read_bytes in NAME.log.
inline() { sed -n 's/^stats: .* inline_read_bytes=\([0-9]*\).*/\1/p' "$LOGS/$1.log" | tail -n 1; }

io write write 0 1M 7 || fail "writing 1 MiB failed (write.log)"

io r4k read 4096 4096 7 || fail "an inline 4 KiB read failed or returned wrong data (r4k.log)"
[ "$(inline r4k)" = 4096 ] || fail "a 4 KiB read: $(inline r4k) bytes read inline, want 4096"
io r3000 read 1000 3000 7 ||
    fail "an unaligned 3000-byte read failed or returned wrong data (r3000.log)"
[ "$(inline r3000)" = 3000 ] ||
    fail "an unaligned 3000-byte read: $(inline r3000) bytes read inline, want 3000"
io r64k read 65536 65536 7 || fail "a 64 KiB read failed or returned wrong data (r64k.log)"
[ "$(inline r64k)" = 0 ] || fail "a 64 KiB read: $(inline r64k) bytes read inline, want 0"
n=$(grep -c 'connected to export disk0, .*, inline reads' "$LOGS/target.log")
[ "$n" -ge 3 ] || fail "the target logged $n connections granted inline reads, want 3 or more"
ok "4 KiB and unaligned 3000-byte reads came inline (4096 and 3000 bytes), 64 KiB did not; data verified"

RDMABLK_TEST_NO_READ_INLINE=1 io old read 4096 4096 7 ||
    fail "control: a 4 KiB read by an initiator that does not ask failed (old.log)"
[ "$(inline old)" = 0 ] || fail "control: $(inline old) bytes read inline by an initiator that did not ask"
last=$(grep 'connected to export disk0' "$LOGS/target.log" | tail -n 1)
case $last in
*"inline reads"*) fail "control: the target granted inline reads unasked: $last" ;;
esac
ok "control: an initiator that does not ask reads the same 4 KiB by RDMA WRITE, nothing inline"
