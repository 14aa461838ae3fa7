#!/bin/bash
# Guest side of tests/host-power-cut.sh, after the cuts: for each disk in turn, mount it (ext4
# replays its journal), serve its file and read every block back through RDMA.
# Usage: power-cut-check.sh SEED...   (one per disk, in RDMABLK_DISKS order)
# Prints "CHECK k", the check's HAVE/TORN lines, then "CHECKED k STATUS" for the k-th disk.
set -u
build=${RDMABLK_BUILD:-$(pwd)/build}
read -r -a disks <<<"$RDMABLK_DISKS"
[ ${#disks[@]} -eq $# ] || { echo "power-cut-check: $# seeds for ${#disks[@]} disks"; exit 2; }

# check K DISK SEED: the check of one disk; its status is the reader's.
check() {
	local k=$1 disk=$2 seed=$3 pid rc
	mkdir -p "/mnt/pc$k"
	mount "$disk" "/mnt/pc$k" || return 1
	cat >/tmp/pc.conf <<CONF
[target]
listen = $RDMABLK_ADDR
[export pc]
path = /mnt/pc$k/disk.img
read-only = yes
CONF
	rm -f /tmp/pc.pid
	"$build/rdmablk-target" -f -c /tmp/pc.conf -p /tmp/pc.pid 2>"/tmp/target$k.log" &
	pid=$!
	for _ in $(seq 600); do [ -s /tmp/pc.pid ] && break; sleep 0.1; done
	if ! [ -s /tmp/pc.pid ]; then
		cat "/tmp/target$k.log"; kill "$pid"; wait "$pid"; umount "/mnt/pc$k"; return 1
	fi
	rc=0
	"$build/tests/rdmablk-durable" -H "$RDMABLK_ADDR" -e pc check 4096 "$seed" || rc=$?
	kill "$pid" && wait "$pid"
	umount "/mnt/pc$k"
	return "$rc"
}

k=0
for seed in "$@"; do
	k=$((k + 1))
	echo "CHECK $k"
	rc=0
	check "$k" "${disks[k - 1]}" "$seed" || rc=$?
	echo "CHECKED $k $rc"
done
