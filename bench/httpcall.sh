#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/httpcall.sh -- what one action call costs its caller through curl,
# and at the least without it (bench/httpcall.c), on one kept-alive
# connection to nginx answering 204: instructions per call (callgrind, the
# difference of two runs: BENCH_HC_CALLS, default "2000 10000"), CPU per
# call (getrusage; the median of BENCH_REPEAT [3] runs of the larger count)
# and system calls per call (strace -c, the difference of two runs). Needs
# nginx (apt-get install -y nginx-light); everything it starts is stopped by
# PID. It measures no part of the daemon: it is the evidence for the choice
# of HTTP client (bench/README "An action call without curl").
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/warrantd-hc.XXXXXX)
. "$root/bench/lib.sh"

cleanup() {
	stop_pid "$nginx_pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "httpcall: $*" >&2; exit 1; }

# two counts on purpose: split into $1 and $2
# shellcheck disable=SC2086
set -- ${BENCH_HC_CALLS:-2000 10000}
N1=$1
N2=$2
REPEAT=${BENCH_REPEAT:-3}

command -v valgrind >/dev/null || die "valgrind missing"
command -v strace >/dev/null || die "strace missing"
start_nginx 18590 || die "nginx missing (apt-get install -y nginx-light)"
port=${nginx_url##*:}
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -o "$tmp/httpcall" "$root/bench/httpcall.c" \
    $(pkg-config --cflags --libs libcurl) || die "cannot build bench/httpcall.c"

instructions() {	# mode -> instructions per call
	for n in "$N1" "$N2"; do
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1.$n" \
		    "$tmp/httpcall" "$1" "$port" "$n" >/dev/null 2>"$tmp/vg.log" ||
		    die "$1 under callgrind failed (see $tmp/vg.log)"
	done
	awk -v n1="$N1" -v n2="$N2" '/^(summary|totals):/ { t[++i] = $2; nextfile }
		END { printf "%.0f", (t[2] - t[1]) / (n2 - n1) }' "$tmp/cg.$1.$N1" "$tmp/cg.$1.$N2"
}

cpu() {	# mode -> "user sys" µs per call, each the median of the runs
	i=0
	while [ $i -lt "$REPEAT" ]; do
		"$tmp/httpcall" "$1" "$port" "$N2" || die "$1 failed"
		i=$((i + 1))
	done | awk '{ u[NR] = $2 / $1; s[NR] = $3 / $1 }
		function median(a, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return a[int((n + 1) / 2)]
		}
		END { printf "%.1f %.1f", median(u, NR), median(s, NR) }'
}

syscalls() {	# mode -> "name calls, ..." per call
	for n in "$N1" "$N2"; do
		strace -f -c -o "$tmp/st.$1.$n" "$tmp/httpcall" "$1" "$port" "$n" >/dev/null ||
		    die "$1 under strace failed"
	done
	strace_per_unit "$N1" "$N2" "$tmp/st.$1.$N1" "$tmp/st.$1.$N2" 0.05 |
	    awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 } END { print "" }'
}

echo "# httpcall: one keep-alive POST with R7's headers to $nginx_name; $N2 calls a run"
for mode in curl plain; do
	ir=$(instructions "$mode")
	# shellcheck disable=SC2046
	set -- $(cpu "$mode")	# two words: user and sys
	printf "httpcall %-5s %7s instructions/call  CPU %5s us/call (user %s, sys %s)  syscalls/call: %s\n" \
	    "$mode" "$ir" "$(echo "$1 $2" | awk '{ printf "%.1f", $1 + $2 }')" "$1" "$2" \
	    "$(syscalls "$mode")"
done
