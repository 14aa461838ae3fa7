#!/bin/bash
# test-shares: none
# nbdkit rdma passes FUA through natively: FUA writes from an NBD client reach the target as
# writes carrying the FUA flag, not as a write plus a separate FLUSH (nbdkit's FUA emulation),
# on a durability = fua export and on a durability = always one.  Counted by the target's
# --stats: four FUA writes cost at most the one FLUSH qemu-io sends when it closes.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/plugin-conf.sh
. "$(dirname "$0")/plugin-conf.sh"

requires nbdkit qemu-io python3
require_rdma
requires_file "$PLUGIN" "$BUILD/rdmablk-target"

sock=$T/admin.sock
durability_exports 16M | target_conf "$T/target.conf" port=10813 admin-socket="$sock"
start_target "$T/target.conf"

stats() { "$BUILD/rdmablk-target" --stats -c "$T/target.conf" >"$T/s.json"; }
no_connections() {
    stats && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["connections"]["current"] != 0)' "$T/s.json"
}

for exp in fua always; do
    step "$exp" timeout 120 nbdkit -U - "$PLUGIN" hostname="$RDMABLK_ADDR" port=10813 \
        export="$exp" --run 'qemu-io -f raw -c "write -f -P 0x5a 0 4k" -c "write -f -P 0x5b 4k 4k" -c "write -f -P 0x5c 8k 4k" -c "write -f -P 0x5d 12k 4k" "$uri"' ||
        fail "$exp: FUA writes through nbdkit failed"
    [ "$(grep -c 'wrote 4096/4096 bytes' "$LOGS/$exp.log")" = 4 ] || fail "$exp: not four writes"
    cmp <(head -c 4096 "$T/$exp.img" | tr -d '\132') /dev/null || fail "$exp: data not in the backing file"
done
wait_for 60 no_connections || fail "connections did not close"
cp "$T/s.json" "$LOGS/stats.json"
python3 - "$T/s.json" >"$LOGS/check.log" 2>&1 <<'EOF' || fail "FUA was emulated with FLUSHes (see check.log)"
import json, sys
s = json.load(open(sys.argv[1]))
bad = []
for e in s["exports"]:
    print(e["name"], "writes", e["writes"], "flushes", e["flushes"])
    if e["writes"] != 4:
        bad.append(f"{e['name']}: {e['writes']} writes, want 4")
    if e["flushes"] > 1:
        bad.append(f"{e['name']}: {e['flushes']} flushes for 4 FUA writes: emulated")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
ok "native FUA: $(tr '\n' ' ' <"$LOGS/check.log")"
stop_target
