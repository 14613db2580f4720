#!/usr/bin/env bash
# The interop suite's guest image: Debian 12 with Linux Soft-RoCE (rdma_rxe in the stock kernel; not the
# -cloud kernel, which lacks it), rdma-core, ibverbs-utils, perftest, rdmacm-utils and iproute2, built by
# mmdebstrap from the host's Debian sources, and kept in a cache keyed by what makes it (the package list,
# this script and the guest's init): a second run finds it and builds nothing.
#   image.sh CACHE_DIR     prints the directory that holds vmlinuz, initrd.img and root.img (ext4)
# The image is never written to: qemu runs it with -snapshot. Other keys' images in CACHE_DIR are removed
# once a new one is built (the cache holds one image, ~1.2 GB sparse).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1

packages=(
	linux-image-amd64 initramfs-tools udev kmod busybox iproute2
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
)
key=$(cat "$0" "$here/guest/init" | sha256sum | cut -c1-16)
image=$cache/bookworm-rxe-$key
if [ -f "$image/complete" ]; then
	echo "$image"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 900 9 || { echo "image.sh: $cache is locked by another build for 15 min" >&2; exit 1; }
if [ -f "$image/complete" ]; then	# built by whoever held the lock
	echo "$image"
	exit 0
fi

# The host's Debian sources (deb822 .sources or one-line .list files), so the guest comes from the same
# archive as the host's packages; without any, mmdebstrap's default.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -s "$f" ] && grep -Eq '^[^#]*(/debian|/debian-security)/?([[:space:]]|$)' "$f" && sources+=("$f")
done

tmp=$image.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
echo "image.sh: building the guest image ($key) with mmdebstrap" >&2
# No documentation, manuals or translations: the image is smaller and mke2fs faster. The initramfs holds
# only what mounts the root and brings up the network (MODULES=list: virtio's PCI, block and net drivers,
# ext4; the guest runs no udev that would load them later): the default, MODULES=most, packs hundreds of
# modules, which took 3 minutes each of the two times the install makes it on a loaded 2-core machine (this
# one: seconds), and the guest's boot under TCG loaded them all. A mirror that stalls ends the build after
# 8 minutes (it takes 3-4 when the mirror answers, on a loaded machine).
if ! timeout -k 10 480 mmdebstrap --mode=root --variant=minbase --format=directory \
	--include="$(IFS=,; echo "${packages[*]}")" \
	--aptopt='APT::Install-Recommends "false"' \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" && echo MODULES=list >"$1/etc/initramfs-tools/conf.d/softrnic"' \
	--setup-hook='mkdir -p "$1/usr/share/initramfs-tools/modules.d" &&
		printf "%s\n" virtio_pci virtio_blk virtio_net ext4 >"$1/usr/share/initramfs-tools/modules.d/softrnic"' \
	--customize-hook="install -m 0755 '$here/guest/init' \"\$1/sbin/softrnic-init\"" \
	--customize-hook='echo softrnic-guest >"$1/etc/hostname"' \
	bookworm "$tmp/root" "${sources[@]}" >"$tmp/mmdebstrap.log" 2>&1; then
	tail -n 30 "$tmp/mmdebstrap.log" >&2
	echo "image.sh: mmdebstrap failed" >&2
	exit 1
fi
cp "$tmp"/root/boot/vmlinuz-* "$tmp/vmlinuz"
cp "$tmp"/root/boot/initrd.img-* "$tmp/initrd.img"
# Room for what the tests write (logs, the guest program): 256 MB over what the tree holds.
size_mb=$(( $(du -sm "$tmp/root" | cut -f1) + 256 ))
mke2fs -q -t ext4 -L root -d "$tmp/root" "$tmp/root.img" "${size_mb}M" >&2
rm -rf "$tmp/root" "$tmp/mmdebstrap.log"
echo "$(( $(date +%s) - start ))" >"$tmp/build-seconds"
touch "$tmp/complete"
for old in "$cache"/bookworm-rxe-*; do
	[ "$old" = "$tmp" ] || rm -rf "$old"
done
mv "$tmp" "$image"
trap - EXIT
echo "image.sh: built in $(cat "$image/build-seconds") s: $image" >&2
echo "$image"
