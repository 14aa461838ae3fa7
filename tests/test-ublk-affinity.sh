#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# Each ublk queue thread of rdmablk-ublk runs on the CPUs the block layer maps to its queue
# (GET_QUEUE_AFFINITY, as ublksrv does), so that a request and its queue thread share a CPU.
# A device with one queue per CPU: for each queue N, one server thread must be allowed exactly
# the CPUs of /sys/block/ublkbX/mq/N/cpu_list. Then data written through the device reads
# back the same with those threads serving it. (The build before this pinned no thread.)
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || skip "needs 2 CPUs for 2 queues (the guest has $ncpu)"
ublk_setup 16M queues=2
blk=${DEV##*/}
for t in /proc/"$UBLK_PID"/task/*; do
    printf '%s %s\n' "${t##*/}" "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status")"
done >"$LOGS/threads.txt"
for q in 0 1; do
    want=$(cat "/sys/block/$blk/mq/$q/cpu_list") || fail "no /sys/block/$blk/mq/$q"
    want=${want// /}
    n=$(awk -v w="$want" '$2 == w' "$LOGS/threads.txt" | wc -l)
    [ "$n" = 1 ] || fail "queue $q serves CPUs $want, but $n server threads are pinned there: $(tr '\n' ';' <"$LOGS/threads.txt")"
    ok "queue $q (CPUs $want): its thread runs only there"
done

head -c 4M /dev/urandom >"$T/data"
step write dd if="$T/data" of="$DEV" bs=64K oflag=direct status=none || fail "writing $DEV failed"
step read dd if="$DEV" of="$T/back" bs=64K count=64 iflag=direct status=none || fail "reading $DEV failed"
cmp "$T/data" "$T/back" || fail "data read back through the pinned queues differs"
ok "4 MiB written and read back the same through both queues"
