#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs the test binaries and prints one closing line "N passed, N failed".
#   tests/run.sh [--unit-only] BUILD_DIR...
# Unit tests (test_*) run from every build dir given (plain and ASan+UBSan),
# then the integration tests (itest_*) against each build's own binaries, one
# at a time: each starts its own redis-server and fakes and stops them by PID.
set -u
unit_only=0
[ "${1:-}" = "--unit-only" ] && { unit_only=1; shift; }
[ $# -ge 1 ] || { echo "usage: tests/run.sh [--unit-only] BUILD_DIR..." >&2; exit 64; }
passed=0
failed=0
failed_names=""

logs=build/test-logs
mkdir -p "$logs"

# Each test's output goes to build/test-logs/; it is shown when it fails.
run() {
	name=$1; shift
	log="$logs/$(echo "$name" | tr '/' '_').log"
	start=$(date +%s)
	if "$@" >"$log" 2>&1; then
		passed=$((passed + 1))
		echo "ok   $name ($(( $(date +%s) - start ))s)"
	else
		failed=$((failed + 1))
		failed_names="$failed_names $name"
		echo "FAIL $name ($(( $(date +%s) - start ))s)"
		tail -n 80 "$log"
	fi
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for dir in "$@"; do
	for t in "$dir"/tests/test_*; do
		[ -x "$t" ] || continue
		run "$t" "$t"
	done
done
if [ "$unit_only" = 0 ]; then
	for dir in "$@"; do
		WARRANTD_BIN_DIR="$(cd "$dir/bin" && pwd)"
		WARRANTD_TEST_DIR="$(cd "$dir/tests" && pwd)"
		export WARRANTD_BIN_DIR WARRANTD_TEST_DIR
		for t in "$dir"/tests/itest_*; do
			[ -x "$t" ] || continue
			run "$t" "$t"
		done
	done
	# The Debian package, built once from a copy of the tree (~20 s).
	run tests/deb.sh sh tests/deb.sh build/deb
fi
echo
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
