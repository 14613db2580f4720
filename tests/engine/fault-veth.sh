#!/usr/bin/env bash
# The fault matrix (fault_matrix.c) between two softrnic processes on a veth pair in two network namespaces
# (net_af_packet, through the kernel's qdiscs), where the KERNEL makes the faults on each veth (duplicates on
# the receiving veth's ingress, the rest on the sending veth's egress; fault_tc.bpf.c and install_faults say
# why):
#   none        nothing (the veth itself may still drop when the two processes share the cores)
#   uniform     1 % of the frames lost          tc-BPF (fault_tc.bpf.c)
#   burst       1 % lost in bursts of 4         tc-BPF (a Gilbert-Elliott chain)
#   ack-only    10 % of the responses lost      tc-BPF (by the BTH opcode)
#   reorder     2 % held back                   tc-BPF into the slow class of an HTB root qdisc
#   duplicate   2 % sent twice                  tc-BPF (bpf_clone_redirect)
#   corrupt     0.1 % with a bit flipped        tc-BPF
#   rate        a 500 Mbit/s port, 4 KB of queue: tbf (its drops of a full queue are sends the kernel
#               refused, which AF_PACKET sends again: back-pressure, not loss)
#   link-down-long   "ip link set down" for 3 s, far past the retry budget: every QP ends in RETRY_EXC_ERR
#   link-down-short  down for 20 ms, within it: everything completes
# The test looks for what the kernel offers (clang, tc's BPF loader, the qdiscs); a pattern nothing here can
# make is skipped (exit 77), as is the whole test without root. Its rules live only on its own veths in its
# own namespaces, which it removes.
# Usage: fault-veth.sh PATTERN FAULT_MATRIX [fault_matrix options, e.g. --case read:65536:16]
#   RNIC_FAULT_LOSS=refused makes the losses (uniform, burst, ack-only) sends the kernel refuses instead of
#   frames lost on the wire: AF_PACKET keeps each in its TX ring, and the sendto() that met it ends there,
#   the frames behind it waiting for the engine's next burst or its idle kick of the queue.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common/veth-netns.sh
. "$here/../common/veth-netns.sh"
# shellcheck source=../common/tc-bpf.sh
. "$here/../common/tc-bpf.sh"
pattern=$1
matrix=$2
shift 2
loss=${RNIC_FAULT_LOSS:-wire}
case "$loss" in
wire) loss_act=TC_ACT_STOLEN ;;
refused) loss_act=TC_ACT_SHOT ;;
*) echo "fault-veth: RNIC_FAULT_LOSS must be wire or refused, not '$loss'"; exit 1 ;;
esac
tmp=$(mktemp -d)
pids=()
# One lcore per process, each on a core of its own, every stage on it (manual progress: the matrix polls):
# the kernel's side of the veth (softirqs) needs CPU time too, and four polling lcores on two cores starved
# it (frames left in an AF_PACKET TX ring while its socket's send buffer was full went out only with the
# next frame sent, a loss timer later).
eal=(--no-huge -m 512 --no-pci --no-shconf --log-level=error)
# A frame a process sends may wait for the peer's lcore to get a core back (two processes, two cores): a
# 67 ms loss timer (budget 0.5 s) rather than the matrix's 16.8 ms.
qp_opts=(--timeout 14)
engine_opts=(--stages devices)

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	veth_cleanup
	rm -rf "$tmp" "/var/run/dpdk/fm-a-$$" "/var/run/dpdk/fm-b-$$"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

dev_of() { [ "$1" = a ] && echo "$veth_a" || echo "$veth_b"; }

# Whether tc can load a BPF program here (clang, tc's BPF loader, cls_bpf; bpftool reads its counts): tried on
# veth a, then removed.
# clang failing on the program is the program's fault, not the machine's: that fails the test.
bpf_works() {
	command -v clang >/dev/null && command -v tc >/dev/null && command -v bpftool >/dev/null || return 1
	compile_bpf "$tmp/probe.o" || { cat "$tmp/clang.log"; echo "fault-veth: fault_tc.bpf.c does not compile"; exit 1; }
	in_ns a tc qdisc add dev "$veth_a" clsact 2>/dev/null || return 1
	in_ns a tc filter add dev "$veth_a" egress bpf da obj "$tmp/probe.o" sec tc 2>/dev/null
	local rc=$?
	in_ns a tc qdisc del dev "$veth_a" clsact
	return $rc
}


install_bpf() {	# egress|ingress -DNAME=VALUE...: the same program on both veths
	local hook=$1
	shift
	compile_bpf "$tmp/fault.o" "$@" || { cat "$tmp/clang.log"; return 1; }
	for side in a b; do
		in_ns $side tc qdisc add dev "$(dev_of $side)" clsact &&
			in_ns $side tc filter add dev "$(dev_of $side)" $hook bpf da obj "$tmp/fault.o" sec tc ||
			return 1
	done
}

# The slow class SLOW sends frames to: 1:20 at 20 Mbit/s (a 1 KB frame waits 0.4 ms behind each one before
# it), the rest at full speed.
install_htb() {
	for side in a b; do
		local dev
		dev=$(dev_of $side)
		in_ns $side tc qdisc add dev "$dev" root handle 1: htb default 10 r2q 100000 &&
			in_ns $side tc class add dev "$dev" parent 1: classid 1:10 htb rate 40gbit &&
			in_ns $side tc class add dev "$dev" parent 1: classid 1:20 htb rate 20mbit burst 1600 cburst 1600 ||
			return 1
	done
}

install_tbf() {
	for side in a b; do
		in_ns $side tc qdisc add dev "$(dev_of $side)" root tbf rate 500mbit burst 8kb limit 4kb || return 1
	done
}

# Install the pattern's faults; 77 when nothing here can make it. Losses are made on the sending veth's
# egress, where the program can end a frame the sender's send already counted as gone (TC_ACT_STOLEN): a
# loss on the wire. At the receiving veth's ingress a drop loses nothing: the receiver's packet socket takes
# its copy before the ingress filters run (so do nftables' netdev chains, which cannot steal a frame on
# egress either: a drop there is a send the kernel refuses, and AF_PACKET sends the frame again).
install_faults() {
	local bpf=0
	! bpf_works || bpf=1
	echo "fault-veth: $pattern (losses: $loss): tc-BPF $([ $bpf = 1 ] && echo yes || echo no)"
	case "$pattern:$bpf" in
	none:*|link-down-*) return 0 ;;
	rate:*) install_tbf ;;
	uniform:1) install_bpf egress -DDROP="$(threshold 0.01)" -DLOSS_ACT=$loss_act ;;
	burst:1) install_bpf egress -DGE_P="$(threshold 0.0025)" -DGE_R="$(threshold 0.25)" -DLOSS_ACT=$loss_act ;;
	ack-only:1) install_bpf egress -DRESPONSES_ONLY=1 -DDROP="$(threshold 0.1)" -DLOSS_ACT=$loss_act ;;
	reorder:1) install_htb && install_bpf egress -DSLOW="$(threshold 0.02)" ;;
	duplicate:1) install_bpf ingress -DDUPLICATE="$(threshold 0.02)" ;;
	corrupt:1) install_bpf egress -DCORRUPT="$(threshold 0.001)" ;;
	*)
		echo "fault-veth: nothing here makes the pattern '$pattern' (needs clang and tc's BPF loader)"
		return 77
		;;
	esac
}

# What the kernel did: qdisc drops, frames through the slow class, frames the program lost. Printed, and the
# number of frames it lost, refused or held back (for the check that the faults really happened).
kernel_report() {
	local total=0
	for side in a b; do
		local dev s lost
		dev=$(dev_of $side)
		s=$(in_ns $side tc -s qdisc show dev "$dev"; in_ns $side tc -s class show dev "$dev")
		lost=$(bpf_globals "$(bpf_bss_map "$(eval echo "\$ns_$side")" "$dev")" |
			python3 -c 'import json, sys; print(json.load(sys.stdin).get("lost", 0))')
		echo "--- kernel, $dev:"
		echo "$s"
		echo "BPF lost $lost frames"
		total=$((total + lost + $(echo "$s" | awk '/dropped/ { gsub(",", "", $7); n += $7 }
			/class htb 1:20/ { slow = 1 } slow && /Sent/ { n += $4; slow = 0 }
			END { print n + 0 }')))
	done
	echo "fault-veth: the kernel lost, refused or held back $total frames"
	kernel_frames=$total
}

# The two processes; for the link-down patterns the link goes down once traffic flows.
run_pair() {
	local -a client_opts=(--label "$pattern" "${qp_opts[@]}" "$@")
	case "$pattern" in
	link-down-long) client_opts+=(--case write:65536:16 --announce --expect-retry-exceeded --retry-cnt 3) ;;
	link-down-short) client_opts+=(--case write:65536:16 --announce --messages 400) ;;
	esac
	# Bounded below the test's 300 s, so that the logs are shown when a process hangs.
	in_ns a timeout -k 5 240 "$matrix" --server 18515 -- "${eal[@]}" -l 0 --file-prefix fm-a-$$ \
		--vdev=net_af_packet0,iface=$veth_a,qpairs=2,qdisc_bypass=0 -- --port net_af_packet0 --ip 10.99.0.1 \
		--neigh 10.98.0.2,$mac_b "${engine_opts[@]}" >"$tmp/server.log" 2>&1 &
	pids+=($!)
	local server=$!
	in_ns b timeout -k 5 240 "$matrix" --client 10.98.0.1:18515 "${client_opts[@]}" -- "${eal[@]}" -l 1 \
		--file-prefix fm-b-$$ --vdev=net_af_packet0,iface=$veth_b,qpairs=2,qdisc_bypass=0 -- \
		--port net_af_packet0 --neigh 10.99.0.1,$mac_a "${engine_opts[@]}" >"$tmp/client.log" 2>&1 &
	pids+=($!)
	local client=$!
	case "$pattern" in link-down-*) cut_link ;; esac
	wait $client
	local client_rc=$?
	# A client that failed before or during the exchange leaves the server waiting for it: end it now.
	[ $client_rc -eq 0 ] || kill $server 2>/dev/null
	wait $server
	local server_rc=$?
	cat "$tmp/client.log"
	echo "--- server:"
	cat "$tmp/server.log"
	echo "fault-veth: client exit $client_rc, server exit $server_rc"
	[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ]
}

# Once the client says traffic flows: veth a down for a while (3 s: past the budget of 4 tries of 67 ms;
# 20 ms: inside one loss timer), then up.
cut_link() {
	local down=0.02
	[ "$pattern" = link-down-long ] && down=3
	for _ in $(seq 1 300); do
		grep -q "traffic flowing" "$tmp/client.log" 2>/dev/null && break
		sleep 0.1
	done
	# One shell in the namespace does both: "ip netns exec" alone takes 0.1 to 1.6 s on a loaded machine,
	# which made the 20 ms a second and more.
	in_ns a sh -c 't0=$(date +%s%N); ip link set "$0" down; sleep "$1"; ip link set "$0" up
		echo "fault-veth: $0 was down for $1 s ($(( ($(date +%s%N) - t0) / 1000000 )) ms with the commands)"' \
		"$veth_a" "$down"
}

veth_setup || exit $?
install_faults
rc=$?
[ $rc -eq 0 ] || exit $rc
run_pair "$@"
rc=$?
kernel_report
[ $rc -eq 0 ] || exit 1
# The whole matrix makes some 30 000 frames: the faults must have acted (one case alone may be too short).
case "$pattern:$#" in
none:*|link-down-*|duplicate:*|corrupt:*|*:[1-9]*) ;;	# nothing held back or dropped in the kernel's qdiscs
*)
	if [ "$kernel_frames" -eq 0 ]; then
		echo "fault-veth: the kernel's faults did not act on any frame"
		exit 1
	fi
	;;
esac
# Duplicates and flipped bits reach softrnic: its responders answered duplicates, its parsers dropped bad
# ICRCs. Losses cost softrnic resends (drops at the receiver's ingress and refused sends did not: no frame
# was resent).
case "$pattern:$#" in
uniform:0|burst:0|ack-only:0) grep -q '"frames_resent": [1-9]' "$tmp/client.log" ||
	{ echo "fault-veth: softrnic resent no frame: nothing was lost"; exit 1; } ;;
duplicate:0) grep -q '"duplicates": [1-9]' "$tmp/server.log" "$tmp/client.log" ||
	{ echo "fault-veth: no duplicate reached softrnic"; exit 1; } ;;
corrupt:0) grep -q '"rx_drop_bad_icrc": [1-9]' "$tmp/server.log" "$tmp/client.log" ||
	{ echo "fault-veth: no corrupted frame reached softrnic"; exit 1; } ;;
esac
exit 0
