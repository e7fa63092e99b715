#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The decider libraries' dependencies (clients/, issue 40): the Node
# package's, pinned by clients/node/package-lock.json, from the npm registry
# (npm ci). The Python package needs Debian's python3-redis and
# python3-cryptography only (scripts/deps.sh). After this,
# `npm install ./clients/node` works offline.
set -eu
cd "$(dirname "$0")/../clients/node"
if [ -f node_modules/.package-lock.json ] && cmp -s package-lock.json node_modules/.lock-stamp 2>/dev/null; then
	exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json node_modules/.lock-stamp
