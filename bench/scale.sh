#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/scale.sh BUILD_DIR -- throughput scaling (issue 13): 1, 2 and 4
# workers against one Redis, then 1 and 3 workers against a Redis Cluster of
# 1 and of 3 primaries ([redis] shards = 6). Unsigned records, auth none,
# max_in_flight 64 per worker, all jobs enqueued before the workers start;
# wall time from the first worker's start until every group has nothing
# pending and no lag. Each row: jobs/s and the ratio to one worker on the
# same Redis. The section replaces the "scaling" section of
# bench/results.txt (make bench runs it after bench/run.sh).
#
# Environment: BENCH_SCALE_JOBS [20000], BENCH_TIMEOUT_S [600, per run],
# BENCH_OUT [bench/results.txt], BENCH_KEEP_TMP (keep the temp dir).
# Everything it starts is stopped by PID.
set -eu

[ $# -eq 1 ] || { echo "usage: bench/scale.sh BUILD_DIR" >&2; exit 64; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
JOBS=${BENCH_SCALE_JOBS:-20000}
TIMEOUT_S=${BENCH_TIMEOUT_S:-600}
OUT=${BENCH_OUT:-$root/bench/results.txt}
PREFIX=bench
SHARDS=6
PKGS="hiredis libcurl jansson openssl"

for bin in "$build/bin/warrantd" "$build/tests/fake_target"; do
	[ -x "$bin" ] || { echo "bench: $bin missing (make BUILD=$1 unit)" >&2; exit 1; }
done
for tool in redis-server redis-cli curl cc pkg-config; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/warrantd-scale.XXXXXX)
pids=
redis_pids=
. "$root/bench/lib.sh"


stop_workers() {
	for p in $pids; do stop_pid "$p"; done
	pids=
}

stop_redis() {
	for p in $redis_pids; do stop_pid "$p"; done
	redis_pids=
}

cleanup() {
	stop_workers
	stop_redis
	stop_pid "${target_pid:-}"
	stop_pid "${nginx_pid:-}"
	if [ -n "${BENCH_KEEP_TMP:-}" ]; then echo "bench: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "bench: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }

# ---- the target: nginx answering 204 when installed, else fake_target ----
start_target() {
	if start_nginx 18481; then
		target_url=$nginx_url
		target_name=$nginx_name
		return 0
	fi
	start_fake_target
	target_name=fake_target
}

build_mkrecords() {
	# shellcheck disable=SC2046,SC2086
	cc -std=c11 -O2 -Wall -Wextra -D_FILE_OFFSET_BITS=64 -I"$root/include" \
	    $(pkg-config --cflags $PKGS) -o "$tmp/mkrecords" "$root/bench/mkrecords.c" \
	    "$build/libwarrant.a" $(pkg-config --libs $PKGS) -lev -lm ||
	    die "cannot build bench/mkrecords.c"
}

# ---- Redis: one plain server, or a cluster of N primaries ----
# Ports: a base from the pid, so that two runs on one host do not collide
# (the cluster bus listens on port + 10000). Node and bus ports both stay
# below Linux's ephemeral range (32768-60999): a port in it may be the
# local end of any connection on the host (one run failed so, at 39652).
base=$((10000 + ($$ % 550) * 20))
redis_ports=

start_node() {	# port cluster(0|1)
	mkdir -p "$tmp/redis-$1"
	extra=
	[ "$2" = 1 ] && extra="--cluster-enabled yes --cluster-config-file nodes.conf"
	# shellcheck disable=SC2086
	redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
	    --dir "$tmp/redis-$1" --logfile "$tmp/redis-$1/log" $extra &
	redis_pids="$redis_pids $!"
	wait_for 100 redis-cli -p "$1" PING || die "redis-server :$1 did not start"
	load_functions -p "$1"
}

cluster_ok() {
	for p in $redis_ports; do
		redis-cli -p "$p" CLUSTER INFO | grep -q cluster_state:ok || return 1
	done
}

start_redis() {	# primaries (0: a plain server)
	redis_ports=
	if [ "$1" = 0 ]; then
		start_node "$base" 0
		redis_ports=$base
		return
	fi
	i=0
	while [ $i -lt "$1" ]; do
		start_node $((base + i)) 1
		redis_ports="$redis_ports $((base + i))"
		i=$((i + 1))
	done
	if [ "$1" = 1 ]; then
		redis-cli -p "$base" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
	else
		# shellcheck disable=SC2046
		redis-cli --cluster create $(for p in $redis_ports; do printf '127.0.0.1:%s ' "$p"; done) \
		    --cluster-yes >"$tmp/create.log" 2>&1 || die "cluster create: $(cat "$tmp/create.log")"
	fi
	wait_for 300 cluster_ok || die "the cluster did not come up"
}

# The port of the node owning key's slot (a plain server: the only one).
owner() {
	out=$(redis-cli -p "$base" EXISTS "$1" 2>&1)
	case $out in
	*MOVED*) echo "${out##*:}" | tr -d '\r ' ;;
	*) echo "$base" ;;
	esac
}

# The prefixes in use: bench, or {bench:0} ... {bench:5}.
prefixes() {
	if [ "$1" = 0 ]; then echo "$PREFIX"; return; fi
	i=0
	while [ $i -lt "$SHARDS" ]; do
		printf '{%s:%d} ' "$PREFIX" "$i"
		i=$((i + 1))
	done
}

# JOBS jobs, spread evenly over the prefixes, each on its node.
load_jobs() {	# shards
	n=0
	for p in $(prefixes "$1"); do n=$((n + 1)); done
	per=$((JOBS / n))
	for p in $(prefixes "$1"); do
		"$tmp/mkrecords" "$per" "$p" | redis-cli -p "$(owner "$p:jobs")" --pipe \
		    >"$tmp/pipe.log" 2>&1 || die "redis-cli --pipe failed"
		grep -q "errors: 0," "$tmp/pipe.log" || die "redis-cli --pipe: $(cat "$tmp/pipe.log")"
	done
	loaded=$((per * n))
}

# "pending lag" summed over every shard's group.
progress() {	# shards
	for p in $(prefixes "$1"); do
		redis-cli -p "$(owner "$p:jobs")" XINFO GROUPS "$p:jobs" 2>/dev/null
	done | awk '
		prev == "pending" { p += $0; np++ }
		prev == "lag" { l += $0; nl++ }
		{ prev = $0 }
		END { if (np < n || nl < n) print "- -"; else print p, l }' n="$2"
}

write_ini() {	# consumer shards cluster(0|1)
	redis="host = 127.0.0.1
port = $base"
	[ "$3" = 1 ] && redis="cluster = $(echo "$redis_ports" | sed 's/^ *//; s/ *$//; s/\([0-9][0-9]*\)/127.0.0.1:\1/g; s/ /, /g')"
	[ "$2" != 0 ] && redis="$redis
shards = $2"
	cat >"$tmp/$1.ini" <<EOF
[daemon]
consumer = $1
log_level = warn
max_in_flight = 64
heartbeat_ms = 1000
[redis]
$redis
prefix = $PREFIX
[records]
signature = off
[action gate.open]
auth = none
url = $target_url/gates/{resource}/open
EOF
}

rows=$tmp/rows
one_jps=

run() {	# label primaries(0: plain) workers shards
	start_redis "$2"
	load_jobs "$4"
	n=0
	for p in $(prefixes "$4"); do n=$((n + 1)); done
	cl=0
	[ "$2" != 0 ] && cl=1
	t0=$(now_ms)
	w=1
	while [ $w -le "$3" ]; do
		write_ini "w$w" "$4" "$cl"
		"$build/bin/warrantd" -c "$tmp/w$w.ini" 2>"$tmp/$1-w$w.log" &
		pids="$pids $!"
		w=$((w + 1))
	done
	deadline=$((t0 + TIMEOUT_S * 1000))
	while [ "$(progress "$4" "$n")" != "0 0" ]; do
		[ "$(now_ms)" -lt "$deadline" ] || die "$1: not finished in ${TIMEOUT_S}s ($(progress "$4" "$n"))"
		sleep 0.05
	done
	ms=$(( $(now_ms) - t0 ))
	stop_workers
	stop_redis
	jps=$(awk -v n="$loaded" -v ms="$ms" 'BEGIN { if (ms < 1) ms = 1; printf "%.0f", n * 1000 / ms }')
	[ "$3" = 1 ] && one_jps=$jps
	awk -v l="$1" -v w="$3" -v s="$4" -v n="$loaded" -v ms="$ms" -v jps="$jps" -v one="$one_jps" \
	    'BEGIN { printf "%-22s %7d %6d %7d %8.2f %8d %6.2f\n", l, w, s, n, ms / 1000, jps, jps / one }' \
	    >>"$rows"
	tail -n 1 "$rows"
	base=$((base + 5))
}

start_target
build_mkrecords
: >"$rows"
header() {
	printf "%-22s %7s %6s %7s %8s %8s %6s\n" redis workers shards jobs wall_s jobs/s ×1
}
header
run "one-redis" 0 1 0
run "one-redis" 0 2 0
run "one-redis" 0 4 0
run "cluster-1-primary" 1 1 "$SHARDS"
run "cluster-1-primary" 1 3 "$SHARDS"
run "cluster-3-primaries" 3 1 "$SHARDS"
run "cluster-3-primaries" 3 3 "$SHARDS"

{
	echo "# --- scaling (bench/scale.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ)) ---"
	echo "# host: $(nproc) CPU(s); $(redis-server --version | cut -d' ' -f1-3); target: $target_name"
	echo "# unsigned records, auth none, max_in_flight 64 per worker, log_level warn; redis on"
	echo "# TCP loopback; jobs enqueued before the workers start; wall: first start -> nothing"
	echo "# pending and no lag in any shard. ×1: jobs/s over one worker's on the same Redis."
	echo "# On $(nproc) cores every worker, every redis-server and the target share them: the"
	echo "# ratios bound contention for those cores, not how far the design scales."
	header
	cat "$rows"
} >"$tmp/section"
if [ -f "$OUT" ]; then
	awk '/^# --- scaling/ { exit } { print }' "$OUT" >"$tmp/results.txt"
else
	: >"$tmp/results.txt"
fi
cat "$tmp/section" >>"$tmp/results.txt"
cp "$tmp/results.txt" "$OUT"
echo "bench: scaling in ${OUT#"$root"/}" >&2
