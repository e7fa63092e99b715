#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# make interop-cerbos: [authz] api = authzen (warrantd(7) §7) against a real
# Cerbos PDP, with examples/policy/cerbos/ as its policy.
#   bash tests/interop/cerbos.sh BUILD    (binaries in BUILD/bin, fakes in BUILD/tests)
# Installs @cerbos/cerbos-linux-x64 at the version pinned in
# tests/interop/cerbos/package-lock.json from the npm registry into
# build/interop/cerbos (npm ci, once), checks the policy with `cerbos compile`
# (which runs its tests), runs Cerbos on 127.0.0.1 with its AuthZEN API on,
# a private redis-server, fake_target and the real warrantd, and decides three
# jobs with the real warrantctl: the lateral's duty operator opening a gate
# (done, one call), the same operator flooding it (an action the policy does
# not allow: denied, no call), and another lateral's operator opening it
# (denied by the rule's condition on the subject, no call). Exit 0 when every
# check holds; the logs of a failed run are kept.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=$(cd "${1:-build/release}" 2>/dev/null && pwd) || { echo "interop-cerbos: no build dir '${1:-}'" >&2; exit 1; }
BIN=$BUILD/bin FAKES=$BUILD/tests
for f in "$BIN/warrantd" "$BIN/warrantctl" "$FAKES/fake_target" redis-server redis-cli curl npm; do
	command -v "$f" >/dev/null || { echo "interop-cerbos: $f is missing (make all unit; npm: Debian's npm)" >&2; exit 1; }
done

# ---- Cerbos, pinned, project-local -----------------------------------------
NPMDIR=$ROOT/build/interop/cerbos
CERBOS=$NPMDIR/node_modules/@cerbos/cerbos-linux-x64/cerbos-linux-x64
if ! [ -x "$CERBOS" ] || ! cmp -s tests/interop/cerbos/package-lock.json "$NPMDIR/package-lock.json"; then
	rm -rf "$NPMDIR" && mkdir -p "$NPMDIR" || exit 1
	cp tests/interop/cerbos/package.json tests/interop/cerbos/package-lock.json "$NPMDIR/"
	echo "interop-cerbos: npm ci (@cerbos/cerbos-linux-x64, pinned) into $NPMDIR"
	(cd "$NPMDIR" && npm ci --no-audit --no-fund --loglevel=error) || { echo "interop-cerbos: npm ci failed" >&2; exit 1; }
fi
[ -x "$CERBOS" ] || { echo "interop-cerbos: no cerbos binary at $CERBOS" >&2; exit 1; }
echo "interop-cerbos: $("$CERBOS" --version 2>&1 | head -n 1)"

umask 077
DIR=$(mktemp -d /tmp/warrant-cerbos.XXXXXX) || exit 1
PIDS="" OK=0
cleanup() {
	for pid in $PIDS; do
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	if [ $OK = 1 ]; then rm -rf "$DIR"; else echo "interop-cerbos: FAILED, logs in $DIR" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "interop-cerbos: CHECK FAILED: $*" >&2
	tail -n 20 "$DIR/warrantd.log" >&2 2>/dev/null
	exit 1
}
check() { msg=$1; shift; "$@" || fail "$msg"; echo "    ok: $msg"; }
# wait_for SECONDS WHAT CMD...: polls CMD every 0.1 s until it succeeds.
wait_for() {
	local limit=$(( $(date +%s) + $1 )) what=$2; shift 2
	until "$@"; do
		[ "$(date +%s)" -le "$limit" ] || fail "timed out waiting for $what"
		sleep 0.1
	done
}
# A port nothing listens on now (bash's /dev/tcp: a refused connect).
free_port() {
	local p
	while :; do
		p=$(( 20000 + RANDOM % 40000 ))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}
rcli() { redis-cli -s "$DIR/redis.sock" "$@"; }
state_is() { [ "$(rcli HGET "warrant:decision:$1" state)" = "$2" ]; }
# The calls fake_target received with Idempotency-Key: $1.
calls() { curl -sS --max-time 5 "$TARGET/_requests" | grep -o "\"idempotency_key\":\"$1\"" | wc -l; }

# ---- the policy ------------------------------------------------------------
if ! "$CERBOS" compile examples/policy/cerbos >"$DIR/compile.log" 2>&1; then
	cat "$DIR/compile.log" >&2
	fail "cerbos compile examples/policy/cerbos"
fi
echo "    ok: cerbos compile: examples/policy/cerbos/ compiles and its tests pass"

# ---- the processes ---------------------------------------------------------
# Cerbos 0.55 serves AuthZEN on its HTTP port.
AZ=$(free_port) GRPC=$(free_port)
cat >"$DIR/cerbos.yaml" <<YAML
server:
  httpListenAddr: "127.0.0.1:$AZ"
  grpcListenAddr: "127.0.0.1:$GRPC"
storage:
  driver: disk
  disk:
    directory: "$ROOT/examples/policy/cerbos"
    watchForChanges: false
telemetry:
  disabled: true
YAML
"$CERBOS" server --config="$DIR/cerbos.yaml" >"$DIR/cerbos.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 30 "Cerbos' AuthZEN API on 127.0.0.1:$AZ" \
	curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$AZ/.well-known/authzen-configuration"

redis-server --port 0 --unixsocket "$DIR/redis.sock" --unixsocketperm 700 --save "" \
	--appendonly no --dir "$DIR" >"$DIR/redis.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 10 "redis" eval 'rcli PING 2>/dev/null | grep -q PONG'
"$BIN/warrantctl" functions show | rcli -x FUNCTION LOAD REPLACE >/dev/null	# as its administrator

"$FAKES/fake_target" --port-file "$DIR/target.port" >"$DIR/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 10 "fake_target" test -s "$DIR/target.port"
TARGET=http://127.0.0.1:$(cat "$DIR/target.port")

cat >"$DIR/warrantd.ini" <<INI
[daemon]
consumer = interop-cerbos
heartbeat_ms = 1000
shutdown_grace_ms = 3000
[redis]
socket = $DIR/redis.sock
block_ms = 1000
[records]
algorithm = ES256
verify_key_file = $ROOT/tests/data/test-es256.pub
[authz]
url = http://127.0.0.1:$AZ/access/v1/evaluation
api = authzen
resource_type = canal_gate
timeout_ms = 2000
[retry]
base_ms = 100
cap_ms = 1000
max_attempts = 3
[notify]
default_owner = duty-ops
[action gate.open]
url = $TARGET/gates/{resource}/open
auth = none
[action gate.flood]
url = $TARGET/gates/{resource}/flood
auth = none
INI
"$BIN/warrantd" -t -c "$DIR/warrantd.ini" >"$DIR/check.log" 2>&1 || { cat "$DIR/check.log" >&2; fail "warrantd -t"; }
"$BIN/warrantd" -c "$DIR/warrantd.ini" >"$DIR/warrantd.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 30 "warrantd to be ready" grep -q 'event=consumer.ready' "$DIR/warrantd.log"

# decide ID ACTION SUBJECT: a job on gate 14 of lateral-3 (operator:4417 is on duty).
decide() {
	"$BIN/warrantctl" -c "$DIR/warrantd.ini" decide --on-behalf-of "$3" --action "$2" \
		--resource canal/lateral-3/gate-14 --param percent=40 \
		--basis rule:irrigation-schedule/duty-operator --expires +2m --id "$1" \
		--key "$ROOT/tests/data/test-es256.key" >/dev/null 2>>"$DIR/warrantctl.log" ||
		fail "warrantctl decide $1"
}
decide cerbos-open gate.open operator:4417
decide cerbos-flood gate.flood operator:4417
decide cerbos-stranger gate.open operator:5120

wait_for 30 "cerbos-open done" state_is cerbos-open done
wait_for 30 "cerbos-flood denied" state_is cerbos-flood denied
wait_for 30 "cerbos-stranger denied" state_is cerbos-stranger denied
check "gate.open by the duty operator: allowed by Cerbos, done, called once" \
	test "$(calls cerbos-open)" = 1
check "gate.flood (no rule allows it): denied (authority-denied), never called" \
	eval '[ "$(rcli HGET warrant:decision:cerbos-flood outcome)" = authority-denied ] && [ "$(calls cerbos-flood)" = 0 ]'
check "gate.open by another lateral's operator: denied, never called" \
	eval '[ "$(rcli HGET warrant:decision:cerbos-stranger outcome)" = authority-denied ] && [ "$(calls cerbos-stranger)" = 0 ]'
check "each job asked Cerbos once (event=job.authz, status=200)" \
	test "$(grep -c 'event=job.authz .*status=200' "$DIR/warrantd.log")" = 3
OK=1
echo "interop-cerbos: every check passed"
