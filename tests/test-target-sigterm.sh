#!/bin/bash
# test-shares: none
# SIGTERM with I/O in flight: the target stops accepting, finishes what it received, flushes
# and exits 0, removing its pidfile; every write that was acknowledged is in the backing file.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

img=$T/disk0.img
target_conf "$T/target.conf" max-io=256K <<EOF
[export disk0]
path = $img
size = 64M
durability = fua
EOF
start_target "$T/target.conf"

# Four writers, each on its own 8 MiB area, 128 KiB per write with FUA; a write is recorded
# as acknowledged only when rdmablk-io reported success.
for w in 0 1 2 3; do
    (
        i=0
        while :; do
            off=$((w * 8388608 + (i % 64) * 131072))
            seed=$((w * 100000 + i + 1))
            timeout 60 "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e disk0 -t 20 \
                write $off 131072 $seed --fua 2>/dev/null || exit 0
            echo "$off $seed" >>"$T/acked.$w"
            i=$((i + 1))
        done
    ) &
    track_pid $!
done
wait_for 120 sh -c "cat $T/acked.* 2>/dev/null | wc -l | awk '{ exit !(\$1 >= 8) }'" ||
    fail "writers made no progress"
stop_target
[ ! -e "$T/target.pid" ] || fail "pidfile left behind"
grep -q 'stopping' "$LOGS/target.log" || fail "no shutdown message"
ok "SIGTERM: exit 0, pidfile removed"
for p in $(jobs -p); do wait "$p" 2>/dev/null || true; done

n=0
for f in "$T"/acked.*; do
    # The last write of each offset wins.
    awk '{ last[$1] = $2 } END { for (o in last) print o, last[o] }' "$f" >"$f.last"
    while read -r off seed; do
        "$BUILD/tests/rdmablk-io" pattern "$off" 131072 "$seed" >"$T/want"
        dd if="$img" of="$T/got" bs=131072 skip=$((off / 131072)) count=1 status=none
        cmp -s "$T/want" "$T/got" || fail "acknowledged write at $off (seed $seed) is missing"
        n=$((n + 1))
    done <"$f.last"
done
ok "all $n acknowledged writes are in the backing file"
