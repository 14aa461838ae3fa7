#!/bin/bash
# test-shares: none
# A reload that rotates an export's secret-file (same path, new key) or adds one revokes the
# connections that authenticated with the old key, or with none: the target drains and closes
# them within a bound, logs why and counts them in --stats, and their reconnects (old key, or
# none) are refused with EACCES; the new key is accepted. A busy client of another export whose
# key file was re-read unchanged is untouched: same connection, verified data.
# shellcheck source=tests/revoke-lib.sh
. "$(dirname "$0")/revoke-lib.sh"

key() { (umask 077 && head -c 32 /dev/urandom | base64 >"$1"); }
key "$T/rot.key"
key "$T/keep.key"
key "$T/add.key"
cp -p "$T/rot.key" "$T/rot-old.key"   # what the rotated export's client keeps using

# write_conf ADD-SECRET: export add gets `secret-file = ADD-SECRET` when it is not empty.
write_conf() {
    put_conf <<EOF
[export rot]
path = $T/rot.img
size = 64M
secret-file = $T/rot.key

[export add]
path = $T/add.img
size = 64M
${1:+secret-file = $1}

[export keep]
path = $T/keep.img
size = 64M
secret-file = $T/keep.key
EOF
}

write_conf ""
start_target "$conf"
busy rotated rot -i 0 -S "$T/rot-old.key"   # flat out: revoked with requests in flight
busy added add -i 0   # flat out too
busy bystander keep -S "$T/keep.key"
ok "busy clients on rot (its key), add (no key) and keep (its key)"

key "$T/rot.key.new"
mv "$T/rot.key.new" "$T/rot.key"
write_conf "$T/add.key"
reload rot add keep
revoked rotated rot "the export's secret-file changed: it authenticated with the old key" \
    'target failed to prove it knows the secret'
revoked added add "the export now has a secret-file: it authenticated with none" \
    'export requires a secret'

if step new-old rdmablk_io -e rot -S "$T/rot-old.key" info; then fail "the old key still opens rot"; fi
grep -q 'EACCES' "$LOGS/new-old.log" || fail "the old key was not refused with EACCES"
if step new-none rdmablk_io -e add info; then fail "add still opens without a key"; fi
grep -q 'EACCES' "$LOGS/new-none.log" || fail "no key was not refused with EACCES"
step new-rot rdmablk_io -e rot -S "$T/rot.key" write 0 4096 7 || fail "the new key does not open rot"
step new-add rdmablk_io -e add -S "$T/add.key" write 0 4096 8 || fail "the added key does not open add"
ok "new connections: the old key and no key are refused (EACCES), the new keys work"
revocations_are secret_changed 2
untouched bystander

stop_target
ok "target exits cleanly"
