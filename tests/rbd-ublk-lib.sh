# Shared by the ext4-on-RBD failover tests and the history test (guest kernel 6.12): a one-node
# Ceph cluster with Ceph's default watch timeout (30 s), targets a and b on two addresses serving
# one RBD image as disk0, and an rdmablk-ublk device on hostname=A,B with the default timeout and
# keepalive; for ext4, mounted on it, files written and summed, and a writer that keeps writing
# files (each summed as written) while a fault happens. Sourced after ublk-lib.sh, ceph-lib.sh
# and failover-lib.sh.
# shellcheck shell=bash
MNT=$T/mnt

# rbd_ublk_device: the cluster (Ceph's default 30 s watch timeout), targets a and b on one
# 64M image, and an rdmablk-ublk device on hostname=A,B with the defaults (timeout 30 s,
# keepalive 2 s), 2 queues; sets DEV, PID_A, PID_B.
rbd_ublk_device() {
    require_ublk
    start_two_rbd_targets
    ublk_add ublk hostname="$RDMABLK_ADDR,$ADDR2" export=disk0 queues=2
}

# rbd_ublk_up: all of the above but the writer; sets DEV, PID_A, PID_B.
rbd_ublk_up() {
    requires mkfs.ext4 md5sum dmesg
    rbd_ublk_device
    dmesg >"$T/dmesg.before"
    step mkfs mkfs.ext4 -q -F "$DEV" || fail "mkfs.ext4 failed"
    mkdir -p "$MNT"
    step mount mount "$DEV" "$MNT" || fail "mount failed"
    on_exit umount "$MNT"
    for i in 1 2 3; do
        head -c $((i * 2))M /dev/urandom >"$MNT/before$i"
    done
    sync -f "$MNT"
    (cd "$MNT" && md5sum before*) >"$T/before.sums"
    rbd_lock_is "$T/a.conf" disk0 owner || fail "a does not write the image"
}

# start_writer: in the background, files of 256 KiB (32 names, over and over) written one after
# another with fsync, about one a second, each summed into $T/writer.sums once written (log
# $LOGS/writer.log); sets WRITER_PID. It stops between two files once $T/writer.stop exists
# (stop_writer): a kill could land after a file's dd and before its sum, and that file would
# then read back "wrong". The pause keeps its cost (its I/O through Ceph, and three processes a
# file, each about 35 ms of CPU under TCG) off the failover it waits through: with a file every
# second the device is written throughout the fault, which is what the tests need.
start_writer() {
    rm -f "$T/writer.stop"
    (
        set -e
        i=0
        while [ ! -e "$T/writer.stop" ]; do
            i=$((i + 1))
            head -c 256K /dev/urandom >"$T/w.tmp"
            # 32 names over and over: the 64M image never fills up.
            dd if="$T/w.tmp" of="$MNT/w$((i % 32))" bs=256K conv=fsync status=none
            sum=$(md5sum <"$T/w.tmp")
            echo "${sum%% *}  w$((i % 32))" >>"$T/writer.sums"
            nap 1
        done
    ) >"$LOGS/writer.log" 2>&1 &
    WRITER_PID=$!
    track_pid "$WRITER_PID"
}

# writer_wrote N: the writer finished at least N files (for wait_for).
writer_wrote() {
    [ "$(wc -l <"$T/writer.sums" 2>/dev/null || echo 0)" -ge "$1" ]
}

# stop_writer: ask the writer to stop after the file it is writing, and wait until it has; fail
# if it does not stop, or stopped on an error.
stop_writer() {
    local rc=0
    touch "$T/writer.stop"
    wait_exit 120 "$WRITER_PID" || rc=$?
    [ "$rc" = 124 ] && fail "the writer did not stop within 120 s of being asked"
    [ "$rc" = 0 ] || fail "the writer failed (exit $rc): $(cat "$LOGS/writer.log")"
}

# own_io_errors NAME: true when the kernel log lines on stdin hold an I/O, ext4 or jbd2 error of
# the block device NAME (ublkb1, not ublkb10). Other lanes' ublk tests make errors on their own
# devices on purpose (test-ublk-timeout, -crash): those are not this test's. The kernel names
# the device in each: "I/O error, dev ublkb1, sector", "Buffer I/O error on dev ublkb1",
# "EXT4-fs error (device ublkb1)", "EXT4-fs (ublkb1): I/O error while writing superblock",
# "JBD2: ... for ublkb1-8". The block layer's lines share one rate limit with every other
# device's: one of ours folded into "callbacks suppressed" is said, not counted (the writer's
# fsync and the read-backs still see a lost write).
own_io_errors() {
    local log
    log=$(cat)
    if grep -q "blk_print_req_error: .*callbacks suppressed" <<<"$log"; then
        echo "note: the kernel suppressed some block I/O error lines (rate limit) meanwhile" >&2
    fi
    grep -Ei "I/O error|error, dev|EXT4-fs error|EXT4-fs warning|Buffer I/O|blk_update_request|JBD2|Aborting journal" <<<"$log" |
        grep -E "(^|[^[:alnum:]])$1([^0-9]|$)"
}

# margin_note SECS WHAT: the failover took SECS; the writer's requests survive it only within
# the initiator's 30 s timeout, so say when it took over 20 s (these tests run beside others).
margin_note() {
    [ "$1" -le 20 ] || echo "note: $2 took $1 s, near the initiator's 30 s timeout"
}

# check_after_fault: the writer still runs and wrote more after the fault; then it stops, and
# every file written before the fault and every file the writer summed reads back the same
# through a remount, and the kernel logged no I/O or ext4 error naming this test's device.
check_after_fault() {
    local n
    n=$(wc -l <"$T/writer.sums")
    wait_for 120 writer_wrote $((n + 5)) || fail "the writer makes no progress after the failover"
    _gone "$WRITER_PID" && fail "the writer stopped: $(cat "$LOGS/writer.log")"
    stop_writer
    sync -f "$MNT"
    step umount umount "$MNT" || fail "umount failed"
    step mount2 mount "$DEV" "$MNT" || fail "remount failed"
    (cd "$MNT" && md5sum -c "$T/before.sums") >"$LOGS/before-md5.log" 2>&1 ||
        fail "a file written before the fault changed"
    # The last sum of each name is what it must hold.
    tac "$T/writer.sums" | awk '!seen[$2]++' >"$T/writer.last"
    (cd "$MNT" && md5sum -c "$T/writer.last") >"$LOGS/writer-md5.log" 2>&1 ||
        fail "a file the writer wrote reads back wrong"
    dmesg >"$T/dmesg.after"
    diff "$T/dmesg.before" "$T/dmesg.after" | grep '^>' >"$LOGS/dmesg-new.log" || true
    if own_io_errors "${DEV#/dev/}" <"$LOGS/dmesg-new.log"; then
        fail "the kernel logged I/O errors on ${DEV#/dev/} (dmesg-new.log)"
    fi
    ok "ext4 on $DEV: $(wc -l <"$T/writer.sums") files written across the fault and the files" \
        "written before it read back the same; no I/O error of ${DEV#/dev/} in dmesg"
}
