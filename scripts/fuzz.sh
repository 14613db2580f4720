#!/usr/bin/env bash
# Build the header parser's libFuzzer target with clang (ASan + UBSan) and run it.
#   scripts/fuzz.sh [RUNS [PKTGEN [OUTDIR]]]   RUNS inputs (default 200000; the long run in doc/fuzzing.md uses
#                                              10000000); PKTGEN: a built rnic-pktgen (else build/ is built)
# Seeds: every frame of ../shared/oracles and of rnic-pktgen. Crashes are saved in build-fuzz/crashes/:
# each one found becomes a regression test in tests/fuzz/regressions/.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200000}
pktgen=${2:-}
out=${3:-build-fuzz}
mkdir -p "$out/corpus" "$out/crashes"
if [ -z "$pktgen" ]; then
	bash scripts/install-deps.sh
	[ -f build/build.ninja ] || meson setup build --buildtype=debugoptimized >/dev/null
	ninja -C build app/rnic-pktgen/rnic-pktgen >/dev/null
	pktgen=build/app/rnic-pktgen/rnic-pktgen
fi
"$pktgen" write "$out/pktgen.pcap" >/dev/null
/usr/bin/python3 tests/fuzz/seed_corpus.py "$out/seeds" ../shared/oracles/*.pcap "$out/pktgen.pcap" >/dev/null
# shellcheck disable=SC2046
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
	-DALLOW_EXPERIMENTAL_API $(pkg-config --cflags libdpdk) -Ilib -Ilib/wire \
	lib/wire/rnic_wire.c lib/wire/rnic_icrc.c tests/fuzz/fuzz_parser.c \
	$(pkg-config --libs libdpdk) -lisal -o "$out/fuzz_parser"
# Every past crash must stay fixed.
for f in tests/fuzz/regressions/*; do
	[ -e "$f" ] || continue
	"$out/fuzz_parser" "$f" >/dev/null 2>&1 || { echo "fuzz: regression $f fails again"; exit 1; }
done
"$out/fuzz_parser" -runs="$runs" -max_len=9000 -timeout=5 -artifact_prefix="$out/crashes/" \
	"$out/corpus" "$out/seeds" 2>"$out/fuzz.log" || { tail -n 30 "$out/fuzz.log"; exit 1; }
grep -E "^Done|#[0-9]+.*DONE" "$out/fuzz.log" | tail -n 1
echo "1 passed, 0 failed"
