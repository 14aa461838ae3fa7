#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# rdmablk-ublk: bad parameters and commands fail with a clear message naming what was wrong,
# exit non-zero, and leave no ublk device behind; the keys and messages are the plugin's
# (one parser, initiator/params.c).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

require_rdma
require_ublk
write_target_conf 16M
start_target "$T/target.conf"

# expect_fail NAME REGEX ARGS...: rdmablk-ublk ARGS exits non-zero within 60 s, saying REGEX.
expect_fail() {
    local name=$1 regex=$2 rc=0
    shift 2
    timeout 60 "$UBLK" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.log" || rc=$?
    [ "$rc" != 0 ] || fail "$name: rdmablk-ublk $* succeeded"
    [ "$rc" != 124 ] || fail "$name: rdmablk-ublk $* hung"
    grep -Eq "$regex" "$LOGS/$name.log" || fail "$name: no clear error matching '$regex': $(cat "$LOGS/$name.log")"
    [ ! -s "$LOGS/$name.out" ] || fail "$name: printed a device: $(cat "$LOGS/$name.out")"
    ok "$name: $(head -n 1 "$LOGS/$name.log")"
}
A=hostname=$RDMABLK_ADDR
expect_fail no-hostname 'hostname parameter is required' add export=disk0
expect_fail no-export 'export parameter is required' add "$A"
expect_fail unknown-param "unknown parameter 'colour'" add "$A" export=disk0 colour=blue
expect_fail not-key-value "'disk0' is not key=value" add "$A" disk0
expect_fail bad-port "invalid port '99999'" add "$A" export=disk0 port=99999
expect_fail bad-qd "invalid queue-depth '0'" add "$A" export=disk0 queue-depth=0
expect_fail bad-queues "invalid queues '17'" add "$A" export=disk0 queues=17
expect_fail no-connections "invalid connections '0': expected an integer in 1..8" \
    add "$A" export=disk0 connections=0
expect_fail bad-connections "invalid connections '9'" add "$A" export=disk0 connections=9
expect_fail bad-export "invalid export '-x'" add "$A" export=-x
expect_fail bad-mr "mr: 'sometimes' is not window or static" add "$A" export=disk0 mr=sometimes
expect_fail bad-host "hostname 'no-such-host.invalid'" add hostname=no-such-host.invalid export=disk0
expect_fail secret-file 'secret-file /nonexistent/key: No such file or directory' \
    add "$A" export=disk0 secret-file=/nonexistent/key
expect_fail unknown-export "export 'nosuch'.*no such export \(ENOENT\)" add "$A" export=nosuch
expect_fail not-listening "no rdmablk target is listening on $RDMABLK_ADDR:10999" \
    add "$A" export=disk0 port=10999
expect_fail unknown-command "unknown command 'attach'" attach
expect_fail del-not-a-device "'/dev/sda' is not a ublk block device" del /dev/sda
expect_fail del-no-such "/dev/ublkb999: no such ublk device" del /dev/ublkb999

"$UBLK" list >"$LOGS/list.log" 2>&1 || fail "list failed"
[ ! -s "$LOGS/list.log" ] || fail "devices left behind: $(cat "$LOGS/list.log")"
ok "no ublk device left behind"
