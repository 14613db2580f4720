#!/usr/bin/env bash
# Secondary processes attach to a running rnicd (doc/capture.md): dpdk-dumpcap captures its loopback port
# through rte_pdump while a client's traffic runs (tshark decodes the frames, timed within a second of the
# wall clock), and dpdk-proc-info reads the port's statistics. Secondaries map the primary's memory, so the
# daemon runs on hugepages with its shared configuration: this test reserves 2 MB pages for its run
# (vm.nr_hugepages, put back after) and mounts hugetlbfs in its own mount namespace. The daemon's memory
# goes at a fixed base address (doc/capture.md): a daemon built with ASan cannot use DPDK's default one.
#   attach.sh RNICD RNIC_PERF
set -euo pipefail
rnicd=$1
perf=$2
for tool in dpdk-dumpcap dpdk-proc-info tshark; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool is not installed (Debian package dpdk / tshark)"
		exit 77
	fi
done
tmp=$(mktemp -d /tmp/rnicd-attach-XXXXXX)
prefix=rnicd-attach-$$
pages=160				# -m 256 and room for dumpcap's ring and pool
old_pages=$(cat /proc/sys/vm/nr_hugepages)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	umount "$tmp/huge" 2>/dev/null || true
	echo "$old_pages" >/proc/sys/vm/nr_hugepages
	rm -rf "$tmp"
}
trap cleanup EXIT

echo $((old_pages + pages)) >/proc/sys/vm/nr_hugepages
free=$(awk '/HugePages_Free/ { print $2 }' /proc/meminfo)
[ "$free" -ge "$pages" ] || { echo "FAIL: only $free free 2 MB hugepages after asking for $pages more"; exit 1; }
mkdir "$tmp/huge"
mount -t hugetlbfs -o pagesize=2M nodev "$tmp/huge"

"$rnicd" --socket "$tmp/rnicd.sock" -- -l 0,1 -m 256 --no-pci --file-prefix "$prefix" --huge-dir "$tmp/huge" \
	--base-virtaddr 0x200000000000 \
	--log-level=lib.eal:warning >"$tmp/rnicd.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q "serving on" "$tmp/rnicd.log" && break; sleep 0.1; done
grep -q "serving on" "$tmp/rnicd.log" || { echo "FAIL: rnicd did not start"; cat "$tmp/rnicd.log"; exit 1; }
# doc/capture.md's list of the ports to capture
timeout 60 dpdk-dumpcap --file-prefix "$prefix" -D >"$tmp/ports.log" 2>&1 && grep -q net_ring_rnic_lb_a "$tmp/ports.log" ||
	{ echo "FAIL: dpdk-dumpcap -D does not list net_ring_rnic_lb_a"; cat "$tmp/ports.log"; exit 1; }
RNIC_DAEMON=$tmp/rnicd.sock "$perf" -o write -s 1024 -D 8 >"$tmp/perf.log" 2>&1 &
pids+=($!)
sleep 1
t0=$(date +%s)
timeout 60 dpdk-dumpcap --file-prefix "$prefix" -i net_ring_rnic_lb_a -c 200 -w "$tmp/dump.pcapng" -q \
	>"$tmp/dumpcap.log" 2>&1 || { echo "FAIL: dpdk-dumpcap could not capture"; cat "$tmp/dumpcap.log"; exit 1; }
t1=$(date +%s)
timeout 60 dpdk-proc-info --file-prefix "$prefix" --no-pci -- --stats >"$tmp/procinfo.log" 2>&1 ||
	{ echo "FAIL: dpdk-proc-info could not attach"; cat "$tmp/procinfo.log"; exit 1; }

frames=$(tshark -r "$tmp/dump.pcapng" -d udp.port==4791,infiniband -Y infiniband -T fields -e frame.time_epoch \
	2>/dev/null)
n=$(wc -l <<<"$frames")
[ "$n" -ge 200 ] || { echo "FAIL: dumpcap's file holds $n RoCE frames, not 200"; exit 1; }
awk -v t0="$t0" -v t1="$t1" '$1 < t0 - 1 || $1 > t1 + 1 { bad++ } END { exit bad > 0 }' <<<"$frames" ||
	{ echo "FAIL: dumpcap's frames are not timed between $t0 and $t1: $(head -n 1 <<<"$frames")"; exit 1; }
tx=$(awk '/statistics for port 0 / { p = 1 } p && /TX-packets:/ { print $2; exit }' "$tmp/procinfo.log")
[ "${tx:-0}" -gt 0 ] || { echo "FAIL: dpdk-proc-info shows no TX on port 0"; cat "$tmp/procinfo.log"; exit 1; }
wait "${pids[1]}" || { echo "FAIL: rnic-perf through rnicd failed"; cat "$tmp/perf.log"; exit 1; }
kill -TERM "${pids[0]}"
wait "${pids[0]}" || { echo "FAIL: rnicd did not exit 0"; cat "$tmp/rnicd.log"; exit 1; }
pids=()
echo "dpdk-dumpcap: $n RoCE frames from rnicd's port, timed within a second; dpdk-proc-info: port 0 sent $tx"
echo "1 passed, 0 failed"
