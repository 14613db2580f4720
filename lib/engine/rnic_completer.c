/* SPDX-License-Identifier: BSD-3-Clause
 * The completer: the seed's RequesterRecvControl (seed 003 §3.6) — ACKs and NAKs, READ response scatter,
 * atomic results, and the completions of the send queue, in order.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ring.h>

#include "rnic_cq.h"
#include "rnic_dcqcn.h"
#include "rnic_pipeline.h"
#include "rnic_requester.h"
#include "rnic_wqe.h"

/* The oldest READ or atomic sent (before a go-back-N too) and not yet answered: its data is what an ACK
 * cannot stand for. */
static struct rnic_inflight *
unanswered(struct rnic_req_ctx *r)
{
	for (uint32_t i = r->infl_head; i != r->infl_tail; i++) {
		struct rnic_inflight *e = rnic_req_infl(r, i);

		if ((e->opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(e->opcode)) && !e->answered &&
		    e->sent_once)
			return e;
	}
	return NULL;
}

/* Whether two responses in a row are missing just before READ e's response bit + 1 past received (the one at
 * received is missing; ahead has those placed past it; 32 past it or more: the run is taken as lost). */
static int
run_lost(const struct rnic_inflight *e, uint32_t bit)
{
	return bit >= 32 || (bit >= 1 && !(e->ahead & (1u << (bit - 1))) &&
			     (bit == 1 || !(e->ahead & (1u << (bit - 2)))));
}

/*
 * A later request was answered while READ or atomic e waits: its answer was lost, asked for again. A READ
 * that had some of its responses lost its last two or more in a row (the READ window's overflow: one that
 * had none may have lost its request alone).
 */
static void
answered_past(struct rnic_pipeline *p, struct rnic_qp *qp, struct rnic_inflight *e)
{
	uint32_t pmtu = rnic_mtu_bytes(rnic_qp_priv(qp)->attr.path_mtu);

	if (e->opcode == RNIC_WQE_OP_RDMA_READ && !e->asked && (e->received != 0 || e->ahead != 0) &&
	    run_lost(e, (e->length - e->received + pmtu - 1) / pmtu - 1))
		rnic_requester_read_overflow(&rnic_qp_priv(qp)->req, e);
	rnic_requester_reask(p, qp, e);
}

/*
 * Progress (rnic_requester_progress: the retry counts refilled, the loss timer restarted, the round trip
 * sampled) made once for a run of a QP's READ responses in a burst, at its end, where a coalesced ACK
 * makes it once for the requests it acknowledges: una moves at once, progress_done catches up with it before
 * anything else of the QP is handled (another frame, a NAK, a failure) and at the end of the burst.
 */
static void
progress_done(struct rnic_pipeline *p)
{
	struct rnic_qp *qp = p->progress_qp;

	if (qp != NULL) {
		p->progress_qp = NULL;
		rnic_requester_progress(p, qp);
	}
}

/*
 * Everything up to and including psn is acknowledged, but never past a READ or atomic still waiting for its
 * data: its responses were lost if a later ACK or response arrives (IBA 9.7.5.1.5), and it is asked again
 * for them alone (the requests after it went through). The newest PSN acknowledged is remembered, and una
 * moves up to it once that READ or atomic has its answer.
 */
static void
ack_upto_later(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn, int later)
{
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;
	struct rnic_inflight *e = unanswered(r);
	uint32_t next = rnic_psn_add(psn, 1);

	if (rnic_psn_diff(psn, r->acked) > 0 && rnic_psn_diff(psn, r->sent_psn) <= 0)
		r->acked = psn;
	if (e != NULL && rnic_psn_diff(next, e->first_psn) > 0) {
		if (rnic_psn_diff(psn, e->last_psn) >= 0 && e->sent)
			answered_past(p, qp, e);
		next = e->first_psn;
	}

	/* Any PSN sent may be acknowledged, also one past where a go-back-N resends from. */
	if (rnic_psn_diff(next, r->una) > 0 && rnic_psn_diff(next, rnic_psn_add(r->sent_psn, 1)) <= 0) {
		r->una = next;
		if (rnic_psn_diff(next, r->npsn) > 0)
			rnic_requester_skip_acked(p, qp);
		if (later)
			p->progress_qp = qp;	/* handle_response made it this QP's or none */
		else
			rnic_requester_progress(p, qp);
	}
}

static void
ack_upto(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn)
{
	ack_upto_later(p, qp, psn, 0);
}

/* READ or atomic e has its answer: una moves past it, and up to the newest PSN acknowledged while it
 * waited. */
static void
got_answer(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_inflight *e, int later)
{
	const struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;

	ack_upto_later(p, qp, rnic_psn_diff(r->acked, e->last_psn) > 0 ? r->acked : e->last_psn, later);
}

/* RNR NAK timer field -> microseconds (IBA table 45). */
static uint32_t
rnr_delay_us(uint8_t timer)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
		5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680,
		491520,
	};

	return us[RNIC_AETH_VALUE(timer)];
}

/* The in-flight WQE whose PSN range holds psn, or NULL. */
static struct rnic_inflight *
find_inflight(struct rnic_req_ctx *r, uint32_t psn)
{
	for (uint32_t i = r->infl_head; i != r->infl_tail; i++) {
		struct rnic_inflight *e = rnic_req_infl(r, i);

		if (e->sent && rnic_psn_diff(psn, e->first_psn) >= 0 && rnic_psn_diff(psn, e->last_psn) <= 0)
			return e;
	}
	return NULL;
}

/* The in-flight WQE a NAK names: any PSN of it that went out (before a go-back-N too), also of one only partly
 * sent (the NAK of its first packet comes while the rest are being sent); NULL for a PSN never sent. */
static struct rnic_inflight *
find_named(struct rnic_req_ctx *r, uint32_t psn, uint32_t pmtu)
{
	if (rnic_psn_diff(psn, r->una) < 0 || rnic_psn_diff(psn, r->sent_psn) > 0)
		return NULL;
	for (uint32_t i = r->infl_head; i != r->infl_tail; i++) {
		struct rnic_inflight *e = rnic_req_infl(r, i);

		if (e->status == 0 && rnic_psn_diff(psn, e->first_psn) >= 0 &&
		    rnic_psn_diff(psn, rnic_psn_add(e->first_psn, rnic_wqe_span(e, pmtu) - 1)) <= 0)
			return e;
	}
	return NULL;
}

/* Complete the WQE at psn in error (an error NAK names it, or a response for it cannot be taken), the ones
 * before it successfully, and fail the QP. */
static void
fail_at(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn, enum rnic_wc_status st)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	struct rnic_inflight *e = find_named(r, psn, rnic_mtu_bytes(q->attr.path_mtu));

	progress_done(p);	/* the progress before the failure, made before it */
	if (e == NULL) {
		RNIC_STATS(p, COMPLETER)->unexpected_responses++;
		return;
	}
	/* Every packet before the one named is acknowledged. */
	ack_upto(p, qp, rnic_psn_prev(psn));
	rnic_requester_retire(p, qp);
	if (r->infl_head != r->infl_tail && rnic_req_infl(r, r->infl_head) == e) {
		rnic_complete(qp, 1, e->index, e->opcode, st, 0);
		q->req.sq_done = e->index + 1;
		r->infl_head++;
	}
	rnic_requester_fail(p, qp);
}

static void
on_ack(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *d)
{
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;
	uint8_t s = d->aeth.syndrome;

	if (RNIC_AETH_IS_ACK(s)) {
		ack_upto(p, qp, d->psn);
		return;
	}
	if (RNIC_AETH_IS_RNR(s)) {
		struct rnic_qp_priv *q = rnic_qp_priv(qp);

		RNIC_STATS(p, COMPLETER)->rnr_naks_received++;
		q->counters.rnr_naks_received++;
		/* rnr_retry 7 means no limit (IBA 9.7.5.2.8). */
		if (q->attr.rnr_retry != 7 && r->rnr_left == 0) {
			RNIC_STATS(p, COMPLETER)->rnr_retries_exceeded++;
			fail_at(p, qp, d->psn, RNIC_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (q->attr.rnr_retry != 7)
			r->rnr_left--;
		ack_upto(p, qp, rnic_psn_prev(d->psn));
		/* No resend before the RNR timer runs out (seed test 23): the wheel wakes the QP then. */
		if (rnic_requester_rewind(p, qp, d->psn) == 0) {
			r->rnr_until = rnic_req_now(p) + rte_get_tsc_hz() / 1000000 * rnr_delay_us(s);
			rnic_requester_watch(p, q);
		}
		return;
	}
	switch (s) {
	case RNIC_AETH_NAK_INVALID_REQUEST:
		RNIC_STATS(p, COMPLETER)->inv_req_naks_received++;
		rnic_qp_priv(qp)->counters.inv_req_naks_received++;
		fail_at(p, qp, d->psn, RNIC_WC_REM_INV_REQ_ERR);
		break;
	case RNIC_AETH_NAK_REMOTE_ACCESS:
		RNIC_STATS(p, COMPLETER)->access_naks_received++;
		rnic_qp_priv(qp)->counters.access_naks_received++;
		fail_at(p, qp, d->psn, RNIC_WC_REM_ACCESS_ERR);
		break;
	case RNIC_AETH_NAK_PSN_SEQ:
		/* Everything before the PSN arrived; go back to it. */
		RNIC_STATS(p, COMPLETER)->seq_naks_received++;
		rnic_qp_priv(qp)->counters.seq_naks_received++;
		ack_upto(p, qp, rnic_psn_prev(d->psn));
		rnic_requester_rewind(p, qp, d->psn);
		break;
	default:	/* remote operational error, or a reserved NAK code */
		RNIC_STATS(p, COMPLETER)->remote_op_naks_received++;
		rnic_qp_priv(qp)->counters.remote_op_naks_received++;
		fail_at(p, qp, d->psn, RNIC_WC_REM_OP_ERR);
	}
}

/* Place a READ response's payload at offset off of the READ WQE's scatter list. 0, or the QP failed. */
static int
place_read_response(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_inflight *e,
		    const struct rnic_pkt_desc *d, uint32_t off)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	uint32_t pmtu = rnic_mtu_bytes(q->attr.path_mtu), len = d->payload_len;
	struct rnic_send_wqe w;

	/* Each response carries exactly its part, a PMTU or the rest at the end (the responder's mistake else);
	 * its opcode may say Last or Only for a part asked again alone. */
	if (len != RTE_MIN(pmtu, e->length - off)) {
		fail_at(p, qp, d->psn, RNIC_WC_BAD_RESP_ERR);
		return -1;
	}
	/* The destination as translated when the READ started, while that holds. */
	if (e->dst != NULL && rnic_mr_epoch_holds(p->dev->mr_table, e->dst_epoch)) {
		memcpy(e->dst + off, d->payload, len);
		return 0;
	}
	rnic_send_wqe_parse(rnic_req_wqe(q, e), 0, 0, &w);	/* the engine's copy: its SGEs as they started */
	if (rnic_sge_copy(p, &p->req_cache, w.sge, w.nb_sge, rnic_pd_priv(qp->pd)->pdn, RNIC_MR_NEED_LOCAL_WRITE,
			  off, (uint8_t *)(uintptr_t)d->payload, len, 1) != RNIC_MR_OK) {
		fail_at(p, qp, d->psn, RNIC_WC_LOC_PROT_ERR);
		return -1;
	}
	return 0;
}

/*
 * A READ response past a missing one (lost, or late): placed where it belongs if it is within 32 responses
 * of the missing one (e->ahead remembers it), and what is missing is asked for again at once, alone (IBA
 * 9.7.5.2.6: a READ request for that part, at the PSN of its first response; seed test 28). Further ahead,
 * it is dropped and the rest of the READ asked for. A First or Only is dropped and asks for nothing: an
 * answer starts where a request of the READ asked from, and every one asks from where its data stopped
 * (the READ's start, or received then), never past received; such a response is of another READ, one of a
 * connection the QP had before its reset whose PSN falls here (doc/engine.md).
 */
static void
read_response_ahead(struct rnic_pipeline *p, struct rnic_qp *qp, struct rnic_inflight *e,
		    const struct rnic_pkt_desc *d, uint32_t off)
{
	uint32_t bit = (off - e->received) / rnic_mtu_bytes(rnic_qp_priv(qp)->attr.path_mtu) - 1;
	uint8_t op = d->opcode & 0x1f;

	RNIC_STATS(p, COMPLETER)->unexpected_responses++;
	if (op == RNIC_OP_RDMA_READ_RESPONSE_FIRST || op == RNIC_OP_RDMA_READ_RESPONSE_ONLY)
		return;
	if (!e->asked && run_lost(e, bit))
		rnic_requester_read_overflow(&rnic_qp_priv(qp)->req, e);
	if (bit < 32 && !(e->ahead & (1u << bit))) {
		if (place_read_response(p, qp, e, d, off) != 0)
			return;
		e->ahead |= 1u << bit;
		rnic_requester_progress(p, qp);
	}
	if (e->sent) {
		RNIC_STATS(p, COMPLETER)->read_gaps += !e->asked;	/* a new gap: its implied NAK */
		rnic_requester_reask(p, qp, e);
	}
}

/* Place a READ response's payload into the READ WQE's scatter list; the READ is answered once every
 * response is placed. */
static void
on_read_response(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	struct rnic_inflight *e = find_inflight(r, d->psn);
	uint32_t pmtu = rnic_mtu_bytes(q->attr.path_mtu), off;

	if (e != NULL && e->opcode == RNIC_WQE_OP_RDMA_READ && e->answered) {
		ack_upto(p, qp, d->psn);	/* a READ asked again after its data came: it only acknowledges */
		return;
	}
	if (e == NULL || e->opcode != RNIC_WQE_OP_RDMA_READ) {
		RNIC_STATS(p, COMPLETER)->unexpected_responses++;
		return;
	}
	off = (uint32_t)rnic_psn_diff(d->psn, e->first_psn) * pmtu;
	if (off != e->received) {
		if (off > e->received)
			read_response_ahead(p, qp, e, d, off);
		else
			RNIC_STATS(p, COMPLETER)->unexpected_responses++;	/* one from an earlier attempt */
		return;
	}
	if (place_read_response(p, qp, e, d, off) != 0)
		return;
	/* received moves past this response and those placed ahead of it. */
	e->received += d->payload_len;
	while (e->ahead & 1) {
		e->ahead >>= 1;
		e->received += RTE_MIN(pmtu, e->length - e->received);
	}
	e->ahead >>= 1;
	e->asked &= e->received < e->asked_end;
	/* The data placed is progress. The last response of the oldest READ unanswered makes it below: una
	 * moves past the READ in got_answer (it does not move before: nothing unanswered precedes the READ). */
	if (e->received != e->length || unanswered(r) != e)
		p->progress_qp = qp;	/* made at the end of the run (progress_done) */
	/* A READ response acknowledges every request before the READ (implicit ACK): news only while una is
	 * short of the READ (acked short of it too matters to no got_answer: each takes the READ's last PSN
	 * at least). */
	if (rnic_psn_diff(e->first_psn, r->una) > 0)
		ack_upto(p, qp, rnic_psn_prev(e->first_psn));
	if (e->received == e->length) {
		e->answered = 1;
		rnic_requester_read_answered(r, e, pmtu);
		got_answer(p, qp, e, 1);
	} else if (e->ahead != 0 && e->sent) {
		rnic_requester_reask(p, qp, e);		/* the next part missing */
	}
}

static void
on_atomic_ack(struct rnic_pipeline *p, struct rnic_qp *qp, const struct rnic_pkt_desc *d)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;
	struct rnic_inflight *e = find_inflight(r, d->psn);
	struct rnic_send_wqe w;
	uint8_t orig[8];

	if (e != NULL && rnic_wqe_op_is_atomic(e->opcode) && e->answered) {
		ack_upto(p, qp, d->psn);	/* the answer to an atomic sent again: it only acknowledges */
		return;
	}
	if (e == NULL || !rnic_wqe_op_is_atomic(e->opcode)) {
		RNIC_STATS(p, COMPLETER)->unexpected_responses++;
		return;
	}
	rnic_send_wqe_parse(rnic_req_wqe(q, e), 0, 0, &w);
	/* The original value, in host order as the application reads it (as Linux rxe returns it). */
	memcpy(orig, &d->atomic_ack_orig, sizeof(orig));
	if (rnic_sge_copy(p, &p->req_cache, w.sge, w.nb_sge, rnic_pd_priv(qp->pd)->pdn, RNIC_MR_NEED_LOCAL_WRITE,
			  0, orig, sizeof(orig), 1) != RNIC_MR_OK) {
		fail_at(p, qp, d->psn, RNIC_WC_LOC_PROT_ERR);
		return;
	}
	e->answered = 1;
	got_answer(p, qp, e, 0);
}

/*
 * After a response: the requester visits the QP again if the response may let it go on (it waited for room
 * in the window, the READ depth, a fence, the in-flight ring), rewound it (a NAK), or failed it. A QP that
 * went idle with every posted WQE sent is left to its next doorbell: with thousands of QPs, a visit that
 * finds nothing costs its context and host-interface lines for nothing.
 */
static void
wake_requester(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_req_ctx *r = &q->req;

	if (r->blocked || r->cur != r->infl_tail ||
	    __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) != RNIC_QPS_RTS) {
		r->blocked = 0;
		rnic_sched_activate(&p->sched, q->slot);
	}
}

static void
handle_response(struct rnic_pipeline *p, struct rte_mbuf *m)
{
	struct rnic_pkt_desc parsed;
	const struct rnic_pkt_desc *d;
	struct rnic_qp *qp;
	uint8_t op;

	d = rnic_frame_desc(m, &parsed);
	if (unlikely(d->opcode == RNIC_OP_CNP)) {
		rnic_dcqcn_cnp(p, d);
		return;
	}
	qp = rnic_qp_lookup(p->dev, d->dqpn);
	if (qp == NULL || qp->qp_type != RNIC_QPT_RC ||
	    __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) != RNIC_QPS_RTS || d->payload == NULL) {
		RNIC_STATS(p, COMPLETER)->no_qp++;
		return;
	}
	if (!rnic_from_peer(p->dev, rnic_qp_priv(qp), d)) {
		RNIC_STATS(p, COMPLETER)->rx_drops[RNIC_DROP_BAD_ADDR]++;
		rnic_qp_priv(qp)->counters.bad_addr_responses++;
		return;
	}
	if (unlikely(rnic_ecn_ce(d->traffic_class))) {
		struct rnic_qp_priv *q = rnic_qp_priv(qp);

		rnic_np_marked(p, &p->req_tx, qp, &q->cc.cnp_tsc, q->req.dmac, &q->req.dmac_known);
	}
	op = d->opcode & 0x1f;
	/* A READ response of the QP whose progress is put off puts it off further; anything else sees it
	 * made (an RNR NAK spends the retry count progress refills). */
	if (p->progress_qp != qp || op < RNIC_OP_RDMA_READ_RESPONSE_FIRST || op > RNIC_OP_RDMA_READ_RESPONSE_ONLY)
		progress_done(p);
	if (op == RNIC_OP_ACKNOWLEDGE)
		on_ack(p, qp, d);
	else if (op == RNIC_OP_ATOMIC_ACKNOWLEDGE)
		on_atomic_ack(p, qp, d);
	else
		on_read_response(p, qp, d);
	rnic_requester_retire(p, qp);
	wake_requester(p, qp);
	rnic_tenant_sync(p, qp);
}

unsigned int
rnic_stage_completer(void *arg, unsigned int budget)
{
	struct rnic_pipeline *p = arg;
	struct rte_mbuf *pkts[RNIC_BURST];
	unsigned int n;

	/* Polled before the requester: a CNP read first after the lcore was away must find that time out of the
	 * requester's (DCQCN's timers, the pacer's tokens). */
	rnic_requester_clock(p, rte_get_tsc_cycles());
	n = rnic_edge_dequeue_burst(p->response_ring, pkts, sizeof(pkts[0]), RTE_MIN(budget, (unsigned int)RNIC_BURST));
	rnic_prefetch_qps(p->dev, pkts, n);
	rnic_stage_frames(p, RNIC_LAT_COMPLETER, pkts, n, handle_response);
	progress_done(p);
	rnic_cq_flush_deferred();	/* the burst's completions, visible together */
	return n;
}
