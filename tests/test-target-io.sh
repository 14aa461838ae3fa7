#!/bin/bash
# test-shares: none
# Each request type does what it says, through the real initiator: data read back matches,
# and the backing file holds exactly the pattern written (cmp), for inline writes and RDMA
# READ/WRITE sizes up to and beyond max-io; FUA, FLUSH, TRIM and WRITE_ZEROES; a write past
# the end is refused and the connection goes on. (Many clients through a small pool:
# test-target-io-pressure.sh.)
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

require_rdma
requires_file "$BUILD/rdmablk-target" "$BUILD/tests/rdmablk-io"

img=$T/disk0.img
target_conf "$T/target.conf" max-io=256K buffer-pool=512K io-threads=2 <<EOF
[export disk0]
path = $img
size = 64M
description = io test
EOF
start_target "$T/target.conf" -v

IO_OPTS="-e disk0 -t 60"

step info rdmablk_io info || fail "info failed"
grep -qx 'size=67108864' "$LOGS/info.log" || fail "wrong size"
grep -qx 'max_io=262144' "$LOGS/info.log" || fail "wrong max_io"
grep -q 'multi_conn' "$LOGS/info.log" || fail "export does not advertise multi_conn"
ok "info: size, max_io, flags"

# offset length seed: inline (<= 4K), one RDMA READ, exactly max-io, several max-io pieces
for spec in "0 512 1" "4096 4096 2" "8192 8192 3" "65536 262144 4" "1048576 3145728 5" \
            "67104768 4096 6"; do
    set -- $spec
    step write rdmablk_io write "$1" "$2" "$3" || fail "write $spec failed"
    step read rdmablk_io read "$1" "$2" "$3" || fail "read back $spec failed"
    backing_has "$img" "$1" "$2" "$3" || fail "backing file differs after write $spec"
done
ok "writes read back and land in the backing file (inline, RDMA READ, > max-io)"

step fua rdmablk_io write 2097152 131072 7 --fua || fail "FUA write failed"
backing_has "$img" 2097152 131072 7 || fail "FUA write not in the backing file"
step flush rdmablk_io flush || fail "flush failed"
ok "FUA write and FLUSH"

step zero rdmablk_io zero 1048576 65536 || fail "zero failed"
head -c 65536 /dev/zero >"$T/zeros"
dd if="$img" of="$T/got" bs=65536 skip=16 count=1 status=none
cmp "$T/zeros" "$T/got" || fail "WRITE_ZEROES left data behind"
step read-after-zero rdmablk_io read 1114112 65536 5 || fail "zero touched data beyond its range"
step trim rdmablk_io trim 8388608 1048576 || fail "trim failed"
ok "WRITE_ZEROES and TRIM"

# Past the end and unaligned: refused, connection survives for the next command.
if step beyond rdmablk_io write 67108864 4096 1; then fail "write beyond the end succeeded"; fi
grep -q 'EOVERFLOW\|EINVAL' "$LOGS/beyond.log" || fail "write beyond the end: wrong error"
ok "write beyond the end refused"

kill -0 "$TARGET_PID" || fail "target died"
wait_for 60 conns_are "$T/target.conf" 0 || fail "not every connection was freed"
accepted=$(target_stat "$T/target.conf" connections accepted) || fail "--stats failed"
ok "every connection freed ($accepted accepted)"

# A clean exit: status 0 (LeakSanitizer and ASan make it non-zero), nothing reported.
stop_target
ok "target exits cleanly"
