#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make valgrind: the integration tests that start warrantd, each daemon under
# valgrind's memcheck (through the harness's $WARRANTD_WRAPPER). Memcheck's
# own report goes to build/valgrind/vg-PID.log, not into the daemon's log
# (which the tests read as logfmt). The verdict is over those reports:
# 0 errors and 0 bytes definitely lost in every one.
#   tests/valgrind.sh BUILD_DIR
set -u
build=$1
out=build/valgrind
rm -rf "$out" && mkdir -p "$out"
WARRANTD_BIN_DIR="$(cd "$build/bin" && pwd)"
WARRANTD_TEST_DIR="$(cd "$build/tests" && pwd)"
export WARRANTD_BIN_DIR WARRANTD_TEST_DIR
WARRANTD_WRAPPER="$(command -v valgrind) --tool=memcheck --leak-check=full \
--show-leak-kinds=definite --errors-for-leak-kinds=definite --num-callers=30 \
--log-file=$(pwd)/$out/vg-%p.log"
export WARRANTD_WRAPPER
failed=""
for t in engine faults tokens authz notify acl; do
	bin="$build/tests/itest_$t"
	[ -x "$bin" ] || continue
	start=$(date +%s)
	if "$bin" >"$out/itest_$t.out" 2>&1; then
		echo "ok   itest_$t ($(( $(date +%s) - start ))s)"
	else
		echo "FAIL itest_$t ($(( $(date +%s) - start ))s, $out/itest_$t.out)"
		failed="$failed itest_$t"
	fi
done
reports=$(ls "$out"/vg-*.log 2>/dev/null | wc -l)
# A daemon killed with SIGKILL (the crash tests) leaves no summary: counted apart.
bad_err=$(grep -l "ERROR SUMMARY: [1-9]" "$out"/vg-*.log 2>/dev/null)
bad_leak=$(grep -l "definitely lost: [1-9]" "$out"/vg-*.log 2>/dev/null)
summaries=$(grep -l "ERROR SUMMARY:" "$out"/vg-*.log 2>/dev/null | wc -l)
echo
echo "valgrind: $reports daemons, $summaries with a summary (the rest were SIGKILLed)"
echo "valgrind: with errors: ${bad_err:-none}"
echo "valgrind: with definitely lost bytes: ${bad_leak:-none}"
[ -n "$failed" ] && echo "tests that failed under valgrind:$failed"
[ -z "$bad_err" ] && [ -z "$bad_leak" ] && [ -z "$failed" ]
