#!/usr/bin/env bash
# librdmacm's own rping (rdmacm-utils), unmodified, on softrnic through libsoftrnic-verbs (softrnic-run):
# server and client in two network namespaces joined by a veth pair, each an engine on net_af_packet with
# softrnic's own address (10.99.0.x, no --neigh: the CM resolves it by ARP); rping connects through softrnic's
# CM, each of its iterations RDMA READs the client's buffer, WRITEs it back and checks it (-V), and both
# ends exit 0 after the client disconnects. Needs root (skipped, exit 77, without it).
# Usage: rping.sh SOFTRNIC_RUN
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
run=(sh "$1")
tmp=$(mktemp -d)
trap 'veth_cleanup; rm -rf "$tmp"' EXIT

command -v rping >/dev/null || { echo "rping missing (rdmacm-utils): skipped"; exit 77; }

fail() {
	echo "rping: $*"
	tail -n 20 "$tmp"/*.log 2>/dev/null
	exit 1
}

args() {	# the engine of one end: SIDE (a, b), its veth, its address
	echo "-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix rping-$1-$$" \
		"--vdev=net_af_packet0,iface=$2,qpairs=2 -- --port net_af_packet0 --ip $3"
}

veth_setup || exit $?
count=${RPING_COUNT:-20}
SOFTRNIC_ARGS=$(args a "$veth_a" 10.99.0.1) timeout 60 ip netns exec "$ns_a" "${run[@]}" \
	rping -s -a 10.99.0.1 -p 7174 -C "$count" -S 1024 -v >"$tmp/server.log" 2>&1 &
server=$!
veth_pids+=($server)
sleep 2
SOFTRNIC_ARGS=$(args b "$veth_b" 10.99.0.2) timeout 60 ip netns exec "$ns_b" "${run[@]}" \
	rping -c -a 10.99.0.1 -p 7174 -C "$count" -S 1024 -v -V >"$tmp/client.log" 2>&1
client_rc=$?
wait "$server"
server_rc=$?
[ $client_rc -eq 0 ] || fail "client exit $client_rc"
[ $server_rc -eq 0 ] || fail "server exit $server_rc"
pings=$(grep -c "ping data: rdma-ping-" "$tmp/client.log")
[ "$pings" -eq "$count" ] || fail "the client printed $pings pings of $count"
grep -q "ping data: rdma-ping-$((count - 1)): " "$tmp/client.log" || fail "no last ping"
echo "rping: $count pings between two softrnic processes, verified"
