#!/bin/sh
# Builds the Debian package from a copy of the tree (dpkg-buildpackage runs
# `debian/rules clean`, which would remove the test builds of this one) and
# puts warrantd_<version>_<arch>.deb, the .changes, .buildinfo and
# lintian.txt into OUTDIR (default build/deb).
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
dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1 || { tail -n 60 "$work/build.log" >&2; exit 1; }
cd "$work"
cp ./*.deb ./*.changes ./*.buildinfo "$src/$out/"
changes=$(ls ./*.changes)
if command -v lintian >/dev/null 2>&1; then
	lintian --info --display-info --pedantic --show-overrides "$changes" >"$src/$out/lintian.txt" 2>&1 || true
else
	echo "lintian not installed" >"$src/$out/lintian.txt"
fi
ls "$src/$out"/*.deb
