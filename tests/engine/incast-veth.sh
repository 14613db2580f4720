#!/usr/bin/env bash
# N:1 incast through the KERNEL's bottleneck (doc/congestion.md, "The same over veth"): rnic-perf's client
# keeps 16 WRITEs of 64 KB queued on each of 4 QPs (SENDERS) (traffic class 106: ECT(0)) to its server, over
# net_af_packet, through a switch: a third network namespace bridging two veth pairs, whose port towards the
# server is the bottleneck: a tbf root qdisc (200 Mbit/s, a 530 KB queue: the engine's modelled link of
# `incast`, 128 frames of 4 KB, in bytes) and, in front of it, tc-BPF that marks CE by the queue's depth
# (fault_tc.bpf.c's MARK_*: RED from 33 KB to 200 KB, pmax 0.2: `incast`'s 8 and 48 frames), since no qdisc
# here marks ECN. The queue is the switch's, not the sender's: a qdisc on the sending veth would hold the
# sender back through its socket's buffer instead of filling and dropping. The server (the notification
# point) answers marks with CNPs, the client's QPs (reaction points) cut their rates.
#   on   DCQCN (incast's parameters scaled to this link, below): after a warm-up of 1.5 s (every QP's first
#        window arrives at once), the depth 99 % of the frames found is below kmax, tbf lost nothing, and the
#        wire rate from 2 s to the end of the run is at least 0.9 of the link's, per second the two processes'
#        lcores could run (their threads' schedstat: 1 less the time one waited for a CPU and the hypervisor's
#        steal; a run where they could for less than 0.3 of the time is a miss)
#   off  --cc none: the queue builds to the limit and tbf drops frames
# Skipped (77) without root, namespaces, clang, tc's BPF loader or bpftool.
# Usage: incast-veth.sh on|off RNIC_PERF [CC_SPEC [SENDERS]]   (SENDERS: QPs, 4 by default)
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common/veth-netns.sh
. "$here/../common/veth-netns.sh"
# shellcheck source=../common/tc-bpf.sh
. "$here/../common/tc-bpf.sh"
mode=$1
perf=$2
rate_mbit=200
# DCQCN's parameters: `incast`'s for its 500 Mbit/s link (doc/congestion.md) scaled to this one, as they were
# scaled from the paper's 40 Gbit/s: the periods (alpha's, the increase timer's, the cut's monitor period)
# by 500 / rate, the line rate the link's. CC_SPEC replaces them.
period_us=$((8800 * 500 / rate_mbit))
cc=${3:-rp_max_rate=$rate_mbit,rp_dce_tcp_rtt=$period_us,rp_time_reset=$period_us,rp_rate_reduce_monitor_period=$period_us,rp_ai_rate=1,rp_hai_rate=5}
[ "$mode" = off ] && cc=none
senders=${4:-4}
tmp=$(mktemp -d)
kmin=33000
kmax=200000
limit=530000
seconds=4
warmup=1.5

trap 'veth_cleanup; rm -rf "$tmp" "/var/run/dpdk/iv-a-$$" "/var/run/dpdk/iv-b-$$"' EXIT
trap 'exit 1' INT TERM

for tool in clang tc bpftool; do
	command -v $tool >/dev/null || { echo "incast-veth: no $tool here: skipped"; exit 77; }
done
veth_switch_setup || exit $?

# The bottleneck: the switch's egress towards the server
compile_bpf "$tmp/mark.o" -DMARK_RATE=$((rate_mbit * 125000)) -DMARK_KMIN=$kmin -DMARK_KMAX=$kmax \
	-DMARK_PMAX="$(threshold 0.2)" -DMARK_LIMIT=$limit ||
	{ cat "$tmp/clang.log"; echo "incast-veth: fault_tc.bpf.c does not compile"; exit 1; }
in_ns s tc qdisc add dev "$port_a" root tbf rate ${rate_mbit}mbit burst 8kb limit $limit || exit 1
in_ns s tc qdisc add dev "$port_a" clsact || { echo "incast-veth: no clsact qdisc: skipped"; exit 77; }
in_ns s tc filter add dev "$port_a" egress bpf da obj "$tmp/mark.o" sec tc ||
	{ echo "incast-veth: tc cannot load the BPF program here: skipped"; exit 77; }
map=$(bpf_bss_map "$ns_s" "$port_a")
[ -n "$map" ] || { echo "incast-veth: the program's map of its globals not found"; exit 1; }

# The marking queue's counts, JSON: {"frames", "marked", "over_limit", "hist", ...}
vq() {
	bpf_globals "$map" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["vq"]))'
}

eal=(--no-huge -m 512 --no-pci --log-level=error)

# tbf's drops at the bottleneck so far
tbf_dropped() {
	in_ns s tc -s qdisc show dev "$port_a" | awk '/qdisc tbf/ { t = 1 } t && /dropped/ { gsub(",", "", $7); print $7; exit }'
}

# The two processes' lcores' schedstat and the hypervisor's steal, every 0.25 s until killed
cpu_samples() {
	exec python3 "$here/../common/cpu_share.py" sample "file-prefix iv-[ab]-$$ "
}

# One run of the pair, its figures checked (check.py below): 0 when they meet the mode's goals.
attempt() {
	local n=$1 port=$((20000 + ($$ + $1) % 20000)) server client client_rc server_rc d0
	in_ns a timeout -k 5 60 "$perf" --server -p $port --port net_af_packet0 --ip 10.99.0.1 \
		--neigh 10.98.0.2,"$mac_b" --stages one -- -l 0,1 "${eal[@]}" --file-prefix iv-a-$$ \
		--vdev=net_af_packet0,iface=$veth_a,qpairs=1,qdisc_bypass=0 -- --cc "$cc" >"$tmp/server.log" 2>&1 &
	server=$!
	veth_pids+=($server)
	for _ in $(seq 1 100); do
		in_ns a ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.1
	done
	in_ns b timeout -k 5 60 "$perf" 10.98.0.1 -p $port -o write -s 65536 -q $senders -t 16 -D $seconds \
		--tclass 106 --json --port net_af_packet0 --neigh 10.99.0.1,"$mac_a" --stages devices -- \
		--lcores 0@0 "${eal[@]}" --file-prefix iv-b-$$ \
		--vdev=net_af_packet0,iface=$veth_b,qpairs=1,qdisc_bypass=0 -- --cc "$cc" >"$tmp/client.log" 2>&1 &
	client=$!
	veth_pids+=($client)
	cpu_samples >"$tmp/cpu.txt" &
	sampler=$!
	# The warm-up: from the first frame (every QP's first window arrives at once, before any CNP)
	vq >"$tmp/vq-start.json"
	for _ in $(seq 1 300); do
		vq >"$tmp/vq0.json"
		cmp -s "$tmp/vq-start.json" "$tmp/vq0.json" || break
		sleep 0.1
	done
	sleep $warmup
	vq >"$tmp/vq0.json"
	d0=$(tbf_dropped)
	wait $client
	client_rc=$?
	kill $sampler 2>/dev/null
	wait $sampler 2>/dev/null
	vq >"$tmp/vq1.json"
	wait $server
	server_rc=$?
	echo "=== run $n"
	grep -v '^{' "$tmp/client.log"
	grep -h '^{' "$tmp/client.log" | cut -c1-300
	echo "--- server:"
	grep -v '^{' "$tmp/server.log" | tail -3
	echo "--- the switch port:"
	in_ns s tc -s qdisc show dev "$port_a"
	if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
		echo "incast-veth: client exit $client_rc, server $server_rc"
		return 1
	fi
	python3 "$tmp/check.py" "$mode" "$tmp" $kmax $rate_mbit $(($(tbf_dropped) - d0)) "$here/../common"
}

cat >"$tmp/check.py" <<'EOF'
import json, re, sys
sys.path.insert(0, sys.argv[6])
import cpu_share
mode, tmp, kmax, rate, dropped = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
v0, v1 = (json.load(open(f"{tmp}/vq{i}.json")) for i in (0, 1))
hist = [b - a for a, b in zip(v0["hist"], v1["hist"])]
frames = sum(hist)
bucket = 4096                      # fault_tc.bpf.c's VQ_BUCKET


def pct(p):
    """The depth below which a share p of the frames found the queue: its bucket's upper edge."""
    need, run = p * frames, 0
    for i, n in enumerate(hist):
        run += n
        if run >= need:
            return (i + 1) * bucket
    return len(hist) * bucket


log = open(f"{tmp}/client.log").read()
res = [json.loads(line) for line in log.splitlines() if line.startswith("{")][-1]
# The goodput from rnic-perf's report each second ("rnic-perf: 2 s, 1292 messages, ..."), from the one at 2 s
# (past the warm-up) to the last; the wire: 64 KB in frames of the path MTU with 58 B of headers each
# (Ethernet, IPv4, UDP, BTH, ICRC), and the first one's RETH
ticks = [(int(t), int(m)) for t, m in re.findall(r"^rnic-perf: (\d+) s, (\d+) messages", log, re.M)]
(t0, m0), (t1, m1) = next(x for x in ticks if x[0] >= 2), ticks[-1]
frames_per = -(-65536 // res["mtu"])
wire = (m1 - m0) * (65536 + frames_per * 58 + 16) * 8 / (t1 - t0) / 1e6
marked = v1["marked"] - v0["marked"]
share = cpu_share.share(cpu_share.read(f"{tmp}/cpu.txt"))
print(f"incast-veth {mode}: {frames} frames after the warm-up, depth p50 {pct(0.5)} B, p99 {pct(0.99)} B "
      f"(kmax {kmax}), {marked} marked, tbf dropped {dropped} (after the warm-up); wire {wire:.0f} Mbit/s of {rate:.0f} "
      f"({wire / rate:.3f}, from {t0} s to {t1} s); the lcores could run {share:.2f} of the time")
if mode == "on":
    ok = frames > 0 and pct(0.99) < kmax and dropped == 0 and marked > 0 and share >= 0.3 and \
        wire >= 0.9 * rate * min(1.0, share)
else:
    ok = frames > 0 and dropped > 0 and pct(0.99) >= kmax
sys.exit(0 if ok else 1)
EOF

# With DCQCN, up to three runs: the machine's other load can take a process's lcore for long enough to stall
# its CNPs or its sending (doc/congestion.md); every run is printed.
tries=1
[ "$mode" = on ] && tries=3
for n in $(seq 1 $tries); do
	if attempt "$n"; then
		echo "1 passed, 0 failed"
		exit 0
	fi
done
echo "0 passed, 1 failed"
exit 1
