/* SPDX-License-Identifier: BSD-3-Clause
 * ibv_create_cq_ex and the poll API of struct ibv_cq_ex (ibv_start_poll, ibv_next_poll, ibv_end_poll and
 * the ibv_wc_read_* entries), which verbs.h's inline functions call through the CQ's function pointers. A
 * poll takes one completion with rnic_poll_cq into the CQ's current work completion, which the read entries
 * return field by field: no lock, allocation or system call of their own.
 */
#include <errno.h>
#include <limits.h>

#include "rnic_verbs.h"

/* What a softrnic completion carries: the standard fields. Timestamps, CVLAN, flow tag and tag matching
 * are not reported (ibv_create_cq_ex refuses them). */
#define RNIC_VERBS_WC_FLAGS IBV_WC_STANDARD_FLAGS

static inline struct rnic_verbs_cq *
cq_of(struct ibv_cq_ex *cq)
{
	return RNIC_VERBS_CONTAINER(cq, struct rnic_verbs_cq, ex);
}

/* One completion into the CQ's current one: 0, ENOENT when there is none, EIO when the CQ overran. */
static inline int
poll_one(struct ibv_cq_ex *cq)
{
	struct rnic_verbs_cq *q = cq_of(cq);
	int n = rnic_poll_cq(q->cq, 1, (struct rnic_wc *)&q->wc);	/* the same layout (rnic_verbs_abi.c) */

	if (n <= 0)
		return n == 0 ? ENOENT : -n;
	cq->status = q->wc.status;
	cq->wr_id = q->wc.wr_id;
	return 0;
}

static int
start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	if (attr == NULL || attr->comp_mask != 0)
		return EINVAL;
	return poll_one(cq);
}

static int
next_poll(struct ibv_cq_ex *cq)
{
	return poll_one(cq);
}

static void
end_poll(struct ibv_cq_ex *cq)
{
	(void)cq;	/* nothing is held between start and end */
}

static enum ibv_wc_opcode
read_opcode(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.opcode;
}

static uint32_t
read_vendor_err(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.vendor_err;
}

static uint32_t
read_byte_len(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.byte_len;
}

static __be32
read_imm_data(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.imm_data;
}

static uint32_t
read_qp_num(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.qp_num;
}

static uint32_t
read_src_qp(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.src_qp;
}

static unsigned int
read_wc_flags(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.wc_flags;
}

static uint32_t
read_slid(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.slid;
}

static uint8_t
read_sl(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.sl;
}

static uint8_t
read_dlid_path_bits(struct ibv_cq_ex *cq)
{
	return cq_of(cq)->wc.dlid_path_bits;
}

/* The fields ibv_create_cq_ex refuses to report: a program that reads them anyway reads 0, not a NULL
 * function pointer. */
static uint64_t
read_none_u64(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static uint16_t
read_none_u16(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static uint32_t
read_none_u32(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static void
read_none_tm_info(struct ibv_cq_ex *cq, struct ibv_wc_tm_info *tm_info)
{
	(void)cq;
	tm_info->tag = 0;
	tm_info->priv = 0;
}

static void
set_poll_ops(struct ibv_cq_ex *cq)
{
	cq->start_poll = start_poll;
	cq->next_poll = next_poll;
	cq->end_poll = end_poll;
	cq->read_opcode = read_opcode;
	cq->read_vendor_err = read_vendor_err;
	cq->read_byte_len = read_byte_len;
	cq->read_imm_data = read_imm_data;
	cq->read_qp_num = read_qp_num;
	cq->read_src_qp = read_src_qp;
	cq->read_wc_flags = read_wc_flags;
	cq->read_slid = read_slid;
	cq->read_sl = read_sl;
	cq->read_dlid_path_bits = read_dlid_path_bits;
	cq->read_completion_ts = read_none_u64;
	cq->read_cvlan = read_none_u16;
	cq->read_flow_tag = read_none_u32;
	cq->read_tm_info = read_none_tm_info;
	cq->read_completion_wallclock_ns = read_none_u64;
}

/* The context's create_cq_ex. A single-threaded CQ is a hint softrnic does not need (its poll takes no
 * lock); ignoring overruns and parent domains are not done. */
struct ibv_cq_ex *
rnic_verbs_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct rnic_verbs_cq *q;

	if (attr->cqe == 0 || attr->cqe > INT_MAX || attr->comp_vector > INT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->wc_flags & ~(uint64_t)RNIC_VERBS_WC_FLAGS) || (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	q = rnic_verbs_new_cq(context, (int)attr->cqe, attr->cq_context, attr->channel, (int)attr->comp_vector);
	if (q == NULL)
		return NULL;
	set_poll_ops(&q->ex);
	return &q->ex;
}
