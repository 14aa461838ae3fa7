#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# busy-poll=adaptive reads a completion channel only when it can hold an event: over 2000 QD1
# and 2000 QD8 4 KiB reads, the server's exit lines count under 0.5 empty reads of its
# connections' completion channels per request (0.19 seen with one queue, 0.10 with two).
# Negative control, run once by hand on the build before the spin skipped them, where each
# poll of a spin that followed an armed reap read the channel until the reply's event came:
# 266938 for 4003 requests, 67 each.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queue-depth=16
for qd in 1 8; do
    step "read-qd$qd" fio --name=q"$qd" --filename="$DEV" --allow_file_create=0 --ioengine=libaio \
        --direct=1 --rw=randread --bs=4k --iodepth="$qd" --size=32M --number_ios=2000 ||
        fail "fio QD$qd reads on $DEV failed"
done
ublk_del_wait ublk
reqs=$(ublk_exit_sum "$LOGS/ublk.log" requests)
empty=$(ublk_exit_sum "$LOGS/ublk.log" empty)
[ "$reqs" != none ] && [ "$reqs" -ge 4000 ] ||
    fail "the exit lines count $reqs requests, not the 4000 reads: $(grep 'queue 0' "$LOGS/ublk.log")"
python3 -c 'import sys; sys.exit(not int(sys.argv[1]) < 0.5 * int(sys.argv[2]))' "$empty" "$reqs" ||
    fail "$empty empty reads of the completion channels for $reqs requests (want under 0.5 each)"
ok "$empty empty reads of the completion channels for $reqs requests"
