#!/usr/bin/env bash
# The interop suite (doc/interop.md): softrnic against Linux Soft-RoCE (rdma_rxe, rdma-core) in a Debian 12
# VM under qemu, on a bridge in a network namespace of its own. Installs what is missing
# (install-deps.sh --interop), builds softrnic in build/ (as scripts/test.sh does) with the guest's
# verbs-check, builds the guest image or finds it in the cache, then runs tests/interop/run.sh with a
# private /var/run/dpdk. Ends with the table of case x direction and 'interop: N passed, N failed, N known
# not to work yet' (cases known not to work yet neither pass nor fail the run: doc/interop.md).
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
exec tests/common/private-dpdk-dir.sh tests/interop/run.sh build "$image" build/tests/interop
