#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/run.sh BUILD_DIR -- throughput of warrantd against a private
# redis-server (unix socket) and the fake target, on this machine.
#
# For each mode and each max_in_flight, it
# enqueues BENCH_JOBS jobs (all before the daemon starts), starts warrantd,
# and measures the wall time from its start until the last job's terminal
# write (the newest P:audit id; completion is detected when XINFO GROUPS shows
# nothing pending and no lag), jobs/s, the daemon's CPU time (utime+stime) and
# peak RSS (VmHWM). Then it checks that every hash is `done` and the target saw
# each job exactly once. The table goes to stdout and bench/results.txt.
#
# First the Redis floor (bench/floor.c: XREADGROUP COUNT 100, pipelined
# HGETALL, pipelined HSET, one XACK a batch; no HTTP), and two rows beside
# it: floor-writes (the writes the rules make per job, as plain commands)
# and floor-commands (every redis.call of the job's two transitions, as
# plain commands: what Redis spends on the commands themselves, without
# Lua), then warrantd.
# Modes: off (unsigned records, auth none), hs256 (HS256 records, auth none),
# es256 (ES256 records, auth none), es256-2t (the same, verify_threads = 2),
# oauth (ES256 records, the worker's own OAuth token from fake_idp, checked
# by the target on every call), exchange (ES256 records, a token exchanged
# for each job, RFC 8693: one more IdP round trip per job).
#
# Each row and each latency line is the median of BENCH_REPEAT [3] runs (the
# issue's "median of 3"; single runs on 2 shared cores move by 15 %), with
# the range of jobs/s and of p99 beside it.
#
# Environment: BENCH_JOBS [20000], BENCH_IN_FLIGHT ["1 64 256"], BENCH_REPEAT [3],
# BENCH_MODES ["off hs256 es256 es256-2t oauth exchange"], BENCH_TIMEOUT_S [600, per run], BENCH_VERIFY_THREADS [1, the default; the ES256
# modes' [records] verify_threads],
# BENCH_OUT [bench/results.txt], BENCH_KEEP_TMP (keep the temp dir),
# BENCH_WAIT_REPLICAS [0]: that many replicas of the private redis (on
# 127.0.0.1) and [redis] wait_replicas set to it (R19: a WAIT after each call
# step and each final write); the rows' mode gets "+wN".
# BENCH_TRANSPORT [unix]: tcp (the daemon on 127.0.0.1:port) or tls (a
# tls-port with a throwaway CA, [redis] tls = yes: rtls.c's cost); the rows'
# mode gets "+tcp" or "+tls".
# Everything it starts is stopped by PID; it exits non-zero when a run does
# not finish in time or a check fails (results.txt is then left unchanged).
set -eu

[ $# -eq 1 ] || { echo "usage: bench/run.sh BUILD_DIR" >&2; exit 64; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
JOBS=${BENCH_JOBS:-20000}
FLIGHTS=${BENCH_IN_FLIGHT:-"1 64 256"}
MODES=${BENCH_MODES:-"off hs256 es256 es256-2t oauth exchange"}
TIMEOUT_S=${BENCH_TIMEOUT_S:-600}
OUT=${BENCH_OUT:-$root/bench/results.txt}
REPEAT=${BENCH_REPEAT:-3}
VERIFY_THREADS=${BENCH_VERIFY_THREADS:-1}
WAIT_REPLICAS=${BENCH_WAIT_REPLICAS:-0}
TRANSPORT=${BENCH_TRANSPORT:-unix}
PREFIX=bench
PKGS="hiredis libcurl jansson openssl"

for bin in "$build/bin/warrantd" "$build/tests/fake_target" "$build/tests/fake_idp"; do
	[ -x "$bin" ] || { echo "bench: $bin missing (make BUILD=$1 unit)" >&2; exit 1; }
done
[ -f "$build/libwarrant.a" ] || { echo "bench: $build/libwarrant.a missing" >&2; exit 1; }
for tool in redis-server redis-cli curl cc pkg-config; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 1; }
done
case $JOBS in ''|*[!0-9]*|0) echo "bench: BENCH_JOBS must be a positive integer" >&2; exit 64;; esac
case $REPEAT in ''|*[!0-9]*|0) echo "bench: BENCH_REPEAT must be a positive integer" >&2; exit 64;; esac
case $VERIFY_THREADS in ''|*[!0-9]*) echo "bench: BENCH_VERIFY_THREADS must be 0-16" >&2; exit 64;; esac
case $WAIT_REPLICAS in ''|*[!0-9]*) echo "bench: BENCH_WAIT_REPLICAS must be a number" >&2; exit 64;; esac
case $TRANSPORT in unix|tcp|tls) ;; *) echo "bench: BENCH_TRANSPORT is unix, tcp or tls" >&2; exit 64;; esac

tmp=$(mktemp -d /tmp/warrantd-bench.XXXXXX)
sock=$tmp/redis.sock
redis_pid=
replica_pids=
target_pid=
tok_target_pid=
idp_pid=
daemon_pid=
. "$root/bench/lib.sh"

cleanup() {
	stop_pid "$daemon_pid"
	stop_pid "$nginx_pid"
	stop_pid "$target_pid"
	stop_pid "$tok_target_pid"
	stop_pid "$idp_pid"
	for p in $replica_pids; do stop_pid "$p"; done
	replica_pids=''
	stop_pid "$redis_pid"
	daemon_pid=''
	target_pid=''
	tok_target_pid=''
	idp_pid=''
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

now_ms() { date +%s%3N; }

rcli() { redis-cli -s "$sock" "$@"; }

# A free TCP port on 127.0.0.1 from $1 up (none listening there).
free_port() {
	p=$1
	while ss -ltn 2>/dev/null | awk '{ print $4 }' | grep -q ":$p\$"; do p=$((p + 1)); done
	echo "$p"
}

# With BENCH_WAIT_REPLICAS: the primary on a TCP port too, and its replicas
# on their own sockets, each one connected before any run.
start_redis() {
	{ [ "$WAIT_REPLICAS" -gt 0 ] || [ "$TRANSPORT" = tcp ]; } && REDIS_PORT=$(free_port 17379)
	if [ "$TRANSPORT" = tls ]; then
		mkdir -m 700 "$tmp/pki"
		(cd "$tmp/pki" &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
		    -out ca.crt -days 2 -subj /CN=bench-ca 2>/dev/null &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key \
		    -out server.csr -subj /CN=127.0.0.1 2>/dev/null &&
		printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
		    -out server.crt -days 2 -extfile san.ext 2>/dev/null) || die "openssl failed"
		TLS_PORT=$(free_port 18379)
		REDIS_EXTRA="--tls-port $TLS_PORT --tls-cert-file $tmp/pki/server.crt \
--tls-key-file $tmp/pki/server.key --tls-ca-cert-file $tmp/pki/ca.crt --tls-auth-clients no"
	fi
	start_private_redis
	k=0
	while [ "$k" -lt "$WAIT_REPLICAS" ]; do
		mkdir -p "$tmp/replica$k"
		redis-server --port 0 --unixsocket "$tmp/replica$k/redis.sock" --save '' \
		    --appendonly no --dir "$tmp/replica$k" --logfile "$tmp/replica$k/redis.log" \
		    --daemonize no --replicaof 127.0.0.1 "$REDIS_PORT" &
		replica_pids="$replica_pids $!"
		k=$((k + 1))
	done
	[ "$WAIT_REPLICAS" -eq 0 ] || wait_for 100 replicas_up ||
	    die "the replicas did not connect (see $tmp/replica*/redis.log)"
}

replicas_up() {
	rcli INFO replication | tr -d '\r' | grep -qx "connected_slaves:$WAIT_REPLICAS"
}

# The rows' name of a mode: "+wN" with BENCH_WAIT_REPLICAS.
label() {
	l=$1
	[ "$WAIT_REPLICAS" -eq 0 ] || l="$l+w$WAIT_REPLICAS"
	[ "$TRANSPORT" = unix ] || l="$l+$TRANSPORT"
	echo "$l"
}

# [redis]'s way to the private redis.
redis_where() {
	case $TRANSPORT in
	unix) echo "socket = $sock" ;;
	tcp) printf 'host = 127.0.0.1\nport = %s\n' "$REDIS_PORT" ;;
	tls) printf 'host = 127.0.0.1\nport = %s\ntls = yes\ntls_ca_file = %s\n' "$TLS_PORT" \
	    "$tmp/pki/ca.crt" ;;
	esac
}

start_target() { start_fake_target; }

# For the token modes: an IdP, and a target that checks every token.
start_token_world() {
	hs=$root/tests/data/test-hs256.secret
	(umask 077 && echo "bench-secret" >"$tmp/client-secret")
	"$build/tests/fake_idp" --port-file "$tmp/idp.port" --jwt-secret-file "$hs" \
	    --client-id bench --client-secret-file "$tmp/client-secret" --lifetime-s 3600 \
	    --decision-key-file "$root/tests/data/test-es256.pub" 2>"$tmp/idp.log" &
	idp_pid=$!
	"$build/tests/fake_target" --port-file "$tmp/tok-target.port" --jwt-secret-file "$hs" \
	    2>"$tmp/tok-target.log" &
	tok_target_pid=$!
	wait_for 100 test -s "$tmp/idp.port" || die "fake_idp did not start"
	wait_for 100 test -s "$tmp/tok-target.port" || die "fake_target (tokens) did not start"
	idp_url=http://127.0.0.1:$(cat "$tmp/idp.port")
	tok_target_url=http://127.0.0.1:$(cat "$tmp/tok-target.port")
}

# The fake target a mode calls (the one that records; nginx records nothing).
target_of() {
	case $1 in
	oauth|exchange) echo "$tok_target_url" ;;
	*) echo "$target_url" ;;
	esac
}

# Where a latency run of a mode sends its calls when nginx logs the arrivals
# (the same target as the throughput runs, so "half the peak" is half of what
# the same machine did); "" for the fake target.
latency_nginx() {
	case $1 in
	off|hs256|es256|es256-2t) echo "${nginx_lat_url:-}" ;;
	*) echo "" ;;
	esac
}

# Where the throughput runs of a mode send their calls.
throughput_target_of() {
	case $1 in
	oauth|exchange) echo "$tok_target_url" ;;
	*) echo "${nginx_url:-$target_url}" ;;
	esac
}

# The helper that writes the jobs, linked with this build's libwarrant.a.
build_mkrecords() {
	san=
	if nm "$build/libwarrant.a" 2>/dev/null | grep -q __asan_init; then
		san="-fsanitize=address,undefined"
	fi
	# $PKGS and the pkg-config output are word lists on purpose.
	# shellcheck disable=SC2046,SC2086
	cc -std=c11 -O2 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	    -Wformat=2 -D_FILE_OFFSET_BITS=64 $san -I"$root/include" \
	    $(pkg-config --cflags $PKGS) -o "$tmp/mkrecords" "$root/bench/mkrecords.c" \
	    "$build/libwarrant.a" $(pkg-config --libs $PKGS) -lev -lm ||
	    die "cannot build bench/mkrecords.c"
	# shellcheck disable=SC2046,SC2086
	cc -std=c11 -O2 -Wall -Wextra -D_FILE_OFFSET_BITS=64 $san -I"$root/include" \
	    $(pkg-config --cflags $PKGS) -o "$tmp/dpopcost" "$root/bench/dpopcost.c" \
	    "$build/libwarrant.a" $(pkg-config --libs $PKGS) -lev -lm ||
	    die "cannot build bench/dpopcost.c"
	# shellcheck disable=SC2046
	cc -std=c11 -O2 -Wall -Wextra -o "$tmp/floor" "$root/bench/floor.c" \
	    $(pkg-config --cflags --libs hiredis) || die "cannot build bench/floor.c"
	# shellcheck disable=SC2046
	cc -std=c11 -O2 -Wall -Wextra -o "$tmp/pace" "$root/bench/pace.c" \
	    $(pkg-config --cflags --libs hiredis) || die "cannot build bench/pace.c"
}

# Latency at half the peak rate: the records are written first, then
# enqueued at a steady rate (bench/pace.c), and each job's XADD time is
# paired with its arrival at the target. Prints one line.
LAT_S=${BENCH_LATENCY_S:-10}
run_latency() {	# mode peak_jobs_per_s in_flight
	rate=$(awk -v p="$2" 'BEGIN { r = p / 2; if (r < 1) r = 1; printf "%.0f", r }')
	lat_n=$(awk -v r="$rate" -v s="$LAT_S" -v max="$JOBS" 'BEGIN { n = r * s; if (n > max) n = max; printf "%d", n }')
	rcli FLUSHALL >/dev/null
	curl -sf -X POST "$(target_of "$1")/_reset" >/dev/null || die "cannot reset fake_target"
	[ -z "$(latency_nginx "$1")" ] || : >"$tmp/nginx/arrivals.log"
	case $1 in
	off)	BENCH_NO_XADD=1 "$tmp/mkrecords" "$lat_n" "$PREFIX" ;;
	hs256)	BENCH_NO_XADD=1 "$tmp/mkrecords" "$lat_n" "$PREFIX" "$root/tests/data/test-hs256.secret" ;;
	*)	BENCH_NO_XADD=1 "$tmp/mkrecords" "$lat_n" "$PREFIX" "$root/tests/data/test-es256.key" ;;
	esac | rcli --pipe >/dev/null 2>&1 || die "latency: cannot write records"
	ini_target=$(latency_nginx "$1")
	write_ini "$1" "$3"
	ini_target=
	"$build/bin/warrantd" -c "$tmp/warrantd.ini" 2>"$tmp/warrantd-lat-$1.log" &
	daemon_pid=$!
	wait_for 100 test "$(rcli XINFO GROUPS $PREFIX:jobs 2>/dev/null | head -c1)" ||
	    die "latency: warrantd did not create its group"
	"$tmp/pace" "$sock" "$PREFIX" "$lat_n" "$rate" >"$tmp/enqueued" || die "pace failed"
	deadline=$(( $(now_ms) + TIMEOUT_S * 1000 ))
	while ! finished; do
		[ "$(now_ms)" -lt "$deadline" ] || die "latency: $1 not finished in time"
		sleep 0.05
	done
	stop_pid "$daemon_pid"
	daemon_pid=
	if [ -n "$(latency_nginx "$1")" ]; then	# "<s>.<ms> <key>" a line
		awk '{ printf "%s %.0f\n", $2, $1 * 1000 }' "$tmp/nginx/arrivals.log" >"$tmp/arrived"
	else	# one record a line (bodies hold braces of their own), then key and arrival
		curl -sf "$(target_of "$1")/_requests" | sed 's/},{"method"/}\n{"method"/g' |
		    sed -n 's/.*"idempotency_key":"\([^"]*\)".*"arrival_ms":\([0-9]*\),.*/\1 \2/p' \
		    >"$tmp/arrived"
	fi
	awk 'NR == FNR { at[$1] = $2; next } ($1 in at) { print $2 - at[$1] }' \
	    "$tmp/enqueued" "$tmp/arrived" | sort -n >"$tmp/lat"
	# one run: "jobs p50 p99 max"
	awk '{ v[NR] = $1 } END {
		if (NR == 0) { print 0, 0, 0, 0; exit }
		p50 = v[int(NR * 0.50 + 0.5) > 0 ? int(NR * 0.50 + 0.5) : 1]
		p99 = v[int(NR * 0.99 + 0.5) > 0 ? int(NR * 0.99 + 0.5) : 1]
		print NR, p50, p99, v[NR]
	}' "$tmp/lat" >>"$tmp/lat_runs"
	echo "# latency $1 run: jobs p50 p99 max = $(tail -n 1 "$tmp/lat_runs")" >&2
}

# The median of the numbers on stdin (one a line; the lower middle one of an
# even count).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# BENCH_REPEAT latency runs of a mode, one line: the median p50, p99 and max,
# and every run's p99.
latency_line() {	# mode peak_jobs_per_s in_flight
	: >"$tmp/lat_runs"
	lat_i=0	# not i: lib.sh's wait_for counts with it
	while [ "$lat_i" -lt "$REPEAT" ]; do
		run_latency "$@"
		lat_i=$((lat_i + 1))
	done
	rate=$(awk -v p="$2" 'BEGIN { r = p / 2; if (r < 1) r = 1; printf "%.0f", r }')
	n=$(awk '{ print $1 }' "$tmp/lat_runs" | median)
	p50=$(awk '{ print $2 }' "$tmp/lat_runs" | median)
	p99=$(awk '{ print $3 }' "$tmp/lat_runs" | median)
	max=$(awk '{ print $4 }' "$tmp/lat_runs" | median)
	all=$(awk '{ printf "%s%s", (NR > 1 ? "/" : ""), $3 }' "$tmp/lat_runs")
	printf "# latency %-13s %d jobs at %d/s (half the peak), %d in flight: XADD -> target p50 %d ms, p99 %d ms, max %d ms (medians of %d runs; p99s %s)\n" \
	    "$1" "$n" "$rate" "$3" "$p50" "$p99" "$max" "$REPEAT" "$all" >>"$lat_rows"
	tail -n 1 "$lat_rows"
}

# Redis' own CPU time (user + sys), in µs.
redis_cpu_us() {
	rcli INFO cpu | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.0f", s * 1e6 }'
}

floor_jps=
# run_floor [floor|writes|commands]: bench/floor.c's mode; the row is named
# floor, floor-writes or floor-commands. Only the floor's own jobs/s is the
# floor× of the rows after it.
run_floor() {
	fmode=${1:-floor}
	make_jobs off
	: >"$tmp/runs"
	floor_i=0
	while [ "$floor_i" -lt "$REPEAT" ]; do
		load_jobs off
		# shellcheck disable=SC2046 # its three numbers, split on purpose
		set -- $("$tmp/floor" "$sock" "$PREFIX" "$JOBS" "$fmode") || die "floor $fmode failed"
		[ "$1" = "$JOBS" ] || die "floor $fmode: $1 of $JOBS jobs"
		echo "$2 $3" >>"$tmp/runs"	# ms, Redis µs
		floor_i=$((floor_i + 1))
	done
	ms=$(awk '{ print $1 }' "$tmp/runs" | median)
	rus=$(awk '{ print $2 }' "$tmp/runs" | median)
	jps=$(awk -v n="$JOBS" -v ms="$ms" 'BEGIN { if (ms < 1) ms = 1; printf "%.0f", n * 1000 / ms }')
	[ "$fmode" != floor ] || floor_jps=$jps
	name=floor
	[ "$fmode" = floor ] || name=floor-$fmode
	range=$(awk -v n="$JOBS" '{ if ($1 < 1) $1 = 1; j = n * 1000 / $1
		if (NR == 1 || j < lo) lo = j; if (NR == 1 || j > hi) hi = j }
		END { printf "%.0f-%.0f", lo, hi }' "$tmp/runs")
	awk -v n="$JOBS" -v ms="$ms" -v rus="$rus" -v jps="$jps" -v fl="$floor_jps" -v range="$range" \
	    -v name="$name" 'BEGIN {
		printf "%-13s %9s %7d %8.2f %9d %6.2f %7s %11s %11.1f %9s %s\n", name, "-", n,
		    ms / 1000, jps, jps / fl, "-", "-", rus / n, "-", range
	}' >>"$rows"
	tail -n 1 "$rows"
}

make_jobs() {
	case $1 in
	off)	"$tmp/mkrecords" "$JOBS" "$PREFIX" >"$tmp/jobs-$1.resp" ;;
	hs256)	"$tmp/mkrecords" "$JOBS" "$PREFIX" "$root/tests/data/test-hs256.secret" \
		    >"$tmp/jobs-$1.resp" ;;
	es256|es256-2t|oauth|exchange)
		"$tmp/mkrecords" "$JOBS" "$PREFIX" "$root/tests/data/test-es256.key" \
		    >"$tmp/jobs-$1.resp" ;;
	*)	die "unknown mode $1 (off, hs256, es256, es256-2t, oauth or exchange)" ;;
	esac || die "mkrecords failed"
}

write_ini() {	# mode in_flight
	if [ "$1" = off ]; then
		records="signature = off"
	elif [ "$1" = hs256 ]; then
		records="signature = required
algorithm = HS256
verify_key_file = $root/tests/data/test-hs256.secret"
	else
		records="signature = required
algorithm = ES256
verify_key_file = $root/tests/data/test-es256.pub
verify_threads = $( [ "$1" = es256-2t ] && echo 2 || echo "$VERIFY_THREADS")"
	fi
	auth="auth = none
url = ${ini_target:-$target_url}/gates/{resource}/open"
	oauth=
	case $1 in
	oauth|exchange)
		auth="auth = oauth
url = $tok_target_url/act/{action}/{resource}"
		[ "$1" = exchange ] && auth="$auth
token = exchange"
		oauth="[oauth]
token_url = $idp_url/token
client_id = bench
client_secret_file = $tmp/client-secret"
		;;
	esac
	cat >"$tmp/warrantd.ini" <<EOF
[daemon]
consumer = bench
log_level = warn
max_in_flight = $2
heartbeat_ms = 1000
shutdown_grace_ms = 5000
[redis]
$(redis_where)
prefix = $PREFIX
wait_replicas = $WAIT_REPLICAS
[records]
$records
$oauth
[action gate.open]
$auth
timeout_ms = 10000
EOF
}

load_jobs() {
	rcli FLUSHALL >/dev/null
	curl -sf -X POST "$(target_of "$1")/_reset" >/dev/null || die "cannot reset fake_target"
	rcli --pipe <"$tmp/jobs-$1.resp" >"$tmp/pipe.log" 2>&1 || die "redis-cli --pipe failed"
	grep -q "errors: 0," "$tmp/pipe.log" || die "redis-cli --pipe: $(cat "$tmp/pipe.log")"
	[ "$(rcli XLEN $PREFIX:jobs)" = "$JOBS" ] || die "$PREFIX:jobs does not hold $JOBS entries"
}

# "pending lag" of the group, from XINFO GROUPS (redis-cli prints one value a line).
group_progress() {
	rcli XINFO GROUPS $PREFIX:jobs 2>/dev/null | awk '
		prev == "pending" { p = $0 }
		prev == "lag" { l = $0 }
		{ prev = $0 }
		END { if (p == "" || l == "") print "- -"; else print p, l }'
}

finished() { [ "$(group_progress)" = "0 0" ]; }

# Ticks of CPU (utime + stime) of a pid; the comm field holds no spaces here.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

vm_hwm_kb() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

count_done() {
	rcli EVAL "local n = 0
for i = 1, tonumber(ARGV[2]) do
	if redis.call('HGET', ARGV[1] .. i, 'state') == 'done' then n = n + 1 end
end
return n" 0 "$PREFIX:decision:bench-" "$JOBS"
}

json_int() {	# key json
	printf '%s' "$2" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"
}

rows=$tmp/rows

run_one() {	# mode in_flight
	mode=$1
	flight=$2
	load_jobs "$mode"
	ini_target=$(throughput_target_of "$mode")
	write_ini "$mode" "$flight"
	ini_target=
	rcpu0=$(redis_cpu_us)
	t0=$(now_ms)
	"$build/bin/warrantd" -c "$tmp/warrantd.ini" 2>"$tmp/warrantd-$mode-$flight.log" &
	daemon_pid=$!
	deadline=$((t0 + TIMEOUT_S * 1000))
	while ! finished; do
		kill -0 "$daemon_pid" 2>/dev/null ||
		    die "warrantd exited during the $mode/$flight run (see $tmp/warrantd-$mode-$flight.log)"
		if [ "$(now_ms)" -gt "$deadline" ]; then
			BENCH_KEEP_TMP=1
			die "TIMEOUT: $mode/$flight not finished after ${TIMEOUT_S}s (pending lag: $(group_progress))"
		fi
		sleep 0.05
	done
	t_seen=$(now_ms)
	rcpu=$(( $(redis_cpu_us) - rcpu0 ))
	ticks=$(cpu_ticks "$daemon_pid")
	hwm=$(vm_hwm_kb "$daemon_pid")
	last=$(rcli XREVRANGE $PREFIX:audit + - COUNT 1 | head -n 1)
	t_end=${last%%-*}
	case $t_end in ''|*[!0-9]*) t_end=$t_seen ;; esac

	stop_pid "$daemon_pid"
	daemon_pid=
	done_n=$(count_done)
	[ "$done_n" = "$JOBS" ] || die "$mode/$flight: $done_n of $JOBS hashes are done"
	if [ "$(throughput_target_of "$mode")" = "$(target_of "$mode")" ]; then
		stats=$(curl -sf "$(target_of "$mode")/_stats") || die "cannot read fake_target stats"
		calls=$(json_int total "$stats")
		dups=$(json_int duplicates "$stats")
		if [ "$calls" != "$JOBS" ] || [ "$dups" != 0 ]; then
			die "$mode/$flight: the target saw $calls calls ($dups duplicates) for $JOBS jobs"
		fi
	fi

	echo "$((t_end - t0)) $ticks $rcpu $hwm" >>"$tmp/runs"	# ms, ticks, Redis µs, KiB
	echo "# $mode/$flight run: ms ticks redis_us hwm_kb = $(tail -n 1 "$tmp/runs")" >&2
}

# BENCH_REPEAT runs of a mode at one max_in_flight, one row: each column's
# median, and the range of jobs/s.
row() {	# mode in_flight
	: >"$tmp/runs"
	row_i=0	# not i: lib.sh's wait_for counts with it
	while [ "$row_i" -lt "$REPEAT" ]; do
		run_one "$1" "$2"
		row_i=$((row_i + 1))
	done
	ms=$(awk '{ print $1 }' "$tmp/runs" | median)
	ticks=$(awk '{ print $2 }' "$tmp/runs" | median)
	rcpu=$(awk '{ print $3 }' "$tmp/runs" | median)
	hwm=$(awk '{ print $4 }' "$tmp/runs" | median)
	range=$(awk -v n="$JOBS" '{ if ($1 < 1) $1 = 1; j = n * 1000 / $1
		if (NR == 1 || j < lo) lo = j; if (NR == 1 || j > hi) hi = j }
		END { printf "%.0f-%.0f", lo, hi }' "$tmp/runs")
	awk -v mode="$(label "$1")" -v f="$2" -v n="$JOBS" -v ms="$ms" \
	    -v ticks="$ticks" -v hz="$(getconf CLK_TCK)" -v kb="$hwm" -v rus="$rcpu" \
	    -v floor="$floor_jps" -v range="$range" 'BEGIN {
		if (ms < 1) ms = 1
		jps = n * 1000 / ms
		printf "%-13s %9d %7d %8.2f %9.0f %6.2f %7.2f %11.1f %11.1f %9.1f %s\n", mode, f, n,
		    ms / 1000, jps, jps / floor, ticks / hz, ticks / hz * 1e6 / n, rus / n, kb / 1024, range
	}' >>"$rows"
	tail -n 1 "$rows"
}

header() {
	printf "%-13s %9s %7s %8s %9s %6s %7s %11s %11s %9s %s\n" mode in_flight jobs wall_s jobs/s \
	    floor× cpu_s cpu_us/job redis_us/job rss_MiB jobs/s_range
}

start_redis
start_target
start_token_world
start_nginx 18480 || true	# the auth-none runs' target when installed
build_mkrecords
: >"$rows"
lat_rows=$tmp/lat_rows
: >"$lat_rows"
header
run_floor floor
run_floor writes
run_floor commands
for mode in $MODES; do
	t=$(now_ms)
	make_jobs "$mode"
	echo "# $mode: $JOBS jobs written in $(( $(now_ms) - t )) ms" >&2
	peak=0
	peak_flight=64
	for flight in $FLIGHTS; do
		row "$mode" "$flight"
		jps=$(tail -n 1 "$rows" | awk '{ print $5 }')
		if [ "$jps" -gt "$peak" ]; then peak=$jps; peak_flight=$flight; fi
	done
	[ -n "${BENCH_NO_LATENCY:-}" ] || latency_line "$mode" "$peak" "$peak_flight"
done

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
{
	echo "# warrantd benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ), bench/run.sh)"
	echo "# host: $(nproc) CPU(s), ${cpu:-unknown CPU}; $(redis-server --version | cut -d' ' -f1-3)"
	echo "# build: ${build#"$root"/}; jobs enqueued before start; redis on a unix socket;"
	[ "$TRANSPORT" = unix ] ||
	    echo "# +$TRANSPORT: the daemon reaches redis on 127.0.0.1 over $TRANSPORT (BENCH_TRANSPORT)."
	[ "$WAIT_REPLICAS" -eq 0 ] ||
	    echo "# +w$WAIT_REPLICAS: $WAIT_REPLICAS replica(s) on 127.0.0.1, wait_replicas = $WAIT_REPLICAS (R19)."
	if [ -n "${nginx_url:-}" ]; then
		echo "# target (off, hs256, es256, es256-2t): $nginx_name, keep-alive, no access log;"
		echo "# the latency lines of those: the same nginx, logging each arrival; the token modes:"
		echo "# fake_target. log_level = warn; batch = 64; no [authz]."
	else
		echo "# fake_target on 127.0.0.1 (same host; nginx not installed); log_level = warn; batch = 64; no [authz]."
	fi
	echo "# oauth: the worker's token (fake_idp), checked by the target per call (HS256);"
	echo "# exchange: one RFC 8693 exchange per job at fake_idp, then the call."
	echo "# $("$tmp/dpopcost" "$root/tests/data/test-es256.key") (bench/dpopcost.c: RFC 9449, per DPoP call)"
	echo "# wall_s: daemon start -> last terminal write; cpu_s, rss_MiB: the daemon only (VmHWM)."
	echo "# floor×: jobs/s over the floor's; redis_us/job: Redis' own CPU (INFO cpu) per job."
	echo "# Every number: the median of $REPEAT runs (each column on its own); jobs/s_range: their lowest and highest."
	header
	cat "$rows"
	cat "$lat_rows"
} >"$tmp/results.txt"
cp "$tmp/results.txt" "$OUT"
echo "bench: results in ${OUT#"$root"/}" >&2
