# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=sh disable=SC2034,SC2154
# bench/peerlib.sh -- what bench/peers.sh and bench/slow.sh share (one
# warrantd run over preloaded records, measured per process); sourced after
# bench/lib.sh, not run. The caller sets $root, $build, $tmp, $sock, $PREFIX,
# $TIMEOUT_S, daemon_pid= and a die() that prints and exits.

now_ms() { date +%s%3N; }

rcli() { redis-cli -s "$sock" "$@"; }

# The 1-minute load average.
load1() { cut -d' ' -f1 /proc/loadavg; }

# Debian packages a benchmark needs and `make deps` does not install (nginx
# is no test dependency): installed when missing, as root; else a message.
ensure_debs() {
	missing=
	for p in "$@"; do
		case $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) in
		*"install ok installed"*) ;;
		*) missing="$missing $p" ;;
		esac
	done
	[ -n "$missing" ] || return 0
	[ "$(id -u)" = 0 ] || die "missing:$missing (as root: apt-get install -y$missing)"
	echo "bench: installing$missing" >&2
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	# shellcheck disable=SC2086 # a word list on purpose
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
	    >/dev/null || die "apt-get install$missing failed"
	# The package may have started a system nginx (not under a policy-rc.d
	# that forbids it); the benchmarks run their own.
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active -q nginx 2>/dev/null; then
		echo "bench: stopping the system nginx the package started" >&2
		systemctl stop nginx || true
	fi
}

# bench/mkrecords.c, linked with this build's libwarrant.a, into $tmp/mkrecords.
build_mkrecords() {
	pkgs="hiredis libcurl jansson inih openssl"
	san=
	if nm "$build/libwarrant.a" 2>/dev/null | grep -q __asan_init; then
		san="-fsanitize=address,undefined"
	fi
	# shellcheck disable=SC2046,SC2086 # word lists on purpose
	cc -std=c11 -O2 -Wall -Wextra -D_FILE_OFFSET_BITS=64 $san -I"$root/include" \
	    $(pkg-config --cflags $pkgs) -o "$tmp/mkrecords" "$root/bench/mkrecords.c" \
	    "$build/libwarrant.a" $(pkg-config --libs $pkgs) -lev -lm ||
	    die "cannot build bench/mkrecords.c"
}

# Ticks of CPU (utime + stime) of a pid; the comm field holds no spaces here.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

vm_hwm_kb() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

vm_rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }

# Redis' own CPU time (user + sys), in µs.
redis_cpu_us() {
	rcli INFO cpu | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.0f", s * 1e6 }'
}

# The RESP file $1 (bench/mkrecords.c's) into the flushed Redis; $2 jobs.
load_resp() {
	rcli FLUSHALL >/dev/null
	rcli --pipe <"$1" >"$tmp/pipe.log" 2>&1 || die "redis-cli --pipe failed"
	grep -q "errors: 0," "$tmp/pipe.log" || die "redis-cli --pipe: $(cat "$tmp/pipe.log")"
	[ "$(rcli XLEN "$PREFIX:jobs")" = "$2" ] || die "$PREFIX:jobs does not hold $2 entries"
}

# "pending lag" of the group, from XINFO GROUPS (redis-cli prints one value a line).
group_progress() {
	rcli XINFO GROUPS "$PREFIX:jobs" 2>/dev/null | awk '
		prev == "pending" { p = $0 }
		prev == "lag" { l = $0 }
		{ prev = $0 }
		END { if (p == "" || l == "") print "- -"; else print p, l }'
}

finished() { [ "$(group_progress)" = "0 0" ]; }

count_done() {	# jobs
	rcli EVAL "local n = 0
for i = 1, tonumber(ARGV[2]) do
	if redis.call('HGET', ARGV[1] .. i, 'state') == 'done' then n = n + 1 end
end
return n" 0 "$PREFIX:decision:bench-" "$1"
}

# The calls made beyond one a job: the hashes' attempts (R13) less the jobs.
count_retries() {	# jobs
	rcli EVAL "local n = 0
for i = 1, tonumber(ARGV[2]) do
	n = n + (tonumber(redis.call('HGET', ARGV[1] .. i, 'attempts')) or 0)
end
return n - tonumber(ARGV[2])" 0 "$PREFIX:decision:bench-" "$1"
}

# The ms of the oldest and of the newest P:audit id: the first job taken (its
# start's audit entry) and the last terminal write. The oldest is read while
# the run goes on, before audit_maxlen (100,000) trims it away.
audit_first() {
	a=$(rcli XRANGE "$PREFIX:audit" - + COUNT 1 | head -n 1)
	echo "${a%%-*}"
}
audit_last() {
	z=$(rcli XREVRANGE "$PREFIX:audit" + - COUNT 1 | head -n 1)
	echo "${z%%-*}"
}

# $tmp/warrantd.ini: HS256 records, auth none, calls to $1/gates/{resource}/open,
# max_in_flight $2.
write_ini() {	# target_url in_flight
	cat >"$tmp/warrantd.ini" <<EOF
[daemon]
consumer = bench
log_level = warn
max_in_flight = $2
heartbeat_ms = 1000
shutdown_grace_ms = 5000
[redis]
socket = $sock
prefix = $PREFIX
[records]
signature = required
algorithm = HS256
verify_key_file = $root/tests/data/test-hs256.secret
[action gate.open]
auth = none
url = $1/gates/{resource}/open
timeout_ms = 30000
EOF
}

# One warrantd over the jobs loaded, with $tmp/warrantd.ini, until the group
# has nothing pending and no lag; checks every hash is `done`. Sets
# run_ms (first job taken -> last terminal write), run_ticks (its CPU, from
# its start), run_hwm_kb (VmHWM), run_redis_us (Redis' CPU over its life),
# run_fds (the most descriptors it held, sampled every $FD_SAMPLE_MS ms when
# that is set), run_retries (calls beyond one a job).
run_daemon() {	# jobs log_name
	rcpu0=$(redis_cpu_us)
	t0=$(now_ms)
	"$build/bin/warrantd" -c "$tmp/warrantd.ini" 2>"$tmp/warrantd-$2.log" &
	daemon_pid=$!
	deadline=$((t0 + TIMEOUT_S * 1000))
	run_fds=0
	next_fd=0
	first=
	while ! finished; do
		[ -n "$first" ] || first=$(audit_first)
		kill -0 "$daemon_pid" 2>/dev/null ||
		    die "warrantd exited during the $2 run (see $tmp/warrantd-$2.log)"
		now=$(now_ms)
		[ "$now" -lt "$deadline" ] ||
		    die "TIMEOUT: $2 not finished after ${TIMEOUT_S}s (pending lag: $(group_progress))"
		if [ -n "${FD_SAMPLE_MS:-}" ] && [ "$now" -ge "$next_fd" ]; then
			n=$(find "/proc/$daemon_pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
			[ "$n" -le "$run_fds" ] || run_fds=$n
			next_fd=$((now + FD_SAMPLE_MS))
		fi
		sleep 0.05
	done
	run_redis_us=$(( $(redis_cpu_us) - rcpu0 ))
	run_ticks=$(cpu_ticks "$daemon_pid")
	run_hwm_kb=$(vm_hwm_kb "$daemon_pid")
	[ -n "$first" ] || first=$(audit_first)
	last=$(audit_last)
	case "$first" in ''|*[!0-9]*) die "$2: no audit entries" ;; esac
	case "$last" in ''|*[!0-9]*) die "$2: no audit entries" ;; esac
	run_ms=$((last - first))
	[ "$run_ms" -gt 0 ] || run_ms=1
	stop_pid "$daemon_pid"
	daemon_pid=
	done_n=$(count_done "$1")
	[ "$done_n" = "$1" ] || die "$2: $done_n of $1 hashes are done"
	run_retries=$(count_retries "$1")
}
