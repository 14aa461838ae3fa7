#!/bin/bash
# test-shares: none
# The RBD backend is a module (target/rbd/rbd-module.h), loaded for the first RBD export. A target
# serving files maps neither librbd nor librados, and its binary does not need them (so neither
# does --stats). A module that cannot be loaded is an error at -n that names the module and what
# RBD exports need; the real module beside the binary runs (librados' own error for a monitor that
# does not answer).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/rdmablk-rbd.so"

ceph_libs='librbd|librados'
ldd "$BUILD/rdmablk-target" >"$LOGS/ldd-target.txt" || fail "ldd rdmablk-target failed"
ldd "$BUILD/rdmablk-rbd.so" >"$LOGS/ldd-module.txt" || fail "ldd rdmablk-rbd.so failed"
! grep -E "$ceph_libs" "$LOGS/ldd-target.txt" || fail "rdmablk-target links Ceph's libraries"
grep -qE "$ceph_libs" "$LOGS/ldd-module.txt" || fail "the RBD module does not link librbd"
ok "rdmablk-target does not link librbd or librados; rdmablk-rbd.so does"

target_conf "$T/target.conf" port=10898 <<CONF
[export disk0]
path = $T/disk0.img
size = 16M
CONF
start_target "$T/target.conf"
step write rdmablk_io -p 10898 -e disk0 write 0 64K 3 || fail "a write to the file export failed"
! grep -E "$ceph_libs|rdmablk-rbd" "/proc/$TARGET_PID/maps" ||
    fail "a target with only a file export mapped the RBD module or Ceph's libraries"
stop_target
ok "a target serving a file export maps no Ceph library"

# An RBD export whose monitor does not answer: -n connects, so the module runs.
printf '[global]\nmon host = 127.0.0.1:9\n' >"$T/ceph.conf"
target_conf "$T/rbd.conf" port=10898 <<CONF
[export r]
path = rbd:p/i
ceph-conf = $T/ceph.conf
CONF
mkdir "$T/bin"
cp "$BUILD/rdmablk-target" "$T/bin/"
: >"$T/bin/rdmablk-rbd.so"
! step broken timeout 60 "$T/bin/rdmablk-target" -n -c "$T/rbd.conf" || fail "-n passed with an empty module"
grep -q "rbd.conf:6: path: the RBD module cannot be loaded (RBD exports need librbd1 and librados2): $T/bin/rdmablk-rbd.so: " \
    "$LOGS/broken.log" || fail "no clear error for a module that cannot be loaded: $(cat "$LOGS/broken.log")"
ok "an empty module beside the binary: $(sed -n 's/.*rbd.conf:6: path: //p' "$LOGS/broken.log")"

cp "$BUILD/rdmablk-rbd.so" "$T/bin/"
! step loaded timeout 60 "$T/bin/rdmablk-target" -n -c "$T/rbd.conf" || fail "-n passed with a dead monitor"
grep -q 'rbd.conf:6: path: cannot reach the Ceph monitors at 127.0.0.1:9' "$LOGS/loaded.log" ||
    fail "the module beside the binary did not run: $(cat "$LOGS/loaded.log")"
ok "the module beside the binary runs: librados reports the monitor that does not answer"
