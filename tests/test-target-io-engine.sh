#!/bin/bash
# test-shares: none
# Backing I/O runs on the engine `io-engine =` names, with the same results on either. One
# run per engine, each with a fresh target on a 16M file export, over real RDMA:
#  - io_uring (the default): READs, WRITEs (inline and RDMA READ), FUA writes, FLUSH and TRIM
#    of a regular file complete through the event loop's ring and none through a worker
#    thread, and group commit still batches the fdatasyncs. WRITE_ZEROES may take one worker
#    trip on a file system without FALLOC_FL_ZERO_RANGE (tmpfs).
#  - threads (what the target falls back to when io_uring is unavailable, forced here): every
#    job runs on a worker thread and none on io_uring.
# Checked with the `backing_io` counters of `rdmablk-target --stats`; every byte read is
# verified, and WRITE_ZEROES leaves zeros in the backing file.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires python3
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
IO_OPTS="-e disk0 -t 60"

# engine_start ENGINE [KEY=VALUE...]: a target ($TARGET_NAME = ENGINE, config $conf) with
# those [target] keys, serving $img, whose --stats names ENGINE as its engine.
engine_start() {
    local engine=$1 got
    shift
    TARGET_NAME=$engine
    conf=$T/$engine.conf
    img=$T/$engine.img
    target_conf "$conf" admin-socket="$T/$engine.sock" max-io=256K "$@" <<CONF
[export disk0]
path = $img
size = 16M
CONF
    start_target "$conf"
    got=$(backing_stat "$conf" engine)
    [ "$got" = "$engine" ] || fail "engine is $got, not $engine"
}

# zero_check: WRITE_ZEROES of 64 KiB at 4 MiB leaves zeros in the backing file.
zero_check() {
    step zero rdmablk_io zero 4194304 65536 || fail "$TARGET_NAME: zero failed"
    head -c 65536 /dev/zero >"$T/zeros"
    dd if="$img" of="$T/got" bs=65536 skip=64 count=1 status=none
    cmp "$T/zeros" "$T/got" || fail "$TARGET_NAME: WRITE_ZEROES left data behind"
}

# io_uring
engine_start io_uring
u0=$(backing_stat "$conf" uring_jobs)
io_every_op "$img"
ok "io_uring: writes, reads, FUA, FLUSH, trim and a stress run verified"
u1=$(backing_stat "$conf" uring_jobs)
w1=$(backing_stat "$conf" worker_jobs)
n=$((u1 - u0))
# 1 + 4 + 1 writes, their syncs (durability = always), 1 + 4 + 1 reads, trim, stress.
[ "$n" -ge 20 ] || fail "only $n backing jobs ran on io_uring"
[ "$w1" -eq 0 ] || fail "$w1 backing jobs ran on worker threads"
ok "io_uring: $n backing jobs ran on the ring, none on a worker thread"
zero_check
w2=$(backing_stat "$conf" worker_jobs)
[ "$w2" -le 1 ] || fail "WRITE_ZEROES took $w2 worker jobs"
ok "io_uring: WRITE_ZEROES by fallocate on the ring ($w2 worker trip for a file system without ZERO_RANGE)"
syncs=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["exports"][0]["group_commit"]["syncs"])' "$LOGS/stats.json")
covered=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["exports"][0]["group_commit"]["requests_covered"])' "$LOGS/stats.json")
[ "$syncs" -ge 1 ] && [ "$covered" -ge "$syncs" ] ||
    fail "group commit: $syncs fdatasync calls covered $covered requests"
ok "io_uring: group commit on the ring: $syncs fdatasync calls covered $covered requests"
stop_target 60

# threads
engine_start threads io-engine=threads io-threads=2
io_every_op "$img"
zero_check
ok "threads: writes, reads, FUA, FLUSH, zero, trim and a stress run verified"
u=$(backing_stat "$conf" uring_jobs)
w=$(backing_stat "$conf" worker_jobs)
[ "$u" -eq 0 ] || fail "$u backing jobs ran on io_uring with io-engine = threads"
[ "$w" -ge 10 ] || fail "only $w backing jobs ran on worker threads"
ok "threads: $w backing jobs ran on worker threads, none on io_uring"
stop_target 60
ok "both targets exit cleanly"
