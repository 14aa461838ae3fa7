#!/bin/bash
# test-shares: none
# A failed fdatasync is never forgotten (fsyncgate): after a sync error on an export, every later
# write and FLUSH on it gets EIO, on every connection, even once the disk works again, until a
# reload reopens the export; `--stats` shows it as failed meanwhile.
#
# Two exports, each a device-mapper disk (a loop device behind a linear table that is swapped
# for dm-error and back), one with `durability = fua`, one with `always`, each with two open
# connections A and B (rdmablk-session):
#   fua:    A writes (plain ack, page cache); the disk fails; A writes again (plain ack); A's
#           FLUSH fails; the disk comes back; B's FLUSH and A's FLUSH must still fail, and so must
#           a write.
#   always: A writes (durable); the disk fails; A's write fails (its fdatasync); the disk comes
#           back; B's FLUSH and a write on B must still fail.
# Reads keep working. After SIGHUP, a new connection writes, flushes and reads back again.
# Before the fix the FLUSHes after the disk came back returned 0: the lost writes were
# reported once and then forgotten.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires dmsetup losetup
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io" "$BUILD/tests/rdmablk-session"
[ "$(id -u)" = 0 ] || skip "needs root (creates loop and dm devices)"
modprobe dm_mod 2>/dev/null || true
modprobe loop 2>/dev/null || true
dmsetup targets 2>/dev/null | grep -q '^error' || skip "no dm-error target"

MODES="fua always"
declare -A LOOP
cleanup_dm() {
    local m
    [ -n "${TARGET_PID:-}" ] && _kill_wait "$TARGET_PID"
    for m in $MODES; do
        dmsetup remove --retry "rdmablk-sync-$m-$$" 2>/dev/null
        [ -n "${LOOP[$m]:-}" ] && losetup -d "${LOOP[$m]}"
    done
    return 0
}
on_exit cleanup_dm

SECTORS=65536     # 32M
dm() { echo "rdmablk-sync-$1-$$"; }
# disk_state MODE good|bad: swap the table live. --nolockfs: no sync of the device's dirty pages
# on suspend, so they meet the failing table at the next fdatasync.
disk_state() {
    local table
    if [ "$2" = good ]; then
        table="0 $SECTORS linear ${LOOP[$1]} 0"
    else
        table="0 $SECTORS error"
    fi
    dmsetup suspend --nolockfs "$(dm "$1")" && dmsetup load "$(dm "$1")" --table "$table" &&
        dmsetup resume "$(dm "$1")" || fail "$1: cannot swap the table to $2"
}

target_conf "$T/target.conf" max-io=256K buffer-pool=4M admin-socket="$T/admin.sock" </dev/null
for m in $MODES; do
    truncate -s 32M "$T/$m.raw"
    LOOP[$m]=$(losetup -f --show "$T/$m.raw") || fail "losetup failed"
    dmsetup create "$(dm "$m")" --table "0 $SECTORS linear ${LOOP[$m]} 0" ||
        fail "dmsetup create failed"
    dmsetup mknodes "$(dm "$m")"    # no udev in the guest
    printf '[export %s]\npath = /dev/mapper/%s\ndurability = %s\n' "$m" "$(dm "$m")" "$m" \
        >>"$T/target.conf"
done
start_target "$T/target.conf"
ok "exports fua and always on dm disks over loop devices"

# Sessions: session NAME EXPORT starts one with its stdin and stdout on fifos; sess NAME CMD
# sends one command and prints its answer.
declare -A SIN SOUT
session() {
    local name=$1 exp=$2 in out
    mkfifo "$T/$name.in" "$T/$name.out"
    "$BUILD/tests/rdmablk-session" -H "$RDMABLK_ADDR" -e "$exp" -t 30 -k 0 \
        <"$T/$name.in" >"$T/$name.out" 2>>"$LOGS/$name.err" &
    track_pid $!
    exec {in}>"$T/$name.in"
    exec {out}<"$T/$name.out"
    SIN[$name]=$in
    SOUT[$name]=$out
    [ "$(sess "$name")" = ready ] || fail "session $name did not connect"
}
sess() {
    local name=$1 line
    shift
    [ $# -eq 0 ] || echo "$*" >&"${SIN[$name]}"
    read -t 120 -r line <&"${SOUT[$name]}" || fail "session $name: no answer to '$*'"
    echo "$name: $* -> $line" >>"$LOGS/sessions.log"
    echo "$line"
}
must_ok() {
    local got
    got=$(sess "$@")
    [ "$got" = ok ] || fail "$1: '${*:2}' failed: $got"
}
must_eio() {
    local got
    got=$(sess "$@")
    [ "$got" = "error $(printf '%s' 'Input/output error')" ] ||
        fail "$1: '${*:2}' should fail with EIO after the sync error, got: $got"
}
# export_field EXPORT KEY: one value of EXPORT's --stats object.
export_field() { export_stat "$T/target.conf" "$1" "$2" || fail "--stats failed"; }

for m in $MODES; do
    session "$m-a" "$m"
    session "$m-b" "$m"
done
ok "two connections on each export"

# ---- fua: plain writes sit in the page cache; their writeback fails.
must_ok fua-a write 0 65536 1
disk_state fua bad
must_ok fua-a write 65536 65536 2
must_eio fua-a flush
disk_state fua good
must_eio fua-b flush
must_eio fua-a flush
must_eio fua-b write 131072 65536 3
must_eio fua-b zero 196608 65536
must_ok fua-b read 0 65536 1
ok "fua: after one failed FLUSH, FLUSH on the other connection, a retried FLUSH and a write all get EIO"

# ---- always: the write's own fdatasync fails.
must_ok always-a write 0 65536 4
disk_state always bad
must_eio always-a write 65536 65536 5
disk_state always good
must_eio always-b flush
must_eio always-b write 131072 65536 6
must_eio always-a write 131072 65536 6
must_ok always-b read 0 65536 4
ok "always: after one failed write, FLUSH and writes on both connections get EIO"

for m in $MODES; do
    [ "$(export_field "$m" state)" = failed ] || fail "$m: --stats does not show it failed"
done
"$BUILD/rdmablk-target" --stats --human -c "$T/target.conf" >"$LOGS/stats-human.txt" ||
    fail "--stats --human failed"
grep -q 'export fua: export failed (fdatasync: Input/output error)' "$LOGS/stats-human.txt" ||
    fail "--stats --human does not say that fua failed"
grep -q 'export fua: fdatasync: Input/output error: export failed' "$LOGS/target.log" ||
    fail "the target did not log the failure"
ok "--stats: $(export_field fua failure) ($(export_field fua state))"

# ---- a reload reopens both; their old connections are drained.
kill -HUP "$TARGET_PID"
wait_for 60 stat_reaches "$T/target.conf" reloads applied 1 || fail "the reload was not applied"
for m in $MODES; do
    [ "$(export_field "$m" state)" = ok ] || fail "$m: still failed after the reload"
    step "$m-reopened-write" rdmablk_io -e "$m" write 0 1M 7 || fail "$m: write after the reload failed"
    step "$m-reopened-flush" rdmablk_io -e "$m" flush || fail "$m: FLUSH after the reload failed"
    step "$m-reopened-read" rdmablk_io -e "$m" read 0 1M 7 || fail "$m: read after the reload failed"
done
ok "after SIGHUP both exports take writes and FLUSH again"

for s in "${SIN[@]}"; do
    eval "exec $s>&-"
done
stop_target
ok "the target exits cleanly"
