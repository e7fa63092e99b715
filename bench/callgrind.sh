#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/callgrind.sh BUILD_DIR [MODE] -- the repeatable cost of one job.
#
# Wall-clock numbers on a shared 2-core machine move by 20 % from run to
# run; instruction counts do not. This runs the daemon under valgrind's
# callgrind twice, over N1 and N2 jobs (BENCH_CG_JOBS, default "500 2500"),
# and prints the daemon's instructions per job as the difference of the two
# totals over N2 - N1 (start-up and shut-down cancel out), plus Redis' calls
# and CPU per job from INFO commandstats of the larger run. With
# BENCH_CG_REDIS=1 it is redis-server that runs under callgrind (the daemon
# without valgrind), zeroed once the jobs are loaded: Redis' instructions per job,
# the one number commandstats' microseconds cannot give on a busy host. MODE is off
# [default], hs256 or es256; the target is nginx answering 204 when installed,
# else fake_target; 64 in flight (BENCH_CG_IN_FLIGHT), log_level = warn.
# With BENCH_CG_STRACE=1 the daemon runs under `strace -f -c` instead: its
# system calls per job, and how many of them failed (EEXIST, EAGAIN).
# With BENCH_CG_FLOOR=floor|writes|commands (implies BENCH_CG_REDIS=1) no
# daemon runs: bench/floor.c does, in that mode (see its comment), so that
# Redis' instructions per job for the floor, the rules' writes and every
# command of a job's transitions as plain commands compare with the daemon's.
# BENCH_CG_KEEP=1 keeps the temp dir (callgrind.out.N* for
# callgrind_annotate). Everything it starts is stopped by PID.
set -eu

[ $# -ge 1 ] || { echo "usage: bench/callgrind.sh BUILD_DIR [off|hs256|es256]" >&2; exit 64; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
MODE=${2:-off}
# two counts on purpose: split into $1 and $2
# shellcheck disable=SC2086
set -- ${BENCH_CG_JOBS:-500 2500}
N1=$1
N2=$2
PREFIX=bench
PKGS="hiredis libcurl jansson openssl"

tmp=$(mktemp -d /tmp/warrantd-cg.XXXXXX)
sock=$tmp/redis.sock
redis_pid=
STOP_WAIT=600	# a daemon under callgrind takes long to write its profile
. "$root/bench/lib.sh"
daemon_pid=


cleanup() {
	stop_pid "$daemon_pid"
	stop_pid "$nginx_pid"
	stop_pid "$target_pid"
	stop_pid "$redis_pid"
	if [ -n "${BENCH_CG_KEEP:-}" ]; then echo "callgrind: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "callgrind: $*" >&2; exit 1; }
rcli() { redis-cli -s "$sock" "$@"; }

CG_REDIS=${BENCH_CG_REDIS:-}
CG_FLOOR=${BENCH_CG_FLOOR:-}
case $CG_FLOOR in
'') ;;
floor|writes|commands) CG_REDIS=1 ;;
*) echo "callgrind: BENCH_CG_FLOOR is floor, writes or commands" >&2; exit 64 ;;
esac
CG_STRACE=${BENCH_CG_STRACE:-}
start_redis() {	# a fresh one per run under BENCH_CG_REDIS (callgrind counts from its start)
	stop_pid "$redis_pid"
	rm -f "$sock"
	if [ -n "$CG_REDIS" ]; then
		REDIS_WAIT=600 start_private_redis valgrind --tool=callgrind \
		    --callgrind-out-file="$tmp/redis.cg.$1" --log-file="$tmp/redis.vg.log"
	else
		REDIS_WAIT=600 start_private_redis
	fi
}
start_redis 0

if start_nginx 18490; then
	url=$nginx_url
else
	start_fake_target
	url=$target_url
fi

# shellcheck disable=SC2046,SC2086
cc -std=c11 -O2 -D_FILE_OFFSET_BITS=64 -I"$root/include" $(pkg-config --cflags $PKGS) \
    -o "$tmp/mkrecords" "$root/bench/mkrecords.c" "$build/libwarrant.a" \
    $(pkg-config --libs $PKGS) -lev -lm || die "cannot build bench/mkrecords.c"
if [ -n "$CG_FLOOR" ]; then
	# shellcheck disable=SC2046
	cc -std=c11 -O2 -o "$tmp/floor" "$root/bench/floor.c" $(pkg-config --cflags --libs hiredis) ||
	    die "cannot build bench/floor.c"
fi

case $MODE in
off)	records="signature = off"; key= ;;
hs256)	key=$root/tests/data/test-hs256.secret
	records="signature = required
algorithm = HS256
verify_key_file = $key" ;;
es256)	key=$root/tests/data/test-es256.key
	records="signature = required
algorithm = ES256
verify_key_file = $root/tests/data/test-es256.pub" ;;
*)	die "mode $MODE: off, hs256 or es256" ;;
esac
cat >"$tmp/warrantd.ini" <<EOF
[daemon]
consumer = cg
log_level = warn
max_in_flight = ${BENCH_CG_IN_FLIGHT:-64}
heartbeat_ms = 1000
shutdown_grace_ms = 5000
[redis]
socket = $sock
prefix = $PREFIX
[records]
$records
[action gate.open]
auth = none
url = $url/gates/{resource}/open
timeout_ms = 60000
EOF

finished() {
	[ "$(rcli XINFO GROUPS $PREFIX:jobs 2>/dev/null | awk '
		prev == "pending" { p = $0 } prev == "lag" { l = $0 } { prev = $0 }
		END { print p "/" l }')" = "0/0" ]
}

# The daemon over $1 jobs (already loaded), until the group has nothing
# pending and no lag; commandstats into $tmp/stats.$1.
run_daemon() {
	if [ -n "$CG_REDIS" ]; then
		callgrind_control -z "$redis_pid" >/dev/null || die "callgrind_control -z failed"
		"$build/bin/warrantd" -c "$tmp/warrantd.ini" 2>"$tmp/daemon.$1.log" &
	elif [ -n "$CG_STRACE" ]; then
		strace -f -c -o "$tmp/strace.$1" \
		    "$build/bin/warrantd" -c "$tmp/warrantd.ini" 2>"$tmp/daemon.$1.log" &
	else
		valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.out.$1" \
		    "$build/bin/warrantd" -c "$tmp/warrantd.ini" 2>"$tmp/daemon.$1.log" &
	fi
	daemon_pid=$!
	i=0
	until finished; do
		kill -0 "$daemon_pid" 2>/dev/null || die "warrantd exited (see $tmp/daemon.$1.log)"
		i=$((i + 1))
		[ $i -lt 6000 ] || die "$1 jobs not finished in 10 min"
		sleep 0.1
	done
	rcli INFO commandstats >"$tmp/stats.$1"
	# strace's tracee is stopped first: strace itself, told to stop, would
	# leave it running and write no table
	[ -z "$CG_STRACE" ] || stop_pid "$(pgrep -P "$daemon_pid" | head -n 1)"
	stop_pid "$daemon_pid"
	daemon_pid=
}

# Total instructions over $1 jobs into $tmp/ir.$1; commandstats in
# $tmp/stats.$1. Not in a $(...): what it starts must stay this shell's.
run() {
	[ -z "$CG_REDIS" ] || start_redis "$1"
	rcli FLUSHALL >/dev/null
	# shellcheck disable=SC2086
	"$tmp/mkrecords" "$1" "$PREFIX" $key | rcli --pipe >/dev/null || die "cannot load jobs"
	rcli CONFIG RESETSTAT >/dev/null
	if [ -n "$CG_FLOOR" ]; then
		callgrind_control -z "$redis_pid" >/dev/null || die "callgrind_control -z failed"
		"$tmp/floor" "$sock" "$PREFIX" "$1" "$CG_FLOOR" >/dev/null ||
		    die "floor $CG_FLOOR failed over $1 jobs"
		rcli INFO commandstats >"$tmp/stats.$1"
	else
		run_daemon "$1"
	fi
	[ -z "$CG_REDIS" ] || callgrind_control -d "$redis_pid" >/dev/null ||
	    die "callgrind_control -d failed"
	[ "$(rcli EVAL "local n = 0 for i = 1, tonumber(ARGV[2]) do
	    if redis.call('HGET', ARGV[1] .. i, 'state') == 'done' then n = n + 1 end end
	    return n" 0 "$PREFIX:decision:bench-" "$1")" = "$1" ] || die "not every job is done"
	if [ -n "$CG_STRACE" ]; then	# strace wrote its table as it exited
		grep -q '^100' "$tmp/strace.$1" || die "no strace table for $1 jobs"
		return
	fi
	if [ -n "$CG_REDIS" ]; then	# the dump after the zeroing: the jobs' run
		# callgrind_control -d writes redis.cg.N.1, .2, ...: the newest
		# shellcheck disable=SC2012
		out=$(ls -t "$tmp/redis.cg.$1".* | head -n 1)
	else
		out=$tmp/callgrind.out.$1
	fi
	awk '/^(summary|totals):/ { print $2; exit }' "$out" >"$tmp/ir.$1"
}

run "$N1"
run "$N2"
if [ -n "$CG_STRACE" ]; then
	strace_per_unit "$N1" "$N2" "$tmp/strace.$N1" "$tmp/strace.$N2" 0.005 |
	    awk '{ printf "strace %-14s %6.2f calls/job %6.2f failed/job\n", $1, $2, $3 }'
	exit 0
fi
ir1=$(cat "$tmp/ir.$N1")
ir2=$(cat "$tmp/ir.$N2")
awk -v a="$ir1" -v b="$ir2" -v n1="$N1" -v n2="$N2" -v m="$MODE" \
    -v cg="${CG_REDIS:+ redis-server}${CG_FLOOR:+ (floor $CG_FLOOR, no daemon)}" 'BEGIN {
	printf "callgrind %s%s: %.0f instructions/job (%d jobs: %.0f, %d jobs: %.0f)\n",
	    m, cg, (b - a) / (n2 - n1), n1, a, n2, b }'
# cmdstat_evalsha:calls=5000,usec=123,usec_per_call=...
tr ',:=' '   ' <"$tmp/stats.$N2" | awk -v n="$N2" '
	/^cmdstat_/ { sub("cmdstat_", "", $1); c[$1] = $3; u[$1] = $5; tc += $3; tu += $5 }
	END {
		for (k in c) printf "  redis %-12s %6.2f calls/job %7.2f us/job\n", k, c[k] / n, u[k] / n
		printf "  redis %-12s %6.2f calls/job %7.2f us/job (commandstats)\n", "total", tc / n, tu / n
	}' | sort
