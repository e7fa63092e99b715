#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/slow.sh BUILD_DIR -- many calls in flight against a slow target
# (issue 41 item 3). The target is Debian's nginx with the echo module
# (libnginx-mod-http-echo; both installed when missing): every call is
# answered 204 after BENCH_SLOW_DELAY_MS (100) ms by a timer (echo_sleep), on
# kept-alive connections, one process, so 10,000 calls at once cost it only
# their connections. warrantd runs at each BENCH_SLOW_IN_FLIGHT
# ("64 1024 10000") over HS256 records written before it starts (auth none,
# the same call as bench/peers.sh), after a base run at max_in_flight 1.
#
# Each row: jobs, wall time (the first job taken -> the last terminal write),
# jobs/s against max_in_flight / delay (what the target allows) and its
# share; the most calls the target held at once (nginx stub_status'
# "Writing", sampled); the daemon's peak RSS (VmHWM), and beyond the base
# run's per call in flight (at max_in_flight, and at the most the target
# saw); the most descriptors it held (/proc/PID/fd, sampled); the TCP
# connections the target accepted during the run (stub_status "accepts",
# less the samples' own) and calls per connection, which says whether
# curl reuses its connections; the calls made beyond one a job (attempts);
# the daemon's and Redis' CPU per job; the 1-minute load average at the
# run's start. Every run checks every hash is `done` (nothing lost).
# Then a bound run (max_in_flight 256, the same nginx answering at once: what
# the machine allows) and a hold run (the most in flight, as many jobs, each
# answered after BENCH_SLOW_HOLD_MS, so that all are in flight at once).
#
# The descriptor limit is raised for the script (ulimit -n) to what 10,000
# in flight needs on both sides; warrantd raises its own soft limit to
# max_in_flight + 1,024 + 130 (src/worker/proc.c) within the hard one.
#
# Environment: BENCH_SLOW_IN_FLIGHT ["64 1024 10000"], BENCH_SLOW_DELAY_MS
# [100], BENCH_SLOW_ROUNDS [30]: jobs per run = max_in_flight x that, at most
# BENCH_SLOW_MAX_JOBS [100000] (BENCH_SLOW_JOBS: one count for every run),
# BENCH_SLOW_SAMPLE_MS [200], BENCH_SLOW_HOLD_MS [20000], BENCH_SLOW_BOUND_IN_FLIGHT
# [256; "" skips the run], BENCH_SLOW_BOUND_JOBS [20000], BENCH_TIMEOUT_S [600, per run],
# BENCH_OUT [bench/slow.txt], BENCH_KEEP_TMP. Everything it starts is stopped
# by PID. Benchmarks never fail `make test`.
set -eu

[ $# -eq 1 ] || { echo "usage: bench/slow.sh BUILD_DIR" >&2; exit 64; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
FLIGHTS=${BENCH_SLOW_IN_FLIGHT:-"64 1024 10000"}
DELAY_MS=${BENCH_SLOW_DELAY_MS:-100}
ROUNDS=${BENCH_SLOW_ROUNDS:-30}
MAX_JOBS=${BENCH_SLOW_MAX_JOBS:-100000}
SAMPLE_MS=${BENCH_SLOW_SAMPLE_MS:-200}
HOLD_MS=${BENCH_SLOW_HOLD_MS:-20000}
TIMEOUT_S=${BENCH_TIMEOUT_S:-600}
OUT=${BENCH_OUT:-$root/bench/slow.txt}
PREFIX=bench

for bin in "$build/bin/warrantd" "$build/libwarrant.a"; do
	[ -e "$bin" ] || { echo "bench: $bin missing (make BUILD=$1 all unit)" >&2; exit 1; }
done
for tool in redis-server redis-cli curl cc pkg-config; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 1; }
done
for v in "$DELAY_MS" "$ROUNDS" "$MAX_JOBS" "$SAMPLE_MS" "$HOLD_MS" $FLIGHTS ${BENCH_SLOW_JOBS:-1}; do
	case $v in ''|*[!0-9]*|0) echo "bench: BENCH_SLOW_* must be positive integers" >&2; exit 64;; esac
done

tmp=$(mktemp -d /tmp/warrantd-slow.XXXXXX)
sock=$tmp/redis.sock
redis_pid=
daemon_pid=
nginx_pid=
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
# shellcheck source=bench/peerlib.sh
. "$root/bench/peerlib.sh"

cleanup() {
	stop_pid "$daemon_pid"
	stop_pid "$nginx_pid"
	stop_pid "$redis_pid"
	daemon_pid=''
	nginx_pid=''
	redis_pid=''
	if [ -n "${BENCH_KEEP_TMP:-}" ]; then
		echo "bench: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
	echo "bench: $*" >&2
	exit 1
}

ensure_debs nginx-light libnginx-mod-http-echo

# Descriptors: the most in flight, twice (the daemon's side and nginx's),
# and room for the rest.
most=0
for f in $FLIGHTS; do [ "$f" -le "$most" ] || most=$f; done
want=$((2 * most + 4096))
# shellcheck disable=SC3045 # dash, bash and busybox sh all have ulimit -n, -H, -S
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
	ulimit -n "$want" 2>/dev/null || ulimit -S -n "$(ulimit -H -n)" 2>/dev/null || true
fi
# shellcheck disable=SC3045
nofile=$(ulimit -n)

# nginx answering 204 after DELAY_MS on the first free port of 18790,
# 28790, ...: one process, keep-alive, no access log, stub_status at
# /_status. Sets nginx_pid, slow_url, status_url.
echo_module=
for m in /usr/lib/nginx/modules/ngx_http_echo_module.so /usr/share/nginx/modules/ngx_http_echo_module.so; do
	[ -f "$m" ] && { echo_module=$m; break; }
done
[ -n "$echo_module" ] || die "the nginx echo module is missing (apt-get install libnginx-mod-http-echo)"
delay_s=$(awk -v ms="$DELAY_MS" 'BEGIN { printf "%.3f", ms / 1000 }')
hold_s=$(awk -v ms="$HOLD_MS" 'BEGIN { printf "%.3f", ms / 1000 }')
start_slow_nginx() {
	mkdir -p "$tmp/nginx"
	mark=$(basename "$tmp")
	for k in 0 1 2 3; do
		port=$((18790 + k * 10000))
		cat >"$tmp/nginx/nginx.conf" <<NGINX
load_module $echo_module;
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile $want;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections $((most + 1024)); }
http {
	access_log off;
	client_body_temp_path $tmp/nginx/body;
	keepalive_requests 1000000;
	keepalive_timeout 120s;
	add_header X-Bench $mark;
	server {
		listen 127.0.0.1:$port backlog=65535;
		location = /_status { stub_status; }
		location /now/ { return 204; }
		location /hold/ { echo_sleep $hold_s; echo_status 204; }
		location / { echo_sleep $delay_s; echo_status 204; }
	}
}
NGINX
		nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" 2>>"$tmp/nginx/start.log" &
		nginx_pid=$!
		if wait_for 30 nginx_is_ours "$port"; then
			slow_url=http://127.0.0.1:$port
			status_url=$slow_url/_status
			return 0
		fi
		stop_pid "$nginx_pid"
		nginx_pid=
	done
	return 1
}

# stub_status: "Active connections: A \n server accepts handled requests \n
# X Y Z \n Reading: R Writing: W Waiting: V" -> "accepts writing"
status_read() {
	curl -sf "$status_url" | awk 'NR == 3 { a = $1 } /Writing:/ { w = $4 } END { print a, w }'
}

# shellcheck disable=SC2119 # no wrapper command
start_private_redis
start_slow_nginx || die "nginx did not start (see $tmp/nginx/)"
build_mkrecords
hz=$(getconf CLK_TCK)

# One run at max_in_flight $1 over $2 jobs against the target's delay $3 (ms:
# $DELAY_MS; 0, /now/; $HOLD_MS, /hold/); appends its raw numbers to $tmp/runs:
# "in_flight jobs ms ticks redis_us hwm_kb fds accepted most_writing load1 delay_ms retries".
slow_run() {
	d=$3
	case $d in
	"$DELAY_MS") url=$slow_url ;;
	0) url=$slow_url/now ;;
	*) url=$slow_url/hold ;;
	esac
	"$tmp/mkrecords" "$2" "$PREFIX" "$root/tests/data/test-hs256.secret" >"$tmp/jobs.resp" ||
	    die "mkrecords failed"
	load_resp "$tmp/jobs.resp" "$2"
	write_ini "$url" "$1"
	l=$(load1)
	# shellcheck disable=SC2046 # two numbers
	set -- "$1" "$2" $(status_read)
	acc0=$3
	polls=0
	most_w=0
	# the sampler: stub_status while the daemon runs, until $tmp/stop (each
	# poll is a connection of its own, counted out below)
	rm -f "$tmp/stop"
	: >"$tmp/polls"
	(
		pause=$(awk -v ms="$SAMPLE_MS" 'BEGIN { print ms / 1000 }')
		while [ ! -e "$tmp/stop" ]; do
			echo poll >>"$tmp/polls"
			curl -sf "$status_url" | awk '/Writing:/ { print $4 - 1 }'
			sleep "$pause"
		done
	) >"$tmp/writing" 2>/dev/null &
	sampler=$!
	FD_SAMPLE_MS=$SAMPLE_MS run_daemon "$2" "slow-$1-$d"
	touch "$tmp/stop"
	wait "$sampler" 2>/dev/null || true
	polls=$(wc -l <"$tmp/polls")
	most_w=$(sort -n "$tmp/writing" | tail -n 1)
	# shellcheck disable=SC2046
	set -- "$1" "$2" $(status_read)
	acc=$(($3 - acc0 - polls - 1))	# less the samples' and this read's own
	echo "$1 $2 $run_ms $run_ticks $run_redis_us $run_hwm_kb $run_fds $acc ${most_w:-0} $l $d $run_retries" \
	    >>"$tmp/runs"
	echo "# slow $1 run: $(tail -n 1 "$tmp/runs")" >&2
}

: >"$tmp/runs"
slow_run 1 "${BENCH_SLOW_BASE_JOBS:-20}" "$DELAY_MS"
base_kb=$(awk '{ print $6 }' "$tmp/runs")
for f in $FLIGHTS; do
	n=${BENCH_SLOW_JOBS:-$((f * ROUNDS))}
	[ -n "${BENCH_SLOW_JOBS:-}" ] || [ "$n" -le "$MAX_JOBS" ] || n=$MAX_JOBS
	slow_run "$f" "$n" "$DELAY_MS"
done
# What the machine allows: the same daemon against the same nginx answering
# at once (BENCH_SLOW_BOUND_IN_FLIGHT [256], BENCH_SLOW_BOUND_JOBS [20000]; "" skips it).
bound_f=${BENCH_SLOW_BOUND_IN_FLIGHT-256}
[ -z "$bound_f" ] || slow_run "$bound_f" "${BENCH_SLOW_BOUND_JOBS:-20000}" 0
# All of the most in flight held at once: as many jobs, each answered after
# BENCH_SLOW_HOLD_MS (20,000; longer than the daemon takes to start them all):
# what each call in flight costs in memory and descriptors.
[ "$HOLD_MS" = "$DELAY_MS" ] || slow_run "$most" "$most" "$HOLD_MS"

header() {
	printf "%9s %6s %7s %7s %8s %8s %6s %8s %8s %9s %9s %6s %6s %10s %7s %8s %8s %5s\n" in_flight \
	    delay jobs wall_s jobs/s ideal of% at_once rss_MiB KiB/call KiB/held fds conns \
	    calls/conn retries cpu_us redis_us load
}
fmt() {
	awk -v base="$base_kb" -v hz="$hz" '{
		f = $1; n = $2; ms = $3; jps = n * 1000 / ms
		d = $11
		ideal = "-"; of = "-"
		if (d > 0) {
			ideal = (f < n ? f : n) * 1000 / d
			of = sprintf("%.1f", 100 * jps / ideal)
			ideal = sprintf("%.0f", ideal)
		}
		held = $9 > 0 ? $9 : 1
		perheld = d > 0 ? sprintf("%.2f", ($6 - base) / held) : "-"
		conns = $8 > 0 ? $8 : 0
		printf "%9d %6s %7d %7.2f %8.0f %8s %6s %8d %8.1f %9.2f %9s %6d %6d %10.1f %7d %8.1f %8.1f %5s\n",
		    f, d "ms", n, ms / 1000, jps, ideal, of, $9, $6 / 1024,
		    ($6 - base) / f, perheld, $7, conns, (conns > 0 ? n / conns : 0), $12,
		    $4 * 1e6 / hz / n, $5 / n, $10
	}'
}

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
{
	echo "# warrantd against a slow target ($(date -u +%Y-%m-%dT%H:%M:%SZ), bench/slow.sh, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown))"
	echo "# host: $(nproc) CPU(s), ${cpu:-unknown CPU}; $(redis-server --version | cut -d' ' -f1-3); RLIMIT_NOFILE $nofile; somaxconn $(cat /proc/sys/net/core/somaxconn)"
	echo "# target: nginx $(nginx -v 2>&1 | cut -d/ -f2) with echo_sleep $delay_s s then 204, keep-alive, one process; HS256 records, auth none."
	echo "# delay: the target's (0: the same nginx answering at once, what the machine allows at that max_in_flight);"
	echo "# wall_s: first job taken -> last terminal write; ideal: min(in_flight, jobs) / delay; of%: jobs/s over it;"
	echo "# at_once: the most calls nginx held at once (stub_status Writing, sampled every ${SAMPLE_MS} ms);"
	echo "# rss_MiB: the daemon's VmHWM; KiB/call: beyond the base run's (max_in_flight 1: $((base_kb)) KiB) per max_in_flight, KiB/held: per at_once;"
	echo "# fds: the most descriptors the daemon held (sampled); conns: TCP connections nginx accepted in the run;"
	echo "# retries: calls beyond one a job (the hashes' attempts less the jobs); cpu_us, redis_us: CPU per job."
	header
	fmt <"$tmp/runs"
} >"$tmp/slow.txt"
cat "$tmp/slow.txt"
cp "$tmp/slow.txt" "$OUT"
echo "bench: results in ${OUT#"$root"/}" >&2
