#!/usr/bin/env bash
# librdmacm's own example programs (rdmacm-utils), unmodified, on softrnic through libsoftrnic-verbs
# (softrnic-run): server and client in two network namespaces joined by a veth pair, each an engine on
# net_af_packet with softrnic's own address (10.99.0.x, no --neigh: the CM resolves it by ARP), connecting
# through softrnic's CM (doc/cm.md):
#   rping      20 iterations of 1 KB, each an RDMA READ of the client's buffer and a WRITE back, checked by
#              the client (-V); both ends exit 0 after the client disconnects
#   ucmatose   4 connections at once, 20 SENDs of 1000 bytes each way on each, then disconnects; both ends
#              report "return status 0"
#   ucmatose-migrate  the same with -m: each end moves its ids (and the server its listener) to a new event
#              channel after the transfers (rdma_migrate_id) and destroys the old one; its disconnections'
#              events come on the new channel
#   perftest   ib_write_bw -R (perftest connecting through rdma_cm, no TCP): 200 WRITEs of 64 KB, both
#              ends report them with a bandwidth above 0
#   send-lat, write-lat, read-lat   ib_send_lat -R, ib_write_lat -R, ib_read_lat -R: 100 round trips of
#              2 bytes, both ends exit 0 and report them with latencies above 0 (ib_read_lat's server, which
#              only answers, reports none)
#   rdma-server  rdma_server and rdma_client: librdmacm's synchronous mode (ids without an event channel,
#              rdma_getaddrinfo, rdma_create_ep, rdma_get_request, blocking connect/accept/disconnect) and
#              its rdma_verbs.h calls: one 16-byte SEND each way; both exit 0 and print "end 0"
# daemon-WHAT: the same tool, options and checks between two clients of one rnicd (RNIC_DAEMON), the daemon
# on its embedded loopback pair: the server on rnic0's address (10.77.0.1), the client's CM reaching it from
# rnic1; the CM is the daemon's (doc/cm.md, "Through rnicd"). Both clients on cpu 0: the daemon's stages
# have cpu 1 (doc/rnicd.md, "Performance").
# daemons-WHAT: the same between clients of two rnicd, one in each namespace on its end of the veth pair
# (net_af_packet, 10.99.0.1 and 10.99.0.2): the two daemons' CMs speak to each other over the wire.
# Needs root (skipped, exit 77, without it), but daemon-WHAT.
# perftest 4.5's server calls rdma_listen for its data QP only after a handshake from which its client
# goes straight to rdma_connect: a REQ that reaches the server first is rejected (reason 8, no listener),
# as Linux's CM rejects it, and the client's retry then crashes (perftest's own bug, fixed upstream after
# 4.5). On two busy cores the client won that race in about one run of ten, so a client that reports
# exactly that rejection is run again with a new server, up to three times (doc/cm.md).
# Usage: rdmacm-tools.sh [daemon-]rping|ucmatose|ucmatose-migrate|perftest|send-lat|write-lat|read-lat|rdma-server
#        SOFTRNIC_RUN [RNICD]
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
# shellcheck source=../common/rnicd.sh
. "$(dirname "$0")/../common/rnicd.sh"
what=$1
run=(sh "$2")
rnicd=${3:-}
daemon=""
daemon_b=""
tmp=$(mktemp -d)
trap 'daemon_stop; veth_cleanup; rm -rf "$tmp"' EXIT
server_ip=10.99.0.1
daemons=1
case $what in
daemon-*)
	what=${what#daemon-}
	server_ip=10.77.0.1	# rnic0 of the daemon's embedded pair
	;;
daemons-*)
	what=${what#daemons-}
	daemons=2
	;;
esac

case "$what" in
perftest) tool=ib_write_bw ;;
*-lat) tool=ib_${what%-lat}_lat ;;
rdma-server) tool=rdma_server ;;
ucmatose-migrate) tool=ucmatose ;;
*) tool=$what ;;
esac
command -v "$tool" >/dev/null || { echo "$tool missing (rdmacm-utils, perftest): skipped"; exit 77; }

fail() {
	echo "$what: $*"
	tail -n 20 "$tmp"/*.log 2>/dev/null
	# A sanitizer's report whole: the tails above cut its stack off.
	grep -h -A 80 '^==[0-9]*==ERROR: ' "$tmp"/*.log 2>/dev/null
	exit 1
}

args() {	# the engine of one end: SIDE (a, b), its veth, its address
	echo "-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix cm-$1-$$" \
		"--vdev=net_af_packet0,iface=$2,qpairs=2 -- --port net_af_packet0 --ip $3"
}

count=20
case "$what" in
rping)
	server_cmd=(rping -s -a "$server_ip" -p 7174 -C "$count" -S 1024 -v)
	client_cmd=(rping -c -a "$server_ip" -p 7174 -C "$count" -S 1024 -v -V)
	;;
ucmatose | ucmatose-migrate)
	server_cmd=(ucmatose -b "$server_ip" -c 4 -C "$count" -S 1000)
	client_cmd=(ucmatose -s "$server_ip" -c 4 -C "$count" -S 1000)
	[ "$what" = ucmatose ] || { server_cmd+=(-m); client_cmd+=(-m); }
	;;
perftest)
	server_cmd=(ib_write_bw -R -x 0 -F -s 65536 -n 200 -p 19174)
	client_cmd=(ib_write_bw -R -x 0 -F -s 65536 -n 200 -p 19174 "$server_ip")
	;;
*-lat)
	server_cmd=("$tool" -R -x 0 -F -n 100 -p 19175)
	client_cmd=("$tool" -R -x 0 -F -n 100 -p 19175 "$server_ip")
	;;
rdma-server)
	server_cmd=(rdma_server -s "$server_ip" -p 7175)
	client_cmd=(rdma_client -s "$server_ip" -p 7175)
	;;
*)
	echo "usage: rdmacm-tools.sh rping|ucmatose|ucmatose-migrate|perftest|send-lat|write-lat|read-lat|rdma-server SOFTRNIC_RUN"
	exit 2
	;;
esac

# perftest's data-connection race (above): its client rejected with reason 8 by the server's CM
perftest_race() {
	[[ $tool == ib_* ]] && grep -q "Event: RDMA_CM_EVENT_REJECTED; error: 8\." "$tmp/client.log"
}

# rnicd on its embedded loopback pair, its socket in $tmp (daemon-WHAT).
# The daemon(s): one on its embedded pair ($sock serves both ends), or one per namespace ($sock the
# server's, $sock_b the client's).
daemon_start() {
	sock=$tmp/rnicd.sock
	sock_b=$sock
	if [ "$daemons" -eq 1 ]; then
		rnicd_start "$rnicd" "$sock" "$tmp/rnicd.log" cmd-$$
		daemon=$rnicd_pid
		[ -S "$sock" ] || fail "rnicd does not serve on $sock"
		return
	fi
	sock_b=$tmp/rnicd-b.sock
	rnicd_prefix=(ip netns exec "$ns_a")
	rnicd_start "$rnicd" "$sock" "$tmp/rnicd.log" cmd-a-$$ --vdev=net_af_packet0,iface="$veth_a",qpairs=2 -- \
		--port net_af_packet0 --ip 10.99.0.1
	daemon=$rnicd_pid
	[ -S "$sock" ] || fail "rnicd in $ns_a does not serve"
	rnicd_prefix=(ip netns exec "$ns_b")
	rnicd_start "$rnicd" "$sock_b" "$tmp/rnicd-b.log" cmd-b-$$ --vdev=net_af_packet0,iface="$veth_b",qpairs=2 -- \
		--port net_af_packet0 --ip 10.99.0.2
	daemon_b=$rnicd_pid
	[ -S "$sock_b" ] || fail "rnicd in $ns_b does not serve"
}

daemon_stop() {
	daemon_rc=0
	for d in $daemon $daemon_b; do
		kill -TERM "$d" 2>/dev/null
		wait "$d" || daemon_rc=$?
	done
	daemon=""
	daemon_b=""
}

# One run of the pair: the server, once it listens, then the client. Sets client_rc and server_rc.
run_pair() {
	local server i
	if [ -n "$rnicd" ]; then
		RNIC_DAEMON=$sock timeout 60 taskset -c 0 stdbuf -oL "${run[@]}" "${server_cmd[@]}" >"$tmp/server.log" 2>&1 &
	else
		SOFTRNIC_ARGS=$(args a "$veth_a" 10.99.0.1) timeout 60 ip netns exec "$ns_a" stdbuf -oL "${run[@]}" \
			"${server_cmd[@]}" >"$tmp/server.log" 2>&1 &
	fi
	server=$!
	veth_pids+=("$server")
	# perftest prints this just before it binds and listens (its stdout line-buffered by stdbuf); the
	# others listen as soon as their engine is up (a REQ that finds no engine yet is lost and retried)
	if [[ $tool == ib_* ]]; then
		for ((i = 0; i < 300; i++)); do
			grep -qs "Waiting for client to connect" "$tmp/server.log" && break
			sleep 0.1
		done
		sleep 1
	else
		sleep 2
	fi
	if [ -n "$rnicd" ]; then
		RNIC_DAEMON=$sock_b timeout 60 taskset -c 0 "${run[@]}" "${client_cmd[@]}" >"$tmp/client.log" 2>&1
	else
		SOFTRNIC_ARGS=$(args b "$veth_b" 10.99.0.2) timeout 60 ip netns exec "$ns_b" "${run[@]}" \
			"${client_cmd[@]}" >"$tmp/client.log" 2>&1
	fi
	client_rc=$?
	# the race's server waits for a connection that will not come
	[ $client_rc -eq 0 ] || ! perftest_race || kill "$server" 2>/dev/null
	wait "$server"
	server_rc=$?
}

[ -n "$rnicd" ] && [ "$daemons" -eq 1 ] || veth_setup || exit $?
[ -z "$rnicd" ] || daemon_start
for attempt in 1 2 3; do
	run_pair
	if [ "$client_rc" -eq 0 ] || ! perftest_race; then
		break
	fi
	echo "attempt $attempt: perftest's client connected before its server listened (REJ reason 8)"
done
[ $client_rc -eq 0 ] || fail "client exit $client_rc"
[ $server_rc -eq 0 ] || fail "server exit $server_rc"
case "$what" in
rping)
	pings=$(grep -c "ping data: rdma-ping-" "$tmp/client.log")
	[ "$pings" -eq "$count" ] || fail "the client printed $pings pings of $count"
	grep -q "ping data: rdma-ping-$((count - 1)): " "$tmp/client.log" || fail "no last ping"
	;;
ucmatose | ucmatose-migrate)
	for side in server client; do
		grep -q "data transfers complete" "$tmp/$side.log" && grep -q "return status 0" "$tmp/$side.log" ||
			fail "the $side did not complete its transfers"
		[ "$what" = ucmatose ] || grep -q "migrating to new event channel" "$tmp/$side.log" ||
			fail "the $side did not migrate its ids"
	done
	;;
perftest)
	for side in server client; do
		# " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]", then the figures
		awk 'prev && $1 == 65536 && $2 == 200 && $4 + 0 > 0 { ok = 1 } { prev = ($1 == "#bytes") }
		     END { exit ok ? 0 : 1 }' "$tmp/$side.log" || fail "the $side reports no 200 WRITEs of 64 KB"
	done
	;;
*-lat)
	# " #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] ...", then the figures
	sides="server client"
	[ "$what" != read-lat ] || sides=client
	for side in $sides; do
		awk 'prev && $1 == 2 && $2 == 100 && $3 + 0 > 0 && $6 + 0 > 0 { ok = 1 } { prev = ($1 == "#bytes") }
		     END { exit ok ? 0 : 1 }' "$tmp/$side.log" || fail "the $side reports no 100 round trips of 2 bytes"
	done
	;;
rdma-server)
	grep -q "^rdma_server: end 0$" "$tmp/server.log" || fail "the server did not end with 0"
	grep -q "^rdma_client: end 0$" "$tmp/client.log" || fail "the client did not end with 0"
	;;
esac
if [ -n "$rnicd" ]; then
	daemon_stop
	[ "$daemon_rc" -eq 0 ] || fail "rnicd exit $daemon_rc on SIGTERM"
	echo "$what between clients of $daemons rnicd: ok"
	exit 0
fi
echo "$what between two softrnic processes: ok"
