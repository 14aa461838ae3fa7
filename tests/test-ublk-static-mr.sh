#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# mr=static never exposes rdmablk-ublk's own buffers (docs/security.md, "Static MR"). With
# memory windows (the default) the target moves READs over 4 KiB and long WRITEs straight from
# and to the ublk buffers, each through a window over that request's bytes alone, and the
# library copies nothing but small READs' one-packet replies (test-ublk-direct). With mr=static one key would cover the whole buffer area for the
# connection's lifetime, so the device copies through the library's pool instead, whose exposure
# is the documented one: 8 MiB written and read back in 1 MiB requests verify, the server's exit
# line counts all 16 MiB as copied, and its log says why. On the old code the same run counted
# 0 bytes: the ublk buffers were registered for remote read and write.
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires dd sha256sum
ublk_setup 64M queues=1 mr=static

head -c 8M /dev/urandom >"$T/src"
step write dd if="$T/src" of="$DEV" bs=1M count=8 oflag=direct conv=notrunc ||
    fail "1 MiB writes with mr=static failed"
want=$(sha256sum <"$T/src" | cut -d' ' -f1)
got=$(dd if="$DEV" bs=1M count=8 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "reading back 8 MiB: checksum $got, wrote $want"
ok "mr=static: 8 MiB written and read back in 1 MiB requests, data verified"

ublk_del_wait ublk
n=$(ublk_exit_sum "$LOGS/ublk.log" copied)
[ "$n" != none ] || fail "no exit line with the bytes copied: $(tail -n 3 "$LOGS/ublk.log")"
[ "$n" -ge $((16 << 20)) ] ||
    fail "the library copied $n bytes, not the 16 MiB moved: the ublk buffers were exposed"
grep -q 'mr=static: no direct I/O into the caller' "$LOGS/ublk.log" ||
    fail "the server does not say that mr=static copies through the pool"
ok "mr=static: all $n bytes went through the pool; the ublk buffers were never registered for the target"
