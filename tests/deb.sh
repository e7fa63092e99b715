#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Builds the Debian packages (scripts/mkdeb.sh: source and binary) and checks
# them: the source package's files and that it unpacks, the .deb's file list
# (dpkg-deb -c), its control fields and conffiles, that the installed
# configuration fails `warrantd -t` until configured, that the man pages
# render, and that lintian reports nothing but what debian/*.lintian-overrides
# explains. Prints one closing line "deb: ok" or "deb: FAIL ..."; exits 77
# (tests/run.sh: skipped) when the packaging tools are not installed.
#   tests/deb.sh [OUTDIR]
set -u
out=${1:-build/deb}
fail() { echo "deb: FAIL $*"; exit 1; }
for tool in dpkg-buildpackage dh fakeroot; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "deb: SKIP: $tool not installed (scripts/deps.sh installs it)"; exit 77; }
done
start=$(date +%s)
rm -rf "$out"
sh scripts/mkdeb.sh "$out" >/dev/null || fail "the package did not build"
version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
deb="$out/warrantd_${version}_${arch}.deb"
[ -f "$deb" ] || fail "no $deb"
echo "deb: built $deb ($(stat -c %s "$deb") bytes) in $(( $(date +%s) - start ))s"

# The source package: 3.0 (native), a version without a Debian revision,
# and a tarball that holds the licence and unpacks.
dsc="$out/warrantd_${version}.dsc"
[ -f "$dsc" ] || fail "no source package $dsc (dpkg-buildpackage -S)"
grep -qx 'Format: 3.0 (native)' "$dsc" || fail "$dsc is not 3.0 (native)"
case $version in *-*) fail "a native package's version has no revision: $version" ;; esac
tarball="$out/$(sed -n 's/^ [0-9a-f]\{64\} [0-9]* \(warrantd_.*\.tar\..*\)$/\1/p' "$dsc" | head -n 1)"
[ -f "$tarball" ] || fail "the source tarball named in $dsc is not there"
tar -tf "$tarball" | grep -qE '^[^/]+/LICENSE$' || fail "LICENSE is not in $tarball"
tar -tf "$tarball" | grep -qE '^[^/]+/build/' && fail "$tarball holds build output"
echo "deb: source $dsc, $(tar -tf "$tarball" | wc -l) files in $(basename "$tarball")"

list=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
for f in /usr/bin/warrantd /usr/bin/warrantctl /usr/bin/warrantd-web \
	/usr/share/man/man8/warrantd.8.gz /usr/share/man/man1/warrantctl.1.gz \
	/usr/share/man/man5/warrantd.ini.5.gz /usr/share/man/man7/warrantd.7.gz \
	/usr/share/man/man8/warrantd-web.8.gz /lib/systemd/system/warrantd-web.service \
	/lib/systemd/system/warrantd.service /lib/systemd/system/warrantd@.service \
	/lib/systemd/system/warrantd-redis-tls.service \
	/lib/systemd/system/warrantctl-metrics.service /lib/systemd/system/warrantctl-metrics.timer \
	/etc/warrantd/warrantd.ini \
	/usr/share/doc/warrantd/README.md /usr/share/doc/warrantd/warrantd.ini.example \
	/usr/share/doc/warrantd/stunnel-redis.conf.example \
	/usr/share/doc/warrantd/policy/warrant.rego /usr/share/doc/warrantd/copyright \
	/usr/share/doc/warrantd/policy/cerbos/canal_gate.yaml \
	/usr/share/doc/warrantd/policy/cerbos/tests/canal_gate_test.yaml \
	/usr/share/doc/warrantd/prometheus/warrantd.rules.yml \
	/usr/share/doc/warrantd/prometheus/grafana-dashboard.json \
	/usr/share/bash-completion/completions/warrantctl \
	/usr/share/zsh/vendor-completions/_warrantctl; do
	echo "$list" | grep -qx "$f" || fail "$f is not in the package"
done
echo "$list" | grep -q '^/usr/local' && fail "something is under /usr/local"

dir=$(mktemp -d /tmp/warrantd-debtest.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
dpkg-deb -e "$deb" "$dir/DEBIAN"
grep -qx /etc/warrantd/warrantd.ini "$dir/DEBIAN/conffiles" || fail "warrantd.ini is not a conffile"
dpkg-deb -f "$deb" Depends | grep -q libhiredis || fail "Depends lacks the shared libraries"
dpkg-deb -x "$deb" "$dir/root"
# the units' comments and Documentation= name where the package put things
grep -q '/usr/local' "$dir"/root/lib/systemd/system/* &&
	fail "a packaged unit still names /usr/local: $(grep -l /usr/local "$dir"/root/lib/systemd/system/*)"
# the LoadCredential= sources: a directory only root may enter
[ "$(stat -c %a "$dir/root/etc/warrantd/credentials" 2>/dev/null)" = 700 ] ||
	fail "/etc/warrantd/credentials is not a 0700 directory in the package"
grep -q '^License: BSD-2-Clause' "$dir/root/usr/share/doc/warrantd/copyright" ||
	fail "debian/copyright does not name the licence"
"$dir/root/usr/bin/warrantd" -V | grep -qx "warrantd $(echo "$version" | sed 's/-[^-]*$//')" ||
	fail "warrantd -V does not say $version"
msg=$("$dir/root/usr/bin/warrantd" -t -c "$dir/root/etc/warrantd/warrantd.ini" 2>&1)
rc=$?
[ "$rc" = 78 ] || fail "the unconfigured warrantd.ini passes warrantd -t (exit $rc)"
echo "$msg" | grep -q "unknown key 'UNCONFIGURED'" || fail "warrantd -t says: $msg"
echo "deb: the packaged config fails -t as it should: $msg"
if command -v mandoc >/dev/null 2>&1; then
	for m in "$dir"/root/usr/share/man/man*/*.gz; do
		mandoc -T lint -W warning "$m" || fail "mandoc -T lint $m"
	done
fi

if command -v lintian >/dev/null 2>&1; then
	grep -E '^[EW]: ' "$out/lintian.txt" && fail "lintian has errors or warnings (see $out/lintian.txt)"
	echo "deb: lintian: $(grep -cE '^[EWIPX]: ' "$out/lintian.txt") tags beyond the overrides; $(grep -c '^O: ' "$out/lintian.txt") overridden"
	grep -E '^[IPX]: ' "$out/lintian.txt" | sort -u
else
	echo "deb: lintian not installed: not checked"
fi
echo "deb: ok ($(( $(date +%s) - start ))s)"
