#!/bin/bash
# test-shares: ceph
# RBD exports at rdmablk-target -n and at start: a good rbd: export is "configuration OK"; a
# wrong pool, a missing image, a wrong ceph-conf, an unreachable mon, a bad ceph-id, a
# world-readable keyring, a wrong size and ceph-* keys on a file export each give a FILE:LINE
# error naming what was wrong, and nothing hangs (the unreachable mon gives up after the 10 s
# client_mount_timeout, and says so). The target refuses to start on the same error. An image
# without exclusive-lock or with rbd_cache on is refused, and rbd_blocklist_on_break_lock = false
# in ceph.conf gets a warning (docs/rbd.md, Failover).
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"

requires_file "$BUILD/rdmablk-target"
require_ceph
ceph_up rbd img0 32M

write_rbd_target_conf "$T/good.conf" 10821 "ceph-id = admin" "size = 32M"
step good timeout 60 "$BUILD/rdmablk-target" -n -c "$T/good.conf" || fail "good RBD config rejected"
grep -qx 'configuration OK' "$LOGS/good.log" || fail "no 'configuration OK'"
ok "rbd:rbd/img0 with ceph-conf, ceph-id, size: configuration OK"

# What a writable export needs for failover (docs/rbd.md, docs/durability.md): the image's
# exclusive-lock feature, and no client cache; and a ceph.conf that stops librbd from
# blocklisting the holder whose lock it breaks gets a warning, because such a target cannot
# fence a hung holder.
step mk-nolock rbd_cmd create --size 8M --image-feature layering rbd/nolock ||
    fail "rbd create rbd/nolock failed"
step mk-cached rbd_cmd create --size 8M rbd/cached || fail "rbd create rbd/cached failed"
step set-cached rbd_cmd config image set rbd/cached rbd_cache true || fail "rbd config image set failed"
cat >"$T/failover.conf" <<CONF
[target]
listen = $RDMABLK_ADDR
[export nolock]
path = rbd:rbd/nolock
ceph-conf = $CEPH_CONF
[export cached]
path = rbd:rbd/cached
ceph-conf = $CEPH_CONF
CONF
rc=0
step failover timeout 120 "$BUILD/rdmablk-target" -n -c "$T/failover.conf" || rc=$?
[ "$rc" = 1 ] || fail "an image without exclusive-lock, or with rbd_cache on: -n exit $rc, expected 1"
grep -q "failover.conf:4: .*image rbd/nolock has no exclusive-lock feature" "$LOGS/failover.log" &&
    grep -qF "(rbd feature enable rbd/nolock exclusive-lock)" "$LOGS/failover.log" ||
    fail "-n did not refuse the image without exclusive-lock, naming the command"
grep -q "failover.conf:7: .*image rbd/cached sets rbd_cache = true in its metadata" \
    "$LOGS/failover.log" || fail "-n did not refuse the image that turns rbd_cache on"
sed '/^\[global\]/a rbd blocklist on break lock = false' "$CEPH_CONF" >"$T/nobreak.conf"
write_rbd_target_conf "$T/nobreak-target.conf" 10822
sed -i "s|^ceph-conf = .*|ceph-conf = $T/nobreak.conf|" "$T/nobreak-target.conf"
step nobreak timeout 60 "$BUILD/rdmablk-target" -n -c "$T/nobreak-target.conf" ||
    fail "-n refused a config that only deserves a warning"
grep -q "warning: export rbd0: $T/nobreak.conf:[0-9]* sets rbd_blocklist_on_break_lock = false" \
    "$LOGS/nobreak.log" || fail "-n did not warn about rbd_blocklist_on_break_lock = false"
ok "-n refuses an image without exclusive-lock and one with rbd_cache on, and warns when" \
    "a lock break would not blocklist"

# A ceph.conf whose only monitor nobody listens on (loopback, a port nothing uses).
sed "s/^mon host = .*/mon host = 127.0.0.1:9/" "$CEPH_CONF" >"$T/nomon.conf"
printf '[client.admin]\n\tkey = AQBbad==\n' >"$T/keyring"
chmod 0644 "$T/keyring"
truncate -s 1M "$T/file.img"
cat >"$T/bad.conf" <<CONF
[target]
listen = $RDMABLK_ADDR
[export nopool]
path = rbd:nosuchpool/img0
ceph-conf = $CEPH_CONF
[export noimage]
path = rbd:rbd/nosuchimage
ceph-conf = $CEPH_CONF
[export noconf]
path = rbd:rbd/img0
ceph-conf = $T/missing.conf
[export nomon]
path = rbd:rbd/img0
ceph-conf = $T/nomon.conf
[export badid]
path = rbd:rbd/img0
ceph-conf = $CEPH_CONF
ceph-id = client.admin
[export keyring]
path = rbd:rbd/img0
ceph-conf = $CEPH_CONF
ceph-keyring = $T/keyring
[export size]
path = rbd:rbd/img0
ceph-conf = $CEPH_CONF
size = 64M
[export spec]
path = rbd:img0
[export file]
path = $T/file.img
ceph-conf = $CEPH_CONF
CONF
rc=0
t0=$SECONDS
step bad timeout 120 "$BUILD/rdmablk-target" -n -c "$T/bad.conf" || rc=$?
[ "$rc" = 1 ] || fail "bad config: exit $rc, expected 1 (124: it hung)"
took=$((SECONDS - t0))
want() {
    grep -qF -- "$1" "$LOGS/bad.log" || fail "missing error: $1"
}
want "bad.conf:4: path: rbd:nosuchpool/img0: pool 'nosuchpool' does not exist"
want "bad.conf:7: path: rbd:rbd/nosuchimage: no image 'nosuchimage' in pool 'rbd'"
want "bad.conf:11: ceph-conf: $T/missing.conf: No such file or directory"
want "bad.conf:13: path: cannot reach the Ceph monitors at 127.0.0.1:9 (ceph-conf $T/nomon.conf) within 10 s (client_mount_timeout)"
want "bad.conf:18: ceph-id: 'client.admin': give the client name without 'client.' (ceph-id = admin)"
want "bad.conf:22: ceph-keyring: $T/keyring is readable by everyone (mode 0644): chmod o-rwx it"
want "bad.conf:26: size: rbd:rbd/img0 is an image of 33554432 bytes, not 67108864"
want "bad.conf:28: path: 'rbd:img0': expected rbd:POOL/IMAGE"
want "bad.conf:31: ceph-conf, ceph-id and ceph-keyring are only for RBD exports"
want "bad.conf:27: [export spec]: missing path"
want "10 errors in $T/bad.conf"
ok "-n: wrong pool, missing image, missing ceph-conf, unreachable mon, bad ceph-id, open keyring, wrong size, bad spec, ceph keys on a file: 10 FILE:LINE errors in ${took}s"

# At start: the same error, and the target exits instead of waiting for the cluster.
cat >"$T/start.conf" <<CONF
[target]
listen = $RDMABLK_ADDR
admin-socket = none
[export nomon]
path = rbd:rbd/img0
ceph-conf = $T/nomon.conf
CONF
rc=0
step start timeout 120 "$BUILD/rdmablk-target" -f -c "$T/start.conf" || rc=$?
[ "$rc" = 1 ] || fail "start with an unreachable mon: exit $rc, expected 1 (124: it hung)"
grep -qF "start.conf:5: path: cannot reach the Ceph monitors at 127.0.0.1:9" "$LOGS/start.log" ||
    fail "start did not name the unreachable mon"
ok "start with an unreachable mon: exits 1 naming 127.0.0.1:9 and the 10 s timeout"
