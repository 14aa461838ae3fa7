#!/bin/bash
# test-shares: ceph
# The Ceph cluster goes away under a running RBD export, and comes back. With verified I/O
# running (rdmablk-io stress, 2 threads, a 120 s request timeout so that the answer is the
# target's), the mon and the OSD are stopped (SIGSTOP). The requests in flight, and a read and
# a write sent during the outage on new connections, fail with EIO within the bound the target
# configures (rados_osd_op_timeout = 30 s, docs/rbd.md; 90 s allowed under TCG): nothing
# hangs, and the target's event loop keeps answering --stats meanwhile. The writes that timed
# out fail the export (state "failed", as a failed fdatasync does for a file), and while it is
# failed a write gets EIO at once. After SIGCONT the same target process reopens the image by
# itself, with no reload: a new client instance blocklists the old one (whose timed-out writes
# the OSDs could otherwise still apply) and takes over; --stats counts the reopen and names the
# fenced instance, which `ceph osd blocklist ls` lists; a write then succeeds, and it and the
# data written before the outage read back.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

require_ceph
require_rdma
requires python3
requires_file "$IO" "$BUILD/rdmablk-target"

# The bound for one request: rados_osd_op_timeout (30 s), plus slack for a loaded TCG host.
RBD_OSD_TIMEOUT=30
BOUND=90
# ceph_diag: what the OSD is doing, into ceph-diag.log (for a failure).
ceph_diag() {
    step ceph-diag timeout -k 5 30 ceph -c "$CEPH_CONF" daemon osd.0 dump_ops_in_flight || true
    step ceph-diag ceph_cmd -s || true
}
ceph_up rbd img0 80M
write_rbd_target_conf "$T/target.conf" 10826
start_target "$T/target.conf"
IOARGS=(-H "$RDMABLK_ADDR" -p 10826 -e rbd0 -t 120)
io() { "$IO" "${IOARGS[@]}" "$@"; }

# A pattern past the stress region (its first 64M), to read back after the outage.
step before io write 67108864 65536 5 || fail "a write before the outage failed"
"$IO" "${IOARGS[@]}" stress 600 2 65536 >"$LOGS/stress.log" 2>&1 &
stress=$!
track_pid "$stress"
writes_above() { [ "$(export_stat "$T/target.conf" rbd0 writes)" -gt "$1" ]; }
wait_for 120 writes_above 50 || fail "stress makes no progress"
ok "stress runs against rbd:rbd/img0"

ceph_pause
t0=$SECONDS
"$IO" "${IOARGS[@]}" read 67108864 65536 5 >"$LOGS/outage-read.log" 2>&1 &
reader=$!
track_pid "$reader"
# A write in flight for certain: stress's two threads may both be reading when the cluster stops.
"$IO" "${IOARGS[@]}" write 69206016 65536 7 >"$LOGS/outage-write.log" 2>&1 &
writer=$!
track_pid "$writer"
rc=0
wait_exit $((BOUND + 30)) "$stress" || rc=$?
took=$((SECONDS - t0))
[ "$rc" != 124 ] || fail "stress still waits ${took}s into the outage: a request hangs"
[ "$rc" != 0 ] || fail "stress succeeded through the outage"
grep -q 'Input/output error (EIO)' "$LOGS/stress.log" ||
    fail "stress failed, but not with EIO: $(tail -n 3 "$LOGS/stress.log")"
[ "$took" -le "$BOUND" ] || fail "the requests in flight failed only after ${took}s"
# eio_within PID LOG WHAT: PID (a request sent during the outage) ended with EIO within
# BOUND s of the outage's start; sets took_io to when.
eio_within() {
    local rc=0
    wait_exit $((BOUND + 30 - (SECONDS - t0))) "$1" || rc=$?
    took_io=$((SECONDS - t0))
    [ "$rc" != 124 ] || fail "$3 sent during the outage still waits after ${took_io}s"
    grep -q 'Input/output error (EIO)' "$2" ||
        fail "$3 during the outage did not fail with EIO: $(cat "$2")"
    [ "$took_io" -le "$BOUND" ] || fail "$3 during the outage failed only after ${took_io}s"
}
eio_within "$reader" "$LOGS/outage-read.log" "a read"
took_read=$took_io
eio_within "$writer" "$LOGS/outage-write.log" "a write"
took_write=$took_io
# The event loop never waited for the cluster: --stats answers while it is still away.
state=$(export_stat "$T/target.conf" rbd0 state) || fail "--stats did not answer during the outage"
[ "$state" = failed ] || fail "the export is '$state' after its writes timed out, expected failed"
errors=$(export_stat "$T/target.conf" rbd0 errors)
[ "$errors" -ge 2 ] || fail "--stats counts $errors errors on rbd0, expected the failed requests"
ok "cluster stopped: in-flight requests got EIO after ${took}s, a new read after ${took_read}s, a new write after ${took_write}s; --stats answers: rbd0 failed, $errors errors"

# The failed export refuses writes at once, without waiting for the cluster.
t3=$SECONDS
! step refused-write io write 68157440 65536 6 || fail "a write to the failed export succeeded"
grep -q 'Input/output error (EIO)' "$LOGS/refused-write.log" || fail "the failed export's write: no EIO"
[ $((SECONDS - t3)) -lt "$RBD_OSD_TIMEOUT" ] ||
    fail "the failed export's write waited $((SECONDS - t3))s for the cluster"
ok "the failed export answers a write with EIO at once while the cluster is away"

ceph_resume
t1=$SECONDS
# The same target process reopens the image by itself: no reload, no restart.
state_ok() { [ "$(export_stat "$T/target.conf" rbd0 state)" = ok ]; }
wait_for 120 state_ok || { ceph_diag; fail "the export is not ok $((SECONDS - t1))s after SIGCONT"; }
reopens=$(export_stat "$T/target.conf" rbd0 reopens)
[ "$reopens" = 1 ] || fail "--stats counts $reopens reopens of rbd0, expected 1"
fenced=$(export_stat "$T/target.conf" rbd0 fenced)
[ -n "$fenced" ] || fail "--stats names no fenced client instance"
ok "cluster back: rbd0 reopened itself after $((SECONDS - t1))s; old instance $fenced fenced"
# The old instance is on the cluster's blocklist (IP:PORT/NONCE of any of its entries).
ceph_mon '{"prefix": "osd blocklist ls"}' >"$LOGS/blocklist.txt" 2>&1 || fail "listing the blocklist failed: $(tail -n 1 "$LOGS/blocklist.txt")"
python3 - "$fenced" "$LOGS/blocklist.txt" <<'PY' || fail "the fenced instance $fenced is not on the blocklist: $(cat "$LOGS/blocklist.txt")"
import re, sys
fenced, listed = sys.argv[1], open(sys.argv[2]).read()
addrs = re.findall(r'(?:v[12]:|any:)?([0-9.]+:[0-9]+/[0-9]+)', fenced)
sys.exit(0 if addrs and any(a in listed for a in addrs) else 1)
PY
ok "the old client instance is on the cluster's blocklist"
step after io write 68157440 65536 6 || { ceph_diag; fail "a write after the reopen failed"; }
step after-read io read 67108864 65536 5 || fail "the data written before the outage does not read back"
step after-read2 io read 68157440 65536 6 || fail "the write after the reopen does not read back"
ok "the same target process: a write after the reopen succeeds, both patterns read back"
stop_target
ok "the target exits cleanly on SIGTERM with the reopened image"
