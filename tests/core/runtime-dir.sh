#!/usr/bin/env bash
# The test harness gives every test a private /var/run/dpdk (tests/common/private-dpdk-dir.sh): it is a
# tmpfs of this test's own mount namespace, empty when the test starts, and an engine started here leaves its
# directory in it, never in the machine's. The engine runs with the shared configuration, whose files (and
# their directory) stay after it; a --no-shconf run removes its empty directory at exit (perf-runtime-dir).
#   runtime-dir.sh ENGINE_ARGS_PROGRAM
set -euo pipefail
prog=$1
runtime=/var/run/dpdk
fs=$(stat -f -c %T "$runtime")
[ "$fs" = tmpfs ] || { echo "FAIL: $runtime is $fs, not the test's private tmpfs"; exit 1; }
# The machine's /var/run/dpdk is not shared with this namespace: the mount is ours alone.
grep -q " $(readlink -f "$runtime") tmpfs " /proc/self/mounts || { echo "FAIL: no tmpfs mounted on $runtime"; exit 1; }
if [ -n "$(ls -A "$runtime")" ]; then
	echo "FAIL: $runtime is not empty at the start: $(ls -A "$runtime")"
	exit 1
fi
"$prog" --no-huge -m 256 --no-pci -l 0 --log-level=error
[ -e "$runtime/rte/config" ] || { echo "FAIL: the engine made no $runtime/rte here"; exit 1; }
echo "1 passed, 0 failed"
