#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# Each connection's housekeeping thread (rb-housekeep: keepalive NOPs, CM and device events, a
# dead QP's disconnect) sleeps until something is due instead of ticking. With the default
# keepalive of 2 s it wakes about once per keepalive interval, whether the device is idle or
# busy: at most 6 times in 6 s each (the build before ticked every 500 ms, 12 or more). Counted
# from each thread's own voluntary_ctxt_switches, one queue with two connections, over 6 s idle
# and over 6 s of QD1 reads (which take the first connection only). The keepalive still does its
# job: an idle connection sends a NOP every keepalive, so each of the two sends at least 2 in
# 8 idle seconds and the idle one at least 2 during the reads (the target counts them per
# connection), and no connection is declared lost (an unanswered NOP ends one within
# 3 x keepalive).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires fio
ublk_setup 64M queues=1 connections=2

# The housekeeping threads' voluntary switches, one line each: TID COUNT.
hk_switches() {
    local task
    for task in /proc/"$UBLK_PID"/task/*; do
        [ "$(cat "$task/comm" 2>/dev/null)" = rb-housekeep ] || continue
        printf '%s %s\n' "${task##*/}" "$(sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "$task/status")"
    done
}

# hk_woken WHAT BEFORE AFTER: each thread's wake-ups between the two snapshots, at most 6.
hk_woken() {
    local what=$1 tid n0 n1 threads=0 woken=""
    while read -r tid n0; do
        n1=$(printf '%s\n' "$3" | awk -v t="$tid" '$1 == t { print $2 }')
        [ -n "$n1" ] || fail "housekeeping thread $tid ended during the $what period"
        woken="$woken $((n1 - n0))"
        threads=$((threads + 1))
        [ $((n1 - n0)) -le 6 ] ||
            fail "$what: housekeeping thread $tid was woken $((n1 - n0)) times in 6 s (at most 6)"
    done <<<"$2"
    [ "$threads" -eq 2 ] || fail "expected 2 housekeeping threads (rb-housekeep), found $threads"
    ok "$what: the housekeeping threads were woken$woken times in 6 s"
}

# nops: each connection's NOPs as the target counted them, "N N" (non-zero status when
# --stats does not answer).
nops() {
    stats_get "$T/target.conf" 'connection_list[0].nops' 'connection_list[1].nops' | tr '\n' ' '
}

# nops_grew WHAT BEFORE AFTER NEED: at least NEED of the two connections (the idle ones) each
# sent at least 2 NOPs; no connection lost.
nops_grew() {
    local i n=0 b a
    for i in 1 2; do
        b=$(echo "$2" | awk -v i=$i '{ print $i }')
        a=$(echo "$3" | awk -v i=$i '{ print $i }')
        [ $((a - b)) -ge 2 ] && n=$((n + 1))
    done
    [ "$n" -ge "$4" ] ||
        fail "$1: keepalive NOPs per connection went from $2to $3: $n sent 2 or more, expected $4"
    if grep -q 'lost' "$LOGS/ublk.log"; then
        fail "$1: a connection was lost: $(grep 'lost' "$LOGS/ublk.log")"
    fi
    ok "$1: keepalive NOPs per connection went from $2to $3, no connection lost"
}

nap 2       # past add's own start-up
nops0=$(nops) || fail "--stats failed"
before=$(hk_switches)
nap 6
hk_woken idle "$before" "$(hk_switches)"
nap 2
nops1=$(nops) || fail "--stats failed"
nops_grew idle "$nops0" "$nops1" 2

before=$(hk_switches)
fio --name=busy --filename="$DEV" --allow_file_create=0 --ioengine=libaio --direct=1 \
    --rw=randread --bs=4k --iodepth=1 --size=32M --time_based --runtime=6 \
    >"$LOGS/busy.log" 2>&1 || fail "fio QD1 reads on $DEV failed"
hk_woken "QD1 reads" "$before" "$(hk_switches)"
nops2=$(nops) || fail "--stats failed"
nops_grew "QD1 reads" "$nops1" "$nops2" 1
ublk_del_wait busy
