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
target_conf "$T/target.conf" admin-socket="$sock" max-io=256K io-engine=threads io-threads=2 <<CONF
[export disk0]
path = $img
size = 16M
CONF
start_target "$T/target.conf"

IO_OPTS="-e disk0 -t 60"

engine=$(backing_stat "$T/target.conf" engine)
[ "$engine" = threads ] || fail "engine is $engine, not threads"

io_every_op "$img"
step zero rdmablk_io zero 4194304 65536 || fail "zero failed"
ok "writes, reads, FUA, FLUSH, zero, trim and a stress run verified"

u=$(backing_stat "$T/target.conf" uring_jobs)
w=$(backing_stat "$T/target.conf" worker_jobs)
[ "$u" -eq 0 ] || fail "$u backing jobs ran on io_uring with io-engine = threads"
[ "$w" -ge 10 ] || fail "only $w backing jobs ran on worker threads"
ok "$w backing jobs ran on worker threads, none on io_uring"

stop_target 60
ok "target exits cleanly"
