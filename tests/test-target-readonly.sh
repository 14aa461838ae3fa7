#!/bin/bash
# test-shares: none
# A read-only export serves reads but refuses WRITE, TRIM, WRITE_ZEROES and FLUSH with EPERM,
# and its backing file is left untouched.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

img=$T/ro.img
"$BUILD/tests/rdmablk-io" pattern 0 1048576 42 >"$img"
truncate -s 4M "$img"
cp "$img" "$T/orig.img"
target_conf "$T/target.conf" <<EOF
[export ro]
path = $img
read-only = yes
EOF
start_target "$T/target.conf"

IO_OPTS="-e ro -t 60"

step info rdmablk_io info || fail "info failed"
grep -qx 'read_only=1' "$LOGS/info.log" || fail "export not advertised read-only"
step read rdmablk_io read 0 1048576 42 || fail "read of a read-only export failed"
ok "read-only export: advertised, readable"

for cmd in "write 0 4096 1" "write 0 65536 1" "trim 0 4096" "zero 0 4096" "flush"; do
    name=${cmd%% *}
    if step "$name" rdmablk_io $cmd; then fail "$cmd succeeded on a read-only export"; fi
    grep -q 'EPERM' "$LOGS/$name.log" || fail "$cmd: expected EPERM"
done
cmp "$img" "$T/orig.img" || fail "the backing file of a read-only export changed"
ok "WRITE, TRIM, WRITE_ZEROES, FLUSH refused with EPERM; file unchanged"
kill -0 "$TARGET_PID" || fail "target died"

# A clean exit: status 0 (LeakSanitizer and ASan make it non-zero), nothing reported.
stop_target
ok "target exits cleanly"
