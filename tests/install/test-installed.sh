#!/usr/bin/env bash
# Install softrnic into a scratch prefix, build tests/install/lifecycle.c outside the source tree against
# the installed header and softrnic.pc with AddressSanitizer (leak checking on), and run it.
set -euo pipefail
build_dir=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

meson install -C "$build_dir" --destdir "$tmp/root" --no-rebuild --quiet >/dev/null
# Point the installed softrnic.pc at the scratch prefix (only its own prefix: libdpdk stays where it is).
pc=$(find "$tmp/root" -name softrnic.pc | head -n 1)
mkdir "$tmp/pc"
sed "s|^prefix=|prefix=$tmp/root|" "$pc" >"$tmp/pc/softrnic.pc"
export PKG_CONFIG_PATH="$tmp/pc"
flags=$(pkg-config --cflags --libs softrnic)
cp "$src" "$tmp/lifecycle.c"
cd "$tmp"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -g -fsanitize=address -o lifecycle lifecycle.c $flags
libdir=$(dirname "$(find "$tmp/root" -name 'libsoftrnic.so' | head -n 1)")
# ASan's allocator serves the whole process, so a leak of the library's own calloc/malloc surfaces too.
LD_LIBRARY_PATH="$libdir" ASAN_OPTIONS=detect_leaks=1 \
	./lifecycle --no-huge -m 256 --no-pci --no-shconf -l 0 --log-level=error
