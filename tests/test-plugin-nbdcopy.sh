#!/bin/bash
# test-shares: none
# nbdcopy a random image onto the export through nbdkit rdma and back: both copies and the
# target's backing file are identical to the source.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

requires nbdkit nbdcopy
require_rdma
requires_file "$PLUGIN"

write_target_conf 48M
start_target "$T/target.conf"
start_nbdkit hostname="$RDMABLK_ADDR" export=disk0

head -c 48M /dev/urandom >"$T/src.img"
SECONDS=0
step copy-in nbdcopy "$T/src.img" "$NBD_URI" || fail "nbdcopy onto the export failed"
step copy-out nbdcopy "$NBD_URI" "$T/back.img" || fail "nbdcopy from the export failed"
ok "48M copied in and out in ${SECONDS}s"
cmp "$T/src.img" "$T/back.img" || fail "copy read back differs from the source"
cmp "$T/src.img" "$T/disk0.img" || fail "target's backing file differs from the source"
ok "source = read back = backing file"
