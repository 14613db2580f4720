#!/usr/bin/env bash
# Plot a benchmark run: scripts/plot.sh RUN.jsonl [OUTDIR] (default doc/). python3-matplotlib comes with
# scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
/usr/bin/python3 scripts/plot.py "$1" "${2:-doc}"
