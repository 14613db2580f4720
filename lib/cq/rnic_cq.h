/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues: mlx5-style rings of 64-byte CQEs (digest seed-001 §1.13) shared between the engine,
 * which produces CQEs, and rnic_poll_cq, which consumes them.
 *
 * Interface used by the rest of the library (the CQ module owns everything else in this header).
 */
#ifndef RNIC_CQ_H
#define RNIC_CQ_H

#include <stdint.h>

#include "rnic_priv.h"

/* What the engine knows about one finished work request; rnic_cq_push encodes it into a CQE. */
struct rnic_cqe_desc {
	uint32_t qpn;
	uint16_t wqe_counter;		/* index of the WQE in its SQ or RQ; poll maps it back to wr_id */
	uint8_t is_send;		/* 1: requester (SQ) completion, 0: responder (RQ) completion */
	uint8_t wqe_opcode;		/* send completions: the WQE's opcode (RNIC_WQE_OP_*, rnic_wqe.h) */
	enum rnic_wc_status status;
	uint8_t vendor_err;
	uint8_t solicited;		/* receive completions: the request had the SE bit */
	uint8_t with_imm;		/* receive: SEND/WRITE with immediate */
	uint8_t with_inv;		/* receive: SEND with invalidate (imm_inval holds the rkey) */
	uint8_t is_rdma_write;		/* receive: the completion consumed a WQE for RDMA WRITE with immediate */
	uint8_t grh;			/* receive on UD: a GRH precedes the payload in the buffer */
	uint32_t byte_cnt;
	uint32_t imm_inval;		/* immediate (network byte order) or invalidated rkey */
	uint32_t src_qp;		/* UD: source QPN */
};

/* Create/free the device's CQ table (called by the device module). */
int rnic_cq_table_create(struct rnic_device *dev);
void rnic_cq_table_free(struct rnic_device *dev);

/*
 * Write one CQE. Single producer per CQ (the lcore that owns the QPs completing into it; the control path
 * only while the engine is stopped). Returns 0; -ENOSPC when the CQ is full: the CQ enters the error state,
 * RNIC_EVENT_CQ_ERR is raised, and nothing is overwritten; -EIO when the CQ is already in error.
 */
int rnic_cq_push(struct rnic_cq *cq, const struct rnic_cqe_desc *desc);

/* The QPs attached to a CQ keep it alive: destroy_cq fails with EBUSY while the count is non-zero. */
void rnic_cq_attach(struct rnic_cq *cq);
void rnic_cq_detach(struct rnic_cq *cq);

#endif /* RNIC_CQ_H */
