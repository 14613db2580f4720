/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's per-QP pacer: a token bucket in front of every packet a QP sends while a rate applies to
 * it (its rate_limit attribute, or DCQCN's current rate: the lower of them). A QP that owes tokens waits on
 * the pacer's timer wheel, which hands it back to the scheduler when they are paid; the requester checks
 * one flag per packet of a QP without a rate, and looks at the wheel only once a QP of its shard was paced.
 * Frames are charged as they leave, headers included (the wire's rate, not the payload's).
 */
#ifndef RNIC_PACER_H
#define RNIC_PACER_H

#include "rnic_dcqcn.h"
#include "rnic_pipeline.h"

#define RNIC_PACER_SHIFT 24		/* bytes per cycle in fixed point: 24 bits of fraction */
#define RNIC_PACER_BURST_US 64		/* the bucket holds this long at the rate: the wheel's tick (16 us) and
					 * a late wake lose nothing of the rate */
#define RNIC_PACER_MIN_BURST 8448	/* ... and at least two 4 KB frames with their headers */

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
	q->cc.pacer.tokens -= (int64_t)bytes << RNIC_PACER_SHIFT;
	q->cc.pacer.released += bytes;
	if (q->cc.rp.active)
		rnic_dcqcn_sent(p, q, bytes);
}

/* The time the pacer takes to release this many bytes at its rate, in TSC cycles (only while it is on). */
static inline uint64_t
rnic_pacer_cycles(const struct rnic_pacer *pc, uint64_t bytes)
{
	return (bytes << RNIC_PACER_SHIFT) / pc->bpc;
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

#endif /* RNIC_PACER_H */
