#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan) and run them.
#   scripts/fuzz.sh [RUNS [PKTGEN [OUTDIR [TARGETS]]]]
#     RUNS     inputs per target (default 200000; the long runs in doc/fuzzing.md use 10000000)
#     PKTGEN   a built rnic-pktgen (else build/ is built)
#     TARGETS  "parser responder hostif" (default: all three)
#   FUZZ_TIMEOUT (environment): seconds one input may take (default 30: inputs take milliseconds, but on a
#   busy machine one was descheduled for 10-29 s, and the test command's short run under a full CI failed
#   at 5 s; a real hang never ends)
# parser: the header parser, any bytes. responder: the responder and completer behind it, sequences of
# frames steered at live QPs (tests/fuzz/fuzz_responder.c). hostif: a tenant's shared memory (QP and CQ
# host-interface blocks, doorbell queue) written with any bytes while its traffic runs (tests/fuzz/fuzz_hostif.c).
# Seeds: every frame of tests/oracle/data and of rnic-pktgen (hostif: a few runs of traffic,
# seed_corpus.py --hostif). Crashes are saved in OUTDIR/crashes-TARGET/:
# each one found becomes a regression test in tests/fuzz/regressions/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200000}
pktgen=${2:-}
out=${3:-build-fuzz}
targets=${4:-parser responder hostif}
mkdir -p "$out"
if [ -z "$pktgen" ]; then
	bash scripts/install-deps.sh
	[ -f build/build.ninja ] || meson setup build --buildtype=debugoptimized >/dev/null
	ninja -C build app/rnic-pktgen/rnic-pktgen >/dev/null
	pktgen=build/app/rnic-pktgen/rnic-pktgen
fi
"$pktgen" write "$out/pktgen.pcap" >/dev/null
cflags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE
	-DALLOW_EXPERIMENTAL_API -DRNIC_VERSION=\"fuzz\" $(pkg-config --cflags libdpdk)"
for t in $targets; do
	case $t in
	parser)
		srcs="lib/wire/rnic_wire.c lib/wire/rnic_icrc.c"
		seeds=""
		leaks=1
		maxlen=9000 ;;
	responder)
		srcs="lib/*/*.c drivers/*.c"
		seeds="--records"
		# LeakSanitizer does not scan DPDK's memory (rte_malloc), so what only it points to looks leaked.
		leaks=0
		maxlen=12000 ;;
	hostif)
		srcs="lib/*/*.c drivers/*.c"
		seeds="--hostif"
		leaks=0
		maxlen=4096 ;;
	*) echo "fuzz: no target $t"; exit 2 ;;
	esac
	rm -rf "$out/seeds-$t"
	mkdir -p "$out/corpus-$t" "$out/crashes-$t"
	if [ "$seeds" = --hostif ]; then
		/usr/bin/python3 tests/fuzz/seed_corpus.py --hostif "$out/seeds-$t" >/dev/null
	else
		/usr/bin/python3 tests/fuzz/seed_corpus.py $seeds "$out/seeds-$t" tests/oracle/data/*.pcap \
			"$out/pktgen.pcap" >/dev/null
	fi
	# shellcheck disable=SC2086
	clang $cflags -Ilib -Ilib/core -Ilib/wire -Ilib/mr -Ilib/cq -Ilib/qp -Ilib/engine -Ilib/client -Idrivers -Itests/common \
		$srcs "tests/fuzz/fuzz_$t.c" $(pkg-config --libs libdpdk) -lrte_net_ring -lisal -lnuma -lpthread -o "$out/fuzz_$t"
	# Every past crash must stay fixed. Each runs three times: the engine keeps state from one input to the
	# next (its pipelines, the peers' QPs), and a crash found in a run may need it.
	for f in "tests/fuzz/regressions/$t"/*; do
		[ -e "$f" ] || continue
		ASAN_OPTIONS=detect_leaks=$leaks "$out/fuzz_$t" -runs=3 "$f" >/dev/null 2>&1 ||
			{ echo "fuzz: regression $f fails again"; exit 1; }
	done
	ASAN_OPTIONS=detect_leaks=$leaks "$out/fuzz_$t" -detect_leaks=$leaks -runs="$runs" -max_len=$maxlen \
		-timeout="${FUZZ_TIMEOUT:-30}" -artifact_prefix="$out/crashes-$t/" \
		"$out/corpus-$t" "$out/seeds-$t" 2>"$out/fuzz-$t.log" || { tail -n 30 "$out/fuzz-$t.log"; exit 1; }
	echo "$t: $(grep -E "^Done|#[0-9]+.*DONE" "$out/fuzz-$t.log" | tail -n 1)"
done
echo "$(wc -w <<<"$targets") passed, 0 failed"
