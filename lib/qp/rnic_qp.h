/* SPDX-License-Identifier: BSD-3-Clause
 * Queue pairs: contexts, the IBA state machine, SQ/RQ buffers (WQE formats in rnic_wqe.h).
 *
 * Interface used by the rest of the library (the QP module owns everything else in this header).
 */
#ifndef RNIC_QP_H
#define RNIC_QP_H

#include <stdint.h>

#include "rnic_priv.h"

/* Create/free the device's QP table (called by the device module). */
int rnic_qp_table_create(struct rnic_device *dev);
void rnic_qp_table_free(struct rnic_device *dev);

/* The QP with this number, or NULL. Lock-free read: safe from the data path. */
struct rnic_qp *rnic_qp_lookup(struct rnic_device *dev, uint32_t qpn);

/* wr_id of the WQE at this index of the QP's SQ / RQ (the CQ poll maps CQE wqe_counter to wr_id). */
uint64_t rnic_qp_sq_wrid(struct rnic_qp *qp, uint16_t wqe_counter);
uint64_t rnic_qp_rq_wrid(struct rnic_qp *qp, uint16_t wqe_counter);

/* The consumer side tells the QP that polling retired its WQEs up to this index (frees SQ/RQ space). */
void rnic_qp_sq_retire(struct rnic_qp *qp, uint16_t wqe_counter);
void rnic_qp_rq_retire(struct rnic_qp *qp, uint16_t wqe_counter);

#endif /* RNIC_QP_H */
