#!/usr/bin/env bash
# Neighbour resolution on a real LAN: a veth pair between two network namespaces (the test creates and removes
# them; needs root: skipped, exit 77, without it).
#   pair     two softrnic processes (rnic-pingpong, net_af_packet) talk RC with no --neigh: each resolves the
#            other's address by ARP. Their addresses (10.99.0.x) are softrnic's alone: no kernel answers.
#   kernel   the Linux kernel in the other namespace learns softrnic's MAC by ARP: it sends a UDP datagram to
#            softrnic's address (which only softrnic owns) and `ip neigh` shows the entry with softrnic's MAC.
#   queues   net_af_packet without qpairs= is refused, when a shard's requester and responder are on two lcores,
#            with a message naming qpairs=2; one with frames larger
#            than the engine's mbufs, or blocks that do not hold whole frames, with arguments that work.
#   jumbo    path MTU 4096 over 9000-byte interfaces (net_af_packet framesz=4352), with ARP.
# Usage: neigh-veth.sh pair|kernel|queues|jumbo PINGPONG
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
kind=$1
pp=$2
eal=(--no-huge -m 512 --no-pci --no-shconf -l 0,1 --log-level=error)
tmp=$(mktemp -d)
trap 'veth_cleanup; rm -rf "$tmp"' EXIT

fail() {
	echo "neigh-veth $kind: $*"
	cat "$tmp"/*.log 2>/dev/null
	exit 1
}

# rnic-pingpong server in ns_a and client in ns_b, no --neigh; extra vdev arguments and engine arguments.
pingpong_pair() {
	local vdev_extra=$1
	shift
	timeout 60 ip netns exec "$ns_a" "$pp" --server 18515 --iters 8 --size 100000 "$@" -- "${eal[@]}" \
		--file-prefix rnic-na-$$ --vdev=net_af_packet0,iface=$veth_a,qpairs=2$vdev_extra -- \
		--port net_af_packet0 --ip 10.99.0.1 >"$tmp/server.log" 2>&1 &
	local server=$!
	veth_pids+=($server)
	timeout 60 ip netns exec "$ns_b" "$pp" --client 10.98.0.1:18515 --iters 8 --size 100000 "$@" -- \
		"${eal[@]}" --file-prefix rnic-nb-$$ --vdev=net_af_packet0,iface=$veth_b,qpairs=2$vdev_extra -- \
		--port net_af_packet0 --ip 10.99.0.2 >"$tmp/client.log" 2>&1
	local client_rc=$?
	wait "$server"
	local server_rc=$?
	[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] || fail "server exit $server_rc, client exit $client_rc"
	grep -q '"verified": true' "$tmp/client.log" && grep -q '"verified": true' "$tmp/server.log" ||
		fail "data not verified"
}

veth_setup || exit $?
case "$kind" in
pair)
	pingpong_pair ""
	echo "two softrnic processes talked RC over ARP-resolved MACs"
	;;
jumbo)
	ip -n "$ns_a" link set "$veth_a" mtu 9000
	ip -n "$ns_b" link set "$veth_b" mtu 9000
	pingpong_pair ",framesz=4352,blocksz=69632" --mtu 4096
	grep -q '"mtu": 4096' "$tmp/client.log" || fail "the client did not run at MTU 4096"
	echo "RoCE MTU 4096 over 9000-byte veths"
	# net_af_packet's default frames (2048 bytes) would truncate 4096-byte payloads: the port's MTU is
	# lowered to what they hold, and the log says how to get 4096.
	timeout 5 ip netns exec "$ns_a" "$pp" --server 18515 -- "${eal[@]}" --log-level=info \
		--file-prefix rnic-na-$$ --vdev=net_af_packet0,iface=$veth_a,qpairs=2 -- --port net_af_packet0 \
		--ip 10.99.0.1 >"$tmp/default.log" 2>&1
	grep -q "net_af_packet frames hold 1982 bytes: RoCE MTU 1024 (MTU 4096 needs framesz=4352" \
		"$tmp/default.log" || fail "default frames: no lowered MTU"
	;;
kernel)
	# softrnic owns 10.98.0.11 on veth_a (the kernel there has 10.98.0.1: it does not answer for .11).
	timeout 60 ip netns exec "$ns_a" "$pp" --server 18515 -- "${eal[@]}" --file-prefix rnic-na-$$ \
		--vdev=net_af_packet0,iface=$veth_a,qpairs=2 -- --port net_af_packet0 --ip 10.98.0.11 \
		>"$tmp/server.log" 2>&1 &
	veth_pids+=($!)
	state=""
	for _ in $(seq 1 50); do
		ip netns exec "$ns_b" python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"hello", ("10.98.0.11", 9))' 2>/dev/null
		sleep 0.2
		state=$(ip -n "$ns_b" neigh show 10.98.0.11 dev "$veth_b")
		echo "$state" | grep -qE "lladdr $mac_a (REACHABLE|STALE|DELAY|PROBE)" && break
	done
	echo "kernel's entry: $state"
	echo "$state" | grep -qE "lladdr $mac_a (REACHABLE|STALE|DELAY|PROBE)" ||
		fail "the kernel did not learn softrnic's MAC $mac_a"
	;;
queues)
	# One queue pair serves a shard whose requester and responder share an lcore; these are on two.
	ip netns exec "$ns_a" "$pp" --server 18515 -- "${eal[@]}" --file-prefix rnic-na-$$ \
		--vdev=net_af_packet0,iface=$veth_a -- --port net_af_packet0 --ip 10.99.0.1 \
		--stages doorbell=1,requester=1,completer=1,parser=1,responder=0 >"$tmp/server.log" 2>&1 &&
		fail "started"
	grep -q "net_af_packet needs qpairs=2 (the engine uses 2 queue pairs" "$tmp/server.log" ||
		fail "no message naming qpairs=2"
	echo "refused: $(grep qpairs "$tmp/server.log")"
	# Ring frames larger than the engine's mbufs: refused with the framesz that fits.
	ip netns exec "$ns_a" "$pp" --server 18515 -- "${eal[@]}" --file-prefix rnic-na-$$ \
		--vdev=net_af_packet0,iface=$veth_a,qpairs=2,framesz=8192,blocksz=8192 -- --port net_af_packet0 \
		--ip 10.99.0.1 >"$tmp/server.log" 2>&1 && fail "started with framesz=8192"
	grep -q "framesz=8192 does not fit the engine's mbufs (4352 bytes): give framesz=4352" "$tmp/server.log" ||
		fail "no message naming framesz=4352"
	echo "refused: $(grep framesz "$tmp/server.log")"
	# Blocks that do not hold whole frames: the PMD would look for frames where the kernel does not put them.
	ip netns exec "$ns_a" "$pp" --server 18515 -- "${eal[@]}" --file-prefix rnic-na-$$ \
		--vdev=net_af_packet0,iface=$veth_a,qpairs=2,framesz=4352,blocksz=8192 -- --port net_af_packet0 \
		--ip 10.99.0.1 >"$tmp/server.log" 2>&1 && fail "started with blocksz=8192"
	grep -q "blocksz=8192 is not a multiple of framesz=4352" "$tmp/server.log" || fail "no message on blocksz"
	echo "refused: $(grep blocksz "$tmp/server.log")"
	;;
*)
	echo "usage: neigh-veth.sh pair|kernel|queues|jumbo PINGPONG" >&2
	exit 2
	;;
esac
