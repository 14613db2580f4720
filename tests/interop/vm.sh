# shellcheck shell=bash
# Sourced by tests/interop/run.sh: the interop suite's network and guest.
#   a network namespace (its name carries the PID) holding a bridge, the guest's tap and a veth pair: one
#   end on the bridge, the other (io_dev, 10.97.0.1) for softrnic's net_af_packet port and the kernel's TCP;
#   every link at MTU 9000. softrnic's GID is its own address, 10.97.0.11 (the kernel, which carries the
#   TCP exchange on 10.97.0.1, must not also answer the RoCE frames); the guest is 10.97.0.2.
#   qemu (TCG) in that namespace, booting the cached image read-only (-snapshot), a virtio-9p share with
#   the guest's agent (guest/agent.sh), its configuration and the jobs the host gives it.
# Every wait is bounded; vm_teardown removes everything (run.sh calls it on exit, however it exits).
io_ns=rnic-io-$$
io_dev=vsr
io_mtu=9000
host_ip=10.97.0.1
rnic_ip=10.97.0.11
guest_ip=10.97.0.2
guest_mac=52:54:00:97:00:02
qemu_pid=

# A command in the namespace. Not for a command put in the background: $! would be the function's
# subshell, which a kill leaves the command's process behind (use ip netns exec there).
in_ns() { ip netns exec "$io_ns" "$@"; }

# Whether this machine can run the suite: root, network namespaces, a tap device, qemu. 0, or prints why
# and returns 77.
vm_can_run() {
	local why=
	if [ "$(id -u)" -ne 0 ]; then
		why="needs root"
	elif ! command -v qemu-system-x86_64 >/dev/null; then
		why="no qemu-system-x86_64"
	elif [ ! -c /dev/net/tun ]; then
		why="no /dev/net/tun"
	elif ! ip netns add "$io_ns" 2>/dev/null; then
		why="cannot create a network namespace"
	elif ! in_ns ip tuntap add dev tap0 mode tap 2>/dev/null; then
		why="cannot create a tap device"
	fi
	if [ -n "$why" ]; then
		echo "interop: skipped: $why"
		return 77
	fi
}

# The bridge, the veth pair, IPv6 off (no router solicitations or DAD on the wire). Sets io_mac.
vm_network() {
	in_ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	in_ns ip link set lo up
	in_ns ip link add br0 mtu $io_mtu type bridge
	in_ns ip link add $io_dev mtu $io_mtu type veth peer name vbr mtu $io_mtu
	in_ns ip link set tap0 mtu $io_mtu master br0 up
	in_ns ip link set vbr master br0 up
	in_ns ip link set br0 up
	in_ns ip addr add $host_ip/24 dev $io_dev
	in_ns ip link set $io_dev up
	io_mac=$(in_ns cat /sys/class/net/$io_dev/address)
}

# PERMILLE of the RoCE frames (UDP 4791) crossing the bridge dropped, each way; 0 removes the rule.
vm_loss() {
	in_ns nft delete table bridge interop_loss 2>/dev/null
	[ "$1" -gt 0 ] || return 0
	in_ns nft -f - <<-EOF
		table bridge interop_loss {
			chain forward {
				type filter hook forward priority 0; policy accept;
				udp dport 4791 numgen random mod 1000 < $1 counter drop
			}
		}
	EOF
}

# Frames the loss rule dropped so far.
vm_lost() {
	in_ns nft list table bridge interop_loss 2>/dev/null |
		awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") n += $(i + 1) } END { print n + 0 }'
}

# IMAGE_DIR SHARE_DIR CONSOLE_LOG BOOT_TIMEOUT: boot the guest and wait for its agent's report. 0 once the
# guest's Soft-RoCE is up (share/ready), 1 otherwise (the console's end printed).
vm_boot() {
	local image=$1 share=$2 console=$3 limit=$4
	# A guest that panics powers off (panic=-1 and -no-reboot) instead of hanging until the time limit.
	ip netns exec "$io_ns" qemu-system-x86_64 -nodefaults -machine q35,accel=tcg -cpu max -smp 1 -m 1024 -display none \
		-no-reboot -snapshot -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 init=/sbin/softrnic-init panic=-1 printk.time=1" \
		-drive file="$image/root.img",if=virtio,format=raw \
		-netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
		-device virtio-net-pci,netdev=n0,mac=$guest_mac,host_mtu=$io_mtu \
		-fsdev local,id=share,path="$share",security_model=none \
		-device virtio-9p-pci,fsdev=share,mount_tag=host \
		-serial file:"$console" </dev/null >"$console.qemu" 2>&1 &
	qemu_pid=$!
	vm_share=$share
	local deadline=$((SECONDS + limit))
	while [ ! -e "$share/ready" ] && [ ! -e "$share/failed" ]; do
		if ! kill -0 "$qemu_pid" 2>/dev/null || [ $SECONDS -ge "$deadline" ]; then
			break
		fi
		sleep 0.2
	done
	if [ -e "$share/ready" ]; then
		return 0
	fi
	echo "interop: the guest did not come up in $limit s (qemu $(kill -0 "$qemu_pid" 2>/dev/null && echo running ||
		echo exited)); the end of its console and qemu's messages:"
	tail -n 30 "$console" "$console.qemu" 2>/dev/null
	cat "$share/failed" 2>/dev/null
	return 1
}

# SCRIPT: start a job in the guest (sh; the share is /mnt/host there). Its name in guest_job. The count
# lives in the share, so that jobs started from subshells ($(guest_run ...)) get names of their own too.
guest_start() {
	local seq
	seq=$(($(cat "$vm_share/seq" 2>/dev/null || echo 0) + 1))
	echo $seq >"$vm_share/seq"
	guest_job=job$seq
	printf '%s\n' "$1" >"$vm_share/jobs/$guest_job.tmp"
	mv "$vm_share/jobs/$guest_job.tmp" "$vm_share/jobs/$guest_job.sh"
}

# NAME SECONDS: wait for a job's end. Its exit status, or 124 when it did not end in time (or the guest
# is gone); its output is in $vm_share/jobs/NAME.out.
guest_wait() {
	local rc=$vm_share/jobs/$1.rc deadline=$((SECONDS + $2))
	while [ ! -e "$rc" ]; do
		if [ $SECONDS -ge $deadline ] || ! kill -0 "$qemu_pid" 2>/dev/null; then
			return 124
		fi
		sleep 0.2
	done
	return "$(cat "$rc")"
}

# SCRIPT SECONDS: run a job in the guest and wait for it; its output on stdout.
guest_run() {
	local rc
	guest_start "$1"
	guest_wait "$guest_job" "$2"
	rc=$?
	cat "$vm_share/jobs/$guest_job.out" 2>/dev/null
	return $rc
}

vm_teardown() {
	if [ -n "$qemu_pid" ]; then
		kill "$qemu_pid" 2>/dev/null
		wait "$qemu_pid" 2>/dev/null
	fi
	ip netns del "$io_ns" 2>/dev/null
}
