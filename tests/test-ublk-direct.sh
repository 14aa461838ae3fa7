#!/bin/bash
# guest-kernel: 6.12
# test-shares: none
# Direct requests: rdmablk-ublk registers its queues' buffers, so the target moves READs over
# 4 KiB and non-inline WRITEs straight from and to them, an inline WRITE's SEND gathers its
# bytes from them, and the library copies nothing but the 4 KiB READs' data, which comes in
# one packet as the reply itself (READ_IMM) and is copied once out of the receive buffer.
# 1 MiB, 64 KiB and 4 KiB writes and reads of every size from 4 KiB up through two queues: the
# data verifies against the source and the backing file, and the servers' exit lines say the
# library copied exactly the bytes read inline, which came in at least the 512 replies with
# immediate of the 4 KiB reads. The control: a device with mr=static (no direct I/O) that
# then serves one 4 KiB write (inline, so copied into the send buffer) reports at least 4096
# bytes copied beyond those read inline (and the kernel's reads of the new device, copied
# through the pool or read inline).
# shellcheck source=tests/ublk-lib.sh
. "$(dirname "$0")/ublk-lib.sh"

requires dd sha256sum
ublk_setup 64M queues=2

# copied NAME: the bytes the library copied, summed over the exit lines in NAME.log.
copied() { ublk_exit_sum "$LOGS/$1.log" copied; }

head -c 16M /dev/urandom >"$T/src"
step w1m dd if="$T/src" of="$DEV" bs=1M count=8 oflag=direct conv=notrunc ||
    fail "1 MiB direct writes failed"
step w64k dd if="$T/src" of="$DEV" bs=64k skip=128 seek=128 count=96 oflag=direct conv=notrunc ||
    fail "64 KiB direct writes failed"
step w4k dd if="$T/src" of="$DEV" bs=4k skip=3584 seek=3584 count=512 oflag=direct conv=notrunc ||
    fail "4 KiB direct (inline) writes failed"
# Every read size over the same 2 MiB (4 KiB reads are the slow ones under TCG), then all of it.
want=$(head -c 2M "$T/src" | sha256sum | cut -d' ' -f1)
for bs in 4096 16384 131072; do
    got=$(dd if="$DEV" bs="$bs" count=$((2 * 1024 * 1024 / bs)) iflag=direct 2>/dev/null |
        sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || fail "reading back 2 MiB with bs=$bs: checksum $got, wrote $want"
done
want=$(sha256sum <"$T/src" | cut -d' ' -f1)
got=$(dd if="$DEV" bs=1M count=16 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "reading back 16 MiB with bs=1M: checksum $got, wrote $want"
got=$(head -c 16M "$T/disk0.img" | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the backing file holds $got, wrote $want"
ok "16 MiB written in 1 MiB, 64 KiB and 4 KiB pieces, read back with 4k..1M: data verified, backing file equal"
ublk_del_wait ublk
n=$(copied ublk)
inl=$(ublk_exit_sum "$LOGS/ublk.log" inline)
imm=$(ublk_exit_sum "$LOGS/ublk.log" imm)
[ "$n" != none ] && [ "$n" = "$inl" ] ||
    fail "the library copied $n bytes, want exactly the $inl read inline: $(grep 'bytes copied' "$LOGS/ublk.log")"
[ "$imm" -ge 512 ] || fail "$imm replies with immediate, want 512 or more (the 4 KiB reads)"
ok "the library copied only the $n bytes read inline ($imm replies with immediate): $(grep -c 'bytes copied by the library' "$LOGS/ublk.log") queue(s)"

ublk_add ublk2 hostname="$RDMABLK_ADDR" export=disk0 queues=1 mr=static
step w4k-static dd if="$T/src" of="$DEV" bs=4k count=1 oflag=direct conv=notrunc || fail "4 KiB write failed"
ublk_del_wait ublk2
n=$(copied ublk2)
inl=$(ublk_exit_sum "$LOGS/ublk2.log" inline)
[ "$n" != none ] && [ "$((n - inl))" -ge 4096 ] ||
    fail "control: a 4 KiB inline write with mr=static reported $n bytes copied ($inl read inline), want 4096 or more beyond those"
ok "control: a 4 KiB inline write (and the kernel's reads) with mr=static: $n bytes copied, $inl of them read inline"
