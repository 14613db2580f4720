/* SPDX-License-Identifier: BSD-3-Clause
 * Queue pairs: contexts, the IBA state machine, SQ/RQ buffers (WQE formats in rnic_wqe.h).
 */
#ifndef RNIC_QP_H
#define RNIC_QP_H

#include <stdint.h>

#include <rte_spinlock.h>

#include "rnic_priv.h"

/* One work queue (SQ or RQ): a ring of fixed-stride WQE slots and the wr_ids behind them. */
struct rnic_wq {
	uint8_t *buf;
	uint32_t wqe_cnt;		/* slots, a power of two */
	uint32_t stride;		/* bytes per slot, a power of two >= 64 */
	uint64_t *wrid;
	uint32_t head;			/* WQEs posted (free-running) */
	uint32_t tail;			/* WQEs retired by rnic_poll_cq */
	uint32_t done;			/* WQEs completed by the engine or flushed */
	rte_spinlock_t lock;		/* posters of this queue (the data path never takes it) */
};

struct rnic_qp_priv {
	struct rnic_qp pub;
	struct rnic_qp_cap cap;		/* what the QP was created with (after rounding up) */
	int sq_sig_all;
	struct rnic_qp_attr attr;	/* the attributes set so far (query_qp returns them) */
	uint32_t slot;
	struct rnic_wq sq;
	struct rnic_wq rq;
};

static inline struct rnic_qp_priv *
rnic_qp_priv(struct rnic_qp *qp)
{
	return (struct rnic_qp_priv *)qp;
}

/* Create/free the device's QP table (called by the device module). */
int rnic_qp_table_create(struct rnic_device *dev);
void rnic_qp_table_free(struct rnic_device *dev);

/* The QP with this number, or NULL. Lock-free read: safe from the data path. */
struct rnic_qp *rnic_qp_lookup(struct rnic_device *dev, uint32_t qpn);

/* wr_id of the WQE at this index of the QP's SQ / RQ (the CQ poll maps CQE wqe_counter to wr_id). */
uint64_t rnic_qp_sq_wrid(struct rnic_qp *qp, uint16_t wqe_counter);
uint64_t rnic_qp_rq_wrid(struct rnic_qp *qp, uint16_t wqe_counter);

/* Polling retired the WQE at this index and every one before it: their slots may be reused. */
void rnic_qp_sq_retire(struct rnic_qp *qp, uint16_t wqe_counter);
void rnic_qp_rq_retire(struct rnic_qp *qp, uint16_t wqe_counter);

/*
 * Complete every WQE not yet completed, SQ first then RQ, in order, with RNIC_WC_WR_FLUSH_ERR. Called for a
 * QP in the error state; it produces CQEs, so it runs where the QP's completions are produced (today the
 * control path: the engine's data path, when it runs, must call it on the lcore owning the QP).
 */
void rnic_qp_flush(struct rnic_qp *qp);

/* Address of WQE slot n of a work queue. */
static inline uint8_t *
rnic_wq_slot(const struct rnic_wq *wq, uint32_t n)
{
	return wq->buf + (size_t)(n & (wq->wqe_cnt - 1)) * wq->stride;
}

#endif /* RNIC_QP_H */
