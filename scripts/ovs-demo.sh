#!/usr/bin/env bash
# rnicd beside Open vSwitch with DPDK (doc/deploy.md): a private OVS-DPDK (its own database, run and log
# directories under a temporary directory; the system's OVS is never touched) on no hugepages, a netdev
# bridge with a dpdkvhostuserclient port per rnicd, two rnicd on those ports (net_virtio_user, the vhost
# socket's server), two tenants with a GID each on both, their RC WRITEs through the bridge; then OVS's flow
# and port counters beside softrnic's, and everything torn down. As root (DPDK, setpriv).
#   scripts/ovs-demo.sh [--build DIR] [--seconds N] [--drop]
#     --build DIR   softrnic's build directory (build)
#     --seconds N   how long the tenants send (5)
#     --drop        halfway, an OpenFlow rule drops tenant A's GID: its QP fails, tenant B goes on
#     --bench N     instead of the tenants: N rounds of RC WRITE 64 KB and 64 B (one QP, --seconds each)
#                   through the bridge, then through a direct vhost-user pair (two more rnicd: net_virtio_user
#                   and net_vhost on one socket), and the medians' ratios (doc/performance.md)
# Exit 0 when both tenants verified every WRITE (with --drop: tenant A's QP ended in a retry error and B
# verified every WRITE), 1 otherwise, 77 where OVS-DPDK is not installed or its DPDK does not initialise.
set -euo pipefail
build=build
seconds=5
drop=0
bench=0
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--drop) drop=1; shift ;;
	--bench) bench=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--seconds N] [--drop | --bench N]" >&2; exit 2 ;;
	esac
done
vswitchd=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
[ -x "$vswitchd" ] || { echo "ovs-demo: $vswitchd missing: apt-get install openvswitch-switch-dpdk" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "ovs-demo: run as root" >&2; exit 1; }
rnicd=$build/app/rnicd/rnicd
perf=$build/app/rnic-perf/rnic-perf

tmp=$(mktemp -d /tmp/ovs-demo-XXXXXX)
export OVS_RUNDIR=$tmp OVS_DBDIR=$tmp OVS_LOGDIR=$tmp OVS_SYSCONFDIR=$tmp
db=unix:$tmp/db.sock
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp" /var/run/dpdk/ovs-demo-$$ /var/run/dpdk/ovs-demo-rnicd?-$$	# the DPDK runtime directories
}
trap cleanup EXIT
vsctl() { ovs-vsctl --db="$db" --timeout=20 "$@"; }
say() { printf '\n== %s\n' "$*"; }

say "OVS-DPDK: ovsdb-server and ovs-vswitchd-dpdk in $tmp, DPDK on no hugepages"
ovsdb-tool create "$tmp/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$tmp/conf.db" --remote=punix:"$tmp/db.sock" --pidfile="$tmp/ovsdb-server.pid" \
	--unixctl="$tmp/ovsdb-server.ctl" >"$tmp/ovsdb-server.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$tmp/db.sock" ] && break; sleep 0.1; done
vsctl --no-wait init
# --legacy-mem: without it OVS adds --in-memory, which --no-huge refuses.
vsctl --no-wait set Open_vSwitch . other_config:dpdk-init=true \
	"other_config:dpdk-extra=--no-huge --legacy-mem -m 512 --no-pci --file-prefix ovs-demo-$$" \
	other_config:dpdk-lcore-mask=0x1 other_config:pmd-cpu-mask=0x2 other_config:pmd-maxsleep=500
"$vswitchd" "$db" --pidfile="$tmp/ovs-vswitchd.pid" --unixctl="$tmp/vswitchd.ctl" \
	--log-file="$tmp/ovs-vswitchd.log" >"$tmp/ovs-vswitchd.out" 2>&1 &
pids+=($!)
for _ in $(seq 150); do [ "$(vsctl get Open_vSwitch . dpdk_initialized 2>/dev/null)" = true ] && break; sleep 0.2; done
[ "$(vsctl get Open_vSwitch . dpdk_initialized)" = true ] ||
	{ echo "ovs-demo: OVS's DPDK did not initialise:"; tail -20 "$tmp/ovs-vswitchd.log"; exit 77; }
vsctl get Open_vSwitch . dpdk_version
vsctl add-br br0 -- set bridge br0 datapath_type=netdev

# start_rnicd H VDEV PORT IP: rnicd H on a port given by its vdev, GID 1 tenant A's and GID 2 tenant B's.
start_rnicd() {
	"$rnicd" --socket "$tmp/rnicd$1.sock" --tenant "gid=100 gids 1" --tenant "gid=65534 gids 2" -- \
		-l 0,1 --no-huge -m 512 --no-pci --file-prefix "ovs-demo-rnicd$1-$$" --log-level=lib.eal:warning \
		--vdev "$2" -- --port "$3" --ip "$4" --idle-sleep 100 >"$tmp/rnicd$1.log" 2>&1 &
	pids+=($!)
}
wait_rnicd() {
	for _ in $(seq 300); do grep -q "serving on" "$tmp/rnicd$1.log" && break; sleep 0.1; done
	grep "serving on" "$tmp/rnicd$1.log" || { cat "$tmp/rnicd$1.log"; exit 1; }
}

say "two rnicd, each on a dpdkvhostuserclient port; GID 1 is tenant A's (group 100), GID 2 tenant B's (65534)"
for h in 0 1; do
	vsctl add-port br0 vhu$h -- set Interface vhu$h type=dpdkvhostuserclient \
		options:vhost-server-path="$tmp/vhu$h.sock" mtu_request=9000
	start_rnicd $h "net_virtio_user0,path=$tmp/vhu$h.sock,server=1,queues=2,mac=02:00:00:23:00:0$h" \
		net_virtio_user0 "10.23.0.$((h + 1)),10.23.1.$((h + 1)),10.23.2.$((h + 1))"
done
for h in 0 1; do wait_rnicd $h; done
vsctl show
for g in 1 2; do ovs-ofctl add-flow br0 "priority=100,ip,nw_src=10.23.$g.1,actions=NORMAL"; done

tenant() {	# tenant GROUP GID_INDEX TCP_PORT DAEMON ARGS...
	local group=$1 x=$2 port=$3 daemon=$4
	shift 4
	RNIC_DAEMON=$tmp/rnicd$daemon.sock setpriv --regid="$group" --clear-groups taskset -c 0 \
		"$perf" -x "$x" -p "$port" -D "$seconds" "$@"
}
if [ "$bench" -gt 0 ]; then
	say "a direct vhost-user pair: rnicd 2 (net_virtio_user, the server) and rnicd 3 (net_vhost)"
	start_rnicd 2 "net_virtio_user0,path=$tmp/direct.sock,server=1,queues=2,mac=02:00:00:23:00:02" \
		net_virtio_user0 10.24.0.1,10.24.1.1
	start_rnicd 3 "net_vhost0,iface=$tmp/direct.sock,client=1,queues=2" net_vhost0 10.24.0.2,10.24.1.2
	wait_rnicd 2
	wait_rnicd 3
	# one FROM TO SIZE: tenant A's WRITE from rnicd FROM to rnicd TO; prints Gb/s and Mpps
	one() {
		tenant 100 1 18820 "$2" --server -o write -s "$3" >/dev/null 2>&1 &
		local server=$!
		sleep 0.5
		tenant 100 1 18820 "$1" -o write -s "$3" --report_gbits 127.0.0.1 2>/dev/null |
			awk -v s="$3" '$1 == s && NF == 5 { print $4, $5 }'
		wait $server || true
	}
	for r in $(seq "$bench"); do
		for s in 65536 64; do
			echo "round $r size $s ovs $(one 0 1 $s) direct $(one 2 3 $s)"
		done
	done | tee "$tmp/bench.txt"
	say "medians: WRITE through OVS-DPDK / through the direct pair"
	python3 - "$tmp/bench.txt" <<'EOF'
import statistics, sys
runs = [line.split() for line in open(sys.argv[1])]
if any(len(r) != 10 for r in runs):
    sys.exit("ovs-demo: a run gave no figure (a WRITE failed): " + "; ".join(" ".join(r) for r in runs))
for size, unit, col in (("65536", "Gb/s", 0), ("64", "Mpps", 1)):
    ovs = statistics.median(float(r[5 + col]) for r in runs if r[3] == size)
    direct = statistics.median(float(r[8 + col]) for r in runs if r[3] == size)
    print(f"WRITE {size} B: OVS-DPDK {ovs:.3f} {unit}, direct vhost-user {direct:.3f} {unit}, "
          f"ratio {ovs / direct:.2f}")
EOF
	exit 0
fi
say "tenants A and B: rnic-perf WRITE 64 KB, $seconds s, verified, rnicd 0 -> rnicd 1"
set -- -o write -s 65536 --verify
tenant 100 1 18800 1 --server "$@" >"$tmp/a-server.log" 2>&1 &
pids+=($!)
tenant 65534 2 18810 1 --server "$@" >"$tmp/b-server.log" 2>&1 &
pids+=($!)
sleep 0.5
tenant 100 1 18800 0 "$@" -u 10 127.0.0.1 >"$tmp/a-client.log" 2>&1 &
a=$!
tenant 65534 2 18810 0 "$@" 127.0.0.1 >"$tmp/b-client.log" 2>&1 &
b=$!
if [ "$drop" = 1 ]; then
	sleep $(((seconds + 1) / 2))
	say "OpenFlow: drop everything from tenant A's GID (10.23.1.1)"
	ovs-ofctl add-flow br0 "priority=200,ip,nw_src=10.23.1.1,actions=drop"
fi
ok=1
if wait $a; then
	echo "tenant A: every WRITE verified: $(grep -h "Gb/s" "$tmp/a-client.log" | tail -n 1)"
	[ "$drop" = 0 ] || ok=0
else
	echo "tenant A: $(grep -m 1 "QP" "$tmp/a-client.log" || tail -n 1 "$tmp/a-client.log")"
	[ "$drop" = 1 ] && grep -q "transport retry counter exceeded" "$tmp/a-client.log" || ok=0
fi
if wait $b; then
	echo "tenant B: every WRITE verified: $(grep -h "Gb/s" "$tmp/b-client.log" | tail -n 1)"
else
	echo "tenant B: $(grep -m 1 "QP" "$tmp/b-client.log" || tail -n 1 "$tmp/b-client.log")"
	ok=0
fi

say "OVS: flows (per tenant GID) and ports"
ovs-ofctl dump-flows br0
ovs-ofctl dump-ports br0
say "softrnic: rnicd 0's device counters and tenants (DPDK telemetry)"
python3 - "ovs-demo-rnicd0-$$" <<'EOF'
import json, socket, sys
def tel(cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(f"/var/run/dpdk/{sys.argv[1]}/dpdk_telemetry.v2")
    s.recv(1 << 16)
    s.send(cmd.encode())
    return json.loads(s.recv(1 << 20).decode())[cmd.split(",")[0]]
d = tel("/rnic/stats,0")["rnic0"]
print({k: d[k] for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "retransmits")})
for t in tel("/rnicd/tenants").values():
    print(t["tenant"], {k: t[k] for k in ("gids", "gid_refused", "packets", "bytes")})
EOF
say "OVS Interface vhu0 statistics (rx: what rnicd 0 sent)"
vsctl get Interface vhu0 statistics
[ "$ok" = 1 ] || { echo "ovs-demo: the tenants did not end as expected"; exit 1; }
