#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# Not a test: a measurement, run as one (alone on the host, nothing else running):
#   RDMABLK_TEST_TRACE_OUT=DIR tests/run-integration scripts/probe-aio-callgrind.sh
# (DIR: a directory the guest shares, e.g. the RESULTS of that run)
# The initiator library's user-space instructions per IO on rdmablk-ublk's path (the
# asynchronous API, direct requests into one registered region), counted by callgrind:
# rdmablk-ublk itself does not run under valgrind (its io_uring commands stall there), so
# tests/tools/rdmablk-aio-loop drives the same calls from one thread, without ublk, against the
# bench's target setup (probe_target; the target runs natively). 4 KiB random reads, then
# writes, at QD RDMABLK_TEST_CG_QD (default 32) for 6 s each after 1 s of warm-up, sleeping on
# the readiness fd between reaps (busy-poll=no: a spin's empty polls are time, not work), or
# with RDMABLK_TEST_CG_BUSY=1 polling without a pause (-b: what one pass of a spin costs).
# Each run dumps DIR/cg-aio.PID.1 (the measured part) and its IOs into DIR/cg-aio-ios.txt. Then:
#   scripts/callgrind-report IOS DIR/cg-aio.PID.1
# shellcheck source=scripts/probe-lib.sh
. "$(dirname "$0")/probe-lib.sh"
requires valgrind
require_rdma
out=${RDMABLK_TEST_TRACE_OUT:?set RDMABLK_TEST_TRACE_OUT to a directory the guest shares}
qd=${RDMABLK_TEST_CG_QD:-32}
busy=()
[ "${RDMABLK_TEST_CG_BUSY:-0}" = 1 ] && busy=(-b)
probe_target 256
for rw in read write; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg-aio.%p" \
        "$BUILD/tests/rdmablk-aio-loop" -H "$RDMABLK_ADDR" -e bench -q 32 "${busy[@]}" \
        "$rw" "$qd" 6 1 >"$T/aio-$rw.out" 2>"$T/aio-$rw.err" ||
        { cat "$T/aio-$rw.err" >&2; fail "rdmablk-aio-loop $rw under callgrind failed"; }
    ios=$(awk '$1 == "ios" { print $2 }' "$T/aio-$rw.out")
    [ -n "$ios" ] && [ "$ios" -gt 0 ] || fail "rdmablk-aio-loop $rw: no IO counted"
    pid=$(grep -o '^==[0-9]*==' "$T/aio-$rw.err" | head -n 1 | tr -d =)
    # No dump without callgrind's client requests (a build without valgrind/callgrind.h).
    [ -s "$out/cg-aio.$pid.1" ] || fail "no dump cg-aio.$pid.1 of the measured part"
    echo "$rw qd $qd ios $ios dump cg-aio.$pid.1" | tee -a "$out/cg-aio-ios.txt"
done
stop_target 120
ok "probe done"
