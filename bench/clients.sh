#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make bench-clients: the decider libraries' throughput with ES256 against a
# private redis-server on a unix socket (bench/README.md "Decider libraries").
# BENCH_RECORDS (default 20000) a mode; each mode starts on an empty Redis.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${BENCH_RECORDS:-20000}
dir=$(mktemp -d)
redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' --appendonly no --dir "$dir" \
	>"$dir/redis.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
i=0
until redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 500 ] || { echo "bench: redis-server did not start" >&2; exit 1; }
	kill -0 $pid 2>/dev/null || { echo "bench: redis-server exited" >&2; exit 1; }
	sleep 0.02
done
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $N records a mode, ES256"
/usr/bin/python3 "$ROOT/bench/decider_py.py" "$dir/redis.sock" "$N"
node "$ROOT/bench/decider_node.mjs" "$dir/redis.sock" "$N"
