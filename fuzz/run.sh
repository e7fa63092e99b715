#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs each libFuzzer target for SECONDS from its seed corpus.
#   fuzz/run.sh BUILD_DIR SECONDS TARGET...
# Seeds in fuzz/corpus/NAME are only read; what the fuzzer finds goes to
# BUILD_DIR/work/NAME, a crash to BUILD_DIR/crash-NAME-*. One line per target
# with its executions; exit 1 when any target failed.
set -u
dir=$1 secs=$2
shift 2
mkdir -p "$dir/work" "$dir/logs"
status=0
for bin in "$@"; do
	name=$(basename "$bin")
	t=${name#fuzz_}
	mkdir -p "$dir/work/$t"
	log="$dir/logs/$t.log"
	if "$bin" "$dir/work/$t" "fuzz/corpus/$t" -max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$dir/crash-$t-" -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "ok   $name: $runs executions in ${secs}s"
	else
		status=1
		echo "FAIL $name (log $log)"
		tail -n 40 "$log"
	fi
done
exit $status
