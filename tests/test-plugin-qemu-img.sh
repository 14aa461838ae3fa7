#!/bin/bash
# test-shares: none
# qemu-img convert a random raw image onto the export through nbdkit rdma, then
# qemu-img compare them.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

requires nbdkit qemu-img
require_rdma
requires_file "$PLUGIN"

write_target_conf 32M
start_target "$T/target.conf"
start_nbdkit hostname="$RDMABLK_ADDR" export=disk0

head -c 32M /dev/urandom >"$T/src.raw"
SECONDS=0
step convert qemu-img convert -p -n -f raw -O raw "$T/src.raw" "$NBD_URI" ||
    fail "qemu-img convert failed"
step compare qemu-img compare -f raw -F raw "$T/src.raw" "$NBD_URI" ||
    fail "qemu-img compare found a difference"
grep -q 'Images are identical' "$LOGS/compare.log" || fail "compare did not say identical"
ok "qemu-img convert + compare: ${SECONDS}s"
