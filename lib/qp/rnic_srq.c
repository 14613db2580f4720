/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues: create / modify (the limit) / query / destroy, and the engine's lock-free take of a
 * WQE (doc/qp.md, "Shared receive queues"). rnic_post_srq_recv is with the other posts, in rnic_wqe.c.
 */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>

#include "rnic_srq.h"
#include "rnic_wqe.h"

#define SRQN_MASK 0xffffffu

void
rnic_srq_hif_layout(uint32_t cnt, uint32_t stride, struct rnic_srq_hif_layout *l)
{
	size_t off = 0;

	l->buf = off;
	off += (size_t)cnt * stride;
	l->wrid = off;
	off += sizeof(uint64_t) * cnt;
	off = RTE_ALIGN_CEIL(off, RTE_CACHE_LINE_SIZE);	/* the indexes are cache-line aligned (rnic_wq_idx) */
	l->idx = off;
	off += sizeof(struct rnic_wq_idx);
	l->size = RTE_ALIGN_CEIL(off, 4096);
}

void
rnic_srq_bind(struct rnic_srq_priv *srq, void *base, uint32_t cnt, uint32_t stride)
{
	struct rnic_srq_hif_layout l;

	rnic_srq_hif_layout(cnt, stride, &l);
	srq->hif = base;
	rnic_wq_bind(&srq->wq, base, l.buf, l.wrid, 0, l.idx, cnt, stride);
	srq->max_wr = cnt;
	/* The entries a slot of this stride holds between its NextSeg and its delimiter. */
	srq->max_sge = (stride - (uint32_t)sizeof(struct rnic_wqe_next) - RNIC_WQE_SEG) /
		       (uint32_t)sizeof(struct rnic_wqe_data);
}

void
rnic_srq_attach(struct rnic_srq *srq)
{
	__atomic_fetch_add(&rnic_srq_priv(srq)->attached, 1, __ATOMIC_ACQ_REL);
}

void
rnic_srq_detach(struct rnic_srq *srq)
{
	__atomic_fetch_sub(&rnic_srq_priv(srq)->attached, 1, __ATOMIC_ACQ_REL);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Create / modify / query / destroy                                                                       */

struct rnic_srq *
rnic_create_srq(struct rnic_pd *pd, struct rnic_srq_init_attr *ia)
{
	const struct rnic_limits *lim;

	if (pd == NULL || ia == NULL) {
		errno = EINVAL;
		return NULL;
	}
	lim = &rnic_ctx_dev(pd->context)->lim;
	/* srq_limit is not set at creation (libibverbs ignores it there): rnic_modify_srq arms it. */
	if (ia->attr.max_wr == 0 || ia->attr.max_wr > lim->max_qp_wr || ia->attr.max_sge > lim->max_sge) {
		errno = EINVAL;
		return NULL;
	}
	return rnic_ctx_ops(pd->context)->create_srq(pd, ia);
}

static int
srq_number(struct rnic_device *dev, uint32_t *srqn)
{
	if (dev->srq_count == dev->lim.max_qp)
		return -ENOMEM;
	dev->srq_count++;
	do
		dev->next_srqn = (dev->next_srqn + 1) & SRQN_MASK;
	while (dev->next_srqn == 0);	/* 0 in a CQE: not from an SRQ */
	*srqn = dev->next_srqn;
	return 0;
}

struct rnic_srq *
rnic_local_create_srq(struct rnic_pd *pd, struct rnic_srq_init_attr *ia)
{
	struct rnic_device *dev = rnic_ctx_dev(pd->context);
	uint32_t cnt = rte_align32pow2(ia->attr.max_wr), stride = rnic_recv_wqe_stride(ia->attr.max_sge);
	struct rnic_srq_hif_layout l;
	struct rnic_srq_priv *srq;
	void *block;
	int err;

	srq = rte_zmalloc_socket("rnic_srq", sizeof(*srq), RTE_CACHE_LINE_SIZE, dev->socket_id);
	rnic_srq_hif_layout(cnt, stride, &l);
	block = srq != NULL ? rnic_hostmem_alloc(pd->context, l.size) : NULL;
	if (block == NULL) {
		rte_free(srq);
		errno = ENOMEM;
		return NULL;
	}
	rnic_srq_bind(srq, block, cnt, stride);
	pthread_mutex_lock(&dev->lock);
	err = -srq_number(dev, &srq->srqn);
	pthread_mutex_unlock(&dev->lock);
	if (err != 0) {
		rnic_hostmem_free(pd->context, block);
		rte_free(srq);
		errno = err;
		return NULL;
	}
	rte_spinlock_init(&srq->post_lock);
	srq->owner = rnic_context_priv(pd->context)->owner;
	srq->pub.context = pd->context;
	srq->pub.srq_context = ia->srq_context;
	srq->pub.pd = pd;
	srq->pub.handle = srq->srqn;
	rnic_pd_get(pd);
	/* What the SRQ really holds, as libibverbs reports it. */
	ia->attr.max_wr = srq->max_wr;
	ia->attr.max_sge = srq->max_sge;
	ia->attr.srq_limit = 0;
	return &srq->pub;
}

int
rnic_modify_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr, int attr_mask)
{
	if (srq == NULL || attr == NULL || (attr_mask & ~(RNIC_SRQ_MAX_WR | RNIC_SRQ_LIMIT)) != 0)
		return EINVAL;
	return rnic_ctx_ops(srq->context)->modify_srq(srq, attr, attr_mask);
}

int
rnic_local_modify_srq(struct rnic_srq *pub, struct rnic_srq_attr *attr, int attr_mask)
{
	struct rnic_srq_priv *srq = rnic_srq_priv(pub);

	/* Resizing is not supported (no IBV_DEVICE_SRQ_RESIZE): nothing is changed. */
	if (attr_mask & RNIC_SRQ_MAX_WR)
		return EOPNOTSUPP;
	if (attr->srq_limit > srq->max_wr)
		return EINVAL;
	/* Armed (or, with 0, disarmed): the next take that leaves fewer WQEs than the limit fires the event. */
	__atomic_store_n(&srq->limit, attr->srq_limit, __ATOMIC_RELEASE);
	return 0;
}

int
rnic_query_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr)
{
	if (srq == NULL || attr == NULL)
		return EINVAL;
	return rnic_ctx_ops(srq->context)->query_srq(srq, attr);
}

int
rnic_local_query_srq(struct rnic_srq *pub, struct rnic_srq_attr *attr)
{
	struct rnic_srq_priv *srq = rnic_srq_priv(pub);

	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = __atomic_load_n(&srq->limit, __ATOMIC_ACQUIRE);	/* 0 once it fired */
	return 0;
}

int
rnic_destroy_srq(struct rnic_srq *srq)
{
	if (srq == NULL)
		return EINVAL;
	return rnic_ctx_ops(srq->context)->destroy_srq(srq);
}

int
rnic_local_destroy_srq(struct rnic_srq *pub)
{
	struct rnic_srq_priv *srq = rnic_srq_priv(pub);
	struct rnic_device *dev = rnic_ctx_dev(pub->context);

	/* A QP is detached once no engine lcore can still reach the SRQ through it (rnic_engine_retire). */
	if (!rnic_engine_users_gone(&srq->attached))
		return EBUSY;
	pthread_mutex_lock(&dev->lock);
	dev->srq_count--;
	pthread_mutex_unlock(&dev->lock);
	rnic_pd_put(pub->pd);
	rnic_hostmem_free(pub->context, srq->hif);
	rte_free(srq);
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The engine's side                                                                                        */

/* A head past what the SRQ holds (a poster never writes one): the SRQ is in error, said once. */
static void
srq_fail(struct rnic_srq_priv *srq, uint32_t head)
{
	uint8_t ok = 0;

	if (!__atomic_compare_exchange_n(&srq->failed, &ok, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	RNIC_LOG_LIMITED(ERR, "SRQ %u: head %u is past the %u WQEs it holds: SRQ in error", srq->srqn, head,
			 srq->wq.wqe_cnt);
	rnic_async_event_raise(srq->pub.context, RNIC_EVENT_SRQ_ERR, &srq->pub);
}

/*
 * Tell the poster up to where WQEs are taken (its slots are free), never moving the index back: another lcore
 * may have taken, and told, more. The index is in the poster's memory, which an rnicd client may rewrite:
 * a few tries, never a loop it can hold.
 */
static void
publish_taken(struct rnic_srq_priv *srq, uint32_t taken)
{
	uint32_t *tail = &srq->wq.idx->tail, cur = __atomic_load_n(tail, __ATOMIC_RELAXED);

	for (int tries = 0; tries < 8 && (int32_t)(taken - cur) > 0; tries++)
		if (__atomic_compare_exchange_n(tail, &cur, taken, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
}

/* An armed limit with fewer WQEs left than it: the event, raised once by the lcore that disarms it. */
static void
check_limit(struct rnic_srq_priv *srq, uint32_t taken)
{
	uint32_t limit = __atomic_load_n(&srq->limit, __ATOMIC_RELAXED);
	uint32_t left = __atomic_load_n(&srq->wq.idx->head, __ATOMIC_ACQUIRE) - taken;

	if (limit == 0 || left >= limit)
		return;
	if (__atomic_compare_exchange_n(&srq->limit, &limit, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		rnic_async_event_raise(srq->pub.context, RNIC_EVENT_SRQ_LIMIT_REACHED, &srq->pub);
}

int
rnic_srq_take(struct rnic_srq *pub, struct rnic_wqe_data *sge, struct rnic_srq_wqe *out)
{
	struct rnic_srq_priv *srq = rnic_srq_priv(pub);
	const struct rnic_wq *wq = &srq->wq;
	uint32_t head, t;
	int behind = 0;

	do {
		if (__atomic_load_n(&srq->failed, __ATOMIC_RELAXED))
			return -1;
		/* The head first: an honest poster's head is then at most a queue past any later taken. */
		head = __atomic_load_n(&wq->idx->head, __ATOMIC_ACQUIRE);
		t = __atomic_load_n(&srq->taken, __ATOMIC_ACQUIRE);
		if (head == t)
			return 0;
		if ((int32_t)(head - t) < 0) {
			/* Others took past the head read: read both again; a head that stays behind (a client
			 * that moved it back) is an empty SRQ. */
			if (++behind == 8)
				return 0;
			continue;
		}
		if (head - t > wq->wqe_cnt) {
			srq_fail(srq, head);
			return -1;
		}
		/* Copied before the WQE is claimed: the slot is the poster's again only once taken moves past
		 * it, so a copy whose claim succeeds is of the WQE posted there. */
		out->nb_sge = rnic_recv_wqe_copy(sge, srq->max_sge, rnic_wq_slot(wq, t), wq->stride);
		out->wr_id = wq->wrid[t & (wq->wqe_cnt - 1)];
		out->index = t;
	} while (!__atomic_compare_exchange_n(&srq->taken, &t, t + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	publish_taken(srq, t + 1);
	check_limit(srq, t + 1);
	return 1;
}
