#!/bin/bash
# test-shares: none
# SIGHUP re-reads the config: an added export becomes available, a removed one disappears
# (its connected client is disconnected after its in-flight requests), a config with errors
# is logged and the old one kept, and a listen/port change is logged as needing a restart.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

conf=$T/target.conf
write_conf() {
    for e in "$@"; do
        printf '[export %s]\npath = %s/%s.img\nsize = 64M\n' "$e" "$T" "$e"
    done | target_conf "$conf" port="${PORT:-10810}"
}
has_export() { rdmablk_io -e "$1" info; }
lacks_export() { ! rdmablk_io -e "$1" info && grep -q ENOENT "$T/wait_for.out"; }
# --stats reads the admin socket's path from a config: $T/stats.conf stays readable while
# $conf holds errors. reloads KIND: the reloads of KIND (applied, rejected) counted so far.
reloads() { target_stat "$T/stats.conf" reloads "$1" || fail "--stats failed"; }
reloaded() { stat_reaches "$T/stats.conf" reloads "$1" $(($2 + 1)); }
gone() { [ "$(stats_get "$T/stats.conf" "#exports[name=$1]")" = 0 ]; }

write_conf disk0
cp "$conf" "$T/stats.conf"
start_target "$conf"
step disk0 rdmablk_io -e disk0 write 0 4096 1 || fail "disk0 does not work"

write_conf disk0 disk1
kill -HUP "$TARGET_PID"
wait_for 60 has_export disk1 || fail "added export disk1 never appeared"
step disk1 rdmablk_io -e disk1 write 0 4096 2 || fail "disk1 does not work"
step disk0-still rdmablk_io -e disk0 read 0 4096 1 || fail "disk0 broken by the reload"
ok "SIGHUP added export disk1; disk0 unaffected"

# A client busy on disk0 when disk0 is removed: disconnected after its in-flight requests.
rdmablk_io -e disk0 -q 8 stress 60 2 >"$LOGS/stress.log" 2>&1 &
stress=$!
track_pid "$stress"
wait_for 60 sessions_reach "$conf" disk0 3 ||
    fail "stress client did not connect"
write_conf disk1
kill -HUP "$TARGET_PID"
wait_for 60 gone disk0 ||
    fail "removed export disk0 was not released"
wait_for 60 lacks_export disk0 || fail "removed export disk0 still served"
rc=0
wait_exit 120 "$stress" || rc=$?
[ "$rc" != 0 ] || fail "stress on a removed export claims success"
step disk1-still rdmablk_io -e disk1 read 0 4096 2 || fail "disk1 broken by the reload"
ok "SIGHUP removed disk0 (busy client disconnected); disk1 unaffected"

printf '[target]\nlisten = %s\nbogus = 1\n' "$RDMABLK_ADDR" >"$conf"
n=$(reloads rejected)
kill -HUP "$TARGET_PID"
wait_for 60 reloaded rejected "$n" || fail "a bad config was not rejected"
grep -q "$conf:3: unknown key 'bogus'" "$LOGS/target.log" || fail "the error lacks FILE:LINE"
step disk1-kept rdmablk_io -e disk1 read 0 4096 2 || fail "bad reload broke disk1"
ok "bad config logged with FILE:LINE, old config kept"

PORT=10999 write_conf disk1
n=$(reloads applied)
kill -HUP "$TARGET_PID"
wait_for 60 reloaded applied "$n" || fail "the reload with a new port was not applied"
grep -q 'reload: port = 10999 needs a restart; keeping ' "$LOGS/target.log" ||
    fail "the port change was not refused by name: $(grep 'reload:' "$LOGS/target.log")"
step port-kept rdmablk_io -e disk1 read 0 4096 2 || fail "port change broke the listener"
ok "port change logged as needing a restart"

# A clean exit: status 0 (LeakSanitizer and ASan make it non-zero), nothing reported.
stop_target
ok "target exits cleanly"
