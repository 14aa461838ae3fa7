#!/bin/bash
# The rooms of target/ keep their order (docs/design-notes.md, "The target's rooms"): a file of
# one room includes headers only of the rooms that room may call, so that no room reaches up.
# Reads the #include lines of target/ on the host (no build, no guest). First a negative
# control: a copy of the tree with one forbidden include added (io/ioq.c including
# rbd/rbd.h, the arrow that ioq's own submit hook removed) must be refused by name.
set -eu -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/rdmablk-rooms.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ROOM: the rooms it may include from (log is target/log.h). No two rooms include each other:
# req/ reaches its connection only through struct req_queue's ops (req/queue.h).
declare -A may=(
	[ops]="conn req core config rbd io log"
	[conn]="req core config rbd io log"
	[req]="core rbd io log"
	[core]="config io log"
	[config]="rbd io log"
	[rbd]="io log"
	[io]="log"
	[log]=""
)

# check DIR: print one line per forbidden include under DIR (a target/ tree); 1 if any.
check() {
	local dir=$1 bad=0 f room inc to
	for f in "$dir"/*/*.[ch] "$dir"/log.[ch]; do
		room=${f#"$dir"/}
		case $room in */*) room=${room%%/*} ;; *) room=log ;; esac
		[ -n "${may[$room]+set}" ] || { echo "$f: not in any room of the table"; bad=1; continue; }
		while read -r inc; do
			case $inc in
			log.h) to=log ;;
			*/*) to=${inc%%/*} ;;
			*) [ -e "$(dirname "$f")/$inc" ] || [ -e "$top/common/$inc" ] ||
				{ echo "$f: includes \"$inc\", which is in no room"; bad=1; }
			   continue ;;
			esac
			[ "$to" = "$room" ] && continue
			case " ${may[$room]} " in
			*" $to "*) ;;
			*) echo "${f#"$dir"/}: $room/ includes \"$inc\": $room/ may not call $to/"; bad=1 ;;
			esac
		done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
	done
	return "$bad"
}

cp -r "$top/target" "$work/target"
sed -i '0,/^#include "/s//#include "rbd\/rbd.h"\n#include "/' "$work/target/io/ioq.c"
if out=$(check "$work/target"); then
	echo "FAIL: a forbidden include (io/ioq.c -> rbd/rbd.h) was not seen"
	exit 1
fi
grep -q 'io/ioq.c: io/ includes "rbd/rbd.h": io/ may not call rbd/' <<<"$out" ||
	{ echo "FAIL: the forbidden include was not named: $out"; exit 1; }
echo "ok: control: io/ioq.c including rbd/rbd.h is refused by name"

if ! out=$(check "$top/target"); then
	echo "$out"
	echo "FAIL: target/ has includes that reach up (above)"
	exit 1
fi
n=$(cat "$top"/target/*/*.[ch] | grep -c '^#include "[a-z]*/')
echo "ok: target/: $n includes between rooms, each to a room below"
