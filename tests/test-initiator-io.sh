#!/bin/bash
# test-shares: none
# The initiator library end to end through rdmablk-io: info, pattern write/read-back at odd
# offsets, FUA, flush, trim, zero, dump against `pattern`, list, a concurrent stress run,
# busy-poll mode, and errors (unknown export, read-only export) mapped to the right errno.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
IO=$BUILD/tests/rdmablk-io
requires_file "$IO" "$BUILD/rdmablk-target"

target_conf "$T/target.conf" port=10810 queue-depth=64 max-io=1M <<EOF
[export disk0]
path = $T/disk0.img
size = 64M
description = first disk
[export ro]
path = $T/ro.img
size = 8M
read-only = yes
EOF
truncate -s 8M "$T/ro.img"
start_target "$T/target.conf"

IO_OPTS="-e disk0 -t 60"

step info rdmablk_io info || fail "info failed"
grep -qx 'size=67108864' "$LOGS/info.log" || fail "info: wrong size"
grep -q '^qd=' "$LOGS/info.log" || fail "info: no qd"
grep -qx 'description=first disk' "$LOGS/info.log" || fail "info: wrong description"
ok "info"

step write rdmablk_io -s write 4096 3M 11 || fail "write failed"
step read rdmablk_io read 4096 3M 11 || fail "read-back failed"
step read-sub rdmablk_io read 1000000 12345 11 || fail "unaligned sub-range read failed"
step read-wrong rdmablk_io read 4096 4096 12 && fail "read with the wrong seed verified"
grep -q 'mismatch at offset 4096' "$LOGS/read-wrong.log" || fail "mismatch not reported"
ok "write/read with verification, unaligned reads"

step small rdmablk_io write 0 512 5 --fua || fail "small FUA write failed"
step small-read rdmablk_io read 0 512 5 || fail "small read failed"
step flush rdmablk_io flush || fail "flush failed"
ok "inline FUA write and flush"

rdmablk_io dump 4096 1M >"$T/dump.bin" 2>"$LOGS/dump.log" || fail "dump failed"
"$IO" pattern 4096 1M 11 >"$T/expect.bin"
cmp "$T/dump.bin" "$T/expect.bin" || fail "dump differs from pattern"
cmp <(dd if="$T/disk0.img" bs=4096 skip=1 count=256 status=none) "$T/expect.bin" ||
    fail "backing file differs from pattern"
ok "dump = pattern = backing file"

step zero rdmablk_io zero 8192 8192 || fail "zero failed"
step trim rdmablk_io trim 65536 65536 || fail "trim failed"
rdmablk_io dump 8192 8192 | cmp - <(head -c 8192 /dev/zero) || fail "zeroed range not zero"
rdmablk_io dump 65536 65536 | cmp - <(head -c 65536 /dev/zero) || fail "trimmed range not zero"
ok "zero and trim"

step list "$IO" -H "$RDMABLK_ADDR" list || fail "list failed"
grep -q '^disk0' "$LOGS/list.log" && grep -q '^ro' "$LOGS/list.log" || fail "list incomplete"
ok "list"

step stress rdmablk_io -s stress 10 8 256K || fail "stress failed"
grep -q '^ops=' "$LOGS/stress.log" || fail "stress printed no ops"
ok "stress: $(grep '^ops=' "$LOGS/stress.log")"

step qd1 "$IO" -H "$RDMABLK_ADDR" -e disk0 -q 1 stress 3 4 64K || fail "stress at qd 1 failed"
ok "stress at queue depth 1: $(grep '^ops=' "$LOGS/qd1.log")"

step busy rdmablk_io -b stress 3 4 64K || fail "stress in busy-poll mode failed"
ok "busy-poll stress: $(grep '^ops=' "$LOGS/busy.log")"

step nosuch "$IO" -H "$RDMABLK_ADDR" -e nosuch info && fail "unknown export accepted"
grep -q 'no such export' "$LOGS/nosuch.log" || fail "unknown export: unclear error"
grep -q '(ENOENT)' "$LOGS/nosuch.log" || fail "unknown export: not ENOENT"
step ro-write "$IO" -H "$RDMABLK_ADDR" -e ro write 0 4096 1 && fail "write to read-only export succeeded"
grep -q '(EPERM)' "$LOGS/ro-write.log" || fail "read-only write: not EPERM"
ok "errors: ENOENT for an unknown export, EPERM for a read-only one"
