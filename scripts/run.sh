#!/usr/bin/env bash
# The main job: install what is missing, build, and run the loopback benchmark: two softrnic devices in
# this process joined by a net_ring pair (no NIC, no root, no hugepages), a short RC WRITE bandwidth run and
# a WRITE latency run, every byte verified, each with softrnic's per-stage latency table.
# Arguments are passed to both rnic-perf runs (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build --buildtype=debugoptimized -Dwerror=true >/dev/null
fi
ninja -C build >/dev/null
# EAL makes DPDK's runtime directory (the engine removes its own, /var/run/dpdk/rte, at exit): leave the
# machine as it was found.
runtime=$([ "$(id -u)" -eq 0 ] && echo /var/run || echo "${XDG_RUNTIME_DIR:-/tmp}")/dpdk
made=
[ -e "$runtime" ] || made=$runtime
trap '[ -z "$made" ] || rmdir "$made" 2>/dev/null || true' EXIT
build/app/rnic-perf/rnic-perf --loopback -o write -s 65536 -D 3 --verify --report_gbits "$@"
build/app/rnic-perf/rnic-perf --loopback -o write --lat -s 64 -n 20000 --verify "$@"
