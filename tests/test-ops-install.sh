#!/bin/bash
# test-shares: sysuser
# make install: into a DESTDIR it lays out the binary, the nbdkit plugin under nbdkit's
# plugindir, the systemd unit and its sysusers.d file, the example config under etc/rdmablk
# and the man pages;
# installed for real (the guest's root is a throw-away overlay), the unit passes
# `systemd-analyze verify`; every man page renders without warnings.
# Nothing is rebuilt: the checkout is read-only in the guest, so build on the host first.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

requires make install pkg-config man groff systemd-analyze
requires_file "$BUILD/rdmablk-target" "$BUILD/nbdkit-rdma-plugin.so"

plugindir=$(pkg-config nbdkit --variable=plugindir 2>/dev/null || echo /usr/local/lib/nbdkit/plugins)
systemd_dirs

# ---- into a DESTDIR
root=$T/root
step install-destdir mk_install DESTDIR="$root" || fail "make install DESTDIR=$root failed"
! grep -E '^(cc|ar) ' "$LOGS/install-destdir.log" || fail "make install rebuilt something"

expected=(
    "usr/local/sbin/rdmablk-target 755"
    "usr/local/sbin/rdmablk-ublk 755"
    "usr/local/lib/rdmablk/rdmablk-rbd.so 644"
    "usr/local/share/man/man8/rdmablk-ublk.8 644"
    "${plugindir#/}/nbdkit-rdma-plugin.so 755"
    "${unitdir#/}/rdmablk-target.service 644"
    "${sysusersdir#/}/rdmablk.conf 644"
    "etc/rdmablk/rdmablk.conf.example 644"
    "usr/local/share/man/man8/rdmablk-target.8 644"
    "usr/local/share/man/man5/rdmablk.conf.5 644"
    "usr/local/share/man/man1/nbdkit-rdma-plugin.1 644"
)
for e in "${expected[@]}"; do
    set -- $e
    [ -f "$root/$1" ] || fail "make install did not create /$1"
    [ "$(stat -c %a "$root/$1")" = "$2" ] || fail "/$1 has mode $(stat -c %a "$root/$1"), not $2"
done
(cd "$root" && find . -type f | sort) >"$LOGS/tree.txt"
[ "$(wc -l <"$LOGS/tree.txt")" = "${#expected[@]}" ] || fail "unexpected files installed (tree.txt)"
cmp "$BUILD/rdmablk-target" "$root/usr/local/sbin/rdmablk-target" || fail "installed binary differs"
cmp "$BUILD/rdmablk-rbd.so" "$root/usr/local/lib/rdmablk/rdmablk-rbd.so" || fail "installed RBD module differs"
unit=$root/${unitdir#/}/rdmablk-target.service
! grep -qE '@[A-Z_]+@' "$unit" || fail "unit still has @...@ placeholders"
grep -qx 'ExecStartPre=/usr/local/sbin/rdmablk-target -n -c /etc/rdmablk/rdmablk.conf' "$unit" ||
    fail "unit: ExecStartPre does not run -n from /usr/local/sbin"
grep -qx 'ExecStart=/usr/local/sbin/rdmablk-target -f -c /etc/rdmablk/rdmablk.conf' "$unit" ||
    fail "unit: wrong ExecStart"
# Finite, sized for the default configuration (rdmablk.conf(5), MEMORY; tests/unit/test-limits).
grep -qx 'LimitMEMLOCK=256M' "$unit" || fail "unit: LimitMEMLOCK=256M missing"
ok "make install DESTDIR: binary, RBD module, plugin in $plugindir, unit in $unitdir, example config, 3 man pages"

# ---- the man pages render without warnings
for page in "$root"/usr/local/share/man/man*/*; do
    name=${page##*/}
    MANWIDTH=80 man --warnings -l "$page" >"$LOGS/man-$name.txt" 2>"$LOGS/man-$name.err" ||
        fail "man -l $name failed"
    [ ! -s "$LOGS/man-$name.err" ] || fail "man -l $name warns (man-$name.err)"
    groff -man -ww -z "$page" 2>"$LOGS/groff-$name.err" || fail "groff -man $name failed"
    [ ! -s "$LOGS/groff-$name.err" ] || fail "groff -man -ww $name warns"
    for sect in NAME SYNOPSIS DESCRIPTION EXAMPLES 'SEE ALSO'; do
        grep -q "^$sect" "$LOGS/man-$name.txt" || fail "$name has no $sect section"
    done
done
ok "man -l and groff -ww render rdmablk-target.8, rdmablk.conf.5, nbdkit-rdma-plugin.1 cleanly"

# ---- for real, then systemd-analyze verify (the binary and the man pages must exist)
installed=(
    /usr/local/sbin/rdmablk-target /usr/local/sbin/rdmablk-ublk /usr/local/share/man/man8/rdmablk-ublk.8
    /usr/local/lib/rdmablk/rdmablk-rbd.so
    "$plugindir/nbdkit-rdma-plugin.so"
    "$unitdir/rdmablk-target.service" "$sysusersdir/rdmablk.conf" /etc/rdmablk/rdmablk.conf.example
    /usr/local/share/man/man8/rdmablk-target.8 /usr/local/share/man/man5/rdmablk.conf.5
    /usr/local/share/man/man1/nbdkit-rdma-plugin.1
)
for f in "${installed[@]}"; do
    [ ! -e "$f" ] || fail "$f exists before the test installed it"
done
if [ "${RDMABLK_IN_GUEST:-0}" != 1 ]; then
    ok "not in the guest: skipping the real install and systemd-analyze verify"
    exit 0
fi
# Newest first at exit: the files, then their directories.
on_exit rmdir /etc/rdmablk /usr/local/lib/rdmablk
on_exit rm -f "${installed[@]}"
# make install makes the unit's user (systemd-sysusers): remove it again if it was not there.
getent passwd rdmablk >/dev/null || on_exit userdel rdmablk
step install-real mk_install || fail "make install PREFIX=/usr/local failed"
for f in "${installed[@]}"; do
    [ -f "$f" ] || fail "make install did not create $f"
done
step verify systemd-analyze verify "$unitdir/rdmablk-target.service" ||
    fail "systemd-analyze verify failed"
! grep -i 'rdmablk' "$LOGS/verify.log" | grep -v '^+ ' ||
    fail "systemd-analyze verify complains about the unit (verify.log)"
step man-lookup man -w rdmablk-target.8 rdmablk.conf.5 nbdkit-rdma-plugin.1 ||
    fail "man cannot find the installed pages"
ok "installed under /usr/local: systemd-analyze verify passes, man finds the pages"

# The installed target finds the installed RBD module (not beside it, in /usr/local/lib/rdmablk):
# -n on an RBD export whose monitor does not answer gets librados' answer, not a load error.
printf '[global]\nmon host = 127.0.0.1:9\n' >"$T/ceph.conf"
printf '[target]\nlisten = 127.0.0.1\n[export r]\npath = rbd:p/i\nceph-conf = %s\n' \
    "$T/ceph.conf" >"$T/rbd.conf"
! step rbd-installed timeout 60 /usr/local/sbin/rdmablk-target -n -c "$T/rbd.conf" ||
    fail "-n passed with a monitor that does not answer"
grep -q 'cannot reach the Ceph monitors at 127.0.0.1:9' "$LOGS/rbd-installed.log" ||
    fail "the installed target did not run its RBD module: $(tail -n 2 "$LOGS/rbd-installed.log")"
ok "the installed target loads the installed RBD module"
