# Sourced by the veth tests that load tests/engine/fault_tc.bpf.c with tc (fault-veth.sh, incast-veth.sh):
# threshold P prints a probability as the program's 32-bit threshold; compile_bpf OUT [-DNAME=VALUE...]
# builds the program with its macros (clang's messages in $tmp/clang.log).
tc_bpf_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../engine" && pwd)/fault_tc.bpf.c

threshold() { awk -v p="$1" 'BEGIN { printf "%.0f", p * 4294967296 }'; }

compile_bpf() {	# OUT [-DNAME=VALUE...]
	local out=$1
	shift
	clang -O2 -target bpf -I"/usr/include/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)" \
		"$@" -c "$tc_bpf_src" -o "$out" 2>"$tmp/clang.log"
}
