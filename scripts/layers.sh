#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# `make lint`'s layering check (HACKING.md "Layout"): src/ and include/ are
# grouped by layer, and includes point down, never up, never sideways, never
# in a circle.
#   base 0 < jose 1 < core 2 < conf 3 < http 4 < auth 5, redis 5 < worker 6 < ctl 7 < web 8 (the console reuses warrantctl's code)
# A file in one folder may include a header of its own folder or of a lower
# layer; auth and redis are side by side and include neither the other.
# base, jose and core are pure: no Redis, HTTP or event-loop header.
# Prints each violation as "file: includes X" and exits 1 on any.
set -u
cd "$(dirname "$0")/.."

rank() {
	case "$1" in
	base) echo 0 ;; jose) echo 1 ;; core) echo 2 ;; conf) echo 3 ;; http) echo 4 ;;
	auth | redis) echo 5 ;; worker) echo 6 ;; ctl) echo 7 ;; web) echo 8 ;; main) echo 9 ;;
	*) echo -1 ;;
	esac
}

fail=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

for f in src/*.c src/*/*.c include/*/*.h; do
	[ -e "$f" ] || continue
	case "$f" in
	src/*/*.c | include/*/*.h) layer=$(echo "$f" | cut -d/ -f2) ;;
	*) layer=main ;;
	esac
	me=$(rank "$layer")
	if [ "$me" -lt 0 ]; then
		echo "$f: folder $layer is not a layer (scripts/layers.sh)"
		fail=1
		continue
	fi
	mod=$(basename "$f" | sed 's/\.[ch]$//')
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		case "$inc" in
		*/*) ;;
		*) continue ;;	# generated (store_scripts.h) or a local header
		esac
		to=${inc%%/*}
		them=$(rank "$to")
		if [ "$them" -lt 0 ]; then
			echo "$f: includes $inc, which is in no layer"
			fail=1
		elif [ "$to" != "$layer" ] && [ "$them" -ge "$me" ]; then
			echo "$f: includes $inc (layer $to is not below $layer)"
			fail=1
		fi
		tomod=$(basename "$inc" .h)
		[ "$tomod" != "$mod" ] && echo "$mod $tomod" >>"$edges"
	done
	case "$layer" in
	base | jose | core)
		if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(hiredis/|ev\.h|curl/|microhttpd\.h)' "$f"; then
			echo "$f: the pure layers include no Redis, HTTP or event-loop header"
			fail=1
		fi
		;;
	esac
done

# A circle between modules: tsort names the modules on it.
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
	echo "include circle between modules:"
	sed 's/^tsort: /  /' "$edges.err"
	fail=1
fi
rm -f "$edges.err"
[ "$fail" = 0 ] && echo "layers: every include points down, no circle"
exit "$fail"
