# Sourced by the two-process tests: a veth pair between two network namespaces, $ns_a (10.98.0.1 on
# $veth_a) and $ns_b (10.98.0.2 on $veth_b), IPv6 off. The names carry the test's PID, so test runs side by
# side (two checkouts on one machine) never share or remove each other's. veth_setup returns 77 (skip)
# without root or namespaces and sets mac_a / mac_b; veth_switch_setup does the same with a switch between
# the two (below); in_ns a|b|s runs a command in a side's namespace or the switch's; veth_cleanup removes
# everything, the processes a test put in veth_pids first.
ns_a=rnic-a-$$
ns_b=rnic-b-$$
veth_a=rva$$
veth_b=rvb$$

in_ns() {	# a|b|s COMMAND...
	local side=$1
	shift
	ip netns exec "$(eval echo "\$ns_$side")" "$@"
}

# The two namespaces, or 77 without root or namespaces.
veth_namespaces() {
	if [ "$(id -u)" -ne 0 ] || ! ip netns add "$ns_a" 2>/dev/null; then
		echo "veth: needs root and network namespaces: skipped"
		return 77
	fi
	ip netns add "$ns_b"
}

# Both sides' addresses, IPv6 off, links up; their MACs.
veth_addresses() {
	for side in a:1:"$ns_a":"$veth_a" b:2:"$ns_b":"$veth_b"; do
		IFS=: read -r _ n ns dev <<<"$side"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		ip -n "$ns" addr add 10.98.0.$n/24 dev "$dev"
		ip -n "$ns" link set "$dev" up
		ip -n "$ns" link set lo up
	done
	mac_a=$(ip -n "$ns_a" -br link show "$veth_a" | awk '{print $3}')
	mac_b=$(ip -n "$ns_b" -br link show "$veth_b" | awk '{print $3}')
}

veth_setup() {
	veth_namespaces || return $?
	ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b"
	veth_addresses
}

# The same two sides joined by a switch: a third namespace, $ns_s, whose bridge br0 has a port to each,
# $port_a towards a and $port_b towards b (a test makes one of them a bottleneck with its qdiscs).
ns_s=rnic-s-$$
port_a=rsa$$
port_b=rsb$$

veth_switch_setup() {
	veth_namespaces || return $?
	ip netns add "$ns_s" &&
		ip link add "$veth_a" netns "$ns_a" type veth peer name "$port_a" netns "$ns_s" &&
		ip link add "$veth_b" netns "$ns_b" type veth peer name "$port_b" netns "$ns_s" &&
		ip -n "$ns_s" link add br0 type bridge &&
		ip -n "$ns_s" link set "$port_a" master br0 && ip -n "$ns_s" link set "$port_b" master br0 || return 1
	ip netns exec "$ns_s" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	for dev in "$port_a" "$port_b" br0; do
		ip -n "$ns_s" link set "$dev" up || return 1
	done
	veth_addresses
}

# A second veth pair between the namespaces with no address, for a port that takes every frame of its
# interface from the kernel (net_af_xdp: its XDP program): $data_a / $data_b, their MACs in dmac_a / dmac_b.
# The first pair carries the kernel's traffic (the TCP exchange). Removed with the namespaces.
data_a=rda$$
data_b=rdb$$

veth_data_pair() {
	ip link add "$data_a" netns "$ns_a" type veth peer name "$data_b" netns "$ns_b" || return 1
	ip -n "$ns_a" link set "$data_a" up
	ip -n "$ns_b" link set "$data_b" up
	dmac_a=$(ip -n "$ns_a" -br link show "$data_a" | awk '{print $3}')
	dmac_b=$(ip -n "$ns_b" -br link show "$data_b" | awk '{print $3}')
}

veth_pids=()

veth_cleanup() {
	for p in "${veth_pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	ip netns del "$ns_s" 2>/dev/null
}
