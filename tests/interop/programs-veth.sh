#!/usr/bin/env bash
# The interop suite's softrnic programs between two softrnic processes on a veth pair (two network
# namespaces, net_af_packet), without the VM: rnic-verbs-check against itself (WRITE, WRITE with immediate,
# SEND with immediate, READ, atomics, both ways, checked on both ends), and rnic-ibv-pingpong over RC, UC
# and UD against a copy of itself that plays the stock tool's part (-E), the checking end once server and
# once client. Needs root (skipped, exit 77, without it).
#   programs-veth.sh RNIC_VERBS_CHECK RNIC_IBV_PINGPONG
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
verbs_check=$1
pingpong=$2
tmp=$(mktemp -d)
pids=()
failed=0

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	veth_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

veth_setup || exit $?
# One lcore each, on a core of its own, every stage on it (manual progress: the programs progress the
# engine whenever they wait), so the kernel's side of the veth keeps CPU time.
eal() {	# SIDE: EAL and engine arguments of side a (10.99.0.1, server) or b (its interface's address)
	if [ "$1" = a ]; then
		echo "-l 0 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix iv-a-$$" \
			"--vdev=net_af_packet0,iface=$veth_a,qpairs=2 -- --port net_af_packet0 --ip 10.99.0.1" \
			"--neigh 10.98.0.2,$mac_b --stages devices $fault_a"
	else
		echo "-l 1 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix iv-b-$$" \
			"--vdev=net_af_packet0,iface=$veth_b,qpairs=2 -- --port net_af_packet0" \
			"--neigh 10.99.0.1,$mac_a --stages devices $fault_b"
	fi
}
fault_a=''	# engine arguments of a side's faults
fault_b=''
want=''		# what one end's output must also hold

# NAME SERVER_ARGS :: CLIENT_ARGS (each: the program and its options; EAL and engine arguments added)
run_case() {
	local name=$1
	local -a srv=() cli=()
	shift
	while [ "$1" != "::" ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	# shellcheck disable=SC2046
	ip netns exec "$ns_a" timeout 60 "${srv[@]}" -- $(eal a) >"$tmp/server.log" 2>&1 &
	pids+=($!)
	local server=$!
	# shellcheck disable=SC2046
	ip netns exec "$ns_b" timeout 60 "${cli[@]}" 10.98.0.1 -- $(eal b) >"$tmp/client.log" 2>&1
	local client_rc=$?
	wait "$server"
	local server_rc=$?
	if [ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] && { [ -z "$want" ] || cat "$tmp"/*.log | grep -q "$want"; }; then
		echo "ok    $name"
	else
		echo "FAIL  $name: server exit $server_rc, client exit $client_rc${want:+, wanted '$want'}"
		sed 's/^/    server: /' "$tmp/server.log"
		sed 's/^/    client: /' "$tmp/client.log"
		failed=$((failed + 1))
	fi
}

run_case "rnic-verbs-check, 2 rounds of 64 KB each way" \
	"$verbs_check" -n 2 :: "$verbs_check" -n 2
for t in rc uc ud; do
	size=4096
	[ $t = ud ] && size=1024
	run_case "rnic-ibv-pingpong -t $t, checking server" \
		"$pingpong" -t $t -s $size -n 50 :: "$pingpong" -t $t -s $size -n 50 -E
	run_case "rnic-ibv-pingpong -t $t, checking client" \
		"$pingpong" -t $t -s $size -n 50 -E :: "$pingpong" -t $t -s $size -n 50
done
# The ACK of the game's last message lost (the checking end drops every ACK it receives; one message each
# way): the stock tool's end has gone after its last completion, so the retries of that send go unanswered.
# The checking end must say so, not fail a game whose every message arrived.
want='"final_ack_lost": true'
fault_a="--fault only=responses,drop=1"
run_case "rnic-ibv-pingpong -t rc, checking server, the last ACK lost" \
	"$pingpong" -t rc -s 4096 -n 1 -T 10 :: "$pingpong" -t rc -s 4096 -n 1 -E
fault_a='' fault_b="--fault only=responses,drop=1"
run_case "rnic-ibv-pingpong -t rc, checking client, the last ACK lost" \
	"$pingpong" -t rc -s 4096 -n 1 -E :: "$pingpong" -t rc -s 4096 -n 1 -T 10
[ $failed -eq 0 ]
