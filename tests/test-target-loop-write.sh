#!/bin/bash
# test-shares: alone
# Small WRITEs (those that travel inline in their request) go into the page cache on the
# target's event loop with one pwrite, with no io_uring or worker trip, while the page cache
# is far from dirty throttling (target/io/pagecache.h); larger ones still go to the ioq. Checked
# with the `writes_cached` counter of `rdmablk-target --stats`: of 16 inline writes some (all,
# on a quiet machine) count, a 64 KiB write (fetched with an RDMA READ) counts none, every byte
# reads back, and the same holds with durability = always (each write then also waits for its
# fdatasync).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

sock=$T/admin.sock
durability_exports 4M | target_conf "$T/target.conf" admin-socket="$sock"
start_target "$T/target.conf"

cached() { export_stat "$T/target.conf" "$1" writes_cached || fail "--stats failed"; }

for e in fua always; do
    IO_OPTS="-t 60 -e $e"
    for i in $(seq 0 15); do
        step "$e-small-$i" rdmablk_io write $((i * 8192)) 4096 $((i + 1)) || fail "$e: 4 KiB write $i failed"
    done
    # Not necessarily all 16: a loop write that took over 10 ms (preempted, on a loaded
    # emulated guest) sends the writes of the next second to the ioq.
    n=$(cached "$e")
    [ "$n" -ge 1 ] || fail "$e: none of 16 inline 4 KiB writes was written on the event loop"
    step "$e-large" rdmablk_io write 1048576 65536 99 || fail "$e: 64 KiB write failed"
    m=$(cached "$e")
    [ "$m" = "$n" ] || fail "$e: the 64 KiB write counted as an event-loop write ($n, then $m)"
    for i in $(seq 0 15); do
        step "$e-read-$i" rdmablk_io read $((i * 8192)) 4096 $((i + 1)) ||
            fail "$e: 4 KiB write $i does not read back"
    done
    step "$e-read-large" rdmablk_io read 1048576 65536 99 || fail "$e: the 64 KiB write does not read back"
    ok "$e: $n of 16 inline writes on the event loop, the 64 KiB one through the ioq; all read back"
done
stop_target
ok "target exits cleanly"
