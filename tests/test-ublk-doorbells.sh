#!/bin/bash
# guest-kernel: 6.12
# Doorbell batching: what one pass of an rdmablk-ublk queue thread sends goes out in one
# ibv_post_send. fio writes crc32c-verified data at QD32 and reads it back, and the server's exit
# line counts fewer doorbells than requests (at most 0.8 per request). The control, a device that
# serves only QD1 reads, where every pass has one request to send: about one doorbell per request
# (at least 0.9), so the count does see a post per request when there is nothing to batch.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queues=1 queue-depth=32

# count NAME WHAT: WHAT ("requests" or "doorbells") from the queue's exit lines in NAME.log.
count() {
    case $2 in
    requests) sed -n 's/.*: queue 0: \([0-9]*\) requests, .*/\1/p' "$LOGS/$1.log" ;;
    doorbells) sed -n 's/.*: queue 0: \([0-9]*\) doorbells (ibv_post_send calls).*/\1/p' "$LOGS/$1.log" ;;
    esac | tail -n 1
}
# del_wait NAME: remove $DEV and wait until its server (UBLK_PID) has exited.
del_wait() {
    step "del-$1" timeout 120 "$UBLK" del "$DEV" || fail "rdmablk-ublk del $DEV failed"
    wait_for 30 _gone "$UBLK_PID" || fail "the server (pid $UBLK_PID) did not exit"
}
# ratio NAME: doorbells per request of NAME's queue 0.
ratio() {
    local req bells
    req=$(count "$1" requests) bells=$(count "$1" doorbells)
    [ -n "$req" ] && [ -n "$bells" ] && [ "$req" -gt 0 ] ||
        fail "$1: no request and doorbell counts in its log: $(grep 'queue 0:' "$LOGS/$1.log")"
    echo "$1: $bells doorbells for $req requests" >&2
    python3 -c 'import sys; print("%.3f" % (int(sys.argv[1]) / int(sys.argv[2])))' "$bells" "$req"
}

step fio-qd32 fio --name=qd32 --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 \
    --rw=randwrite --bs=4k --iodepth=32 --iodepth_batch_submit=8 --size=16M \
    --verify=crc32c --do_verify=1 || fail "fio at QD32 on $DEV failed"
grep -q 'err= 0' "$LOGS/fio-qd32.log" || fail "fio at QD32 reported errors"
ok "QD32: 16 MiB of 4 KiB random writes read back and crc32c-verified"
del_wait ublk
deep=$(ratio ublk)

ublk_add shallow hostname="$RDMABLK_ADDR" export=disk0 queues=1 queue-depth=32
step fio-qd1 fio --name=qd1 --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 \
    --rw=randread --bs=4k --iodepth=1 --size=16M --number_ios=400 || fail "fio at QD1 on $DEV failed"
del_wait shallow
shallow=$(ratio shallow)

python3 -c 'import sys; sys.exit(not float(sys.argv[1]) >= 0.9)' "$shallow" ||
    fail "control: at QD1 there were only $shallow doorbells per request (want about 1)"
ok "control: QD1 reads ring $shallow doorbells per request"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) <= 0.8)' "$deep" ||
    fail "at QD32 each request still rang $deep doorbells: nothing was batched"
ok "QD32 rings $deep doorbells per request (QD1: $shallow)"
