# Shared by the block status tests: a 1 GiB export with three data extents, what nbdinfo --map
# and qemu-img map must list for it, and an nbdcopy that must move only its data. Sourced after
# lib.sh.
# shellcheck shell=bash

# The data: whole 4 MiB RBD objects, so that an image answers as exactly as a file does.
EXT_SIZE=$((1 << 30))
EXT_DATA="0:4 300:8 1020:4"            # MiB offset:length
EXT_DATA_BYTES=$((16 << 20))

# ext_expected: the map as "offset length data|hole" lines, holes between the data.
ext_expected() {
    local at=0 e off len
    for e in $EXT_DATA; do
        off=$((${e%:*} << 20)) len=$((${e#*:} << 20))
        if [ "$off" -gt "$at" ]; then echo "$at $((off - at)) hole"; fi
        echo "$off $len data"
        at=$((off + len))
    done
    if [ "$at" -lt "$EXT_SIZE" ]; then echo "$at $((EXT_SIZE - at)) hole"; fi
}

# ext_fill_file FILE: the sparse file with EXT_DATA of random bytes.
ext_fill_file() {
    local e
    rm -f "$1"
    truncate -s "$EXT_SIZE" "$1"
    for e in $EXT_DATA; do
        dd if=/dev/urandom of="$1" bs=1M seek="${e%:*}" count="${e#*:}" conv=notrunc \
            status=none || fail "dd into $1 failed"
    done
}

# ext_merge: "offset length kind" lines with neighbours of one kind merged.
ext_merge() {
    awk '$3 == k && $1 == o + l { l += $2; next }
         NR > 1 { print o, l, k }
         { o = $1; l = $2; k = $3 }
         END { if (NR) print o, l, k }'
}

# ext_check_maps URI: nbdinfo --map and qemu-img map list exactly ext_expected.
ext_check_maps() {
    local uri=$1
    ext_expected >"$T/ext.want"
    nbdinfo --map "$uri" >"$T/nbdinfo.map" 2>"$LOGS/nbdinfo-map.log" ||
        fail "nbdinfo --map failed"
    cp "$T/nbdinfo.map" "$LOGS/nbdinfo.map"
    # "offset length type description": type 0 is data, 3 hole and zero.
    awk '{ print $1, $2, ($3 == 0 ? "data" : ($3 == 3 ? "hole" : "type" $3)) }' \
        "$T/nbdinfo.map" | ext_merge >"$T/nbdinfo.got"
    diff -u "$T/ext.want" "$T/nbdinfo.got" >"$LOGS/nbdinfo-map.diff" ||
        fail "nbdinfo --map does not list the three data extents (see $LOGS/nbdinfo-map.diff)"
    ok "nbdinfo --map: $(grep -c data "$T/nbdinfo.got") data extents, as written"
    qemu-img map --output=json -f raw "$uri" >"$T/qemu.map" 2>"$LOGS/qemu-img-map.log" ||
        fail "qemu-img map failed"
    cp "$T/qemu.map" "$LOGS/qemu-img.map"
    python3 -c 'import json, sys
for e in json.load(open(sys.argv[1])):
    print(e["start"], e["length"], "data" if e["data"] else "hole")' "$T/qemu.map" |
        ext_merge >"$T/qemu.got"
    diff -u "$T/ext.want" "$T/qemu.got" >"$LOGS/qemu-img-map.diff" ||
        fail "qemu-img map does not list the three data extents (see $LOGS/qemu-img-map.diff)"
    ok "qemu-img map: the same extents"
}

# ext_copy URI CONF EXPORT ORIGINAL: nbdcopy the export to a local file; the copy equals
# ORIGINAL, and the target read about the data bytes only (its bytes_read counter), not 1 GiB.
ext_copy() {
    local uri=$1 conf=$2 export=$3 orig=$4 before after moved
    before=$(export_stat "$conf" "$export" bytes_read) || fail "--stats failed"
    step nbdcopy nbdcopy "$uri" "$T/copy.img" || fail "nbdcopy from the export failed"
    after=$(export_stat "$conf" "$export" bytes_read) || fail "--stats failed"
    moved=$((after - before))
    cmp "$orig" "$T/copy.img" >"$LOGS/cmp.log" 2>&1 || fail "the copy differs from the export"
    [ "$moved" -ge "$EXT_DATA_BYTES" ] && [ "$moved" -le $((EXT_DATA_BYTES + (4 << 20))) ] ||
        fail "nbdcopy made the target read $moved bytes; the data is $EXT_DATA_BYTES"
    ok "nbdcopy: identical copy; the target read $moved bytes of $EXT_SIZE (data $EXT_DATA_BYTES)"
}
