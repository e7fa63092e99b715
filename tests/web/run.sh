#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/web/run.sh BUILD_DIR: warrantd-web in Debian's chromium (make test-web).
# puppeteer-core comes from the npm registry at the version package-lock.json
# pins; it downloads no browser (PUPPETEER_SKIP_DOWNLOAD for good measure).
set -eu
build=$(cd "$1" && pwd)
cd "$(dirname "$0")"
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
	echo "test-web: $chromium is not installed (make deps installs Debian's chromium)" >&2
	exit 1
fi
for t in node npm; do
	command -v $t >/dev/null || { echo "test-web: $t is not installed (as for make interop)" >&2; exit 1; }
done
PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
WARRANTD_BIN_DIR=$build/bin WARRANTD_TEST_DIR=$build/tests CHROMIUM=$chromium \
	nice node --test --test-concurrency=1 console.test.mjs
