#!/usr/bin/env bash
# The CM between two softrnic processes on a veth pair between two network namespaces (the test creates and
# removes them; needs root: skipped, exit 77, without it), without --neigh: the client resolves the server's
# address by ARP through the engine, is rejected by a port nobody listens on (REJ reason 8), then connects,
# WRITEs and SENDs, and disconnects; the server checks the data (tests/cm/cm_peer.c). softrnic's addresses
# (10.99.0.x) are its own: no kernel answers for them.
# Usage: cm-veth.sh CM_PEER
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
peer=$1
eal=(--no-huge -m 512 --no-pci --no-shconf -l 0,1 --log-level=error)
tmp=$(mktemp -d)
trap 'veth_cleanup; rm -rf "$tmp"' EXIT

fail() {
	echo "cm-veth: $*"
	cat "$tmp"/*.log 2>/dev/null
	exit 1
}

veth_setup || exit $?
timeout 60 ip netns exec "$ns_a" "$peer" server 7471 "${eal[@]}" --file-prefix rnic-cma-$$ \
	--vdev=net_af_packet0,iface=$veth_a,qpairs=2 -- --port net_af_packet0 --ip 10.99.0.1 \
	>"$tmp/server.log" 2>&1 &
server=$!
veth_pids+=($server)
for _ in $(seq 1 100); do
	grep -q "listening" "$tmp/server.log" && break
	sleep 0.1
done
grep -q "listening" "$tmp/server.log" || fail "the server did not start"
timeout 60 ip netns exec "$ns_b" "$peer" client 10.99.0.1 7471 "${eal[@]}" --file-prefix rnic-cmb-$$ \
	--vdev=net_af_packet0,iface=$veth_b,qpairs=2 -- --port net_af_packet0 --ip 10.99.0.2 \
	>"$tmp/client.log" 2>&1
client_rc=$?
wait "$server"
server_rc=$?
[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] || fail "server exit $server_rc, client exit $client_rc"
grep -q "rejected with reason 8" "$tmp/client.log" || fail "no REJ 8 for the port nobody listens on"
grep -q "cm-peer: ok" "$tmp/server.log" && grep -q "cm-peer: ok" "$tmp/client.log" || fail "not ok"
echo "two softrnic processes connected through the CM over an ARP-resolved path"
