# shellcheck shell=sh
# The interop guest's agent, run by its init (guest/init) from the host's share, mounted at /mnt/host.
# It brings up the network interface and Linux Soft-RoCE (rxe0 on it) as /mnt/host/guest.conf says, writes
# /mnt/host/ready (or /mnt/host/failed) with what it found, and then runs the jobs the host drops into
# /mnt/host/jobs: NAME.sh is claimed (renamed NAME.run), run in the background under a time limit with its
# output in NAME.out, and its exit status lands in NAME.rc, written last. It returns (and init powers the
# guest off) when the host creates /mnt/host/stop.
share=/mnt/host
# shellcheck source=/dev/null
. "$share/guest.conf"	# GUEST_ADDR (address/prefix), GUEST_MTU, JOB_TIMEOUT; optional: GUEST_MAC, and
			# GUEST_CTRL_MAC with GUEST_CTRL_ADDR (a second interface, for the TCP exchanges only)

fail() {
	echo "agent: $*" | tee "$share/failed"
	exit 1
}

# MAC: the interface that has it; empty: the first (a guest with one interface).
interface() {
	for d in /sys/class/net/*; do
		[ "${d##*/}" != lo ] || continue
		if [ -z "$1" ] || [ "$(cat "$d/address")" = "$1" ]; then
			echo "${d##*/}"
			return
		fi
	done
}

dev=$(interface "${GUEST_MAC:-}")
[ -n "$dev" ] || fail "no network interface ${GUEST_MAC:+with the MAC $GUEST_MAC}"
ip link set lo up
if [ -n "${GUEST_CTRL_MAC:-}" ]; then
	ctrl=$(interface "$GUEST_CTRL_MAC")
	[ -n "$ctrl" ] || fail "no network interface with the MAC $GUEST_CTRL_MAC"
	ip link set "$ctrl" up || fail "cannot bring $ctrl up"
	ip addr add "$GUEST_CTRL_ADDR" dev "$ctrl" || fail "cannot give $ctrl the address $GUEST_CTRL_ADDR"
fi
ip link set "$dev" mtu "$GUEST_MTU" up || fail "cannot set $dev's MTU to $GUEST_MTU"
ip addr add "$GUEST_ADDR" dev "$dev" || fail "cannot give $dev the address $GUEST_ADDR"
modprobe rdma_rxe || fail "no rdma_rxe module"
rdma link add rxe0 type rxe netdev "$dev" || fail "cannot create rxe0 on $dev"
# The port is ACTIVE once the interface has carrier.
i=0
until ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "rxe0's port did not become active"
	sleep 0.1
done
{
	echo "kernel $(uname -r), interface $dev"
	rdma link show
	# The GIDs in use (of the 1024 the table has), as "GID[  1]:  ::ffff:10.97.0.2, RoCE v2".
	ibv_devinfo -v -d rxe0 | grep -E "state:|active_mtu|link_layer|GID\["
} >"$share/ready.tmp" 2>&1
mv "$share/ready.tmp" "$share/ready"

cd "$share/jobs" || fail "no jobs directory in the share"
while [ ! -e "$share/stop" ]; do
	for job in *.sh; do
		[ -e "$job" ] || continue
		name=${job%.sh}
		mv "$job" "$name.run" || continue
		(
			timeout -k 5 "$JOB_TIMEOUT" sh "$name.run" >"$name.out" 2>&1
			echo $? >"$name.rc.tmp"
			mv "$name.rc.tmp" "$name.rc"
		) &
	done
	sleep 0.2
done
