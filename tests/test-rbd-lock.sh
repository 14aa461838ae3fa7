#!/bin/bash
# test-shares: ceph
# Two targets, one image: only the target holding the image's exclusive lock writes it.
# Target A serves a writer; a write sent to target B meanwhile is not in the image (rbd export)
# while A lives; once A is killed -9, B takes the lock over (librbd breaks the dead holder's
# lock when its watch lapsed, 10 s in the test cluster) and the same write lands; while it
# waits, its ttl passes, B answers ETIMEDOUT having written nothing, and the initiator resends
# it. B serves a read and a FLUSH without the lock, and never breaks the lock of the live A;
# after the takeover A's instance is on the OSDs' blocklist. Control: while A is idle (no connection, lock released), a write through B lands at once,
# so the check that B's data is absent can see it when it is there. --stats shows each side's lock state (owner,
# waiting, none) and counts the takeover.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

DUR=$BUILD/tests/rdmablk-durable
require_ceph
require_rdma
requires_file "$IO" "$DUR" "$BUILD/rdmablk-target"

ceph_up rbd img0 16M
write_rbd_target_conf "$T/a.conf" 10824
write_rbd_target_conf "$T/b.conf" 10825
TARGET_NAME=a start_target "$T/a.conf"
pid_a=$TARGET_PID
TARGET_NAME=b start_target "$T/b.conf"

# in_image OFF LEN SEED NAME (bytes, multiples of 64 KiB): the image, read by rbd itself
# (step export-NAME), holds that pattern there.
in_image() {
    step "export-$4" rbd_cmd export rbd/img0 "$T/img-$4" || fail "rbd export failed (export-$4.log)"
    cmp <(dd if="$T/img-$4" bs=64K skip=$(($1 / 65536)) count=$(($2 / 65536)) 2>/dev/null) \
        <("$IO" pattern "$1" "$2" "$3") >>"$LOGS/export-$4.log" 2>&1
}

# Control: nobody holds the lock; B takes it for its write and gives it back when idle.
step b-idle timeout 60 "$IO" -H "$RDMABLK_ADDR" -p 10825 -e rbd0 -t 30 write 1048576 65536 11 ||
    fail "a write through B with A idle failed"
in_image 1048576 65536 11 control || fail "control: B's write is not in the image"
wait_for 60 grep -q 'released the image.s exclusive lock' "$LOGS/b.log" ||
    fail "B did not release the lock when its connection closed"
rbd_lock_is "$T/b.conf" rbd0 none || fail "B's --stats: $(cat "$T/wait_for.out" 2>/dev/null)"
[ "$(rbd_lock_stat "$T/b.conf" rbd0 acquired)/$(rbd_lock_stat "$T/b.conf" rbd0 takeovers)" = 1/0 ] ||
    fail "B's --stats: lock acquired/takeovers not 1/0 after the control"
ok "control: with A idle, B's write landed and B released the lock (--stats: none, acquired 1)"

# A becomes the writer and holds the lock while its writer runs.
"$DUR" -H "$RDMABLK_ADDR" -p 10824 -e rbd0 -i 100 write 64 7 >"$T/acks" 2>"$LOGS/writer.log" &
writer=$!
track_pid "$writer"
wait_for 60 grep -q '^ACK ' "$T/acks" || fail "A acknowledged no write"
grep -q 'holds the image.s exclusive lock' "$LOGS/a.log" || fail "A does not say it holds the lock"
rbd_lock_is "$T/a.conf" rbd0 owner || fail "A's --stats does not show it as the lock's owner"
# Only writes need the lock. A read through B is served while A holds it, and so is a FLUSH:
# B has nothing of its own on the image, so it answers at once (a FLUSH that waited for the
# lock would reach its 30 s timeout, since A holds it as long as its writer runs), and B still
# does not take the lock.
step b-read timeout 60 "$IO" -H "$RDMABLK_ADDR" -p 10825 -e rbd0 -t 30 read 1048576 65536 11 ||
    fail "a read through B failed while A held the lock"
step b-flush timeout 60 "$IO" -H "$RDMABLK_ADDR" -p 10825 -e rbd0 -t 30 flush ||
    fail "a FLUSH through B failed while A held the lock"
rbd_lock_is "$T/b.conf" rbd0 none || fail "B's read or FLUSH changed its lock state"
rbd_lock_is "$T/a.conf" rbd0 owner || fail "A lost the lock to B's read or FLUSH"
ok "while A holds the lock, B serves a read and answers a FLUSH without taking it"

"$IO" -H "$RDMABLK_ADDR" -p 10825 -e rbd0 -t 120 write 2097152 65536 22 >"$LOGS/b-write.log" 2>&1 &
bwrite=$!
track_pid "$bwrite"
wait_for 60 grep -q 'rbd_lock_acquire: .*writes wait for the lock' "$LOGS/b.log" ||
    fail "B did not report that another target holds the lock"
! in_image 2097152 65536 22 held || fail "B wrote the image while A held the lock"
_gone "$bwrite" && fail "B's write finished while A held the lock: $(cat "$LOGS/b-write.log")"
rbd_lock_is "$T/b.conf" rbd0 waiting || fail "B's --stats does not show it waiting for the lock"
ok "while A writes, B's write waits for the lock (--stats: A owner, B waiting) and is not in the image"
# Its ttl (5 s with a 120 s timeout, RB_TTL_MAX_S): B answers ETIMEDOUT having done nothing,
# and the initiator sends it again, to wait once more (docs/rbd.md).
wait_for 60 grep -q 'not started within its ttl of 5 s' "$LOGS/b.log" ||
    fail "B did not answer the waiting write when its ttl passed"
wait_for 30 grep -q 'not started within its ttl.*resending it' "$LOGS/b-write.log" ||
    fail "the initiator did not resend the write B answered ETIMEDOUT"
! in_image 2097152 65536 22 ttl || fail "B wrote the image after the write's ttl passed"
ok "the waiting write's ttl passed: B answered ETIMEDOUT, the initiator resent it, nothing landed"
# A answers (it is alive): B, whose write waited past its ttl, never broke A's lock.
[ "$(rbd_lock_stat "$T/b.conf" rbd0 breaks)" = 0 ] || fail "B broke the lock of A, which is alive"
holder=$(holder_addr)
[ -n "$holder" ] || fail "rbd lock ls names no holder while A writes"

t0=$SECONDS
kill -KILL "$pid_a"
wait_exit 30 "$pid_a" >/dev/null 2>&1 || true
rc=0
wait_exit 90 "$bwrite" || rc=$?
[ "$rc" = 0 ] || fail "B's write did not succeed after A was killed (exit $rc): $(cat "$LOGS/b-write.log")"
took=$((SECONDS - t0))
in_image 2097152 65536 22 taken || fail "B's write reported success but is not in the image"
grep -q 'holds the image.s exclusive lock, taken over from' "$LOGS/b.log" ||
    fail "B does not say it took the lock over"
[ "$(rbd_lock_stat "$T/b.conf" rbd0 takeovers)" = 1 ] || fail "B's --stats counts no lock takeover"
[ "$(rbd_lock_stat "$T/b.conf" rbd0 acquired)" = 2 ] || fail "B's --stats: lock not acquired twice"
ok "A killed -9: B took the lock over (--stats: takeovers 1) and its write landed ${took}s later"
# The takeover fenced the dead holder: A's instance is on the OSDs' blocklist, so nothing it
# had in flight can land.
wait_for 180 on_blocklist "$holder" || fail "A ($holder) is not on the OSDs' blocklist after the takeover"
ok "A's instance $holder is on the OSDs' blocklist"
