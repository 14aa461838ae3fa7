#!/bin/bash
# test-shares: alone
# A holder of the image's lock learns that it was blocklisted with no I/O of its own (docs/rbd.md,
# "A target that lost the lock"): the lock thread's once-a-second check is refused by the OSDs
# too. One target serves an RBD image; a session writes one block through it, so that it takes
# the lock, and then stays connected and idle. The target's client instance is put on the OSDs'
# blocklist (`ceph osd blocklist add`, as another client's lock break does). With no request
# sent, the target must within 20 s count the lock `lost` and stop claiming it, then reopen its
# image as a new client instance without failing the export; the session's next write and read
# are served by that new instance. (test-rbd-lock-lost covers a holder that is writing.)
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"

require_rdma
require_ceph
requires_file "$BUILD/tests/rdmablk-session" "$BUILD/rdmablk-target"
ceph_up rbd img0 16M
write_rbd_target_conf "$T/a.conf" 10810
TARGET_NAME=a start_target "$T/a.conf"

hold_session rbd0 idle
session_do idle write 0 4096 1 || fail "the first write failed"
rbd_lock_is "$T/a.conf" rbd0 owner || fail "the target does not hold the lock after a write"
holder=$(holder_addr)
[ -n "$holder" ] || fail "rbd lock ls names no holder"
ok "the target holds the lock as $holder; its session is idle"

step blocklist ceph_blocklist_add "$holder" 600 || fail "blocklisting $holder failed: $(tail -n 1 "$LOGS/blocklist.log")"
lost_count() { [ "$(rbd_lock_stat "$T/a.conf" rbd0 lost)" = 1 ]; }
wait_for 20 lost_count || fail "20 s after its blocklist, the idle holder counts no lost lock"
[ "$(rbd_lock_stat "$T/a.conf" rbd0 state)" != owner ] || fail "the target still claims the lock"
grep -q "refuse this client instance (blocklisted)" "$LOGS/a.log" ||
    fail "the target did not log why it lost the lock"
ok "with no I/O, the target saw its blocklist: it counts the lock lost and no longer claims it"

wait_for 60 export_reopened "$T/a.conf" rbd0 || fail "the target did not reopen its image as a new instance"
grep -q 'export failed' "$LOGS/a.log" && fail "the export entered the failed state"
session_do idle write 4096 4096 2 || fail "a write after the reopen failed"
session_do idle read 4096 4096 2 || fail "the write after the reopen does not read back"
session_do idle read 0 4096 1 || fail "the write before the blocklist does not read back"
exec 7>&-
wait_exit 30 "$SESSION_PID" || fail "the session did not close cleanly"
ok "the export reopened its image without failing; the new instance serves writes and reads"
