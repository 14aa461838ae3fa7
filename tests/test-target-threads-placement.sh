#!/bin/bash
# test-shares: none
# threads = 2: two event loops. Four busy clients (verified writes and reads, one export each)
# land two on each loop (--stats: loops[], connection_list[].loop), both loops' io_urings serve
# backing I/O, and the per-loop figures add up to the target's totals.
# shellcheck source=tests/threads-lib.sh
. "$(dirname "$0")/threads-lib.sh"

four_clients
ok "four clients: two connections on each loop, victims and bystanders on both; both loops' io_urings serve; per-loop figures sum to the totals"
