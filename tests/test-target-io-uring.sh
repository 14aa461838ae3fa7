#!/bin/bash
# The target runs its backing I/O on the event loop's io_uring: READs, WRITEs (inline and
# RDMA READ), FUA writes, FLUSH and TRIM of a regular file all complete through the ring and
# none through a worker thread, and group commit still batches the fdatasyncs. WRITE_ZEROES
# may take one worker trip on a file system without FALLOC_FL_ZERO_RANGE (tmpfs).
# Checked with the `backing_io` counters of `rdmablk-target --stats` over real RDMA; every
# byte read is verified, and the backing file holds what was written.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

img=$T/disk0.img
sock=$T/admin.sock
target_conf "$T/target.conf" admin-socket="$sock" max-io=256K <<CONF
[export disk0]
path = $img
size = 16M
CONF
start_target "$T/target.conf"

IO_OPTS="-e disk0 -t 60"

engine=$(backing_stat "$T/target.conf" engine)
[ "$engine" = io_uring ] || fail "engine is $engine, not io_uring"
u0=$(backing_stat "$T/target.conf" uring_jobs)

io_every_op "$img"
ok "writes, reads, FUA, FLUSH, trim and a stress run verified"

u1=$(backing_stat "$T/target.conf" uring_jobs)
w1=$(backing_stat "$T/target.conf" worker_jobs)
n=$((u1 - u0))
# 1 + 4 + 1 writes, their syncs (durability = always), 1 + 4 + 1 reads, trim, stress.
[ "$n" -ge 20 ] || fail "only $n backing jobs ran on io_uring"
[ "$w1" -eq 0 ] || fail "$w1 backing jobs ran on worker threads"
ok "$n backing jobs ran on io_uring, none on a worker thread"

step zero rdmablk_io zero 4194304 65536 || fail "zero failed"
head -c 65536 /dev/zero >"$T/zeros"
dd if="$img" of="$T/got" bs=65536 skip=64 count=1 status=none
cmp "$T/zeros" "$T/got" || fail "WRITE_ZEROES left data behind"
w2=$(backing_stat "$T/target.conf" worker_jobs)
[ "$w2" -le 1 ] || fail "WRITE_ZEROES took $w2 worker jobs"
ok "WRITE_ZEROES: fallocate on the ring ($w2 worker trip for a file system without ZERO_RANGE)"

syncs=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["exports"][0]["group_commit"]["syncs"])' "$LOGS/stats.json")
covered=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["exports"][0]["group_commit"]["requests_covered"])' "$LOGS/stats.json")
[ "$syncs" -ge 1 ] && [ "$covered" -ge "$syncs" ] ||
    fail "group commit: $syncs fdatasync calls covered $covered requests"
ok "group commit on the ring: $syncs fdatasync calls covered $covered requests"

stop_target 60
ok "target exits cleanly"
