/* SPDX-License-Identifier: BSD-3-Clause
 * The requester side: WQE scheduling and parse, DataPack gather, transmit control (segmentation, PSNs,
 * outstanding limits, fence) and request packet generation (seed 003 §3.2-3.4), the retransmit buffer and
 * the loss and RNR timers.
 */
#include <arpa/inet.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ring.h>

#include "rnic_cq.h"
#include "rnic_pacer.h"
#include "rnic_pipeline.h"
#include "rnic_requester.h"
#include "rnic_wqe.h"

#define QUANTUM 16u	/* packets one QP may send per visit: round-robin fairness between QPs */
/* ... and payload bytes: what a QP sends in a visit is what it sends before a NAK that comes back can stop it
 * (the completer runs between two of the requester's passes), and all of it after a loss goes again. */
#define QUANTUM_BYTES 16384u
/* PSNs after a go-back-N during which a QP counts as on a lossy path (on_lossy_path): at 1 % loss a QP of
 * large messages loses a packet every ~100, so it stays there; a single loss costs a clean path 1024 packets
 * sent in smaller passes. */
#define RNIC_LOSS_HORIZON 1024u

/* Copy len bytes at message offset off of the WQE's payload (inline or gather list) into dst. */
static enum rnic_mr_status
gather(struct rnic_pipeline *p, const struct rnic_send_wqe *w, uint32_t pdn, uint32_t off, uint32_t len,
       uint8_t *dst)
{
	if (w->inline_data != NULL) {
		memcpy(dst, w->inline_data + off, len);
		return RNIC_MR_OK;
	}
	return rnic_sge_copy(p, &p->req_cache, w->sge, w->nb_sge, pdn, RNIC_MR_NEED_LOCAL_READ, off, dst, len, 0);
}

/* Check every SGE of a WQE before it starts (local keys, rights, bounds). With run: the address of the WQE's
 * data when it is one SGE and one run of this process's memory (rnic_mr_run), else NULL. */
static enum rnic_mr_status
check_sges(struct rnic_pipeline *p, const struct rnic_send_wqe *w, uint32_t pdn, uint32_t need, uint8_t **run)
{
	struct rnic_mr_seg seg[RNIC_MR_RUN_SEGS];
	uint32_t max = run != NULL && w->nb_sge == 1 ? RTE_DIM(seg) : 0, n = 0;

	for (uint32_t i = 0; w->inline_data == NULL && i < w->nb_sge; i++) {
		enum rnic_mr_status st = rnic_mr_translate(p->dev->mr_table, &p->req_cache,
							   rte_be_to_cpu_32(w->sge[i].lkey), pdn, need,
							   rte_be_to_cpu_64(w->sge[i].addr),
							   rte_be_to_cpu_32(w->sge[i].byte_count), seg, max, &n);

		if (st != RNIC_MR_OK)
			return st;
	}
	if (run != NULL)
		*run = rnic_mr_run(seg, n, w->length);
	return RNIC_MR_OK;
}

/* The BTH opcode of packet `pos` of a SEND/WRITE message. */
static uint8_t
message_opcode(enum rnic_qp_type type, uint8_t wqe_op, int first, int last)
{
	uint8_t t = type == RNIC_QPT_RC ? RNIC_TRANSPORT_RC : type == RNIC_QPT_UC ? RNIC_TRANSPORT_UC :
		    RNIC_TRANSPORT_UD;
	int write = wqe_op == RNIC_WQE_OP_RDMA_WRITE || wqe_op == RNIC_WQE_OP_RDMA_WRITE_IMM;
	int imm = wqe_op == RNIC_WQE_OP_RDMA_WRITE_IMM || wqe_op == RNIC_WQE_OP_SEND_IMM;
	int inv = wqe_op == RNIC_WQE_OP_SEND_INVAL;
	uint8_t op;

	if (first && last)
		op = write ? (imm ? RNIC_OP_RDMA_WRITE_ONLY_WITH_IMMEDIATE : RNIC_OP_RDMA_WRITE_ONLY) :
		     inv ? RNIC_OP_SEND_ONLY_WITH_INVALIDATE : imm ? RNIC_OP_SEND_ONLY_WITH_IMMEDIATE :
		     RNIC_OP_SEND_ONLY;
	else if (first)
		op = write ? RNIC_OP_RDMA_WRITE_FIRST : RNIC_OP_SEND_FIRST;
	else if (!last)
		op = write ? RNIC_OP_RDMA_WRITE_MIDDLE : RNIC_OP_SEND_MIDDLE;
	else
		op = write ? (imm ? RNIC_OP_RDMA_WRITE_LAST_WITH_IMMEDIATE : RNIC_OP_RDMA_WRITE_LAST) :
		     inv ? RNIC_OP_SEND_LAST_WITH_INVALIDATE : imm ? RNIC_OP_SEND_LAST_WITH_IMMEDIATE :
		     RNIC_OP_SEND_LAST;
	return (uint8_t)(t | op);
}

/* A WQE the transport cannot carry completes with the seed's "unsupported opcode" error. */
static int
wqe_allowed(enum rnic_qp_type type, uint8_t op)
{
	if (type == RNIC_QPT_RC)
		return 1;
	if (op == RNIC_WQE_OP_SEND || op == RNIC_WQE_OP_SEND_IMM)
		return 1;
	return type == RNIC_QPT_UC && (op == RNIC_WQE_OP_RDMA_WRITE || op == RNIC_WQE_OP_RDMA_WRITE_IMM);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The retransmit buffer (rnic_pipeline.h)                                                                  */

/* Keep a frame just queued for TX: one more reference to it, at the tail of the QP's list. */
static void
rtx_keep(struct rnic_pipeline *p, struct rnic_req_ctx *r, struct rte_mbuf *m, uint32_t psn)
{
	uint32_t i = p->rtx_free;
	struct rnic_rtx_elem *e;

	if (i == 0)
		return;		/* the budget is spent: a resend of this one gathers it again */
	e = &p->rtx[i];
	p->rtx_free = e->next;
	rte_mbuf_refcnt_update(m, 1);
	*e = (struct rnic_rtx_elem){ .m = m, .psn = psn, .next = 0, .len = m->pkt_len };
	r->rtx_bytes += e->len;
	if (r->rtx_tail != 0)
		p->rtx[r->rtx_tail].next = i;
	else
		r->rtx_head = i;
	r->rtx_tail = i;
}

/*
 * The frames before una are acknowledged: let them go. A coalesced ACK releases a run of frames whose mbufs
 * the peer's lcore touched last (it received them): their lines are asked for together, a run at a time,
 * before the first is freed, so the transfers overlap instead of coming one free after the other.
 */
static void
rtx_release(struct rnic_pipeline *p, struct rnic_req_ctx *r)
{
	struct rte_mbuf *run[RNIC_BURST];
	unsigned int n;

	do {
		n = 0;
		while (n < RTE_DIM(run) && r->rtx_head != 0 && rnic_psn_diff(p->rtx[r->rtx_head].psn, r->una) < 0) {
			uint32_t i = r->rtx_head;
			struct rnic_rtx_elem *e = &p->rtx[i];

			r->rtx_head = e->next;
			if (r->rtx_next == i)
				r->rtx_next = e->next;
			run[n] = e->m;
			rte_prefetch0_write(run[n++]);
			r->rtx_bytes -= e->len;
			e->m = NULL;
			e->next = p->rtx_free;
			p->rtx_free = i;
		}
		if (n != 0)	/* a READ's progress has none (its requests are not kept) */
			rte_pktmbuf_free_bulk(run, n);
	} while (n == RTE_DIM(run));
	if (r->rtx_head == 0)
		r->rtx_tail = r->rtx_next = 0;
}

/* Going back to psn: the first kept frame to send again is the first at or after it. */
static void
rtx_rewind(struct rnic_pipeline *p, struct rnic_req_ctx *r, uint32_t psn)
{
	uint32_t i = r->rtx_head;

	while (i != 0 && rnic_psn_diff(p->rtx[i].psn, psn) < 0)
		i = p->rtx[i].next;
	r->rtx_next = i;
}

/* The kept frame of the packet about to be sent again (a new reference to it), or NULL. */
static struct rte_mbuf *
rtx_resend(struct rnic_pipeline *p, struct rnic_req_ctx *r)
{
	struct rnic_rtx_elem *e;

	while (r->rtx_next != 0 && rnic_psn_diff(p->rtx[r->rtx_next].psn, r->npsn) < 0)
		r->rtx_next = p->rtx[r->rtx_next].next;
	if (r->rtx_next == 0 || p->rtx[r->rtx_next].psn != r->npsn)
		return NULL;
	e = &p->rtx[r->rtx_next];
	r->rtx_next = e->next;
	rte_mbuf_refcnt_update(e->m, 1);
	return e->m;
}

/* Lists of QPs reset or destroyed, handed back by the control path. */
static void
rtx_reclaim(struct rnic_pipeline *p)
{
	uint32_t heads[RNIC_BURST];
	unsigned int n = rnic_edge_dequeue_burst(p->rtx_reclaim, heads, sizeof(heads[0]), RNIC_BURST);

	for (unsigned int i = 0; i < n; i++)
		rnic_rtx_free_list(p, heads[i]);
}

/* Complete every send WQE not done with a flush error, here where the SQ's count is kept; the requester
 * starts again (SQE -> RTS) at the next WQE posted. */
static void
flush_send_queue(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;

	rnic_rtx_free_list(p, r->rtx_head);
	r->rtx_head = r->rtx_tail = r->rtx_next = 0;
	r->rtx_bytes = 0;
	r->infl_head = r->cur = r->infl_tail;
	r->cur_off = 0;
	r->halted = 0;
	rnic_qp_flush_sq(qp);
	r->sq_next = r->sq_done;
}

void
rnic_requester_fail(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);

	rnic_qp_fail(qp);
	flush_send_queue(p, qp);
	/* The receive queue completes on the responder's lcore: hand it over. */
	if (rnic_edge_enqueue(p->flush_ring, &q->slot, sizeof(q->slot)) != 0) {
		RNIC_STATS(p, REQUESTER)->flush_ring_full++;
		RNIC_LOG_LIMITED(ERR, "QP %u: flush ring full: its receive queue is not flushed", qp->qp_num);
	}
}

/*
 * Fail a WQE now (local error): its error completion, then the flush. An RC QP goes to ERR; a UC or UD QP
 * to SQE (IBA 10.3.1): only its send queue is flushed, its receive side goes on, and modify_qp takes it back
 * to RTS. The state changes before the completion is written, so an application that sees the error finds
 * the QP in SQE.
 */
static void
fail_wqe(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t index, uint8_t op, enum rnic_wc_status st)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);

	if (qp->qp_type != RNIC_QPT_RC)
		rnic_qp_enter(qp, RNIC_QPS_SQE);
	rnic_complete(qp, 1, index, op, st, 0);
	q->req.sq_done = index + 1;
	if (qp->qp_type != RNIC_QPT_RC)
		flush_send_queue(p, qp);
	else
		rnic_requester_fail(p, qp);
}

/*
 * A WQE that cannot start (bad opcode, length, key): completions are in order, so with WQEs still in flight
 * it waits in the in-flight list for them to complete successfully, and nothing after it starts; then it
 * completes in error and the QP fails (seed 003 tests 6, 7, 33; IBA 10.8.3).
 */
static void
reject_wqe(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t index, uint8_t op, enum rnic_wc_status st)
{
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;
	struct rnic_inflight *e;

	if (r->infl_head == r->infl_tail) {
		fail_wqe(p, qp, index, op, st);
		return;
	}
	e = rnic_req_infl(r, r->infl_tail);
	memset(e, 0, sizeof(*e));
	e->index = index;
	e->opcode = op;
	e->status = (uint8_t)st;
	e->sent = 1;
	/* No PSN of its own: it shares its predecessor's last one, which find_inflight matches first. */
	e->first_psn = e->last_psn = rnic_psn_prev(r->npsn);
	r->infl_tail++;
	if (r->cur == r->infl_tail - 1)
		r->cur = r->infl_tail;
	r->halted = 1;
}

/* Retire completed WQEs from the head of the in-flight list (completions are in order). */
void
rnic_requester_retire(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;

	while (r->infl_head != r->infl_tail) {
		struct rnic_inflight *e = rnic_req_infl(r, r->infl_head);
		int needs_answer = e->opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(e->opcode);

		if (e->status != RNIC_WC_SUCCESS) {
			r->infl_head++;		/* every WQE before it has completed: now its error */
			fail_wqe(p, qp, e->index, e->opcode, (enum rnic_wc_status)e->status);
			return;
		}
		/* A READ or atomic needs its answer, and like every RC request its PSNs acknowledged too: one
		 * answered before an earlier request went unanswered is sent again by go-back-N, and must stay
		 * in flight until then, or a loss of that resend would leave una pointing at nothing. */
		if (!e->sent || (needs_answer && !e->answered) ||
		    (qp->qp_type == RNIC_QPT_RC && rnic_psn_diff(e->last_psn, r->una) >= 0))
			break;
		/* A READ or atomic counts against max_rd_atomic until it retires: the responder keeps that
		 * many resources, and a duplicate of any not retired must still find its own. */
		r->rd_atomic -= needs_answer;
		/* Deferred: the stage pushes what its burst completed together (rnic_cq_flush_deferred at its
		 * end), an error completion after them. */
		if (e->signaled)
			*rnic_cq_defer_slot(qp->send_cq) = (struct rnic_cqe_desc){
				.qpn = qp->qp_num, .wqe_counter = (uint16_t)e->index, .is_send = 1,
				.wqe_opcode = e->opcode, .status = RNIC_WC_SUCCESS, .byte_cnt = e->length,
			};
		q->req.sq_done = e->index + 1;
		r->infl_head++;
	}
}

/* What rnic_post_send writes for the QP: no more SGEs or inline bytes than the QP was created with, a message
 * of at most max_msg_sz, a UD address vector naming one of the device's GIDs, one of the QP's own if it has
 * some (an rnicd tenant's). */
static int
wqe_in_bounds(const struct rnic_device *dev, const struct rnic_qp_priv *q, const struct rnic_send_wqe *w)
{
	if (w->inline_data != NULL ? w->length > q->cap.max_inline_data : w->nb_sge > q->cap.max_send_sge)
		return 0;
	if (w->ud != NULL && (w->ud->sgid_index >= dev->gid_count ||
			      (q->sgid_mask != 0 && !(q->sgid_mask & (1u << w->ud->sgid_index)))))
		return 0;
	return w->length <= RNIC_MAX_MSG_SIZE;
}

/*
 * Read the WQE with counter index from the SQ, once: the SQ is the poster's memory (an rnicd client's, shared),
 * which it may rewrite at any time, so the WQE is copied into the in-flight entry's own slot, parsed there
 * and checked against what the QP was created with; every later look at it parses the copy
 * (rnic_req_wqe). Returns RNIC_WC_SUCCESS, or the error the WQE completes with: one the poster cannot have
 * written is counted as a bad WQE.
 */
static enum rnic_wc_status
take_wqe(struct rnic_pipeline *p, struct rnic_qp_priv *q, const struct rnic_inflight *e, uint32_t index,
	 struct rnic_send_wqe *w)
{
	uint8_t *copy = rnic_req_wqe(q, e);
	int ud = q->pub.qp_type == RNIC_QPT_UD;

	w->opcode = RNIC_WQE_OP_NOP;	/* the opcode a WQE of no readable size completes with */
	if (rnic_send_wqe_copy(copy, rnic_wq_slot(&q->sq, index), q->sq.stride) == 0 ||
	    rnic_send_wqe_parse(copy, 0, ud, w) != 0 || !wqe_in_bounds(p->dev, q, w)) {
		RNIC_STATS(p, REQUESTER)->bad_wqes++;
		return RNIC_WC_LOC_QP_OP_ERR;
	}
	if (!wqe_allowed(q->pub.qp_type, w->opcode))
		return RNIC_WC_LOC_QP_OP_ERR;
	if (ud && w->length > rnic_mtu_bytes(p->dev->active_mtu))
		return RNIC_WC_LOC_LEN_ERR;
	return RNIC_WC_SUCCESS;
}

/* The SQ's head says more is posted than the SQ holds: nothing a poster writes (rnic_wq_posted). */
static void
bad_queue_index(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	RNIC_STATS(p, REQUESTER)->bad_queue_index++;
	RNIC_LOG_LIMITED(ERR, "QP %u: SQ head %u is past the %u WQEs the SQ holds: QP in error", qp->qp_num,
			 __atomic_load_n(&rnic_qp_priv(qp)->sq.idx->head, __ATOMIC_RELAXED),
			 rnic_qp_priv(qp)->sq.wqe_cnt);
	rnic_requester_fail(p, qp);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The READ window (rnic_qp.h)                                                                              */

/* The PSNs a message of length bytes takes (a READ's: its responses). */
static uint32_t
msg_span(uint64_t length, uint32_t pmtu)
{
	return (uint32_t)RTE_MAX((length + pmtu - 1) / pmtu, 1u);
}

/* Whether a READ taking span PSNs must wait: READs outstanding, and no room for it in the READ window. */
static int
read_window_full(const struct rnic_req_ctx *r, uint32_t span)
{
	return r->rd_psns != 0 && (uint64_t)r->rd_psns + span > r->rd_window;
}

void
rnic_requester_read_overflow(struct rnic_req_ctx *r, const struct rnic_inflight *e)
{
	if (rnic_psn_diff(e->first_psn, r->rd_cut) < 0)
		return;
	r->rd_window = RTE_MAX(RTE_MIN(r->rd_window, r->rd_psns) / 2, 1u);
	r->rd_grow = 0;
	r->rd_cut = rnic_psn_add(r->sent_psn, 1);
}

void
rnic_requester_read_answered(struct rnic_req_ctx *r, const struct rnic_inflight *e, uint32_t pmtu)
{
	uint32_t span = rnic_wqe_span(e, pmtu);

	r->rd_psns -= span;
	/* One PSN more per window answered (additive increase); cuts compare PSNs within reach. */
	r->rd_grow += span;
	while (r->rd_grow >= r->rd_window && r->rd_window < RNIC_MAX_READ_WINDOW) {
		r->rd_grow -= r->rd_window;
		r->rd_window++;
	}
	if (rnic_psn_diff(r->una, r->rd_cut) > 0)
		r->rd_cut = r->una;
}

/* Start the next WQE of the SQ: take and check it, take its PSNs. 1 if one was started. */
static int
start_wqe(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	uint32_t index = r->sq_next, pdn = rnic_pd_priv(qp->pd)->pdn;
	struct rnic_send_wqe *w = &p->wqe;	/* kept for send_packet, which comes next */
	struct rnic_inflight *e;
	enum rnic_wc_status st;
	uint8_t *dst = NULL;
	int posted, reads;
	uint32_t pmtu;

	if (r->halted || r->infl_tail - r->infl_head == r->infl_mask + 1) {
		r->blocked = 1;
		return 0;
	}
	posted = rnic_wq_posted(&q->sq, &r->sq_head_seen, index, r->sq_done);
	if (posted <= 0) {
		r->blocked = 0;		/* nothing posted: the next doorbell wakes the QP */
		if (posted < 0)
			bad_queue_index(p, qp);
		return 0;
	}
	p->wqe_qp = qp;
	p->wqe_index = index;
	/* Past here, a WQE that does not start waits for a response (or is rejected and halts the QP). */
	r->blocked = 1;
	e = rnic_req_infl(r, r->infl_tail);
	st = take_wqe(p, q, e, index, w);
	if (st != RNIC_WC_SUCCESS) {
		reject_wqe(p, qp, index, w->opcode, st);
		return 0;
	}
	reads = w->opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(w->opcode);
	/* A fenced WQE waits for the READs and atomics before it; the READ/atomic depth is max_rd_atomic.
	 * When it starts later, it is taken again: what was read now decides nothing but the wait. */
	if ((w->fence && r->rd_atomic != 0) || (reads && r->rd_atomic >= RTE_MAX(q->attr.max_rd_atomic, (uint8_t)1)))
		return 0;
	pmtu = rnic_mtu_bytes(qp->qp_type == RNIC_QPT_UD ? p->dev->active_mtu : q->attr.path_mtu);
	if (w->opcode == RNIC_WQE_OP_RDMA_READ && read_window_full(r, msg_span(w->length, pmtu)))
		return 0;
	if (check_sges(p, w, pdn, reads ? RNIC_MR_NEED_LOCAL_WRITE : RNIC_MR_NEED_LOCAL_READ,
		       w->opcode == RNIC_WQE_OP_RDMA_READ ? &dst : NULL) != RNIC_MR_OK) {
		reject_wqe(p, qp, index, w->opcode, RNIC_WC_LOC_PROT_ERR);
		return 0;
	}
	memset(e, 0, sizeof(*e));
	e->dst = dst;
	e->dst_epoch = p->req_cache.epoch;	/* the epoch the translation was made in */
	e->index = index;
	e->opcode = w->opcode;
	e->signaled = w->signaled;
	e->length = (uint32_t)w->length;
	e->first_psn = r->npsn;
	if (rnic_latency_on) {
		r->cur_start = p->req_clock;
		rnic_lat_record(&p->lat[RNIC_LAT_REQUESTER].queued,
				r->cur_start - q->sq.posted_tsc[index & (q->sq.wqe_cnt - 1)], 1);
	}
	r->cur = r->infl_tail;
	r->infl_tail++;
	r->sq_next++;
	r->cur_off = 0;
	r->blocked = 0;
	if (reads)
		r->rd_atomic++;
	if (w->opcode == RNIC_WQE_OP_RDMA_READ)
		r->rd_psns += msg_span(e->length, pmtu);
	return 1;
}

/* AckReq: on a message's last packet, at least every ack_every packets (a long message gets ACKs before
 * its end, so the window keeps moving and the loss timer only runs out when something is lost), and on the
 * probe after a loss timeout. */
static int
ask_ack(struct rnic_req_ctx *r, int last)
{
	if (!last && !r->probing && ++r->noack < r->ack_every)
		return 0;
	r->noack = 0;
	return 1;
}

static void
fill_request(struct rnic_qp *qp, const struct rnic_send_wqe *w, struct rnic_pkt_desc *d, uint8_t opcode,
	     uint32_t psn, int last)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);

	d->opcode = opcode;
	d->psn = psn;
	d->se = (uint8_t)(last && w->solicited);
	d->ack_req = (uint8_t)(qp->qp_type == RNIC_QPT_RC && ask_ack(&q->req, last));
	if (d->ack_req)
		q->req.ask_psn = psn;
	d->imm = rte_be_to_cpu_32(w->imm);
	d->ieth_rkey = rte_be_to_cpu_32(w->imm);
	d->reth.va = w->raddr;
	d->reth.rkey = w->rkey;
	d->reth.dma_len = (uint32_t)w->length;
	if (qp->qp_type == RNIC_QPT_UD) {
		uint32_t qkey = rte_be_to_cpu_32(w->ud->qkey);

		d->dqpn = rte_be_to_cpu_32(w->ud->dqpn);
		/* IBA 10.2.5: a Q_Key with the high bit set means "use the QP's own". */
		d->deth.qkey = (qkey & 0x80000000u) ? q->attr.qkey : qkey;
		d->deth.src_qp = qp->qp_num;
	} else {
		d->dqpn = q->attr.dest_qp_num;
	}
}

/* Route of a UD WQE: its own address vector. */
static int
ud_route(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_send_wqe *w, struct rnic_pkt_desc *d)
{
	struct rnic_ah_attr av = { .is_global = 1, .port_num = 1 };
	uint8_t known = 0, mac[6];

	memcpy(av.grh.dgid.raw, w->ud->dgid, 16);
	av.grh.sgid_index = w->ud->sgid_index;
	av.grh.hop_limit = w->ud->hop_limit;
	av.grh.traffic_class = w->ud->traffic_class;
	av.grh.flow_label = rte_be_to_cpu_32(w->ud->flow_label);
	return rnic_fill_route(&p->req_tx, p->dev, &av, qp->qp_num,
			       rte_be_to_cpu_32(w->ud->dqpn) & 0xffffff, mac, &known, d);
}

void
rnic_requester_watch(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	uint64_t d = q->req.deadline, probe = q->req.probe_at, rnr = q->req.rnr_until;

	if (d == 0 || (probe != 0 && probe < d))
		d = probe;
	if (d == 0 || (rnr != 0 && rnr < d))
		d = rnr;
	rnic_timer_set(&p->timers, q->slot, d);
}

/*
 * How long a QP that hears nothing waits before an early probe: four round trips of the path, but no less
 * than a 64th of its loss timer nor RNIC_MIN_PROBE_US, twice as long for each probe since the last progress.
 * An ACK or NAK lost after the last packet a QP could send (its window full, or its posts all sent) would
 * else leave it waiting for the loss timer, which the application sets for a dead peer (67 ms at timeout
 * 14: a first probe after 1 ms at the earliest). The wait starts at a packet that asks for an ACK
 * (ack_awaited): a paced QP's packets before it, however long its pacer takes over them, are not in it.
 */
static uint64_t
probe_wait(const struct rnic_pipeline *p, const struct rnic_qp_priv *q)
{
	uint64_t wait = RTE_MAX(4 * p->srtt, p->loss_timeout_cycles[q->attr.timeout & 31] >> 6);

	return RTE_MAX(wait, p->min_probe_cycles) << RTE_MIN(q->req.probes, 20);
}

/*
 * Whether a packet in flight asked for an ACK (AckReq) that has not come: only then does silence tell of a
 * lost answer. Packets that asked for none wait for the QP's next ones, which go when its turn comes back;
 * a tenant's share, the pacer or thousands of QPs in turn can put that off past any probe_wait, and a probe
 * then went back over packets that were never lost (hundreds a second between two tenants).
 */
static inline int
ack_awaited(const struct rnic_req_ctx *r)
{
	return rnic_psn_diff(r->ask_psn, r->una) >= 0 && rnic_psn_diff(r->npsn, r->ask_psn) > 0;
}

/* The early probe: probe_wait from now while an ACK is awaited, before the loss timer (0: none). */
static void
arm_probe(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint64_t now)
{
	struct rnic_req_ctx *r = &q->req;

	r->probe_at = ack_awaited(r) ? now + probe_wait(p, q) : 0;
	if (r->probe_at >= r->deadline)
		r->probe_at = 0;
}

/* The loss timer, 4.096 us x 2^timeout (IBA 9.7.6.1.3; timeout 0 means none), and the early probe before
 * it. */
static void
arm_timer(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint64_t now)
{
	struct rnic_req_ctx *r = &q->req;

	if (q->attr.timeout == 0 || q->pub.qp_type != RNIC_QPT_RC)
		return;
	r->deadline = now + p->loss_timeout_cycles[q->attr.timeout & 31];
	arm_probe(p, q, now);
	rnic_requester_watch(p, q);
}

/* A packet went out: the loss timer starts with the first one in flight, the early probe with the first
 * that asks for an ACK. */
static inline void
timers_on_send(struct rnic_pipeline *p, struct rnic_qp_priv *q, int ack_req)
{
	struct rnic_req_ctx *r = &q->req;

	if (r->deadline == 0) {
		arm_timer(p, q, rnic_req_now(p));
	} else if (ack_req && r->probe_at == 0) {
		arm_probe(p, q, rnic_req_now(p));
		if (r->probe_at != 0)
			rnic_requester_watch(p, q);
	}
}

/* Time this packet's round trip, if no other packet is being timed (or the one that is was lost, or its QP
 * went, long ago): from now to the progress its ACK makes (rnic_requester_progress). */
static void
rtt_start(struct rnic_pipeline *p, const struct rnic_qp_priv *q, uint32_t psn)
{
	uint64_t now = rnic_req_now(p);

	if (p->rtt_tsc != 0 && now - p->rtt_tsc < p->loss_timeout_cycles[RNIC_RTT_GIVE_UP])
		return;
	p->rtt_tsc = now;
	p->rtt_slot = q->slot;
	p->rtt_psn = psn;
}

/*
 * The request of in-flight READ or atomic e at psn. A READ asked again resumes after the responses it has
 * (IBA 9.7.5.2.6: a new READ request for the rest, at the PSN of the first missing response); one already
 * answered whole goes again as it was (its PSNs must be sent; its responses only acknowledge). A READ's PSNs
 * are fixed (first_psn + k carries the data at k x PMTU), so the offset follows from the PSN it is sent at:
 * go-back-N from an earlier request sends it from first_psn, asking for all of it, even if part has arrived;
 * asking for less would take fewer PSNs and shift every later WQE's. Returns the PSNs its responses take.
 */
static uint32_t
rd_atomic_request(struct rnic_qp *qp, const struct rnic_send_wqe *w, const struct rnic_inflight *e, uint32_t psn,
		  uint32_t pmtu, struct rnic_pkt_desc *d)
{
	int read = e->opcode == RNIC_WQE_OP_RDMA_READ;
	uint32_t have = read ? (uint32_t)rnic_psn_diff(psn, e->first_psn) * pmtu : 0;

	fill_request(qp, w, d, (uint8_t)(RNIC_TRANSPORT_RC | (read ? RNIC_OP_RDMA_READ_REQUEST :
		     e->opcode == RNIC_WQE_OP_ATOMIC_CS ? RNIC_OP_COMPARE_SWAP : RNIC_OP_FETCH_ADD)), psn, 1);
	d->reth.va = w->raddr + have;
	d->reth.dma_len = (uint32_t)w->length - have;
	d->atomiceth.va = w->raddr;
	d->atomiceth.rkey = w->rkey;
	d->atomiceth.swap_add = w->swap_add;
	d->atomiceth.compare = w->compare;
	return read ? RTE_MAX((e->length - have + pmtu - 1) / pmtu, 1u) : 1;
}

void
rnic_requester_reask(struct rnic_pipeline *p, struct rnic_qp *qp, struct rnic_inflight *e)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	uint32_t pmtu = rnic_mtu_bytes(q->attr.path_mtu);
	struct rnic_send_wqe w;
	struct rnic_pkt_desc d;

	if (e->asked)
		return;		/* asked already for what is missing there */
	if (p->rtt_slot == q->slot)
		p->rtt_tsc = 0;		/* its answer would time the loss too */
	rnic_tx_flush(&p->req_tx);
	if (rnic_tx_room(&p->req_tx) == 0 ||
	    rnic_send_wqe_parse(rnic_req_wqe(q, e), 0, 0, &w) != 0)
		return;		/* the next response past the gap asks again, or the loss timer goes back */
	memset(&d, 0, sizeof(d));
	if (rnic_fill_route(&p->req_tx, p->dev, &q->attr.ah_attr, qp->qp_num, q->attr.dest_qp_num, q->req.dmac,
			    &q->req.dmac_known, &d) != 0)
		return;
	rd_atomic_request(qp, &w, e, rnic_psn_add(e->first_psn, e->received / pmtu), pmtu, &d);
	/* Responses placed past the missing ones: ask for the hole only, up to the first of them. */
	if (e->ahead != 0)
		d.reth.dma_len = RTE_MIN(d.reth.dma_len, (uint32_t)(rte_bsf32(e->ahead) + 1) * pmtu);
	if (rnic_send_control(p, &p->req_tx, &d) != 0)
		return;
	e->asked = 1;
	e->asked_end = e->received + d.reth.dma_len;
	q->counters.packets_sent++;
	q->counters.retransmits++;
	RNIC_STATS(p, REQUESTER)->retransmits++;
	RNIC_STATS(p, REQUESTER)->resent_requests++;
}

/* Done sending the WQE under the cursor: move on to the next one already started, or to a new one. */
static void
advance_cursor(struct rnic_req_ctx *r)
{
	r->cur++;
	r->cur_off = 0;
}

/* The WQE under the cursor is sent: its busy time ends now, and the next WQE's starts. */
static void
requester_busy(struct rnic_pipeline *p, struct rnic_req_ctx *r)
{
	uint64_t now = rte_rdtsc();

	rnic_lat_record(&p->lat[RNIC_LAT_REQUESTER].busy, now - r->cur_start, 1);
	p->req_clock = now;
}

/*
 * Whether the QP's destination takes its requests, as far as this engine knows: when the destination GID is a
 * device of this process, the QP there must be connected to this one (its destination QPN this QP's, its
 * address vector's GID this QP's source GID) if it takes requests at all. RC and UC frames carry no source
 * QPN, and the tenants of one rnicd share a device's GID, so the receiver's address check cannot tell a
 * tenant's QP aimed at another's from that one's peer; the sender, which knows both ends, can.
 */
static int
peer_connected(const struct rnic_device *dev, const struct rnic_qp_priv *q)
{
	const struct rnic_global_route *grh = &q->attr.ah_attr.grh;
	struct rnic_device *peer_dev = rnic_engine_device_by_gid(&grh->dgid);
	struct rnic_qp *dst = peer_dev != NULL ? rnic_qp_lookup(peer_dev, q->attr.dest_qp_num) : NULL;
	const struct rnic_qp_priv *dq = dst != NULL ? rnic_qp_priv(dst) : NULL;
	enum rnic_qp_state st;

	if (dst == NULL)
		return 1;	/* not a QP of this engine: its own checks (and the address check) apply */
	st = __atomic_load_n(&dst->state, __ATOMIC_ACQUIRE);
	if (st != RNIC_QPS_RTR && st != RNIC_QPS_RTS && st != RNIC_QPS_SQD)
		return 1;	/* takes no requests: it drops them (no_qp) */
	return dst->qp_type == q->pub.qp_type && dq->attr.dest_qp_num == q->pub.qp_num &&
	       memcmp(&dq->attr.ah_attr.grh.dgid, &dev->gid[grh->sgid_index], sizeof(grh->dgid)) == 0;
}

/* peer_connected, looked at again only when a QP of this process was connected, reset or destroyed since:
 * per packet, so a message cannot go on into a QP that was connected to another while it was sent. */
static inline int
peer_check(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	uint32_t gen = __atomic_load_n(&rnic_qp_peers_gen, __ATOMIC_ACQUIRE);

	if (unlikely(q->req.peer_gen != gen)) {
		q->req.peer_ok = (uint8_t)peer_connected(p->dev, q);
		q->req.peer_gen = gen;
	}
	return q->req.peer_ok;
}

/*
 * The destination's MAC is being resolved (rnic_neigh.h): the QP sends nothing until it is, looking again
 * every RNIC_NEIGH_RECHECK_US (the RNR wait's timer), for at most RNIC_NEIGH_WAIT_MS. The WQEs wait in the
 * SQ, so what waits is bounded by the SQ's depth. 0 when the wait is over.
 */
static int
neigh_wait(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	uint64_t now = rnic_req_now(p);

	if (q->req.neigh_since == 0)
		q->req.neigh_since = now;
	else if (now - q->req.neigh_since > p->neigh_wait_cycles)
		return 0;
	RNIC_STATS(p, REQUESTER)->neigh_waits++;
	q->req.rnr_until = now + p->neigh_recheck_cycles;
	rnic_requester_watch(p, q);
	return 1;
}

/* No MAC for the destination: the neighbour did not answer ARP/ND (or the address cannot be resolved). The
 * WQE fails as one whose peer never answers (retry exceeded) and the QP goes to error. */
static void
no_route(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_inflight *e, const uint8_t *dgid)
{
	char ip[INET6_ADDRSTRLEN];

	RNIC_STATS(p, REQUESTER)->no_route++;
	rnic_qp_priv(qp)->req.neigh_since = 0;
	if (memcmp(dgid, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0)
		inet_ntop(AF_INET, dgid + 12, ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, dgid, ip, sizeof(ip));
	RNIC_LOG_LIMITED(ERR, "QP %u: no MAC for %s: the neighbour did not answer ARP/ND: WQE failed (retry "
			 "exceeded)", qp->qp_num, ip);
	fail_wqe(p, qp, e->index, e->opcode, RNIC_WC_RETRY_EXC_ERR);
}

/* A packet to a QP that would not take it from this QP: not sent, as if that QP had dropped it (a UC message
 * completes, an RC one times out), and counted. */
static void
refuse_packet(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	RNIC_STATS(p, REQUESTER)->spoofed_requests++;
	q->counters.spoofed_requests++;
}

/* The send WQE of in-flight e: the one start_wqe has just parsed, or the engine's copy of it parsed again (a
 * later packet, a resend): the copy parsed as the first time, and the SQ is not read again. */
static inline const struct rnic_send_wqe *
packet_wqe(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_inflight *e,
	   struct rnic_send_wqe *parsed)
{
	if (p->wqe_qp == qp && p->wqe_index == e->index)
		return &p->wqe;
	rnic_send_wqe_parse(rnic_req_wqe(rnic_qp_priv(qp), e), 0, qp->qp_type == RNIC_QPT_UD, parsed);
	return parsed;
}

/* Address the next packet (d's L2-L4 fields). 0 when it cannot go now: its destination's MAC is being
 * resolved, or cannot be (then the WQE has failed). */
static inline int
packet_route(struct rnic_pipeline *p, struct rnic_qp *qp, struct rnic_inflight *e, const struct rnic_send_wqe *w,
	     struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	int ret = qp->qp_type == RNIC_QPT_UD ? ud_route(p, qp, w, d) :
		  rnic_fill_route(&p->req_tx, p->dev, &q->attr.ah_attr, qp->qp_num, q->attr.dest_qp_num, r->dmac,
				  &r->dmac_known, d);

	if (unlikely(ret != 0)) {
		if (ret != -EAGAIN || !neigh_wait(p, q))
			no_route(p, qp, e, qp->qp_type == RNIC_QPT_UD ? w->ud->dgid : q->attr.ah_attr.grh.dgid.raw);
		return 0;
	}
	if (unlikely(r->neigh_since != 0))
		r->neigh_since = 0;	/* resolved: the next wait is timed afresh */
	return 1;
}

/* Send a READ or atomic request (its whole PSN span in one packet). 1 if it went out (or was refused as
 * spoofed: the same to the QP). */
static int
send_rd_atomic(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_send_wqe *w, struct rnic_inflight *e,
	       uint32_t pmtu, int spoofed, struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	uint32_t span = rd_atomic_request(qp, w, e, r->npsn, pmtu, d);

	if (spoofed)
		refuse_packet(p, q);
	else if (rnic_send_control(p, &p->req_tx, d) != 0)
		return 0;
	else
		q->counters.packets_sent++;
	if (rnic_latency_on && !e->sent_once)
		requester_busy(p, r);
	/* A READ's round trip includes sending the responses before its own and its own: what a QP waiting for
	 * them must allow before it probes (a 64-frame queue in front of a 2 Gbit/s link holds 1 ms of
	 * responses). */
	if (!e->sent_once)
		rtt_start(p, q, r->npsn);
	if (rnic_psn_diff(r->npsn, r->sent_psn) <= 0)
		RNIC_STATS(p, REQUESTER)->resent_requests++;
	e->sent_once = 1;
	r->probing = r->probing != 0 ? 2 : 0;
	e->last_psn = rnic_psn_add(r->npsn, span - 1);
	if (rnic_psn_diff(e->last_psn, r->sent_psn) > 0)
		r->sent_psn = e->last_psn;
	r->npsn = rnic_psn_add(r->npsn, span);
	e->sent = 1;
	advance_cursor(r);
	timers_on_send(p, q, d->ack_req);
	return 1;
}

/* A new frame for data packet d (payload_len bytes at the cursor): the payload gathered straight into it,
 * then the headers written around it. NULL when the pool is empty, or the gather failed (the WQE with it). */
static inline struct rte_mbuf *
build_data_frame(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_send_wqe *w,
		 const struct rnic_inflight *e, struct rnic_pkt_desc *d)
{
	struct rte_mbuf *m = rnic_tx_alloc(&p->req_tx, p->pool);
	uint32_t chunk = d->payload_len, frame_len;
	uint8_t *frame;

	if (m == NULL) {
		RNIC_STATS(p, REQUESTER)->no_mbuf++;
		return NULL;
	}
	frame_len = rnic_pkt_frame_len(d);
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)frame_len);
	if (frame != NULL)
		d->payload = frame + frame_len - RNIC_ICRC_LEN - ((4 - (chunk & 3)) & 3) - chunk;
	if (frame == NULL || gather(p, w, rnic_pd_priv(qp->pd)->pdn, rnic_qp_priv(qp)->req.cur_off, chunk,
				    (uint8_t *)(uintptr_t)d->payload) != RNIC_MR_OK ||
	    rnic_pkt_build(d, frame, frame_len) < 0) {
		rte_pktmbuf_free(m);
		fail_wqe(p, qp, e->index, e->opcode, RNIC_WC_LOC_PROT_ERR);
		return NULL;
	}
	return m;
}

/* Queue data packet d's frame: the kept one for a resend (not for a probe: the kept frame may not ask for an
 * ACK), else a new one, kept for resending (RC). 0 if none could be had. */
static inline int
queue_data_frame(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_send_wqe *w,
		 const struct rnic_inflight *e, struct rnic_pkt_desc *d, int resend)
{
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;
	struct rte_mbuf *m = resend && !r->probing ? rtx_resend(p, r) : NULL;

	if (m != NULL) {
		RNIC_STATS(p, REQUESTER)->resent_kept++;
	} else {
		m = build_data_frame(p, qp, w, e, d);
		if (m == NULL)
			return 0;
		if (resend)
			RNIC_STATS(p, REQUESTER)->resent_gathered++;
		else if (qp->qp_type == RNIC_QPT_RC)
			rtx_keep(p, r, m, r->npsn);
	}
	rnic_tx_enqueue(&p->req_tx, m);
	rnic_qp_priv(qp)->counters.packets_sent++;
	return 1;
}

/* Send the next SEND or WRITE packet of in-flight e (one MTU from the cursor) and move the cursor past it. 1 if
 * it went out (or was refused as spoofed: the same to the QP). */
static int
send_data_packet(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_send_wqe *w, struct rnic_inflight *e,
		 uint32_t pmtu, int spoofed, struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	int first = r->cur_off == 0, last, resend;
	uint32_t chunk = RTE_MIN(pmtu, e->length - r->cur_off);

	last = r->cur_off + chunk == e->length;
	fill_request(qp, w, d, message_opcode(qp->qp_type, e->opcode, first, last), r->npsn, last);
	d->payload_len = chunk;
	resend = rnic_psn_diff(r->npsn, r->sent_psn) <= 0;
	if (spoofed)
		refuse_packet(p, q);
	else if (!queue_data_frame(p, qp, w, e, d, resend))
		return 0;
	p->visit_bytes += chunk;
	r->probing = r->probing != 0 ? 2 : 0;
	if (!resend) {
		r->sent_psn = r->npsn;
		if (d->ack_req)
			rtt_start(p, q, r->npsn);	/* a packet sent once: its ACK times the path */
	}
	r->npsn = rnic_psn_add(r->npsn, 1);
	r->cur_off += chunk;
	timers_on_send(p, q, d->ack_req);
	if (last) {
		if (rnic_latency_on && !resend)
			requester_busy(p, r);
		e->last_psn = d->psn;
		e->sent = 1;
		advance_cursor(r);
		if (qp->qp_type != RNIC_QPT_RC)
			rnic_requester_retire(p, qp);	/* UC and UD complete once sent */
	}
	return 1;
}

/* Send the next packet of the WQE under the cursor. 1 if a packet went out. */
static int
send_packet(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_inflight *e = rnic_req_infl(&q->req, q->req.cur);
	struct rnic_send_wqe parsed;
	const struct rnic_send_wqe *w = packet_wqe(p, qp, e, &parsed);
	struct rnic_pkt_desc d;
	uint32_t pmtu;
	int spoofed, sent, msg;

	memset(&d, 0, sizeof(d));
	if (!packet_route(p, qp, e, w, &d))
		return 0;
	/* A capped tenant's message: the first packet of a WQE's request, sent for the first time. */
	msg = unlikely(p->visit_cap != NULL) && q->req.cur_off == 0 &&
	      rnic_psn_diff(q->req.npsn, q->req.sent_psn) > 0;
	spoofed = qp->qp_type != RNIC_QPT_UD && !peer_check(p, q);
	pmtu = qp->qp_type == RNIC_QPT_UD ? rnic_mtu_bytes(p->dev->active_mtu) : rnic_mtu_bytes(q->attr.path_mtu);
	if (e->opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(e->opcode))
		sent = send_rd_atomic(p, qp, w, e, pmtu, spoofed, &d);
	else
		sent = send_data_packet(p, qp, w, e, pmtu, spoofed, &d);
	if (unlikely(q->req.paced) && sent)
		rnic_pacer_charge(p, q, rnic_pkt_frame_len(&d));
	if (unlikely(p->visit_cap != NULL) && sent)
		rnic_cap_charge(p->visit_cap, rnic_pkt_frame_len(&d), msg);
	return sent;
}

void
rnic_requester_progress(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	uint64_t now = rnic_req_now(p);

	/* Forward progress refills the retry counts (IBA 9.7.6.1.1), restarts the loss timer and ends a
	 * probe. */
	r->retry_left = q->attr.retry_cnt;
	r->rnr_left = q->attr.rnr_retry;
	r->probing = 0;
	r->probes = 0;
	if (p->rtt_tsc != 0 && p->rtt_slot == q->slot && rnic_psn_diff(r->una, p->rtt_psn) > 0) {
		uint64_t sample = now - p->rtt_tsc;

		p->srtt = p->srtt == 0 ? sample : p->srtt - p->srtt / 8 + sample / 8;
		p->rtt_tsc = 0;
	}
	rtx_release(p, r);
	if (r->una == r->npsn) {
		r->deadline = r->probe_at = 0;
		rnic_requester_watch(p, q);
	} else {
		arm_timer(p, q, now);
	}
}

int
rnic_requester_rewind(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	uint32_t pmtu = rnic_mtu_bytes(q->attr.path_mtu);

	if (rnic_psn_diff(psn, r->una) < 0 || rnic_psn_diff(psn, r->npsn) >= 0)
		return -1;	/* not outstanding: a stale NAK */
	r->probing = 0;
	r->after_loss = 1;
	r->loss_psn = rnic_psn_add(r->sent_psn, RNIC_LOSS_HORIZON);
	if (p->rtt_slot == q->slot)
		p->rtt_tsc = 0;		/* a packet sent again times nothing (its ACK may be the first's) */
	for (uint32_t i = r->infl_head; i != r->infl_tail; i++) {
		struct rnic_inflight *e = rnic_req_infl(r, i);
		uint32_t last = e->sent ? e->last_psn : rnic_psn_prev(r->npsn);
		int whole = e->opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(e->opcode);

		if (rnic_psn_diff(psn, e->first_psn) < 0 || rnic_psn_diff(psn, last) > 0)
			continue;
		/* Go back N: this WQE from the PSN, and every one after it. A READ resumes after the responses
		 * it has; an atomic goes again whole (the responder answers a duplicate from its results). */
		r->cur = i;
		r->cur_off = whole ? 0 : (uint32_t)rnic_psn_diff(psn, e->first_psn) * pmtu;
		r->npsn = e->opcode == RNIC_WQE_OP_RDMA_READ && !e->answered ?
			  rnic_psn_add(e->first_psn, e->received / pmtu) :
			  whole ? e->first_psn : psn;
		for (uint32_t j = i; j != r->infl_tail; j++)
			rnic_req_infl(r, j)->sent = rnic_req_infl(r, j)->status != 0;
		rtx_rewind(p, r, r->npsn);
		arm_timer(p, q, rnic_req_now(p));
		q->counters.retransmits++;
		RNIC_STATS(p, REQUESTER)->retransmits++;
		return 0;
	}
	return -1;
}

uint32_t
rnic_wqe_span(const struct rnic_inflight *e, uint32_t pmtu)
{
	return rnic_wqe_op_is_atomic(e->opcode) ? 1 : msg_span(e->length, pmtu);
}

void
rnic_requester_skip_acked(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	uint32_t pmtu = rnic_mtu_bytes(q->attr.path_mtu);

	for (; r->cur != r->infl_tail; r->cur++) {
		struct rnic_inflight *e = rnic_req_infl(r, r->cur);
		uint32_t last = rnic_psn_add(e->first_psn, rnic_wqe_span(e, pmtu) - 1);
		int whole = e->opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(e->opcode);

		if (e->status != 0) {
			e->sent = 1;		/* rejected: nothing of it goes out */
			continue;
		}
		/* Acknowledged whole (a READ or atomic only once answered: ack_upto stops before others). */
		if (rnic_psn_diff(r->una, last) > 0 && (!whole || e->answered)) {
			e->sent = 1;
			e->last_psn = last;
			continue;
		}
		if (whole) {
			r->cur_off = 0;
			r->npsn = e->opcode == RNIC_WQE_OP_RDMA_READ && !e->answered ?
				  rnic_psn_add(e->first_psn, e->received / pmtu) : e->first_psn;
		} else {
			r->cur_off = (uint32_t)rnic_psn_diff(r->una, e->first_psn) * pmtu;
			r->npsn = r->una;
		}
		rtx_rewind(p, r, r->npsn);
		return;
	}
	r->cur_off = 0;
	r->npsn = r->una;
	rtx_rewind(p, r, r->npsn);
}

/* The loss timer expired: resend from the oldest unacknowledged PSN, or fail once the retries are spent. */
static void
loss_timeout(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;

	r->deadline = r->probe_at = 0;
	RNIC_STATS(p, REQUESTER)->timeouts++;
	q->counters.timeouts++;
	if (r->retry_left == 0) {
		struct rnic_inflight *e = rnic_req_infl(r, r->infl_head);

		if (r->infl_head != r->infl_tail)
			fail_wqe(p, qp, e->index, e->opcode, RNIC_WC_RETRY_EXC_ERR);
		return;
	}
	r->retry_left--;
	/* Go back to the oldest unacknowledged PSN (seed test 25: the timer restarts, a retry is spent), but
	 * send only that packet, asking for an ACK, until a response makes progress: a peer that was only
	 * slow (its ACK late, nothing lost) then costs one packet, not the window; after a real loss, the
	 * progress the probe's answer makes lets the rest go. */
	if (rnic_requester_rewind(p, qp, r->una) == 0)
		r->probing = 1;
	rnic_sched_activate(&p->sched, q->slot);
}

/*
 * Nothing answered the QP for a while (probe_wait): probe as after a loss timeout (go back to UPSN, send that
 * one packet asking for an ACK, wait for progress; the answer tells where the responder is: an ACK of
 * everything sent lets the QP go on, one of less goes back from there), but spend no retry; or, for a READ
 * or atomic at UPSN still without its data, ask for that data again (the requests after it went through).
 */
static void
early_probe(struct rnic_pipeline *p, struct rnic_qp *qp, uint64_t now)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	struct rnic_inflight *e = r->infl_head != r->infl_tail ? rnic_req_infl(r, r->infl_head) : NULL;
	uint64_t deadline = r->deadline;	/* a probe does not put the loss timer off */

	RNIC_STATS(p, REQUESTER)->probes++;
	if (e != NULL && (e->opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(e->opcode)) &&
	    e->sent_once && !e->answered) {
		e->asked = 0;
		rnic_requester_reask(p, qp, e);
	} else if (rnic_requester_rewind(p, qp, r->una) == 0) {
		r->probing = 1;
		rnic_sched_activate(&p->sched, q->slot);
	}
	r->probes++;
	r->deadline = deadline;
	arm_probe(p, q, now);	/* a READ asked again; else the probe's packet, when it goes */
}

/* The wheel handed back a QP: its RNR wait, early probe or loss timer may be over, or have moved later. */
static void
on_timer(void *arg, uint32_t slot)
{
	struct rnic_pipeline *p = arg;
	struct rnic_qp *qp = rnic_qp_by_slot(p->dev, slot);
	struct rnic_req_ctx *r;
	uint64_t now = rnic_req_now(p);

	RNIC_STATS(p, REQUESTER)->timer_expiries++;
	if (qp == NULL || rnic_shard_of(p->dev, qp->qp_num) != p ||
	    __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) != RNIC_QPS_RTS)
		return;		/* gone, or no longer sending: nothing to time */
	r = &rnic_qp_priv(qp)->req;
	if (r->rnr_until != 0 && now >= r->rnr_until) {
		r->rnr_until = 0;			/* the wait is over: serve() resends */
		rnic_sched_activate(&p->sched, slot);
	}
	if (r->deadline != 0 && now >= r->deadline)
		loss_timeout(p, qp);
	else if (r->probe_at != 0 && now >= r->probe_at && r->rnr_until != 0)
		r->probe_at = 0;	/* waiting out an RNR NAK: nothing goes before its time */
	else if (r->probe_at != 0 && now >= r->probe_at)
		early_probe(p, qp, now);
	rnic_requester_watch(p, rnic_qp_priv(qp));
}

void
rnic_requester_timers(struct rnic_pipeline *p)
{
	rnic_timer_expire(&p->timers, rnic_req_now(p), on_timer, p);
}

/*
 * Whether the QP has a window's worth of SEND/WRITE bytes sent and not acknowledged (rnic_qp.h): the frames
 * kept for resending, and the PSNs from UPSN to NPSN but READ responses' counted as full packets, both past
 * the window (the kept frames are bytes on the wire, small messages' too; the PSNs leave out what a
 * go-back-N sends again); or those PSNs past window / 64, for frames the retransmit buffer had no room to
 * keep.
 */
static int
window_full(const struct rnic_qp_priv *q)
{
	const struct rnic_req_ctx *r = &q->req;
	int64_t psns = (int64_t)rnic_psn_diff(r->npsn, r->una) - r->rd_psns;

	if (psns <= 0)
		return 0;
	return (r->rtx_bytes >= r->window && ((uint64_t)psns << (7 + q->attr.path_mtu)) >= r->window) ||
	       (uint64_t)psns >= r->window >> 6;
}

/*
 * After a full quantum: whether the QP has more to send, the SQ head read again if need be (its line is still
 * at hand from this visit), so that a QP whose posts were all sent goes idle now rather than after one more
 * visit, which with thousands of QPs would bring its context and host-interface lines back for nothing.
 */
static int
has_more(struct rnic_qp_priv *q)
{
	/* A head past the SQ's end (-1) is more too: the next visit's start_wqe fails the QP for it. */
	return q->req.cur != q->req.infl_tail ||
	       rnic_wq_posted(&q->sq, &q->req.sq_head_seen, q->req.sq_next, q->req.sq_done) != 0;
}

/*
 * A QP that lost a packet lately (a go-back-N within the last RNIC_LOSS_HORIZON PSNs) is on a lossy path: all
 * it sends in a pass after a lost packet goes again, since the NAK is handled only before the next pass. Its
 * visits send half the bytes and a quarter of the packets of a clean path's (a quarter: small messages, whose
 * visits the packets bound, resent 4.5-5 frames per frame lost with half), and it gets one visit a pass
 * (rnic_stage_requester), a lone QP too; a clean path keeps the whole budget, whose fewer passes per byte are
 * worth a few per cent of a lone QP's bandwidth.
 */
static inline int
on_lossy_path(struct rnic_req_ctx *r)
{
	if (likely(!r->after_loss))
		return 0;
	if (rnic_psn_diff(r->sent_psn, r->loss_psn) >= 0) {
		r->after_loss = 0;
		return 0;
	}
	return 1;
}

/* A QP on a lossy path already visited in this requester pass. */
static inline int
visited_lossy(const struct rnic_pipeline *p, const struct rnic_req_ctx *r)
{
	return r->after_loss && r->lossy_pass == p->req_pass;
}

/* Serve one QP: up to quantum packets. Returns the packets sent; *idle when it has nothing to send. */
static unsigned int
serve(struct rnic_pipeline *p, struct rnic_qp *qp, unsigned int quantum, int *idle)
{
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;
	enum rnic_qp_state state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	int lossy = on_lossy_path(r);
	uint32_t quantum_bytes = lossy ? QUANTUM_BYTES / 2 : QUANTUM_BYTES;
	unsigned int sent = 0;

	*idle = 0;
	p->wqe_qp = NULL;	/* what start_wqe parsed on another visit may be stale (a reset QP) */
	if (rnic_latency_on)
		p->req_clock = rte_rdtsc();	/* a WQE started on this visit starts now */
	if (state == RNIC_QPS_ERR || state == RNIC_QPS_SQE) {
		/* Moved to error elsewhere, or WQEs posted in SQE: flush here, on the owning lcore. */
		if (state == RNIC_QPS_ERR)
			rnic_requester_fail(p, qp);
		else
			flush_send_queue(p, qp);
		*idle = 1;
		return 0;
	}
	/* A doorbell of a QP that may not send (RESET, INIT, RTR, SQD, SQE: anyone can ring one): it waits for
	 * the move to RTS, which rings the engine (rnic_modify_qp). Kept active, it would be visited again and
	 * again without doing any work, and the stage would never return. */
	if (state != RNIC_QPS_RTS) {
		*idle = 1;
		return 0;
	}
	rnic_pacer_check_limit(p, rnic_qp_priv(qp));
	if (r->rnr_until != 0) {
		if (rnic_req_now(p) < r->rnr_until) {
			*idle = 1;	/* the timer scan wakes it */
			return 0;
		}
		r->rnr_until = 0;
	}
	if (lossy)
		quantum = RTE_MIN(quantum, QUANTUM / 4);
	while (sent < quantum && p->visit_bytes < quantum_bytes && state == RNIC_QPS_RTS) {
		int busy;

		while (r->cur != r->infl_tail && rnic_req_infl(r, r->cur)->status != 0)
			r->cur++;	/* a rejected WQE: nothing to send, it waits for its turn to complete */
		busy = r->cur != r->infl_tail;

		if (rnic_tx_room(&p->req_tx) == 0) {
			rnic_tx_flush(&p->req_tx);
			if (rnic_tx_room(&p->req_tx) == 0)
				break;	/* the port is full: come back to this QP on the next round */
		}
		/* The outstanding window of RC (UC and UD get no ACKs); after a loss timeout, the one packet of
		 * the probe. */
		if (qp->qp_type == RNIC_QPT_RC && (window_full(rnic_qp_priv(qp)) || r->probing == 2)) {
			r->blocked = 1;
			*idle = 1;
			break;
		}
		if (!busy && !start_wqe(p, qp)) {
			*idle = 1;	/* nothing to start, or blocked until a response frees room */
			break;
		}
		/* A QP with a rate (rate_limit, DCQCN) waits for its pacer, which wakes it (rnic_pacer.h). */
		if (unlikely(r->paced) && !rnic_pacer_admit(p, rnic_qp_priv(qp))) {
			*idle = 1;
			break;
		}
		/* ... and one of a tenant with a cap for its tenant's tokens, which wake it in turn. */
		if (unlikely(p->visit_cap != NULL) && !rnic_cap_admit(p, p->visit_cap, rnic_qp_priv(qp))) {
			*idle = 1;
			break;
		}
		if (!send_packet(p, qp))
			break;
		sent++;
		state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	}
	if ((sent == quantum || p->visit_bytes >= quantum_bytes) && !has_more(rnic_qp_priv(qp)))
		*idle = 1;
	return sent;
}

/*
 * The lines a QP's visit uses, which the poster wrote long ago with thousands of QPs in turn: the SQ head,
 * and for the quantum of WQEs a visit may start, their slots, their post times, their in-flight entries and
 * where the engine's copy of each goes (a slot written once per WQE).
 */
static void
prefetch_next_wqe(const struct rnic_qp_priv *q)
{
	uint32_t next = q->req.sq_next, mask = q->sq.wqe_cnt - 1, n = RTE_MIN(QUANTUM, q->sq.wqe_cnt);

	RTE_BUILD_BUG_ON(sizeof(struct rnic_inflight) > RTE_CACHE_LINE_SIZE);
	rte_prefetch0(q->sq.idx);
	for (uint32_t i = 0; i < RTE_MIN(n, q->req.infl_mask + 1); i++) {
		rte_prefetch0(rnic_wq_slot(&q->sq, next + i));
		rte_prefetch0_write(rnic_req_wqe(q, rnic_req_infl(&q->req, q->req.infl_tail + i)));
	}
	for (uint32_t i = 0; i < n; i += RTE_CACHE_LINE_SIZE / sizeof(uint64_t))
		rte_prefetch0(&q->sq.posted_tsc[(next + i) & mask]);
	for (uint32_t i = 0; i < RTE_MIN(n, q->req.infl_mask + 1);
	     i += RTE_CACHE_LINE_SIZE / sizeof(struct rnic_inflight))
		rte_prefetch0_write(rnic_req_infl(&q->req, q->req.infl_tail + i));
}

/*
 * The payloads of the WQEs a QP's visit may start, once their slots are at hand (prefetch_next_wqe, a turn
 * earlier): the application's buffer, written long ago with thousands of QPs, which the gather and the ICRC
 * after it would otherwise wait for. Only the WQEs the head says are posted: a slot past it holds an old WQE.
 */
static void
prefetch_payloads(const struct rnic_qp_priv *q)
{
	uint32_t next = q->req.sq_next;
	uint32_t n = RTE_MIN(RTE_MIN(QUANTUM, q->req.infl_mask + 1),
			     __atomic_load_n(&q->sq.idx->head, __ATOMIC_RELAXED) - next);
	int ud = q->pub.qp_type == RNIC_QPT_UD;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr;
		uint32_t len;

		if (!rnic_send_wqe_first_sge(rnic_wq_slot(&q->sq, next + i), q->sq.stride, ud, &addr, &len))
			continue;
		rte_prefetch0((const void *)(uintptr_t)addr);
		rte_prefetch0((const void *)(uintptr_t)(addr + RTE_MIN(len, 2u * RTE_CACHE_LINE_SIZE) - 1));
	}
}

/* The QP rnic_sched_next will most likely return after `ahead` more calls, or NULL. */
static struct rnic_qp_priv *
qp_ahead(struct rnic_pipeline *p, unsigned int ahead)
{
	struct rnic_qp *qp;
	uint32_t slot;

	if (!rnic_sched_peek(&p->sched, ahead, &slot) || (qp = rnic_qp_by_slot(p->dev, slot)) == NULL)
		return NULL;
	return rnic_qp_priv(qp);
}

/*
 * Three turns of the round robin ahead, the QP's context (its address needs no load); two turns ahead, that
 * context at hand, the host-interface lines it points to; one turn ahead, the WQE slots at hand, the payloads
 * they name. A lone QP has no turn ahead: nothing is asked for.
 */
static void
prefetch_turns_ahead(struct rnic_pipeline *p)
{
	struct rnic_qp_priv *q;

	if ((q = qp_ahead(p, 2)) != NULL)
		rnic_qp_prefetch(&q->pub);
	if ((q = qp_ahead(p, 1)) != NULL)
		prefetch_next_wqe(q);
	if ((q = qp_ahead(p, 0)) != NULL)
		prefetch_payloads(q);
}

/* Signed distance of virtual time a from b (they wrap). */
static inline int64_t
vtime_diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

/* A tenant's first visit in a round: its share and cap as the control path last set them, and its virtual time at
 * most RNIC_SHARE_LAG behind the slowest tenant's of the round before. A tenant whose QPs all waited for
 * ACKs through a round (absent from it) keeps what it is owed, and one back from idling claims little of
 * the time it had no work. */
static void
tenant_start_round(struct rnic_pipeline *p, struct rnic_req_tenant *t)
{
	uint32_t share = RTE_MAX(__atomic_load_n(&t->share, __ATOMIC_RELAXED), 1u);

	t->vcost = RNIC_SHARE_SCALE / share;
	t->window = RNIC_TENANT_WINDOW * share;
	t->credit = RTE_MIN(t->credit, 0) + (int32_t)(RNIC_TENANT_CREDIT * share);
	rnic_cap_check(p, t);
	if (vtime_diff(t->vtime, p->vfloor) < -(int64_t)RNIC_SHARE_LAG)
		t->vtime = p->vfloor - RNIC_SHARE_LAG;
	if (p->tenants_now == 0 || vtime_diff(t->vtime, p->vmin) < 0)
		p->vmin = t->vtime;
}

/*
 * The QP's tenant's share of the requester in this scheduler round (struct rnic_req_tenant). The first
 * visit of a tenant in a round gives it the round's credit (less what it overdrew), and counts it among
 * the tenants with work: the share applies only while there are two or more.
 */
static struct rnic_req_tenant *
tenant_round(struct rnic_pipeline *p, const struct rnic_qp_priv *q)
{
	struct rnic_req_tenant *t = &p->req_tenant[q->tenant];
	uint32_t round = p->sched.round;

	if (p->tenant_round != round) {
		p->tenant_round = round;
		p->tenants_last = p->tenants_now;
		if (p->tenants_now > 1)
			p->shared_until = rte_get_tsc_cycles() + p->shared_horizon;
		if (p->tenants_now > 0)
			p->vfloor = p->vmin;
		p->tenants_now = 0;
	}
	if (t->round != round) {
		t->top = t->top_now;
		t->top_now = 0;
		t->round = round;
		tenant_start_round(p, t);
		if (__atomic_load_n(&t->released, __ATOMIC_RELAXED) != 0)
			t->inflight -= __atomic_exchange_n(&t->released, 0, __ATOMIC_ACQUIRE);
		p->tenants_now++;
	}
	return t;
}

static int
tenants_compete(const struct rnic_pipeline *p)
{
	return p->tenants_now > 1 || p->tenants_last > 1;
}

/* Whether tenants' windows hold: the shard is shared now, or was within RNIC_TENANT_HORIZON_MS. */
static int
window_holds(const struct rnic_pipeline *p)
{
	return p->shared_until != 0 && (tenants_compete(p) || rte_get_tsc_cycles() < p->shared_until);
}

/*
 * Whether the tenant has its window of PSNs in flight (RNIC_TENANT_WINDOW x its share) while the shard is
 * shared: it then waits for acknowledgements. What a tenant has in flight waits in the rings and the port's
 * queues in front of every other tenant's frames, which the parser and the responder serve in arrival order;
 * the window keeps that queue short, so a tenant with one operation at a time is not slowed by the depth of
 * another's queues. The shard counts as shared for RNIC_TENANT_HORIZON_MS after a round of two tenants,
 * which covers the pauses of a tenant doing one operation at a time (between two of them, the other's
 * queue would fill again). A tenant alone sends within its QPs' windows only.
 */
static int
tenant_window_full(const struct rnic_pipeline *p, const struct rnic_req_tenant *t)
{
	return (int32_t)t->inflight >= (int32_t)t->window && window_holds(p);
}

/* Whether the tenant is ahead of its share: its virtual time past the slowest tenant's by the slack. */
static inline int
tenant_ahead(const struct rnic_pipeline *p, const struct rnic_req_tenant *t)
{
	return vtime_diff(t->vtime, p->vfloor) > (int64_t)RNIC_SHARE_SLACK;
}

/*
 * Whether the tenant may send from the QP at slot while tenants share the shard: it has credit in this round,
 * is not ahead of its share, and has come round to the QP after the one that ended its last turn. Rounds
 * serve slots in increasing order, and a tenant that is ahead gets its turn back only as a round begins:
 * were its QPs served from its first each time, its first QP would take every turn and its others none
 * (a QP of 4 unacknowledged packets waited out its 67 ms loss timer, again and again, beside another
 * tenant of share 3).
 */
static inline int
tenant_turn(const struct rnic_pipeline *p, struct rnic_req_tenant *t, uint32_t slot)
{
	t->top_now = RTE_MAX(t->top_now, slot);
	if (t->credit <= 0 || tenant_ahead(p, t))
		return 0;
	/* Its QPs before resume wait for the next round, unless none after them had work in the last. */
	return slot >= t->resume || t->resume > t->top;
}

/* After the tenant's visit to the QP at slot: where its next turn starts, if this one has ended. */
static inline void
tenant_turn_end(const struct rnic_pipeline *p, struct rnic_req_tenant *t, uint32_t slot)
{
	if (t->credit > 0 && !tenant_ahead(p, t)) {
		t->resume = 0;
		return;
	}
	t->resume = slot + 1;
}

/* What a visit costs its tenant in bytes: the payload and each packet's headers, and a READ's response
 * PSNs (those it took beyond its packets) as frames of the path MTU. */
static inline uint64_t
visit_charge(const struct rnic_pipeline *p, struct rnic_qp *qp, unsigned int sent, int32_t psns)
{
	uint32_t responses = (uint32_t)RTE_MAX(psns - (int32_t)sent, 0);

	return p->visit_bytes + (uint64_t)sent * RNIC_TENANT_HDR_BYTES +
	       (responses == 0 ? 0 : (uint64_t)responses * rnic_mtu_bytes(rnic_qp_priv(qp)->attr.path_mtu));
}

/*
 * While the tenant's window holds, a visit sends at most the room left in it, and its packet that fills it
 * asks for an ACK (the QP's AckReq counter set so that it runs out there). Else a tenant of several QPs,
 * each with fewer packets in flight than its own AckReq period (up to 64 packets), fills its window with
 * packets none of which asks for an ACK, and waits for its QPs' loss timers (two tenants of 2 QPs each,
 * 64 KB WRITEs at MTU 1024 through rnicd: 4000 loss timeouts a second). A window found full when no
 * packet of the QP's in flight asks for an ACK (the window began to hold, or shrank, under packets sent
 * before) lets the QP send one that asks (unasked_in_flight). Returns the visit's quantum.
 */
static inline unsigned int
ack_at_window(const struct rnic_pipeline *p, const struct rnic_req_tenant *t, struct rnic_req_ctx *r,
	      unsigned int quantum)
{
	int32_t room = (int32_t)t->window - (int32_t)t->inflight;

	if (!window_holds(p) || room >= (int32_t)r->ack_every - (int32_t)r->noack)
		return quantum;
	room = RTE_MAX(room, 1);
	r->noack = (uint8_t)(r->ack_every - room);
	return RTE_MIN(quantum, (unsigned int)room);
}

/* Whether the QP has packets in flight none of which asked for an ACK that has not come. */
static inline int
unasked_in_flight(const struct rnic_req_ctx *r)
{
	return r->npsn != r->una && !ack_awaited(r);
}

/* Serve a QP within its tenant's share. Returns the packets sent; *idle when it has nothing to send (a QP
 * whose tenant has used its share of the round sends nothing and stays active). */
static unsigned int
serve_shared(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t slot, unsigned int quantum, int *idle)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_tenant *t = tenant_round(p, q);
	int share = tenants_compete(p);
	uint32_t psn = q->req.npsn;
	unsigned int sent;
	int32_t psns;

	rnic_tenant_sync(p, qp);	/* a timeout's go-back-N since its last visit */
	if ((share && !tenant_turn(p, t, slot)) || (tenant_window_full(p, t) && !unasked_in_flight(&q->req))) {
		t->deferred++;
		*idle = 0;
		return 0;
	}
	p->visit_bytes = 0;
	p->visit_cap = unlikely(t->capped) ? t : NULL;
	sent = serve(p, qp, ack_at_window(p, t, &q->req, quantum), idle);
	if (unlikely(p->visit_cap != NULL))
		rnic_cap_visit_end(p, t, slot, idle);
	rnic_tenant_sync(p, qp);
	/* PSNs the visit took (a READ takes one per response packet); a QP that failed or was reset has
	 * nothing to charge. */
	psns = RTE_MAX(rnic_psn_diff(q->req.npsn, psn), 0);
	t->packets += sent;
	t->bytes += p->visit_bytes;
	t->psns += (uint32_t)psns;
	t->vtime += visit_charge(p, qp, sent, psns) * t->vcost;
	if (share) {
		t->credit -= psns;
		tenant_turn_end(p, t, slot);
	}
	return sent;
}

unsigned int
rnic_stage_requester(void *arg, unsigned int budget)
{
	struct rnic_pipeline *p = arg;
	uint32_t slots[RNIC_BURST], slot;
	unsigned int n, work = 0;

	rnic_requester_clock(p, rte_get_tsc_cycles());
	rnic_requester_timers(p);
	if (unlikely(p->pacing))
		rnic_pacer_timers(p);
	rtx_reclaim(p);
	n = rnic_edge_dequeue_burst(p->slot_ring, slots, sizeof(slots[0]), RNIC_BURST);
	for (unsigned int i = 0; i < n; i++)
		rnic_sched_activate(&p->sched, slots[i]);
	p->req_pass++;
	while (work < budget && rnic_sched_next(&p->sched, &slot)) {
		struct rnic_qp *qp = rnic_qp_by_slot(p->dev, slot);
		unsigned int sent = 0;
		int idle = 1;

		prefetch_turns_ahead(p);

		/* The round robin came back to a QP on a lossy path: the pass ends (on_lossy_path). The QP keeps
		 * its place: it is served first in the next pass. */
		if (qp != NULL && visited_lossy(p, &rnic_qp_priv(qp)->req)) {
			rnic_sched_unget(&p->sched, slot);
			break;
		}
		RNIC_STATS(p, REQUESTER)->qp_visits++;
		if (qp != NULL) {
			sent = serve_shared(p, qp, slot, RTE_MIN(QUANTUM, budget - work), &idle);
			RNIC_STATS(p, REQUESTER)->qp_idle_visits += sent == 0;
			if (sent > 0 && rnic_qp_priv(qp)->req.after_loss)
				rnic_qp_priv(qp)->req.lossy_pass = p->req_pass;
		}
		if (idle)
			rnic_sched_deactivate(&p->sched, slot);
		/* A visit is work too, one that sent nothing above all (every QP blocked or deferred, the pool
		 * empty): the pass ends within its budget. A QP left active that sent nothing was visited again and
		 * again, and the stages sharing the lcore, which would have freed mbufs (the completer) or drained
		 * the port (the peer's parser), never ran. */
		work += sent + (qp == NULL || idle || sent == 0);
		/* The port takes no more (the TX buffer held back all it can): the pass ends, as no QP can send.
		 * Its QPs stay active, none idle, and would be visited for nothing until the peer reads; where the
		 * peer's parser shares this lcore (the loopback pair), it never would. */
		if (rnic_tx_room(&p->req_tx) == 0)
			break;
	}
	rnic_tx_flush(&p->req_tx);
	rnic_cq_flush_deferred();	/* what rnic_requester_retire completed (UC and UD once sent) */
	if (work == 0)
		rnic_tx_idle(&p->req_tx, p->pool);
	return work;
}
