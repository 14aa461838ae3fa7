# Shared by the secret-file tests (test-security-auth*.sh, test-security-secret-files.sh): a set
# of key files, and a check that a command is refused with a given message. Sourced after
# lib.sh.
# shellcheck shell=bash

# make_keys: in $T, good.key (the export's secret), bad.key (another), loose.key (good's
# content, mode 0644), empty.key, short.key (under 32 bytes) and link.key (a symlink to
# good.key); all but loose.key mode 0600.
make_keys() {
    printf 'correct horse battery staple, stapled\n' >"$T/good.key"
    printf 'wrong horse battery staple, unstapled\n' >"$T/bad.key"
    cp "$T/good.key" "$T/loose.key"
    chmod 600 "$T/good.key" "$T/bad.key"
    chmod 644 "$T/loose.key"
    : >"$T/empty.key"
    printf 'hunter2\n' >"$T/short.key"
    chmod 600 "$T/empty.key" "$T/short.key"
    ln -s "$T/good.key" "$T/link.key"
}

# secret_conf CONF KEY: a target config with one 8M export "sec" whose secret is KEY, beside a
# 4M export "open" without one.
secret_conf() {
    target_conf "$1" <<CONF
[export sec]
path = $T/sec.img
size = 8M
secret-file = $2

[export open]
path = $T/open.img
size = 4M
CONF
}

# refused NAME REGEX CMD...: CMD must exit non-zero and its output ($LOGS/NAME.log) must match
# REGEX.
refused() {
    local name=$1 re=$2
    shift 2
    if step "$name" "$@"; then fail "$name: accepted"; fi
    grep -Eq "$re" "$LOGS/$name.log" || fail "$name: no '$re' in its output"
}
