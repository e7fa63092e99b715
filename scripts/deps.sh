#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Installs the Debian 12 packages that building, testing and the demo need,
# and only those that are missing. A no-op when everything is there.
# clang + libclang-rt-14-dev: libFuzzer (-fsanitize=fuzzer) for `make fuzz`;
# cppcheck, clang-tidy, clang-tools (scan-build): `make lint`; valgrind:
# `make valgrind`. python3-redis, python3-cryptography, python3-pytest, python3-venv,
# python3-pip, nodejs (python3-hiredis: redis-py reads replies in C; and Debian's npm when no npm came with it): the decider
# libraries of clients/ and their tests (`make clients-test`). libjwt-dev, cmocka, libmicrohttpd: the tests only (libjwt
# checks what the daemon's own signer writes; the daemon does not link it).
# libmicrohttpd also serves warrantd-web and the daemon's /metrics; chromium: the
# console's browser test (make test-web; puppeteer-core drives the system
# browser and downloads none).
set -eu

PKGS="build-essential pkg-config libhiredis-dev libev-dev libcurl4-openssl-dev
libjansson-dev libjwt-dev libssl-dev libcmocka-dev
libmicrohttpd-dev redis-server redis-tools redis-sentinel openssl curl libfaketime
prometheus stunnel4 mandoc debhelper dpkg-dev fakeroot lintian bash-completion zsh
clang libclang-rt-14-dev cppcheck clang-tidy clang-tools valgrind chromium
python3-redis python3-hiredis python3-cryptography python3-pytest python3-venv python3-pip nodejs"

missing=""
for p in $PKGS; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
# NodeSource's nodejs brings its own npm, which Debian's npm would conflict with.
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing" >&2
	echo "deps: run as root:  apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
# Debian's redis-server package starts a system instance; the tests and the
# demo run their own on private unix sockets and need none.
# The same for prometheus and stunnel4: the tests run their own by PID.
for svc in redis-server redis-sentinel prometheus stunnel4; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active -q "$svc" 2>/dev/null; then
		echo "deps: stopping the system $svc that the package just started" \
		    "(the tests and the demo run their own; 'systemctl start $svc' brings it back)"
		systemctl stop "$svc" || true
	fi
done
