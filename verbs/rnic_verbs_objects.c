/* SPDX-License-Identifier: BSD-3-Clause
 * The interposer's control verbs on PDs, MRs, completion channels, CQs, QPs and AHs: each makes the rnic_
 * object and the ibv_ view the program holds (rnic_verbs.h). Exported under libibverbs' names and symbol
 * versions (rnic_verbs.map).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rnic_verbs.h"

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	struct rnic_verbs_pd *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	p->pd = rnic_alloc_pd(rnic_verbs_ctx(context)->ctx);
	if (p->pd == NULL) {
		free(p);
		return NULL;
	}
	p->ibv.context = context;
	p->ibv.handle = p->pd->handle;
	rnic_verbs_track(context, RNIC_VERBS_PD, &p->link);
	return &p->ibv;
}

int
ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct rnic_verbs_pd *p = rnic_verbs_pd(pd);
	int ret = rnic_dealloc_pd(p->pd);

	if (ret != 0)
		return ret;
	rnic_verbs_untrack(pd->context, &p->link);
	free(p);
	return 0;
}

/* ibv_reg_mr_iova2 with iova == addr: softrnic's MRs are addressed by virtual address (doc/mr.md). */
static struct ibv_mr *
rnic_verbs_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	struct rnic_verbs_mr *m;

	if (iova != (uintptr_t)addr || (access & IBV_ACCESS_OPTIONAL_RANGE & ~IBV_ACCESS_RELAXED_ORDERING)) {
		errno = EOPNOTSUPP;	/* zero-based or shifted IOVAs, and ODP-like optional flags */
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* Relaxed ordering is a hint a device may ignore (verbs.h): softrnic's writes are in order anyway. */
	m->mr = rnic_reg_mr(rnic_verbs_pd(pd)->pd, addr, length, (int)(access & ~IBV_ACCESS_RELAXED_ORDERING));
	if (m->mr == NULL) {
		free(m);
		return NULL;
	}
	m->ibv.context = pd->context;
	m->ibv.pd = pd;
	m->ibv.addr = addr;
	m->ibv.length = length;
	m->ibv.handle = m->mr->handle;
	m->ibv.lkey = m->mr->lkey;
	m->ibv.rkey = m->mr->rkey;
	rnic_verbs_track(pd->context, RNIC_VERBS_MR, &m->link);
	return &m->ibv;
}

#undef ibv_reg_mr
struct ibv_mr *
ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return rnic_verbs_reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *
ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return rnic_verbs_reg_mr(pd, addr, length, iova, (unsigned int)access);
}

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	return rnic_verbs_reg_mr(pd, addr, length, iova, access);
}

int
ibv_dereg_mr(struct ibv_mr *mr)
{
	struct rnic_verbs_mr *m = RNIC_VERBS_CONTAINER(mr, struct rnic_verbs_mr, ibv);
	int ret = rnic_dereg_mr(m->mr);

	if (ret != 0)
		return ret;
	rnic_verbs_untrack(mr->context, &m->link);
	free(m);
	return 0;
}

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct rnic_verbs_channel *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch = rnic_create_comp_channel(rnic_verbs_ctx(context)->ctx);
	if (c->ch == NULL) {
		free(c);
		return NULL;
	}
	c->ibv.context = context;
	c->ibv.fd = c->ch->fd;
	rnic_verbs_track(context, RNIC_VERBS_CHANNEL, &c->link);
	return &c->ibv;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct rnic_verbs_channel *c = RNIC_VERBS_CONTAINER(channel, struct rnic_verbs_channel, ibv);
	int ret = rnic_destroy_comp_channel(c->ch);

	if (ret != 0)
		return ret;
	rnic_verbs_untrack(channel->context, &c->link);
	free(c);
	return 0;
}

/* A CQ and both its views (ibv_create_cq, ibv_create_cq_ex: the caller sets the extended entries). */
struct rnic_verbs_cq *
rnic_verbs_new_cq(struct ibv_context *context, int cqe, void *cq_context, struct ibv_comp_channel *channel,
		  int comp_vector)
{
	struct rnic_verbs_cq *q = calloc(1, sizeof(*q));
	struct rnic_comp_channel *ch = NULL;

	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (channel != NULL)
		ch = RNIC_VERBS_CONTAINER(channel, struct rnic_verbs_channel, ibv)->ch;
	q->cq = rnic_create_cq(rnic_verbs_ctx(context)->ctx, cqe, q, ch, comp_vector);
	if (q->cq == NULL) {
		free(q);
		return NULL;
	}
	q->ibv.context = context;
	q->ibv.channel = channel;
	q->ibv.cq_context = cq_context;
	q->ibv.handle = q->cq->handle;
	q->ibv.cqe = q->cq->cqe;
	pthread_mutex_init(&q->ibv.mutex, NULL);
	pthread_cond_init(&q->ibv.cond, NULL);
	rnic_verbs_track(context, RNIC_VERBS_CQ, &q->link);
	return q;
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context, struct ibv_comp_channel *channel,
	      int comp_vector)
{
	struct rnic_verbs_cq *q = rnic_verbs_new_cq(context, cqe, cq_context, channel, comp_vector);

	return q != NULL ? &q->ibv : NULL;
}

int
ibv_destroy_cq(struct ibv_cq *cq)
{
	struct rnic_verbs_cq *q = rnic_verbs_cq(cq);
	int ret = rnic_destroy_cq(q->cq);

	if (ret != 0)
		return ret;
	rnic_verbs_untrack(cq->context, &q->link);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(q);
	return 0;
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct rnic_cq *rcq;
	void *ctx;
	struct rnic_verbs_cq *q;

	if (rnic_get_cq_event(RNIC_VERBS_CONTAINER(channel, struct rnic_verbs_channel, ibv)->ch, &rcq, &ctx) != 0)
		return -1;
	q = ctx;	/* the rnic_ CQ's context is its ibv_ view */
	q->events_taken++;
	*cq = &q->ibv;
	*cq_context = q->ibv.cq_context;
	return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	rnic_ack_cq_events(rnic_verbs_cq(cq)->cq, nevents);
}

/* ibv_create_qp, and ibv_create_qp_ex (which checked attr's comp_mask): a PD's RC, UC or UD QP. */
struct ibv_qp *
rnic_verbs_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct rnic_verbs_qp *q;
	struct rnic_qp_init_attr ia;

	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;	/* XRC, raw packet, driver QPs */
		return NULL;
	}
	if (attr->send_cq == NULL || attr->recv_cq == NULL) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ia = (struct rnic_qp_init_attr){
		.qp_context = q,
		.send_cq = rnic_verbs_cq(attr->send_cq)->cq,
		.recv_cq = rnic_verbs_cq(attr->recv_cq)->cq,
		.srq = attr->srq != NULL ? rnic_verbs_srq(attr->srq)->srq : NULL,
		.qp_type = (enum rnic_qp_type)attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
	};
	memcpy(&ia.cap, &attr->cap, sizeof(ia.cap));	/* the same struct (rnic_verbs_abi.c) */
	q->qp = rnic_create_qp(rnic_verbs_pd(attr->pd)->pd, &ia);
	if (q->qp == NULL) {
		free(q);
		return NULL;
	}
	memcpy(&attr->cap, &ia.cap, sizeof(attr->cap));	/* what the QP got, as libibverbs reports it */
	q->ibv = (struct ibv_qp){
		.context = context, .qp_context = attr->qp_context, .pd = attr->pd,
		.send_cq = attr->send_cq, .recv_cq = attr->recv_cq, .srq = attr->srq, .handle = q->qp->handle,
		.qp_num = q->qp->qp_num, .state = IBV_QPS_RESET, .qp_type = attr->qp_type,
	};
	pthread_mutex_init(&q->ibv.mutex, NULL);
	pthread_cond_init(&q->ibv.cond, NULL);
	rnic_verbs_track(context, RNIC_VERBS_QP, &q->link);
	return &q->ibv;
}

struct ibv_qp *
ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context, .send_cq = attr->send_cq, .recv_cq = attr->recv_cq,
		.srq = attr->srq, .cap = attr->cap, .qp_type = attr->qp_type, .sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
	};
	struct ibv_qp *qp = rnic_verbs_create_qp(pd->context, &ex);

	if (qp != NULL)
		attr->cap = ex.cap;
	return qp;
}

/* ibv_qp_attr is rnic_qp_attr field for field, its AH attributes included (rnic_verbs_abi.c checks). */
int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct rnic_verbs_qp *q = rnic_verbs_qp(qp);
	int ret = rnic_modify_qp(q->qp, (struct rnic_qp_attr *)attr, attr_mask);

	if (ret == 0)
		qp->state = (enum ibv_qp_state)q->qp->state;
	return ret;
}

/*
 * ibv_modify_qp_rate_limit: the QP's rate_limit (kbit/s, 0: none) without a change of state, as mlx5 (an
 * RTS -> RTS modify: a QP in another state is refused). Its pacer keeps its own bucket (doc/congestion.md),
 * so a burst size or typical packet size is refused as by an mlx5 device without burst control, and so is a
 * comp_mask (none is defined).
 */
int
rnic_verbs_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr)
{
	struct rnic_qp_attr a = { .rate_limit = attr->rate_limit };

	if (attr->comp_mask != 0 || attr->max_burst_sz != 0 || attr->typical_pkt_sz != 0)
		return EINVAL;
	return rnic_modify_qp(rnic_verbs_qp(qp)->qp, &a, RNIC_QP_RATE_LIMIT);
}

int
ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct rnic_qp_init_attr ia;
	int ret = rnic_query_qp(rnic_verbs_qp(qp)->qp, (struct rnic_qp_attr *)attr, attr_mask, &ia);

	if (ret != 0)
		return ret;
	qp->state = attr->qp_state;
	*init_attr = (struct ibv_qp_init_attr){
		.qp_context = qp->qp_context, .send_cq = qp->send_cq, .recv_cq = qp->recv_cq, .srq = qp->srq,
		.qp_type = qp->qp_type, .sq_sig_all = ia.sq_sig_all,
	};
	memcpy(&init_attr->cap, &ia.cap, sizeof(init_attr->cap));
	return 0;
}

int
ibv_destroy_qp(struct ibv_qp *qp)
{
	struct rnic_verbs_qp *q = rnic_verbs_qp(qp);
	int ret = rnic_destroy_qp(q->qp);

	if (ret != 0)
		return ret;
	rnic_verbs_untrack(qp->context, &q->link);
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free(q);
	return 0;
}

struct ibv_ah *
ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct rnic_verbs_ah *a = calloc(1, sizeof(*a));

	if (a == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	a->ah = rnic_create_ah(rnic_verbs_pd(pd)->pd, (struct rnic_ah_attr *)attr);
	if (a->ah == NULL) {
		free(a);
		return NULL;
	}
	a->ibv.context = pd->context;
	a->ibv.pd = pd;
	a->ibv.handle = a->ah->handle;
	rnic_verbs_track(pd->context, RNIC_VERBS_AH, &a->link);
	return &a->ibv;
}

int
ibv_destroy_ah(struct ibv_ah *ah)
{
	struct rnic_verbs_ah *a = RNIC_VERBS_CONTAINER(ah, struct rnic_verbs_ah, ibv);
	int ret = rnic_destroy_ah(a->ah);

	if (ret != 0)
		return ret;
	rnic_verbs_untrack(ah->context, &a->link);
	free(a);
	return 0;
}
