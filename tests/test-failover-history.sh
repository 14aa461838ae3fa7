#!/bin/bash
# guest-kernel: 6.12
# test-timeout: 900
# test-shares: ceph
# No acknowledged write is ever undone across failover, proven by a history checker (Jepsen's
# register model, one register per block: tests/tools/rdmablk-history.c).
#
# Targets a and b serve one RBD image (Ceph's default 30 s watch timeout); rdmablk-ublk serves
# it on hostname=A,B with the default timeout and keepalive (2 queues). Each round, four writer
# threads write generations into 256 blocks for 45 s, recording every write's invocation and
# outcome and every FLUSH, while one fault, drawn from a seeded schedule, hits the target that
# writes the image:
#   kill     kill -9, restarted 10 s later
#   stop     SIGSTOP for 40 s (past the watch timeout), then SIGCONT
#   flap     b's address deleted for 8 s and added again (a path flap; a's address is the
#            initiator's own as well)
#   restart  SIGTERM and started again
#   fence    `ceph osd blocklist add` of its client instance (it lives on, fenced)
# Then the checker reads every block through the device: an acknowledged write older than the
# block's value, a generation never written, or a durable write missing fails the round.
# (The fault names the target it hit; flap always hits b's path.) Rounds:
# RDMABLK_TEST_HISTORY_ROUNDS, 2 by default, 20 under make check-long; the seed is
# RDMABLK_TEST_HISTORY_SEED, else 79776 in make check and drawn in check-long, and printed. The same with nbdkit and nbd-client on 6.1:
# tests/test-failover-history-nbd.sh. Negative control, once: a stale write of an
# acknowledged block's older generation, landing late (what finding 1's fix prevents, and what
# tests/test-rbd-stale-write.sh provokes for real), is reported as a lost acknowledged write.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"
# shellcheck source=tests/ceph-lib.sh
. "$(dirname "$0")/ceph-lib.sh"
# shellcheck source=tests/failover-lib.sh
. "$(dirname "$0")/failover-lib.sh"
# shellcheck source=tests/rbd-ublk-lib.sh
. "$(dirname "$0")/rbd-ublk-lib.sh"
# shellcheck source=tests/history-lib.sh
. "$(dirname "$0")/history-lib.sh"

history_setup
rbd_ublk_device
history_run rdmablk-ublk "$DEV" "$LOGS/ublk.log"
