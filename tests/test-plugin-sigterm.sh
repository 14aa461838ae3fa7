#!/bin/bash
# test-shares: alone
# nbdkit rdma exits 0 on a SIGTERM that follows a kernel NBD disconnect at once.
#
# nbdkit 1.32 skips .close for a connection that ends after it was told to quit, then calls
# .cleanup, .unload and dlclose()s the plugin. A client left open there kept its housekeeping
# thread running in unmapped code: nbdkit died with SIGSEGV (exit 139) in about a third of the
# runs. keepalive=1 makes that thread tick every 250 ms, and the cycle repeats ROUNDS times
# (RDMABLK_TEST_SIGTERM_ROUNDS, default 8), so the window is hit often. A connection thread
# that nbdkit does not join can also end while the process exits: OpenSSL's thread-exit
# destructor then took a lock its atexit cleanup had freed (SIGSEGV about once in 20 rounds
# under load); the plugin turns that cleanup off (rb_crypto_no_atexit).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

requires nbdkit nbd-client blockdev dd
require_rdma
requires_file "$PLUGIN"
[ -b /dev/nbd1 ] || skip "no /dev/nbd1 (modprobe nbd)"
[ "$(id -u)" = 0 ] || skip "needs root"

rounds=${RDMABLK_TEST_SIGTERM_ROUNDS:-8}
DEV=/dev/nbd1
write_target_conf 64M
start_target "$T/target.conf"
on_exit nbd-client -d "$DEV"

# A crash leaves a core in $T (in the guest, whose kernel settings are its own), and the
# failure shows every thread's stack: the last one was OpenSSL's thread-exit destructor.
if [ -n "${RDMABLK_IN_GUEST:-}" ] && echo "$T/core.%p" >/proc/sys/kernel/core_pattern; then
    ulimit -c unlimited
fi
# backtraces: each core's threads, into LOGS/backtrace.log.
backtraces() {
    local core
    command -v gdb >/dev/null || return 0
    for core in "$T"/core.*; do
        [ -e "$core" ] || continue
        gdb -batch -ex 'thread apply all bt' "$(command -v nbdkit)" "$core" \
            >>"$LOGS/backtrace.log" 2>&1
    done
}

skipped=0
for ((round = 1; round <= rounds; round++)); do
    start_nbdkit -v hostname="$RDMABLK_ADDR" export=disk0 keepalive=1
    step "attach-$round" nbd-client -unix "$NBD_SOCK" "$DEV" -b 4096 -C 2 ||
        fail "round $round: nbd-client attach failed"
    wait_for 60 test "$(blockdev --getsize64 "$DEV")" = $((64 << 20)) ||
        fail "round $round: $DEV has the wrong size"
    step "io-$round" dd if=/dev/urandom of="$DEV" bs=64K count=64 oflag=direct ||
        fail "round $round: writing $DEV failed"
    step "io-$round" dd if="$DEV" of=/dev/null bs=64K count=64 iflag=direct ||
        fail "round $round: reading $DEV failed"
    # The SIGTERM goes out as soon as nbd-client -d returns, while nbdkit may still be
    # ending the two connections.
    step "detach-$round" nbd-client -d "$DEV" || fail "round $round: nbd-client -d failed"
    kill -TERM "$NBDKIT_PID"
    rc=0
    wait_exit 120 "$NBDKIT_PID" || rc=$?
    [ "$rc" = 0 ] || { backtraces; fail "round $round: nbdkit exited with $rc after SIGTERM (139: SIGSEGV)"; }
    if grep -q 'did not close before unloading' "$LOGS/nbdkit.log"; then
        skipped=$((skipped + 1))
    fi
done
ok "$rounds rounds: nbdkit exited 0 on SIGTERM right after nbd-client -d" \
    "(in $skipped of them nbdkit skipped .close for a connection)"
