/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's per-QP pacer (rnic_pacer.h). It runs by the requester's time (rnic_req_now): the time the
 * machine took the lcore away, in which the QPs and the link modelled on the lcore stood still, earns no
 * tokens. By the TSC, a bucket larger than the 1 ms of a gap that counts (two frames: 6.8 ms at 10 Mbit/s)
 * filled in every such gap, and N QPs sent 2N frames at once when the lcore came back, past their rates.
 */
#include <rte_cycles.h>

#include "rnic_pacer.h"
#include "rnic_requester.h"

/* Tokens earned since the last count, up to the bucket's size. A debt is at most a frame, less than the
 * bucket, so twice the fill time covers any wait and keeps the product within 64 bits. The requester's time
 * goes back when a pass finds the lcore was away after the last count (in the middle of a stage): nothing
 * earned then. */
static void
refill(struct rnic_pacer *pc, uint64_t now)
{
	uint64_t dt = now > pc->refill_tsc ? RTE_MIN(now - pc->refill_tsc, 2 * pc->fill_cycles) : 0;

	pc->tokens = RTE_MIN(pc->tokens + (int64_t)(dt * pc->bpc), pc->burst);
	pc->refill_tsc = now;
}

void
rnic_pacer_update(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	struct rnic_pacer *pc = &q->cc.pacer;
	uint64_t now = rnic_req_now(p), bytes_per_s;
	uint32_t rate = q->req.rate_limit != 0 ? q->req.rate_limit : UINT32_MAX;

	if (q->cc.rp.active)
		rate = RTE_MIN(rate, q->cc.rp.rc);
	if (rate == UINT32_MAX) {
		q->req.paced = 0;	/* a wait on the wheel still running ends in a harmless visit */
		return;
	}
	if (q->req.paced) {
		refill(pc, now);	/* what the old rate earned until now */
	} else {
		pc->tokens = 0;		/* the QP may send one frame now */
		pc->refill_tsc = now;
		q->req.paced = 1;
		p->pacing = 1;
	}
	bytes_per_s = (uint64_t)rate * 125;	/* kbit/s */
	pc->rate = rate;
	pc->bpc = RTE_MAX((bytes_per_s << RNIC_PACER_SHIFT) / rte_get_tsc_hz(), (uint64_t)1);
	pc->burst = (int64_t)(RTE_MAX(bytes_per_s * RNIC_PACER_BURST_US / 1000000, (uint64_t)RNIC_PACER_MIN_BURST)
			      << RNIC_PACER_SHIFT);
	pc->fill_cycles = (uint64_t)pc->burst / pc->bpc + 1;
	pc->tokens = RTE_MIN(pc->tokens, pc->burst);
}

int
rnic_pacer_admit(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	struct rnic_pacer *pc = &q->cc.pacer;
	uint64_t now = rnic_req_now(p), wait;

	if (q->cc.rp.active) {
		rnic_dcqcn_advance(p, q, rte_rdtsc());	/* DCQCN leaves the time away out itself */
		if (!q->req.paced)
			return 1;	/* DCQCN's rate came back to the line rate */
	}
	refill(pc, now);
	if (pc->tokens >= 0)
		return 1;
	/* The wheel runs by the TSC: a wait set after the lcore came back, before a pass took the gap out of
	 * the requester's time, would end late by that gap. A wake after a gap may find the debt still owed:
	 * the QP then waits again. */
	wait = (uint64_t)-pc->tokens / pc->bpc + 1;
	rnic_timer_set(&p->pace_timers, q->slot, rte_get_tsc_cycles() + wait);
	RNIC_STATS(p, REQUESTER)->pacer_waits++;
	return 0;
}

static void
on_paced(void *arg, uint32_t slot)
{
	struct rnic_pipeline *p = arg;
	struct rnic_qp *qp = rnic_qp_by_slot(p->dev, slot);

	if (qp != NULL && rnic_shard_of(p->dev, qp->qp_num) == p)
		rnic_sched_activate(&p->sched, slot);
}

void
rnic_pacer_timers(struct rnic_pipeline *p)
{
	rnic_timer_expire(&p->pace_timers, rte_get_tsc_cycles(), on_paced, p);
}
