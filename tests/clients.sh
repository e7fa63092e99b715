#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make clients-test: the decider libraries (clients/, issue 40).
#   1. pytest of clients/python (Debian's python3, python3-redis, -cryptography)
#   2. node --test of clients/node (its pinned ioredis and jose: scripts/clients.sh)
#   3. `pip install ./clients/python` (a venv, --no-index: offline) and
#      `npm install ./clients/node` (--offline) from the tree, each imported
#   4. the conformance suite of the three writers, single node and shards = 2
# Debian's /usr/bin/python3 on purpose: a python3 of pyenv's or a venv's
# earlier in PATH has not got the Debian modules.
set -eu
BUILD=${1:-build/release}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "== clients: pytest (clients/python)"
# -p no:cacheprovider: nothing written into the tree
(cd clients/python && nice $PY -m pytest -q -p no:cacheprovider tests)

echo "== clients: node --test (clients/node)"
(cd clients/node && nice node --test test/)

echo "== clients: pip install ./clients/python, npm install ./clients/node (offline)"
$PY -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-index --no-cache-dir "$ROOT/clients/python"
rm -rf "$ROOT/clients/python/build"
(cd "$tmp" && "$tmp/venv/bin/python" -c 'import warrant; assert warrant.Decider' &&
	"$tmp/venv/bin/warrant-keygen" --out "$tmp/pk" --kid k1 >/dev/null)
mkdir "$tmp/npm"
printf '{"name":"t","version":"1.0.0","private":true}\n' >"$tmp/npm/package.json"
(cd "$tmp/npm" && npm install --offline --no-audit --no-fund --loglevel=error "$ROOT/clients/node" >/dev/null &&
	node --input-type=module -e "import {Decider} from 'warrant-decider'; if (!Decider) process.exit(1)" &&
	npx --offline warrant-keygen --out "$tmp/nk" --kid k2 >/dev/null)
test -f "$tmp/pk.key" && test -f "$tmp/nk.key"
echo "installed and imported: warrant (pip), warrant-decider (npm)"

echo "== clients: conformance of warrantctl decide, Python and Node"
nice $PY tests/conformance/conformance.py "$BUILD"
nice $PY tests/conformance/conformance.py "$BUILD" --shards 2
