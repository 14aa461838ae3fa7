#!/bin/bash
# test-shares: none
# The target refuses a secret file in its config that others could read or swap
# (docs/security.md): `rdmablk-target -n` fails, naming why, for a secret-file readable by
# others (0644), shorter than 32 bytes, a symlink, or owned by another user; the same config
# with a good key passes. No RDMA needed: it only checks the config.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/auth-lib.sh
. "$(dirname "$0")/auth-lib.sh"

requires_file "$BUILD/rdmablk-target"
[ "$(id -u)" = 0 ] || skip "needs root (chowns a key to another user)"

make_keys
secret_conf "$T/good.conf" "$T/good.key"
step conf-good "$BUILD/rdmablk-target" -n -c "$T/good.conf" || fail "a good secret file was refused"

secret_conf "$T/loose.conf" "$T/loose.key"
refused conf-loose 'permissions 0644 are too open; chmod 600' \
    "$BUILD/rdmablk-target" -n -c "$T/loose.conf"
secret_conf "$T/short.conf" "$T/short.key"
refused conf-short 'shorter than 32 bytes' "$BUILD/rdmablk-target" -n -c "$T/short.conf"
secret_conf "$T/link.conf" "$T/link.key"
refused conf-link 'symbolic link' "$BUILD/rdmablk-target" -n -c "$T/link.conf"
# A key owned by another user (not root): whoever owns it could swap it.
cp "$T/good.key" "$T/foreign.key"
chown 65534 "$T/foreign.key"
secret_conf "$T/foreign.conf" "$T/foreign.key"
refused conf-foreign 'owned by uid 65534' "$BUILD/rdmablk-target" -n -c "$T/foreign.conf"
ok "target: loose, short, symlinked and foreign-owned secret files in the config are refused"
