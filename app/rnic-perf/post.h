/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's posting of sends and the count of their completions: the bandwidth test's hot path, inline
 * where it is used (bw.c posts again at every completion).
 */
#ifndef RNIC_PERF_POST_H
#define RNIC_PERF_POST_H

#include <string.h>

#include "perf.h"

/* A send completion (or flush): the messages of its QP up to the one it names are done. Returns how many. */
static inline uint64_t
perf_account_send(struct perf_end *e, const struct rnic_wc *wc)
{
	uint32_t q = perf_wr_qp(wc->wr_id);
	uint64_t msg = perf_wr_msg(wc->wr_id), covered;

	if (q >= e->nb_qp || msg < e->done[q] || msg >= e->posted[q])
		return 0;	/* not one of ours: a stale or corrupt completion is counted by nobody */
	covered = msg + 1 - e->done[q];
	e->done[q] = msg + 1;
	e->outstanding -= covered;
	e->completed += covered;
	return covered;
}

/* Message msg of QP q as a work request (the requester's side of every operation). */
static inline void
perf_build_wr(struct perf_end *e, const struct perf_test *t, uint32_t q, uint64_t msg, uint32_t size,
	      struct rnic_send_wr *wr, struct rnic_sge *sge)
{
	static const enum rnic_wr_opcode wr_op[OP_N] = {
		[OP_WRITE] = RNIC_WR_RDMA_WRITE, [OP_READ] = RNIC_WR_RDMA_READ, [OP_SEND] = RNIC_WR_SEND,
		[OP_FETCH_ADD] = RNIC_WR_ATOMIC_FETCH_AND_ADD, [OP_CMP_SWAP] = RNIC_WR_ATOMIC_CMP_AND_SWP,
	};
	const struct perf_qp_info *p = &e->peer[q];
	int atomic = perf_op_atomic(t->op), into_rx = t->op == OP_READ || atomic;

	*sge = (struct rnic_sge){ (uintptr_t)(into_rx ? perf_rx_slot(e, q, msg) : perf_tx_slot(e, q, msg)), size,
				  e->mr->lkey };
	*wr = (struct rnic_send_wr){ .wr_id = perf_wr_id(q, msg), .sg_list = sge, .num_sge = 1,
				     .opcode = wr_op[t->op] };
	if (size <= t->inline_size && (t->op == OP_WRITE || t->op == OP_SEND))
		wr->send_flags |= RNIC_SEND_INLINE;
	if (atomic) {
		/* One counter per QP, at the start of the peer's tx area of the QP. */
		wr->wr.atomic.remote_addr = p->tx_addr;
		wr->wr.atomic.rkey = p->rkey;
		wr->wr.atomic.compare_add = t->op == OP_FETCH_ADD ? 1 : msg;
		wr->wr.atomic.swap = msg + 1;
	} else if (t->conn == RNIC_QPT_UD) {
		wr->wr.ud.ah = e->ah;
		wr->wr.ud.remote_qpn = p->qpn;
		wr->wr.ud.remote_qkey = PERF_QKEY;
	} else {
		wr->wr.rdma.remote_addr = (t->op == OP_READ ? p->tx_addr : p->rx_addr) +
					  (msg % perf_qp_slots(e, q)) * e->slot;
		wr->wr.rdma.rkey = p->rkey;
	}
}

/*
 * Post messages msg .. msg + n - 1 of QP q in one rnic_post_send (-l). One in cq_mod is signaled (-Q), and
 * the last before limit: its completion covers the unsignaled ones before it (RC completes a QP's sends in
 * order; UC and UD complete them when sent).
 */
static inline int
perf_post_sends(struct perf_end *e, const struct perf_test *t, uint32_t q, uint64_t msg, uint32_t n,
		uint32_t size, uint64_t limit)
{
	struct rnic_send_wr wr[PERF_MAX_POST_LIST], *bad;
	struct rnic_sge sge[PERF_MAX_POST_LIST];
	int err;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t m = msg + i;

		perf_build_wr(e, t, q, m, size, &wr[i], &sge[i]);
		/* cq_mod 1 first: no 64-bit division per message where every send is signaled */
		if (e->cq_mod == 1 || m % e->cq_mod == e->cq_mod - 1 || m + 1 == limit)
			wr[i].send_flags |= RNIC_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	/* The SQ holds as many WQEs as may be outstanding: a post cannot find it full. */
	err = rnic_post_send(e->qp[q], &wr[0], &bad);
	if (err != 0)
		return perf_fail("cannot post a send on QP %u of %s: %s", e->qp[q]->qp_num, e->name, strerror(err));
	e->tail_signaled[q] = !!(wr[n - 1].send_flags & RNIC_SEND_SIGNALED);
	e->posted[q] += n;
	e->outstanding += n;
	return 0;
}

#endif /* RNIC_PERF_POST_H */
