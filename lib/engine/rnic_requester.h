/* SPDX-License-Identifier: BSD-3-Clause
 * The requester of a shard: its transmit side (the requester stage: doorbells' QPs scheduled, WQEs sent,
 * the retransmit buffer, the loss and RNR timers) and its receive side (the completer stage: ACKs, NAKs, READ
 * responses and atomic answers, completions). The two share the QPs' requester contexts and run on one lcore;
 * what the receive side asks of the transmit side is the interface below, and nothing else crosses.
 */
#ifndef RNIC_REQUESTER_H
#define RNIC_REQUESTER_H

#include "rnic_pipeline.h"

/*
 * A pass of the requester at now: a gap since the last one longer than RNIC_AWAY_US is time the machine
 * took the lcore away, in which the engine's world (the QPs, their pacers, the peer and the modelled link
 * on the same lcore) stood still, and a remote peer's answers waited in the port's queues unread. The
 * requester's timers (loss timer, early probe, RNR wait: rnic_req_now), the pacers' tokens and DCQCN's
 * timers leave it out. The completer, polled before the requester, takes the pass too.
 */
static inline void
rnic_requester_clock(struct rnic_pipeline *p, uint64_t now)
{
	if (p->last_pass_tsc != 0 && now - p->last_pass_tsc > p->cc.away_gap)
		p->away_cycles += now - p->last_pass_tsc - p->cc.away_gap;
	p->last_pass_tsc = now;
}

/* The requester's time for its timers: TSC cycles less the time the lcore was away (rnic_requester_clock). A
 * timer that came due while the lcore was away waits until the answers that came meanwhile are read: the
 * first pass back ran the timers before the completer, and timed out QPs whose ACKs sat in the rings
 * (transport's test_lcore_away). */
static inline uint64_t
rnic_req_now(const struct rnic_pipeline *p)
{
	return rte_get_tsc_cycles() - p->away_cycles;
}

/* The transmit side: up to budget QP visits; returns the work done. */
unsigned int rnic_stage_requester(void *pipeline, unsigned int budget);
/* The receive side: up to budget responses; returns how many. */
unsigned int rnic_stage_completer(void *pipeline, unsigned int budget);

/*
 * Keep the QP's tenant's count of PSNs in flight (struct rnic_req_tenant) up to date with the QP: on the
 * requester's lcore, after anything that sends, rewinds, acknowledges or fails. An RC QP in RTS counts what
 * it sent and did not have acknowledged, one in error nothing; in another state (RESET, SQD, ...) the count
 * waits, and the control path gives a reset or destroyed QP's PSNs back (rnic_pipeline_release_qp).
 */
static inline void
rnic_tenant_sync(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	enum rnic_qp_state state = __atomic_load_n(&qp->state, __ATOMIC_RELAXED);
	uint32_t now;

	if (qp->qp_type != RNIC_QPT_RC || (state != RNIC_QPS_RTS && state != RNIC_QPS_ERR))
		return;
	now = state == RNIC_QPS_RTS ? (uint32_t)RTE_MAX(rnic_psn_diff(q->req.npsn, q->req.una), 0) : 0;
	p->req_tenant[q->tenant].inflight += now - q->req.tenant_psns;
	q->req.tenant_psns = now;
}

/* Requester lcore: the QP is in error; flush its SQ here and have the responder flush its RQ. */
void rnic_requester_fail(struct rnic_pipeline *p, struct rnic_qp *qp);

/* The requester's una moved forward: refill the retry counts, restart or stop the loss timer. */
void rnic_requester_progress(struct rnic_pipeline *p, struct rnic_qp *qp);

/* Go back N: resend from this PSN (and every WQE after it), counted as a retransmission. 0, or -1 if the PSN
 * is not outstanding. */
int rnic_requester_rewind(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn);

/* Ask again at once for in-flight READ e's responses from its first missing one, or for atomic e's answer,
 * without going back over the WQEs after it (completer, on the requester's lcore): once per gap. */
void rnic_requester_reask(struct rnic_pipeline *p, struct rnic_qp *qp, struct rnic_inflight *e);

/*
 * READ e lost two responses in a row or more (completer): its responder sends faster than the path takes them
 * (a rate limit's queue, a switch buffer, which drop runs of frames; a path that loses frames one at a time
 * rarely loses two in a row). The READ window halves, down from what was outstanding (a window never filled
 * says nothing), once per round trip: the READs that went out before the last cut lost theirs to the same
 * overflow. Without it, 16 outstanding 64 KB READs on each QP (max_rd_atomic) overran a 64-frame queue
 * every round, the responses asked again overran it as well, and QPs ended with the retry budget spent
 * (IBA leaves the rate of READ responses to the requester: it asks for them).
 */
void rnic_requester_read_overflow(struct rnic_req_ctx *r, const struct rnic_inflight *e);

/* READ e has all its responses: its PSNs leave the READ window, which grows (completer). */
void rnic_requester_read_answered(struct rnic_req_ctx *r, const struct rnic_inflight *e, uint32_t pmtu);

/* An ACK covered PSNs past where go-back-N resends from (they went out before it): the responder has
 * them, so the requester resumes after them. */
void rnic_requester_skip_acked(struct rnic_pipeline *p, struct rnic_qp *qp);

/* Free a QP's list of kept frames from element head on (requester lcore). */
void rnic_rtx_free_list(struct rnic_pipeline *p, uint32_t head);

/* Expired loss and RNR timers of the pipeline's QPs (requester lcore). */
void rnic_requester_timers(struct rnic_pipeline *p);

/* The QP's loss deadline or RNR wait was set or cleared: give the timer wheel the earliest of them. */
void rnic_requester_watch(struct rnic_pipeline *p, struct rnic_qp_priv *q);

/* PSNs of an in-flight WQE: its packets (SEND/WRITE, READ responses) or 1 (atomic, or no payload). */
uint32_t rnic_wqe_span(const struct rnic_inflight *e, uint32_t pmtu);

/* Complete, in order, the in-flight send WQEs that are done (requester lcore): their successful CQEs are
 * deferred (rnic_cq_defer_slot), the calling stage flushes them at the end of its burst. */
void rnic_requester_retire(struct rnic_pipeline *p, struct rnic_qp *qp);

#endif /* RNIC_REQUESTER_H */
