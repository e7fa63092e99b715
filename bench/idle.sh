#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/idle.sh BUILD_DIR -- what an idle worker wakes up for (issue 10).
#
# Starts a private redis-server and warrantd with the default intervals
# (heartbeat_ms, claim_interval_ms and block_ms 5,000) but for lease_renew_ms
# 3,000 (not a multiple of 5,000, so that its ticks would show), runs one job so that
# the blocking read is no longer in step with the timers, then follows the
# daemon with strace for BENCH_IDLE_S seconds (10) and counts its wake-ups:
# epoll_wait calls after the first (strace -tt stamps a call when it is
# entered, so each later call is made after a wake-up), those entered within
# 50 ms of each other counted as one (a wake-up's replies arrive in the same
# few ms). Expected: the blocking read's
# return and the heartbeat tick (which also runs R11's claim scan), each once
# per 5 s -- no lease timer with nothing in hand, no watchdog without
# WatchdogSec. Prints one line; appends it to BENCH_OUT when set. Reports,
# never fails on the count.
set -eu

[ $# -eq 1 ] || { echo "usage: bench/idle.sh BUILD_DIR" >&2; exit 64; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
IDLE_S=${BENCH_IDLE_S:-10}
command -v strace >/dev/null || { echo "# idle: strace not installed, not measured"; exit 0; }

tmp=$(mktemp -d /tmp/warrantd-idle.XXXXXX)
redis_pid=
daemon_pid=
die() { echo "idle: $*" >&2; exit 1; }
. "$root/bench/lib.sh"
cleanup() {
	stop_pid "$daemon_pid"
	stop_pid "$redis_pid"
	[ -n "${BENCH_KEEP_TMP:-}" ] && echo "idle: kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
rcli() { redis-cli -s "$sock" "$@"; }

sock=$tmp/redis.sock
start_private_redis
cat >"$tmp/warrantd.ini" <<EOF
[daemon]
consumer = idle
log_level = warn
[redis]
socket = $sock
prefix = idle
lease_renew_ms = 3000
[records]
signature = off
[action gate.open]
auth = none
url = http://127.0.0.1:9/gates/{resource}/open
timeout_ms = 1000
EOF
"$build/bin/warrantd" -c "$tmp/warrantd.ini" 2>"$tmp/warrantd.log" &
daemon_pid=$!
has_group() { [ -n "$(rcli XINFO GROUPS idle:jobs 2>/dev/null)" ]; }
one_dead() { [ "$(rcli XLEN idle:dead)" = 1 ]; }
wait_for 100 has_group || die "warrantd did not create its group"
sleep 1.3	# off the timers' phase
rcli XADD idle:jobs '*' id no-such-record >/dev/null	# a dead letter: R3
wait_for 100 one_dead || die "the job was not handled"
sleep 6	# past the job's last timers
timeout "$IDLE_S" strace -tt -e trace=epoll_wait -o "$tmp/strace.txt" -p "$daemon_pid" \
    2>/dev/null || true
awk -v s="$IDLE_S" '
	/epoll_wait\(/ && !/unfinished/ {
		split($1, t, ":"); at = (t[1] * 3600 + t[2] * 60 + t[3]) * 1000
		n++
		if (n > 1 && (n == 2 || at - last > 50)) w++
		last = at
	}
	END { printf "# idle %d s (default intervals, lease_renew_ms 3000): %d wake-ups (%d epoll_wait calls); expected %d: the blocking read and the heartbeat, each every 5 s\n",
	    s, w, n - 1, 2 * int(s / 5) }' "$tmp/strace.txt" | tee -a "${BENCH_OUT:-/dev/null}"
