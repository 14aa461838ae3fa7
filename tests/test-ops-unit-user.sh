#!/bin/bash
# test-shares: sysuser
# The target as target/rdmablk-target.service runs it (its User=, Group=, capabilities and
# NoNewPrivileges=, applied with setpriv): it serves verified I/O over RDMA as the user
# rdmablk with CAP_IPC_LOCK as its only capability, and that capability is what pins its
# 64 MiB pool under a 1 MiB locked-memory limit (without it the same start fails). A SIGHUP
# reload opens a new export as that user, and refuses, FILE:LINE, one the user cannot open.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires setpriv systemd-sysusers getent userdel
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

# $T becomes the user's: it holds the exports, the pidfile and the admin socket; the
# config stays root's, readable by all, as /etc/rdmablk/rdmablk.conf is.
unit_user
conf=$T/target.conf
has_export() { rdmablk_io -e "$1" info; }
unit_conf "$conf" "disk0=$T/disk0.img"

# Pinning 64 MiB needs more than this limit: only CAP_IPC_LOCK lets the target register it.
ulimit -l 1024
nocap="setpriv --reuid=$UNIT_USER --regid=$UNIT_USER --init-groups --inh-caps=-all"
nocap+=" --bounding-set=-all --no-new-privs"
rc=0
# shellcheck disable=SC2086  # a list of words
step nocap timeout 120 $nocap "$BUILD/rdmablk-target" -c "$conf" -f || rc=$?
[ "$rc" = 1 ] || fail "without CAP_IPC_LOCK the target did not fail to start (status $rc)"
# 64 buffers of 1 MiB, each with its 64-byte header area (target/io/pool.h).
grep -q 'pool: ibv_reg_mr of 67112960 bytes (check ulimit -l)' "$LOGS/nocap.log" ||
    fail "without CAP_IPC_LOCK: no clear error about the pool's registration (nocap.log)"
ok "as $UNIT_USER without CAP_IPC_LOCK, under ulimit -l 1024: refused to start, 'check ulimit -l'"

TARGET_WRAP=$UNIT_SETPRIV start_target "$conf"
status=/proc/$TARGET_PID/status
grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs):' "$status" >"$LOGS/status.txt"
uid=$(id -u "$UNIT_USER")
gid=$(id -g "$UNIT_USER")
grep -qP "^Uid:\t$uid\t$uid\t$uid\t$uid$" "$LOGS/status.txt" || fail "not running as $UNIT_USER"
grep -qP "^Gid:\t$gid\t$gid\t$gid\t$gid$" "$LOGS/status.txt" || fail "not in group $UNIT_USER"
# CAP_IPC_LOCK is bit 14: 0x4000, and nothing else in any set.
for set in CapEff CapPrm CapBnd CapAmb; do
    grep -qP "^$set:\t0000000000004000$" "$LOGS/status.txt" ||
        fail "$set is not CAP_IPC_LOCK alone (status.txt)"
done
grep -qP '^NoNewPrivs:\t1$' "$LOGS/status.txt" || fail "NoNewPrivs not set"
ok "target pid $TARGET_PID: uid $uid ($UNIT_USER), CapEff/CapPrm/CapBnd/CapAmb 0x4000 (CAP_IPC_LOCK), NoNewPrivs"

[ "$(stat -c %U "$T/disk0.img")" = "$UNIT_USER" ] || fail "disk0.img was not created by $UNIT_USER"
# stress writes and verifies all over the first 64 MiB: before the pattern that must last.
step stress rdmablk_io -e disk0 -q 8 stress 5 2 || fail "stress on disk0 failed"
step write rdmablk_io -e disk0 write 0 1048576 7 || fail "write to disk0 failed"
step read rdmablk_io -e disk0 read 0 1048576 7 || fail "read-back of disk0 failed"
step stats target_stat "$conf" connections accepted || fail "--stats (as root) failed"
ok "5 s of verified stress, then 1 MiB written and read back over RDMA; --stats answers root"

# A reload opens what it adds as the user: a file in the user's directory works, one
# in a directory only root may enter is refused with the config's FILE:LINE.
install -d -m 0700 "$T/rootonly"
unit_conf "$conf" "disk0=$T/disk0.img" "disk1=$T/disk1.img"
kill -HUP "$TARGET_PID"
wait_for 60 has_export disk1 || fail "reload did not add disk1"
[ "$(stat -c %U "$T/disk1.img")" = "$UNIT_USER" ] || fail "disk1.img was not created by $UNIT_USER"
step write1 rdmablk_io -e disk1 write 0 65536 9 || fail "write to disk1 failed"
step read1 rdmablk_io -e disk1 read 0 65536 9 || fail "read-back of disk1 failed"
step read0 rdmablk_io -e disk0 read 0 1048576 7 || fail "disk0 lost its data over the reload"
ok "SIGHUP: disk1 created and served as $UNIT_USER; disk0 kept its data"

unit_conf "$conf" "disk0=$T/disk0.img" "disk1=$T/disk1.img" "disk2=$T/rootonly/disk2.img"
kill -HUP "$TARGET_PID"
wait_for 60 grep -q 'reload: 1 error in' "$LOGS/target.log" || fail "reload of disk2 not refused"
grep -q "$conf:11: path: $T/rootonly/disk2.img: Permission denied" "$LOGS/target.log" ||
    fail "the refusal does not name FILE:LINE and the reason"
step read1-kept rdmablk_io -e disk1 read 0 65536 9 || fail "disk1 broken by the refused reload"
ok "SIGHUP: an export $UNIT_USER cannot open is refused, FILE:LINE, the running config kept"

stop_target
ok "target exits cleanly"
