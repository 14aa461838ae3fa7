#!/bin/bash
# test-shares: ceph
# A target fenced off the image fails its initiator over; it does not end its I/O (docs/rbd.md,
# "A target that lost the lock"). Targets a and b serve one RBD image (hostname=A,B, every
# default). A client writes a block every 200 ms and reads each back (rdmablk-pair, one client)
# through a, which holds the image's lock. Then a's client instance is put on the OSDs'
# blocklist (`ceph osd blocklist add`, as another client's lock break does). Checked:
#  - a says so in --stats: the lock's `lost` count is 1, and it stops claiming the lock (its
#    state is no longer `owner`);
#  - the client was answered ESHUTDOWN ("fenced off the image"), resent its write, failed over
#    to b, and saw no error: every write and read of the client succeeded;
#  - b took the lock and serves the writes;
#  - a's export never entered the failed state (no "export failed" in its log, state "ok"), and
#    it reopened its image as a new client instance (`reopens` >= 1); `--human` shows both.
# The history test runs this fault among others; this test asserts each step of it.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"

PAIR=$BUILD/tests/rdmablk-pair
requires_file "$PAIR" "$BUILD/rdmablk-target"
start_two_rbd_targets

# 120 s of writes: the fault, the failover and a's reopen happen within them.
"$PAIR" 120 hostname="$RDMABLK_ADDR,$ADDR2" export=disk0 >"$LOGS/pair.log" 2>&1 &
pair=$!
track_pid "$pair"
wait_for 60 grep -qx ready "$LOGS/pair.log" || fail "rdmablk-pair did not connect"
wait_for 60 rbd_lock_is "$T/a.conf" disk0 owner || fail "a does not hold the image's lock"
holder=$(holder_addr)
[ -n "$holder" ] || fail "rbd lock ls names no holder"
ok "a holds the lock as $holder and serves the client"

step blocklist ceph_blocklist_add "$holder" 600 || fail "blocklisting $holder failed: $(tail -n 1 "$LOGS/blocklist.log")"
wait_for 90 grep -qx "1: failed over" "$LOGS/pair.log" || fail "the client did not fail over to b"
wait_for 60 rbd_lock_is "$T/b.conf" disk0 owner || fail "b did not take the lock"
grep -q 'fenced off the image (ESHUTDOWN): resending it' "$LOGS/pair.log" ||
    fail "the client was not answered ESHUTDOWN by the fenced a"
[ "$(rbd_lock_stat "$T/a.conf" disk0 lost)" = 1 ] || fail "a's --stats counts no lost lock"
[ "$(rbd_lock_stat "$T/a.conf" disk0 state)" != owner ] || fail "a still claims the lock"
ok "blocklisted: a counts the lock lost and no longer claims it; the client was answered" \
    "ESHUTDOWN and failed over to b, which holds the lock"

wait_for 90 export_reopened "$T/a.conf" disk0 ||
    fail "a did not reopen its image as a new instance, or its export is not ok"
grep -q 'export failed' "$LOGS/a.log" && fail "a's export entered the failed state"
"$BUILD/rdmablk-target" --stats --human -c "$T/a.conf" >"$LOGS/human.log" 2>&1 || fail "--human failed"
grep -q "^export disk0: exclusive lock .*, lost 1, " "$LOGS/human.log" ||
    fail "--human does not count the lost lock"
grep -q "^export disk0: reopened [1-9][0-9]* times after failures; last fenced instance " \
    "$LOGS/human.log" || fail "--human does not show the reopen"
# Its 120 s are an upper bound: everything to check has happened, so it ends now (SIGUSR1).
kill -USR1 "$pair" 2>/dev/null || true    # it may have ended already
wait_exit 150 "$pair" || fail "the client reported an error: $(grep error "$LOGS/pair.log")"
grep -qx done "$LOGS/pair.log" || fail "the client did not end its run: $(tail -n 2 "$LOGS/pair.log")"
ok "a reopened its image without failing the export; the client saw no error"
