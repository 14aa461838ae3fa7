#!/bin/bash
# test-shares: none
# A replayed AUTH is refused (docs/security.md): rdmablk-replay records the AUTH of a genuine
# session on an export with `secret-file =`, then sends it again on a new connection. The
# target's nonce is fresh for every connection, so the recorded response is wrong there: the
# replayer reports EACCES, and the target counts and logs a wrong response.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/auth-lib.sh
. "$(dirname "$0")/auth-lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-replay"

make_keys
secret_conf "$T/target.conf" "$T/good.key"
start_target "$T/target.conf"

step replay "$BUILD/tests/rdmablk-replay" -H "$RDMABLK_ADDR" -e sec -S "$T/good.key" ||
    fail "replayed AUTH was not refused with EACCES"
grep -q 'replay refused: .*target rejected authentication (EACCES)' "$LOGS/replay.log" ||
    fail "replay: no refusal reported"
wait_for 30 stat_reaches "$T/target.conf" refused auth_failure 1 ||
    fail "the target did not count the replay as a failed authentication"
grep -q 'export sec: authentication failed: wrong response' "$LOGS/target.log" ||
    fail "the target did not log the replay as a wrong response"
ok "replayed AUTH refused (fresh target nonce)"

stop_target
ok "target exits cleanly"
