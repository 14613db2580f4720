# Sourced by the two-process tests: a veth pair between two network namespaces, $ns_a (10.98.0.1 on
# $veth_a) and $ns_b (10.98.0.2 on $veth_b), IPv6 off. The names carry the test's PID, so test runs side by
# side (two checkouts on one machine) never share or remove each other's. veth_setup returns 77 (skip)
# without root or namespaces and sets mac_a / mac_b; veth_cleanup removes everything, the processes a test
# put in veth_pids first.
ns_a=rnic-a-$$
ns_b=rnic-b-$$
veth_a=rva$$
veth_b=rvb$$

veth_setup() {
	if [ "$(id -u)" -ne 0 ] || ! ip netns add "$ns_a" 2>/dev/null; then
		echo "veth: needs root and network namespaces: skipped"
		return 77
	fi
	ip netns add "$ns_b"
	ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b"
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
}
