#!/usr/bin/env bash
# rnic-perf server and client in two network namespaces joined by a veth pair, each on net_af_packet, as
# the README shows: WRITE bandwidth, READ latency and SEND bandwidth, verified (the server checks what was
# written and sent to it). Needs root (skipped, exit 77, without).
# Usage: server-client.sh RNIC_PERF
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
perf=$1
tmp=$(mktemp -d)
trap 'kill %1 2>/dev/null; wait 2>/dev/null; veth_cleanup; rm -rf "$tmp"' EXIT
veth_setup || exit $?
eal=(-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level=error)
status=0
for test in "-o write -s 65536 -n 2000" "-o read --lat -s 64 -n 500" "-o send -s 3000 -n 2000 -q 2"; do
	# The server's softrnic has an address of its own (10.99.0.1; the kernel's 10.98.0.1 carries the TCP
	# exchange), the client's is its veth's; the peers' MACs come from --neigh.
	# shellcheck disable=SC2086
	ip netns exec "$ns_a" timeout 60 "$perf" --server 18516 --port net_af_packet0 --ip 10.99.0.1 \
		--neigh 10.98.0.2,"$mac_b" \
		-- "${eal[@]}" --file-prefix rnic-perf-a-$$ --vdev=net_af_packet0,iface=$veth_a,qpairs=2 \
		>"$tmp/server.log" 2>&1 &
	# shellcheck disable=SC2086
	ip netns exec "$ns_b" timeout 60 "$perf" --client 10.98.0.1:18516 $test --verify --json \
		--port net_af_packet0 --neigh 10.99.0.1,"$mac_a" \
		-- "${eal[@]}" --file-prefix rnic-perf-b-$$ --vdev=net_af_packet0,iface=$veth_b,qpairs=2 \
		>"$tmp/client.log" 2>&1
	client=$?
	wait %1
	server=$?
	cat "$tmp/client.log"
	if [ $client -ne 0 ] || [ $server -ne 0 ] || ! grep -q '"verified": true' "$tmp/client.log"; then
		echo "server-client ($test): client exit $client, server exit $server"
		cat "$tmp/server.log"
		status=1
	fi
done
[ $status -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $status
