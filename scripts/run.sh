#!/usr/bin/env bash
# The main job: install what is missing, build, and run softrnic's loopback check. Until the engine's data
# path lands this is the wire-format self check: every opcode softrnic emits is built, parsed back and
# ICRC-checked, and the ICRC candidates are measured against memcpy (JSON lines).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build --buildtype=debugoptimized -Dwerror=true >/dev/null
fi
ninja -C build >/dev/null
build/app/rnic-pktgen/rnic-pktgen check
build/app/rnic-crcbench/rnic-crcbench --no-huge -m 64 --no-pci --no-shconf -l 0 --log-level=error
