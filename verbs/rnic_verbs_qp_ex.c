/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_create_qp_ex and the post API of struct ibv_qp_ex (ibv_wr_start, ibv_wr_rdma_write, ibv_wr_set_sge,
 * ibv_wr_complete...), which verbs.h's inline functions call through the QP's function pointers. Each entry
 * hands its fields to the QP's send batch (lib/qp/rnic_send_batch.h), which writes them into the WQE in the
 * SQ slot at once: nothing is copied in between, and no entry allocates, locks beyond the batch's SQ poster
 * lock (taken by ibv_wr_start, as rnic_post_send takes it per call) or makes a system call.
 */
#include <errno.h>
#include <string.h>

#include "rnic_verbs.h"

/* What the batch posts (the opcodes rnic_post_send takes); memory windows, local invalidation, TSO and
 * the RDMA atomic write and flush are not done. */
#define RNIC_VERBS_SEND_OPS                                                                                 \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |              \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |        \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV)

static inline struct rnic_send_batch *
batch_of(struct ibv_qp_ex *qpx)
{
	return &RNIC_VERBS_CONTAINER(qpx, struct rnic_verbs_qp, ex)->batch;
}

/* A work request of the batch: the ibv_qp_ex's wr_id and wr_flags (IBV_SEND_* are RNIC_SEND_*, the opcodes
 * RNIC_WR_*: rnic_verbs_abi.c checks), the rest from the entry. */
static inline void
begin(struct ibv_qp_ex *qpx, struct rnic_send_wr *wr, enum ibv_wr_opcode opcode)
{
	wr->wr_id = qpx->wr_id;
	wr->opcode = (enum rnic_wr_opcode)opcode;
	wr->send_flags = qpx->wr_flags;
	rnic_send_batch_wr(batch_of(qpx), wr);
}

static void
wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct rnic_send_wr wr = { .wr.rdma = { .remote_addr = remote_addr, .rkey = rkey } };

	begin(qpx, &wr, IBV_WR_RDMA_WRITE);
}

static void
wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, __be32 imm_data)
{
	struct rnic_send_wr wr = { .imm_data = imm_data, .wr.rdma = { .remote_addr = remote_addr, .rkey = rkey } };

	begin(qpx, &wr, IBV_WR_RDMA_WRITE_WITH_IMM);
}

static void
wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct rnic_send_wr wr = { .wr.rdma = { .remote_addr = remote_addr, .rkey = rkey } };

	begin(qpx, &wr, IBV_WR_RDMA_READ);
}

static void
wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, uint64_t compare, uint64_t swap)
{
	struct rnic_send_wr wr = { .wr.atomic = { .remote_addr = remote_addr, .compare_add = compare,
						  .swap = swap, .rkey = rkey } };

	begin(qpx, &wr, IBV_WR_ATOMIC_CMP_AND_SWP);
}

static void
wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, uint64_t add)
{
	struct rnic_send_wr wr = { .wr.atomic = { .remote_addr = remote_addr, .compare_add = add, .rkey = rkey } };

	begin(qpx, &wr, IBV_WR_ATOMIC_FETCH_AND_ADD);
}

static void
wr_send(struct ibv_qp_ex *qpx)
{
	struct rnic_send_wr wr = { 0 };

	begin(qpx, &wr, IBV_WR_SEND);
}

static void
wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct rnic_send_wr wr = { .imm_data = imm_data };

	begin(qpx, &wr, IBV_WR_SEND_WITH_IMM);
}

static void
wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct rnic_send_wr wr = { .invalidate_rkey = invalidate_rkey };

	begin(qpx, &wr, IBV_WR_SEND_WITH_INV);
}

static void
wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
	rnic_send_batch_ud(batch_of(qpx), ah != NULL ? RNIC_VERBS_CONTAINER(ah, struct rnic_verbs_ah, ibv)->ah : NULL,
			   remote_qpn, remote_qkey);
}

static void
wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct rnic_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	rnic_send_batch_sge(batch_of(qpx), &sge, 1);
}

/* ibv_sge arrays are rnic_sge arrays (rnic_verbs_abi.c checks). */
static void
wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg_list)
{
	rnic_send_batch_sge(batch_of(qpx), (const struct rnic_sge *)sg_list, num_sge);
}

static void
wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct rnic_data_buf buf = { .addr = addr, .length = length };

	rnic_send_batch_inline(batch_of(qpx), &buf, 1);
}

/* ibv_data_buf arrays are rnic_data_buf arrays (rnic_verbs_abi.c checks). */
static void
wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf, const struct ibv_data_buf *buf_list)
{
	rnic_send_batch_inline(batch_of(qpx), (const struct rnic_data_buf *)buf_list, num_buf);
}

static void
wr_start(struct ibv_qp_ex *qpx)
{
	rnic_send_batch_start(RNIC_VERBS_CONTAINER(qpx, struct rnic_verbs_qp, ex)->qp, batch_of(qpx));
}

static int
wr_complete(struct ibv_qp_ex *qpx)
{
	return rnic_send_batch_complete(batch_of(qpx));
}

static void
wr_abort(struct ibv_qp_ex *qpx)
{
	rnic_send_batch_abort(batch_of(qpx));
}

/* The work requests create_qp_ex refuses in send_ops_flags: a program that calls them anyway gets its
 * batch failed (EOPNOTSUPP from ibv_wr_complete), not a crash. */
static void
wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	(void)mw, (void)rkey, (void)info;
	rnic_send_batch_fail(batch_of(qpx), EOPNOTSUPP);
}

static void
wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	(void)invalidate_rkey;
	rnic_send_batch_fail(batch_of(qpx), EOPNOTSUPP);
}

static void
wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	rnic_send_batch_fail(batch_of(qpx), EOPNOTSUPP);
}

static void
wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	(void)remote_srqn;
	rnic_send_batch_fail(batch_of(qpx), EOPNOTSUPP);
}

static void
wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, const void *atomic_wr)
{
	(void)rkey, (void)remote_addr, (void)atomic_wr;
	rnic_send_batch_fail(batch_of(qpx), EOPNOTSUPP);
}

static void
set_wr_ops(struct ibv_qp_ex *qpx)
{
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_send_tso = wr_send_tso;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_start = wr_start;
	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	qpx->wr_atomic_write = wr_atomic_write;
}

/* The context's create_qp_ex: a PD's RC, UC or UD QP, with the ibv_wr_* post API when send_ops_flags asks
 * for it (the other extensions: XRC, create flags, TSO, RSS, a source QPN are not done). */
struct ibv_qp *
rnic_verbs_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	struct rnic_verbs_qp *q;
	int with_ops = !!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
	    (with_ops && (attr->send_ops_flags & ~(uint64_t)RNIC_VERBS_SEND_OPS))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = rnic_verbs_create_qp(context, attr);
	if (qp == NULL || !with_ops)
		return qp;
	q = rnic_verbs_qp(qp);
	q->has_ex = 1;
	set_wr_ops(&q->ex);
	return qp;
}

/* libibverbs: the extended view of a QP made with send_ops_flags, NULL for any other. */
struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct rnic_verbs_qp *q = rnic_verbs_qp(qp);

	return q->has_ex ? &q->ex : NULL;
}
