#!/bin/bash
# test-shares: none
# Per-initiator secrets (`allow = ADDRESS secret-file=PATH`, rdmablk.conf(5)): two initiator
# addresses on one export, each with a key of its own. Each host's own key works (data written
# and read back verified); the other host's key is refused, and so is the export-wide
# secret-file for a host that has its own. The guest's netdev gets the lane's second address
# ($ADDR2, failover-lib), and each client names its source address (rdmablk-io -B, the library's
# source-address=): left to the kernel, a connection to the second address came from the first.
# The target's log names the peer, and the test checks it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires ip
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"
A1=$RDMABLK_ADDR
A2=$ADDR2
add_second_address    # host 2's address: the lane's second one, until the test exits

head -c 48 /dev/urandom | base64 >"$T/h1.key"
head -c 48 /dev/urandom | base64 >"$T/h2.key"
head -c 48 /dev/urandom | base64 >"$T/shared.key"
chmod 600 "$T/h1.key" "$T/h2.key" "$T/shared.key"

target_conf "$T/target.conf" listen="$A1" <<CONF
[export disk]
path = $T/disk.img
size = 8M
secret-file = $T/shared.key
allow = 10.55.0.0/24
allow = $A1 secret-file=$T/h1.key
allow = $A2 secret-file=$T/h2.key
CONF
step check "$BUILD/rdmablk-target" -n -c "$T/target.conf" || fail "rdmablk-target -n refused the config"
start_target "$T/target.conf"

IO_OPTS="-H $A1 -e disk"
# refused NAME CMD...: CMD must fail with EACCES, the target having failed to prove the key.
refused() {
    local name=$1
    shift
    if step "$name" "$@"; then fail "$name: accepted"; fi
    grep -q 'target failed to prove it knows the secret' "$LOGS/$name.log" ||
        fail "$name: not refused for the key"
    grep -q 'Permission denied (EACCES)' "$LOGS/$name.log" || fail "$name: not EACCES"
}

step h1-write rdmablk_io -B "$A1" -S "$T/h1.key" write 0 1M 21 || fail "host 1 with its key: write failed"
step h1-read rdmablk_io -B "$A1" -S "$T/h1.key" read 0 1M 21 || fail "host 1 with its key: read failed"
grep -q "$A1:[0-9]*: export disk: initiator authenticated" "$LOGS/target.log" ||
    fail "target did not log host 1 ($A1) as authenticated"
ok "host 1 ($A1) with its own key: 1 MiB written and read back verified"

step h2-write rdmablk_io -B "$A2" -S "$T/h2.key" write 1M 1M 22 || fail "host 2 with its key: write failed"
step h2-read rdmablk_io -B "$A2" -S "$T/h2.key" read 1M 1M 22 || fail "host 2 with its key: read failed"
grep -q "$A2:[0-9]*: export disk: initiator authenticated" "$LOGS/target.log" ||
    fail "target did not log host 2 ($A2) as authenticated: the client did not come from $A2"
ok "host 2 ($A2) with its own key: 1 MiB written and read back verified"

refused h2-with-h1-key rdmablk_io -B "$A2" -S "$T/h1.key" info
refused h1-with-h2-key rdmablk_io -B "$A1" -S "$T/h2.key" info
ok "another host's key is refused (EACCES), in both directions"
refused h1-with-shared rdmablk_io -B "$A1" -S "$T/shared.key" info
ok "the export-wide secret-file is refused for a host that has its own key"
wait_for 30 stat_reaches "$T/target.conf" refused auth_failure 3 ||
    fail "the target did not count the three failed authentications"
[ "$(grep -c 'export disk: authentication failed: no response' "$LOGS/target.log")" -ge 3 ] ||
    fail "the target did not log why the three authentications failed"
step h1-again rdmablk_io -B "$A1" -S "$T/h1.key" read 0 1M 21 || fail "host 1 broken afterwards"

stop_target
ok "target exits cleanly"
