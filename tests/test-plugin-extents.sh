#!/bin/bash
# test-shares: none
# Block status over RDMA on a file export: a 1 GiB sparse file with three data extents, served
# through nbdkit rdma. nbdinfo --map and qemu-img map list exactly those extents, and nbdcopy to a
# local file makes the target read only the data (its byte counters), with an identical copy.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/extents-lib.sh
. "$(dirname "$0")/extents-lib.sh"

requires nbdkit nbdinfo nbdcopy qemu-img python3
require_rdma
requires_file "$BUILD/nbdkit-rdma-plugin.so"

ext_fill_file "$T/disk0.img"
target_conf "$T/target.conf" port=10810 queue-depth=64 max-io=1M <<EOF2
[export disk0]
path = $T/disk0.img
EOF2
start_target "$T/target.conf"
start_nbdkit hostname="$RDMABLK_ADDR" export=disk0
ext_check_maps "$NBD_URI"
ext_copy "$NBD_URI" "$T/target.conf" disk0 "$T/disk0.img"
[ "$(export_stat "$T/target.conf" disk0 block_statuses)" -ge 1 ] ||
    fail "--stats counts no BLOCK_STATUS request"
