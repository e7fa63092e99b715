#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The canal-gate story, end to end, in under a minute: `make demo` runs
#   sh examples/demo.sh BUILD      (binaries in BUILD/bin, fakes in BUILD/tests)
# Everything runs in a fresh temp dir: a private redis-server on a unix socket,
# the fake IdP, gate controller and PDP on 127.0.0.1, and one warrantd. Every
# step checks its evidence; a failed check prints the daemon log tail and
# exits 1. DEMO_KEEP=1 keeps the temp dir. Needs redis-cli, curl, openssl.
set -u

BUILD=$(cd "${1:-build/release}" 2>/dev/null && pwd) || { echo "demo: no build dir '${1:-}'" >&2; exit 1; }
BIN=$BUILD/bin FAKES=$BUILD/tests
for f in $BIN/warrantd $BIN/warrantctl $BIN/warrantd-web $FAKES/fake_idp $FAKES/fake_target $FAKES/fake_pdp \
	redis-server redis-cli curl openssl base64; do
	command -v "$f" >/dev/null || { echo "demo: $f is missing (see scripts/deps.sh, make all unit)" >&2; exit 1; }
done

umask 077
T0=$(date +%s%N)
DIR=$(mktemp -d /tmp/warrant-demo.XXXXXX) || exit 1
PIDS="" WPID="" OK=0
P=warrant CONSUMER=gatekeeper-1 OWNER=operator:4417

# ---- the repeated pieces ---------------------------------------------------

say()  { printf '\n==> [%2ds] %s\n' $(( ($(date +%s%N) - T0) / 1000000000 )) "$*"; }
show() { printf '    $ %s\n' "$*"; }
indent() { sed 's/^/      /'; }
rcli() { redis-cli -s "$DIR/redis.sock" "$@"; }
http() { curl -sS --max-time 5 "$@"; }
# warrantctl's own log lines (its Redis token fetch) go to warrantctl.log, and
# the last few to stderr when it fails.
ctl()  {
	"$BIN/warrantctl" -c "$DIR/warrantd.ini" "$@" 2>>"$DIR/warrantctl.log" && return 0
	rc=$?; tail -n 5 "$DIR/warrantctl.log" >&2; return $rc
}
hstate() { rcli HGET "$P:decision:$1" state; }
state_is() { [ "$(hstate "$1")" = "$2" ]; }
hb()   { rcli HGET "$P:consumer:$CONSUMER" "$1"; }
hb_ge() { [ "$(hb "$1")" -ge "$2" ] 2>/dev/null; }
has()  { printf %s "$1" | grep -q -- "$2"; }
pel()  { rcli XPENDING $P:jobs workers | head -1; }
idp_issued() { http "$IDP/_stats" | grep -o '"issued":[0-9]*' | cut -d: -f2; }
issued_above() { [ "$(idp_issued)" -gt "$1" ] 2>/dev/null; }
later_than() { [ "$(date +%s)" -gt "$1" ]; }
# decide ID GATE EXPIRES [OPTION...]: the duty operator's decision for one gate.
decide() {
	id=$1 gate=$2 exp=$3; shift 3
	ctl decide --on-behalf-of $OWNER --action gate.open --resource canal/lateral-3/gate-$gate \
		--param percent=40 --basis rule:irrigation-schedule/duty-operator --expires "$exp" \
		--notify $OWNER --id "$id" --key "$DIR/decider.key" "$@"
}

fail() {
	printf '\n!!  CHECK FAILED: %s\n--- the last lines of the warrantd log ---\n' "$*"
	tail -n 25 "$DIR/warrantd.log" 2>/dev/null
	exit 1
}
check() { msg=$1; shift; "$@" || fail "$msg"; printf '    ok: %s\n' "$msg"; }

# wait_for SECONDS WHAT CMD...: polls CMD every 0.1 s until it succeeds.
wait_for() {
	limit=$(( $(date +%s) + $1 )) what=$2; shift 2
	until "$@"; do
		[ "$(date +%s)" -le "$limit" ] || fail "timed out waiting for $what"
		sleep 0.1
	done
}

alive() { [ -d "/proc/$1" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }

# stop PID SIGNAL: signal, wait up to 5 s, then SIGKILL; returns the exit status.
stop() {
	kill "-$2" "$1" 2>/dev/null || return 0
	n=0; while alive "$1" && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
	alive "$1" && kill -KILL "$1" 2>/dev/null
	wait "$1"
}

cleanup() {
	trap - EXIT INT TERM
	[ -n "$WPID" ] && stop "$WPID" TERM
	for pid in $PIDS; do stop "$pid" TERM; done
	if [ "${DEMO_KEEP:-0}" = 1 ]; then echo "demo: kept $DIR"; else rm -rf "$DIR"; fi
	[ $OK = 1 ] || exit 1
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_fake NAME ARGS...: runs a fake on 127.0.0.1, sets $URL once it listens.
start_fake() {
	name=$1; shift
	"$FAKES/$name" --port-file "$DIR/$name.port" "$@" >"$DIR/$name.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_for 10 "$name to listen" test -s "$DIR/$name.port"
	URL=http://127.0.0.1:$(cat "$DIR/$name.port")
}

# One request object of a fake's JSON array per line.
split_objs() { sed 's/},{"/}\n{"/g'; }
# field NAME: the value of "NAME": in the line on stdin (string, number, bool or null).
field() { grep -o "\"$1\":\(\"[^\"]*\"\|[^,}]*\)" | head -1 | sed 's/^"[^"]*"://; s/^"//; s/"$//'; }
b64url_decode() {
	s=$(printf %s "$1" | tr '_-' '/+')
	case $(( ${#s} % 4 )) in 2) s="$s==" ;; 3) s="$s=" ;; esac
	printf '%s' "$s" | base64 -d 2>/dev/null
}
ms_to_utc() { date -u -d "@$(( $1 / 1000 ))" +%H:%M:%SZ; }
# stream_rows FIELD...: redis-cli XRANGE output (id, then field/value lines)
# as one line per entry holding " field=value" for the fields asked for.
stream_rows() {
	awk -v want=" $* " '
	k % 2 == 0 && /^[0-9]+-[0-9]+$/ { if (row != "") print row; row = ""; k = 0; next }
	k % 2 == 0 { key = $0; k++; next }
	{ if (index(want, " " key " ")) row = row " " key "=" $0; k++ }
	END { if (row != "") print row }'
}

# ---- 1. setup ----------------------------------------------------------------

say "Setup in $DIR: a private Redis behind a managed-Redis token gate, fresh keys, the fake IdP, gate controller and PDP, one warrantd"
redis-server --port 0 --unixsocket "$DIR/redis.sock" --unixsocketperm 700 --save "" \
	--appendonly no --dir "$DIR" >"$DIR/redis.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 10 "redis to answer PING" eval 'rcli PING 2>/dev/null | grep -q PONG'
# Redis' administrator loads the library of functions every user calls (no
# user may EVAL: warrantd(7) §2.1); a worker refuses to start without it.
"$BIN/warrantctl" functions show | rcli -x FUNCTION LOAD REPLACE >/dev/null
# Managed Redis takes a short-lived token as its AUTH password (Azure Entra ID,
# ElastiCache IAM): fake_redisgate checks each token's exp in front of Redis.
# The worker's token comes from token_command, a script standing in for the
# IAM signer; its `mode` file makes it fail for one step (4b).
start_fake fake_redisgate --upstream-socket "$DIR/redis.sock" --on-expiry noauth
RGPORT=$(cat "$DIR/fake_redisgate.port")
cat >"$DIR/redis-token.sh" <<'EOF'
#!/bin/sh
d=$(dirname "$0")
[ "$(cat "$d/redis-token.mode" 2>/dev/null)" = fail ] && { echo 'signer unreachable' >&2; exit 3; }
b64() { printf '%s' "$1" | base64 | tr -d '\n=' | tr '+/' '-_'; }
exp=$(( $(date +%s) + $1 ))
printf '{"token": "%s.%s.x", "expires_in": %s}\n' "$(b64 '{"alg":"none"}')" \
	"$(b64 "{\"sub\":\"warrantd\",\"exp\":$exp}")" "$1"
EOF
chmod 700 "$DIR/redis-token.sh"
echo ok >"$DIR/redis-token.mode"

if ! openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$DIR/decider.key" 2>/dev/null ||
   ! openssl pkey -in "$DIR/decider.key" -pubout -out "$DIR/decider.pub" 2>/dev/null; then
	fail "openssl could not make the decider's ES256 key pair"
fi
CLIENT_ID=warrantd-canal                         # the worker's own OAuth client
openssl rand -hex 32 >"$DIR/jwt.secret"          # shared by the IdP and the gate controller
openssl rand -base64 24 >"$DIR/client.secret"    # warrantd's OAuth client secret (+ / = and all)
echo "    keys: decider ES256 pair, HS256 secret for IdP + gate, client secret (none printed)"

start_fake fake_idp --client-id "$CLIENT_ID" --client-secret-file "$DIR/client.secret" \
	--jwt-secret-file "$DIR/jwt.secret" --lifetime-s 10;  IDP=$URL
start_fake fake_target --jwt-secret-file "$DIR/jwt.secret";  GATE=$URL
start_fake fake_pdp;  PDP=$URL
echo "    IdP $IDP (10 s tokens)   gate controller $GATE   PDP $PDP"

# Short timings so the story fits in a minute. The action's and the PDP's
# timeouts stay small: R6 never starts a call with a token that has less than
# timeout + 1 s to live, and these tokens live 10 s.
cat >"$DIR/warrantd.ini" <<EOF
[daemon]
consumer = $CONSUMER
heartbeat_ms = 1000
shutdown_grace_ms = 3000
[redis]
host = 127.0.0.1
port = $RGPORT
auth = command
username = warrantd
token_command = $DIR/redis-token.sh 600
prefix = $P
block_ms = 1000
claim_idle_ms = 3000
claim_interval_ms = 500
[records]
signature = required
algorithm = ES256
verify_key_file = $DIR/decider.pub
[oauth]
token_url = $IDP/token
client_id = $CLIENT_ID
auth_method = client_secret_basic
client_secret_file = $DIR/client.secret
auth_wait_max_ms = 10000
[authz]
url = $PDP/v1/data/canal/allow
timeout_ms = 1000
[retry]
base_ms = 200
cap_ms = 2000
max_attempts = 5
[notify]
default_owner = duty-ops
[action gate.open]
url = $GATE/gates/{resource}/open
timeout_ms = 1000
auth = oauth
EOF
out=$("$BIN/warrantd" -t -c "$DIR/warrantd.ini" 2>&1) || { echo "$out"; fail "warrantd -t rejects the config"; }
echo "    \$ warrantd -t -c warrantd.ini: $out"
"$BIN/warrantd" -c "$DIR/warrantd.ini" 2>"$DIR/warrantd.log" &
WPID=$!
wait_for 15 "the worker's heartbeat with a valid token" eval '[ "$(hb tokenState)" = valid ]'
echo "    warrantd pid $WPID, consumer $CONSUMER, tokenState=$(hb tokenState), log $DIR/warrantd.log"

# ---- 2. the decision ---------------------------------------------------------

say "16:00 - the duty operator approves: open gate 14 of lateral 3 to 40% for the 04:00 watering window"
echo "    (time is compressed: 04:00 is 'in 5 s' (--not-before +5s); the window closes in 40 s)"
G14=gate14-0400
show "warrantctl decide --on-behalf-of $OWNER --action gate.open --resource canal/lateral-3/gate-14" \
	"--param percent=40 --basis rule:irrigation-schedule/duty-operator --not-before +5s --expires +40s" \
	"--notify $OWNER --id $G14 --key decider.key"
out=$(decide $G14 14 +40s --not-before +5s) || fail "warrantctl decide $G14"
echo "$out" | indent
show "redis-cli ZRANGE $P:scheduled 0 -1 WITHSCORES"
rcli ZRANGE $P:scheduled 0 -1 WITHSCORES | paste -d' ' - - | indent
score=$(rcli ZSCORE $P:scheduled $G14)
check "$G14 waits in $P:scheduled until $(ms_to_utc "${score:-0}") (its notBefore)" [ -n "$score" ]
show "redis-cli HKEYS $P:decision:$G14"
rcli HKEYS $P:decision:$G14 | paste -sd' ' | indent
payload=$(b64url_decode "$(rcli HGET $P:decision:$G14 record | cut -d. -f2)")
echo "    'record' is a JWS signed with the decider's ES256 key; its payload, decoded:"
printf '%s\n' "$payload" | indent
check "the record names operator:4417, gate 14, 40% and the rule" eval \
	'has "$payload" "\"onBehalfOf\":\"operator:4417\"" && has "$payload" "lateral-3/gate-14" &&
	 has "$payload" "\"percent\":\"40\"" && has "$payload" "rule:irrigation-schedule/duty-operator"'
check "the record holds no credential (no token, no secret)" eval \
	'! printf %s "$payload" | grep -qiE "eyJ|bearer|token|secret|password"'

# ---- 3. the window opens ------------------------------------------------------

say "04:00 - the window opens: the worker promotes the job and opens the gate with its OWN token"
wait_for 20 "$G14 to be done" state_is $G14 "done"
show "redis-cli HMGET $P:decision:$G14 state attempts owner httpStatus"
rcli HMGET $P:decision:$G14 state attempts owner httpStatus | paste -sd' ' | indent
req=$(http "$GATE/_requests" | split_objs | grep "\"idempotency_key\":\"$G14\"" | grep '"status":200' | head -1)
echo "    what reached the gate controller (GET /_requests):"
for k in method path authorization token_sub idempotency_key on_behalf_of basis status; do
	printf '      %-16s %s\n' "$k" "$(printf %s "$req" | field $k)"
done
echo "      (token_sub: whose token the gate verified - the worker's client, not the operator;"
echo "       the token itself is never printed)"
idp=$(http "$IDP/_stats")
echo "    the IdP (GET /_stats): tokens issued=$(printf %s "$idp" | field issued)," \
	"client authentication=$(printf %s "$idp" | field last_auth)"
check "the gate got Authorization, Idempotency-Key $G14, Warrant-On-Behalf-Of $OWNER" eval \
	'has "$req" "\"authorization\":true" && has "$req" "\"on_behalf_of\":\"$OWNER\""'
check "the token was the worker's own (sub = its client id), not the operator's" \
	has "$req" "\"token_sub\":\"$CLIENT_ID\""
q=$(http "$PDP/_queries" | split_objs | grep "\"recordId\":\"$G14\"" | head -1)
echo "    what the PDP was asked at 04:00 (GET /_queries), and its answer:"
printf '%s\n' "$q" | grep -oE '"input":\{([^{}]|\{[^{}]*\})*\}' | indent
printf '      decision: %s\n' "$(printf %s "$q" | field decision)"
check "authority was re-checked before the call, and allowed" has "$q" '"decision":"allow"'

# ---- 4. revoked while in hand ---------------------------------------------------

say "A token revoked while an item is in hand: gate 15"
G15=gate15-0400
http -X POST -d "{\"per_key\":{\"$G15\":[{\"status\":503,\"retry_after\":\"2\"}]}}" "$GATE/_script" >/dev/null ||
	fail "scripting the gate"
echo "    the gate will answer $G15's first call with 503 Retry-After: 2"
# The gate revokes by the second (iat >= revocation second passes), and the
# worker refreshes every ~7 s: start right after a refresh, in a later second,
# so the revocation catches the token in use and no routine refresh hides it.
echo "    (waiting for the worker's next routine refresh, so the revocation hits the token in use)"
wait_for 15 "a token refresh" issued_above "$(idp_issued)"
wait_for 3 "the next second" later_than "$(date +%s)"
decide $G15 15 +40s >/dev/null || fail "warrantctl decide $G15"
wait_for 10 "the gate's first 503 for $G15" eval 'http "$GATE/_stats" | grep -q "\"$G15\":1"'
http -X POST "$GATE/_revoke" >/dev/null || fail "POST /_revoke"
echo "    first call answered 503; now the gate controller revokes every token issued so far (POST /_revoke)"
wait_for 20 "$G15 to be done" state_is $G15 "done"
show "warrantctl inspect $G15   (abridged: its audit trail)"
ctl inspect $G15 >"$DIR/inspect15" 2>&1 || fail "warrantctl inspect"
sed -n '/[Aa]udit/,$p' "$DIR/inspect15" | sed 's/ entryId=[^ ]*//; s/ consumer=[^ ]*//' | indent
calls=$(http "$GATE/_requests" | split_objs | grep "\"idempotency_key\":\"$G15\"" |
	grep -o '"status":[0-9]*' | cut -d: -f2 | paste -sd' ')
echo "    the gate's answers to $G15, in order: $calls"
check "503, then 401 on the revoked token, then 200 with a fresh one" [ "$calls" = "503 401 200" ]
for s in retrying auth_wait "done"; do
	check "the audit trail passes through $s" grep -q "to=$s" "$DIR/inspect15"
done
wait_for 5 "the heartbeat to count the re-dispatch" hb_ge redispatched 1
show "redis-cli HMGET $P:consumer:$CONSUMER redispatched authFailures tokenRefreshes"
for f in redispatched authFailures tokenRefreshes; do printf '%s=%s ' $f "$(hb $f)"; done | indent; echo
check "redispatched >= 1 and authFailures >= 1" eval 'hb_ge redispatched 1 && hb_ge authFailures 1'
check "nothing stuck in the PEL (XPENDING count $(pel))" [ "$(pel)" = 0 ]

# ---- 4b. Redis' own token revoked while in hand ------------------------------------

say "Redis' own token revoked while an item is in hand: gate 17"
G17=gate17-0400
http -X POST -d "{\"per_key\":{\"$G17\":[{\"status\":200,\"delay_ms\":800}]}}" "$GATE/_script" >/dev/null ||
	fail "scripting the gate"
echo "    the gate controller takes 0.8 s to answer $G17; while it does, Redis' token gate revokes"
echo "    every token it has seen (GATE.REVOKE), and the token signer is unreachable until it answered"
decide $G17 17 +40s >/dev/null || fail "warrantctl decide $G17"
wait_for 10 "the call for $G17 to reach the gate" eval 'http "$GATE/_stats" | grep -q "\"$G17\":1"'
echo fail >"$DIR/redis-token.mode"
show "redis-cli -p $RGPORT GATE.REVOKE"
redis-cli -p "$RGPORT" GATE.REVOKE | indent
wait_for 10 "$G17's result to meet the revoked credential" \
	grep -q "event=job.redis_auth_held id=$G17 " "$DIR/warrantd.log"
grep "event=job.redis_auth_held id=$G17 " "$DIR/warrantd.log" | head -1 | cut -c1-150 | indent
echo ok >"$DIR/redis-token.mode"
echo "    the signer is back: a new token, every connection re-authenticated"
wait_for 20 "$G17 to be done" state_is $G17 "done"
grep "event=job.redis_auth_reclaim id=$G17 " "$DIR/warrantd.log" | head -1 | cut -c1-150 | indent
check "the entry was claimed back to this worker before its result was written" \
	grep -q "event=job.redis_auth_reclaim id=$G17 .*owner=us" "$DIR/warrantd.log"
check "the gate was opened once: the result was written, not the call re-run" eval \
	'http "$GATE/_stats" | grep -q "\"$G17\":1[,}]"'
wait_for 5 "the heartbeat to count the refusal" hb_ge redisAuthFailures 1
show "redis-cli HMGET $P:consumer:$CONSUMER redisAuthFailures redisAuthRefreshes redisTokenState"
for f in redisAuthFailures redisAuthRefreshes redisTokenState; do printf '%s=%s ' $f "$(hb $f)"; done | indent; echo
check "nothing stuck in the PEL (XPENDING count $(pel))" [ "$(pel)" = 0 ]

# ---- 5. dropped: too late, or no longer allowed ----------------------------------

say "A job past its window is dropped and its owner told; and one the PDP now denies"
G16=gate16-0400 G13=gate13-0400
http -X POST -d "{\"per_key\":{\"$G16\":[{\"status\":503,\"retry_after\":\"30\"}]}}" "$GATE/_script" >/dev/null ||
	fail "scripting the gate"
http -X POST -d '{"deny_resources":["canal/lateral-3/gate-13"]}' "$PDP/_policy" >/dev/null ||
	fail "setting the PDP policy"
echo "    gate 16: its window closes in 3 s, and the gate answers 503 Retry-After: 30"
echo "    gate 13: the PDP now denies canal/lateral-3/gate-13 (the operator's rule was withdrawn)"
decide $G16 16 +3s >/dev/null || fail "warrantctl decide $G16"
decide $G13 13 +3s >/dev/null || fail "warrantctl decide $G13"
wait_for 10 "$G16 to be expired" state_is $G16 expired
wait_for 10 "$G13 to be denied" state_is $G13 denied
for id in $G16 $G13; do
	printf '      %-12s state=%-8s detail=%s\n' $id "$(hstate $id)" "$(rcli HGET $P:decision:$id detail)"
done
check "gate 16 was called once: the retry would land past its deadline" eval \
	'http "$GATE/_stats" | grep -q "\"$G16\":1[,}]"'
check "gate 13 was never called" eval '! http "$GATE/_stats" | grep -q "\"$G13\""'
show "redis-cli XRANGE $P:notify - +   (fields id owner kind reason)"
notes=$(rcli XRANGE $P:notify - + | stream_rows id owner kind reason)
printf '%s\n' "$notes" | indent
check "$OWNER told of both (expired, denied)" eval \
	'has "$notes" " id=$G16 owner=$OWNER kind=expired" && has "$notes" " id=$G13 owner=$OWNER kind=denied"'

# ---- 6. watching it ----------------------------------------------------------------

say "Watching it with redis-cli (README), and warrantctl status"
wait_for 5 "the heartbeat to count the expired and the denied job" eval 'hb_ge expired 1 && hb_ge denied 1'
show "redis-cli XPENDING $P:jobs workers"
rcli --no-raw XPENDING $P:jobs workers | indent
for cmd in "XINFO GROUPS $P:jobs" "HGETALL $P:consumer:$CONSUMER"; do
	show "redis-cli $cmd"
	rcli $cmd | paste -d= - - | paste -d' ' - - - - | sed 's/ *$//' | indent
done
show "warrantctl status"
ctl status >"$DIR/status" 2>&1 || { cat "$DIR/status"; fail "warrantctl status"; }
indent <"$DIR/status"
check "the group's lag is 0 and nothing is pending" eval \
	'rcli XINFO GROUPS $P:jobs | paste -d" " - - | grep -qx "lag 0" && [ "$(pel)" = 0 ]'

# ---- 6b. the web console on the demo's data (warrantd-web(8)) -------------------------

say "The web console on the same data: warrantd-web, a demo user"
WEB_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 8470)
WEB_PW=$(openssl rand -hex 8)
printf '%s\n' "$WEB_PW" | "$BIN/warrantd-web" passwd "$DIR/web-users" demo || fail "warrantd-web passwd"
printf '[web]\nlisten = 127.0.0.1:%s\nusers_file = %s\n' "$WEB_PORT" "$DIR/web-users" >>"$DIR/warrantd.ini"
"$BIN/warrantd-web" -c "$DIR/warrantd.ini" 2>"$DIR/warrantd-web.log" &
PIDS="$! $PIDS"
wait_for 10 "the console to answer" eval 'http -o /dev/null -w "%{http_code}" "http://127.0.0.1:$WEB_PORT/login" | grep -qx 200'
echo "    console: http://127.0.0.1:$WEB_PORT/   user demo, password $WEB_PW (a demo's, made now)"
if [ "${DEMO_WEB:-}" = 1 ] || { [ -z "${DEMO_WEB:-}" ] && [ -t 0 ] && [ -t 1 ]; }; then
	printf '    open it in a browser; press Enter to stop the demo (DEMO_WEB=0: no wait) '
	read -r _ || :
fi

# ---- 7. stop and audit the logs ------------------------------------------------------

say "Stopping warrantd (SIGTERM), the fakes and Redis; searching the logs for secrets"
stop "$WPID" TERM; rc=$?; WPID=""
check "warrantd exited 0 on SIGTERM" [ $rc = 0 ]
check "no JWT (token, record) in any log" eval '! grep -qE "eyJ[A-Za-z0-9_-]+\.eyJ" "$DIR"/*.log'
check "neither the client secret nor the JWT secret in any log" eval \
	'! grep -qF -f "$DIR/client.secret" -f "$DIR/jwt.secret" "$DIR"/*.log'
OK=1
printf '\n==> The canal-gate story held: every check passed, in %s s.\n' \
	"$(( ($(date +%s%N) - T0) / 1000000000 ))"
