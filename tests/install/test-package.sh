#!/usr/bin/env bash
# What `meson install` puts on a machine: the library with a versioned soname exporting exactly the functions
# rnic.h declares (nm -D), softrnic.pc keeping DPDK private, the user tools and not the benchmark-internal
# ones, each answering --version, the configuration files, the man pages and the LICENSE.
#   test-package.sh BUILD_DIR VERSION TOOL...   (TOOL: installed tools whose --version is checked)
set -euo pipefail
build_dir=$1
version=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

meson install -C "$build_dir" --destdir "$tmp/root" --no-rebuild --quiet >/dev/null
find_one() { find "$tmp/root" -path "*/$1" | head -n 1; }

# The library: libsoftrnic.so -> libsoftrnic.so.MAJOR -> libsoftrnic.so.VERSION, soname libsoftrnic.so.MAJOR.
major=${version%%.*}
lib=$(find_one "libsoftrnic.so.$version")
[ -n "$lib" ] && [ -f "$lib" ] || { echo "FAIL: no libsoftrnic.so.$version installed"; exit 1; }
libdir=$(dirname "$lib")
[ "$(readlink "$libdir/libsoftrnic.so")" = "libsoftrnic.so.$major" ] || fail "libsoftrnic.so does not point to .so.$major"
[ "$(readlink "$libdir/libsoftrnic.so.$major")" = "libsoftrnic.so.$version" ] ||
	fail "libsoftrnic.so.$major does not point to .so.$version"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libsoftrnic.so.$major" ] || fail "soname is '$soname', not libsoftrnic.so.$major"

# Exported symbols: the functions the installed rnic.h declares, all of them and nothing else. Symbol-version
# definitions (type A, e.g. SOFTRNIC_0) name a version, not something a program can bind to.
header=$(find_one include/rnic.h)
sed -e 's|/\*.*\*/||g' -e '/\/\*/,/\*\//d' "$header" | grep -oE '\brnic_[a-z0-9_]+[[:space:]]*\(' |
	tr -d '( \t' | sort -u >"$tmp/declared"
nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/exported"
if grep -v '^rnic_' "$tmp/exported" >"$tmp/foreign"; then
	fail "exported beyond rnic_*: $(tr '\n' ' ' <"$tmp/foreign")"
fi
extra=$(comm -13 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
missing=$(comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
[ -z "$extra" ] || fail "exported but not in rnic.h (internal): $extra"
[ -z "$missing" ] || fail "declared in rnic.h but not exported (lib/softrnic.map): $missing"
[ "$(wc -l <"$tmp/declared")" -gt 40 ] || fail "only $(wc -l <"$tmp/declared") functions found in rnic.h"

# softrnic.pc: DPDK only in Requires.private: a program links libsoftrnic alone (DPDK's libraries come with
# it as libsoftrnic.so's own dependencies); pkg-config --static still names them.
pc=$(find_one pkgconfig/softrnic.pc)
grep -q '^Requires\.private:.*libdpdk' "$pc" || fail "softrnic.pc has no 'Requires.private: libdpdk'"
! grep -q '^Requires:' "$pc" || fail "softrnic.pc has a public Requires: $(grep '^Requires:' "$pc")"
mkdir "$tmp/pc"
sed "s|^prefix=|prefix=$tmp/root|" "$pc" >"$tmp/pc/softrnic.pc"
libs=$(PKG_CONFIG_PATH="$tmp/pc" pkg-config --libs softrnic)
case "$libs" in *rte_*|*dpdk*) fail "pkg-config --libs softrnic gives DPDK's libraries: $libs" ;; esac
PKG_CONFIG_PATH="$tmp/pc" pkg-config --libs --static softrnic | grep -q -- '-lrte_eal' ||
	fail "pkg-config --libs --static softrnic does not give DPDK's libraries"

# Tools: the user's installed, the benchmark-internal ones not; every checked one answers --version.
bindir=$(dirname "$(find_one bin/rnicd)")
for t in rnicd rnic-perf rnic-pingpong rnic-ibv-pingpong rnic-exporter; do [ -x "$bindir/$t" ] || fail "$t not installed"; done
for t in rnic-pktgen rnic-crcbench rnic-gatherbench rnic-baseline; do
	[ ! -e "$bindir/$t" ] || fail "benchmark-internal $t installed"
done
for t in "$@"; do
	out=$("$bindir/$t" --version 2>&1) || fail "$t --version exits $?"
	grep -q "^$t (softrnic) $version\$" <<<"$out" || fail "$t --version says '$out'"
done

# Configuration files, systemd units, man pages, LICENSE.
for f in etc/softrnic/softrnic.conf etc/softrnic/rnicd.conf lib/systemd/system/rnicd.service \
	lib/systemd/system/rnicd.socket share/man/man1/rnic-perf.1 share/man/man8/rnicd.8 \
	share/man/man5/softrnic.conf.5 share/doc/softrnic/LICENSE; do
	[ -n "$(find_one "$f")" ] || fail "$f not installed"
done
for m in $(find "$tmp/root" -path '*/share/man/*' -type f); do
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null) || fail "man $m fails"
	[ -z "$warn" ] || fail "man $(basename "$m"): $warn"
done

# The units as systemd reads them (systemd-analyze verify), with the paths of the scratch installation.
unitdir=$(dirname "$(find_one lib/systemd/system/rnicd.service)")
mkdir "$tmp/units"
conf=$(find_one etc/softrnic/rnicd.conf)
prefix=$(sed -n 's/^prefix=//p' "$pc")
for u in rnicd.service rnicd.socket; do
	sed -e "s|^ExecStart=$prefix/bin/rnicd --config [^ ]*|ExecStart=$bindir/rnicd --config $conf|" \
		"$unitdir/$u" >"$tmp/units/$u"
done
grep -q "^ExecStart=$bindir/rnicd " "$tmp/units/rnicd.service" || fail "rnicd.service does not start $prefix/bin/rnicd"
grep -q '^Type=notify' "$tmp/units/rnicd.service" || fail "rnicd.service is not Type=notify"
if command -v systemd-analyze >/dev/null; then
	out=$(cd "$tmp/units" && systemd-analyze verify --man=no rnicd.socket rnicd.service 2>&1) ||
		fail "systemd-analyze verify: $out"
fi

echo "$((fails == 0)) passed, $((fails != 0)) failed"
[ "$fails" -eq 0 ]
