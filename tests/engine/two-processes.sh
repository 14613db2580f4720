#!/usr/bin/env bash
# RC traffic between two softrnic processes, verified by rnic-pingpong:
#   memif   two processes joined by net_memif (same host)
#   veth    two network namespaces joined by a veth pair, each process on net_af_packet (the test creates
#           and removes the namespaces; needs root: skipped, exit 77, without it)
#   xdp     the same namespaces, each process on net_af_xdp on a second veth pair (AF_XDP's program takes
#           every frame of that interface from the kernel; the first pair carries the TCP exchange): one queue
#           pair (all a veth offers it), which each end's requester and responder share, and mbufs of a page
#           (the UMEM's chunks, no hugepages), at path MTU 2048. Skipped, exit 77, without AF_XDP in the kernel
#           or DPDK.
# Usage: two-processes.sh memif|veth|xdp PINGPONG
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
kind=$1
pp=$2
iters=8
size=100000
eal=(--no-huge -m 512 --no-pci --no-shconf -l 0,1 --log-level=error)
tmp=$(mktemp -d)
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ "$kind" = memif ] || veth_cleanup
	rm -rf "$tmp"
	# EAL makes its runtime directory even with --no-shconf.
	for prefix in rnic-srv rnic-cli rnic-a rnic-b; do rm -rf "/var/run/dpdk/$prefix-$$"; done
}
trap cleanup EXIT

run_pair() {	# the server's command, "::", the client's command; $ready: a file to wait for first
	local -a srv=() cli=()
	while [ "$1" != "::" ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	timeout 60 "${srv[@]}" >"$tmp/server.log" 2>&1 &
	pids+=($!)
	local server=$!
	# A memif client connects once, when its port starts: the server's socket must exist by then.
	for _ in $(seq 1 100); do
		[ -z "${ready:-}" ] || [ -e "$ready" ] && break
		sleep 0.1
	done
	timeout 60 "${cli[@]}" >"$tmp/client.log" 2>&1
	local client_rc=$?
	wait "$server"
	local server_rc=$?
	cat "$tmp/server.log" "$tmp/client.log"
	if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
		echo "two-processes $kind: server exit $server_rc, client exit $client_rc"
		return 1
	fi
	grep -q '"verified": true' "$tmp/client.log" && grep -q '"verified": true' "$tmp/server.log"
}

case "$kind" in
memif)
	sock="$tmp/memif.sock"
	ready=$sock
	port=$((20000 + RANDOM % 20000))
	run_pair "$pp" --server $port --iters $iters --size $size --port net_memif0 --ip 10.99.0.1 \
		--neigh 10.99.0.2,02:00:00:00:00:a2 -- "${eal[@]}" --file-prefix rnic-srv-$$ \
		--vdev=net_memif0,role=server,socket=$sock,socket-abstract=no,mac=02:00:00:00:00:a1 :: \
		"$pp" --client 127.0.0.1:$port --iters $iters --size $size --port net_memif0 --ip 10.99.0.2 \
		--neigh 10.99.0.1,02:00:00:00:00:a1 -- "${eal[@]}" --file-prefix rnic-cli-$$ \
		--vdev=net_memif0,role=client,socket=$sock,socket-abstract=no,mac=02:00:00:00:00:a2
	;;
veth)
	veth_setup || exit $?
	# The server's softrnic has an address of its own (10.99.0.1, not the kernel's 10.98.0.1, which carries
	# the TCP exchange); the client's takes its interface's address (no --ip: 10.98.0.2).
	run_pair ip netns exec "$ns_a" "$pp" --server 18515 --iters $iters --size $size --port net_af_packet0 \
		--ip 10.99.0.1 --neigh 10.98.0.2,$mac_b -- "${eal[@]}" --file-prefix rnic-a-$$ \
		--vdev=net_af_packet0,iface=$veth_a,qpairs=2 :: \
		ip netns exec "$ns_b" "$pp" --client 10.98.0.1:18515 --iters $iters --size $size --port net_af_packet0 \
		--neigh 10.99.0.1,$mac_a -- "${eal[@]}" --file-prefix rnic-b-$$ \
		--vdev=net_af_packet0,iface=$veth_b,qpairs=2
	;;
xdp)
	# The PMD (a DPDK build without libxdp/libbpf has none) and the kernel's AF_XDP sockets (address family 44).
	if ! compgen -G "/usr/lib/*/dpdk/pmds-*/librte_net_af_xdp.so*" >/dev/null; then
		echo "two-processes xdp: DPDK has no net_af_xdp driver here: skipped"
		exit 77
	fi
	if ! python3 -c 'import socket; socket.socket(44, socket.SOCK_RAW).close()' 2>/dev/null; then
		echo "two-processes xdp: no AF_XDP sockets (kernel or privileges): skipped"
		exit 77
	fi
	veth_setup || exit $?
	veth_data_pair || exit 1
	# Path MTU 2048: frames of 2142 bytes, in page-sized mbufs past XDP's 256-byte headroom (a veth with an XDP
	# program takes an MTU up to about 3.5 KB).
	ip -n "$ns_a" link set "$data_a" mtu 3400 && ip -n "$ns_b" link set "$data_b" mtu 3400 || exit 1
	# The default stage maps keep each shard's stages on one lcore ("one": the worker), as a shared queue needs.
	run_pair ip netns exec "$ns_a" "$pp" --server 18515 --iters $iters --size $size --mtu 2048 \
		--port net_af_xdp0 --ip 10.99.0.1 --neigh 10.99.0.2,$dmac_b -- "${eal[@]}" --file-prefix rnic-a-$$ \
		--vdev=net_af_xdp0,iface=$data_a :: \
		ip netns exec "$ns_b" "$pp" --client 10.98.0.1:18515 --iters $iters --size $size --mtu 2048 \
		--port net_af_xdp0 --ip 10.99.0.2 --neigh 10.99.0.1,$dmac_a -- "${eal[@]}" --file-prefix rnic-b-$$ \
		--vdev=net_af_xdp0,iface=$data_b
	;;
*)
	echo "usage: two-processes.sh memif|veth|xdp PINGPONG" >&2
	exit 2
	;;
esac
