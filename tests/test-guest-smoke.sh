#!/bin/bash
# test-shares: none
# Soft-RoCE and RDMA CM work: an ACTIVE rxe device is listed by rdma and ibv_devices, an rping
# server and client exchange data over RDMA CM, and the nbd driver provides /dev/nbd0.
# In the guest, the 9000-byte MTU of d0 gives rxe an active_mtu of 4096.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

requires rdma ibv_devices ibv_devinfo rping
require_rdma

step rdma-link rdma link show || fail "rdma link show failed"
grep -q 'state ACTIVE' "$LOGS/rdma-link.log" || fail "rdma link show lists no ACTIVE device"
dev=${RDMABLK_DEV:-$(awk '/state ACTIVE/ { sub(/\/.*/, "", $2); print $2; exit }' "$LOGS/rdma-link.log")}
grep -q "^link $dev/.*state ACTIVE" "$LOGS/rdma-link.log" || fail "$dev is not ACTIVE"
ok "rdma link: $dev ACTIVE"

step ibv-devices ibv_devices || fail "ibv_devices failed"
grep -qw "$dev" "$LOGS/ibv-devices.log" || fail "ibv_devices does not list $dev"
ok "ibv_devices lists $dev"

step ibv-devinfo ibv_devinfo -d "$dev" || fail "ibv_devinfo -d $dev failed"
mtu=$(awk '/active_mtu:/ { print $2; exit }' "$LOGS/ibv-devinfo.log")
if [ "${RDMABLK_IN_GUEST:-0}" = 1 ]; then
    [ "$mtu" = 4096 ] || fail "active_mtu is '$mtu', expected 4096 (d0 mtu 9000)"
fi
ok "active_mtu $mtu"

# The server handles one connection and exits. The client is retried until the server listens.
rping -s -a "$RDMABLK_ADDR" -C 3 >"$LOGS/rping-server.log" 2>&1 &
server=$!
track_pid "$server"

rping_client() {
    rping -c -a "$RDMABLK_ADDR" -C 3 -v >"$LOGS/rping-client.log" 2>&1
}
wait_for 60 rping_client || fail "rping client never completed an exchange"
[ "$(grep -c 'ping data' "$LOGS/rping-client.log")" -eq 3 ] ||
    fail "rping client did not verify 3 pings"
wait_exit 30 "$server" || fail "rping server failed or hung (status $?)"
ok "rping: 3 verified exchanges over RDMA CM at $RDMABLK_ADDR"

[ -b /dev/nbd0 ] || fail "/dev/nbd0 is missing (modprobe nbd)"
ok "/dev/nbd0 exists"
