#!/bin/bash
# test-shares: none
# A reload after an export's backing file shrank revokes the connections that negotiated the old
# size (they could still address, and write, beyond the new end): the target drains and closes
# them within a bound, logs why and counts them in --stats; the client's reconnect sees the size
# change and fails, and a new connection gets the new size. A busy client of another export is
# untouched: same connection, verified data.
# shellcheck source=tests/revoke-lib.sh
. "$(dirname "$0")/revoke-lib.sh"

# write_conf SIZE: disk0 has SIZE; disk1 stays at 64M.
write_conf() {
    put_conf <<EOF
[export disk0]
path = $T/disk0.img
size = $1

[export disk1]
path = $T/disk1.img
size = 64M
EOF
}

# The busy client works in the first 64 MiB (rdmablk-io stress), so it never writes beyond
# the new end and the file stays at the size it is cut to.
write_conf 96M
start_target "$conf"
busy victim disk0 -i 0   # flat out: a revocation with requests in flight
busy bystander disk1
step old-size rdmablk_io -e disk0 info || fail "info on disk0 failed"
grep -qx 'size=100663296' "$LOGS/old-size.log" || fail "disk0 is not 96 MiB"
ok "busy clients on disk0 (96 MiB) and disk1"

truncate -s 64M "$T/disk0.img"
write_conf 64M
reload disk0 disk1
revoked victim disk0 "the export shrank to 67108864 bytes: it negotiated 100663296" \
    'changed across a reconnect'
step new rdmablk_io -e disk0 info || fail "a new connection to disk0 failed"
grep -qx 'size=67108864' "$LOGS/new.log" || fail "a new connection does not get the new size"
[ "$(stat -c %s "$T/disk0.img")" = 67108864 ] || fail "disk0.img is no longer 64 MiB"
ok "a new connection to disk0 gets the new size, 64 MiB"
revocations_are size_shrunk 1
untouched bystander

stop_target
ok "target exits cleanly"
