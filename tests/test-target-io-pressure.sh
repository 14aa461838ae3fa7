#!/bin/bash
# test-shares: none
# Many clients at once through a pool much smaller than their outstanding I/O: requests wait
# for buffers, they do not fail. Two stress clients (rdmablk-io stress, 16 deep, verified) on
# two exports and three writers on a third, through a buffer pool of two buffers; every write
# lands in its backing file (cmp), every connection is freed afterwards, and the target exits
# cleanly.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

img=$T/disk0.img
# buffer-pool: two buffers, back-pressure under any real load
target_conf "$T/target.conf" max-io=256K buffer-pool=512K io-threads=2 <<EOF
[export disk0]
path = $img
size = 64M

[export s1]
path = $T/s1.img
size = 8M

[export s2]
path = $T/s2.img
size = 8M
durability = fua
EOF
start_target "$T/target.conf" -v

IO_OPTS="-e disk0 -t 60"

# Several connections and exports at once, many requests in flight through two buffers.
pids=()
for e in s1 s2; do
    timeout 120 "$BUILD/tests/rdmablk-io" -H "$RDMABLK_ADDR" -e $e -t 60 -q 16 stress 8 4 \
        >"$LOGS/stress-$e.log" 2>&1 &
    pids+=($!)
done
for i in 1 2 3; do
    (
        for j in 1 2 3 4; do
            off=$(((16 + i * 4 + j) * 262144 * 2))
            rdmablk_io write $off 524288 $((i * 10 + j)) && rdmablk_io read $off 524288 $((i * 10 + j)) || exit 1
        done
    ) >"$LOGS/loop$i.log" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do
    wait "$p" || fail "a concurrent client failed (pid $p)"
done
for i in 1 2 3; do
    for j in 1 2 3 4; do
        backing_has "$img" $(((16 + i * 4 + j) * 262144 * 2)) 524288 $((i * 10 + j)) ||
            fail "concurrent write $i/$j not in the backing file"
    done
done
ok "two stress clients on two exports and three writers on one, through a two-buffer pool"

kill -0 "$TARGET_PID" || fail "target died"
wait_for 60 conns_are "$T/target.conf" 0 || fail "not every connection was freed"
accepted=$(target_stat "$T/target.conf" connections accepted) || fail "--stats failed"
ok "every connection freed ($accepted accepted)"

# A clean exit: status 0 (LeakSanitizer and ASan make it non-zero), nothing reported.
stop_target
ok "target exits cleanly"
