#!/bin/bash
# The build is quiet: `make` prints one short line per step ("  CC   FILE", "  LD   FILE",
# "  AR   FILE"), `make V=1` prints the full commands, and a compiler's warnings stay visible in
# both. Builds the target and the initiator library into a scratch directory on the host
# (no guest, no RDMA). The warning comes from a compiler wrapper that prints one on stderr, as
# a real compiler would, so the check does not depend on the source having a warning.
set -eu -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/rdmablk-build-quiet.XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
# Not the variables of a make that runs this test (make check V=1 would pass V=1 on).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES V SANITIZE CFLAGS
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Quiet: every line of a clean build is a short one, and there is one per object.
make -C "$top" --no-print-directory -j2 BUILD="$work/q" "$work/q/rdmablk-target" "$work/q/librdmablk.a" \
	>"$work/quiet.log" 2>&1 || { cat "$work/quiet.log"; fail "the quiet build failed"; exit 1; }
if grep -vE '^  (CC|LD|AR)   [^ ]+$' "$work/quiet.log"; then
	fail "make printed more than short step lines (above)"
fi
ccs=$(grep -c '^  CC ' "$work/quiet.log")
objs=$(find "$work/q" -name '*.o' | wc -l)
[ "$ccs" -eq "$objs" ] || fail "make printed $ccs CC lines for $objs objects"
grep -qx "  LD   $work/q/rdmablk-target" "$work/quiet.log" || fail "no LD line for rdmablk-target"
grep -qx "  AR   $work/q/librdmablk.a" "$work/quiet.log" || fail "no AR line for librdmablk.a"
echo "ok: quiet build: $ccs CC lines for $objs objects, LD and AR lines, nothing else"

# V=1: the full compiler command.
rm -f "$work/q/common/util.o"
make -C "$top" --no-print-directory V=1 BUILD="$work/q" "$work/q/common/util.o" >"$work/v1.log" 2>&1 ||
	fail "the V=1 build failed"
grep -qE -- ' -Wall -Wextra .* -c common/util\.c -o ' "$work/v1.log" ||
	{ cat "$work/v1.log"; fail "make V=1 did not print the full compiler command"; }
grep -q '^  CC ' "$work/v1.log" && fail "make V=1 printed a short line"
echo "ok: make V=1 prints the full command"

# Warnings stay visible in the quiet build (a wrapper compiler warns, as a real one would).
cat >"$work/cc-warn" <<'EOF'
#!/bin/sh
echo "rdmablk-test: warning: a warning the quiet build must show" >&2
exec cc "$@"
EOF
chmod +x "$work/cc-warn"
rm -f "$work/q/common/util.o"
make -C "$top" --no-print-directory CC="$work/cc-warn" BUILD="$work/q" "$work/q/common/util.o" \
	>"$work/warn.log" 2>&1 || fail "the build with a warning failed"
grep -qx "  CC   $work/q/common/util.o" "$work/warn.log" || fail "no short line with the warning"
grep -q 'rdmablk-test: warning: a warning the quiet build must show' "$work/warn.log" ||
	fail "the quiet build hid the compiler's warning"
echo "ok: a compiler warning is printed beside the short line"

[ "$fails" -eq 0 ]
