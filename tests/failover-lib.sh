# Shared by the failover tests: a second address on the guest's netdev and two targets on
# $RDMABLK_ADDR and $ADDR2 that export the same backing file, $T/disk0.img, as disk0 with
# `shared = yes` (one host, one page cache: a shared backend for the purpose of the test).
# Sourced after lib.sh. start_two_targets sets PID_A and PID_B; the configs are $T/a.conf
# and $T/b.conf (for target_stat/conns_are), the logs a.log and b.log.
# shellcheck shell=bash
ADDR2=${RDMABLK_ADDR2:-10.55.0.2}
NETDEV=${RDMABLK_NETDEV:-d0}
# The block sizes of the fio tests' job through nbdkit (and of a --verify_only replay of it).
FAILOVER_BSSPLIT=512/10:4k/40:64k/30:256k/10:1m/10

# add_second_address: put $ADDR2 on $NETDEV (removed at exit) and wait until the RDMA device
# has a GID for it, i.e. RDMA CM can bind and reach it.
add_second_address() {
    local gid
    [ "$(id -u)" = 0 ] || skip "needs root (adds an address to $NETDEV)"
    [ "${RDMABLK_IN_GUEST:-0}" = 1 ] || skip "adds $ADDR2 to $NETDEV: only in the guest"
    ip addr add "$ADDR2/24" dev "$NETDEV" || fail "cannot add $ADDR2 to $NETDEV"
    on_exit ip addr del "$ADDR2/24" dev "$NETDEV"
    gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$ADDR2" | tr . ' '))
    wait_for 30 grep -qx "$gid" /sys/class/infiniband/*/ports/1/gids/* ||
        fail "no RDMA GID for $ADDR2"
}

# write_shared_conf NAME ADDR [IMG]: a target config on ADDR exporting IMG (default
# $SHARED_PATH, else $T/disk0.img) as disk0, 64M, shared, with its own admin socket;
# SHARED_EXTRA (lines) goes into the export section (an RBD export's ceph-conf).
write_shared_conf() {
    target_conf "$T/$1.conf" listen="$2" port=10810 queue-depth=64 max-io=1M \
        admin-socket="$T/$1.sock" stats=yes <<CONF
[export disk0]
path = ${3:-${SHARED_PATH:-$T/disk0.img}}
size = 64M
shared = yes
${SHARED_EXTRA:-}
CONF
}

# failover_fio_job FIO-ARGS...: the failover tests' fio job: two jobs of 32M of random writes
# (the export's 64M), a crc32c header in every block. Its offsets and blocks are the same in
# every run with the same FIO-ARGS, so `--verify_only` on a copy of the export checks that copy
# against what a run wrote.
failover_fio_job() {
    fio --name=failover --rw=randwrite --numjobs=2 --size=32M --offset_increment=32M \
        --verify=crc32c --verify_fatal=1 --group_reporting "$@"
}

# start_failover_fio FIO-ARGS...: the failover workload in the background (log $LOGS/fio.log,
# sets FIO_PID): two jobs of 32M of random writes, each capped at 1 MiB/s so that the kill of
# target a falls inside the write phase, then a crc32c verify of all of it. FIO-ARGS say where
# (--ioengine=nbd --uri=..., or libaio on a device), the depth and the block sizes.
start_failover_fio() {
    failover_fio_job --do_verify=1 --rate=,1m "$@" >"$LOGS/fio.log" 2>&1 &
    FIO_PID=$!
    track_pid "$FIO_PID"
}

# kill_a_mid_write CMD...: once CMD (it prints the bytes fio wrote so far) says that more than
# 8M of the 64M are written, SIGKILL target a; fail unless that was before 56M. The fio jobs
# cap their writes (--rate) so that the kill falls inside the write phase; CMD must be cheap
# (--stats is too slow on a loaded TCG host to time the kill).
kill_a_mid_write() {
    local at
    wait_for 180 _written_above $((8 << 20)) "$@" || fail "fio makes no progress"
    at=$("$@")
    kill -KILL "$PID_A"
    wait "$PID_A" 2>/dev/null || true
    [ "$at" -lt $((56 << 20)) ] || fail "fio was (nearly) done writing before target a was killed"
    ok "target a killed (-9) with about $((at >> 20))M of 64M written"
}

_written_above() {
    local n=$1
    shift
    [ "$("$@")" -gt "$n" ]
}

# nbdkit_read: what nbdkit read from its NBD sockets so far, fio's progress for
# kill_a_mid_write (the backing's allocation says nothing: the guest's tmpfs allocates in huge
# pages, and an RBD image has none to see).
nbdkit_read() {
    awk '$1 == "rchar:" { print $2 }' "/proc/$NBDKIT_PID/io"
}

# fio_failed_over RC: fio's exit status RC and its log show the run passed, verify included,
# nbdkit's log shows both NBD connections failed over from a to b, and b accepted them. Sets
# FAILOVERS.
fio_failed_over() {
    local accepted
    [ "$1" = 0 ] || fail "fio failed across the failover (status $1)"
    grep -q 'err= 0' "$LOGS/fio.log" || fail "fio reported errors"
    FAILOVERS=$(failovers_in "$LOGS/nbdkit.log")
    [ "$FAILOVERS" -ge 2 ] ||
        fail "nbdkit log shows $FAILOVERS failovers to b, expected one per NBD connection"
    accepted=$(target_stat "$T/b.conf" connections accepted) || fail "--stats of b failed"
    [ "$accepted" -ge 2 ] || fail "target b accepted $accepted connections"
}

# failovers_in LOG: how many connections LOG says failed over from target a to target b.
failovers_in() {
    grep -c "failed over from $RDMABLK_ADDR:10810 to $ADDR2:10810" "$1" || true
}

# start_two_rbd_targets [WATCH_S]: a one-node Ceph cluster with Ceph's default watch timeout
# (30 s; WATCH_S instead) and a 64M image rbd/img0, served as disk0 by targets a and b
# (start_two_targets). Needs ceph-lib.sh.
start_two_rbd_targets() {
    require_rdma
    require_ceph
    add_second_address
    CEPH_WATCH_TIMEOUT=${1:-30} ceph_up rbd img0 64M
    # shellcheck disable=SC2034  # read by write_shared_conf
    SHARED_PATH=rbd:rbd/img0
    # shellcheck disable=SC2034
    SHARED_EXTRA="ceph-conf = $CEPH_CONF"
    start_two_targets
}

# start_two_targets [IMG_B]: target a on $RDMABLK_ADDR and target b on $ADDR2, both serving
# $T/disk0.img (target b: IMG_B instead, for a negative control).
start_two_targets() {
    write_shared_conf a "$RDMABLK_ADDR"
    write_shared_conf b "$ADDR2" "${1:-}"
    TARGET_NAME=a start_target "$T/a.conf"
    PID_A=$TARGET_PID
    TARGET_NAME=b start_target "$T/b.conf"
    PID_B=$TARGET_PID
}
