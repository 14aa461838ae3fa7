#!/bin/bash
# test-shares: none
# The admin socket: the target makes it mode 0600 where admin-socket says, and a clean exit
# removes it.
# shellcheck source=tests/ops-stats-lib.sh
. "$(dirname "$0")/ops-stats-lib.sh"

stats_conf yes
start_target "$T/target.conf"
[ -S "$sock" ] || fail "no admin socket at $sock"
[ "$(stat -c %a "$sock")" = 600 ] || fail "admin socket mode $(stat -c %a "$sock"), not 600"
ok "admin socket $sock, mode 0600"

stop_target
[ ! -e "$sock" ] || fail "admin socket left behind after exit"
ok "clean exit removes the admin socket"
