#!/bin/bash
# test-shares: ceph
# A write that an RBD export acknowledged as durable is in Ceph after the target that
# acknowledged it was killed -9: rdmablk-durable writes generations of 4 KiB blocks and prints
# "ACK block gen" for each durable reply; the target is killed mid-run; `rbd export` of the
# image (Ceph's own copy, no target involved) must hold every acknowledged generation or a
# later one. Negative control: `rbd export` of a snapshot taken mid-run must lack some
# acknowledged generations, so the check can see a loss.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"

DUR=$BUILD/tests/rdmablk-durable
requires python3
require_ceph
require_rdma
requires_file "$DUR" "$BUILD/rdmablk-target"

BLOCKS=256
SEED=4242
ceph_up rbd img0 16M
write_rbd_target_conf "$T/target.conf" 10822 "durability = always"
start_target "$T/target.conf"
target=$TARGET_PID

"$DUR" -H "$RDMABLK_ADDR" -p 10822 -e rbd0 write "$BLOCKS" "$SEED" >"$T/acks" 2>"$LOGS/writer.log" &
writer=$!
track_pid "$writer"
acks() { [ "$(grep -c '^ACK ' "$T/acks")" -ge "$1" ]; }
wait_for 120 acks 300 || fail "fewer than 300 durable acknowledgements in 120 s"
step snap rbd_cmd snap create rbd/img0@mid || fail "rbd snap create failed"
n_snap=$(grep -c '^ACK ' "$T/acks")
wait_for 120 acks $((n_snap + 600)) || fail "the writer stalled after the snapshot"
kill -KILL "$target"
kill -KILL "$writer" 2>/dev/null || true
wait_exit 30 "$target" >/dev/null 2>&1 || true
wait_exit 30 "$writer" >/dev/null 2>&1 || true
grep '^ACK ' "$T/acks" | awk '{ g[$2] = $3 } END { for (b in g) print b, g[b] }' | sort -n >"$T/acked"
nacks=$(grep -c '^ACK ' "$T/acks")
ok "$nacks durable acknowledgements ($(wc -l <"$T/acked") blocks), then the target was killed -9"

# Read Ceph's copy without any target, then let rdmablk-durable check it from a file export.
step export rbd_cmd export rbd/img0 "$T/after.img" || fail "rbd export failed"
step export-snap rbd_cmd export rbd/img0@mid "$T/mid.img" || fail "rbd export of the snapshot failed"
target_conf "$T/check.conf" port=10823 admin-socket=none <<CONF
[export after]
path = $T/after.img
read-only = yes
[export mid]
path = $T/mid.img
read-only = yes
CONF
TARGET_NAME=check start_target "$T/check.conf"
lost_in() {
    step "check-$1" "$DUR" -H "$RDMABLK_ADDR" -p 10823 -e "$1" check "$BLOCKS" "$SEED" ||
        fail "rdmablk-durable check of $1 failed"
    grep -E '^(HAVE|TORN) ' "$LOGS/check-$1.log" >"$T/have-$1" || true
    ! grep -q '^TORN' "$T/have-$1" || fail "$1: torn blocks: $(grep -m3 '^TORN' "$T/have-$1")"
    awk 'NR == FNR { have[$2] = $3; next }
         !($1 in have) || have[$1] < $2 { print "block " $1 ": acknowledged generation " $2 ", found " (($1 in have) ? have[$1] : "nothing") }' \
        "$T/have-$1" "$T/acked"
}
lost=$(lost_in after)
[ -z "$lost" ] || fail "acknowledged-durable writes missing from rbd export: $(echo "$lost" | head -n 5)"
ok "rbd export after the kill holds all $(wc -l <"$T/acked") acknowledged blocks"
lost=$(lost_in mid)
n=$(printf '%s' "$lost" | grep -c . || true)
[ "$n" -gt 0 ] || fail "negative control: the mid-run snapshot lacks nothing, so the check is blind"
ok "negative control: the snapshot taken after $n_snap acknowledgements lacks $n acknowledged blocks"
