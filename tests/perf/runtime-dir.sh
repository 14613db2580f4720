#!/usr/bin/env bash
# A tool leaves no DPDK runtime directory behind: rnic-perf with --no-shconf (its default) removes the
# /var/run/dpdk/PREFIX that EAL made (one was left per file prefix, run after run), and the directory of a
# run with the shared configuration (EAL's files in it) stays. meson runs it in a private tmpfs on
# /var/run/dpdk (tests/common/private-dpdk-dir.sh); it needs root (skipped, exit 77, without).
# Usage: runtime-dir.sh RNIC_PERF
set -u
perf=$1
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root (DPDK's runtime directory is /var/run/dpdk)"; exit 77; }
run() {
	timeout 60 "$perf" --loopback -o write -s 64 -n 200 -- -l 0,1 --no-huge -m 256 --no-pci \
		--log-level=error "$@" >/dev/null 2>&1
}
status=0
if ! run --file-prefix rd-noshconf-$$ --no-shconf; then
	echo "FAIL: rnic-perf --no-shconf did not run"
	status=1
elif [ -e /var/run/dpdk/rd-noshconf-$$ ]; then
	echo "FAIL: /var/run/dpdk/rd-noshconf-$$ left behind: $(ls -A /var/run/dpdk/rd-noshconf-$$ | tr '\n' ' ')"
	status=1
else
	echo "ok: --no-shconf: no runtime directory left"
fi
if ! run --file-prefix rd-shconf-$$; then
	echo "FAIL: rnic-perf with the shared configuration did not run"
	status=1
elif [ ! -e /var/run/dpdk/rd-shconf-$$/config ]; then
	echo "FAIL: the shared configuration's directory is gone: EAL's files are not the tool's to remove"
	status=1
else
	echo "ok: the shared configuration's directory stays"
fi
rm -rf /var/run/dpdk/rd-shconf-$$
exit $status
