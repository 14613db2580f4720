# Sourced by the scripts that run tools as clients of rnicd: rnicd_start RNICD SOCKET LOG PREFIX [ARGS...]
# starts the daemon, no hugepages, its output in LOG, and waits for its socket; it sets rnicd_pid and
# returns 1 if the daemon does not serve within 30 s. ARGS follow its EAL arguments (more EAL arguments,
# then -- and the engine's); without them, the embedded loopback pair (rnic0 10.77.0.1, rnic1 10.77.0.2).
# The command runs behind rnicd_prefix (an array: ip netns exec NS, for one).
rnicd_prefix=()
rnicd_start() {
	"${rnicd_prefix[@]}" "$1" --socket "$2" -- -l 0,1 --no-huge -m 1024 --no-pci --no-shconf --log-level=error \
		--file-prefix "$4" "${@:5}" >"$3" 2>&1 &
	rnicd_pid=$!
	for _ in $(seq 300); do
		[ -S "$2" ] && return 0
		kill -0 "$rnicd_pid" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
