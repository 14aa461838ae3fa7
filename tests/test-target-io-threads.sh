#!/bin/bash
# The worker-thread fallback for backing I/O (what the target uses when io_uring is
# unavailable), forced with `io-engine = threads`: READs, WRITEs, FUA, FLUSH, WRITE_ZEROES
# and TRIM work, every byte read is verified, and the `backing_io` counters of
# `rdmablk-target --stats` show that every job ran on a worker thread and none on io_uring.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

img=$T/disk0.img
sock=$T/admin.sock
cat >"$T/target.conf" <<CONF
[target]
listen = $RDMABLK_ADDR
admin-socket = $sock
max-io = 256K
io-engine = threads
threads = 2

[export disk0]
path = $img
size = 16M
CONF
start_target "$T/target.conf"
grep -q 'backing I/O: threads' "$LOGS/target.log" ||
    fail "the target did not say it uses worker threads"

io() { timeout 120 "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e disk0 -t 60 "$@"; }

engine=$(backing_stat "$T/target.conf" engine)
[ "$engine" = threads ] || fail "engine is $engine, not threads"

step write-inline io write 0 4096 1 || fail "inline write failed"
step write-rdma io write 65536 1048576 2 || fail "write failed"
step write-fua io write 2097152 65536 3 --fua || fail "FUA write failed"
step flush io flush || fail "flush failed"
step read-1 io read 0 4096 1 || fail "read back 1 failed"
step read-2 io read 65536 1048576 2 || fail "read back 2 failed"
step zero io zero 4194304 65536 || fail "zero failed"
step trim io trim 8388608 1048576 || fail "trim failed"
"$BUILD/tests/rdmablk-io" pattern 65536 1048576 2 >"$T/want"
dd if="$img" of="$T/got" bs=65536 skip=1 count=16 status=none
cmp "$T/want" "$T/got" || fail "the backing file does not hold the data written"
step stress io -q 16 stress 4 2 || fail "stress failed"
ok "writes, reads, FUA, FLUSH, zero, trim and a stress run verified"

u=$(backing_stat "$T/target.conf" uring_jobs)
w=$(backing_stat "$T/target.conf" worker_jobs)
[ "$u" -eq 0 ] || fail "$u backing jobs ran on io_uring with io-engine = threads"
[ "$w" -ge 10 ] || fail "only $w backing jobs ran on worker threads"
ok "$w backing jobs ran on worker threads, none on io_uring"

stop_target 60
ok "target exits cleanly"
