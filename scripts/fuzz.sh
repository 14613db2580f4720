#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan) and run them.
#   scripts/fuzz.sh [RUNS [PKTGEN [OUTDIR [TARGETS]]]]
#     RUNS     inputs per target (default 200000; the long runs in doc/fuzzing.md use 10000000)
#     PKTGEN   a built rnic-pktgen (else build/ is built)
#     TARGETS  "parser responder hostif" (default: all three)
#   FUZZ_OBJ_CACHE (environment): where the compiled sources are kept for the next target or run (default:
#   OUTDIR)
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
	-DALLOW_EXPERIMENTAL_API -DRNIC_VERSION=\"fuzz\" $(pkg-config --cflags libdpdk)
	-Ilib -Ilib/core -Ilib/wire -Ilib/mr -Ilib/cq -Ilib/qp -Ilib/engine -Ilib/client -Idrivers -Itests/common"

# Build target $1 from sources $2 and its fuzz_$1.c: one compiler per core (the whole library, one file
# after the other, took most of a short run's time), then the link. The sources' objects are kept by the
# content of the sources, every header of the tree and the flags, in FUZZ_OBJ_CACHE (default: the output
# directory), so targets of the same sources (responder, hostif) compile them once.
build_target() {
	local t=$1 srcs=$2 set key objs
	# shellcheck disable=SC2086
	set=$(echo "$cflags $srcs" | sha1sum | cut -c1-8)
	# shellcheck disable=SC2086
	key=$(cat $srcs lib/*/*.h drivers/*.h tests/common/*.h | sha1sum | cut -c1-16)
	objs=${FUZZ_OBJ_CACHE:-$out}/fuzz-objs-$set-$key
	if [ ! -f "$objs/complete" ]; then
		rm -rf "${FUZZ_OBJ_CACHE:-$out}/fuzz-objs-$set-"*
		mkdir -p "$objs"
		# shellcheck disable=SC2086
		printf '%s\n' $srcs | xargs -P "$(nproc)" -I{} sh -c \
			'clang $1 -c "$2" -o "$3/$(echo "$2" | tr / _).o"' sh "$cflags" {} "$objs" || exit 1
		touch "$objs/complete"
	fi
	# shellcheck disable=SC2086
	clang $cflags "tests/fuzz/fuzz_$t.c" "$objs"/*.o $(pkg-config --libs libdpdk) -lrte_net_ring -lisal -lnuma \
		-lpthread -o "$out/fuzz_$t"
}

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
	build_target "$t" "$srcs"
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
