#!/bin/bash
# test-shares: none
# LIST does not advertise secret-protected exports: an export with a secret-file (or whose allow
# line gives the asking peer a key of its own) is left out of LIST replies unless it says
# `listed = yes`; `listed = no` hides any export. A hidden export still serves whoever names it
# and holds the key.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

head -c 48 /dev/urandom | base64 >"$T/k.key"
chmod 600 "$T/k.key"

target_conf "$T/target.conf" <<CONF
[export open]
path = $T/open.img
size = 4M

[export sec]
path = $T/sec.img
size = 4M
secret-file = $T/k.key

[export hostkey]
path = $T/hostkey.img
size = 4M
allow = $RDMABLK_ADDR secret-file=$T/k.key

[export sec-listed]
path = $T/sec-listed.img
size = 4M
secret-file = $T/k.key
listed = yes

[export unlisted]
path = $T/unlisted.img
size = 4M
listed = no
CONF
start_target "$T/target.conf"


step list rdmablk_io -e open list || fail "LIST failed"
names=$(grep -v '^+ ' "$LOGS/list.log" | awk '{ print $1 }' | sort | tr '\n' ' ')
[ "$names" = "open sec-listed " ] ||
    fail "LIST showed '$names', expected 'open sec-listed ' (see list.log)"
ok "LIST shows open and sec-listed only: not sec, hostkey (secret-protected) or unlisted"

step sec rdmablk_io -e sec -S "$T/k.key" write 0 64K 3 || fail "hidden export sec: write with the key failed"
step sec-read rdmablk_io -e sec -S "$T/k.key" read 0 64K 3 || fail "hidden export sec: read failed"
step hostkey rdmablk_io -e hostkey -S "$T/k.key" write 0 64K 4 || fail "hidden export hostkey failed"
step unlisted rdmablk_io -e unlisted write 0 64K 5 || fail "hidden export unlisted failed"
ok "hidden exports still serve whoever names them (with the key where one is needed)"

stop_target
ok "target exits cleanly"
