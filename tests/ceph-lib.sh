# Shared by the RBD tests: a one-node Ceph cluster (one mon, one memstore OSD, pool size 1,
# no auth) under $T/ceph, started on demand and torn down when the test exits. A test sources
# only this file (it brings lib.sh).
#
#   require_ceph                 skip (77) only where the Ceph packages are missing
#   ceph_up [POOL IMAGE SIZE]    start it, create a fresh pool and image (default rbd img0 256M);
#                                prints "ceph-up: cluster ready in Ns"; sets CEPH_CONF CEPH_MON
#   ceph_cmd ARGS...             `ceph` against it, bounded in time
#   rbd_cmd ARGS...              `rbd` against it, bounded in time
#
# The recipe is the measured one of ../shared/docs/environment.md, with the two lines the TCG
# guest needs (no erasure-code plugins, no CRUSH update on start). The mon listens on
# 127.0.0.1:$CEPH_PORT (default 6789): loopback only.
# shellcheck shell=bash
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CEPH_PORT=${CEPH_PORT:-6789}
CEPH_DIR=$T/ceph
CEPH_CONF=$CEPH_DIR/ceph.conf
CEPH_MON=127.0.0.1:$CEPH_PORT
# Every ceph/rbd command gives up after this many seconds instead of hanging.
CEPH_CMD_TIMEOUT=${CEPH_CMD_TIMEOUT:-60}

require_ceph() {
    local c
    for c in ceph-mon ceph-osd ceph rbd; do
        command -v "$c" >/dev/null 2>&1 ||
            skip "requires the Ceph packages (ceph-mon ceph-osd ceph-common: scripts/install-deps); $c is missing"
    done
    [ -e /usr/include/rbd/librbd.h ] || [ -e /usr/lib/x86_64-linux-gnu/librbd.so.1 ] ||
        skip "requires librbd (librbd-dev: scripts/install-deps)"
}

ceph_cmd() {
    timeout -k 5 "$CEPH_CMD_TIMEOUT" ceph -c "$CEPH_CONF" --connect-timeout 30 "$@"
}

rbd_cmd() {
    timeout -k 5 "$CEPH_CMD_TIMEOUT" rbd -c "$CEPH_CONF" "$@"
}

_ceph_write_conf() {
    local fsid=$1
    mkdir -p "$CEPH_DIR/run" "$CEPH_DIR/log" "$CEPH_DIR/mon.a" "$CEPH_DIR/osd.0"
    cat >"$CEPH_CONF" <<EOF
[global]
fsid = $fsid
mon host = $CEPH_MON
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon allow pool delete = true
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 1073741824
run dir = $CEPH_DIR/run
log file = $CEPH_DIR/log/\$name.log
admin socket = $CEPH_DIR/run/\$name.asok
mon data = $CEPH_DIR/mon.\$id
osd data = $CEPH_DIR/osd.\$id
pid file = $CEPH_DIR/run/\$name.pid
mon warn on pool no redundancy = false
# In the TCG guest gf-complete's SIMD probe crashes ceph-mon under QEMU's default CPU.
osd erasure code plugins =
# In the guest the hostname is "(none)", which CRUSH refuses.
osd crush update on start = false
# A killed client's watch (and so its exclusive lock) lapses after this many seconds.
osd client watch timeout = 10
EOF
}

# _ceph_daemon NAME CMD...: start a Ceph daemon in the foreground as a tracked job.
_ceph_daemon() {
    local name=$1
    shift
    "$@" -f >"$LOGS/ceph-$name.log" 2>&1 &
    track_pid $!
    eval "CEPH_PID_${name//./_}=\$!"
}

# ceph_up [POOL IMAGE SIZE]
ceph_up() {
    local pool=${1:-rbd} image=${2:-img0} size=${3:-256M} t0=$SECONDS fsid
    require_ceph
    fsid=$(cat /proc/sys/kernel/random/uuid)
    _ceph_write_conf "$fsid"
    step ceph-mkfs-mon ceph-mon -c "$CEPH_CONF" --mkfs -i a --fsid "$fsid" ||
        fail "ceph-mon --mkfs failed"
    _ceph_daemon mon.a ceph-mon -c "$CEPH_CONF" -i a --public-addr "$CEPH_MON"
    wait_for 60 ceph_cmd -s || fail "the mon at $CEPH_MON did not answer within 60 s"
    step ceph-osd-create ceph_cmd osd create || fail "ceph osd create failed"
    step ceph-mkfs-osd ceph-osd -c "$CEPH_CONF" -i 0 --mkfs || fail "ceph-osd --mkfs failed"
    step ceph-crush ceph_cmd osd crush add osd.0 1.0 host=h root=default ||
        fail "ceph osd crush add failed"
    _ceph_daemon osd.0 ceph-osd -c "$CEPH_CONF" -i 0
    wait_for 90 _ceph_osd_up || fail "osd.0 did not come up within 90 s"
    ceph_pool_image "$pool" "$image" "$size"
    echo "ceph-up: cluster ready in $((SECONDS - t0))s (mon $CEPH_MON, image $pool/$image, $size)"
}

_ceph_osd_up() {
    ceph_cmd osd dump | grep -q '^osd\.0 up'
}

# ceph_pool_image POOL IMAGE SIZE: a fresh pool (if new) and image with exclusive-lock.
ceph_pool_image() {
    local pool=$1 image=$2 size=$3
    if ! ceph_cmd osd pool ls | grep -qx "$pool"; then
        step ceph-pool ceph_cmd osd pool create "$pool" 8 || fail "ceph osd pool create $pool failed"
        step ceph-pool-init rbd_cmd pool init "$pool" || fail "rbd pool init $pool failed"
    fi
    step rbd-create rbd_cmd create "$pool/$image" --size "$size" \
        --image-feature layering,exclusive-lock || fail "rbd create $pool/$image failed"
}
