#!/bin/bash
# test-shares: ceph
# A write from an initiator that sends no ttl (one older than it; here rdmablk-io with the
# RDMABLK_TEST_NO_TTL hook) waits for the image's lock at most 60 s, then fails with EIO; that
# fails the export, which reopens its image by itself as a new client instance (docs/rbd.md,
# "Two targets, one image", rule 3). Target A holds the lock under a writer; the write goes to
# target B. Checked: it fails with EIO after at least 60 s, B says why, the write is not in the
# image, and B's export reopened (reopens 1, state ok again).
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"

DUR=$BUILD/tests/rdmablk-durable
IO=$BUILD/tests/rdmablk-io
require_ceph
require_rdma
requires_file "$IO" "$DUR" "$BUILD/rdmablk-target"

ceph_up rbd img0 16M
write_rbd_target_conf "$T/a.conf" 10824
write_rbd_target_conf "$T/b.conf" 10825
TARGET_NAME=a start_target "$T/a.conf"
TARGET_NAME=b start_target "$T/b.conf"

"$DUR" -H "$RDMABLK_ADDR" -p 10824 -e rbd0 -i 100 write 64 7 >"$T/acks" 2>"$LOGS/writer.log" &
track_pid $!
wait_for 60 grep -q '^ACK ' "$T/acks" || fail "A acknowledged no write"
rbd_lock_is "$T/a.conf" rbd0 owner || fail "A does not hold the lock"

t0=$SECONDS
rc=0
step nottl env RDMABLK_TEST_NO_TTL=1 timeout 150 "$IO" -H "$RDMABLK_ADDR" -p 10825 -e rbd0 -t 120 \
    write 2097152 65536 22 || rc=$?
took=$((SECONDS - t0))
[ "$rc" = 1 ] || fail "the ttl-less write through B: exit $rc, expected 1 (an error)"
grep -q 'Input/output error (EIO)' "$LOGS/nottl.log" || fail "the ttl-less write did not fail with EIO"
[ "$took" -ge 60 ] || fail "the ttl-less write failed after ${took}s, before the 60 s lock wait"
grep -q 'resending it' "$LOGS/nottl.log" && fail "the initiator was told to resend (it sent a ttl)"
grep -q 'export rbd0: no exclusive lock after 60 s: failing the writes that waited for it with EIO' \
    "$LOGS/b.log" || fail "B does not say why the write failed"
ok "a write with no ttl waited for A's lock and failed with EIO after ${took}s"

step export rbd_cmd export rbd/img0 "$T/img" || fail "rbd export failed"
if cmp <(dd if="$T/img" bs=64K skip=32 count=1 2>/dev/null) <("$IO" pattern 2097152 65536 22) \
    >/dev/null 2>&1; then
    fail "the failed write is in the image"
fi
wait_for 120 export_reopened "$T/b.conf" rbd0 || fail "B's export did not reopen after the failed write"
[ "$(export_stat "$T/b.conf" rbd0 reopens)" = 1 ] || fail "B's export reopened more than once"
ok "the write is not in the image; B's export failed and reopened its image by itself"
