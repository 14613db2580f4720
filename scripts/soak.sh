#!/usr/bin/env bash
# The long fault matrix (tests/engine/fault_matrix.c): RC WRITE, READ, SEND and FETCH_ADD, 64 B and 64 KB,
# depth 1 and 16, 4 QPs, every message exactly once with its data verified, again and again for a given
# time under each fault pattern: over the loopback pair (--fault: none, uniform 1 %, burst, ACK-only 10 %,
# reorder, duplicate, corrupt 0.1 %, rate limit) and, as root, between two processes on a veth pair with the
# kernel making the faults (tests/engine/fault-veth.sh), the time shared equally.
#   scripts/soak.sh [SECONDS [SEED]]   default 600 s (10 minutes), seed 1
# SOAK_PATTERNS="uniform burst" runs those patterns only, SOAK_KINDS=loopback (or veth) that kind only (a
# short run, as tests/docs/doc_commands.py's).
# Prints a JSON line per case, a summary per pattern and a last line with the totals; exit status 0 only
# when no case failed. The logs stay in the directory the last line names.
set -uo pipefail
cd "$(dirname "$0")/.."
duration=${1:-600}
seed=${2:-1}
case "$duration$seed" in *[!0-9]*) echo "usage: scripts/soak.sh [SECONDS [SEED]]" >&2; exit 2 ;; esac
bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=debugoptimized >/dev/null
ninja -C build tests/engine/fault_matrix >/dev/null || exit 1
matrix=build/tests/engine/fault_matrix
read -r -a patterns <<<"${SOAK_PATTERNS:-none uniform burst ack-only reorder duplicate corrupt rate}"
kinds=(loopback)
[ "$(id -u)" -eq 0 ] && kinds+=(veth)
[ -z "${SOAK_KINDS:-}" ] || read -r -a kinds <<<"$SOAK_KINDS"
slice=$((duration / (${#patterns[@]} * ${#kinds[@]})))
[ $slice -ge 5 ] || slice=5
logs=$(mktemp -d /tmp/softrnic-soak.XXXXXX)
trap 'rm -rf /var/run/dpdk/soak-$$' EXIT
start=$(date +%s)
failed=()
for kind in "${kinds[@]}"; do
	for p in "${patterns[@]}"; do
		log=$logs/$kind-$p.log
		if [ "$kind" = loopback ]; then
			"$matrix" --pattern "$p" --duration "$slice" --seed "$seed" -- --no-huge -m 512 --no-pci \
				--no-shconf -l 0,1 --log-level=error --file-prefix soak-$$ >"$log" 2>&1
		else
			bash tests/engine/fault-veth.sh "$p" "$matrix" --duration "$slice" >"$log" 2>&1
		fi
		rc=$?
		grep -h '^{"soak"' "$log" | sed "s/^{/{\"kind\": \"$kind\", /"
		[ $rc -eq 0 ] || failed+=("$kind-$p")
	done
done
# Which cases failed, by pattern, operation, size and depth (the JSON lines of the cases).
python3 - "$logs" <<'EOF'
import collections, glob, json, os, sys
bad = collections.Counter()
total = collections.Counter()
for path in glob.glob(os.path.join(sys.argv[1], "*.log")):
    kind = os.path.basename(path).split("-")[0]
    for line in open(path, errors="replace"):
        if line.startswith('{"pattern"'):
            c = json.loads(line)
            key = (kind, c["pattern"], c["op"], c["size"], c["depth"])
            total[key] += 1
            bad[key] += not c["ok"]
for key in sorted(k for k in bad if bad[k]):
    print(json.dumps({"failed_case": "%s %s %s %d B depth %d" % key, "failed": bad[key], "of": total[key]}))
EOF
echo "{\"soak\": \"fault-matrix\", \"seconds\": $(( $(date +%s) - start )), \"seed\": $seed," \
	"\"kinds\": \"${kinds[*]}\", \"failed\": \"${failed[*]}\", \"logs\": \"$logs\"}"
[ ${#failed[@]} -eq 0 ]
