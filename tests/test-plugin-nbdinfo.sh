#!/bin/bash
# test-shares: none
# nbdkit rdma: --dump-plugin reports API 2, parallel, after_fork; nbdinfo sees the export's
# size, flags (matching what the target grants) and description; a read-only export is
# read-only; nbdinfo --list lists the target's exports.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

requires nbdkit nbdinfo
require_rdma
requires_file "$PLUGIN" "$IO"

step dump nbdkit --dump-plugin "$PLUGIN" || fail "--dump-plugin failed"
for l in api_version=2 thread_model=parallel has_after_fork=1 rdmablk_protocol_version=1; do
    grep -qx "$l" "$LOGS/dump.log" || fail "--dump-plugin lacks $l"
done
grep -q '^rdmablk_version=' "$LOGS/dump.log" || fail "--dump-plugin lacks rdmablk_version"
grep -q '^rdmablk_verbs=libibverbs' "$LOGS/dump.log" || fail "--dump-plugin lacks verbs info"
ok "--dump-plugin"

write_target_conf 64M
start_target "$T/target.conf"
step info "$IO" -H "$RDMABLK_ADDR" -e disk0 info || fail "rdmablk-io info failed"
has() { grep -q "^flag_names=.*\b$1\b" "$LOGS/info.log" && echo true || echo false; }

nbd() {
    timeout 120 nbdkit -U - "$PLUGIN" hostname="$RDMABLK_ADDR" "$@" --run 'nbdinfo "$uri"'
}
step nbdinfo nbd export=disk0 || fail "nbdinfo failed"
L=$LOGS/nbdinfo.log
grep -q 'export-size: 67108864' "$L" || fail "wrong size"
grep -q 'description: rdmablk test disk' "$L" || fail "no description"
grep -q 'is_read_only: false' "$L" || fail "disk0 is read-only"
grep -q "can_fua: $(has fua)" "$L" || fail "can_fua does not match the export"
grep -q "can_flush: $(has flush)" "$L" || fail "can_flush does not match the export"
grep -q "can_trim: $(has trim)" "$L" || fail "can_trim does not match the export"
grep -q "can_zero: true" "$L" || fail "can_zero not advertised"
grep -q "can_fast_zero: $(has fast_zero)" "$L" || fail "can_fast_zero is not honest"
grep -q "can_multi_conn: $(has multi_conn)" "$L" || fail "can_multi_conn does not match"
grep -q 'block_size_minimum: 512' "$L" || fail "block_size_minimum not 512"
grep -q 'block_size_maximum: 1048576' "$L" || fail "block_size_maximum not max_io"
ok "nbdinfo: size, flags and block sizes of disk0 match the target"

step nbdinfo-ro nbd export=ro || fail "nbdinfo on ro failed"
grep -q 'is_read_only: true' "$LOGS/nbdinfo-ro.log" || fail "ro export is writable"
grep -q 'export-size: 8388608' "$LOGS/nbdinfo-ro.log" || fail "ro: wrong size"
ok "read-only export is read-only"

step list timeout 120 nbdkit -U - "$PLUGIN" hostname="$RDMABLK_ADDR" \
    --run 'nbdinfo --list "$uri"' || fail "nbdinfo --list failed"
grep -q 'export="disk0"' "$LOGS/list.log" || fail "--list lacks disk0"
grep -q 'export="ro"' "$LOGS/list.log" || fail "--list lacks ro"
ok "nbdinfo --list lists disk0 and ro"
