#!/bin/bash
# test-shares: none
# rdmablk-target --stats without a daemon: exit 1 and one clear line on stderr naming the admin
# socket it could not reach, nothing on stdout.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf yes
rc=0
stats >"$LOGS/nodaemon.out" 2>"$LOGS/nodaemon.err" || rc=$?
[ "$rc" = 1 ] || fail "--stats without a daemon exited $rc, not 1"
want="rdmablk-target: cannot reach the admin socket $sock: is the daemon running? (connect: No such file or directory)"
[ "$(cat "$LOGS/nodaemon.err")" = "$want" ] || fail "--stats without a daemon: wrong message"
[ ! -s "$LOGS/nodaemon.out" ] || fail "--stats without a daemon printed to stdout"
ok "--stats without a daemon: exit 1, '$want'"
