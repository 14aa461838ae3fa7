#!/bin/bash
# Power cut: every block acknowledged as durable survives SIGKILL of QEMU mid-workload.
#  1. boot a guest with a fresh virtio disk; the target exports a file on ext4 on it;
#     rdmablk-durable prints "ACK block gen" on the serial console after each durable reply;
#  2. SIGKILL QEMU at a random time (vm-run --kill-after);
#  3. after all the cuts, boot one fresh guest per eight cut disk images; read every block of
#     each back through RDMA; each block must hold at least the generation last acknowledged,
#     and no sector is garbage.
# Cuts: RDMABLK_POWER_CUTS (default 3; 20 under make check-long). Alternates
# durability = always (plain writes) and durability = fua (FUA writes).
# Then the negative control, RDMABLK_POWER_CUT_CONTROLS cuts (default 1; 5 under check-long):
# durability = fua with plain writes, whose plain acknowledgements the writer prints as if they
# were durable. The same check must find lost writes there in most cuts (at least half, and at
# least one), or it is blind and the test fails.
# Runs on the host (it drives the guest), so it is not part of the in-guest suite.
set -eu -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cuts=${RDMABLK_POWER_CUTS:-3}
controls=${RDMABLK_POWER_CUT_CONTROLS:-1}
[ "${RDMABLK_LONG:-0}" = 1 ] && cuts=${RDMABLK_POWER_CUTS:-20} controls=${RDMABLK_POWER_CUT_CONTROLS:-5}
work=$(mktemp -d "$top/.power-cut.XXXXXX")   # not under /tmp: vm-run refuses that
trap 'rm -rf "$work"' EXIT
envs=(--env "RDMABLK_BUILD=${RDMABLK_BUILD:-$top/build}")
fails=0 total_acks=0 total_lost=0 control_cuts=0 control_lossy=0 control_lost=0

# The cuts, one boot each. Their disks are then checked together, eight to a boot.
declare -a modes=() seeds=() nacks=()
checked=()
for i in $(seq $((cuts + controls))); do
	mode=always; [ $((i % 2)) -eq 0 ] && mode=fua
	[ "$i" -gt "$cuts" ] && mode=control
	seed=$((RANDOM * 32768 + RANDOM + 1))
	img=$work/disk$i.img
	truncate -s 256M "$img"
	kill_after=$((3 + RANDOM % 8))   # 3-10 s: about 250 durable acks a second
	echo "power-cut $i/$((cuts + controls)): durability=$mode seed=$seed, power cut $kill_after s after the writer started"
	rc=0
	(cd "$top" && scripts/vm-run --timeout 300 --no-aslr --disk "$img" --kill-after "$kill_after" --kill-from '^START ' "${envs[@]}" \
		tests/guest/power-cut-write.sh "$mode" "$seed") >"$work/write$i.log" 2>&1 || rc=$?
	if [ "$rc" -ne 137 ]; then
		echo "FAIL: power-cut $i: expected the power cut (137), vm-run exited $rc"
		tail -n 40 "$work/write$i.log"; fails=$((fails + 1)); continue
	fi
	# No ACK at all must reach the check below, not end the script here (pipefail).
	tr -d '\r' <"$work/write$i.log" | { grep -E '^ACK [0-9]+ [0-9]+$' || true; } |
		awk '{ g[$2] = $3 } END { for (b in g) print b, g[b] }' | sort -n >"$work/acked$i"
	nacks[i]=$(tr -d '\r' <"$work/write$i.log" | grep -cE '^ACK [0-9]+ [0-9]+$' || true)
	if [ "${nacks[i]}" -lt 1 ]; then
		echo "FAIL: power-cut $i: the writer had no write acknowledged before the cut"
		tail -n 40 "$work/write$i.log"; fails=$((fails + 1)); continue
	fi
	modes[i]=$mode seeds[i]=$seed
	checked+=("$i")
done

# A boot reads the cut disks back, up to 8 at once (PCI slots): disk k of boot b is cut
# ${checked[8 * b + k - 1]}; each cut's check prints between "CHECK k" and "CHECKED k STATUS".
declare -a in_log=() at=()
for ((b = 0; 8 * b < ${#checked[@]}; b++)); do
	disks=() args=() k=0
	for i in "${checked[@]:8 * b:8}"; do
		k=$((k + 1)) in_log[i]=$work/check$b.log at[i]=$k
		disks+=(--disk "$work/disk$i.img") args+=("${seeds[i]}")
	done
	rc=0
	(cd "$top" && scripts/vm-run --timeout $((120 + 60 * ${#args[@]})) --no-aslr "${disks[@]}" "${envs[@]}" \
		tests/guest/power-cut-check.sh "${args[@]}") >"$work/check$b.raw" 2>&1 || rc=$?
	tr -d '\r' <"$work/check$b.raw" >"$work/check$b.log"
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: power-cut: check boot $((b + 1)) exited $rc"
		tail -n 40 "$work/check$b.log"; fails=$((fails + 1))
	fi
done
# section K LOG: what the check of disk K printed in LOG.
section() { awk -v k="$1" '/^CHECK [0-9]+$/ { c = $2 } c == k' "$2"; }
for i in "${checked[@]}"; do
	mode=${modes[i]}
	section "${at[i]}" "${in_log[i]}" >"$work/section$i"
	grep -E '^(HAVE|TORN) ' "$work/section$i" >"$work/have$i" || true
	if ! grep -qx "CHECKED ${at[i]} 0" "$work/section$i" || grep -q '^TORN' "$work/have$i"; then
		echo "FAIL: power-cut $i: its check failed or found garbage"
		grep -v '^HAVE ' "$work/section$i" | tail -n 20
		fails=$((fails + 1)); continue
	fi
	lost=$(awk 'NR == FNR { have[$2] = $3; next } !($1 in have) || have[$1] < $2 { print "block " $1 ": acknowledged generation " $2 ", found " (($1 in have) ? have[$1] : "nothing") }' \
		"$work/have$i" "$work/acked$i")
	if [ "$mode" = control ]; then
		n=$(printf '%s' "$lost" | grep -c . || true)
		control_cuts=$((control_cuts + 1)) control_lost=$((control_lost + n))
		[ "$n" -gt 0 ] && control_lossy=$((control_lossy + 1))
		echo "control: power-cut $i: $n of $(wc -l <"$work/acked$i") blocks with a plain acknowledgement lost (${nacks[i]} acknowledgements)"
		continue
	fi
	if [ -n "$lost" ]; then
		total_lost=$((total_lost + $(printf '%s\n' "$lost" | grep -c .)))
		echo "FAIL: power-cut $i: acknowledged-durable writes were lost:"
		printf '%s\n' "$lost" | sed -n 1,20p; fails=$((fails + 1)); continue
	fi
	total_acks=$((total_acks + nacks[i]))
	echo "ok: power-cut $i: ${nacks[i]} durable acknowledgements ($(wc -l <"$work/acked$i") blocks) all survived"
done
echo "power-cut: $cuts cuts, $total_acks acknowledged writes checked, $total_lost lost, $fails failed"
echo "power-cut control: $control_cuts cuts with plain acknowledgements, $control_lossy of them lost writes ($control_lost blocks)"
if [ "$controls" -gt 0 ] && { [ "$control_lossy" -lt 1 ] || [ $((2 * control_lossy)) -lt "$controls" ]; }; then
	echo "FAIL: power-cut: the check found no loss in most control cuts: it cannot see a loss"
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
