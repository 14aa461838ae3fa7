#!/bin/bash
# guest-kernel: 6.12
# rdmablk-ublk with busy-poll=yes: fio libaio writes and reads back crc32c-verified data at QD1
# and QD8, and at QD1 the queue thread sleeps about once per IO (for the next request), not
# twice (for the request, then for its reply), counted from its voluntary context switches. The
# same count on a device without busy-poll, on the same target, is the control: above 1.5.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queue-depth=16 busy-poll=yes
BUSY=$DEV BUSY_PID=$UBLK_PID

for qd in 1 8; do
    step "fio-qd$qd" fio --name="busy$qd" --filename="$BUSY" --allow_file_create=0 --ioengine=libaio \
        --direct=1 --rw=randwrite --bs=4k --iodepth="$qd" --size=8M --offset=$((qd << 20)) \
        --verify=crc32c --do_verify=1 || fail "fio at QD$qd on $BUSY failed"
    grep -q 'err= 0' "$LOGS/fio-qd$qd.log" || fail "fio at QD$qd reported errors"
done
ok "busy-poll=yes: crc32c-verified writes at QD1 and QD8"

ublk_add plain hostname="$RDMABLK_ADDR" export=disk0 queue-depth=16
PLAIN=$DEV PLAIN_PID=$UBLK_PID

# sleeps_per_io DEV PID: voluntary context switches of PID's busiest thread per read, over a
# QD1 run of 1000 4 KiB reads.
sleeps_per_io() {
    local dev=$1 pid=$2 before after ios0 ios1
    snap() { grep -h voluntary_ctxt_switches /proc/"$pid"/task/*/status | grep -v nonvol | awk '{print $2}'; }
    before=$(snap | tr '\n' ' ')
    ios0=$(awk '{print $1}' "/sys/block/${dev#/dev/}/stat")
    fio --name=q1 --filename="$dev" --allow_file_create=0 --ioengine=libaio --direct=1 \
        --rw=randread --bs=4k --iodepth=1 --size=32M --number_ios=1000 \
        >>"$LOGS/sleeps.log" 2>&1 || fail "fio QD1 reads on $dev failed"
    after=$(snap | tr '\n' ' ')
    ios1=$(awk '{print $1}' "/sys/block/${dev#/dev/}/stat")
    python3 -c 'import sys
b = [int(x) for x in sys.argv[1].split()]; a = [int(x) for x in sys.argv[2].split()]
print("%.2f" % (max(y - x for x, y in zip(b, a)) / max(1, int(sys.argv[3]))))' \
        "$before" "$after" $((ios1 - ios0))
}
busy=$(sleeps_per_io "$BUSY" "$BUSY_PID")
plain=$(sleeps_per_io "$PLAIN" "$PLAIN_PID")
echo "queue thread sleeps per QD1 read: busy-poll $busy, without $plain"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 1.5)' "$plain" ||
    fail "control: without busy-poll the queue thread slept only $plain times per IO"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 1.5)' "$busy" ||
    fail "with busy-poll the queue thread still slept $busy times per IO"
ok "queue thread sleeps per QD1 read: $busy with busy-poll=yes, $plain without"
