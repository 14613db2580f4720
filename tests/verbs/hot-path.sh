#!/usr/bin/env bash
# The interposer's post and poll entries (ibv_post_send / ibv_poll_cq's ops, the ibv_wr_* entries, the
# extended poll) and lib/qp's posting functions behind them, read from libsoftrnic-verbs.so's disassembly:
# none calls (or jumps to) an allocator, a lock or wait of pthread's, a system call wrapper, rte_log or
# printf, and none holds a syscall instruction; the interposer's own entries hold no atomic read-modify-write
# either (the only one on the post path is the SQ poster lock rnic_post_send and rnic_send_batch_start take,
# which a post by one thread finds free). Every function listed must be found, so the check is never empty.
# Usage: hot-path.sh LIBSOFTRNIC_VERBS
set -u
lib=$1
command -v objdump >/dev/null || { echo "objdump missing (binutils): skipped"; exit 77; }
# A sanitizer build's code is not the one users run: its instrumentation calls the sanitizer's runtime, and
# it inlines otherwise (functions listed here vanish into their callers). The plain build's suite checks.
if objdump -T "$lib" | grep -q '__asan_init\|__ubsan_handle'; then
	echo "a sanitizer build: its disassembly says nothing of the hot path users run: skipped"
	exit 77
fi
entries='rnic_verbs_post_send rnic_verbs_post_recv rnic_verbs_poll_cq wr_rdma_write wr_rdma_write_imm wr_rdma_read
	wr_atomic_cmp_swp wr_atomic_fetch_add wr_send wr_send_imm wr_send_inv wr_set_ud_addr wr_set_sge
	wr_set_sge_list wr_set_inline_data wr_set_inline_data_list wr_start wr_complete wr_abort start_poll
	next_poll end_poll read_opcode read_byte_len read_imm_data read_wc_flags'
behind='rnic_post_send rnic_post_recv rnic_poll_cq rnic_send_batch_start rnic_send_batch_wr rnic_send_batch_ud
	rnic_send_batch_sge rnic_send_batch_inline rnic_send_batch_complete rnic_send_batch_abort finish_wr
	rnic_sq_publish rnic_sq_post_state rnic_wqe_start rnic_wqe_put_sges rnic_wqe_put_ud rnic_qp_ring_doorbell'
objdump -d --no-show-raw-insn "$lib" | awk -v entries="$entries" -v behind="$behind" '
	BEGIN {
		n = split(entries, e); for (i = 1; i <= n; i++) { want[e[i]] = 1; own[e[i]] = 1 }
		n = split(behind, b); for (i = 1; i <= n; i++) want[b[i]] = 1
		bad = "(malloc|calloc|realloc|free|pthread_|syscall|ioctl|futex|read|write|poll|epoll|nanosleep|usleep|sleep|rte_log|printf|puts|rte_malloc|rte_free|sem_)[@>]"
	}
	/^[0-9a-f]+ <[^>]+>:$/ { f = substr($2, 2, length($2) - 3); cur = (f in want) ? f : ""; if (cur != "") seen[cur] = 1; next }
	cur == "" { next }
	/\tsyscall/ { print cur ": a system call: " $0; status = 1 }
	/\t(call|jmp)/ && match($0, /<[^>]+>/) {
		target = substr($0, RSTART + 1, RLENGTH - 2) ">"
		if (target ~ "^" bad || target ~ "^_?_?" bad) { print cur ": calls " target; status = 1 }
	}
	(cur in own) && (/\tlock / || /\txchg[^(]*\(/ || /\tcmpxchg/) { print cur ": an atomic read-modify-write: " $0; status = 1 }
	END {
		for (f in want) if (!(f in seen)) { print "not found in the library: " f; status = 1 }
		if (!status) print "ok: " length(seen) " functions, no allocation, lock, wait or system call"
		exit status
	}'
