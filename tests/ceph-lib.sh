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
osd class update on start = false
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
# The initial OSD map (osdmaptool: osd.0 in a CRUSH tree) is given to the mon at --mkfs, so no
# `ceph osd create` / `osd crush add` round trips are needed: under TCG each run of the ceph
# CLI (Python) costs seconds. rados and rbd (C++) do the rest, with the one `osd pool create`.
ceph_up() {
    local pool=${1:-rbd} image=${2:-img0} size=${3:-256M} t0=$SECONDS fsid
    require_ceph
    fsid=$(cat /proc/sys/kernel/random/uuid)
    _ceph_write_conf "$fsid"
    step ceph-osdmap osdmaptool -c "$CEPH_CONF" --createsimple 1 --clobber "$CEPH_DIR/osdmap" ||
        fail "osdmaptool --createsimple failed"
    step ceph-mkfs-mon ceph-mon -c "$CEPH_CONF" --mkfs -i a --fsid "$fsid" \
        --osdmap "$CEPH_DIR/osdmap" || fail "ceph-mon --mkfs failed"
    step ceph-mkfs-osd ceph-osd -c "$CEPH_CONF" -i 0 --mkfs --no-mon-config ||
        fail "ceph-osd --mkfs failed"
    _ceph_daemon mon.a ceph-mon -c "$CEPH_CONF" -i a --public-addr "$CEPH_MON"
    _ceph_daemon osd.0 ceph-osd -c "$CEPH_CONF" -i 0
    wait_for 150 timeout -k 5 30 rados -c "$CEPH_CONF" lspools ||
        fail "the mon at $CEPH_MON did not answer within 150 s"
    echo "ceph-up: mon answers after $((SECONDS - t0))s" >>"$LOGS/ceph-up.log"
    ceph_pool_image "$pool" "$image" "$size"
    echo "ceph-up: cluster ready in $((SECONDS - t0))s (mon $CEPH_MON, image $pool/$image, $size)"
}

# ceph_pool_image POOL IMAGE SIZE: a fresh pool (if new) and image with exclusive-lock.
ceph_pool_image() {
    local pool=$1 image=$2 size=$3
    if ! timeout -k 5 30 rados -c "$CEPH_CONF" lspools | grep -qx "$pool"; then
        step ceph-pool ceph_cmd osd pool create "$pool" 8 || fail "ceph osd pool create $pool failed"
        # Its PGs must peer first, which takes long on a loaded TCG host: retried.
        wait_for 240 rbd_cmd pool init "$pool" || fail "rbd pool init $pool failed"
    fi
    step rbd-create rbd_cmd create "$pool/$image" --size "$size" \
        --image-feature layering,exclusive-lock || fail "rbd create $pool/$image failed"
}

# write_rbd_target_conf FILE PORT [EXPORT-LINES...]: a target on $RDMABLK_ADDR:PORT with one
# export, rbd0, of rbd:rbd/img0 on this cluster; extra lines go into its section.
write_rbd_target_conf() {
    local file=$1 port=$2 l
    shift 2
    {
        printf '[target]\nlisten = %s\nport = %s\nqueue-depth = 64\nadmin-socket = %s\n' \
            "$RDMABLK_ADDR" "$port" "$file.sock"
        printf '[export rbd0]\npath = rbd:rbd/img0\nceph-conf = %s\n' "$CEPH_CONF"
        for l in "$@"; do printf '%s\n' "$l"; done
    } >"$file"
}
