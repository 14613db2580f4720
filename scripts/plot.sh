#!/usr/bin/env bash
# Plot a benchmark run: scripts/plot.sh RUN.jsonl [OUTDIR] (default doc/). Installs python3-matplotlib if
# it is missing (the plots are the only thing that needs it).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
fi
/usr/bin/python3 scripts/plot.py "$1" "${2:-doc}"
