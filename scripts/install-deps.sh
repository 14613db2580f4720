#!/usr/bin/env bash
# Install what softrnic needs to build and test on Debian 12 (DPDK 22.11 and friends). Idempotent: apt runs
# only when a package is missing. Needs root (or sudo).
#   install-deps.sh             the build and the unit suite
#   install-deps.sh --interop   also the interop suite's (scripts/interop.sh: the guest image and qemu)
set -euo pipefail

packages=(
	dpdk dpdk-dev libdpdk-dev libnuma-dev libcmocka-dev libisal-dev libibverbs-dev
	# the stock libibverbs tools run on softrnic through libsoftrnic-verbs (tests/verbs, doc/verbs.md)
	ibverbs-utils perftest
	# librdmacm's programs (rping) on softrnic's CM through libsoftrnic-verbs (tests/verbs, doc/cm.md)
	librdmacm-dev rdmacm-utils
	meson ninja-build pkg-config gcc python3 python3-pyelftools
	python3-scapy python3-matplotlib python3-prometheus-client tshark iproute2 libpcap-dev
	clang libclang-rt-14-dev
	# the kernel's faults in tests/engine/fault-veth.sh and incast-veth.sh: tc-BPF (clang -target bpf,
	# libbpf's headers, tc; bpftool reads the program's counts); nftables drops on the interop bridge
	libbpf-dev bpftool nftables
	# Open vSwitch built with DPDK: rnicd's ports on an OVS-DPDK bridge (tests/ovs, scripts/ovs-demo.sh,
	# doc/deploy.md); the tests start their own ovsdb-server and ovs-vswitchd-dpdk, never the system's
	openvswitch-switch-dpdk
)
if [ "${1:-}" = --interop ]; then
	# mmdebstrap and mke2fs build the guest image, qemu runs it (doc/interop.md)
	packages+=(mmdebstrap e2fsprogs qemu-system-x86)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
	sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
# tshark asks whether non-root users may capture; answer no without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
