# Sourced by the two-process tests: a veth pair between two network namespaces, rnic-test-a (10.98.0.1 on
# rnic-va) and rnic-test-b (10.98.0.2 on rnic-vb), IPv6 off. veth_setup returns 77 (skip) without root or
# namespaces and sets mac_a / mac_b; veth_cleanup removes everything.
veth_setup() {
	if [ "$(id -u)" -ne 0 ] || ! ip netns add rnic-test-a 2>/dev/null; then
		echo "veth: needs root and network namespaces: skipped"
		return 77
	fi
	ip netns add rnic-test-b
	ip link add rnic-va netns rnic-test-a type veth peer name rnic-vb netns rnic-test-b
	for ns in a b; do
		n=$([ $ns = a ] && echo 1 || echo 2)
		ip netns exec rnic-test-$ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		ip -n rnic-test-$ns addr add 10.98.0.$n/24 dev rnic-v$ns
		ip -n rnic-test-$ns link set rnic-v$ns up
		ip -n rnic-test-$ns link set lo up
	done
	mac_a=$(ip -n rnic-test-a -br link show rnic-va | awk '{print $3}')
	mac_b=$(ip -n rnic-test-b -br link show rnic-vb | awk '{print $3}')
}

veth_cleanup() {
	ip netns del rnic-test-a 2>/dev/null
	ip netns del rnic-test-b 2>/dev/null
}
