/* SPDX-License-Identifier: BSD-3-Clause
 * The responder: the seed's execution engine (PSN check, RQ WQE fetch, SEND scatter, WRITE through the
 * write address table, READ responses, atomics) and response packet generation (ACK, NAK, READ
 * responses, atomic ACKs). Seed 003 §3.10-3.12, IBA 9.7.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ring.h>

#include "rnic_cq.h"
#include "rnic_neigh.h"
#include "rnic_dcqcn.h"
#include "rnic_pipeline.h"
#include "rnic_responder.h"
#include "rnic_srq.h"
#include "rnic_wqe.h"

#define GRH_LEN 40	/* the space a UD receive buffer reserves for the GRH, as libibverbs */
#define RNIC_READ_TURN 16	/* READ responses one QP sends per turn of the responder's READ queue */

enum verdict {
	V_DONE,		/* executed */
	V_DROP,		/* silently dropped (UC/UD errors, duplicates already answered) */
	V_NAK_INVALID,
	V_NAK_ACCESS,
	V_NAK_OP,	/* the QP failed here (its receive queue in a state no poster writes) */
	V_RNR,
};

/* A READ response or atomic ACK at psn acknowledges every PSN before it: a coalesced ACK of an earlier PSN
 * need not go out. One of a later PSN (a duplicate READ answered again) still must. */
static void
covered_by_response(struct rnic_resp_ctx *r, uint32_t psn)
{
	if (r->ack_pending && rnic_psn_diff(r->ack_psn, psn) < 0)
		r->ack_pending = 0;
}

/* Reply to the requester of this QP: an ACK, NAK or atomic ACK with the given fields. */
static void
reply(struct rnic_pipeline *p, struct rnic_qp *qp, uint8_t op, uint32_t psn, uint8_t syndrome, uint32_t msn,
      struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);

	if (rnic_fill_route(&p->resp_tx, p->dev, &q->attr.ah_attr, qp->qp_num, q->attr.dest_qp_num, q->resp.dmac,
			    &q->resp.dmac_known, d) != 0) {
		RNIC_STATS(p, RESPONDER)->tx_dropped++;
		return;
	}
	d->opcode = (uint8_t)(RNIC_TRANSPORT_RC | op);
	d->dqpn = q->attr.dest_qp_num;
	d->psn = psn;
	d->aeth.syndrome = syndrome;
	d->aeth.msn = msn;
	rnic_send_control(p, &p->resp_tx, d);
}

static void
send_ack_now(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn, uint8_t syndrome)
{
	struct rnic_qp_counters *c = &rnic_qp_priv(qp)->counters;
	struct rnic_pipeline_stats *st = RNIC_STATS(p, RESPONDER);
	struct rnic_pkt_desc d;

	memset(&d, 0, sizeof(d));
	reply(p, qp, RNIC_OP_ACKNOWLEDGE, psn, syndrome, rnic_qp_priv(qp)->resp.msn, &d);
	if (RNIC_AETH_IS_ACK(syndrome)) {
		st->acks_sent++;
		c->acks_sent++;
	} else if (RNIC_AETH_IS_RNR(syndrome)) {
		st->rnr_naks_sent++;
		c->rnr_naks_sent++;
	} else if (syndrome == RNIC_AETH_NAK_PSN_SEQ) {
		st->seq_naks_sent++;
		c->seq_naks_sent++;
	} else if (syndrome == RNIC_AETH_NAK_INVALID_REQUEST) {
		st->inv_req_naks_sent++;
		c->inv_req_naks_sent++;
	} else if (syndrome == RNIC_AETH_NAK_REMOTE_ACCESS) {
		st->access_naks_sent++;
		c->access_naks_sent++;
	} else {
		st->remote_op_naks_sent++;
		c->remote_op_naks_sent++;
	}
}

/*
 * ACKs and NAKs are coalesced: the QP's latest one waits until the end of the responder's burst (a bounded
 * delay: at most RNIC_BURST requests) and one frame acknowledges every request before it (IBA 9.7.5.1.2).
 * A NAK is never replaced by an ACK (its PSN is the higher one) nor by another NAK of the same PSN (an RNR
 * NAK stays an RNR NAK). Behind queued READ responses it waits for them: responses leave in PSN order, so
 * it can never tell the requester a READ is done before its data.
 */
static void
send_ack(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn, uint8_t syndrome)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_resp_ctx *r = &q->resp;

	if (r->ack_pending) {
		int32_t diff = rnic_psn_diff(psn, r->ack_psn);

		if (diff < 0 || (diff == 0 && !RNIC_AETH_IS_ACK(r->ack_syndrome)))
			return;		/* the pending one says as much */
		RNIC_STATS(p, RESPONDER)->acks_coalesced++;
	}
	r->ack_pending = 1;
	r->ack_psn = psn;
	r->ack_syndrome = syndrome;
	r->unacked = 0;
	if (!r->ack_listed && p->nb_acks < RNIC_BURST) {
		r->ack_listed = 1;
		p->ack_list[p->nb_acks++] = q->slot;
	}
}

/* End of a burst: the coalesced ACKs and NAKs of QPs with no READ responses to send first. */
static void
flush_acks(struct rnic_pipeline *p)
{
	for (unsigned int i = 0; i < p->nb_acks; i++) {
		struct rnic_qp *qp = rnic_qp_by_slot(p->dev, p->ack_list[i]);
		struct rnic_resp_ctx *r;

		if (qp == NULL)
			continue;
		r = &rnic_qp_priv(qp)->resp;
		r->ack_listed = 0;
		if (__atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) == RNIC_QPS_UNKNOWN)
			continue;	/* its resources are being moved: the requester asks again */
		if (r->ack_pending && r->rd_head == r->rd_tail) {
			r->ack_pending = 0;
			send_ack_now(p, qp, r->ack_psn, r->ack_syndrome);
		}
	}
	p->nb_acks = 0;
}

/*
 * The QP failed on the responder's side: to error, its receive queue flushed here, the affiliated asynchronous
 * event raised (no completion may tell the application: a WRITE consumes no receive), and the requester's
 * lcore told, which flushes the send queue.
 */
static void
responder_fail(struct rnic_qp *qp, enum rnic_event_type event)
{
	rnic_qp_fail(qp);
	rnic_qp_flush_rq(qp);
	rnic_async_event_raise(qp->context, event, qp);
	rnic_qp_notify_engine(qp);
}

/*
 * Whether the receive WQE the current message lands in (the oldest not completed) is posted: 1 or 0; or, when
 * the RQ's head is past what the RQ holds (rnic_wq_posted), the QP fails (a local work queue error, IBA
 * 11.6.3.1) and -1.
 */
static int
rq_posted(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	int posted = rnic_wq_posted(&q->rq, &q->resp.rq_head_seen, q->resp.rq_done, q->resp.rq_done);

	if (posted < 0) {
		RNIC_STATS(p, RESPONDER)->bad_queue_index++;
		RNIC_LOG_LIMITED(ERR, "QP %u: RQ head %u is past the %u WQEs the RQ holds: QP in error", qp->qp_num,
				 __atomic_load_n(&q->rq.idx->head, __ATOMIC_RELAXED), q->rq.wqe_cnt);
		responder_fail(qp, RNIC_EVENT_QP_FATAL);
	}
	return posted;
}

/* What a message finds no receive WQE for: RNR for RC (the requester sends it again), a drop for UC and UD; a
 * failed RQ a NAK for RC. */
static enum verdict
no_recv_wqe(struct rnic_pipeline *p, const struct rnic_qp *qp, int posted)
{
	RNIC_STATS(p, RESPONDER)->recv_wqe_missing += posted == 0;
	if (qp->qp_type != RNIC_QPT_RC)
		return V_DROP;
	return posted < 0 ? V_NAK_OP : V_RNR;
}

/* The bytes the scatter list copied into recv_sge holds. */
static void
recv_capacity(struct rnic_resp_ctx *r)
{
	r->recv_capacity = 0;
	for (uint32_t i = 0; i < r->recv_nb_sge; i++)
		r->recv_capacity += rte_be_to_cpu_32(r->recv_sge[i].byte_count);
}

/*
 * A message's first packet takes its receive WQE: the scatter list is copied from the RQ once (the RQ is the
 * poster's memory, which it may rewrite while the message's packets come), and every packet of the message
 * is placed by the copy.
 */
static void
take_recv_wqe(struct rnic_qp_priv *q)
{
	struct rnic_resp_ctx *r = &q->resp;

	r->recv_nb_sge = rnic_recv_wqe_copy(r->recv_sge, RTE_MAX(q->cap.max_recv_sge, 1u),
					    rnic_wq_slot(&q->rq, r->rq_done), q->rq.stride);
	recv_capacity(r);
}

/*
 * A QP on an SRQ takes the SRQ's oldest WQE, its scatter list copied as from an RQ (rnic_srq_take, lock-free:
 * the SRQ's other QPs may be on other responder lcores), and holds it until the message completes. One it
 * holds already (a UC message cut short by a loss) takes the next message. 1, 0 (none posted), or -1: the SRQ
 * is in error (its head was past what it holds), and so is the QP.
 */
static int
take_srq_wqe(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_resp_ctx *r = &rnic_qp_priv(qp)->resp;
	struct rnic_srq_wqe w;
	int taken;

	if (r->srq_held)
		return 1;
	taken = rnic_srq_take(qp->srq, r->recv_sge, &w);
	if (taken < 0) {
		RNIC_STATS(p, RESPONDER)->bad_queue_index++;
		responder_fail(qp, RNIC_EVENT_QP_FATAL);
	} else if (taken > 0) {
		r->srq_held = 1;
		r->srq_index = w.index;
		r->srq_wr_id = w.wr_id;
		r->recv_nb_sge = w.nb_sge;
		recv_capacity(r);
	}
	return taken;
}

/* A message that needs a receive WQE takes it: 1, or 0 when none is posted, or -1 when the QP failed here (its
 * receive queue in a state no poster writes). scatter: a SEND, which copies the WQE's scatter list. */
static int
take_recv(struct rnic_pipeline *p, struct rnic_qp *qp, int scatter)
{
	int posted;

	if (qp->srq != NULL)
		return take_srq_wqe(p, qp);
	posted = rq_posted(p, qp);
	if (posted > 0 && scatter)
		take_recv_wqe(rnic_qp_priv(qp));
	return posted;
}

/* Complete the receive WQE a message took: the RQ's oldest one, or the one it holds from its SRQ (whose
 * number and wr_id the CQE carries). */
static void
push_recv_cqe(struct rnic_qp *qp, struct rnic_cqe_desc *c)
{
	struct rnic_resp_ctx *r = &rnic_qp_priv(qp)->resp;

	if (qp->srq != NULL) {
		c->wqe_counter = (uint16_t)r->srq_index;
		c->srqn = rnic_srq_priv(qp->srq)->srqn;
		c->wr_id = r->srq_wr_id;
		r->srq_held = 0;
		rnic_cq_push(qp->recv_cq, c);
		return;
	}
	c->wqe_counter = (uint16_t)r->rq_done;
	rnic_cq_push(qp->recv_cq, c);
	r->rq_done++;
}

/* Place len bytes at message offset off of the receive WQE's scatter list (the copy take_recv_wqe made). */
static enum rnic_mr_status
scatter(struct rnic_pipeline *p, const struct rnic_qp_priv *q, uint32_t pdn, uint32_t off, const uint8_t *src,
	uint32_t len)
{
	return rnic_sge_copy(p, &p->resp_cache, q->resp.recv_sge, q->resp.recv_nb_sge, pdn, RNIC_MR_NEED_LOCAL_WRITE,
			     off, (uint8_t *)(uintptr_t)src, len, 1);
}

/* The GRH a UD receive buffer starts with: the IPv6 header, or for IPv4 the IPv4 header in its last 20
 * bytes (the convention of Linux RoCE). */
static void
make_grh(const struct rte_mbuf *m, const struct rnic_pkt_desc *d, uint8_t grh[GRH_LEN])
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t l3 = RTE_ETHER_HDR_LEN + (d->has_vlan ? 4 : 0);

	memset(grh, 0, GRH_LEN);
	if (d->ip_version == 6)
		memcpy(grh, f + l3, GRH_LEN);
	else
		memcpy(grh + 20, f + l3, 20);
}

static void
complete_recv(struct rnic_qp *qp, const struct rnic_pkt_desc *d, uint32_t byte_len, int write_imm, int grh)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	uint16_t hdrs = rnic_opcode_info(d->opcode)->hdrs;
	struct rnic_cqe_desc c = {
		.qpn = qp->qp_num,
		.status = RNIC_WC_SUCCESS,
		.solicited = d->se,
		.with_imm = !!(hdrs & RNIC_HDR_IMMDT),
		.with_inv = !!(hdrs & RNIC_HDR_IETH),
		.is_rdma_write = (uint8_t)write_imm,
		.grh = (uint8_t)grh,
		.byte_cnt = byte_len,
		.imm_inval = (hdrs & RNIC_HDR_IETH) ? d->ieth_rkey : rte_cpu_to_be_32(d->imm),
		.src_qp = d->deth.src_qp,
	};

	push_recv_cqe(qp, &c);
	/* The next SEND's receive WQE, written by the poster's lcore: on its way before that SEND comes. */
	if (qp->srq == NULL && (int32_t)(q->resp.rq_head_seen - q->resp.rq_done) > 0)
		rte_prefetch0(rnic_wq_slot(&q->rq, q->resp.rq_done));
}

static enum verdict
do_send(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rte_mbuf *m, const struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_resp_ctx *r = &q->resp;
	uint8_t pos = rnic_opcode_info(d->opcode)->position;
	uint32_t pdn = rnic_pd_priv(qp->pd)->pdn, pmtu = rnic_mtu_bytes(q->attr.path_mtu);
	int ud = qp->qp_type == RNIC_QPT_UD, first = pos == RNIC_POS_FIRST || pos == RNIC_POS_ONLY;
	enum rnic_mr_status st;

	if (first == r->in_send)
		return qp->qp_type == RNIC_QPT_RC ? V_NAK_INVALID : V_DROP;	/* opcode out of sequence */
	if ((pos == RNIC_POS_FIRST || pos == RNIC_POS_MIDDLE) && d->payload_len != pmtu)
		return qp->qp_type == RNIC_QPT_RC ? V_NAK_INVALID : V_DROP;
	if (first) {
		int posted = take_recv(p, qp, 1);

		if (posted <= 0)
			return no_recv_wqe(p, qp, posted);
		r->recv_off = 0;
	}
	/* Too long for the receive buffer: detected before a byte is placed (IBA 9.9.3.1.2 local length). */
	if ((uint64_t)r->recv_off + (ud ? GRH_LEN : 0) + d->payload_len > r->recv_capacity)
		st = RNIC_MR_OUT_OF_BOUNDS;
	else if (ud) {
		uint8_t grh[GRH_LEN];

		make_grh(m, d, grh);
		st = scatter(p, q, pdn, 0, grh, GRH_LEN);
		r->recv_off = GRH_LEN;
		if (st == RNIC_MR_OK)
			st = scatter(p, q, pdn, r->recv_off, d->payload, d->payload_len);
	} else {
		st = scatter(p, q, pdn, r->recv_off, d->payload, d->payload_len);
	}
	if (st != RNIC_MR_OK) {
		/* Too long for the buffer, or a bad local key: the receive WQE completes in error. */
		struct rnic_cqe_desc c = { .qpn = qp->qp_num,
					   .status = st == RNIC_MR_OUT_OF_BOUNDS ? RNIC_WC_LOC_LEN_ERR :
					   RNIC_WC_LOC_PROT_ERR };

		RNIC_STATS(p, RESPONDER)->recv_length_errors += st == RNIC_MR_OUT_OF_BOUNDS;
		push_recv_cqe(qp, &c);
		if (ud)			/* UD: this message is lost, the QP goes on */
			return V_DROP;
		r->in_send = 0;
		return qp->qp_type == RNIC_QPT_RC ? V_NAK_INVALID : V_DROP;
	}
	r->recv_off += d->payload_len;
	r->in_send = pos == RNIC_POS_FIRST || pos == RNIC_POS_MIDDLE;
	if (!r->in_send) {
		complete_recv(qp, d, r->recv_off, 0, ud);
		r->msn = rnic_psn_add(r->msn, 1);
	}
	return V_DONE;
}

static enum verdict
do_write(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_resp_ctx *r = &q->resp;
	const struct rnic_opcode_info *info = rnic_opcode_info(d->opcode);
	uint32_t pdn = rnic_pd_priv(qp->pd)->pdn, pmtu = rnic_mtu_bytes(q->attr.path_mtu), n;
	int first = info->position == RNIC_POS_FIRST || info->position == RNIC_POS_ONLY;
	int last = info->position == RNIC_POS_LAST || info->position == RNIC_POS_ONLY;
	struct rnic_mr_seg seg[3];
	const uint8_t *src = d->payload;

	if (first == r->in_write)
		return qp->qp_type == RNIC_QPT_RC ? V_NAK_INVALID : V_DROP;
	if (!last && d->payload_len != pmtu)
		return qp->qp_type == RNIC_QPT_RC ? V_NAK_INVALID : V_DROP;
	/* WRITE with immediate consumes a receive WQE: none posted is an RNR before anything is written. */
	if (last && (info->hdrs & RNIC_HDR_IMMDT)) {
		int posted = take_recv(p, qp, 0);

		if (posted <= 0)
			return no_recv_wqe(p, qp, posted);
	}
	if (first) {
		/* The write address table entry: the whole range is checked once, up front. A zero-length
		 * WRITE touches no memory: its R_Key and VA are not checked (IBA 9.7.4.1). */
		if (d->reth.dma_len > RNIC_MAX_MSG_SIZE)
			return qp->qp_type == RNIC_QPT_RC ? V_NAK_INVALID : V_DROP;
		if (!(q->attr.qp_access_flags & RNIC_ACCESS_REMOTE_WRITE) ||
		    (d->reth.dma_len != 0 &&
		     rnic_mr_translate(p->dev->mr_table, &p->resp_cache, d->reth.rkey, pdn, RNIC_MR_NEED_REMOTE_WRITE,
				       d->reth.va, d->reth.dma_len, NULL, 0, &n) != RNIC_MR_OK))
			return qp->qp_type == RNIC_QPT_RC ? V_NAK_ACCESS : V_DROP;
		r->write_va = d->reth.va;
		r->write_rkey = d->reth.rkey;
		r->write_left = d->reth.dma_len;
		r->write_len = d->reth.dma_len;
	}
	if (d->payload_len > r->write_left || (last && d->payload_len != r->write_left)) {
		r->in_write = 0;
		return qp->qp_type == RNIC_QPT_RC ? V_NAK_INVALID : V_DROP;	/* length disagrees with the RETH */
	}
	for (uint32_t off = 0; off < d->payload_len;) {
		uint32_t piece = d->payload_len - off;

		if (rnic_mr_translate(p->dev->mr_table, &p->resp_cache, r->write_rkey, pdn, RNIC_MR_NEED_REMOTE_WRITE,
				      r->write_va + off, piece, seg, RTE_DIM(seg), &n) != RNIC_MR_OK) {
			r->in_write = 0;
			return qp->qp_type == RNIC_QPT_RC ? V_NAK_ACCESS : V_DROP;	/* deregistered meanwhile */
		}
		for (uint32_t s = 0; s < n; s++) {
			/* The message's last byte is stored last, and after everything else: an application
			 * polling it (perftest's write_lat) then finds the whole message in place. */
			int final = last && off + seg[s].len == d->payload_len;

			memcpy(seg[s].addr, src, seg[s].len - (uint32_t)final);
			if (final)
				__atomic_store_n((uint8_t *)seg[s].addr + seg[s].len - 1, src[seg[s].len - 1],
						 __ATOMIC_RELEASE);
			src += seg[s].len;
			off += seg[s].len;
		}
	}
	r->write_va += d->payload_len;
	r->write_left -= d->payload_len;
	r->in_write = !last;
	if (last) {
		if (info->hdrs & RNIC_HDR_IMMDT)
			complete_recv(qp, d, r->write_len, 1, 0);
		r->msn = rnic_psn_add(r->msn, 1);
	}
	return V_DONE;
}

/* The states a QP answers requests in: SQE (UC, UD) is an error of the send queue only. */
static int
answers_in(enum rnic_qp_state state)
{
	return state == RNIC_QPS_RTR || state == RNIC_QPS_RTS || state == RNIC_QPS_SQD || state == RNIC_QPS_SQE;
}

/*
 * A class C/D error (IBA 9.9.3): NAK the request at psn, and the responder's QP goes to error. The responses
 * still queued are dropped (a QP in error sends none), so the NAK goes out at the end of the burst. No
 * completion may tell the application (a WRITE consumes no receive): the affiliated asynchronous error of
 * IBA 11.6.3 does.
 */
static void
responder_error(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn, enum verdict v)
{
	struct rnic_resp_ctx *r = &rnic_qp_priv(qp)->resp;

	for (; r->rd_head != r->rd_tail; r->rd_head++)
		r->rd[r->rd_head & r->rd_mask].queued = 0;
	if (v == V_NAK_OP) {
		/* The QP has failed here (rq_posted): the requester learns it from a remote operational error. */
		send_ack(p, qp, psn, RNIC_AETH_NAK_REMOTE_OP);
		return;
	}
	if (v == V_NAK_ACCESS)
		RNIC_STATS(p, RESPONDER)->access_errors++;
	else
		RNIC_STATS(p, RESPONDER)->bad_requests++;
	send_ack(p, qp, psn, v == V_NAK_ACCESS ? RNIC_AETH_NAK_REMOTE_ACCESS : RNIC_AETH_NAK_INVALID_REQUEST);
	responder_fail(qp, v == V_NAK_ACCESS ? RNIC_EVENT_QP_ACCESS_ERR : RNIC_EVENT_QP_REQ_ERR);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Responder resources (READs and atomics, rnic_qp.h)                                                     */

static struct rnic_resp_res *
res_at(const struct rnic_resp_ctx *r, uint32_t i)
{
	return &r->rd[i & r->rd_mask];
}

/* PSNs of a READ: one per response. */
static uint32_t
read_span(uint32_t len, uint32_t pmtu)
{
	return RTE_MAX((len + pmtu - 1) / pmtu, 1u);
}

/* rd_head past the resources with nothing to send: it names the oldest one that has (or rd_tail). */
static void
res_skip(struct rnic_resp_ctx *r)
{
	while (r->rd_head != r->rd_tail && !res_at(r, r->rd_head)->queued)
		r->rd_head++;
}

/* The QP has responses to send: in the pipeline's queue of such QPs (oldest first). A queue found full (QPs
 * reset or destroyed while queued leave stale entries) leaves it out for now: its next request or the
 * requester's duplicate puts it in. */
static void
queue_responses(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	if (q->resp.rd_queued)
		return;
	if (p->read_tail - p->read_head > p->read_fifo_mask) {
		RNIC_STATS(p, RESPONDER)->ring_full++;
		return;
	}
	p->read_fifo[p->read_tail++ & p->read_fifo_mask] = q->slot;
	q->resp.rd_queued = 1;
}

/*
 * The resource for a new READ or atomic: the oldest one kept. NULL when that one has not been answered once
 * yet: the requester has more READs and atomics outstanding than max_dest_rd_atomic (an invalid request).
 * One being answered again for a duplicate gives way: its requester has had the answer.
 */
static struct rnic_resp_res *
res_take(struct rnic_resp_ctx *r)
{
	struct rnic_resp_res *res = res_at(r, r->rd_tail);

	if (r->rd_tail - r->rd_head > r->rd_mask) {
		if (!res->answered)
			return NULL;
		r->rd_head++;
		res_skip(r);
	}
	if (r->rd_kept <= r->rd_mask)
		r->rd_kept++;
	r->rd_tail++;
	return res;
}

/* The kept resource whose request covers psn (a READ's responses' PSNs, an atomic's one), newest first;
 * rd_tail when none does. */
static uint32_t
res_find(const struct rnic_resp_ctx *r, uint32_t psn, uint32_t pmtu)
{
	for (uint32_t i = r->rd_tail; i != r->rd_tail - r->rd_kept; i--) {
		const struct rnic_resp_res *res = res_at(r, i - 1);
		int32_t k = rnic_psn_diff(psn, res->psn);

		if (k >= 0 && (uint32_t)k < (res->atomic ? 1 : read_span(res->len, pmtu)))
			return i - 1;
	}
	return r->rd_tail;
}

/* Resource i has responses to send (again): it is answered in PSN order with the others queued. */
static void
res_requeue(struct rnic_resp_ctx *r, uint32_t i)
{
	res_at(r, i)->queued = 1;
	if ((int32_t)(i - r->rd_head) < 0)
		r->rd_head = i;
}

/* Send the READ response of the resource at *off (its hole's or its next) and move *off past it; 0 when the
 * pool has no mbuf (try again later). */
static int
send_read_response(struct rnic_pipeline *p, struct rnic_qp *qp, struct rnic_resp_res *res, uint32_t *off)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	uint32_t pmtu = rnic_mtu_bytes(q->attr.path_mtu), pdn = rnic_pd_priv(qp->pd)->pdn, n = 0;
	uint32_t npkts = read_span(res->len, pmtu), i = *off / pmtu;
	uint32_t chunk = RTE_MIN(pmtu, res->len - *off), frame_len;
	uint8_t op = npkts == 1 ? RNIC_OP_RDMA_READ_RESPONSE_ONLY : i == 0 ? RNIC_OP_RDMA_READ_RESPONSE_FIRST :
		     i + 1 == npkts ? RNIC_OP_RDMA_READ_RESPONSE_LAST : RNIC_OP_RDMA_READ_RESPONSE_MIDDLE;
	struct rte_mbuf *m = rnic_tx_alloc(&p->resp_tx, p->pool);
	struct rnic_mr_seg seg[3];
	struct rnic_pkt_desc d;
	uint8_t *frame, *dst;

	if (m == NULL) {
		RNIC_STATS(p, RESPONDER)->no_mbuf++;
		return 0;
	}
	memset(&d, 0, sizeof(d));
	if (rnic_fill_route(&p->resp_tx, p->dev, &q->attr.ah_attr, qp->qp_num, q->attr.dest_qp_num, q->resp.dmac,
			    &q->resp.dmac_known, &d) != 0) {
		rte_pktmbuf_free(m);
		RNIC_STATS(p, RESPONDER)->tx_dropped++;
		res->off = res->len;
		res->hole_off = res->hole_end;
		return 1;
	}
	if (chunk != 0 && res->src != NULL && rnic_mr_epoch_holds(p->dev->mr_table, res->src_epoch)) {
		seg[0] = (struct rnic_mr_seg){ .addr = res->src + *off, .len = chunk };
		n = 1;
	} else if (chunk != 0 && rnic_mr_translate(p->dev->mr_table, &p->resp_cache, res->rkey, pdn,
						   RNIC_MR_NEED_REMOTE_READ, res->va + *off, chunk, seg, RTE_DIM(seg),
						   &n) != RNIC_MR_OK) {
		/* The region went away, or a duplicate asks again from one deregistered since: the QP fails,
		 * nothing more is answered. */
		rte_pktmbuf_free(m);
		responder_error(p, qp, rnic_psn_add(res->psn, i), V_NAK_ACCESS);
		return 1;
	}
	d.opcode = (uint8_t)(RNIC_TRANSPORT_RC | op);
	d.dqpn = q->attr.dest_qp_num;
	d.psn = rnic_psn_add(res->psn, i);
	d.aeth.syndrome = RNIC_AETH_ACK;
	d.aeth.msn = res->msn;
	d.payload_len = chunk;
	frame_len = rnic_pkt_frame_len(&d);
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)frame_len);
	if (unlikely(frame == NULL)) {
		/* A frame longer than the pool's mbufs (only a pool smaller than the port's frames): what cannot
		 * be answered ends the READ with a remote operational error, as a NIC's internal fault would. */
		rte_pktmbuf_free(m);
		RNIC_STATS(p, RESPONDER)->tx_dropped++;
		responder_error(p, qp, rnic_psn_add(res->psn, i), V_NAK_OP);
		return 1;
	}
	/* Gather straight from the registered memory into the frame, then the headers around it. */
	dst = frame + frame_len - RNIC_ICRC_LEN - ((4 - (chunk & 3)) & 3) - chunk;
	d.payload = dst;
	for (uint32_t s = 0; s < n; s++) {
		memcpy(dst, seg[s].addr, seg[s].len);
		dst += seg[s].len;
	}
	rnic_pkt_build(&d, frame, frame_len);
	rnic_tx_enqueue(&p->resp_tx, m);
	if (res->answered || *off < res->sent)
		RNIC_STATS(p, RESPONDER)->resent_responses++;
	*off += chunk;
	res->sent = RTE_MAX(res->sent, *off);
	return 1;
}

/* Send the next response of resource rd_head: 0 when the pool has no mbuf. */
static int
send_next_response(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_resp_ctx *r = &rnic_qp_priv(qp)->resp;
	struct rnic_resp_res *res = res_at(r, r->rd_head);

	if (res->atomic) {
		struct rnic_pkt_desc d;

		memset(&d, 0, sizeof(d));
		d.atomic_ack_orig = res->orig;
		reply(p, qp, RNIC_OP_ATOMIC_ACKNOWLEDGE, res->psn, RNIC_AETH_ACK, res->msn, &d);
		RNIC_STATS(p, RESPONDER)->resent_responses += res->answered;
	} else if (!send_read_response(p, qp, res, res->hole_off < res->hole_end ? &res->hole_off : &res->off)) {
		return 0;
	}
	/* Done with it, unless the QP failed meanwhile (nothing is queued then). */
	if (res->queued && (res->atomic || (res->off >= res->len && res->hole_off >= res->hole_end))) {
		res->queued = 0;
		res->answered = 1;
		r->rd_head++;
		res_skip(r);
	}
	return 1;
}

/*
 * Answer queued READs and atomics, the QPs in turn, while the port has room. Returns the packets sent. A QP
 * sends at most RNIC_READ_TURN responses per turn, then goes to the back of the queue if it has more: its
 * requester posts a new READ as each one completes, so a QP served until it had nothing left would keep the
 * responder to itself for as long as it kept posting, and the READs of the QPs behind it would wait until
 * their requesters' retries ran out (RETRY_EXC_ERR with none of their READs answered).
 */
static unsigned int
serve_reads(struct rnic_pipeline *p, unsigned int budget)
{
	unsigned int sent = 0;

	while (sent < budget && p->read_head != p->read_tail) {
		uint32_t slot = p->read_fifo[p->read_head & p->read_fifo_mask];
		struct rnic_qp *qp = rnic_qp_by_slot(p->dev, slot);
		enum rnic_qp_state state = qp != NULL ? __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) :
					   RNIC_QPS_RESET;
		struct rnic_resp_ctx *r;

		if (state == RNIC_QPS_UNKNOWN)
			return sent;	/* its resources are being moved (rnic_modify_qp): come back next time */
		if (!answers_in(state) || !rnic_qp_priv(qp)->resp.rd_queued) {
			if (qp != NULL)		/* in error or reset (or a stale entry): nothing to answer */
				rnic_qp_priv(qp)->resp.rd_queued = 0;
			p->read_head++;
			p->read_turn = 0;
			continue;
		}
		r = &rnic_qp_priv(qp)->resp;
		while (sent < budget && r->rd_head != r->rd_tail && p->read_turn < RNIC_READ_TURN &&
		       rnic_tx_room(&p->resp_tx) != 0) {
			if (!send_next_response(p, qp))
				return sent;
			sent++;
			p->read_turn++;
		}
		/* The port full or the budget spent mid-turn: this QP goes on first next time (as it does when
		 * it has sent all but its pending ACK, which needs room too). */
		if (r->rd_head != r->rd_tail ? p->read_turn < RNIC_READ_TURN : rnic_tx_room(&p->resp_tx) == 0)
			return sent;
		p->read_head++;
		p->read_turn = 0;
		if (r->rd_head != r->rd_tail) {
			/* Its turn is over: behind the QPs waiting (still queued: rd_queued stays set). */
			p->read_fifo[p->read_tail++ & p->read_fifo_mask] = slot;
			continue;
		}
		if (r->ack_pending) {
			r->ack_pending = 0;
			send_ack_now(p, qp, r->ack_psn, r->ack_syndrome);
		}
		r->rd_queued = 0;
	}
	return sent;
}

/* RDMA READ: check it, then take a resource for it; the responses go out as the port takes them (serve_reads). */
static enum verdict
do_read(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *req)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_resp_ctx *r = &q->resp;
	uint32_t pdn = rnic_pd_priv(qp->pd)->pdn, n = 0;
	struct rnic_mr_seg seg[RNIC_MR_RUN_SEGS];
	struct rnic_resp_res *res;

	/* A zero-length READ touches no memory: its R_Key and VA are not checked (IBA 9.7.4.1), and it is
	 * answered by one READ response with no payload. */
	if (req->reth.dma_len > RNIC_MAX_MSG_SIZE || q->attr.max_dest_rd_atomic == 0)
		return V_NAK_INVALID;	/* no responder resource at all: every READ is one too many */
	if (!(q->attr.qp_access_flags & RNIC_ACCESS_REMOTE_READ) ||
	    (req->reth.dma_len != 0 &&
	     rnic_mr_translate(p->dev->mr_table, &p->resp_cache, req->reth.rkey, pdn, RNIC_MR_NEED_REMOTE_READ,
			       req->reth.va, req->reth.dma_len, seg, RTE_DIM(seg), &n) != RNIC_MR_OK))
		return V_NAK_ACCESS;
	res = res_take(r);
	if (res == NULL)
		return V_NAK_INVALID;	/* more outstanding than the responder resources agreed */
	r->msn = rnic_psn_add(r->msn, 1);
	*res = (struct rnic_resp_res){
		.va = req->reth.va, .rkey = req->reth.rkey, .len = req->reth.dma_len, .psn = req->psn,
		.msn = r->msn, .queued = 1, .src = rnic_mr_run(seg, n, req->reth.dma_len),
		.src_epoch = p->resp_cache.epoch,
	};
	covered_by_response(r, req->psn);
	queue_responses(p, q);
	return V_DONE;
}

/*
 * A duplicate READ (IBA 9.7.5.1.6): the resource its original took answers it again, from the PSN it names;
 * a duplicate never takes a resource of its own. One asking for the rest of the original replaces whatever
 * the resource still had to send; one asking for a part that went out already (responses lost, later ones
 * arrived) gets that part first, and the resource goes on where it was. One no resource covers (older than
 * those kept), or that is not a part of its original (another key, another address for its PSN, past its
 * end), is dropped.
 */
static void
replay_read(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *req)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_resp_ctx *r = &q->resp;
	uint32_t pmtu = rnic_mtu_bytes(q->attr.path_mtu), i = res_find(r, req->psn, pmtu), off, end;
	struct rnic_resp_res *res = res_at(r, i);

	if (i == r->rd_tail || res->atomic)
		return;
	off = (uint32_t)rnic_psn_diff(req->psn, res->psn) * pmtu;
	end = off + req->reth.dma_len;
	if (req->reth.rkey != res->rkey || req->reth.va != res->va + off || req->reth.dma_len > res->len - off ||
	    (end != res->len && (req->reth.dma_len == 0 || end % pmtu != 0)))
		return;
	if (end == res->len) {
		res->off = off;
		res->hole_off = res->hole_end = 0;
	} else if (res->hole_off < res->hole_end) {
		res->hole_off = RTE_MIN(res->hole_off, off);
		res->hole_end = RTE_MAX(res->hole_end, end);
	} else {
		res->hole_off = off;
		res->hole_end = end;
	}
	covered_by_response(r, req->psn);
	res_requeue(r, i);
	queue_responses(p, q);
}

/* An atomic's answer: at once when nothing is queued before it, or behind the READ responses before it
 * (responses leave in PSN order). */
static void
answer_atomic(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t i)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_resp_ctx *r = &q->resp;

	covered_by_response(r, res_at(r, i)->psn);
	res_requeue(r, i);
	if (r->rd_head == i && i + 1 == r->rd_tail)
		send_next_response(p, qp);
	else
		queue_responses(p, q);
}

static enum verdict
do_atomic(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *req)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	uint32_t pdn = rnic_pd_priv(qp->pd)->pdn, n;
	struct rnic_resp_res *res;
	struct rnic_mr_seg seg;
	enum rnic_mr_status st;
	uint64_t orig, *target;

	if (!(q->attr.qp_access_flags & RNIC_ACCESS_REMOTE_ATOMIC))
		return V_NAK_ACCESS;
	st = rnic_mr_translate(p->dev->mr_table, &p->resp_cache, req->atomiceth.rkey, pdn,
			       RNIC_MR_NEED_REMOTE_ATOMIC, req->atomiceth.va, 8, &seg, 1, &n);
	if (st != RNIC_MR_OK)
		return rnic_mr_status_to_nak(st) == RNIC_AETH_NAK_INVALID_REQUEST ? V_NAK_INVALID : V_NAK_ACCESS;
	/* Its result is kept in a resource, so it is taken before the operation is. */
	res = q->attr.max_dest_rd_atomic != 0 ? res_take(&q->resp) : NULL;
	if (res == NULL)
		return V_NAK_INVALID;
	/* 8-byte aligned, so one page: the operation is atomic against the application's own atomics too. */
	target = (uint64_t *)(void *)seg.addr;
	if ((req->opcode & 0x1f) == RNIC_OP_COMPARE_SWAP) {
		orig = req->atomiceth.compare;
		__atomic_compare_exchange_n(target, &orig, req->atomiceth.swap_add, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(target, req->atomiceth.swap_add, __ATOMIC_SEQ_CST);
	}
	q->resp.msn = rnic_psn_add(q->resp.msn, 1);
	/* A duplicate of this request is answered with the result kept here, never executed again. */
	*res = (struct rnic_resp_res){ .psn = req->psn, .msn = q->resp.msn, .atomic = 1, .orig = orig };
	answer_atomic(p, qp, q->resp.rd_tail - 1);
	return V_DONE;
}

/* A duplicate atomic: answered again from the result of its one execution, unless that answer is already
 * queued; one older than the resources kept has long had its answer (IBA 9.7.5.1.1) and is dropped. */
static void
replay_atomic(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *req)
{
	struct rnic_resp_ctx *r = &rnic_qp_priv(qp)->resp;
	uint32_t i = res_find(r, req->psn, rnic_mtu_bytes(rnic_qp_priv(qp)->attr.path_mtu));

	if (i != r->rd_tail && res_at(r, i)->atomic && !res_at(r, i)->queued)
		answer_atomic(p, qp, i);
}

static enum verdict
execute(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rte_mbuf *m, const struct rnic_pkt_desc *d)
{
	const struct rnic_opcode_info *info = rnic_opcode_info(d->opcode);
	uint8_t op = d->opcode & 0x1f;

	if (op == RNIC_OP_RDMA_READ_REQUEST) {
		RNIC_STATS(p, RESPONDER)->rx_read_requests++;
		return do_read(p, qp, d);
	}
	if (op == RNIC_OP_COMPARE_SWAP || op == RNIC_OP_FETCH_ADD) {
		RNIC_STATS(p, RESPONDER)->rx_atomic_requests++;
		return do_atomic(p, qp, d);
	}
	/* A WRITE's first or only packet carries the RETH: one count per message. */
	RNIC_STATS(p, RESPONDER)->rx_write_requests += (info->hdrs & RNIC_HDR_RETH) != 0;
	if ((info->hdrs & RNIC_HDR_RETH) || op == RNIC_OP_RDMA_WRITE_MIDDLE || op == RNIC_OP_RDMA_WRITE_LAST ||
	    op == RNIC_OP_RDMA_WRITE_LAST_WITH_IMMEDIATE)
		return do_write(p, qp, d);
	return do_send(p, qp, m, d);
}

/* PSN check of RC and UC (IBA 9.7.5.1.1 / 9.7.6): 1 to execute, 0 when handled here. */
static int
check_psn(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *d)
{
	struct rnic_resp_ctx *r = &rnic_qp_priv(qp)->resp;
	int32_t diff = rnic_psn_diff(d->psn, r->epsn);
	uint8_t pos = rnic_opcode_info(d->opcode)->position;

	if (qp->qp_type == RNIC_QPT_UC) {
		if (diff != 0) {
			/* A lost packet ends the message: drop until the next one starts. */
			RNIC_STATS(p, RESPONDER)->out_of_sequence++;
			r->in_send = r->in_write = 0;
			r->resync = 1;
			r->epsn = d->psn;
		}
		if (r->resync && pos != RNIC_POS_FIRST && pos != RNIC_POS_ONLY) {
			r->epsn = rnic_psn_add(d->psn, 1);
			return 0;
		}
		r->resync = 0;
		return 1;
	}
	if (diff < 0) {
		/* A duplicate: answered again, not executed again (READs are re-read: idempotent). */
		RNIC_STATS(p, RESPONDER)->duplicates++;
		rnic_qp_priv(qp)->counters.duplicates++;
		if ((d->opcode & 0x1f) == RNIC_OP_RDMA_READ_REQUEST) {
			replay_read(p, qp, d);
			return 0;
		}
		if ((d->opcode & 0x1f) == RNIC_OP_COMPARE_SWAP || (d->opcode & 0x1f) == RNIC_OP_FETCH_ADD) {
			replay_atomic(p, qp, d);
			return 0;
		}
		send_ack(p, qp, rnic_psn_prev(r->epsn), RNIC_AETH_ACK);
		return 0;
	}
	if (diff > 0) {
		/* A gap: one NAK per gap, then silence until the expected PSN arrives. */
		RNIC_STATS(p, RESPONDER)->out_of_sequence++;
		rnic_qp_priv(qp)->counters.out_of_sequence++;
		if (!r->nak_sent) {
			send_ack(p, qp, r->epsn, RNIC_AETH_NAK_PSN_SEQ);
			r->nak_sent = 1;
		}
		return 0;
	}
	r->nak_sent = 0;
	rnic_qp_priv(qp)->counters.requests_received++;
	return 1;
}

static void
handle_request(struct rnic_pipeline *p, struct rte_mbuf *m)
{
	struct rnic_pkt_desc parsed;
	const struct rnic_pkt_desc *d;
	struct rnic_qp *qp;
	struct rnic_qp_priv *q;
	enum rnic_qp_state state;
	enum verdict v;
	uint32_t span;

	d = rnic_frame_desc(m, &parsed);
	if (d->payload == NULL) {	/* chained mbufs: not produced by the ports softrnic sets up */
		RNIC_STATS(p, RESPONDER)->rx_drops[RNIC_DROP_TRUNCATED]++;
		return;
	}
	qp = rnic_qp_lookup(p->dev, d->dqpn);
	state = qp != NULL ? __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) : RNIC_QPS_RESET;
	if (!answers_in(state)) {
		RNIC_STATS(p, RESPONDER)->no_qp++;	/* no such QP, or not ready to receive */
		return;
	}
	q = rnic_qp_priv(qp);
	if (!rnic_pkey_match(d->pkey)) {
		RNIC_STATS(p, RESPONDER)->pkey_violations++;	/* IBA 9.6.1.4: not of our partition */
		return;
	}
	if (qp->qp_type != RNIC_QPT_UD && !rnic_from_peer(p->dev, q, d)) {
		RNIC_STATS(p, RESPONDER)->rx_drops[RNIC_DROP_BAD_ADDR]++;
		q->counters.bad_addr_requests++;
		return;
	}
	if (unlikely(rnic_ecn_ce(d->traffic_class)))
		rnic_np_marked(p, &p->resp_tx, qp, &q->resp.cnp_tsc, q->resp.dmac, &q->resp.dmac_known);
	if (!rnic_opcode_allowed(d->opcode, qp->qp_type)) {
		RNIC_STATS(p, RESPONDER)->bad_requests++;
		return;		/* an opcode of another transport: not this QP's packet (IBA 9.6.1.5) */
	}
	if (qp->qp_type == RNIC_QPT_UD) {
		if (d->deth.qkey != q->attr.qkey) {
			RNIC_STATS(p, RESPONDER)->qkey_violations++;
			return;
		}
		do_send(p, qp, m, d);
		return;
	}
	if (!check_psn(p, qp, d))
		return;
	v = execute(p, qp, m, d);
	if (qp->qp_type == RNIC_QPT_UC)
		goto next_psn;
	switch (v) {
	case V_DONE:
		if ((d->opcode & 0x1f) == RNIC_OP_RDMA_READ_REQUEST) {
			span = read_span(d->reth.dma_len, rnic_mtu_bytes(q->attr.path_mtu));
			q->resp.epsn = rnic_psn_add(d->psn, span);
			return;
		}
		if ((d->opcode & 0x1f) == RNIC_OP_COMPARE_SWAP || (d->opcode & 0x1f) == RNIC_OP_FETCH_ADD)
			break;		/* the atomic ACK is its answer */
		/* ACKed when asked, and at least every RNIC_ACK_EVERY requests even when not: a requester that
		 * asks only at a message's end still sees its window move. */
		if (d->ack_req || ++q->resp.unacked >= RNIC_ACK_EVERY)
			send_ack(p, qp, d->psn, RNIC_AETH_ACK);
		break;
	case V_RNR:
		send_ack(p, qp, d->psn, (uint8_t)RNIC_AETH_RNR(q->attr.min_rnr_timer));
		return;		/* not executed: the requester sends it again */
	case V_NAK_INVALID:
	case V_NAK_ACCESS:
	case V_NAK_OP:
		responder_error(p, qp, d->psn, v);
		return;
	case V_DROP:
		return;
	}
next_psn:
	q->resp.epsn = rnic_psn_add(d->psn, 1);
}

unsigned int
rnic_stage_responder(void *arg, unsigned int budget)
{
	struct rnic_pipeline *p = arg;
	struct rte_mbuf *pkts[RNIC_BURST];
	uint32_t slots[RNIC_BURST];
	unsigned int n;

	/* QPs the requester found in error: their receive queues are flushed here, where RQ WQEs complete. */
	n = rnic_edge_dequeue_burst(p->flush_ring, slots, sizeof(slots[0]), RNIC_BURST);
	for (unsigned int i = 0; i < n; i++) {
		struct rnic_qp *qp = rnic_qp_by_slot(p->dev, slots[i]);

		if (qp != NULL && __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) == RNIC_QPS_ERR)
			rnic_qp_flush_rq(qp);
	}
	rnic_tx_flush(&p->resp_tx);
	/* ARP and ND frames of the control thread (shard 0 only): one look at an empty ring per call. */
	if (p->neigh_tx != NULL && !rte_ring_empty(p->neigh_tx))
		rnic_neigh_tx(p->neigh_tx, &p->resp_tx);
	/* Each request may answer with a frame or two: take no more than the port has room for. */
	n = rnic_edge_dequeue_burst(p->request_ring, pkts, sizeof(pkts[0]),
				    RTE_MIN(RTE_MIN(budget, (unsigned int)RNIC_BURST), rnic_tx_room(&p->resp_tx) / 2));
	rnic_prefetch_qps(p->dev, pkts, n);
	rnic_stage_frames(p, RNIC_LAT_RESPONDER, pkts, n, handle_request);
	flush_acks(p);
	n += serve_reads(p, budget);
	rnic_tx_flush(&p->resp_tx);
	if (n == 0)
		rnic_tx_idle(&p->resp_tx, p->pool);
	return n;
}
