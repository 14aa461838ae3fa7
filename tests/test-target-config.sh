#!/bin/bash
# test-shares: none
# rdmablk-target -n: a good config prints "configuration OK" and exits 0; a bad one prints
# every error as FILE:LINE: message and exits 1; a writable export with neither secret-file nor
# allow list is valid but warned about as FILE:LINE. No RDMA needed; -n never creates files.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

requires_file "$BUILD/rdmablk-target"

truncate -s 1M "$T/ro.img"
cat >"$T/good.conf" <<EOF
[target]
listen = 10.55.0.1
port = 10810
queue-depth = 64
max-io = 1M
buffer-pool = 16M
inline-max = 4K
threads = 2
io-threads = 2
log-level = info

[export disk0]
path = $T/disk0.img     # created by size = at startup, not by -n
size = 16M
durability = fua
allow = 10.55.0.0/24 10.55.0.7
description = a test disk
max-connections = 4

[export ro]
path = $T/ro.img
read-only = yes
EOF
step good "$BUILD/rdmablk-target" -n -c "$T/good.conf" || fail "good config rejected"
grep -qx 'configuration OK' "$LOGS/good.log" || fail "no 'configuration OK'"
[ ! -e "$T/disk0.img" ] || fail "-n created the backing file"
ok "good config: configuration OK, exit 0, nothing created"
if grep -q 'warning' "$LOGS/good.log"; then fail "good config: a warning for allow-listed or read-only exports"; fi

# A writable export with neither secret-file nor allow list: valid, with one warning naming it
# (allow alone does not hold on InfiniBand, and this has not even that).
cat >"$T/open.conf" <<EOF
[target]
listen = 10.55.0.1

[export ro]
path = $T/ro.img
read-only = yes

[export open]
path = $T/ro.img
EOF
step open "$BUILD/rdmablk-target" -n -c "$T/open.conf" || fail "open config rejected"
grep -qx 'configuration OK' "$LOGS/open.log" || fail "open config: no 'configuration OK'"
[ "$(grep -c warning "$LOGS/open.log")" = 1 ] || fail "open config: not exactly one warning"
grep -q "^$T/open.conf:8: warning: export open is writable by any initiator: it has no secret-file and no allow list" \
    "$LOGS/open.log" || fail "open config: no FILE:LINE warning naming export open"
ok "writable export without secret-file or allow: valid, one FILE:LINE warning at -n"

cat >"$T/bad.conf" <<EOF
[target]
listen = 10.55.0.300
queue-depth = 0
max-io = 1000
log-level = loud
colour = blue

[export disk0]
path = $T/missing/disk0.img
read-only = perhaps
durability = sometimes
allow = 10.55.0.0/40
listed = perhaps
allow = 10.55.0.9 secret-file=$T/missing.key

[export disk0]
path = $T/ro.img

[export nopath]
size = 1Q
EOF
rc=0
step bad "$BUILD/rdmablk-target" -n -c "$T/bad.conf" || rc=$?
[ "$rc" = 1 ] || fail "bad config: exit $rc, expected 1"
for line in 2 3 4 5 6 9 10 11 12 13 14 16 19 20; do
    grep -q "^$T/bad.conf:$line: " "$LOGS/bad.log" || fail "no error reported for line $line"
done
grep -q "path: $T/missing/disk0.img: No such file or directory" "$LOGS/bad.log" ||
    fail "missing backing file not reported as 'path: FILE: No such file or directory'"
grep -q "duplicate export 'disk0'" "$LOGS/bad.log" || fail "duplicate export not reported"
grep -q "listed: bad boolean 'perhaps'" "$LOGS/bad.log" || fail "bad listed = not reported"
grep -q "allow: secret-file $T/missing.key: No such file or directory" "$LOGS/bad.log" ||
    fail "an allow line's missing secret-file= not reported"
grep -q "missing path" "$LOGS/bad.log" || fail "missing path not reported"
if grep -q 'configuration OK' "$LOGS/bad.log"; then fail "bad config claims to be OK"; fi
ok "bad config: every error reported as FILE:LINE, exit 1"

# threads = event loops (1..64), io-threads = workers (1..256); each loop needs a pool buffer.
printf '[target]\nlisten = 10.55.0.1\nthreads = 65\nio-threads = 0\n' >"$T/loops.conf"
printf '[target]\nlisten = 10.55.0.1\nmax-io = 1M\nbuffer-pool = 2M\nthreads = 3\n' >"$T/pool.conf"
for f in loops pool; do
    rc=0
    step "$f" "$BUILD/rdmablk-target" -n -c "$T/$f.conf" || rc=$?
    [ "$rc" = 1 ] || fail "$f config: exit $rc, expected 1"
done
grep -q "^$T/loops.conf:3: threads: bad value '65' (1..64 event loops)" "$LOGS/loops.log" ||
    fail "threads = 65 not reported"
grep -q "^$T/loops.conf:4: io-threads: bad value '0' (1..256)" "$LOGS/loops.log" ||
    fail "io-threads = 0 not reported"
grep -q "buffer-pool (2097152 bytes) holds fewer max-io buffers than threads (3 event loops)" \
    "$LOGS/pool.log" || fail "a pool with fewer buffers than loops not reported"
ok "threads and io-threads: out-of-range values and a pool too small for the loops reported"

rc=0
step nofile "$BUILD/rdmablk-target" -n -c "$T/nonexistent.conf" || rc=$?
[ "$rc" = 1 ] || fail "missing config file: exit $rc, expected 1"
grep -q "$T/nonexistent.conf" "$LOGS/nofile.log" || fail "missing config file not named"
ok "missing config file: named, exit 1"
