#!/usr/bin/env bash
# Stock ib_write_bw through libsoftrnic-verbs against rnic-perf's own rnic_write_bw: the same case (WRITE of
# 64 KB, 300 of them, perftest's defaults otherwise: 1 QP, TX depth 128, every send signaled; iterations, not
# -D: rnic-perf's duration counts the drain of the last 128, perftest's does not), between the same
# two processes (two network namespaces joined by a veth pair, each engine on net_af_packet, as
# stock-tools.sh runs perftest), with the same EAL and engine arguments (the server's stages on a worker
# lcore, the client's on its own thread), in the same run. PAIRS interleaved pairs (rnic-perf, then the
# interposer); the median of the client's "BW average" of each tool; the interposer's must be at least 0.9
# of rnic-perf's: what the interposer costs, at most 10 %. Not bounded above: rnic-perf's server polls its
# control socket and its engine on its main lcore, the client's core, where perftest's server sleeps in a
# read(), so the interposer's runs come out ahead (doc/performance.md). A ratio, not a figure: both run on
# whatever the machine gives them at the time. The
# caller serialises it with other timing-sensitive runs (flock /tmp/softrnic-dpdk.lock, doc/performance.md).
# (net_memif would not do: perftest's server checks its port at start, and a memif port is down until its
# peer connects.) Needs root (skipped, exit 77, without it).
# Usage: perftest-ratio.sh SOFTRNIC_RUN RNIC_WRITE_BW [PAIRS]
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
run=(sh "$1")
perf=$2
pairs=${3:-5}
command -v ib_write_bw >/dev/null || { echo "ib_write_bw missing (perftest): skipped"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	veth_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
veth_setup || exit $?

opts=(-s 65536 -n 300)
eal_a="-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix vr-a-$$"
eal_a+=" --vdev=net_af_packet0,iface=$veth_a,qpairs=2"
eal_b="--lcores 0@0 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix vr-b-$$"
eal_b+=" --vdev=net_af_packet0,iface=$veth_b,qpairs=2"
engine_a="--port net_af_packet0 --ip 10.99.0.1 --neigh 10.98.0.2,$mac_b"
engine_b="--port net_af_packet0 --neigh 10.99.0.1,$mac_a --stages devices"

# TOOL (rnic or verbs): one server/client pair; prints the client's BW average (MB/s), or nothing when the
# run failed
one_run() {
	local port=$((21000 + RANDOM % 2000)) server rc
	# shellcheck disable=SC2086
	if [ "$1" = rnic ]; then
		ip netns exec "$ns_a" timeout 60 "$perf" -p $port $engine_a -- $eal_a >"$tmp/server.txt" 2>&1 &
	else
		ip netns exec "$ns_a" env SOFTRNIC_ARGS="$eal_a -- $engine_a" timeout 60 "${run[@]}" ib_write_bw -x 0 -F \
			-p $port "${opts[@]}" >"$tmp/server.txt" 2>&1 &
	fi
	server=$!
	pids+=("$server")
	for _ in $(seq 150); do
		ip netns exec "$ns_a" ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	if [ "$1" = rnic ]; then
		ip netns exec "$ns_b" timeout 60 "$perf" 10.98.0.1 -p $port "${opts[@]}" $engine_b -- $eal_b \
			>"$tmp/client.txt" 2>&1
	else
		ip netns exec "$ns_b" env SOFTRNIC_ARGS="$eal_b -- $engine_b" timeout 60 "${run[@]}" ib_write_bw -x 0 -F \
			-p $port "${opts[@]}" 10.98.0.1 >"$tmp/client.txt" 2>&1
	fi
	rc=$?
	wait "$server" || rc=1
	if [ $rc -ne 0 ]; then
		echo "$1: exit status $rc" >&2
		sed 's/^/    server: /' "$tmp/server.txt" >&2
		sed 's/^/    client: /' "$tmp/client.txt" >&2
		return
	fi
	# the row after the column titles (rnic-perf prints its progress lines between them)
	if ! awk 'titles && $1 == 65536 && $2 == 300 && $4 + 0 > 0 { print $4; found = 1; exit }
		  $1 == "#bytes" { titles = 1 } END { exit !found }' "$tmp/client.txt"; then
		echo "$1: no 64 KB row with a bandwidth" >&2
		sed 's/^/    client: /' "$tmp/client.txt" >&2
	fi
}

rnic=()
verbs=()
for i in $(seq "$pairs"); do
	r=$(one_run rnic)
	v=$(one_run verbs)
	[ -n "$r" ] && [ -n "$v" ] || { echo "pair $i: a run failed"; exit 1; }
	echo "pair $i: rnic_write_bw $r MB/s, ib_write_bw through the interposer $v MB/s"
	rnic+=("$r")
	verbs+=("$v")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mr=$(median "${rnic[@]}")
mv=$(median "${verbs[@]}")
awk -v r="$mr" -v v="$mv" 'BEGIN {
	ratio = v / r
	printf "medians: rnic_write_bw %.2f MB/s, ib_write_bw %.2f MB/s, ratio %.3f (at least 0.9)\n", r, v, ratio
	exit ratio >= 0.9 ? 0 : 1
}'
