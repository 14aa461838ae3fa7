#!/bin/bash
# test-shares: sysuser
# The unit's sandbox lets the target do what it does: traced with strace while it starts with
# the unit's identity, serves reads, writes, FUA writes, flushes, trims, zeroes and a stress run
# over RDMA, answers --stats, reloads and stops, every system call it makes is one the unit's
# SystemCallFilter= admits, every socket family one RestrictAddressFamilies= admits, every
# device node one DeviceAllow= admits, and it reads no /proc file outside its own process
# directories (ProcSubset=pid). Otherwise the unit would kill or cripple it in production,
# which no test without systemd as PID 1 could see. (Traced on rxe; a hardware provider
# library may make calls rxe's does not.)
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires strace setpriv systemd-sysusers systemd-analyze getent userdel
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

unit_user
conf=$T/target.conf
trace=$T/strace.out
has_export() { rdmablk_io -e "$1" info; }
unit_conf "$conf" "disk0=$T/disk0.img"
# shellcheck disable=SC2086  # UNIT_SETPRIV is a list of words
strace -f -qq -o "$trace" $UNIT_SETPRIV "$BUILD/rdmablk-target" -c "$conf" -f -p "$T/target.pid" \
    >"$LOGS/target.log" 2>&1 &
strace_pid=$!
track_pid "$strace_pid"
wait_for_file "$T/target.pid" 120 || fail "the traced target did not start (target.log)"
TARGET_PID=$(cat "$T/target.pid")
track_pid "$TARGET_PID"

step stress rdmablk_io -e disk0 -q 8 stress 3 2 || fail "stress failed"
step write rdmablk_io -e disk0 write 0 1048576 3 || fail "write failed"
step write-fua rdmablk_io -e disk0 write 1048576 65536 4 --fua || fail "FUA write failed"
step flush rdmablk_io -e disk0 flush || fail "flush failed"
step read rdmablk_io -e disk0 read 0 1048576 3 || fail "read-back failed"
step trim rdmablk_io -e disk0 trim 2097152 1048576 || fail "trim failed"
step zero rdmablk_io -e disk0 zero 4194304 1048576 || fail "write-zeroes failed"
step stats target_stat "$conf" connections accepted || fail "--stats failed"
unit_conf "$conf" "disk0=$T/disk0.img" "disk1=$T/disk1.img"
kill -HUP "$TARGET_PID"
wait_for 60 has_export disk1 || fail "reload did not add disk1"
step write1 rdmablk_io -e disk1 write 0 65536 5 || fail "write to disk1 failed"
kill -TERM "$TARGET_PID"
rc=0
wait_exit 120 "$strace_pid" || rc=$?
[ "$rc" = 0 ] || fail "the traced target exited with $rc on SIGTERM (target.log)"
ok "traced: started as $UNIT_USER, served every request type over RDMA, reloaded, stopped"

# The target's part of the trace: everything after setpriv exec'd it.
awk -v bin="$BUILD/rdmablk-target" 'mine; !mine && index($0, "execve(\"" bin "\"") { mine = 1 }' \
    "$trace" >"$T/target.trace"
[ -s "$T/target.trace" ] || fail "no execve of $BUILD/rdmablk-target in the trace"

# expand NAME: the system calls a SystemCallFilter= entry names (groups recursively).
expand() {
    case $1 in
    @*) systemd-analyze syscall-filter --no-pager "$1" |
        awk 'NR > 1 && $1 !~ /^#/ && NF { print $1 }' |
        while read -r x; do expand "$x"; done ;;
    *) echo "$1" ;;
    esac
}
: >"$T/allow"
: >"$T/deny"
while read -r -a words; do
    list=$T/allow
    case ${words[0]} in ~*) list=$T/deny; words[0]=${words[0]#\~} ;; esac
    for w in "${words[@]}"; do expand "$w" >>"$list"; done
done < <(unit_key SystemCallFilter)
[ -s "$T/allow" ] || fail "the unit has no allow-list SystemCallFilter="
sort -u "$T/allow" | comm -23 - <(sort -u "$T/deny") >"$T/allowed"
sed -n 's/^[0-9]\+ \+\([a-z0-9_]\+\)(.*/\1/p' "$T/target.trace" | sort -u >"$LOGS/syscalls.txt"
comm -23 "$LOGS/syscalls.txt" "$T/allowed" >"$LOGS/refused.txt"
[ ! -s "$LOGS/refused.txt" ] ||
    fail "SystemCallFilter= refuses what the target calls: $(paste -sd' ' "$LOGS/refused.txt")"
ok "$(wc -l <"$LOGS/syscalls.txt") distinct system calls, all in the unit's SystemCallFilter="

families=" $(unit_key RestrictAddressFamilies) "
sed -n 's/^[0-9]\+ \+socket(\(AF_[A-Z0-9]\+\),.*/\1/p' "$T/target.trace" | sort -u \
    >"$LOGS/families.txt"
while read -r f; do
    case $families in *" $f "*) ;; *) fail "RestrictAddressFamilies= refuses $f" ;; esac
done <"$LOGS/families.txt"
ok "socket families $(paste -sd' ' "$LOGS/families.txt"), all in RestrictAddressFamilies="

# Paths it opened: device nodes against DeviceAllow= (and DevicePolicy=closed's own list),
# /proc against ProcSubset=pid.
sed -n 's/^[0-9]\+ \+open\(at\)\?(\(AT_FDCWD, \)\?"\([^"]*\)".*= [0-9]\+$/\3/p' \
    "$T/target.trace" | sort -u >"$LOGS/opened.txt"
while read -r path; do
    case $path in
    /dev/infiniband/uverbs*)
        unit_key DeviceAllow | grep -qx 'char-infiniband_verbs rw' || fail "no DeviceAllow= for $path" ;;
    /dev/null | /dev/zero | /dev/full | /dev/random | /dev/urandom | /dev/tty | /dev/pts/ptmx) ;;
    /dev/*)
        unit_key DeviceAllow | grep -qx "$path rw" || fail "no DeviceAllow= for $path" ;;
    /proc/self/* | /proc/thread-self/* | "/proc/$TARGET_PID/"*) ;;
    /proc/filesystems)
        # libselinux's constructor (pulled in with librbd/librados) looks for selinuxfs there;
        # hidden by ProcSubset=pid, it finds none and stays off, which is what the unit wants.
        # Only that library may read it: the trace must show it loaded.
        grep -q 'libselinux.so' "$LOGS/opened.txt" ||
            fail "ProcSubset=pid hides /proc/filesystems, which the target reads (not libselinux)" ;;
    /proc/*)
        [[ $path =~ ^/proc/[0-9]+/ ]] || fail "ProcSubset=pid hides $path, which the target reads" ;;
    esac
done <"$LOGS/opened.txt"
ok "device nodes $(grep '^/dev/' "$LOGS/opened.txt" | paste -sd' '), all in DeviceAllow=; /proc: own pids only (and libselinux's /proc/filesystems)"
