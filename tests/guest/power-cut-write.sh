#!/bin/bash
# Guest side of tests/host-power-cut.sh, first boot: a fresh ext4 on the virtio disk, the target
# exporting a file on it, and rdmablk-durable writing until the host cuts the power.
# Usage: power-cut-write.sh always|fua|control SEED
# control: the negative control, durability = fua with plain writes whose plain (not durable)
# acknowledgements are printed as ACK: the check must find some of them lost.
set -eu
mode=$1 seed=$2
durability=$mode
[ "$mode" = control ] && durability=fua
build=${RDMABLK_BUILD:-$(pwd)/build}
disk=${RDMABLK_DISKS%% *}
mkfs.ext4 -q -F "$disk"
mkdir -p /mnt/pc
mount "$disk" /mnt/pc
cat >/tmp/pc.conf <<CONF
[target]
listen = $RDMABLK_ADDR
queue-depth = 16
[export pc]
path = /mnt/pc/disk.img
size = 16M
durability = $durability
CONF
"$build/rdmablk-target" -f -c /tmp/pc.conf -p /tmp/pc.pid 2>/tmp/target.log &
for _ in $(seq 600); do [ -s /tmp/pc.pid ] && break; sleep 0.1; done
[ -s /tmp/pc.pid ] || { cat /tmp/target.log; exit 1; }
# The file the target created must outlive the cut, in the control too (no write of it is ever
# made durable): the check measures lost writes, not a lost file.
sync
flag=
[ "$mode" = fua ] && flag=-F
[ "$mode" = control ] && flag=-U
# The host kills QEMU while this runs: it never returns normally.
"$build/tests/rdmablk-durable" -H "$RDMABLK_ADDR" -e pc $flag write 4096 "$seed"
echo "writer exited early"; cat /tmp/target.log
exit 1
