#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/peers.sh BUILD_DIR -- the yardstick of issue 41 (`make bench-peers`):
# the same jobs through warrantd and through BullMQ (pinned in
# bench/peers/package-lock.json, installed by `npm ci`), one worker process
# each, on the same private redis-server (unix socket, flushed between runs)
# and the same Debian nginx answering 204 (keep-alive, no access log;
# nginx-light installed when missing), in one run.
#
# The jobs: BENCH_JOBS HS256 records from bench/mkrecords.c, all written
# before a worker starts. warrantd reads them from its stream (auth none,
# POST of the verified payload to nginx, R7's headers); BullMQ gets the same
# count preloaded into its queue with Queue.addBulk (bench/peers/preload.mjs),
# each job's data the same call's fields and body, and its worker
# (bench/peers/worker.mjs) POSTs that body to the same nginx with node:http
# and a keep-alive Agent (BENCH_PEERS_VERIFY=1: the job is the record
# itself, and the worker checks its HS256 signature and expiry first, as
# warrantd does).
#
# Each run: wall time from the first job taken to the last one finished
# (warrantd: its oldest to its newest P:audit entry; BullMQ: the first job
# handed to the processor to the last 'completed' event), jobs/s, the
# worker's CPU per job (warrantd: /proc/PID/stat over its whole life; BullMQ:
# process.cpuUsage over that span, so node's start-up is not counted), Redis'
# (INFO cpu) and nginx's (/proc/PID/stat) CPU per job over the worker's life,
# the share of the cores the three kept busy, and the worker's peak RSS
# (VmHWM). Every run checks that every job finished (warrantd: every hash
# `done`; BullMQ: every job in the completed set, none failed).
#
# A round runs warrantd at each BENCH_PEERS_IN_FLIGHT and BullMQ at each
# BENCH_PEERS_CONCURRENCY (their order swapped every other round); each
# system's best row of the round stands for it, and the round's ratio is
# warrantd's jobs/s over BullMQ's. After BENCH_REPEAT rounds: the medians of
# the best rows, and the range of the ratios. Into stdout and BENCH_OUT.
#
# Environment: BENCH_JOBS [200000], BENCH_REPEAT [3],
# BENCH_PEERS_IN_FLIGHT ["64 256"], BENCH_PEERS_CONCURRENCY ["32 128 512"],
# BENCH_PEERS_VERIFY [0], BENCH_TIMEOUT_S [600, per run],
# BENCH_OUT [bench/peers.txt], BENCH_KEEP_TMP (keep the temp dir).
# Everything it starts is stopped by PID. Benchmarks never fail `make test`.
set -eu

[ $# -eq 1 ] || { echo "usage: bench/peers.sh BUILD_DIR" >&2; exit 64; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
JOBS=${BENCH_JOBS:-200000}
REPEAT=${BENCH_REPEAT:-3}
FLIGHTS=${BENCH_PEERS_IN_FLIGHT:-"64 256"}
CONCS=${BENCH_PEERS_CONCURRENCY:-"32 128 512"}
VERIFY=${BENCH_PEERS_VERIFY:-0}
TIMEOUT_S=${BENCH_TIMEOUT_S:-600}
OUT=${BENCH_OUT:-$root/bench/peers.txt}
PREFIX=bench
QUEUE=peers
peers=$root/bench/peers

for bin in "$build/bin/warrantd" "$build/libwarrant.a"; do
	[ -e "$bin" ] || { echo "bench: $bin missing (make BUILD=$1 all unit)" >&2; exit 1; }
done
for tool in redis-server redis-cli curl cc pkg-config node npm; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 1; }
done
case $JOBS in ''|*[!0-9]*|0) echo "bench: BENCH_JOBS must be a positive integer" >&2; exit 64;; esac
case $REPEAT in ''|*[!0-9]*|0) echo "bench: BENCH_REPEAT must be a positive integer" >&2; exit 64;; esac
case $VERIFY in 0|1) ;; *) echo "bench: BENCH_PEERS_VERIFY is 0 or 1" >&2; exit 64;; esac

tmp=$(mktemp -d /tmp/warrantd-peers.XXXXXX)
sock=$tmp/redis.sock
redis_pid=
daemon_pid=
node_pid=
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
# shellcheck source=bench/peerlib.sh
. "$root/bench/peerlib.sh"

cleanup() {
	stop_pid "$daemon_pid"
	stop_pid "$node_pid"
	stop_pid "$nginx_pid"
	stop_pid "$redis_pid"
	daemon_pid=''
	node_pid=''
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

ensure_debs nginx-light
# BullMQ as pinned: npm ci unless exactly the locked version is there.
pinned=$(sed -n 's/.*"bullmq": "\([^"]*\)".*/\1/p' "$peers/package.json")
have=$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$peers/node_modules/bullmq/package.json" \
    2>/dev/null || true)
if [ "$have" != "$pinned" ] ||
    [ -n "$(find "$peers/package-lock.json" -newer "$peers/node_modules" 2>/dev/null)" ]; then
	(cd "$peers" && npm ci --no-audit --no-fund --loglevel=error) >&2 ||
	    die "npm ci in bench/peers failed"
fi
bullmq=BullMQ-$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$peers/node_modules/bullmq/package.json")
ioredis=$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$peers/node_modules/ioredis/package.json")

# shellcheck disable=SC2119 # no wrapper command
start_private_redis
start_nginx 18690 || die "nginx did not start (see $tmp/nginx/)"
build_mkrecords
"$tmp/mkrecords" "$JOBS" "$PREFIX" "$root/tests/data/test-hs256.secret" >"$tmp/jobs.resp" ||
    die "mkrecords failed"
nginx_ticks() { cpu_ticks "$nginx_pid"; }
hz=$(getconf CLK_TCK)
ncpu=$(nproc)
runs=$tmp/runs	# "round system setting jobs ms worker_us redis_us nginx_us hwm_kb load1"
: >"$runs"

run_warrantd() {	# round in_flight
	load_resp "$tmp/jobs.resp" "$JOBS"
	# shellcheck disable=SC2154 # start_nginx sets it
	write_ini "$nginx_url" "$2"
	l=$(load1)
	n0=$(nginx_ticks)
	run_daemon "$JOBS" "peers-$1-$2"
	n1=$(nginx_ticks)
	echo "$1 warrantd in_flight=$2 $JOBS $run_ms $((run_ticks * 1000000 / hz)) $run_redis_us" \
	    "$(((n1 - n0) * 1000000 / hz)) $run_hwm_kb $l" >>"$runs"
}

run_bullmq() {	# round concurrency
	rcli FLUSHALL >/dev/null
	t=$(now_ms)
	added=$(BENCH_PEERS_VERIFY=$VERIFY node "$peers/preload.mjs" "$sock" "$QUEUE" \
	    "$tmp/jobs.resp") || die "bench/peers/preload.mjs failed"
	[ "$added" = "$JOBS" ] || die "preload added $added of $JOBS jobs"
	echo "# bullmq: $JOBS jobs preloaded in $(( $(now_ms) - t )) ms" >&2
	[ "$(rcli LLEN "bull:$QUEUE:wait")" = "$JOBS" ] ||
	    die "bull:$QUEUE:wait does not hold $JOBS jobs"
	l=$(load1)
	n0=$(nginx_ticks)
	rcpu0=$(redis_cpu_us)
	: >"$tmp/node.out"
	BENCH_PEERS_VERIFY=$VERIFY BENCH_PEERS_SECRET=$root/tests/data/test-hs256.secret \
	    node "$peers/worker.mjs" "$sock" "$QUEUE" "$JOBS" "$2" "$nginx_url" \
	    >"$tmp/node.out" 2>"$tmp/node-$1-$2.log" &
	node_pid=$!
	deadline=$(( $(now_ms) + TIMEOUT_S * 1000 ))
	while [ ! -s "$tmp/node.out" ]; do
		kill -0 "$node_pid" 2>/dev/null ||
		    die "the BullMQ worker exited (see $tmp/node-$1-$2.log)"
		[ "$(now_ms)" -lt "$deadline" ] ||
		    die "TIMEOUT: BullMQ at $2 not finished after ${TIMEOUT_S}s"
		sleep 0.05
	done
	rus=$(( $(redis_cpu_us) - rcpu0 ))
	n1=$(nginx_ticks)
	hwm=$(vm_hwm_kb "$node_pid")
	stop_pid "$node_pid"
	node_pid=
	out=$(cat "$tmp/node.out")
	num() { printf '%s' "$out" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
	[ "$(num failed)" = 0 ] || die "BullMQ at $2: $(num failed) jobs failed (see $tmp/node-$1-$2.log)"
	[ "$(num jobs)" = "$JOBS" ] || die "BullMQ at $2: $(num jobs) of $JOBS jobs completed"
	[ "$(rcli ZCARD "bull:$QUEUE:completed")" = "$JOBS" ] ||
	    die "BullMQ at $2: bull:$QUEUE:completed does not hold $JOBS jobs"
	ms=$(num ms)
	[ "$ms" -gt 0 ] || ms=1
	echo "$1 bullmq concurrency=$2 $JOBS $ms $(num cpu_us) $rus $(((n1 - n0) * 1000000 / hz)) $hwm $l" \
	    >>"$runs"
}

header() {
	printf "%-5s %-8s %-15s %7s %7s %8s %10s %10s %10s %8s %6s %8s %5s\n" round system setting \
	    jobs wall_s jobs/s worker_us redis_us nginx_us all_us busy% rss_MiB load
}

# One run's row (per job: the µs of CPU).
fmt_row() {
	awk -v ncpu="$ncpu" '{
		ms = $5; n = $4
		all = $6 + $7 + $8
		printf "%-5s %-8s %-15s %7d %7.2f %8.0f %10.1f %10.1f %10.1f %8.1f %6.0f %8.1f %5s\n",
		    $1, $2, $3, n, ms / 1000, n * 1000 / ms, $6 / n, $7 / n, $8 / n, all / n,
		    all / (ms * 10 * ncpu), $9 / 1024, $10
	}'
}

rows=$tmp/rows
: >"$rows"
header
round=1
while [ "$round" -le "$REPEAT" ]; do
	order="warrantd bullmq"
	[ $((round % 2)) = 1 ] || order="bullmq warrantd"
	for sys in $order; do
		if [ "$sys" = warrantd ]; then
			for f in $FLIGHTS; do
				run_warrantd "$round" "$f"
				tail -n 1 "$runs" | fmt_row | tee -a "$rows"
			done
		else
			for c in $CONCS; do
				run_bullmq "$round" "$c"
				tail -n 1 "$runs" | fmt_row | tee -a "$rows"
			done
		fi
	done
	round=$((round + 1))
done

# Each round's best row of each system (the highest jobs/s), then the medians
# of those and the ratios.
best=$tmp/best
awk '{ jps = $4 * 1000 / $5; k = $1 " " $2
	if (!(k in b) || jps > b[k]) { b[k] = jps; line[k] = $0 } }
	END { for (k in line) print line[k] }' "$runs" | sort -k1,1n -k2,2r >"$best"

median_of() {	# system awk-expression
	awk -v s="$1" '$2 == s { print '"$2"' }' "$best" | sort -n |
	    awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
summary() {
	for s in warrantd bullmq; do
		printf '%s' "$s"
		# shellcheck disable=SC2016 # awk's fields, not the shell's
		for e in '$4 * 1000 / $5' '$6 / $4' '$7 / $4' '$8 / $4' '($6 + $7 + $8) / $4' \
		    "(\$6 + \$7 + \$8) / (\$5 * 10 * $ncpu)" '$9 / 1024'; do
			printf ' %s' "$(median_of "$s" "$e")"
		done
		echo
	done | awk -v name="$bullmq" '
		{ for (i = 2; i <= NF; i++) v[$1, i] = $i }
		END {
			split("jobs/s|worker CPU, us/job|Redis CPU, us/job|nginx CPU, us/job|all three, us/job|cores busy, %|peak RSS of the worker, MiB", lab, "|")
			printf "%-30s %12s %12s %16s\n", "", "warrantd", name, "warrantd/BullMQ"
			for (i = 2; i <= 8; i++) {
				w = v["warrantd", i]; b = v["bullmq", i]
				printf "%-30s %12.1f %12.1f %16.2f\n", lab[i - 1], w, b, (b > 0 ? w / b : 0)
			}
		}'
}
ratios=$(awk '{ jps = $4 * 1000 / $5 } $2 == "warrantd" { w[$1] = jps; ws[$1] = $3 }
	$2 == "bullmq" { b[$1] = jps; bs[$1] = $3 }
	END { for (r in w) printf "%d %.0f %s %.0f %s %.2f\n", r, w[r], ws[r], b[r], bs[r], w[r] / b[r] }' \
	"$best" | sort -n)
lo=$(echo "$ratios" | awk 'NR == 1 || $6 < m { m = $6 } END { printf "%.2f", m }')
hi=$(echo "$ratios" | awk 'NR == 1 || $6 > m { m = $6 } END { printf "%.2f", m }')
verify_note="BullMQ's worker POSTs the job's body as queued (BENCH_PEERS_VERIFY=1: checks the HS256 record first)"
[ "$VERIFY" = 0 ] || verify_note="BullMQ's worker checks each HS256 record (signature, expiresAt) before its POST (BENCH_PEERS_VERIFY=1)"

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
{
	echo "# warrantd against BullMQ ($(date -u +%Y-%m-%dT%H:%M:%SZ), bench/peers.sh, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown))"
	echo "# host: $ncpu CPU(s), ${cpu:-unknown CPU}; $(redis-server --version | cut -d' ' -f1-3); node $(node --version); $bullmq (ioredis $ioredis)"
	echo "# $JOBS HS256 records preloaded per run; one private redis-server (unix socket, flushed between runs);"
	echo "# nginx $(nginx -v 2>&1 | cut -d/ -f2) answering 204 on 127.0.0.1 (keep-alive, no access log), one process."
	echo "# warrantd: auth none, log_level = warn; $verify_note."
	echo "# wall_s: first job taken -> last finished; *_us: CPU µs per job (worker, redis-server, nginx, all three);"
	echo "# busy%: all three's CPU over wall_s x $ncpu cores; rss_MiB: the worker's VmHWM; load: 1-min load average at the run's start."
	header
	cat "$rows"
	echo "#"
	echo "# each round's best (warrantd's max_in_flight among $FLIGHTS, BullMQ's concurrency among $CONCS):"
	echo "$ratios" | awk '{ printf "# round %d: warrantd %d jobs/s (%s), BullMQ %d jobs/s (%s): ratio %.2f\n", $1, $2, $3, $4, $5, $6 }'
	echo "# medians of the rounds' best rows:"
	summary | sed 's/^/# /'
	echo "# ratio warrantd/BullMQ in jobs/s over $REPEAT round(s): $lo-$hi (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
} >"$tmp/peers.txt"
sed -n '/^#$/,$p' "$tmp/peers.txt"
cp "$tmp/peers.txt" "$OUT"
echo "bench: results in ${OUT#"$root"/}" >&2
