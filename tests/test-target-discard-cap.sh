#!/bin/bash
# test-shares: none
# TRIM and WRITE_ZEROES are capped and run in pieces: one longer than
# RB_DISCARD_MAX (1 GiB) gets EINVAL; one of 1 GiB runs as 64 MiB pieces, one after the other;
# a connection never runs more of them at once than its slow-job slots (io-threads / 2), however
# many it sends. The zeroed range reads back as zeros, piece boundaries included, and the data
# just past it is untouched.
# Before the fix a 4 GiB - 512 TRIM was one fallocate/BLKDISCARD, accepted whole.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires cmp python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-hostile"

target_conf "$T/target.conf" max-io=256K buffer-pool=4M io-threads=4 \
    admin-socket="$T/admin.sock" <<EOF
[export big]
path = $T/big.img
size = 2G
EOF
start_target "$T/target.conf"

IO_TIMEOUT=300
IO_OPTS="-e big -t 120"
GiB=$((1 << 30))
MiB=$((1 << 20))
# Data on both sides of a piece boundary (64 MiB), and just past the 1 GiB range.
step w1 rdmablk_io write $((64 * MiB - 8192)) 16384 1 || fail "write failed"
step w2 rdmablk_io write $((GiB - 4096)) 8192 2 || fail "write failed"

jobs_before=$(($(backing_stat "$T/target.conf" uring_jobs) + $(backing_stat "$T/target.conf" worker_jobs)))
rc=0
timeout 600 "$BUILD/tests/rdmablk-hostile" -H "$RDMABLK_ADDR" -e big -q 16 -t 300 discard \
    >"$LOGS/discard.log" 2>&1 || rc=$?
cat "$LOGS/discard.log"
[ "$rc" = 0 ] || fail "rdmablk-hostile discard failed (exit $rc)"
jobs_after=$(($(backing_stat "$T/target.conf" uring_jobs) + $(backing_stat "$T/target.conf" worker_jobs)))
peak=$(backing_stat "$T/target.conf" discard_zero_peak_per_connection)
pieces=$((jobs_after - jobs_before))
# 15 WRITE_ZEROES and 1 TRIM of 1 GiB, 16 pieces each.
[ "$pieces" -ge $((16 * 16)) ] || fail "only $pieces backing jobs for 16 requests of 1 GiB"
[ "$peak" = 2 ] || fail "a connection ran $peak TRIM/WRITE_ZEROES at once, want io-threads / 2 = 2"
ok "1 GiB + 512 refused; 16 requests of 1 GiB ran as $pieces pieces, at most $peak at once"

# The zeroed range reads as zeros across the piece boundary; the data past it is intact.
rdmablk_io dump $((64 * MiB - 8192)) 16384 >"$T/zeros.bin" 2>"$LOGS/dump.log" || fail "dump failed"
cmp -s "$T/zeros.bin" <(head -c 16384 /dev/zero) || fail "the range across 64 MiB is not zero"
step past rdmablk_io read "$GiB" 4096 2 || fail "the data just past the 1 GiB range changed"
ok "zeros across the piece boundary; the block past the range kept its data"

stop_target
