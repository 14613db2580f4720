/* SPDX-License-Identifier: BSD-3-Clause
 * Polling a CQ: rnic_poll_cq turns CQEs into work completions, mapping each CQE's WQE counter back to the
 * work request id posted on its QP and retiring the WQEs it completes. It sits with the QPs, above cq: the
 * CQ's ring knows nothing of work requests (doc/architecture.md, the module graph).
 */
#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>

#include "rnic_cq.h"
#include "rnic_qp.h"
#include "rnic_wqe.h"

static enum rnic_wc_opcode
send_wc_opcode(uint8_t wqe_opcode)
{
	switch (wqe_opcode) {
	case RNIC_WQE_OP_RDMA_WRITE:
	case RNIC_WQE_OP_RDMA_WRITE_IMM:
		return RNIC_WC_RDMA_WRITE;
	case RNIC_WQE_OP_RDMA_READ:
		return RNIC_WC_RDMA_READ;
	case RNIC_WQE_OP_ATOMIC_CS:
		return RNIC_WC_COMP_SWAP;
	case RNIC_WQE_OP_ATOMIC_FA:
		return RNIC_WC_FETCH_ADD;
	default:
		return RNIC_WC_SEND;
	}
}

/*
 * The work queue slots the CQEs of one poll retire: consecutive CQEs of one queue (the common case) look
 * the QP up once and move the queue's tail once, after the last of them.
 */
struct retiring {
	struct rnic_qp *qp;
	uint32_t qpn;
	int is_send;
	int pending;			/* counter is a slot not retired yet */
	uint16_t counter;
};

static void
retire(struct retiring *rt)
{
	if (!rt->pending)
		return;
	if (rt->is_send)
		rnic_qp_sq_retire(rt->qp, rt->counter);
	else
		rnic_qp_rq_retire(rt->qp, rt->counter);
	rt->pending = 0;
}

/* The wr_id of a CQE's WQE on its QP's SQ or RQ, whose slots up to it the poll then retires. */
static uint64_t
wq_wrid(struct rnic_cq_priv *cq, struct retiring *rt, uint32_t qpn, int is_send, uint16_t counter)
{
	if (rt->qp == NULL || rt->qpn != qpn || rt->is_send != is_send) {
		retire(rt);
		rt->qp = rnic_qp_lookup(rnic_ctx_dev(cq->pub.context), qpn);
		rt->qpn = qpn;
		rt->is_send = is_send;
	}
	if (rt->qp == NULL)
		return 0;
	rt->counter = counter;
	rt->pending = 1;
	return is_send ? rnic_qp_sq_wrid(rt->qp, counter) : rnic_qp_rq_wrid(rt->qp, counter);
}

static void
decode_cqe(struct rnic_cq_priv *cq, const struct rnic_cqe64 *cqe, struct rnic_wc *wc, struct retiring *rt)
{
	uint32_t sop = rte_be_to_cpu_32(cqe->sop_drop_qpn);
	uint8_t opcode = cqe->op_own >> 4;
	int is_send = opcode == RNIC_CQE_REQ || opcode == RNIC_CQE_REQ_ERR;

	memset(wc, 0, sizeof(*wc));
	wc->qp_num = sop & 0xffffff;
	/* A receive from an SRQ carries its wr_id: the SRQ's slot was free for a new post once taken. */
	if (!is_send && cqe->srqn_uidx != 0)
		wc->wr_id = rte_be_to_cpu_64(cqe->srq_wr_id);
	else
		wc->wr_id = wq_wrid(cq, rt, wc->qp_num, is_send, rte_be_to_cpu_16(cqe->wqe_counter));
	if (opcode == RNIC_CQE_REQ_ERR || opcode == RNIC_CQE_RESP_ERR) {
		wc->status = rnic_cqe_status(((const uint8_t *)cqe)[RNIC_ERR_CQE_SYNDROME]);
		wc->vendor_err = ((const uint8_t *)cqe)[RNIC_ERR_CQE_VENDOR_SYND];
		wc->opcode = is_send ? send_wc_opcode((uint8_t)(sop >> 24)) : RNIC_WC_RECV;
		return;
	}
	wc->status = RNIC_WC_SUCCESS;
	wc->byte_len = rte_be_to_cpu_32(cqe->byte_cnt);
	switch (opcode) {
	case RNIC_CQE_REQ:
		wc->opcode = send_wc_opcode((uint8_t)(sop >> 24));
		break;
	case RNIC_CQE_RESP_RDMA_WRITE_IMM:
		wc->opcode = RNIC_WC_RECV_RDMA_WITH_IMM;
		wc->wc_flags = RNIC_WC_WITH_IMM;
		wc->imm_data = cqe->imm_inval_pkey;
		break;
	case RNIC_CQE_RESP_SEND_IMM:
		wc->opcode = RNIC_WC_RECV;
		wc->wc_flags = RNIC_WC_WITH_IMM;
		wc->imm_data = cqe->imm_inval_pkey;
		break;
	case RNIC_CQE_RESP_SEND_INV:
		wc->opcode = RNIC_WC_RECV;
		wc->wc_flags = RNIC_WC_WITH_INV;
		wc->invalidated_rkey = rte_be_to_cpu_32(cqe->imm_inval_pkey);
		break;
	default:
		wc->opcode = RNIC_WC_RECV;
	}
	if (!is_send) {
		uint32_t rqpn = rte_be_to_cpu_32(cqe->flags_rqpn);

		wc->src_qp = rqpn & 0xffffff;
		if ((rqpn >> RNIC_CQE_GRH_SHIFT) & 3)
			wc->wc_flags |= RNIC_WC_GRH;
	}
}

int
rnic_poll_cq(struct rnic_cq *pub, int num_entries, struct rnic_wc *wc)
{
	struct rnic_cq_priv *cq = rnic_cq_priv(pub);
	struct retiring rt = { .qp = NULL };
	struct rnic_cqe64 *cqe;
	int n = 0;

	if (pub == NULL || num_entries < 0 || (wc == NULL && num_entries > 0))
		return -EINVAL;
	rnic_cq_run_progress();
	while (n < num_entries && (cqe = rnic_cq_sw_cqe(cq, cq->cons)) != NULL) {
		decode_cqe(cq, cqe, &wc[n++], &rt);
		cq->cons++;
	}
	retire(&rt);
	if (n > 0)	/* one doorbell record update per batch */
		__atomic_store_n(&cq->dbrec[RNIC_CQ_DB_SET_CI], rte_cpu_to_be_32(cq->cons & 0xffffff),
				 __ATOMIC_RELEASE);
	if (n == 0 && __atomic_load_n(&cq->hif->error, __ATOMIC_ACQUIRE) &&
	    cq->cons == __atomic_load_n(&cq->hif->prod, __ATOMIC_ACQUIRE))
		return -EIO;	/* everything written was returned; the CQ lost completions after it */
	return n;
}
