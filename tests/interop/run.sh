#!/usr/bin/env bash
# The interop suite (doc/interop.md): softrnic against Linux Soft-RoCE (rdma_rxe in Debian 12's kernel,
# rdma-core 44) in a VM on a bridge. Every case runs twice, softrnic once as server and once as client,
# and checks data on both ends:
#   {rc,uc,ud}-pingpong   the stock ibv_{rc,uc,ud}_pingpong -g 1 -c in the guest against rnic-ibv-pingpong
#                         (which checks every message: the stock tools send back what they receive), the
#                         stock server's own -c check, and every iteration done on both ends
#   verbs                 verbs-check (guest, libibverbs) against rnic-verbs-check (the same source on
#                         softrnic): WRITE, WRITE and SEND with immediate, READ, FETCH_ADD, CMP_SWAP, each
#                         end acting in turn, checked on both ends
#   ib_{write,read,send}_bw  Debian's perftest on both ends (softrnic's through softrnic-run, the interposer):
#                         exit status, size, iterations and bandwidth reported on both ends
#   rping, ucmatose-migrate, ib_{write,read,send}_bw-R  librdmacm's programs connecting through softrnic's CM
#                         (the interposer's librdmacm) and Linux's kernel CM, no TCP: rping's pings checked
#                         by its client, ucmatose's SENDs and rdma_migrate_id, perftest's figures;
#                         cm-no-listener: rping's REQ to a port nobody listens on, rejected with reason 8
# at path MTU 1024 and 4096 (perftest: 4096; every link at MTU 9000), and rc-pingpong
# and verbs again with loss on the bridge (INTEROP_LOSS per mille of the RoCE frames, each way);
# wire-frames checks the captured frames.
# No side is told the other's MAC (as between real hosts): each learns it by ARP, and arp checks that the
# guest learned softrnic's; wire-habits checks TTL, IP ID and source ports per QP pair. Cases known not to
# work yet count apart: their failure does not fail the
# run, their pass does (the suite must then make them plain cases). A table of case x direction ends the
# run, then 'interop: N passed, N failed, N known not to work yet'.
#   run.sh BUILD_DIR IMAGE_DIR GUEST_BIN_DIR
# Environment:
#   INTEROP_STATIC_NEIGH=1  each side is told the other's MAC (softrnic --neigh, the guest's "ip neigh ...
#                           nud permanent"), and rc-pingpong-mtu1024-noneigh and arp run without;
#                           0 (default): no case has them, as between real hosts
#   INTEROP_WIRE_HABITS=0   wire-habits counts as known not to work (default 1: a plain case)
#   INTEROP_CASES           a regular expression: only the cases whose name matches
#   INTEROP_CM_ATTEMPTS     how many times a -R case runs whose client lost perftest 4.5's connect race (default 12: cm_one)
#   INTEROP_LOSS            per mille of RoCE frames dropped in the loss cases (default 20: 2 %)
#   INTEROP_LOCK            a file to flock around each case (a machine shared with other DPDK runs)
#   INTEROP_BOOT_TIMEOUT    seconds the guest may take to boot (default 300)
#   INTEROP_PCAP            a file: every frame crossing softrnic's bridge port in the whole run (dumpcap)
# Exit status: 0 every case passed (known ones aside), 1 one failed, 77 this machine cannot run the suite (says why).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
image=$2
guest_bin=$3
# shellcheck source=vm.sh
. "$here/vm.sh"
static_neigh=${INTEROP_STATIC_NEIGH:-0}
only=${INTEROP_CASES:-.}
loss=${INTEROP_LOSS:-20}
wait_s=20		# how long a program waits for a completion (its -T)
work=$(mktemp -d /tmp/softrnic-interop.XXXXXX)
share=$work/share
host_pid=''		# softrnic's program while it runs
capture_pid=''		# dumpcap while it runs
pcap_pid=''		# INTEROP_PCAP's dumpcap
results=()		# "case|direction|result|seconds"
passed=0
failed=0
known_failed=0		# cases known not to work yet that failed, as expected
known_whys=()		# why those are known not to work yet
known=''		# while set: why the cases being run are known not to work yet (record)
lock_s=0		# time spent waiting for INTEROP_LOCK

cleanup() {
	for p in $host_pid $capture_pid $pcap_pid; do kill "$p" 2>/dev/null; done
	[ -z "$pcap_pid" ] || wait "$pcap_pid"
	vm_teardown
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

vm_can_run || exit $?
pingpong=$build/app/rnic-ibv-pingpong/rnic-ibv-pingpong
verbs_check=$build/tests/interop/rnic-verbs-check
softrnic_run=$build/verbs/softrnic-run
perftest_tools="ib_write_bw ib_read_bw ib_send_bw"
for t in $perftest_tools; do
	command -v "$t" >/dev/null || { echo "interop: $t is missing (perftest: scripts/install-deps.sh)"; exit 1; }
done
for f in "$pingpong" "$verbs_check" "$softrnic_run" "$guest_bin/verbs-check" "$image/root.img"; do
	[ -e "$f" ] || { echo "interop: $f is missing"; exit 1; }
done

# DPDK's af_packet port holds a frame in framesz bytes of its ring (2048 by default: a 4096-byte RoCE MTU
# frame does not fit) and finds frame i at i * framesz, so a block (blocksz, whole pages) must hold whole
# frames: 16 frames of 4352 bytes (the mbuf's data room, 4096 + 256, + 32 bytes of ring header at most).
af_packet_args=${INTEROP_AF_PACKET:-qpairs=2,blocksz=69632,framesz=4352,framecnt=512}

# softrnic's EAL and engine arguments: one lcore, every stage on it (the programs progress the engine
# whenever they wait), so qemu and the kernel's bridge keep the other core. While $worker_stages is set
# (perftest, and every case with softrnic as client), the stages run on a worker lcore instead, on the same
# core as the program's thread (0):
# perftest waits in its TCP exchange, polling nothing, while its server's peer WRITEs or READs and while
# the peer's QP goes to RTR, whose ARP request for softrnic's address only a running engine answers
# (doc/verbs.md, "perftest").
rnic_args() {
	local lcores="-l 0" stages="--stages devices"
	[ -z "$worker_stages" ] || { lcores="--lcores 0@0,1@0"; stages=; }
	echo "$lcores --no-huge -m 512 --no-pci --no-shconf --log-level=error --file-prefix io-$$" \
		"--vdev=net_af_packet0,iface=$io_dev,$af_packet_args -- --port net_af_packet0 --ip $rnic_ip $stages"
	[ "$static_neigh" = 0 ] || echo "--neigh $guest_ip,$guest_mac"
}
worker_stages=''		# set while a perftest case runs: rnic_args
show_ok=''		# while set, a passed case shows the lines of both ends' output that its checks matched

# Whether softrnic's server listens on PORT, within 20 s (the stock clients connect once, without retry).
host_listens() {
	for _ in $(seq 100); do
		in_ns ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.2
	done
	return 1
}

# Whether the guest's server listens on PORT, within 20 s (perftest's clients connect once, without retry).
guest_listens() {
	guest_run "i=0; until ss -Hltn 'sport = :$1' | grep -q .; do
		i=\$((i + 1)); [ \$i -lt 100 ] || exit 1; sleep 0.2; done" 30 >/dev/null
}

# NAME DIRECTION GUEST_CMD GUEST_OK HOST_OK HOST_CMD...: one case in one direction (server: softrnic
# serves and the guest's program connects to 10.97.0.1; client: the other way). GUEST_CMD and HOST_CMD
# get the TCP port; it passes when both ends exit 0 and their output matches GUEST_OK and HOST_OK
# (grep -E), and no stock server's -c check printed "invalid data". A HOST_CMD of softrnic-run (a stock
# program on the interposer) gets softrnic's arguments in SOFTRNIC_ARGS, any other after "--".
run_one() {
	local name=$1 dir=$2 guest_cmd=$3 guest_ok=$4 host_ok=$5
	shift 5
	local port=$((18600 + ${#results[@]})) start=$SECONDS why=''
	local host_log=$work/$name-$dir.host.log
	local -a host_cmd=("$@" -p "$port")
	# As client, softrnic's program waits in its TCP exchange while the guest's QP goes to RTR and the
	# guest's kernel asks softrnic's address by ARP: only stages on a worker lcore answer then (with every
	# stage on the program's thread, "Failed to modify QP to RTR" once the guest's entry had gone stale).
	local worker_stages=$worker_stages
	[ "$dir" = server ] || worker_stages=1
	[ "$dir" = server ] || host_cmd+=("$guest_ip")
	if [ "$1" = "$softrnic_run" ]; then
		host_cmd=(env SOFTRNIC_ARGS="$(rnic_args)" "${host_cmd[@]}")
	else
		# shellcheck disable=SC2207
		host_cmd+=(-- $(rnic_args))
	fi
	local job		# the guest's program (guest_run, in guest_listens, starts jobs of its own)
	if [ "$dir" = server ]; then
		ip netns exec "$io_ns" timeout 90 "${host_cmd[@]}" >"$host_log" 2>&1 &
		host_pid=$!
		host_listens $port || why="softrnic's server does not listen on TCP port $port"
		guest_start "timeout 60 $guest_cmd -p $port $host_ip"
		job=$guest_job
	else
		guest_start "timeout 60 $guest_cmd -p $port"
		job=$guest_job
		guest_listens $port || why="the guest's server does not listen on TCP port $port"
		ip netns exec "$io_ns" timeout 90 "${host_cmd[@]}" >"$host_log" 2>&1 &
		host_pid=$!
	fi
	end_one "$name" "$dir" "$start" "$why" "$job" "$host_log" "$guest_ok" "$host_ok"
}

# The stock programs of the cases, stopped in the guest (one that outlived its case).
guest_stop_tools() {
	guest_run "busybox killall -q ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong verbs-check $perftest_tools rping ucmatose" \
		20 >/dev/null
}

# NAME DIRECTION START WHY JOB HOST_LOG GUEST_OK HOST_OK [RETRY]: the end of a case whose two programs run
# (softrnic's as $host_pid, the guest's as JOB): the client waited for first, then the server, both checked,
# recorded, and their output shown if it failed (WHY: what failed already, or empty). RETRY: what a client
# prints when it lost perftest 4.5's connect race (cm_one): then the server is stopped, nothing is recorded,
# and the status is 2.
end_one() {
	local name=$1 dir=$2 start=$3 why=$4 job=$5 host_log=$6 guest_ok=$7 host_ok=$8 retry=${9:-} host_rc guest_rc
	local guest_out=$vm_share/jobs/$job.out
	if [ "$dir" = server ]; then
		guest_wait "$job" 70
		guest_rc=$?
		if [ -n "$retry" ] && grep -qs "$retry" "$guest_out"; then
			kill "$host_pid" 2>/dev/null
			wait "$host_pid"
			host_pid=''
			return 2
		fi
		wait "$host_pid"
		host_rc=$?
	else
		wait "$host_pid"
		host_rc=$?
		if [ -n "$retry" ] && grep -qs "$retry" "$host_log"; then
			host_pid=''
			guest_stop_tools
			guest_wait "$job" 20
			return 2
		fi
		guest_wait "$job" 30
		guest_rc=$?
	fi
	host_pid=''
	if [ ! -e "$vm_share/jobs/$job.rc" ]; then
		guest_rc="none in time"
		guest_stop_tools
	fi
	local -a fails=()
	[ -z "$why" ] || fails+=("$why")
	[ "$host_rc" = 0 ] || fails+=("softrnic exit $host_rc")
	[ "$guest_rc" = 0 ] || fails+=("guest exit $guest_rc")
	grep -Eq "$host_ok" "$host_log" || fails+=("softrnic's output lacks /$host_ok/")
	grep -Eqs "$guest_ok" "$guest_out" || fails+=("the guest's output lacks /$guest_ok/")
	! grep -qs "invalid data" "$guest_out" || fails+=("the stock server found invalid data")
	why=${fails[0]:-}
	record "$name" "$dir" "$why" $((SECONDS - start))
	if [ -n "$show_ok" ] && { [ -z "$why" ] || [ -n "$known" ]; }; then
		grep -Em1 "$host_ok" "$host_log" | sed 's/^/    softrnic: /'
		grep -Em1 "$guest_ok" "$guest_out" | sed 's/^/    guest: /'
	elif [ -n "$why" ]; then
		# A failure known from before needs no more than its first lines.
		local lines=1000
		[ -z "$known" ] || lines=4
		head -n $lines "$host_log" | sed 's/^/    softrnic: /'
		head -n $lines "$guest_out" 2>/dev/null | sed 's/^/    guest: /'
	fi
}

# NAME DIRECTION WHY SECONDS (WHY empty: passed). DIRECTION: server or client (softrnic's role), or what
# a check of another kind looks at (capture, guest, bridge). While $known says why the case is known not
# to work yet, its failure is counted as known (not as a pass, and not failing the run) and its pass as a
# failure: the suite then still expects the wrong thing (doc/interop.md: make it a plain case).
record() {
	local what res
	what="$1, $(case $2 in server|client) echo "softrnic $2" ;; *) echo "$2" ;; esac)"
	if [ -z "$3" ] && [ -z "$known" ]; then
		res=pass
		passed=$((passed + 1))
		echo "interop: $what: passed ($4 s)"
	elif [ -z "$3" ]; then
		res=XPASS
		failed=$((failed + 1))
		echo "interop: $what: FAILED: passed, but it is listed as known not to work yet ($known);" \
			"make it a plain case (doc/interop.md)"
	elif [ -n "$known" ]; then
		res=known
		known_failed=$((known_failed + 1))
		[[ " ${known_whys[*]} " == *" $known "* ]] || known_whys+=("$known")
		echo "interop: $what: known not to work yet ($known): $3"
	else
		res=FAIL
		failed=$((failed + 1))
		echo "interop: $what: FAILED: $3"
	fi
	results+=("$1|$2|$res|$4")
}

# NAME GUEST_CMD GUEST_OK HOST_OK HOST_CMD...: a case in both directions (run_one).
run_case() {
	both_ways run_one "$@"
}

# ONE NAME ARGS...: the case NAME in both directions, ONE NAME DIRECTION ARGS... each, if INTEROP_CASES
# selects it (under INTEROP_LOCK, when set).
both_ways() {
	[[ $2 =~ $only ]] || return 0
	local waited=$SECONDS
	[ -z "${INTEROP_LOCK:-}" ] || { exec 8>>"$INTEROP_LOCK" && flock 8; }
	lock_s=$((lock_s + SECONDS - waited))
	"$1" "$2" server "${@:3}"
	"$1" "$2" client "${@:3}"
	[ -z "${INTEROP_LOCK:-}" ] || flock -u 8
}

# The stock pingpong of TRANSPORT at MTU (UD: messages of one MTU; RC, UC: four packets each) against
# rnic-ibv-pingpong. Both ends must have done every iteration.
pingpong_case() {	# TRANSPORT MTU [NAME_SUFFIX]
	local t=$1 mtu=$2 size=$(($2 * 4)) mtu_opt="-m $2" iters=200
	[ "$t" != ud ] || { size=$mtu; mtu_opt=; }
	run_case "$t-pingpong-mtu$mtu${3:-}" "ibv_${t}_pingpong -d rxe0 -g $gid_index -s $size $mtu_opt -n $iters -c" \
		"^$iters iters in" '"verified": true' "$pingpong" -t "$t" -s $size $mtu_opt -n $iters -T $wait_s
}

verbs_case() {	# MTU [NAME_SUFFIX]
	run_case "verbs-mtu$1${2:-}" "/mnt/host/bin/verbs-check -d rxe0 -g $gid_index -m $1 -s 65536 -n 4 -T $wait_s" \
		"all [0-9]+ checks passed" "all [0-9]+ checks passed" "$verbs_check" -m "$1" -s 65536 -n 4 -T $wait_s
}

# The regular expression of perftest's line of figures for SIZE bytes and ITERS iterations with an average
# bandwidth above 0: " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]", then these.
perftest_figures() {	# SIZE ITERS
	echo "^[[:space:]]*$1[[:space:]]+$2[[:space:]]+[0-9.]+[[:space:]]+([0-9]*[1-9][0-9]*\\.[0-9]+|0\\.[0-9]*[1-9][0-9]*)[[:space:]]"
}

# perftest's TOOL (ib_write_bw, ib_read_bw or ib_send_bw: Debian's perftest, unmodified, on both ends) with
# its defaults but for the count and the path MTU: 100 messages of 64 KB, 16 packets each (perftest 4.5
# does not exchange the MTU: each end takes its port's active one unless told); softrnic's end through the
# interposer (softrnic-run, GID index 0), the guest's on rxe0. Each end reports 65536 bytes, 100 iterations
# and an average bandwidth above 0 (the WRITE and READ servers print their client's figures).
perftest_case() {	# TOOL
	local size=65536 iters=100
	local opts="-s $size -n $iters -m 4096 -F"
	local figures
	figures=$(perftest_figures $size $iters)
	worker_stages=1 show_ok=1
	# shellcheck disable=SC2086
	run_case "$1" "$1 -d rxe0 -x $gid_index $opts" "$figures" "$figures" "$softrnic_run" "$1" -x 0 $opts
	worker_stages='' show_ok=''
}

# librdmacm's programs connecting through the CM (no TCP): softrnic's end through softrnic-run, on the
# interposer's librdmacm and softrnic's CM, the guest's on Linux's kernel CM (rdma_cm, ib_cm) and rxe0. The
# client connects to the server's RDMA address: softrnic's own ($rnic_ip) or the guest's. In SERVER_CMD and
# CLIENT_CMD, {addr} is that address and {port} the case's port. softrnic's stages run on a worker lcore
# (the CM's thread cannot run the program's); its output is line-buffered, so that READY, what its server
# prints once it listens, shows at once. The guest's server listens once its kernel lists the port's
# cm_id as LISTEN. Checked as run_one does. A client whose output matches RETRY lost perftest 4.5's connect
# race (its server listens for its data connection only after their handshake, while the client connects
# at once: rejected, reason 8, and the client then crashes; doc/cm.md): the pair runs again on a new port,
# up to $cm_attempts times in all. softrnic's client against the guest under TCG loses it often (2 attempts
# in 8 on an idle 2-core machine, 12 in 23 with two busy loops beside it), so three attempts were not enough:
# a client that lost all three failed after its last one, once the guest's server, still waiting for a
# connection, had been given 30 s. A loss on the last attempt now fails at once and says so.
cm_attempts=${INTEROP_CM_ATTEMPTS:-12}
cm_one() {	# NAME DIRECTION SERVER_CMD CLIENT_CMD OK READY [RETRY]
	local name=$1 dir=$2 ok=$5 retry=${7:-} attempt start why job host_log
	for attempt in $(seq "$cm_attempts"); do
		cm_pair "$1" "$2" "$3" "$4" "$6" $((18600 + ${#results[@]} + 100 * (attempt - 1)))
		end_one "$name" "$dir" "$start" "$why" "$job" "$host_log" "$ok" "$ok" "$retry"
		[ $? -eq 2 ] || return 0
		echo "interop: $name, softrnic $dir: the client lost perftest 4.5's connect race (REJ reason 8:" \
			"doc/cm.md), attempt $attempt of $cm_attempts$([ "$attempt" -eq "$cm_attempts" ] || echo '; again')"
	done
	record "$name" "$dir" "the client lost perftest 4.5's connect race (REJ reason 8: doc/cm.md) on all $cm_attempts attempts" \
		$((SECONDS - start))
	head -n 40 "$host_log" | sed 's/^/    softrnic: /'
}

# NAME DIRECTION SERVER_CMD CLIENT_CMD READY PORT: cm_one's server, then its client, on PORT. Sets start,
# why, job and host_log (and host_pid).
cm_pair() {
	local name=$1 dir=$2 ready=$5 port=$6 addr=$guest_ip guest_cmd host_cmd worker_stages=1
	start=$SECONDS why='' host_log=$work/$name-$dir.host.log
	[ "$dir" = client ] || addr=$rnic_ip
	if [ "$dir" = server ]; then
		host_cmd=$3 guest_cmd=$4
	else
		host_cmd=$4 guest_cmd=$3
	fi
	host_cmd=${host_cmd//\{addr\}/$addr} guest_cmd=${guest_cmd//\{addr\}/$addr}
	host_cmd=${host_cmd//\{port\}/$port} guest_cmd=${guest_cmd//\{port\}/$port}
	if [ "$dir" = server ]; then
		# shellcheck disable=SC2086
		ip netns exec "$io_ns" env SOFTRNIC_ARGS="$(rnic_args)" timeout 90 stdbuf -oL "$softrnic_run" $host_cmd \
			>"$host_log" 2>&1 &
		host_pid=$!
		host_prints "$host_log" "$ready" || why="softrnic's server did not print /$ready/ in 20 s"
		guest_start "timeout 60 $guest_cmd"
		job=$guest_job
	else
		guest_start "timeout 60 $guest_cmd"
		job=$guest_job
		guest_cm_listens "$port" || why="the guest's server does not listen on port $port"
		# shellcheck disable=SC2086
		ip netns exec "$io_ns" env SOFTRNIC_ARGS="$(rnic_args)" timeout 90 "$softrnic_run" $host_cmd \
			>"$host_log" 2>&1 &
		host_pid=$!
	fi
}

# Whether LOG holds a line matching PATTERN (grep -E) within 20 s.
host_prints() {	# LOG PATTERN
	for _ in $(seq 100); do
		grep -Eqs "$2" "$1" && return 0
		sleep 0.2
	done
	return 1
}

# Whether the guest's kernel lists an rdma_cm id listening on PORT, within 20 s.
guest_cm_listens() {	# PORT
	guest_run "i=0; until rdma resource show cm_id | grep LISTEN | grep -q ':$1 '; do
		i=\$((i + 1)); [ \$i -lt 100 ] || exit 1; sleep 0.2; done" 30 >/dev/null
}

# A CM case in both directions (cm_one).
cm_case() {	# NAME SERVER_CMD CLIENT_CMD OK READY [RETRY]
	both_ways cm_one "$@"
}

# The stock rping (rdmacm-utils) both ways: 10 pings of 1 KB, each an RDMA READ of the client's buffer by
# the server and a WRITE back, which the client checks (-V); both ends print the last ping. The server's -d
# prints "rdma_listen" as it listens.
rping_case() {
	local count=10
	cm_case rping "rping -s -d -v -a {addr} -p {port} -C $count -S 1024" \
		"rping -c -v -V -a {addr} -p {port} -C $count -S 1024" "ping data: rdma-ping-$((count - 1)): " "rdma_listen"
}

# A REQ to a port nobody listens on, both ways: the stock rping client, rejected by the other side's CM with
# reason 8 (invalid service ID, as Linux's cm_match_req answers), reports RDMA_CM_EVENT_REJECTED with error 8
# and fails. softrnic's CM runs while a program of its has an event channel: as the side nobody listens on,
# softrnic runs an rping server on the next port.
cm_reject_one() {	# NAME DIRECTION
	local name=$1 dir=$2 port=$((18600 + ${#results[@]})) start=$SECONDS why='' worker_stages=1 out rc
	local host_log=$work/$1-$2.host.log want="RDMA_CM_EVENT_REJECTED, error 8"
	if [ "$dir" = server ]; then
		ip netns exec "$io_ns" env SOFTRNIC_ARGS="$(rnic_args)" timeout 90 stdbuf -oL "$softrnic_run" \
			rping -s -d -a "$rnic_ip" -p $((port + 1)) >"$host_log" 2>&1 &
		host_pid=$!
		host_prints "$host_log" rdma_listen || why="softrnic's rping server did not listen in 20 s"
		out=$(guest_run "timeout 30 rping -c -a $rnic_ip -p $port -C 1; echo \"exit \$?\"" 40)
		kill "$host_pid" 2>/dev/null
		wait "$host_pid"
		host_pid=''
		rc=$(sed -n 's/^exit //p' <<<"$out")
	else
		ip netns exec "$io_ns" env SOFTRNIC_ARGS="$(rnic_args)" timeout 30 "$softrnic_run" \
			rping -c -a "$guest_ip" -p $port -C 1 >"$host_log" 2>&1
		rc=$?
		out=$(cat "$host_log")
	fi
	if [ -z "$why" ] && ! grep -q "$want" <<<"$out"; then
		why="the client did not report '$want'"
	elif [ -z "$why" ] && [ "${rc:-0}" = 0 ]; then
		why="the client exited 0"
	fi
	record "$name" "$dir" "$why" $((SECONDS - start))
	[ -z "$why" ] || sed 's/^/    client: /' <<<"$out"
}

cm_reject_case() {
	both_ways cm_reject_one cm-no-listener
}

# The stock ucmatose (rdmacm-utils) both ways with -m: 2 connections at once, 10 SENDs of 1000 bytes each way
# on each, then each end moves its ids (the server its listener too) to a new event channel
# (rdma_migrate_id) and disconnects; both ends report status 0.
ucmatose_case() {
	local opts="-p {port} -c 2 -C 10 -S 1000 -m"
	cm_case ucmatose-migrate "ucmatose -b {addr} $opts" "ucmatose -s {addr} $opts" "^return status 0$" \
		"starting server"
}

# perftest's TOOL with -R (its connection and its exchange of parameters through rdma_cm) both ways, checked
# as perftest_case (figures on both ends).
perftest_cm_case() {	# TOOL
	local size=65536 iters=100
	local opts="-R -s $size -n $iters -F -p {port}"
	local figures
	figures=$(perftest_figures $size $iters)
	show_ok=1
	cm_case "$1-R" "$1 $opts" "$1 $opts {addr}" "$figures" "Waiting for client" \
		"Event: RDMA_CM_EVENT_REJECTED; error: 8\\."
	show_ok=''
}

# The guest learned softrnic's MAC by ARP (INTEROP_STATIC_NEIGH=0): its neighbour entry for softrnic's
# address has that MAC and is not one a person made (PERMANENT).
arp_case() {
	[[ arp =~ $only ]] || return 0
	local start=$SECONDS entry why=''
	entry=$(guest_run "ip neigh show $rnic_ip dev $guest_dev" 20)
	case "$entry" in
	*PERMANENT*) why="the entry is static: $entry" ;;
	*"lladdr $io_mac "*) ;;
	*) why="no entry with softrnic's MAC $io_mac: '$entry'" ;;
	esac
	record arp guest "$why" $((SECONDS - start))
}

# With static entries (INTEROP_STATIC_NEIGH=1), issue 17's Done-when still runs once without: the stock
# ibv_rc_pingpong with neither side told the other's MAC (the guest's static entry removed, no --neigh),
# then arp. The guest's tool resolves softrnic's MAC at RTR, which the engine answers.
noneigh_cases() {
	[ "$static_neigh" != 0 ] || return 0
	guest_run "ip neigh del $rnic_ip dev $guest_dev" 20 >/dev/null
	static_neigh=0
	pingpong_case rc 1024 -noneigh
	arp_case
	static_neigh=1
}

# What crosses softrnic's bridge port during the MTU 1024 cases, into $work/wire.pcapng (at most 60000
# frames; dumpcap, in the namespace).
capture_start() {
	[[ wire =~ $only ]] || return 0
	ip netns exec "$io_ns" dumpcap -q -i vbr -f "udp dst port 4791" -c 60000 -w "$work/wire.pcapng" \
		>"$work/dumpcap.log" 2>&1 &
	capture_pid=$!
	for _ in $(seq 50); do
		grep -qs "Capturing on" "$work/dumpcap.log" && return 0
		sleep 0.1
	done
}

# The frames of the capture under tests/interop/wire_check.py: wire-frames (ICRCs, UDP source ports) and
# wire-habits (TTL, IP ID and source ports per QP pair: issue 17's wire habits).
wire_case() {
	[ -n "$capture_pid" ] || return 0
	kill -INT "$capture_pid" 2>/dev/null
	wait "$capture_pid"
	capture_pid=''
	wire_check wire-frames
	[ "${INTEROP_WIRE_HABITS:-1}" != 0 ] || known="INTEROP_WIRE_HABITS=0"
	wire_check wire-habits --habits
	known=''
}

wire_check() {	# NAME [--habits]
	local start=$SECONDS why=''
	/usr/bin/python3 "$here/wire_check.py" "$work/wire.pcapng" $rnic_ip $guest_ip "${@:2}" >"$work/$1.log" 2>&1 ||
		why="wire_check.py: $(grep -m1 -i fail "$work/$1.log" || tail -n 1 "$work/$1.log")"
	sed 's/^/    /' "$work/$1.log"
	record "$1" capture "$why" $((SECONDS - start))
}

# The table: case x direction, then the totals.
print_table() {
	local -A cell=()
	local -a names=()
	local r name dir res secs
	for r in "${results[@]}"; do
		IFS='|' read -r name dir res secs <<<"$r"
		[[ " ${names[*]} " == *" $name "* ]] || names+=("$name")
		cell[$name|$dir]=$(printf '%-5s %4s s' "$res" "$secs")
	done
	echo
	echo "interop: softrnic against $guest_info"
	printf '%-28s  %-16s  %-16s\n' case "softrnic server" "softrnic client"
	for name in "${names[@]}"; do
		if [ -n "${cell[$name|guest]+x}" ]; then
			printf '%-28s  %-34s\n' "$name" "${cell[$name|guest]} (the guest's neighbour table)"
		elif [ -n "${cell[$name|bridge]+x}" ]; then
			printf '%-28s  %-34s\n' "$name" "${cell[$name|bridge]} (frames the bridge dropped)"
		elif [ -n "${cell[$name|capture]+x}" ]; then
			printf '%-28s  %-34s\n' "$name" "${cell[$name|capture]} (the MTU 1024 cases' frames)"
		else
			printf '%-28s  %-16s  %-16s\n' "$name" "${cell[$name|server]:--}" "${cell[$name|client]:--}"
		fi
	done
	if [ "$known_failed" -gt 0 ]; then
		local whys
		whys=$(printf '%s; ' "${known_whys[@]}")
		echo "(known: failed as expected, known not to work yet: ${whys%; })"
	fi
	echo "interop: boot $boot_s s, cases $cases_s s${INTEROP_LOCK:+ ($lock_s s of it waiting for $INTEROP_LOCK)}"
}

mkdir -p "$share/jobs" "$share/bin"
cp "$here/guest/agent.sh" "$share/"
cp "$guest_bin/verbs-check" "$share/bin/"
cat >"$share/guest.conf" <<EOC
GUEST_ADDR=$guest_ip/24
GUEST_MTU=$io_mtu
JOB_TIMEOUT=300
EOC
vm_network
if [ -n "${INTEROP_PCAP:-}" ]; then
	ip netns exec "$io_ns" dumpcap -q -i vbr -w "$INTEROP_PCAP" >"$work/pcap.log" 2>&1 &
	pcap_pid=$!
fi
start=$SECONDS
vm_boot "$image" "$share" "$work/console.log" "${INTEROP_BOOT_TIMEOUT:-300}" || exit 1
boot_s=$((SECONDS - start))
guest_dev=$(awk '/^kernel/ { print $NF }' "$share/ready")
# The guest's RoCE v2 GID of its IPv4 address (index 1 on rxe: 0 is the link-local IPv6 one).
gid_index=$(sed -n "s/.*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$guest_ip, RoCE v2.*/\1/p" "$share/ready")
guest_kernel=$(sed -n 's/^kernel \([^,]*\),.*/\1/p' "$share/ready")
guest_rdma_core=$(guest_run "dpkg-query -W -f '\${Version}' rdma-core" 30)
guest_info="Linux Soft-RoCE in a VM (Linux $guest_kernel, rdma-core $guest_rdma_core)"
echo "interop: guest up in $boot_s s; $guest_info; GID index $gid_index;" \
	"static neighbour entries: $([ "$static_neigh" = 0 ] && echo no || echo yes)"
[ -n "$gid_index" ] || { cat "$share/ready"; echo "interop: the guest has no RoCE v2 GID for $guest_ip"; exit 1; }
if [ "$static_neigh" != 0 ]; then
	guest_run "ip neigh replace $rnic_ip lladdr $io_mac dev $guest_dev nud permanent" 30 ||
		{ echo "interop: cannot give the guest a neighbour entry for softrnic"; exit 1; }
fi

start=$SECONDS
for mtu in 1024 4096; do
	[ $mtu != 1024 ] || capture_start
	for t in rc uc ud; do
		pingpong_case $t $mtu
	done
	verbs_case $mtu
	[ $mtu != 1024 ] || wire_case
done
[ "$static_neigh" != 0 ] || arp_case
for t in $perftest_tools; do
	perftest_case "$t"
done
rping_case
cm_reject_case
ucmatose_case
for t in $perftest_tools; do
	perftest_cm_case "$t"
done
vm_loss "$loss"
lost_before=$(vm_lost)
ran_before=${#results[@]}
pingpong_case rc 1024 "-loss"
verbs_case 1024 "-loss"
pingpong_case rc 4096 "-loss"
verbs_case 4096 "-loss"
lost=$(($(vm_lost) - lost_before))
vm_loss 0
# Loss cases through which no frame was lost tested nothing of what they are for.
if [ ${#results[@]} -gt "$ran_before" ]; then
	echo "interop: the bridge dropped $lost RoCE frames in the loss cases ($loss per mille each way)"
	if [ "$lost" -eq 0 ]; then
		record loss-injected bridge "the bridge's rule dropped no frame" 0
	fi
fi
noneigh_cases
cases_s=$((SECONDS - start))
print_table
echo "interop: $passed passed, $failed failed, $known_failed known not to work yet"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
