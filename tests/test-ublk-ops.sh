#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# The block layer's DISCARD, WRITE_ZEROES and FLUSH reach the target as TRIM, WRITE_ZEROES and
# FLUSH (its --stats counters), a discarded range reads back as zeroes, and FUA writes (O_DSYNC
# on the write-back device) are acknowledged.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires blkdiscard python3
ublk_setup 64M

stat_of() {
    "$BUILD/rdmablk-target" --stats -c "$T/target.conf" >"$LOGS/stats-$1.json" || fail "--stats failed"
    python3 -c 'import json, sys
e = {x["name"]: x for x in json.load(open(sys.argv[1]))["exports"]}["disk0"]
print(e[sys.argv[2]])' "$LOGS/stats-$1.json" "$1"
}
step fill dd if=/dev/urandom of="$DEV" bs=1M count=4 oflag=direct || fail "write failed"
t0=$(stat_of trims)
step discard blkdiscard -o 0 -l 1M "$DEV" || fail "blkdiscard failed"
[ "$(stat_of trims)" -gt "$t0" ] || fail "blkdiscard sent no TRIM"
cmp -n 1048576 "$DEV" /dev/zero || fail "a discarded range does not read back as zeroes"
ok "DISCARD -> TRIM; reads back as zeroes"
z0=$(stat_of zeroes)
step zeroout blkdiscard -z -o 1M -l 1M "$DEV" || fail "blkdiscard -z failed"
[ "$(stat_of zeroes)" -gt "$z0" ] || fail "BLKZEROOUT sent no WRITE_ZEROES"
cmp -n 1048576 -i 1048576 "$DEV" /dev/zero || fail "a zeroed range does not read back as zeroes"
ok "WRITE_ZEROES -> WRITE_ZEROES"
f0=$(stat_of flushes)
step fsync dd if=/dev/urandom of="$DEV" bs=4k count=1 seek=1000 conv=fsync || fail "write + fsync failed"
[ "$(stat_of flushes)" -gt "$f0" ] || fail "fsync sent no FLUSH"
ok "FLUSH -> FLUSH"
w0=$(stat_of writes)
step fua dd if=/dev/urandom of="$DEV" bs=4k count=8 seek=2000 oflag=direct,dsync || fail "O_DSYNC write failed"
[ "$(stat_of writes)" -ge $((w0 + 8)) ] || fail "O_DSYNC writes did not reach the target"
ok "FUA (O_DSYNC) writes acknowledged"
