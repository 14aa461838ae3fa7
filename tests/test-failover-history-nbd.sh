#!/bin/bash
# test-timeout: 900
# test-shares: ceph nbd
# The history test (tests/test-failover-history.sh, tests/history-lib.sh) with the other client:
# nbdkit rdma with hostname=A,B and the default timeout and keepalive, and the kernel's
# nbd-client with two connections, on Debian's 6.1 kernel. Two targets on one RBD image
# (Ceph's default 30 s watch timeout); each round four writers write generations into 256
# blocks of /dev/nbd0 for 45 s while a seeded fault (kill, stop, flap, restart, fence) hits the
# target that writes the image; then every block is checked against the history. 2 rounds, 20
# under make check-long; the checker's negative control once.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"
# shellcheck source=tests/history-lib.sh
. "$(dirname "$0")/history-lib.sh"

requires nbdkit nbd-client dd
[ -b /dev/nbd0 ] || skip "no /dev/nbd0 (modprobe nbd)"
requires_file "$BUILD/nbdkit-rdma-plugin.so"
history_setup
start_two_rbd_targets
# The defaults: timeout 30 s, keepalive 2 s.
start_nbdkit hostname="$RDMABLK_ADDR,$ADDR2" export=disk0
on_exit nbd-client -d /dev/nbd0
step attach nbd-client -unix "$NBD_SOCK" /dev/nbd0 -b 4096 -C 2 || fail "nbd-client attach failed"
history_run nbdkit /dev/nbd0 "$LOGS/nbdkit.log"
