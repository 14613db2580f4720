#!/usr/bin/env bash
# The interop suite (doc/interop.md): softrnic against Linux Soft-RoCE (rdma_rxe, rdma-core) in a Debian 12
# VM under qemu, on a bridge in a network namespace of its own. Installs what is missing
# (install-deps.sh --interop), builds softrnic in build/ (as scripts/test.sh does) with the guest's
# verbs-check, builds the guest image or finds it in the cache, then runs tests/interop/run.sh with a
# private /var/run/dpdk, then the meson suite 'ovs' (rnicd beside OVS-DPDK, and the same guest on its bridge:
# doc/deploy.md). Ends with the table of case x direction and 'interop: N passed, N failed, N known not to work yet' (both parts; cases
# known not to work yet neither pass nor fail the run: doc/interop.md).
# Exit 0 when no case failed, 1 otherwise, 77 when this machine cannot run it (no root, /dev/net/tun,
# network namespaces or qemu: it says which).
#   scripts/interop.sh            the cache: $INTEROP_CACHE, else /var/cache/softrnic-interop
# tests/interop/run.sh lists the environment variables that choose cases and modes.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${INTEROP_CACHE:-/var/cache/softrnic-interop}

bash scripts/install-deps.sh --interop
# Before the image (minutes to build): can this machine run the VM at all?
(
	# shellcheck source=../tests/interop/vm.sh
	. tests/interop/vm.sh
	trap vm_teardown EXIT
	vm_can_run
) || exit $?

if [ -f build/build.ninja ]; then
	meson configure build -Dwerror=true >/dev/null
else
	meson setup build --buildtype=debugoptimized -Dwerror=true >/dev/null
fi
ninja -C build >/dev/null
[ -x build/tests/interop/verbs-check ] || { echo "interop: the guest's verbs-check was not built (libibverbs-dev?)"; exit 1; }

start=$SECONDS
image=$(bash tests/interop/image.sh "$cache")
echo "interop: guest image ready in $((SECONDS - start)) s: $image"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
tests/common/private-dpdk-dir.sh tests/interop/run.sh build "$image" build/tests/interop | tee "$log"
vm_ok=${PIPESTATUS[0]}
set -e
read -r passed failed known < <(sed -nE 's/^interop: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) known.*/\1 \2 \3/p' "$log" |
				 tail -1) || true
[ -n "${passed:-}" ] || { passed=0 failed=1 known=0; }	# it ended before its summary

# softrnic beside Open vSwitch with DPDK (doc/deploy.md): the meson suite 'ovs', each test a switch of its own,
# ovs-vm with this guest image on it; a test that cannot start OVS-DPDK or the guest skips (counted in
# neither). Under INTEROP_LOCK, as the VM's cases.
SOFTRNIC_VM_IMAGE=$image ${INTEROP_LOCK:+flock "$INTEROP_LOCK"} \
	meson test -C build --suite ovs --print-errorlogs >build/ovs-output.txt 2>&1 || true
ovs_count() {	# meson's closing tally of a kind (Ok, Fail, Timeout)
	sed -nE "s/^$1: +([0-9]+) *\$/\\1/p" build/ovs-output.txt | tail -1 | grep . || echo 0
}
ovs_passed=$(ovs_count Ok)
ovs_failed=$(( $(ovs_count Fail) + $(ovs_count Timeout) ))
grep -E '^ *[0-9]+/[0-9]+ ' build/ovs-output.txt | sed 's/^/interop: ovs: /' || true
if ! grep -qE '^Ok: ' build/ovs-output.txt; then
	ovs_failed=1	# meson test itself failed: no tally
fi
[ "$ovs_failed" -eq 0 ] || tail -n 150 build/ovs-output.txt
echo "interop: $((passed + ovs_passed)) passed, $((failed + ovs_failed)) failed, $known known not to work yet" \
     "(the VM's cases $passed / $failed, OVS-DPDK's $ovs_passed / $ovs_failed)"
[ "$vm_ok" -eq 0 ] && [ "$ovs_failed" -eq 0 ]
