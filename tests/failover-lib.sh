# Shared by the failover tests: a second address on the guest's netdev and two targets on
# $RDMABLK_ADDR and $ADDR2 that export the same backing file, $T/disk0.img, as disk0 with
# `shared = yes` (one host, one page cache: a shared backend for the purpose of the test).
# Sourced after lib.sh. start_two_targets sets PID_A and PID_B; the configs are $T/a.conf
# and $T/b.conf (for target_stat/conns_are), the logs a.log and b.log.
# shellcheck shell=bash
ADDR2=${RDMABLK_ADDR2:-10.55.0.2}
NETDEV=${RDMABLK_NETDEV:-d0}

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
# $T/disk0.img) as disk0, 64M, shared, with its own admin socket.
write_shared_conf() {
    cat >"$T/$1.conf" <<CONF
[target]
listen = $2
port = 10810
queue-depth = 64
max-io = 1M
admin-socket = $T/$1.sock
stats = yes
[export disk0]
path = ${3:-$T/disk0.img}
size = 64M
shared = yes
CONF
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

# failovers_in LOG: how many connections LOG says failed over from target a to target b.
failovers_in() {
    grep -c "failed over from $RDMABLK_ADDR:10810 to $ADDR2:10810" "$1" || true
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
