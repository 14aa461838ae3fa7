#!/bin/bash
# guest-kernel: 6.12
# test-shares: alone
# Not a test: a measurement, run as one (alone on the host, nothing else running):
#   RDMABLK_TEST_TRACE_OUT=DIR tests/run-integration scripts/probe-ublk-timeline.sh
# (DIR: a directory the guest shares, e.g. the RESULTS of that run)
# Where a QD1 IO's round trip goes, thread by thread: rdmablk-ublk (its defaults, one device)
# over the bench's target setup (a 512 MiB file on ext4 in the page cache, durability = fua),
# an 8 s fio randread and randwrite row at QD1 each (RDMABLK_TEST_TIMELINE_QD=N: at QD N),
# and 1 s of tracefs in the middle of each:
# sched_switch, sched_wakeup, every syscall's entry and exit and the entries of rxe's task
# functions. The raw recordings land in DIR as timeline-RW.txt with the threads' ids
# (timeline-RW.tids); scripts/timeline-report (host side) cuts them into per-IO steps.
# shellcheck source=scripts/probe-lib.sh
. "$(dirname "$0")/probe-lib.sh"
requires fio
require_rdma
require_ublk
out=${RDMABLK_TEST_TRACE_OUT:?set RDMABLK_TEST_TRACE_OUT to a directory the guest shares}
qd=${RDMABLK_TEST_TIMELINE_QD:-1}
tr=/sys/kernel/tracing
events="sched/sched_switch sched/sched_wakeup raw_syscalls/sys_enter raw_syscalls/sys_exit"
# At exit (after the device is gone, so nothing runs under it): everything off, as a later
# probe in the same boot expects to find it.
tracer_off() {
    local e
    echo 0 >"$tr/tracing_on"
    echo nop >"$tr/current_tracer"
    for e in $events; do echo 0 >"$tr/events/$e/enable"; done
    : >"$tr/set_ftrace_filter"
    echo 1408 >"$tr/buffer_size_kb"
    return 0
} 2>/dev/null
probe_target 512
on_exit tracer_off

# The tracepoints go on once, before any row: switching the syscall tracepoints on and off
# while threads run patched live text often enough to oops a TCG guest (scripts/bench-run).
mountpoint -q "$tr" || mount -t tracefs nodev "$tr"
echo 0 >"$tr/tracing_on"
echo 60000 >"$tr/buffer_size_kb"
: >"$tr/set_ftrace_filter"
for f in rxe_requester rxe_responder rxe_completer rxe_rcv rxe_sched_task rxe_run_task \
    rxe_post_send rxe_poll_cq rxe_cq_post rxe_req_notify_cq ublk_queue_rq ublk_ch_uring_cmd \
    ublk_commit_completion blk_mq_end_request; do
    echo "$f" >>"$tr/set_ftrace_filter" 2>/dev/null || echo "no ftrace function $f"
done
echo function >"$tr/current_tracer"
for e in $events; do
    echo 1 >"$tr/events/$e/enable"
done

for rw in randread randwrite; do
    ublk_add "$rw" hostname="$RDMABLK_ADDR" export=bench queue-depth=32
    sleep 1
    fio --name=x --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 --rw=$rw \
        --bs=4k --iodepth="$qd" --size=512M --time_based --runtime=8 --output-format=json \
        --output="$T/$rw.json" &
    fp=$!
    sleep 4
    { for p in "T $TARGET_PID" "K $UBLK_PID"; do ls "/proc/${p#* }/task" | sed "s/^/${p% *} /"; done
      echo "F $(pgrep -x fio | tr '\n' ' ')"; } >"$out/timeline-$rw.tids"
    echo >"$tr/trace"
    read -r -a d1 <"/sys/block/${DEV#/dev/}/stat"
    echo 1 >"$tr/tracing_on"
    sleep 1
    echo 0 >"$tr/tracing_on"
    read -r -a d2 <"/sys/block/${DEV#/dev/}/stat"
    # diskstats: reads completed is field 1, writes completed field 5
    echo "ios $((d2[0] - d1[0] + d2[4] - d1[4])) qd $qd" >>"$out/timeline-$rw.tids"
    cat "$tr/trace" >"$out/timeline-$rw.txt"
    grep -h overrun "$tr"/per_cpu/cpu*/stats >>"$out/timeline-$rw.tids"
    wait "$fp" || fail "fio $rw"
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]; print(sys.argv[2], int(j["iops"]), "IOPS, p50", j["clat_ns"]["percentile"]["50.000000"]//1000, "us")' \
        "$T/$rw.json" "${rw#rand}" | tee -a "$out/timeline-$rw.tids"
    ublk_del_wait "$rw"
done
ok "probe done"
