#!/usr/bin/env bash
# The long soak: RC WRITE, READ, SEND, FETCH_ADD and CMP_SWAP on 4 QPs over a link that drops, reorders and
# duplicates 1% of the frames and corrupts 0.1%, in both directions; every message verified, atomics exact.
#   scripts/soak.sh [ROUNDS [SEED]]   20 messages a round; the default 50000 rounds = 1 000 000 messages
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-50000}
seed=${2:-1}
bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=debugoptimized >/dev/null
ninja -C build tests/engine/test_soak >/dev/null
start=$(date +%s)
build/tests/engine/test_soak --no-huge -m 512 --no-pci --no-shconf -l 0,1 --log-level=error -- \
	--fault drop=0.01,reorder=0.01,duplicate=0.01,corrupt=0.001,depth=3,seed=$seed --soak-rounds "$rounds"
echo "{\"soak\": \"rc\", \"rounds\": $rounds, \"messages\": $((rounds * 20)), \"seed\": $seed, \"seconds\": $(( $(date +%s) - start ))}"
