#!/bin/bash
# test-shares: ceph
# Block status over RDMA on an RBD export (rbd_diff_iterate2): a 1 GiB thin image with three data
# extents written through the target, served through nbdkit rdma. nbdinfo --map and qemu-img map
# list exactly those extents, and nbdcopy to a local file makes the target read only the data
# (its byte counters), with a copy equal to what `rbd export` reads from Ceph itself.
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/extents-lib.sh
. "$(dirname "$0")/extents-lib.sh"

requires nbdkit nbdinfo nbdcopy qemu-img python3
require_ceph
require_rdma
requires_file "$BUILD/nbdkit-rdma-plugin.so"

ceph_up rbd img0 1G
write_rbd_target_conf "$T/target.conf" 10820
start_target "$T/target.conf"
for e in $EXT_DATA; do
    step "write-${e%:*}M" rdmablk_io -p 10820 -e rbd0 write $((${e%:*} << 20)) $((${e#*:} << 20)) \
        "${e%:*}" || fail "writing ${e#*:} MiB at ${e%:*} MiB through the target failed"
done
ok "wrote the three data extents through the target"

start_nbdkit hostname="$RDMABLK_ADDR" port=10820 export=rbd0
ext_check_maps "$NBD_URI"
step rbd-export rbd_cmd export rbd/img0 "$T/export.img" || fail "rbd export failed"
ext_copy "$NBD_URI" "$T/target.conf" rbd0 "$T/export.img"
