#!/usr/bin/env bash
# Install what is missing, build softrnic with warnings as errors, run every test, and end with the line
# 'N passed, N failed'. Options: --sanitize (also run the suite under ASan+UBSan in a second build).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=0
for a in "$@"; do
	case "$a" in
	--sanitize) sanitize=1 ;;
	*) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
	esac
done

bash scripts/install-deps.sh

run_suite() {	# build dir, extra meson options...
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" -Dwerror=true "$@" >/dev/null
	else
		meson setup "$dir" --buildtype=debugoptimized -Dwerror=true "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
	# Tests start DPDK processes of their own; two at a time fit the 2-core machines.
	meson test -C "$dir" --num-processes 2 --print-errorlogs >"$dir/test-output.txt" 2>&1 || true
	grep -E "^ *[0-9]+/[0-9]+ " "$dir/test-output.txt" || true
}

status=0
run_suite build
/usr/bin/python3 scripts/test-summary.py build/meson-logs/testlog.json >build/summary.txt || status=1
if [ "$sanitize" -eq 1 ]; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false
	echo "sanitizers (address,undefined):"
	/usr/bin/python3 scripts/test-summary.py build-asan/meson-logs/testlog.json || status=1
fi
[ "$status" -eq 0 ] || sed -n '/^failed:/p' build/summary.txt
tail -n 1 build/summary.txt
exit $status
