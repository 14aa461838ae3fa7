#!/bin/bash
# test-shares: sysuser
# The unit make install lays out is hardened: it runs as the user rdmablk with CAP_IPC_LOCK as
# its only capability, its sysusers.d file makes that user, and `systemd-analyze security`
# rates its exposure below UNIT_EXPOSURE_MAX. Measured with systemd 252: 6.6 (MEDIUM) for the
# unit as it was, running as root; 1.6 (OK) for this one. (tests/test-ops-install.sh checks
# that the installed unit passes `systemd-analyze verify`; tests/test-ops-unit-user.sh that
# the target works with the unit's identity.)
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

requires make install systemd-analyze systemd-sysusers
requires_file "$BUILD/rdmablk-target" "$BUILD/nbdkit-rdma-plugin.so"
UNIT_EXPOSURE_MAX=${UNIT_EXPOSURE_MAX:-2.0}
systemd_dirs

root=$T/root
step install-destdir mk_install DESTDIR="$root" || fail "make install DESTDIR=$root failed"
unit=$root/${unitdir#/}/rdmablk-target.service
sysusers=$root/${sysusersdir#/}/rdmablk.conf
[ -f "$unit" ] || fail "make install did not lay out $unitdir/rdmablk-target.service"

step security systemd-analyze security --offline=yes --no-pager "$unit" ||
    fail "systemd-analyze security failed"
score=$(sed -n 's/.*Overall exposure level for rdmablk-target.service: \([0-9.]*\) .*/\1/p' \
    "$LOGS/security.log")
[ -n "$score" ] || fail "no exposure level in systemd-analyze security's output (security.log)"
awk -v s="$score" -v m="$UNIT_EXPOSURE_MAX" 'BEGIN { exit !(s < m) }' ||
    fail "exposure level $score is not below $UNIT_EXPOSURE_MAX (security.log)"
ok "systemd-analyze security: exposure level $score, below $UNIT_EXPOSURE_MAX"

# The identity and the sandbox the docs promise (rdmablk-target.8, RUNNING UNPRIVILEGED).
for line in User=rdmablk Group=rdmablk AmbientCapabilities=CAP_IPC_LOCK \
    CapabilityBoundingSet=CAP_IPC_LOCK NoNewPrivileges=yes ProtectSystem=strict \
    ProtectHome=yes PrivateTmp=yes DevicePolicy=closed 'DeviceAllow=char-infiniband_verbs rw' \
    'DeviceAllow=/dev/infiniband/rdma_cm rw' StateDirectory=rdmablk RuntimeDirectory=rdmablk; do
    grep -qx "$line" "$unit" || fail "unit: no '$line'"
done
! grep -qE '^(PrivateDevices|PrivateNetwork|PrivateUsers)=yes' "$unit" ||
    fail "unit: PrivateDevices=, PrivateNetwork= or PrivateUsers= would break RDMA"
ok "unit: User=rdmablk, only CAP_IPC_LOCK, NoNewPrivileges, ProtectSystem=strict, RDMA devices only"

# The sysusers.d file makes the user (into the DESTDIR's own /etc here).
[ -f "$sysusers" ] || fail "make install did not lay out $sysusersdir/rdmablk.conf"
step sysusers systemd-sysusers --root="$root" "$sysusers" || fail "systemd-sysusers failed"
grep -q '^rdmablk:x:[0-9]*:[0-9]*:rdmablk RDMA block target:/var/lib/rdmablk:' "$root/etc/passwd" ||
    fail "systemd-sysusers made no user rdmablk (etc/passwd: $(cat "$root/etc/passwd"))"
uid=$(awk -F: '$1 == "rdmablk" { print $3 }' "$root/etc/passwd")
if [ "$uid" -le 0 ] || [ "$uid" -ge 1000 ]; then fail "rdmablk has uid $uid, not a system uid"; fi
ok "$sysusersdir/rdmablk.conf makes the system user rdmablk (uid $uid)"

