# Sourced by the veth tests that load tests/engine/fault_tc.bpf.c with tc (fault-veth.sh, incast-veth.sh):
# threshold P prints a probability as the program's 32-bit threshold; compile_bpf OUT [-DNAME=VALUE...]
# builds the program with its macros and BTF (clang's messages in $tmp/clang.log); bpf_bss_map NETNS DEV
# finds the map of the global variables of the program on DEV's tc hook, bpf_globals MAP prints them as JSON.
tc_bpf_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../engine" && pwd)/fault_tc.bpf.c

threshold() { awk -v p="$1" 'BEGIN { printf "%.0f", p * 4294967296 }'; }

compile_bpf() {	# OUT [-DNAME=VALUE...]
	local out=$1
	shift
	clang -g -O2 -target bpf -I"/usr/include/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)" \
		"$@" -c "$tc_bpf_src" -o "$out" 2>"$tmp/clang.log"
}

bpf_bss_map() {	# NETNS DEV: the id of the .bss map of the program on DEV's tc hook (none: empty)
	local prog
	prog=$(ip netns exec "$1" bpftool -j net show dev "$2" 2>/dev/null | python3 -c '
import json, sys
for dev in json.load(sys.stdin):
    for f in dev.get("tc", []):
        print(f["id"]); sys.exit(0)' 2>/dev/null)
	[ -n "$prog" ] || return 0
	bpftool -j prog show id "$prog" | python3 -c '
import json, subprocess, sys
for m in json.load(sys.stdin).get("map_ids", []):
    info = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(m)], capture_output=True,
                                     text=True).stdout)
    if info.get("name", "").endswith(".bss"):
        print(m); sys.exit(0)'
}

bpf_globals() {	# MAP: the program's global variables in that .bss map, as one JSON object ({} for no map)
	[ -n "$1" ] || { echo '{}'; return; }
	bpftool -j map dump id "$1" | python3 -c '
import json, sys
out = {}
for entry in json.load(sys.stdin):
    for var in entry.get("formatted", {}).get("value", {}).get(".bss", []):
        out.update(var)
print(json.dumps(out))'
}
