#!/bin/bash
# Guest side of tests/host-power-cut.sh, second boot: mount the disk (ext4 replays its journal),
# serve the same file and read every block back through RDMA.
# Usage: power-cut-check.sh SEED
set -eu
seed=$1
build=${RDMABLK_BUILD:-$(pwd)/build}
disk=${RDMABLK_DISKS%% *}
mkdir -p /mnt/pc
mount "$disk" /mnt/pc
cat >/tmp/pc.conf <<CONF
[target]
listen = $RDMABLK_ADDR
[export pc]
path = /mnt/pc/disk.img
read-only = yes
CONF
"$build/rdmablk-target" -f -c /tmp/pc.conf -p /tmp/pc.pid 2>/tmp/target.log &
for _ in $(seq 600); do [ -s /tmp/pc.pid ] && break; sleep 0.1; done
[ -s /tmp/pc.pid ] || { cat /tmp/target.log; exit 1; }
"$build/tests/rdmablk-durable" -H "$RDMABLK_ADDR" -e pc check 4096 "$seed"
