#!/usr/bin/env bash
# rnic-perf server and client in two network namespaces joined by a veth pair, each on net_af_packet, as the
# README shows: WRITE bandwidth, READ latency, SEND bandwidth on 2 QPs, bidirectional WRITE and SEND, verified
# (the server checks what was written and sent to it); perftest's form (rnic_write_bw without HOST is the
# server, with HOST the client); --run_infinitely ended by SIGINT. Both sides must print the report (the
# server the client's figures). Needs root (skipped, exit 77, without).
# Usage: server-client.sh RNIC_PERF
set -u
# shellcheck source=../common/veth-netns.sh
. "$(dirname "$0")/../common/veth-netns.sh"
perf=$1
names=$(dirname "$perf")
tmp=$(mktemp -d)
trap 'kill %1 2>/dev/null; wait 2>/dev/null; veth_cleanup; rm -rf "$tmp"; rm -rf /var/run/dpdk/rnic-perf-[ab]-$$' EXIT
veth_setup || exit $?
eal=(-l 0,1 -m 512 --log-level=error)
status=0

# run_case SERVER CLIENT CLIENT_ARGS [how the client ends]: the server's softrnic has an address of its own
# (10.99.0.1; the kernel's 10.98.0.1 carries the TCP exchange), the client's is its veth's; the peers' MACs
# come from --neigh.
run_case() {
	local server=$1 client=$2 args=$3 stop=${4:-} report=
	case "$args" in *--json*) report=--json ;; esac
	# shellcheck disable=SC2086
	ip netns exec "$ns_a" timeout 60 "$server" --port net_af_packet0 --ip 10.99.0.1 \
		--neigh 10.98.0.2,"$mac_b" $([ "$server" = "$perf" ] && echo --server) -p 18516 $report \
		-- "${eal[@]}" --file-prefix rnic-perf-a-$$ --vdev=net_af_packet0,iface=$veth_a,qpairs=2 \
		>"$tmp/server.log" 2>&1 &
	# shellcheck disable=SC2086
	ip netns exec "$ns_b" timeout ${stop:-60} "$client" 10.98.0.1 -p 18516 $args \
		--port net_af_packet0 --neigh 10.99.0.1,"$mac_a" \
		-- "${eal[@]}" --file-prefix rnic-perf-b-$$ --vdev=net_af_packet0,iface=$veth_b,qpairs=2 \
		>"$tmp/client.log" 2>&1
	client_rc=$?
	wait %1
	server_rc=$?
	echo "== $(basename "$client") $args"
	cat "$tmp/client.log"
	echo "-- the server's output"
	cat "$tmp/server.log"
}

fail() {
	echo "server-client ($1): client exit $client_rc, server exit $server_rc: $2"
	status=1
}

for test in "-o write -s 65536 -n 500" "-o read --lat -s 64 -n 500" "-o send -s 3000 -n 2000 -q 2" \
	"-o write -b -s 4096 -n 1000" "-o send -b -s 1000 -n 1000" "-o fetch_add -n 500"; do
	run_case "$perf" "$perf" "$test --verify --json"
	[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] || fail "$test" "an exit status"
	grep -q '"verified": true' "$tmp/client.log" || fail "$test" "no verified result from the client"
	grep -q '"verified": true' "$tmp/server.log" || fail "$test" "the server printed no report"
done

# perftest's form and text report: the same row on both sides.
run_case "$names/rnic_write_bw" "$names/rnic_write_bw" "-s 4096 -n 1000"
row='^ 4096 +[0-9]+ +[0-9.]+ +[0-9.]+'
[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] || fail "rnic_write_bw" "an exit status"
grep -Eq "$row" "$tmp/client.log" && grep -Eq "$row" "$tmp/server.log" || fail "rnic_write_bw" "no result row"

# --run_infinitely: a row per second on both sides until the client's SIGINT; both exit 0.
run_case "$perf" "$perf" "--run_infinitely -D 1 -s 1024" "--preserve-status -s INT 3.5"
rows=$(grep -Ec '^ 1024 +[0-9]+' "$tmp/server.log")
[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] || fail "--run_infinitely" "an exit status"
[ "$rows" -ge 2 ] || fail "--run_infinitely" "the server printed $rows rows"

# A server with no stages of its own (-l 0,1: every stage on its worker) and nothing to receive (WRITE) sleeps
# while its client runs, as perftest's does: its main thread's CPU time over 2 s of the client's 4 s of
# WRITEs under 5 % of them (spinning on the control socket, it took a core, half of the one its client
# shared on a 2-core machine). utime + stime of the thread, in clock ticks.
main_thread_ticks() { awk '{ print $14 + $15 }' "/proc/$1/task/$1/stat" 2>/dev/null; }
(run_case "$perf" "$perf" "-o write -s 65536 -D 4"; [ $client_rc -eq 0 ] && [ $server_rc -eq 0 ]) &
runner=$!
server_pid=
for _ in $(seq 100); do
	server_pid=$(pgrep -f -- "--file-prefix rnic-perf-a-$$" | while read -r p; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = rnic-perf ] && echo "$p"; done | head -1)
	[ -n "$server_pid" ] && pgrep -f -- "--file-prefix rnic-perf-b-$$" >/dev/null && break
	sleep 0.1
done
sleep 1.5
t0=$(main_thread_ticks "$server_pid")
sleep 2
t1=$(main_thread_ticks "$server_pid")
wait $runner || fail "idle server" "an exit status"
hz=$(getconf CLK_TCK)
if [ -z "$t0" ] || [ -z "$t1" ]; then
	fail "idle server" "no server thread to measure (pid '$server_pid')"
elif [ $((t1 - t0)) -gt $((hz / 10)) ]; then
	fail "idle server" "its main thread used $((t1 - t0)) of 2 s x $hz ticks while its client wrote"
else
	echo "idle server: its main thread used $((t1 - t0)) ticks ($hz a second) in 2 s of its client's WRITEs"
fi

[ $status -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $status
