/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's per-QP pacer: a token bucket in front of every packet a QP sends while a rate applies to
 * it (its rate_limit attribute, or DCQCN's current rate: the lower of them). A QP that owes tokens waits on
 * the pacer's timer wheel, which hands it back to the scheduler when they are paid; the requester checks
 * one flag per packet of a QP without a rate, and looks at the wheel only once a QP of its shard was paced.
 * Frames are charged as they leave, headers included (the wire's rate, not the payload's).
 *
 * The same buckets hold an rnicd tenant's cap (doc/congestion.md, "Tenants' caps"): bytes and messages a
 * second over all its QPs of a shard. A QP of a capped tenant asks its tenant's buckets before each packet
 * too; one that finds them in debt waits in its tenant's queue of QPs, and the tenant's wake on the pacer's
 * wheel hands them back one at a time, each while tokens last, so that thousands of waiting QPs cost one
 * visit each per turn, not one each per tick. A tenant without a cap costs a flag test per visit.
 */
#ifndef RNIC_PACER_H
#define RNIC_PACER_H

#include "rnic_dcqcn.h"
#include "rnic_pipeline.h"

#define RNIC_PACER_SHIFT 24		/* bytes per cycle in fixed point: 24 bits of fraction */
#define RNIC_PACER_BURST_US 64		/* the bucket holds this long at the rate: the wheel's tick (16 us) and
					 * a late wake lose nothing of the rate */
#define RNIC_PACER_MIN_BURST 8448	/* ... and at least two 4 KB frames with their headers */

#define RNIC_CAP_MSG_UNITS 4096	/* a message in a tenant's message bucket: fractions of a message a cycle
					 * stay exact down to 1 message/s */

/* The bucket at per_s units (bytes, messages x RNIC_CAP_MSG_UNITS) a second, holding RNIC_PACER_BURST_US of
 * it and at least min_burst; fresh: it starts empty (one frame may go), else it keeps what it holds, earned
 * until now (in the clock its counts use: the requester's time for a QP, the TSC for a tenant). per_s below
 * 2^40. */
void rnic_bucket_rate(struct rnic_pacer *pc, uint64_t per_s, uint64_t min_burst, int fresh, uint64_t now);

/* 0 if the bucket is not in debt at now, else the cycles until it is paid. */
uint64_t rnic_bucket_wait(struct rnic_pacer *pc, uint64_t now);

/* What left through the bucket: units of it (bytes, or RNIC_CAP_MSG_UNITS a message) taken from its tokens,
 * count (bytes or messages) added to what it released. */
static inline void
rnic_bucket_charge(struct rnic_pacer *pc, uint32_t units, uint32_t count)
{
	pc->tokens -= (int64_t)units << RNIC_PACER_SHIFT;
	pc->released += count;
}

/* The QP's pacer from its rate_limit (as last seen) and DCQCN's rate: on at the lower one, off with neither. */
void rnic_pacer_update(struct rnic_pipeline *p, struct rnic_qp_priv *q);

/* Whether the QP may send a packet now (only asked while its pacer is on); if not, it waits on the pacer's
 * wheel until its debt is paid, and the caller leaves it idle. */
int rnic_pacer_admit(struct rnic_pipeline *p, struct rnic_qp_priv *q);

/* QPs whose wait is over go back to the scheduler (requester lcore). */
void rnic_pacer_timers(struct rnic_pipeline *p);

/* A frame of this many bytes of a paced QP left: the bucket pays it, DCQCN's byte counter counts it. */
static inline void
rnic_pacer_charge(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint32_t bytes)
{
	rnic_bucket_charge(&q->cc.pacer, bytes, bytes);
	if (q->cc.rp.active)
		rnic_dcqcn_sent(p, q, bytes);
}

/* A visit of the QP: take its rate_limit if modify_qp changed it (one load and compare). */
static inline void
rnic_pacer_check_limit(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	uint32_t limit = __atomic_load_n(&q->attr.rate_limit, __ATOMIC_RELAXED);

	if (unlikely(limit != q->req.rate_limit)) {
		q->req.rate_limit = limit;
		rnic_pacer_update(p, q);
	}
}

/* The tenant's cap as the control path set it last (generation gen): its buckets at this shard's part. */
void rnic_cap_update(struct rnic_pipeline *p, struct rnic_req_tenant *t, uint32_t gen);

/* A tenant's visit begins: take its cap if the control path changed it (one load and compare). */
static inline void
rnic_cap_check(struct rnic_pipeline *p, struct rnic_req_tenant *t)
{
	uint32_t gen = __atomic_load_n(&t->cap_gen, __ATOMIC_ACQUIRE);

	if (unlikely(gen != t->cap_gen_seen))
		rnic_cap_update(p, t, gen);
}

/* Whether a QP of capped tenant t may send a packet now; if not, it waits in the tenant's queue and the
 * caller leaves it idle. */
int rnic_cap_admit(struct rnic_pipeline *p, struct rnic_req_tenant *t, struct rnic_qp_priv *q);

/* A frame of this many bytes of capped tenant t left, the first of a message (msg) or not. */
static inline void
rnic_cap_charge(struct rnic_req_tenant *t, uint32_t bytes, int msg)
{
	if (t->cap_bytes.bpc != 0)
		rnic_bucket_charge(&t->cap_bytes, bytes, bytes);
	if (msg && t->cap_msgs.bpc != 0)
		rnic_bucket_charge(&t->cap_msgs, RNIC_CAP_MSG_UNITS, 1);
}

/* A visit of capped tenant t's QP at slot ended (*idle: the scheduler deactivates it): while tokens are left,
 * the next of its waiting QPs goes back to the scheduler; once they are spent, its wake is filed. */
void rnic_cap_visit_end(struct rnic_pipeline *p, struct rnic_req_tenant *t, uint32_t slot, int *idle);

#endif /* RNIC_PACER_H */
