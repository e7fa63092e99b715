#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs the test binaries and prints one closing line "N passed, N failed, N skipped".
#   tests/run.sh [--unit-only] BUILD_DIR...
# Unit tests (test_*) run from every build dir given (plain and ASan+UBSan),
# then the integration tests (itest_*) against each build's own binaries: one
# at a time within a build, the builds side by side (TEST_LANES=1: one after
# the other); each starts its own redis-server and fakes and stops them by PID.
#
# Skips. A program that cannot run at all here exits 77 (automake's "skipped")
# after printing why; one whose cmocka tests call skip() exits 0 and its log
# names each ("[  SKIPPED ] test_x"). Passed and failed count programs, skipped
# counts what skipped: a whole program ("itest_sentinel") or one test
# ("itest_http:test_kept_call_poisoned"). Every skip must be listed, with its
# reason, in tests/expected-skips; one that is not counts as a failure, so
# that a check which stops running is seen, not passed.
set -u
unit_only=0
[ "${1:-}" = "--unit-only" ] && { unit_only=1; shift; }
[ $# -ge 1 ] || { echo "usage: tests/run.sh [--unit-only] BUILD_DIR..." >&2; exit 64; }
passed=0
failed=0
skipped=0
failed_names=""
failed_logs=""
expected=tests/expected-skips
SKIP_STATUS=77

logs=build/test-logs
mkdir -p "$logs"

# 0 when `name` (a program or program:test) is listed in tests/expected-skips
# (first word of a line; # starts a comment).
expected_skip() {
	[ -r "$expected" ] && sed 's/#.*//' "$expected" | awk -v n="$1" '$1 == n { f = 1 } END { exit !f }'
}

# Counts one skip of `name`: 0 when listed, else 1 (and says so).
count_skip() {
	skipped=$((skipped + 1))
	if expected_skip "$1"; then
		echo "     skip $1 (expected: $(sed 's/#.*//' "$expected" | awk -v n="$1" \
		    '$1 == n { $1 = ""; sub(/^ +/, ""); print; exit }'))"
		return 0
	fi
	echo "     skip $1: NOT listed in $expected"
	return 1
}

# Each test's output goes to build/test-logs/; it is shown when it fails.
run() {
	name=$1; shift
	log="$logs/$(echo "$name" | tr '/' '_').log"
	start=$(date +%s)
	"$@" >"$log" 2>&1
	status=$?
	secs=$(( $(date +%s) - start ))
	prog=$(basename "$name")
	unexpected=0
	if [ "$status" = "$SKIP_STATUS" ]; then
		echo "skip $name (${secs}s): $(grep -i -m1 'skip' "$log")"
		count_skip "$prog" || unexpected=1
	elif [ "$status" = 0 ]; then
		echo "ok   $name (${secs}s)"
		# cmocka lists each skipped test at run time: "[  SKIPPED ] test_x".
		for t in $(sed -n 's/^\[  SKIPPED \] \([A-Za-z0-9_]*\)$/\1/p' "$log" | sort -u); do
			count_skip "$prog:$t" || unexpected=1
		done
		[ "$unexpected" = 0 ] && passed=$((passed + 1))
	fi
	if [ "$unexpected" = 1 ]; then
		failed=$((failed + 1))
		failed_names="$failed_names $name(unexpected-skip)"
		failed_logs="$failed_logs $name|$log"
	elif [ "$status" != 0 ] && [ "$status" != "$SKIP_STATUS" ]; then
		failed=$((failed + 1))
		failed_names="$failed_names $name"
		failed_logs="$failed_logs $name|$log"
		echo "FAIL $name (${secs}s, exit $status)"
		# side by side, the closing summary shows the log, not interleaved
		[ "${quiet_fail:-0}" = 1 ] || tail -n 80 "$log"
	fi
}

# The closing summary names each failed program, its failed cmocka tests with
# their messages, and the end of its log, so that a CI failure says what broke
# without a rerun (the full output above may be thousands of lines away).
summary_failures() {
	for f in $failed_logs; do
		log=${f#*|}
		echo "---- FAILED ${f%%|*} (log $log)"
		tests=$(sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_]*\)$/\1/p' "$log" | sort -u)
		[ -n "$tests" ] && echo "failed tests:" $tests
		grep -e '^\[  ERROR   \]' -e '^\[   LINE   \]' "$log" | head -n 20
		echo "last lines of its log:"
		tail -n 30 "$log" | sed 's/^/    /'
	done
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for dir in "$@"; do
	for t in "$dir"/tests/test_*; do
		[ -x "$t" ] || continue
		run "$t" "$t"
	done
done
# One build's integration tests, against its own binaries; lane LANE of LANES
# takes ports of its own (harness.c, h_free_port). Its counts go to
# STATE, for the parent to add up.
itests() {
	dir=$1 lane=$2 lanes=$3 state=$4
	WARRANTD_BIN_DIR="$(cd "$dir/bin" && pwd)"
	WARRANTD_TEST_DIR="$(cd "$dir/tests" && pwd)"
	WARRANTD_PORT_LANE=$lane WARRANTD_PORT_LANES=$lanes
	export WARRANTD_BIN_DIR WARRANTD_TEST_DIR WARRANTD_PORT_LANE WARRANTD_PORT_LANES
	for t in "$dir"/tests/itest_*; do
		[ -x "$t" ] || continue
		run "$t" "$t"
	done
	printf 'passed=$((passed + %d))\nfailed=$((failed + %d))\nskipped=$((skipped + %d))\n' \
	    "$passed" "$failed" "$skipped" >"$state"
	printf 'failed_names="$failed_names%s"\nfailed_logs="$failed_logs%s"\n' \
	    "$failed_names" "$failed_logs" >>"$state"
}

# The builds' integration tests run side by side, one lane a build (most of
# their time is waiting on Redis, the fakes and timers, not on the CPU), unless
# TEST_LANES=1. A lane's counts start at 0 and are added when it ends.
if [ "$unit_only" = 0 ]; then
	lanes=$#
	[ "${TEST_LANES:-2}" = 1 ] && lanes=1
	if [ "$lanes" -gt 1 ]; then
		quiet_fail=1
		i=0 pids=""
		for dir in "$@"; do
			(passed=0 failed=0 skipped=0 failed_names="" failed_logs=""
			    itests "$dir" "$i" "$lanes" "$logs/lane-$i.state") &
			pids="$pids $!"
			i=$((i + 1))
		done
		for p in $pids; do
			wait "$p"
		done
		i=0
		for dir in "$@"; do
			if [ -r "$logs/lane-$i.state" ]; then
				. "$logs/lane-$i.state"
			else
				failed=$((failed + 1))
				failed_names="$failed_names $dir(lane-ended-early)"
			fi
			rm -f "$logs/lane-$i.state"
			i=$((i + 1))
		done
	else
		for dir in "$@"; do
			itests "$dir" 0 1 "$logs/lane-0.state"
			rm -f "$logs/lane-0.state"
		done
	fi
	# The Debian package, built once from a copy of the tree (~20 s).
	run tests/deb.sh sh tests/deb.sh build/deb
	# The README's Redis socket on stock Debian (root: setpriv), on the
	# first build's binaries.
	run tests/deb_socket.sh sh tests/deb_socket.sh "$1"
fi
echo
if [ -n "$failed_names" ]; then
	summary_failures
	echo "failed:$failed_names"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
