# Shared by the ublk tests (guest kernel 6.12): load ublk_drv, and add/remove a device with
# rdmablk-ublk. A ublk test sources only this file (it brings lib.sh and plugin-conf.sh).
# shellcheck shell=bash
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "${BASH_SOURCE[0]}")/plugin-conf.sh"
UBLK=$BUILD/rdmablk-ublk

# require_ublk: skip only where the kernel has no ublk at all (Debian's 6.1); the suite runs
# these tests in a 6.12 guest boot (tests/run-integration), where that never happens.
require_ublk() {
    requires_file "$UBLK"
    [ "$(id -u)" = 0 ] || skip "needs root"
    [ -e /dev/ublk-control ] || modprobe ublk_drv 2>/dev/null || true
    [ -e /dev/ublk-control ] || skip "no ublk in kernel $(uname -r) (CONFIG_BLK_DEV_UBLK)"
}

# ublk_add NAME KEY=VALUE...: add a device; sets DEV (/dev/ublkbN) and UBLK_PID (the server).
# The server's later messages go to $LOGS/NAME.log too.
ublk_add() {
    local name=$1
    shift
    DEV=$("$UBLK" add "$@" 2>>"$LOGS/$name.log") || fail "rdmablk-ublk add $*: $(cat "$LOGS/$name.log")"
    [ -b "$DEV" ] || wait_for 10 test -b "$DEV" || fail "rdmablk-ublk printed '$DEV', which is no block device"
    UBLK_PID=$("$UBLK" list 2>/dev/null | sed -n "s|^$DEV state=live pid=\([0-9]*\).*|\1|p")
    [ -n "$UBLK_PID" ] || fail "rdmablk-ublk list does not show $DEV live: $("$UBLK" list 2>&1)"
    on_exit _ublk_del_own "$DEV" "$UBLK_PID"
    echo "$name: $DEV (server pid ${UBLK_PID:-?})" >>"$LOGS/$name.log"
}

# _ublk_shows DEV PIDS: true (0) while `rdmablk-ublk list` (printed) shows DEV with a pid that
# matches the extended regex PIDS; 1 when it does not; 2 when `list` itself failed.
_ublk_shows() {
    local list
    list=$("$UBLK" list 2>&1) || { echo "rdmablk-ublk list failed: $list"; return 2; }
    echo "$list"
    grep -Eq "^$1 state=[^ ]* pid=($2) " <<<"$list" || return 1
}

# ublk_listed DEV PID: true (0) while `list` shows DEV as the device of the server PID, or as
# a stopped device (the kernel sets a dead device's pid to -1, and a new one's until
# START_DEV); 1 when it does not; 2 when `list` itself failed. `add` takes the lowest free
# number, so once this test's device is gone its name may be another test's, in another lane:
# the name alone proves nothing, and a live device under another pid is not ours.
ublk_listed() { _ublk_shows "$1" "$2|-1"; }

# ublk_unlisted DEV PID: true only when `list` ran and shows neither (for wait_for).
ublk_unlisted() {
    local rc=0
    ublk_listed "$@" || rc=$?
    [ "$rc" = 1 ]
}

# _ublk_del_own DEV PID: at exit, remove DEV only while the server PID still serves it. Not a
# dead device (pid -1): the kernel lists a device in the middle of its `add` that way until
# START_DEV, so it may be another lane's that took the number once ours was gone (seen: a test's
# exit removed the next test's new device). A test whose server died removes its device itself,
# as test-ublk-crash does.
_ublk_del_own() {
    _ublk_shows "$1" "$2" >/dev/null || return 0
    "$UBLK" del "$1"
}

# ublk_setup SIZE [KEY=VALUE...]: RDMA and ublk present, a target with disk0 of SIZE
# (plugin-conf.sh), and a device on it (DEV, UBLK_PID; its server log is $LOGS/ublk.log).
ublk_setup() {
    local size=$1
    shift
    require_rdma
    require_ublk
    write_target_conf "$size"
    start_target "$T/target.conf"
    ublk_add ublk hostname="$RDMABLK_ADDR" export=disk0 "$@"
}

# verify_qd1_qd8 DEV NAME: crc32c-verified fio random writes on DEV at QD1 and QD8 (8 MiB
# each, at offsets 1 and 8 MiB); steps NAME1 and NAME8.
verify_qd1_qd8() {
    local dev=$1 name=$2 qd
    for qd in 1 8; do
        step "$name$qd" fio --name="$name$qd" --filename="$dev" --allow_file_create=0 \
            --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth="$qd" --size=8M \
            --offset=$((qd << 20)) --verify=crc32c --do_verify=1 || fail "fio at QD$qd on $dev failed"
        grep -q 'err= 0' "$LOGS/$name$qd.log" || fail "fio at QD$qd on $dev reported errors"
    done
}

# fewer_sleeps WHAT DEV PID PLAIN_DEV PLAIN_PID: at QD1 the queue thread of DEV (server PID)
# sleeps under 1.5 times per read, and that of PLAIN_DEV (the control, busy-poll=no) over 1.5.
fewer_sleeps() {
    local what=$1 fast slow
    fast=$(sleeps_per_io "$2" "$3") && [ -n "$fast" ] || fail "the QD1 reads on $2 failed"
    slow=$(sleeps_per_io "$4" "$5") && [ -n "$slow" ] || fail "the QD1 reads on $4 failed"
    echo "queue thread sleeps per QD1 read: $what $fast, busy-poll=no $slow"
    python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 1.5)' "$slow" ||
        fail "control: with busy-poll=no the queue thread slept only $slow times per IO"
    python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 1.5)' "$fast" ||
        fail "with $what the queue thread still slept $fast times per IO"
    ok "queue thread sleeps per QD1 read: $fast with $what, $slow with busy-poll=no"
}

# sleeps_per_io DEV PID: voluntary context switches of PID's busiest thread per read, over a
# QD1 run of 1000 4 KiB reads, none of which may take 900 ms (a lost wake-up waits for the
# queue's 1 s tick).
sleeps_per_io() {
    local dev=$1 pid=$2 before after ios0 ios1
    snap() { grep -h voluntary_ctxt_switches /proc/"$pid"/task/*/status | grep -v nonvol | awk '{print $2}'; }
    before=$(snap | tr '\n' ' ')
    ios0=$(awk '{print $1}' "/sys/block/${dev#/dev/}/stat")
    fio --name=q1 --filename="$dev" --allow_file_create=0 --ioengine=libaio --direct=1 \
        --rw=randread --bs=4k --iodepth=1 --size=32M --number_ios=1000 --max_latency=900ms \
        >>"$LOGS/sleeps.log" 2>&1 || fail "fio QD1 reads on $dev failed"
    after=$(snap | tr '\n' ' ')
    ios1=$(awk '{print $1}' "/sys/block/${dev#/dev/}/stat")
    python3 -c 'import sys
b = [int(x) for x in sys.argv[1].split()]; a = [int(x) for x in sys.argv[2].split()]
print("%.2f" % (max(y - x for x, y in zip(b, a)) / max(1, int(sys.argv[3]))))' \
        "$before" "$after" $((ios1 - ios0))
}

# ublk_del_wait NAME [SECS]: remove $DEV (step del-NAME) and wait until its server (UBLK_PID)
# has exited, so that its exit lines are in the log; SECS bounds each (default: 120 for the
# del, 30 for the exit).
ublk_del_wait() {
    step "del-$1" timeout "${2:-120}" "$UBLK" del "$DEV" ||
        fail "rdmablk-ublk del $DEV failed or took over ${2:-120} s"
    wait_for "${2:-30}" _gone "$UBLK_PID" || fail "the server (pid $UBLK_PID) did not exit"
}

# ublk_exit_sum LOG FIELD: one counter of the server's exit lines in LOG, one line per queue and
# connection ("queue Q[ connection C]: N requests, N resent, N bytes copied by the library, N
# empty reads of the completion channel, N bytes of request pool registered, N bytes read
# inline (N replies with immediate)"), summed; "none" when LOG has no such line. FIELD:
# requests, resent, copied, empty, pool, inline or imm.
ublk_exit_sum() {
    awk -v f="$2" '
        match($0, /: queue [0-9]+( connection [0-9]+)?: [0-9]+ requests, [0-9]+ resent, [0-9]+ bytes copied by the library, [0-9]+ empty reads of the completion channel, [0-9]+ bytes of request pool registered, [0-9]+ bytes read inline \([0-9]+ replies with immediate\)/) {
            split(substr($0, RSTART, RLENGTH), w, /[ :,()]+/)
            # w: "" queue Q [connection C] N requests N resent N bytes copied by the library N
            # empty reads of the completion channel N bytes of request pool registered N bytes
            # read inline N replies with immediate
            o = (w[4] == "connection") ? 2 : 0
            v["requests"] = w[4 + o]; v["resent"] = w[6 + o]; v["copied"] = w[8 + o]
            v["empty"] = w[14 + o]; v["pool"] = w[21 + o]; v["inline"] = w[27 + o]
            v["imm"] = w[31 + o]
            s += v[f]; n++
        }
        END { if (n) print s; else print "none" }' "$1"
}
