#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 38 item 7: the README's Redis socket works on stock Debian. Starts
# redis-server as user redis with Debian's own /etc/redis/redis.conf plus
# exactly the lines the README tells the operator to add (unixsocket,
# unixsocketperm; only the socket's directory is this test's, not
# /run/redis), in a directory made as Debian's /run/redis is (redis:redis
# 2755), and checks that the worker, run as an unprivileged user in group
# redis (as SupplementaryGroups=redis gives it), connects and gets ready,
# while a user outside the group is refused. Needs root (setpriv), the
# redis-server package (its config and its user) and a build:
#   tests/deb_socket.sh [BUILD_DIR]      (default build/release)
# Prints "deb_socket: ok" or "deb_socket: FAIL ..."; exits 77 (tests/run.sh:
# skipped) when it cannot run here. Every process it starts is stopped by
# its PID.
set -u
build=${1:-build/release}
conf=/etc/redis/redis.conf
fail() { echo "deb_socket: FAIL $*"; [ -n "${log:-}" ] && [ -f "$log" ] && tail -n 20 "$log"; exit 1; }
skip() { echo "deb_socket: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root (setpriv needs it)"
for tool in redis-server setpriv; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not installed"
done
[ -r "$conf" ] || skip "no $conf (package redis-server)"
gid=$(getent group redis | cut -d: -f3)
if [ -z "$gid" ] || ! getent passwd redis >/dev/null; then skip "no user or group redis"; fi
for b in warrantd warrantctl; do
	[ -x "$build/bin/$b" ] || fail "no $build/bin/$b (make all)"
done

# The lines the README gives, exactly: inline code in one paragraph.
# shellcheck disable=SC2016
lines=$(grep -o '`unixsocket[^`]*`' README.md | tr -d '`')
[ "$(echo "$lines" | wc -l)" = 2 ] || fail "the README does not give two unixsocket lines: $lines"
echo "$lines" | grep -qx 'unixsocket /run/redis/redis-server.sock' ||
	fail "the README's socket is not /run/redis/redis-server.sock: $lines"
grep -q 'SupplementaryGroups=redis' README.md || fail "the README does not name SupplementaryGroups=redis"
for u in systemd/warrantd.service systemd/warrantd@.service; do
	grep -qx '#SupplementaryGroups=redis' "$u" || fail "$u has no SupplementaryGroups=redis line"
done

tmp=$(mktemp -d /tmp/warrantd-deb-socket.XXXXXX) || fail "no temp dir"
rpid='' wpid=''
cleanup() {
	for p in $wpid $rpid; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
chmod 0755 "$tmp"
run="$tmp/run-redis"	# what Debian's unit makes /run/redis: redis:redis 2755
data="$tmp/data"
mkdir -p "$run" "$data"
chown redis:redis "$run" "$data"
chmod 2755 "$run"
chmod 0750 "$data"
sock="$run/redis-server.sock"
# Debian's file, then what runs it here instead of systemd (no TCP, in the
# foreground, our files), then the README's lines with our directory.
{
	echo "include $conf"
	echo "port 0"
	echo "daemonize no"
	echo "supervised no"
	echo "pidfile $tmp/redis.pid"
	echo "logfile \"\""
	echo "dir $data"
	echo "save \"\""
	echo "$lines" | sed "s|/run/redis/|$run/|"
} >"$tmp/redis.conf"
chmod 0644 "$tmp/redis.conf"
setpriv --reuid redis --regid redis --init-groups redis-server "$tmp/redis.conf" \
	>"$tmp/redis.log" 2>&1 &
rpid=$!
i=0
until [ -S "$sock" ]; do
	i=$((i + 1))
	[ "$i" -gt 100 ] && { log="$tmp/redis.log"; fail "redis-server made no socket $sock"; }
	kill -0 "$rpid" 2>/dev/null || { log="$tmp/redis.log"; fail "redis-server exited"; }
	sleep 0.1
done
mode=$(stat -c '%a %U %G' "$sock")
[ "$mode" = "770 redis redis" ] || fail "the socket is $mode, not 770 redis redis"
echo "deb_socket: redis-server as redis with $conf and: $(echo "$lines" | tr '\n' ';') socket $mode"

# The worker's config (root's, 0644: read by the unprivileged user) and
# the library, loaded as an administrator would (root may use any socket).
cat >"$tmp/warrantd.ini" <<EOF
[daemon]
consumer = socket-test
heartbeat_ms = 500
[redis]
socket = $sock
prefix = sock
[records]
signature = off
[action gate.open]
url = http://127.0.0.1:9/x
auth = none
EOF
chmod 0644 "$tmp/warrantd.ini"
"$build/bin/warrantctl" -c "$tmp/warrantd.ini" functions load >"$tmp/load.log" 2>&1 ||
	{ log="$tmp/load.log"; fail "warrantctl functions load as root"; }

# Outside the group: refused at connect (EACCES), whatever it runs.
out=$(setpriv --reuid nobody --regid nogroup --clear-groups \
	"$build/bin/warrantctl" -c "$tmp/warrantd.ini" status 2>&1)
st=$?
[ "$st" != 0 ] || fail "a user outside group redis could use the socket: $out"
# why, in redis-cli's words (warrantctl says "no connection")
if command -v redis-cli >/dev/null 2>&1; then
	why=$(setpriv --reuid nobody --regid nogroup --clear-groups redis-cli -s "$sock" PING 2>&1)
	echo "$why" | grep -qi 'permission denied' || fail "refused, but not for permission: $why"
fi
echo "deb_socket: nobody without group redis: refused (warrantctl exit $st; permission denied)"

# In the group: warrantctl answers, and the worker starts and gets ready.
out=$(setpriv --reuid nobody --regid nogroup --groups "$gid" \
	"$build/bin/warrantctl" -c "$tmp/warrantd.ini" status 2>&1)
st=$?
echo "$out" | grep -q '^stream: *sock:jobs' || fail "warrantctl status in group redis (exit $st): $out"
log="$tmp/warrantd.log"
setpriv --reuid nobody --regid nogroup --groups "$gid" \
	"$build/bin/warrantd" -c "$tmp/warrantd.ini" >"$log" 2>&1 &
wpid=$!
i=0
until grep -q 'event=consumer.ready' "$log"; do
	i=$((i + 1))
	[ "$i" -gt 300 ] && fail "the worker in group redis never got ready"
	kill -0 "$wpid" 2>/dev/null || fail "the worker in group redis exited"
	sleep 0.1
done
kill -TERM "$wpid"
wait "$wpid"
st=$?
wpid=''
[ "$st" = 0 ] || fail "the worker did not stop cleanly (exit $st)"
echo "deb_socket: nobody with group redis (SupplementaryGroups=redis): warrantctl status and the worker connect"
echo "deb_socket: ok"
