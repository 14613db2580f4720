/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's per-QP pacer and tenants' caps (rnic_pacer.h). The pacer runs by the requester's time
 * (rnic_req_now): the time the machine took the lcore away, in which the QPs and the link modelled on the
 * lcore stood still, earns no tokens. By the TSC, a bucket larger than the 1 ms of a gap that counts (two
 * frames: 6.8 ms at 10 Mbit/s) filled in every such gap, and N QPs sent 2N frames at once when the lcore
 * came back, past their rates. A tenant's cap is a rate by the clock (the TSC).
 */
#include <rte_cycles.h>

#include "rnic_pacer.h"
#include "rnic_requester.h"

/* Tokens earned since the last count, up to the bucket's size. A debt is at most a frame (a message), less
 * than the bucket, so twice the fill time covers any wait and keeps the product within 64 bits. The
 * requester's time goes back when a pass finds the lcore was away after the last count (in the middle of a
 * stage): nothing earned then. */
static void
refill(struct rnic_pacer *pc, uint64_t now)
{
	uint64_t dt = now > pc->refill_tsc ? RTE_MIN(now - pc->refill_tsc, 2 * pc->fill_cycles) : 0;

	pc->tokens = RTE_MIN(pc->tokens + (int64_t)(dt * pc->bpc), pc->burst);
	pc->refill_tsc = now;
}

void
rnic_bucket_rate(struct rnic_pacer *pc, uint64_t per_s, uint64_t min_burst, int fresh, uint64_t now)
{
	if (fresh) {
		pc->tokens = 0;		/* one frame (message) may go now */
		pc->refill_tsc = now;
	} else {
		refill(pc, now);	/* what the old rate earned until now */
	}
	pc->bpc = RTE_MAX((per_s << RNIC_PACER_SHIFT) / rte_get_tsc_hz(), (uint64_t)1);
	pc->burst = (int64_t)(RTE_MAX(per_s * RNIC_PACER_BURST_US / 1000000, min_burst) << RNIC_PACER_SHIFT);
	pc->fill_cycles = (uint64_t)pc->burst / pc->bpc + 1;
	pc->tokens = RTE_MIN(pc->tokens, pc->burst);
}

uint64_t
rnic_bucket_wait(struct rnic_pacer *pc, uint64_t now)
{
	refill(pc, now);
	return pc->tokens >= 0 ? 0 : (uint64_t)-pc->tokens / pc->bpc + 1;
}

void
rnic_pacer_update(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	uint32_t rate = q->req.rate_limit != 0 ? q->req.rate_limit : UINT32_MAX;

	if (q->cc.rp.active)
		rate = RTE_MIN(rate, q->cc.rp.rc);
	if (rate == UINT32_MAX) {
		q->req.paced = 0;	/* a wait on the wheel still running ends in a harmless visit */
		return;
	}
	rnic_bucket_rate(&q->cc.pacer, (uint64_t)rate * 125, RNIC_PACER_MIN_BURST, !q->req.paced,	/* kbit/s */
			 rnic_req_now(p));
	q->cc.pacer.rate = rate;
	q->req.paced = 1;
	p->pacing = 1;
}

int
rnic_pacer_admit(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	uint64_t wait;

	if (q->cc.rp.active) {
		rnic_dcqcn_advance(p, q, rte_rdtsc());	/* DCQCN leaves the time away out itself */
		if (!q->req.paced)
			return 1;	/* DCQCN's rate came back to the line rate */
	}
	wait = rnic_bucket_wait(&q->cc.pacer, rnic_req_now(p));
	if (wait == 0)
		return 1;
	/* The wheel runs by the TSC: a wait set after the lcore came back, before a pass took the gap out of
	 * the requester's time, would end late by that gap. A wake after a gap may find the debt still owed:
	 * the QP then waits again. */
	rnic_timer_set(&p->pace_timers, q->slot, rte_get_tsc_cycles() + wait);
	RNIC_STATS(p, REQUESTER)->pacer_waits++;
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Tenants' caps                                                                                            */

/* The wheel's slot of a tenant's wake: after the QP slots. */
static uint32_t
cap_slot(const struct rnic_pipeline *p, const struct rnic_req_tenant *t)
{
	return rnic_qp_table_slots(p->dev) + (uint32_t)(t - p->req_tenant);
}

/* How long the tenant's QPs must wait for its tokens (0: they may send). */
static uint64_t
cap_wait(struct rnic_req_tenant *t, uint64_t now)
{
	uint64_t wait = 0;

	if (t->cap_bytes.bpc != 0)
		wait = rnic_bucket_wait(&t->cap_bytes, now);
	if (t->cap_msgs.bpc != 0)
		wait = RTE_MAX(wait, rnic_bucket_wait(&t->cap_msgs, now));
	return wait;
}

/* The QP at slot waits for its tenant's tokens: at the end of the tenant's queue, unless it is in one. */
static void
park(struct rnic_pipeline *p, struct rnic_req_tenant *t, uint32_t slot)
{
	if (p->cap_link[slot] != RNIC_CAP_UNPARKED)
		return;		/* still in a queue: it is woken from there */
	p->cap_link[slot] = 0;
	if (t->parked_tail != 0)
		p->cap_link[t->parked_tail - 1] = slot + 1;
	else
		t->parked_head = slot + 1;
	t->parked_tail = slot + 1;
}

/* Hand the tenant's first waiting QP back to the scheduler; QPs destroyed (or now another tenant's) while
 * they waited are dropped on the way. Its slot, or RNIC_CAP_UNPARKED if none went back. */
static uint32_t
wake_next(struct rnic_pipeline *p, struct rnic_req_tenant *t)
{
	while (t->parked_head != 0) {
		uint32_t slot = t->parked_head - 1;
		struct rnic_qp *qp = rnic_qp_by_slot(p->dev, slot);

		t->parked_head = p->cap_link[slot];
		if (t->parked_head == 0)
			t->parked_tail = 0;
		p->cap_link[slot] = RNIC_CAP_UNPARKED;
		if (qp == NULL || rnic_shard_of(p->dev, qp->qp_num) != p)
			continue;
		rnic_sched_activate(&p->sched, slot);
		if (&p->req_tenant[rnic_qp_priv(qp)->tenant] == t)
			return slot;
	}
	return RNIC_CAP_UNPARKED;
}

/* The tenant's wake on the pacer's wheel at due, unless it is filed for earlier. */
static void
cap_file(struct rnic_pipeline *p, struct rnic_req_tenant *t, uint64_t due)
{
	if (t->cap_due != 0 && t->cap_due <= due)
		return;
	t->cap_due = due;
	rnic_timer_set(&p->pace_timers, cap_slot(p, t), due);
	p->pacing = 1;
}

/* The tenant's QPs wait until its debt is paid: its wake then. */
static void
cap_hold(struct rnic_pipeline *p, struct rnic_req_tenant *t, uint64_t now, uint64_t wait)
{
	if (t->cap_since == 0)
		t->cap_since = now;
	cap_file(p, t, now + wait);
}

void
rnic_cap_update(struct rnic_pipeline *p, struct rnic_req_tenant *t, uint32_t gen)
{
	uint64_t bps = __atomic_load_n(&t->cap_bps, __ATOMIC_RELAXED);
	uint64_t mps = __atomic_load_n(&t->cap_mps, __ATOMIC_RELAXED);
	uint16_t shards = p->dev->nb_shards;
	uint64_t now = rte_rdtsc();

	t->cap_gen_seen = gen;
	/* Each shard holds its part of the device's cap: QPN n is shard n % shards, so a tenant's QPs
	 * spread evenly over them. */
	if (bps != 0)
		rnic_bucket_rate(&t->cap_bytes, bps / 8 / shards, RNIC_PACER_MIN_BURST, t->cap_bytes.bpc == 0, now);
	else
		t->cap_bytes.bpc = 0;
	if (mps != 0)
		rnic_bucket_rate(&t->cap_msgs, mps * RNIC_CAP_MSG_UNITS / shards, 2 * RNIC_CAP_MSG_UNITS,
				 t->cap_msgs.bpc == 0, now);
	else
		t->cap_msgs.bpc = 0;
	t->capped = bps != 0 || mps != 0;
	while (!t->capped && wake_next(p, t) != RNIC_CAP_UNPARKED)
		;	/* no cap now: every QP that waited for it goes back */
}

int
rnic_cap_admit(struct rnic_pipeline *p, struct rnic_req_tenant *t, struct rnic_qp_priv *q)
{
	uint64_t now = rte_rdtsc(), wait = cap_wait(t, now);

	if (wait == 0)
		return 1;
	park(p, t, q->slot);
	t->cap_waits++;
	cap_hold(p, t, now, wait);
	return 0;
}

void
rnic_cap_visit_end(struct rnic_pipeline *p, struct rnic_req_tenant *t, uint32_t slot, int *idle)
{
	uint64_t now, wait;

	if (t->parked_head == 0)
		return;
	now = rte_rdtsc();
	wait = cap_wait(t, now);
	if (wait != 0)
		cap_hold(p, t, now, wait);
	else if (wake_next(p, t) == slot)
		*idle = 0;	/* the QP of this visit, which waited for tokens now paid: the scheduler, which
				 * would deactivate it after the visit, keeps it */
}

/*
 * The tenant's wake: its debt is paid, and its first waiting QP goes back to the scheduler (rnic_cap_visit_end
 * wakes the next while tokens last). While others wait, the wake is filed again RNIC_CAP_RECHECK_US later: a
 * QP handed back and destroyed (or its slot another tenant's) before its visit ends no visit of this
 * tenant's, which would hand back the next; the visits that do end file it earlier when tokens run out.
 */
static void
cap_wake(struct rnic_pipeline *p, struct rnic_req_tenant *t)
{
	uint64_t now = rte_rdtsc(), wait;

	t->cap_due = 0;
	if (t->cap_since != 0) {
		t->cap_held_cycles += now - t->cap_since;
		t->cap_since = 0;
	}
	if (t->parked_head == 0)
		return;
	wait = cap_wait(t, now);
	if (wait != 0) {
		cap_hold(p, t, now, wait);	/* a QP back meanwhile took the tokens */
		return;
	}
	wake_next(p, t);
	if (t->parked_head != 0)
		cap_file(p, t, now + p->cap_recheck_cycles);
}

static void
on_paced(void *arg, uint32_t slot)
{
	struct rnic_pipeline *p = arg;
	uint32_t qp_slots = rnic_qp_table_slots(p->dev);
	struct rnic_qp *qp;

	if (slot >= qp_slots) {
		cap_wake(p, &p->req_tenant[slot - qp_slots]);
		return;
	}
	qp = rnic_qp_by_slot(p->dev, slot);
	if (qp != NULL && rnic_shard_of(p->dev, qp->qp_num) == p)
		rnic_sched_activate(&p->sched, slot);
}

void
rnic_pacer_timers(struct rnic_pipeline *p)
{
	rnic_timer_expire(&p->pace_timers, rte_get_tsc_cycles(), on_paced, p);
}
