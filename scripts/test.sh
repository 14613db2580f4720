#!/usr/bin/env bash
# Install what is missing, build softrnic with warnings as errors, run every test, then run the whole suite
# again under AddressSanitizer + UndefinedBehaviorSanitizer, and end with the line 'N passed, N failed'
# (both runs together). --quick skips the sanitizer run; --dry-run says what it would do and does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=1
dry=0
for a in "$@"; do
	case "$a" in
	--quick) sanitize=0 ;;
	--dry-run) dry=1 ;;
	*) echo "usage: scripts/test.sh [--quick] [--dry-run]" >&2; exit 2 ;;
	esac
done
if [ "$dry" -eq 1 ]; then
	echo "would run: scripts/install-deps.sh; the suite in build"
	[ "$sanitize" -eq 0 ] || echo "would run: the suite in build-asan (AddressSanitizer, UndefinedBehaviorSanitizer)"
	exit 0
fi

bash scripts/install-deps.sh

run_suite() {	# build dir, extra meson options...
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" -Dwerror=true "$@" >/dev/null
	else
		meson setup "$dir" --buildtype=debugoptimized -Dwerror=true "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
	# Tests start DPDK processes of their own; two at a time fit the 2-core machines. The suite 'ovs' (a
	# switch of its own started for each test) runs with the interop suite (scripts/interop.sh).
	meson test -C "$dir" --num-processes 2 --no-suite ovs --print-errorlogs >"$dir/test-output.txt" 2>&1 || true
	grep -E "^ *[0-9]+/[0-9]+ " "$dir/test-output.txt" || true
}

dirs=(build)
run_suite build
if [ "$sanitize" -eq 1 ]; then
	echo "--- the same suite under AddressSanitizer and UndefinedBehaviorSanitizer"
	export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false
	dirs+=(build-asan)
fi
logs=()
for d in "${dirs[@]}"; do logs+=("$d/meson-logs/testlog.json"); done
exec /usr/bin/python3 scripts/test-summary.py "${logs[@]}"
