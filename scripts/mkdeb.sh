#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Builds the Debian packages from a copy of the tree (dpkg-buildpackage runs
# `debian/rules clean`, which would remove the test builds of this one): the
# source package (dpkg-buildpackage -S: warrantd_<version>.dsc and
# .tar.xz, 3.0 (native)) and the binary one (-b: warrantd_<version>_<arch>.deb),
# each with its .changes and .buildinfo, and lintian.txt over both, into
# OUTDIR (default build/deb).
#   scripts/mkdeb.sh [OUTDIR]
set -eu
out=${1:-build/deb}
src=$(pwd)
work=$(mktemp -d /tmp/warrantd-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/warrantd" "$out"
# Tracked and new files, as git sees them; nothing built, nothing ignored.
git ls-files -z --cached --others --exclude-standard |
	(cd "$src" && xargs -0 tar -cf - --ignore-failed-read) | tar -xf - -C "$work/warrantd"
cd "$work/warrantd"
# The source package first, from the clean copy; then the binary one.
dpkg-buildpackage -us -uc -S >"$work/source.log" 2>&1 || { tail -n 60 "$work/source.log" >&2; exit 1; }
dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1 || { tail -n 60 "$work/build.log" >&2; exit 1; }
cd "$work"
cp ./*.deb ./*.dsc ./*.tar.* ./*.changes ./*.buildinfo "$src/$out/"
if command -v lintian >/dev/null 2>&1; then
	# shellcheck disable=SC2046
	lintian --info --display-info --pedantic --show-overrides $(ls ./*.changes) \
		>"$src/$out/lintian.txt" 2>&1 || true
else
	echo "lintian not installed" >"$src/$out/lintian.txt"
fi
ls "$src/$out"/*.deb
