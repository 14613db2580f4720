/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues (doc/qp.md, "Shared receive queues"): one ring of receive WQEs that the QPs created
 * on it take from, in posting order, whichever responder lcore serves them.
 */
#ifndef RNIC_SRQ_H
#define RNIC_SRQ_H

#include <stdint.h>

#include <rte_spinlock.h>

#include "rnic_qp.h"

/*
 * An SRQ. The queue is a struct rnic_wq in its own host-interface block (rnic_srq_hif_layout): receive WQEs
 * in the RQ's format, their wr_ids, and the indexes: head (WQEs posted, the poster's) and tail (WQEs taken,
 * written by the engine for the poster: a slot is free again once taken, since the taker copied the WQE and
 * its wr_id, which goes back in the CQE). Which WQEs are taken is the engine's own count, taken, moved by
 * a compare-and-swap: the QPs of one SRQ may be served by several responder lcores (sharded by QPN), and
 * none takes a lock. An rnicd client's block is shared memory: the engine reads each WQE once, bounds every
 * index by its own geometry, and takes nothing from the block but the head and the WQEs.
 */
struct rnic_srq_priv {
	struct rnic_srq pub;
	uint32_t srqn;
	uint32_t max_wr;		/* WQEs it holds: wq.wqe_cnt */
	uint32_t max_sge;		/* scatter entries per WQE (the engine's copy is this long) */
	uint32_t owner;			/* rnicd's client id (0: this process) */
	void *hif;
	struct rnic_wq wq;
	uint32_t attached;		/* QPs created on it: destroy_srq is refused (EBUSY) while any is left */
	/* The engine's side, written by the responder lcores that take WQEs. */
	uint32_t taken __rte_cache_aligned;	/* WQEs taken (free-running): the consumer index */
	uint32_t limit;			/* the armed limit (0: not armed): fires once, as the one who clears it */
	uint8_t failed;			/* its head was past what it holds: in error for good */
	/* The posters' lock (the engine never takes it), on a line of its own. */
	rte_spinlock_t post_lock __rte_cache_aligned;
};

static inline struct rnic_srq_priv *
rnic_srq_priv(struct rnic_srq *srq)
{
	return (struct rnic_srq_priv *)srq;
}

/* Where each part of an SRQ's host-interface block lies: rnicd and its client compute the same from the
 * queue's geometry. */
struct rnic_srq_hif_layout {
	size_t buf, wrid, idx;
	size_t size;
};

void rnic_srq_hif_layout(uint32_t cnt, uint32_t stride, struct rnic_srq_hif_layout *l);
/* Bind an SRQ's queue to a block mapped at base (an rnicd client's view of the daemon's SRQ). */
void rnic_srq_bind(struct rnic_srq_priv *srq, void *base, uint32_t cnt, uint32_t stride);

/* A receive WQE taken from an SRQ for one message. */
struct rnic_srq_wqe {
	uint64_t wr_id;
	uint32_t index;			/* its counter (the CQE's wqe_counter) */
	uint32_t nb_sge;		/* its scatter entries, copied to the taker's array */
};

/*
 * Take the oldest WQE posted on the SRQ for one message of a QP (engine, any responder lcore): its scatter list
 * is copied into sge (at most the SRQ's max_sge entries, never past its slot), its wr_id and counter into
 * *out. Returns 1; 0 when none is posted; -1 when the SRQ is in error (its head was past what it holds: it
 * fails then, raising RNIC_EVENT_SRQ_ERR once). Lock-free: a compare-and-swap on the consumer index, after
 * the copy; taking the last WQEs below an armed limit raises RNIC_EVENT_SRQ_LIMIT_REACHED once.
 */
int rnic_srq_take(struct rnic_srq *srq, struct rnic_wqe_data *sge, struct rnic_srq_wqe *out);

/* A QP was created on / destroyed from the SRQ. */
void rnic_srq_attach(struct rnic_srq *srq);
void rnic_srq_detach(struct rnic_srq *srq);

#endif /* RNIC_SRQ_H */
