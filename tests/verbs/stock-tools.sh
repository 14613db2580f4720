#!/usr/bin/env bash
# Debian's own, unmodified ibverbs-utils on softrnic through libsoftrnic-verbs (softrnic-run):
#   devices    ibv_devices and ibv_devinfo -v on the embedded default: the devices listed, their attributes
#              checked field by field; RNIC_DAEMON set: a clear refusal
#   pingpong   ibv_rc_pingpong, ibv_uc_pingpong and ibv_ud_pingpong between two processes in two network
#              namespaces joined by a veth pair (each engine on net_af_packet; the tools' own TCP exchange
#              runs over the same veth between the namespaces' kernel addresses), exit status and reported
#              figures checked. Needs root (skipped, exit 77, without it).
# Usage: stock-tools.sh devices|pingpong SOFTRNIC_RUN
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
what=$1
run=(sh "$2")
tmp=$(mktemp -d)
failed=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ "$what" != pingpong ] || veth_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for tool in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong; do
	command -v $tool >/dev/null || { echo "$tool missing (ibverbs-utils): skipped"; exit 77; }
done

check() {	# NAME, then a command that succeeds when the check holds
	local name=$1
	shift
	if "$@"; then
		echo "ok    $name"
	else
		echo "FAIL  $name"
		failed=$((failed + 1))
	fi
}

# A line of FILE matching the extended regex RE
has() { grep -Eq "$2" "$1"; }

devices() {
	local out=$tmp/devinfo.txt
	# One lcore, the stages on it: the tools make no traffic, and each run leaves the other core alone.
	export SOFTRNIC_ARGS="-l 0 --no-huge -m 256 --no-pci --no-shconf --log-level=error --file-prefix vd-$$ -- --stages devices"
	timeout 60 "${run[@]}" ibv_devices >"$tmp/devices.txt" 2>&1
	check "ibv_devices exits 0" test $? -eq 0
	check "ibv_devices lists rnic0 and rnic1 with their GUIDs" \
		sh -c "grep -Eq '^[[:space:]]+rnic0[[:space:]]+[0-9a-f]{16}\$' '$tmp/devices.txt' &&
		       grep -Eq '^[[:space:]]+rnic1[[:space:]]+[0-9a-f]{16}\$' '$tmp/devices.txt'"
	timeout 60 "${run[@]}" ibv_devinfo -v -d rnic0 >"$out" 2>&1
	check "ibv_devinfo -v -d rnic0 exits 0" test $? -eq 0
	check "hca_id rnic0" has "$out" '^hca_id:[[:space:]]+rnic0$'
	check "transport InfiniBand (0)" has "$out" 'transport:[[:space:]]+InfiniBand \(0\)$'
	check "node_guid as ibv_devices lists it" has "$out" \
		"node_guid:[[:space:]]+$(awk '$1 == "rnic0" { g = $2; printf "%s:%s:%s:%s", substr(g, 1, 4), substr(g, 5, 4), substr(g, 9, 4), substr(g, 13, 4) }' "$tmp/devices.txt")\$"
	check "phys_port_cnt 1" has "$out" 'phys_port_cnt:[[:space:]]+1$'
	check "max_qp, max_qp_wr, max_cqe, max_mr, max_pd above 0" sh -c \
		"for f in max_qp max_qp_wr max_cqe max_mr max_pd; do grep -Eq \"^[[:space:]]+\$f:[[:space:]]+[1-9][0-9]*\$\" '$out' || exit 1; done"
	check "port 1 PORT_ACTIVE (4)" has "$out" 'state:[[:space:]]+PORT_ACTIVE \(4\)$'
	check "active_mtu a valid MTU" has "$out" 'active_mtu:[[:space:]]+(1024|2048|4096) \([345]\)$'
	check "link_layer Ethernet" has "$out" 'link_layer:[[:space:]]+Ethernet$'
	check "GID[0] an IPv4-mapped address, RoCE v2" has "$out" \
		'GID\[  0\]:[[:space:]]+::ffff:[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+, RoCE v2$'
	check "no port 2" sh -c "! grep -q 'port:[[:space:]]2$' '$out'"
	RNIC_DAEMON=/nonexistent.sock timeout 60 "${run[@]}" ibv_devices >"$tmp/daemon.txt" 2>&1
	check "RNIC_DAEMON set: ibv_devices fails" test $? -ne 0
	check "RNIC_DAEMON set: says client mode is not supported" has "$tmp/daemon.txt" 'RNIC_DAEMON is set.*not supported'
	unset SOFTRNIC_ARGS
}

# SIDE: the engine arguments of side a (the server: engine address 10.99.0.1, as in the interop suite's
# programs-veth.sh) or b (the client: its interface's address); one lcore each, every stage on it (the
# tools poll their CQs, which progresses the engine).
softrnic_args() {
	if [ "$1" = a-worker ]; then
		# the stages on a worker lcore (cpu 1): for a passive end that does not poll (perftest's server)
		echo "-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix vp-a-$$" \
			"--vdev=net_af_packet0,iface=$veth_a,qpairs=2 -- --port net_af_packet0 --ip 10.99.0.1" \
			"--neigh 10.98.0.2,$mac_b"
	elif [ "$1" = b-cpu0 ]; then
		echo "--lcores 0@0 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix vp-b-$$" \
			"--vdev=net_af_packet0,iface=$veth_b,qpairs=2 -- --port net_af_packet0" \
			"--neigh 10.99.0.1,$mac_a --stages devices"
	elif [ "$1" = a ]; then
		echo "-l 0 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix vp-a-$$" \
			"--vdev=net_af_packet0,iface=$veth_a,qpairs=2 -- --port net_af_packet0 --ip 10.99.0.1" \
			"--neigh 10.98.0.2,$mac_b --stages devices"
	else
		echo "-l 1 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix vp-b-$$" \
			"--vdev=net_af_packet0,iface=$veth_b,qpairs=2 -- --port net_af_packet0" \
			"--neigh 10.99.0.1,$mac_a --stages devices"
	fi
}

# TOOL SIZE ITERS: server in namespace a, client in b, GID index 0 (RoCE v2: the engine's IPv4 address)
pingpong() {
	local tool=$1 size=$2 iters=$3 port=$((18000 + RANDOM % 1000))
	local -a opts=(-g 0 -s "$size" -n "$iters" -p "$port")
	ip netns exec "$ns_a" env SOFTRNIC_ARGS="$(softrnic_args a)" timeout 60 "${run[@]}" "$tool" "${opts[@]}" \
		>"$tmp/server.txt" 2>&1 &
	local server=$!
	pids+=("$server")
	# the server's TCP port listening before the client connects (the tools do not retry)
	for _ in $(seq 100); do
		ip netns exec "$ns_a" ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.1
	done
	ip netns exec "$ns_b" env SOFTRNIC_ARGS="$(softrnic_args b)" timeout 60 "${run[@]}" "$tool" "${opts[@]}" \
		10.98.0.1 >"$tmp/client.txt" 2>&1
	local client_rc=$?
	wait "$server"
	local server_rc=$?
	check "$tool -s $size -n $iters: server exits 0" test $server_rc -eq 0
	check "$tool -s $size -n $iters: client exits 0" test $client_rc -eq 0
	for side in server client; do
		# "<bytes> bytes in <s> seconds = <rate> Mbit/sec" and "<iters> iters in <s> seconds = <t> usec/iter"
		check "$tool: the $side reports $((2 * size * iters)) bytes and $iters iters" awk -v b=$((2 * size * iters)) -v n="$iters" '
			$2 == "bytes" && $3 == "in" && $1 == b && $5 == "seconds" && $7 + 0 > 0 && $8 == "Mbit/sec" { ok++ }
			$2 == "iters" && $3 == "in" && $1 == n && $5 == "seconds" && $7 + 0 > 0 && $8 == "usec/iter" { ok++ }
			END { exit ok == 2 ? 0 : 1 }' "$tmp/$side.txt"
		check "$tool: the $side's local address a RoCE v2 GID" has "$tmp/$side.txt" \
			'local address: .*GID ::ffff:10\.9[89]\.0\.[12]'
	done
	grep -h -E ' (bytes|iters) in ' "$tmp/server.txt" | sed 's/^/      server: /'
	grep -h -E ' (bytes|iters) in ' "$tmp/client.txt" | sed 's/^/      client: /'
	if [ $failed -ne 0 ]; then
		sed 's/^/    server: /' "$tmp/server.txt"
		sed 's/^/    client: /' "$tmp/client.txt"
	fi
}

case $what in
devices)
	devices
	;;
pingpong)
	veth_setup || exit $?
	pingpong ibv_rc_pingpong 4096 200
	pingpong ibv_uc_pingpong 4096 200
	pingpong ibv_ud_pingpong 1024 200
	;;
perftest)
	veth_setup || exit $?
	port=$((18000 + RANDOM % 1000))
	ip netns exec "$ns_a" env SOFTRNIC_ARGS="$(softrnic_args a-worker)" timeout 60 "${run[@]}" ib_write_bw -x 0 -F \
		--use_old_post_send -s 65536 -n 200 -p $port >"$tmp/server.txt" 2>&1 &
	server=$!
	sleep 2
	ip netns exec "$ns_b" env SOFTRNIC_ARGS="$(softrnic_args b-cpu0)" timeout 60 "${run[@]}" ib_write_bw -x 0 -F \
		--use_old_post_send -s 65536 -n 200 -p $port 10.98.0.1 >"$tmp/client.txt" 2>&1
	echo "client exit $?"
	wait $server
	echo "server exit $?"
	sed 's/^/    server: /' "$tmp/server.txt"
	sed 's/^/    client: /' "$tmp/client.txt"
	;;
*)
	echo "usage: stock-tools.sh devices|pingpong SOFTRNIC_RUN" >&2
	exit 2
	;;
esac
[ $failed -eq 0 ]
