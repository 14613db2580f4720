#!/usr/bin/env bash
# The wrapper meson runs every test in (tests/meson.build: the default test setup): the test gets a mount
# namespace of its own with an empty tmpfs on DPDK's runtime directory, /var/run/dpdk. Every directory its
# DPDK processes make there (/var/run/dpdk/<file prefix>: the EAL's config, memory maps and sockets, and
# the directory that --no-shconf runs still create for the telemetry socket) lives in that tmpfs and goes
# with the namespace when the test ends, however it ends: a suite run leaves /var/run/dpdk as it found it,
# and tests running at the same time never meet on a file prefix. Network namespaces a test creates
# (ip netns add) are also mounted in it only. Needs root, as the tests do.
#   private-dpdk-dir.sh COMMAND [ARGS...]
set -euo pipefail
runtime=/var/run/dpdk
# DPDK makes the directory itself on a first run; the mount needs it to exist.
[ -d "$runtime" ] || mkdir -p -m 0700 "$runtime"
exec unshare --mount --propagation private -- /bin/sh -c \
	'mount -t tmpfs -o mode=0700,size=64m softrnic-test-dpdk "$0" && exec "$@"' "$runtime" "$@"
