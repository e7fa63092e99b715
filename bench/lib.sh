# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=sh disable=SC2034,SC2154
# bench/lib.sh -- what bench/run.sh, bench/scale.sh and bench/callgrind.sh
# share; sourced, not run. The caller sets $tmp (its temp dir), $build (the
# build dir) and a die() that prints and exits.

# SIGTERM, then SIGKILL after STOP_WAIT tenths of a second (200); reaps it.
# Only our own children.
stop_pid() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || { wait "$1" 2>/dev/null || true; return 0; }
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt "${STOP_WAIT:-200}" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# Waits up to $1 tenths of a second for the command after it to succeed.
wait_for() {
	n=$1
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}

# A private redis-server on the unix socket $sock (no persistence, its log
# in $tmp/redis.log), run under the command in "$@" when one is given
# (callgrind: valgrind ...); sets redis_pid and waits up to $REDIS_WAIT tenths
# of a second (100) for its PONG. $REDIS_PORT (0: none) opens 127.0.0.1:PORT
# too, for replicas; $REDIS_EXTRA, split at spaces, is added (a tls-port).
redis_up() { [ "$(redis-cli -s "$sock" PING 2>/dev/null)" = PONG ]; }
start_private_redis() {
	"$@" redis-server --port "${REDIS_PORT:-0}" --bind 127.0.0.1 --unixsocket "$sock" \
	    --unixsocketperm 700 --save '' \
	    --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" --daemonize no ${REDIS_EXTRA:-} &
	redis_pid=$!
	wait_for "${REDIS_WAIT:-100}" redis_up || die "redis-server did not start (see $tmp/redis.log)"
	load_functions -s "$sock"
}

# The Redis Functions library every user calls (warrantd(7) §2.1) into the
# server redis-cli "$@" reaches, as its administrator would; $build/bin has
# warrantctl.
load_functions() {
	"$build/bin/warrantctl" functions show | redis-cli "$@" -x FUNCTION LOAD REPLACE \
	    >/dev/null || die "FUNCTION LOAD failed"
}

# Debian's nginx answering 204 (keep-alive, no access log) on the first free
# port of $1, $1 + 10000, ... + 30000 (each script its own base), and on the
# port after it the same answer with each arrival logged ("<ms>.<ms> <the
# Idempotency-Key>" into $tmp/nginx/arrivals.log, for latency lines):
# sets nginx_pid, nginx_url, nginx_lat_url and nginx_name; 1 when nginx is not installed,
# BENCH_NO_NGINX is set, or no port would do.
nginx_pid=
nginx_is_ours() {
	curl -sfI "http://127.0.0.1:$1/" 2>/dev/null | tr -d '\r' | grep -qx "X-Bench: $mark"
}
start_nginx() {
	command -v nginx >/dev/null 2>&1 || return 1
	[ -z "${BENCH_NO_NGINX:-}" ] || return 1
	mkdir -p "$tmp/nginx"
	mark=$(basename "$tmp")
	for k in 0 1 2 3; do
		port=$(($1 + k * 10000))
		cat >"$tmp/nginx/nginx.conf" <<NGINX
daemon off;
master_process off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx/body;
	keepalive_requests 1000000;
	keepalive_timeout 60s;
	log_format lat '\$msec \$http_idempotency_key';
	# X-Bench names this run's nginx: another script's on the same ports
	# (its own bind failed, ours would answer nothing) is not taken for ours.
	add_header X-Bench $mark;
	server { listen 127.0.0.1:$port; location / { return 204; } }
	# the latency runs' target: the same answer, each arrival logged
	server { listen 127.0.0.1:$((port + 1)); access_log $tmp/nginx/arrivals.log lat;
		location / { return 204; } }
}
NGINX
		nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" 2>>"$tmp/nginx/start.log" &
		nginx_pid=$!
		if wait_for 30 nginx_is_ours "$port" && nginx_is_ours $((port + 1)); then
			nginx_url=http://127.0.0.1:$port
			nginx_lat_url=http://127.0.0.1:$((port + 1))
			nginx_name="$(nginx -v 2>&1 | cut -d/ -f2) answering 204"
			return 0
		fi
		stop_pid "$nginx_pid"
		nginx_pid=
	done
	return 1
}

# The fake target (tests/fakes): sets target_pid and target_url.
target_pid=
start_fake_target() {
	"$build/tests/fake_target" --port-file "$tmp/target.port" 2>"$tmp/target.log" &
	target_pid=$!
	wait_for 100 test -s "$tmp/target.port" || die "fake_target did not start"
	target_url=http://127.0.0.1:$(cat "$tmp/target.port")
}

# Two `strace -c` tables ($3, $4) of runs over $1 and $2 units (jobs, calls):
# "name calls failed" a line, per unit, the difference of the two runs (so
# start-up and shut-down cancel), for every call made at least $5 times a unit.
strace_per_unit() {
	awk -v n1="$1" -v n2="$2" -v least="$5" '
		FNR == 1 { run++ }
		# "% time seconds usecs/call calls [errors] syscall"
		$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" {
			c[run, $NF] = $4; f[run, $NF] = NF == 6 ? $5 : 0; names[$NF] = 1
		}
		END {
			for (k in names) {
				d = (c[2, k] - c[1, k]) / (n2 - n1)
				if (d >= least)
					printf "%s %.2f %.2f\n", k, d, (f[2, k] - f[1, k]) / (n2 - n1)
			}
		}' "$3" "$4" | sort -k2 -rn
}
