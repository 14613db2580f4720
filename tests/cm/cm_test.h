/* SPDX-License-Identifier: BSD-3-Clause
 * What the CM's tests share: a UD QP that talks to QP1 as another port's agent would.
 */
#ifndef CM_TEST_H
#define CM_TEST_H

#include <stdint.h>

#include "rnic.h"

/* A UD QP of the PD, its sends and receives on cq, brought to RTS with the Q_Key given (0x80010000: a
 * management QP's, which QP1's answers carry). NULL if a step fails. */
static inline struct rnic_qp *
cm_test_ud_qp(struct rnic_pd *pd, struct rnic_cq *cq, uint32_t qkey, uint32_t max_recv_wr)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = RNIC_QPT_UD,
		.cap = { .max_send_wr = 64, .max_recv_wr = max_recv_wr, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = qkey };
	struct rnic_qp *qp = rnic_create_qp(pd, &ia);

	if (qp == NULL ||
	    rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_QKEY) != 0)
		return NULL;
	a.qp_state = RNIC_QPS_RTR;
	if (rnic_modify_qp(qp, &a, RNIC_QP_STATE) != 0)
		return NULL;
	a.qp_state = RNIC_QPS_RTS;
	return rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN) == 0 ? qp : NULL;
}

#endif /* CM_TEST_H */
