# Shared by the tests of two event loops (tests/test-target-threads-*.sh): threads = 2, one
# export per client, placement by the fewest connections (loop 0 on a tie), checked through
# --stats (loops[], connection_list[].loop). A test sources only this file (it brings
# revoke-lib.sh and lib.sh).
# shellcheck shell=bash
# shellcheck source=tests/revoke-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/revoke-lib.sh"

# write_conf ALLOW: two event loops; the victims' exports v1 and v2 allow ALLOW, the
# bystanders' b1 and b2 (and d1, d2 for the SIGTERM part) always allow us. One export per
# client: two stress clients on one export would overwrite each other's verified data.
write_conf() {
    {
        printf '[target]\nlisten = %s\nadmin-socket = %s.sock\nthreads = 2\nio-threads = 2\n' \
            "$RDMABLK_ADDR" "$conf"
        for e in v1 v2 b1 b2 d1 d2; do
            printf '\n[export %s]\npath = %s/%s.img\nsize = 32M\n' "$e" "$T" "$e"
            case $e in v*) printf 'allow = %s\n' "$1" ;; esac
        done
    } >"$conf.new"
    mv "$conf.new" "$conf"
}

# loops_check WANT-PER-LOOP: --stats lists two loops holding WANT connections each, their sum
# is connections.current, connection_list names each connection's loop consistently, and the
# loops' backing jobs sum to backing_io's. Prints "L0 L1" (the loops' backing jobs).
loops_check() {
    local v errs=()
    # One start of rdmablk-json for all of them: under TCG each process start costs ~35 ms.
    mapfile -t v < <(stats_get "$conf" '#loops' 'loops[0].connections' \
        'loops[1].connections' connections.current '#connection_list[loop=0]' \
        '#connection_list[loop=1]' 'loops[0].backing_jobs' 'loops[1].backing_jobs' \
        backing_io.uring_jobs backing_io.worker_jobs 2>"$LOGS/loops_check.err")
    # Ten numbers, or the reason why not (a missing value leaves its line out).
    [ ${#v[@]} -eq 10 ] && [[ "${v[*]}" =~ ^[0-9]+( [0-9]+){9}$ ]] ||
        { echo "--stats: ${v[*]} $(cat "$LOGS/loops_check.err")"; return 1; }
    [ "${v[0]}" = 2 ] || errs+=("${v[0]} loops, want 2")
    [ "${v[1]} ${v[2]}" = "$1 $1" ] ||
        errs+=("connections per loop [${v[1]}, ${v[2]}], want $1 each")
    [ $((v[1] + v[2])) = "${v[3]}" ] ||
        errs+=("loops hold $((v[1] + v[2])) connections, connections.current is ${v[3]}")
    [ "${v[4]} ${v[5]}" = "${v[1]} ${v[2]}" ] ||
        errs+=("connection_list puts [${v[4]}, ${v[5]}] on the loops, loops[] says [${v[1]}, ${v[2]}]")
    [ $((v[6] + v[7])) = $((v[8] + v[9])) ] ||
        errs+=("loops' backing jobs [${v[6]}, ${v[7]}] do not sum to backing_io's ${v[8]} + ${v[9]}")
    if [ ${#errs[@]} -gt 0 ]; then
        local IFS=';'
        echo "${errs[*]}"
        return 1
    fi
    echo "${v[6]} ${v[7]}"
}

# both_loops_busy WANT-PER-LOOP: loops_check, and each loop has run backing jobs since BASE
# ("L0 L1" from an earlier loops_check).
both_loops_busy() {
    local now
    now=$(loops_check "$1") || { echo "$now"; return 1; }
    # shellcheck disable=SC2086  # two numbers each
    set -- $now $BASE
    echo "loop backing jobs now $1 $2, before $3 $4"
    [ "$1" -gt "$3" ] && [ "$2" -gt "$4" ]
}

# settle WANT-PER-LOOP: wait until the loops hold WANT connections each (clients that just
# left may still have a connection closing); BASE becomes their backing jobs.
settle() {
    wait_for 60 loops_check "$1" >/dev/null || fail "the loops do not settle at $1 connection(s) each"
    BASE=$(loops_check "$1") || fail "--stats: $BASE"
}

# client NAME EXPORT N: busy client NAME on EXPORT, once it is the target's Nth connection
# (one at a time, so that placement is known: the loop with the fewest, loop 0 on a tie).
client() {
    busy "$1" "$2"
    wait_for 60 conns_are "$conf" "$3" || fail "$1: not the target's connection $3"
}

# progress WHAT: where the test is, with its time (a timeout shows the phase it hung in)
progress() { echo "[${SECONDS}s] $*"; }

# start_two_loops ALLOW: write_conf ALLOW, start the target, check it runs two loops; BASE
# becomes "0 0".
start_two_loops() {
    write_conf "$1"
    start_target "$conf"
    stats_check "$conf" "$LOGS/stats.json" "len(s['loops']) == 2" ||
        fail "the target does not run 2 event loops (stats.json)"
    BASE="0 0"
}

# four_clients: the target with two loops, and busy clients v1, v2, b1, b2 (one export each),
# two on each loop: the victims v1 and v2 on both loops, and so the bystanders b1 and b2; both
# loops' io_urings serve them.
four_clients() {
    start_two_loops "$RDMABLK_ADDR 192.0.2.7"
    # Placement goes by the fewest connections: v1 and b1 on one loop, v2 and b2 on the other.
    client v1 v1 1
    client v2 v2 2
    client b1 b1 3
    client b2 b2 4
    wait_for 60 both_loops_busy 2 || fail "the four connections are not two on each loop, serving I/O"
    local on
    on=$("$BUILD/tests/rdmablk-json" "$LOGS/stats.json" 'connection_list[export=v1].loop' \
        'connection_list[export=v2].loop' 'connection_list[export=b1].loop' \
        'connection_list[export=b2].loop' | tr '\n' ' ') || true
    case $on in
    "0 1 0 1 " | "0 1 1 0 " | "1 0 0 1 " | "1 0 1 0 ") ;;
    *) fail "the victims or the bystanders are not on both loops: v1 v2 b1 b2 on loops $on" ;;
    esac
}
