# Shared by the RBD tests: a one-node Ceph cluster (one mon, one memstore OSD, pool size 1,
# no auth) under $T/ceph, started on demand and torn down when the test exits. A test sources
# only this file (it brings lib.sh).
#
#   require_ceph                 skip (77) only where the Ceph packages are missing
#   ceph_up [POOL IMAGE SIZE]    start it, create a fresh pool and image (default rbd img0 256M);
#                                prints "ceph-up: cluster ready in Ns"; sets CEPH_CONF CEPH_MON
#   ceph_cmd ARGS...             `ceph` against it, bounded in time
#   ceph_mon JSON                one monitor command through librados (rdmablk-ceph): the
#                                pool's creation, the blocklist, without the CLI's cost
#   rbd_cmd ARGS...              `rbd` against it, bounded in time
#   ceph_pause / ceph_resume     SIGSTOP / SIGCONT the mon and the OSD: the whole cluster away
#   rbd_lock_stat CONF EXPORT KEY  a member of an RBD export's "lock" in --stats (state...)
#   rbd_lock_is CONF EXPORT STATE  true when its lock state is STATE (for wait_for)
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
    requires_file "$BUILD/tests/rdmablk-ceph"
}

ceph_cmd() {
    timeout -k 5 "$CEPH_CMD_TIMEOUT" ceph -c "$CEPH_CONF" --connect-timeout 30 "$@"
}

# ceph_mon JSON: the monitor command JSON (as the CLI would send it) through librados: the
# answer on stdout, the monitor's status line on stderr; each step bounded by CEPH_CMD_TIMEOUT
# (1 to 3600), the whole run by twice that (rdmablk-ceph's alarm). Under TCG
# one run of the `ceph` CLI (Python) costs about 5 s of CPU; this, a C program's start.
ceph_mon() {
    "$BUILD/tests/rdmablk-ceph" -c "$CEPH_CONF" -t "$CEPH_CMD_TIMEOUT" "$1"
}

# ceph_blocklist_add ADDR SECONDS: put the client instance ADDR on the OSDs' blocklist, as
# another client's lock break does (`ceph osd blocklist add ADDR SECONDS`).
ceph_blocklist_add() {
    ceph_mon "{\"prefix\": \"osd blocklist\", \"blocklistop\": \"add\", \"addr\": \"$1\", \"expire\": $2.0}"
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
# A killed client's watch (and so its exclusive lock) lapses after this many seconds
# (CEPH_WATCH_TIMEOUT; Ceph's default is 30).
osd client watch timeout = ${CEPH_WATCH_TIMEOUT:-10}
# A read lease (ratio x osd heartbeat grace = 600 s) longer than any ceph_pause. Resumed past
# its lease (16 s by default), a lone OSD stays "laggy" for minutes, every op parked in
# "waiting for readable" (dump_ops_in_flight): Ceph 16.2 does not recheck readability
# (tracker 53806).
osd pool default read lease ratio = 30
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

# ceph_pause: stop the whole cluster (SIGSTOP the mon and the OSD; their sockets stay open, so
# clients see no error, only silence). Resumed at exit too, so the cleanup's SIGTERM reaches them.
ceph_pause() {
    # shellcheck disable=SC2154  # set by _ceph_daemon
    kill -STOP "$CEPH_PID_mon_a" "$CEPH_PID_osd_0"
    on_exit kill -CONT "$CEPH_PID_mon_a" "$CEPH_PID_osd_0"
}

# ceph_resume: SIGCONT the mon and the OSD.
ceph_resume() {
    kill -CONT "$CEPH_PID_mon_a" "$CEPH_PID_osd_0"
}

# ceph_pool_image POOL IMAGE SIZE: a fresh pool (if new) and image with exclusive-lock.
ceph_pool_image() {
    local pool=$1 image=$2 size=$3
    if ! timeout -k 5 30 rados -c "$CEPH_CONF" lspools | grep -qx "$pool"; then
        step ceph-pool ceph_mon "{\"prefix\": \"osd pool create\", \"pool\": \"$pool\", \"pg_num\": 8}" ||
            fail "creating pool $pool failed: $(tail -n 1 "$LOGS/ceph-pool.log")"
        # Its PGs must peer first, which takes long on a loaded TCG host: retried.
        wait_for 240 rbd_cmd pool init "$pool" || fail "rbd pool init $pool failed"
    fi
    step rbd-create rbd_cmd create "$pool/$image" --size "$size" \
        --image-feature layering,exclusive-lock || fail "rbd create $pool/$image failed"
}

# write_rbd_target_conf FILE PORT [EXPORT-LINES...]: a target on $RDMABLK_ADDR:PORT with one
# export, rbd0, of rbd:rbd/img0 on this cluster; extra lines go into its section, and the
# words of RBD_TARGET_KEYS (KEY=VALUE) into [target].
write_rbd_target_conf() {
    local file=$1 port=$2 l
    shift 2
    {
        printf '[export rbd0]\npath = rbd:rbd/img0\nceph-conf = %s\n' "$CEPH_CONF"
        for l in "$@"; do printf '%s\n' "$l"; done
    # shellcheck disable=SC2086  # RBD_TARGET_KEYS is a list of words
    } | target_conf "$file" port="$port" queue-depth=64 admin-socket="$file.sock" \
        ${RBD_TARGET_KEYS:-}
}

# rbd_lock_stat CONF EXPORT KEY: KEY (state, acquired, takeovers, lost) of the exclusive lock of
# EXPORT in the --stats of the target running with CONF (export_stat).
rbd_lock_stat() {
    export_stat "$1" "$2" lock "$3"
}

# holder_addr: the holder of rbd/img0's exclusive lock, its client instance as `rbd lock ls`
# names it (empty when none).
holder_addr() {
    rbd_cmd lock ls rbd/img0 2>/dev/null | awk 'NR > 2 && $1 ~ /^client\./ { print $NF; exit }'
}

# on_blocklist ADDR: true when ADDR is on the OSDs' blocklist (for wait_for: the monitor may be
# slow on a loaded TCG host, so ask until it answers); the list is in $LOGS/blocklist.log.
on_blocklist() {
    ceph_mon '{"prefix": "osd blocklist ls"}' >"$LOGS/blocklist.log" 2>&1 &&
        grep -qF "$1" "$LOGS/blocklist.log"
}

# export_reopened CONF EXPORT: true once EXPORT of the target running with CONF reopened its
# image at least once and is ok again (for wait_for).
export_reopened() {
    local n state
    n=$(export_stat "$1" "$2" reopens) || return 1
    state=$(export_stat "$1" "$2" state) || return 1
    echo "export $2: reopens $n, state $state"
    [ "$n" -ge 1 ] && [ "$state" = ok ]
}

# rbd_lock_is CONF EXPORT STATE: true when EXPORT's lock state is STATE (for wait_for).
rbd_lock_is() {
    local now
    now=$(rbd_lock_stat "$1" "$2" state) || return 1
    echo "export $2: lock $now, expected $3"
    [ "$now" = "$3" ]
}
