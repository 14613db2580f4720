#!/usr/bin/env bash
# Debian's own, unmodified ibverbs-utils on softrnic through libsoftrnic-verbs (softrnic-run):
#   devices    ibv_devices and ibv_devinfo -v on the embedded default: the devices listed, their attributes
#              checked field by field; RNIC_DAEMON naming no daemon: a clear error
#   pingpong   ibv_rc_pingpong, ibv_uc_pingpong and ibv_ud_pingpong between two processes in two network
#              namespaces joined by a veth pair (each engine on net_af_packet; the tools' own TCP exchange
#              runs over the same veth between the namespaces' kernel addresses), exit status and reported
#              figures checked
#   perftest-bw   perftest's ib_write_bw, ib_read_bw, ib_send_bw and ib_atomic_bw the same way: default
#                 options (64 KB: -s 65536 is the default), then -q 4, --use_old_post_send; exit status, and
#                 the sizes, iteration counts and figures each reports, checked
#   perftest-lat  ib_read_lat and ib_send_lat the same way: by default (2 B, 1000 iterations), -s 65536,
#                 --use_old_post_send; their t_min / t_max / t_typical / t_avg checked
#   perftest-all  the six tools that take -a with -a -n 5 (every size from 2 B to 8 MB), and ib_write_lat
#                 by default, -s 65536 and --use_old_post_send (its ends spin on the memory their peer
#                 writes: with each end's engine on a worker lcore, four threads spin on the two cores,
#                 and 1000 round trips took up to 60 s on the loaded machine: it gets 240 s)
#   perftest-wr   the six with perftest's ibv_wr_* post API on (SOFTRNIC_VERBS_VENDOR: perftest 4.5 turns it
#                 on by part ID only, doc/verbs.md)
#   srq           ibv_srq_pingpong (16 RC QPs on one shared receive queue each side), and perftest's
#                 ib_send_bw (one way and both ways) and ib_send_lat with --use-srq, the same way
#   daemon-devices, daemon-pingpong
#              the same through rnicd (RNIC_DAEMON): the test starts a daemon on its embedded loopback pair
#              (rnic0 and rnic1 joined in the daemon; its socket in the test's temporary directory), the
#              tools are its clients, two of them talking to each other through rnic0 and rnic1 (their own
#              TCP exchange over 127.0.0.1); the three pingpong tools with -e (completion events) and
#              polling; the daemon exits 0 on SIGTERM and removes its socket
#   daemon-perftest-bw, daemon-perftest-lat, daemon-perftest-wr, daemon-srq
#              the same tools, options and checks as the mode without daemon-, through a daemon started
#              the same way; perftest-all's in two: daemon-perftest-sweep (the six with -a) and
#              daemon-perftest-write-lat (ib_write_lat), each a few minutes on the loaded machine (the
#              latency tools whose two ends both poll take turns on one core: 10-80 ms a round trip)
#   daemon-program PROGRAM
#              a program of the project's built against libibverbs (tests/verbs/test_verbs.c) as a client of
#              a daemon started the same way: it must exit 0
# pingpong, perftest-* and srq need root (skipped, exit 77, without it).
# Usage: stock-tools.sh devices|pingpong|perftest-bw|perftest-lat|perftest-all|perftest-wr|srq SOFTRNIC_RUN
#        stock-tools.sh daemon-devices|daemon-pingpong|daemon-perftest-bw|daemon-perftest-lat SOFTRNIC_RUN RNICD
#        stock-tools.sh daemon-perftest-sweep|daemon-perftest-write-lat|daemon-perftest-wr|daemon-srq SOFTRNIC_RUN RNICD
#        stock-tools.sh daemon-program SOFTRNIC_RUN RNICD PROGRAM
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
# shellcheck source=../common/rnicd.sh
. "$(dirname "$0")/../common/rnicd.sh"
what=$1
run=(sh "$2")
rnicd=${3:-}
program=${4:-}
# The daemon's clients exchange their TCP over a loopback of their own (a network namespace that ends with
# the script): no other test's port is theirs.
case $what in
daemon-pingpong | daemon-perftest-* | daemon-srq)
	if [ -z "${STOCK_TOOLS_NETNS:-}" ]; then
		[ "$(id -u)" -eq 0 ] || { echo "needs root (a network namespace): skipped"; exit 77; }
		STOCK_TOOLS_NETNS=1 exec unshare --net "$0" "$@"
	fi
	ip link set lo up || exit 1
	;;
esac
tmp=$(mktemp -d)
failed=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ "$what" = devices ] || veth_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for tool in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong ib_write_bw \
	ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat; do
	command -v $tool >/dev/null || { echo "$tool missing (ibverbs-utils, perftest): skipped"; exit 77; }
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
	# One lcore, the stages on it: the tools make no traffic, and each run leaves the other core alone.
	export SOFTRNIC_ARGS="-l 0 --no-huge -m 256 --no-pci --no-shconf --log-level=error --file-prefix vd-$$ -- --stages devices"
	device_checks
	RNIC_DAEMON=/nonexistent.sock timeout 60 "${run[@]}" ibv_devices >"$tmp/daemon.txt" 2>&1
	check "RNIC_DAEMON naming no daemon: ibv_devices fails" test $? -ne 0
	check "RNIC_DAEMON naming no daemon: says so" has "$tmp/daemon.txt" \
		'cannot be a client of rnicd at RNIC_DAEMON=/nonexistent.sock: No such file'
	unset SOFTRNIC_ARGS
}

# ibv_devices and ibv_devinfo -v -d rnic0: the devices listed, rnic0's attributes field by field.
device_checks() {
	local out=$tmp/devinfo.txt
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
	elif [ "$1" = b-worker ]; then
		# the same for the client: an end that waits on memory rather than its CQ (ib_write_lat's)
		echo "-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix vp-b-$$" \
			"--vdev=net_af_packet0,iface=$veth_b,qpairs=2 -- --port net_af_packet0" \
			"--neigh 10.99.0.1,$mac_a"
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

# SERVER_SIDE CLIENT_SIDE PORT TOOL OPTIONS...: the tool's server in namespace a, then its client in b
# with the server's address; sets server_rc and client_rc, the outputs in $tmp/server.txt and client.txt.
run_pair() {
	local side_a=$1 side_b=$2 port=$3
	shift 3
	ip netns exec "$ns_a" env SOFTRNIC_ARGS="$(softrnic_args "$side_a")" timeout "$tool_timeout" "${run[@]}" "$@" \
		>"$tmp/server.txt" 2>&1 &
	local server=$!
	pids+=("$server")
	# the server's TCP port listening before the client connects (the tools do not retry)
	for _ in $(seq 100); do
		ip netns exec "$ns_a" ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.1
	done
	ip netns exec "$ns_b" env SOFTRNIC_ARGS="$(softrnic_args "$side_b")" timeout "$tool_timeout" "${run[@]}" "$@" 10.98.0.1 \
		>"$tmp/client.txt" 2>&1
	client_rc=$?
	wait "$server"
	server_rc=$?
}

# The same through rnicd (pair=run_daemon_pair): the server a client of the daemon on rnic0, the client on
# rnic1, their TCP exchange over 127.0.0.1. Both on cpu 0: the daemon's stages have cpu 1 to themselves
# (doc/rnicd.md, "Performance").
run_daemon_pair() {
	local port=$3
	shift 3
	RNIC_DAEMON=$sock timeout "$tool_timeout" taskset -c 0 "${run[@]}" "$1" -d rnic0 "${@:2}" >"$tmp/server.txt" 2>&1 &
	local server=$!
	pids+=("$server")
	for _ in $(seq 100); do
		ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.1
	done
	RNIC_DAEMON=$sock timeout "$tool_timeout" taskset -c 0 "${run[@]}" "$1" -d rnic1 "${@:2}" 127.0.0.1 >"$tmp/client.txt" 2>&1
	client_rc=$?
	wait "$server"
	server_rc=$?
}

# rnicd on its embedded loopback pair (rnic0, rnic1), its socket in $tmp, until daemon_stop.
daemon_start() {
	sock=$tmp/rnicd.sock
	rnicd_start "$rnicd" "$sock" "$tmp/rnicd.txt" vdd-$$ && { daemon=$rnicd_pid; pids+=("$daemon"); return 0; }
	pids+=("$rnicd_pid")
	echo "FAIL  rnicd does not serve on $sock"
	sed 's/^/    rnicd: /' "$tmp/rnicd.txt"
	exit 1
}

daemon_stop() {
	kill -TERM "$daemon"
	wait "$daemon"
	check "rnicd exits 0 on SIGTERM" test $? -eq 0
	check "rnicd removed its socket" test ! -e "$sock"
}

# How a tool's two ends run (run_pair, run_daemon_pair), how long each may take, and the GIDs they report
# (the engines' addresses).
pair=run_pair
tool_timeout=60
gid_re='::ffff:10\.9[89]\.0\.[12]'

# TOOL SIZE ITERS [OPTION...]: server in namespace a, client in b, GID index 0 (RoCE v2: the engine's IPv4
# address)
pingpong() {
	local tool=$1 size=$2 iters=$3 port=$((18000 + RANDOM % 1000))
	shift 3
	$pair a b "$port" "$tool" -g 0 -s "$size" -n "$iters" -p "$port" "$@"
	check "$tool -s $size -n $iters $*: server exits 0" test $server_rc -eq 0
	check "$tool -s $size -n $iters $*: client exits 0" test $client_rc -eq 0
	for side in server client; do
		# "<bytes> bytes in <s> seconds = <rate> Mbit/sec" and "<iters> iters in <s> seconds = <t> usec/iter"
		check "$tool: the $side reports $((2 * size * iters)) bytes and $iters iters" awk -v b=$((2 * size * iters)) -v n="$iters" '
			$2 == "bytes" && $3 == "in" && $1 == b && $5 == "seconds" && $7 + 0 > 0 && $8 == "Mbit/sec" { ok++ }
			$2 == "iters" && $3 == "in" && $1 == n && $5 == "seconds" && $7 + 0 > 0 && $8 == "usec/iter" { ok++ }
			END { exit ok == 2 ? 0 : 1 }' "$tmp/$side.txt"
		check "$tool: the $side's local address a RoCE v2 GID" has "$tmp/$side.txt" "local address: .*GID $gid_re"
	done
	grep -h -E ' (bytes|iters) in ' "$tmp/server.txt" | sed 's/^/      server: /'
	grep -h -E ' (bytes|iters) in ' "$tmp/client.txt" | sed 's/^/      client: /'
	if [ $failed -ne 0 ]; then
		sed 's/^/    server: /' "$tmp/server.txt"
		sed 's/^/    client: /' "$tmp/client.txt"
	fi
}

# TOOL SIZES ITERS OPTIONS...: a perftest tool between the namespaces (server a, client b). The server's
# stages run on a worker lcore: perftest's passive end waits on TCP while its peer WRITEs or READs, it does
# not poll (and ib_write_lat's client's too: it waits on memory). Both exit 0; the client reports one row per size of SIZES (comma-separated), each with ITERS
# iterations (all QPs' together) and its figures: a bandwidth tool's message rate above 0, and its peak and
# average from 1 KB on (perftest prints MB/s with two decimals), a latency tool's t_min above 0, t_max at
# least t_min, t_typical and t_avg above 0. The tool is softrnic-run's program itself, never behind env(1):
# a sanitizer build preloads its runtime into that program, and coreutils' env deadlocks in its own
# textdomain() under it (the tools then print nothing and time out).
perftest() {
	local tool=$1 sizes=$2 iters=$3 port=$((19000 + RANDOM % 1000)) kind=bw client=b-cpu0 t0=$SECONDS
	shift 3
	case $tool in *_lat) kind=lat ;; esac
	# ib_write_lat's ends spin on the buffer their peer writes, not on their CQ: no manual progress there
	[ "$tool" != ib_write_lat ] || client=b-worker
	$pair a-worker $client "$port" "$tool" -x 0 -F -p "$port" "$@"
	local before=$failed
	check "$tool $*: server exits 0" test $server_rc -eq 0
	check "$tool $*: client exits 0" test $client_rc -eq 0
	check "$tool $*: the client reports sizes $sizes, $iters iterations each, with figures" awk \
		-v sizes="$sizes" -v iters="$iters" -v kind=$kind '
		BEGIN { n = split(sizes, want, ","); for (i = 1; i <= n; i++) need[want[i]] = 1 }
		$1 == "#bytes" { rows = 1; next }
		rows && $1 ~ /^[0-9]+$/ {
			if (kind == "bw")	# MB/s with 2 decimals: 0.00 for a few tiny messages
				figs = $5 + 0 > 0 && ($1 < 1024 || ($3 + 0 > 0 && $4 + 0 > 0))
			else
				figs = $3 + 0 > 0 && $4 + 0 >= $3 + 0 && $5 + 0 > 0 && $6 + 0 > 0
			if (($1 in need) && $2 == iters && figs) got[$1] = 1; else bad++
			next
		}
		{ rows = 0 }
		END { for (s in need) if (!(s in got)) exit 1; exit bad ? 1 : 0 }' "$tmp/client.txt"
	if [ -n "${PERFTEST_API:-}" ]; then
		check "$tool $*: ibv_wr* API $PERFTEST_API" has "$tmp/client.txt" "ibv_wr\\* API +: $PERFTEST_API\$"
	fi
	grep -h -A1 '#bytes' "$tmp/client.txt" | tail -1 | sed "s/^/      client, $((SECONDS - t0)) s: /"
	if [ $failed -ne $before ]; then
		sed 's/^/    server: /' "$tmp/server.txt"
		sed 's/^/    client: /' "$tmp/client.txt"
	fi
}

# -a: every power of two from 2 B to 8 MB
all_sizes=$(awk 'BEGIN { for (s = 2; s <= 8388608; s *= 2) printf "%s%d", (s > 2 ? "," : ""), s }')

# TOOL SIZE: a bandwidth tool with its default options (SIZE: its default message size), then -q 4,
# --use_old_post_send (-a: mode perftest-all). The 64 KB tools run 100 iterations (-n 100; their defaults,
# 1000 and 5000, move up to 330 MB through net_af_packet on a veth pair, minutes on a loaded 2-core
# machine); ib_atomic_bw (8-byte atomics, 1000 iterations) runs its defaults, and takes no -a.
perftest_bw() {
	local tool=$1 size=$2
	if [ "$tool" = ib_atomic_bw ]; then
		perftest "$tool" "$size" 1000
	else
		perftest "$tool" "$size" 100 -n 100
	fi
	perftest "$tool" "$size" 200 -q 4 -n 50
	perftest "$tool" "$size" 100 -n 100 --use_old_post_send
}

# TOOL: a latency tool by default (2 B, 1000 iterations), then -s 65536, --use_old_post_send (200 round
# trips: through rnicd each waits for the scheduler, 10-20 ms on the loaded machine)
perftest_lat() {
	perftest "$1" 2 1000
	perftest "$1" 65536 100 -s 65536 -n 100
	perftest "$1" 2 200 -n 200 --use_old_post_send
}

# Each mode's tools, the same in the process (between the namespaces) and through rnicd (daemon-MODE).
mode_perftest_bw() {
	# softrnic's own identity: perftest 4.5 leaves its ibv_wr_* API off ("ibv_wr* API : OFF")
	PERFTEST_API=OFF
	perftest_bw ib_write_bw 65536
	perftest_bw ib_read_bw 65536
	perftest_bw ib_send_bw 65536
	perftest_bw ib_atomic_bw 8
}

mode_perftest_lat() {
	PERFTEST_API=OFF
	perftest_lat ib_read_lat
	perftest_lat ib_send_lat
}

mode_perftest_all() {
	mode_perftest_sweep
	mode_perftest_write_lat
}

mode_perftest_sweep() {
	PERFTEST_API=OFF
	for tool in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
		perftest $tool "$all_sizes" 5 -a -n 5
	done
}

mode_perftest_write_lat() {
	PERFTEST_API=OFF
	tool_timeout=240
	perftest_lat ib_write_lat
}

mode_perftest_wr() {
	# a ConnectX-5's IDs: perftest takes its ibv_wr_* path (and inline data for the latency tools)
	export SOFTRNIC_VERBS_VENDOR=0x02c9:4119
	PERFTEST_API=ON
	perftest ib_write_bw 65536 100 -n 100
	perftest ib_write_bw 65536 200 -q 4 -n 50
	perftest ib_read_bw 65536 100 -n 100
	perftest ib_send_bw 65536 100 -n 100
	perftest ib_atomic_bw 8 1000
	perftest ib_read_lat 2 1000
	perftest ib_send_lat 65536 100 -s 65536 -n 100
}

mode_srq() {
	# 16 QPs (its default) on one SRQ each side, every received buffer checked (-c)
	pingpong ibv_srq_pingpong 4096 100 -q 16 -c
	PERFTEST_API=OFF
	# one way (the client leaves its receive CQ at exit: ibv_close_device releases it), and both ways (-b):
	# each end receives into its SRQ
	perftest ib_send_bw 65536 100 -n 100 --use-srq
	perftest ib_send_bw 65536 100 -n 100 --use-srq -b
	perftest ib_send_lat 2 200 -n 200 --use-srq
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
perftest-bw)
	veth_setup || exit $?
	mode_perftest_bw
	;;
perftest-lat)
	veth_setup || exit $?
	mode_perftest_lat
	;;
perftest-all)
	veth_setup || exit $?
	mode_perftest_all
	;;
perftest-wr)
	veth_setup || exit $?
	mode_perftest_wr
	;;
srq)
	veth_setup || exit $?
	mode_srq
	;;
daemon-devices)
	daemon_start
	RNIC_DAEMON=$sock device_checks
	daemon_stop
	;;
daemon-pingpong)
	daemon_start
	pair=run_daemon_pair
	gid_re='::ffff:10\.77\.0\.[12]'
	# With -e the tools sleep in ibv_get_cq_event (completion channels through the daemon). Polling, the
	# two clients spin on one core and take turns at the scheduler's pace (tens of ms a round trip, more
	# on a loaded machine): 20 round trips.
	pingpong ibv_rc_pingpong 4096 200 -e
	pingpong ibv_uc_pingpong 4096 200 -e
	pingpong ibv_ud_pingpong 1024 200 -e
	pingpong ibv_rc_pingpong 4096 20
	pingpong ibv_uc_pingpong 4096 20
	pingpong ibv_ud_pingpong 1024 20
	daemon_stop
	;;
daemon-program)
	daemon_start
	RNIC_DAEMON=$sock timeout 120 taskset -c 0 "${run[@]}" "$program" >"$tmp/program.txt" 2>&1
	rc=$?
	check "$(basename "$program") through rnicd exits 0" test $rc -eq 0
	[ $rc -eq 0 ] || sed 's/^/    program: /' "$tmp/program.txt"
	daemon_stop
	;;
daemon-perftest-bw | daemon-perftest-lat | daemon-perftest-sweep | daemon-perftest-write-lat | daemon-perftest-wr | \
	daemon-srq)
	daemon_start
	pair=run_daemon_pair
	gid_re='::ffff:10\.77\.0\.[12]'
	# a latency tool's -a through rnicd, 23 sizes up to 8 MB at the scheduler's pace, took 55-60 s beside a
	# build on the loaded machine
	tool_timeout=180
	mode=${what#daemon-}
	"mode_${mode//-/_}"
	daemon_stop
	;;
*)
	echo "usage: stock-tools.sh devices|pingpong|perftest-bw|perftest-lat|perftest-all|perftest-wr|srq SOFTRNIC_RUN" >&2
	echo "       stock-tools.sh daemon-devices|daemon-pingpong|daemon-perftest-bw|daemon-perftest-lat SOFTRNIC_RUN RNICD" >&2
	echo "       stock-tools.sh daemon-perftest-sweep|daemon-perftest-write-lat|daemon-perftest-wr|daemon-srq SOFTRNIC_RUN RNICD" >&2
	echo "       stock-tools.sh daemon-program SOFTRNIC_RUN RNICD PROGRAM" >&2
	exit 2
	;;
esac
[ $failed -eq 0 ]
