/* SPDX-License-Identifier: BSD-3-Clause
 * The interposer's shared receive queues: ibv_create_srq (and the context's create_srq_ex, for the basic type),
 * ibv_modify_srq, ibv_query_srq, ibv_destroy_srq, each on an rnic_srq (rnic_verbs.h). ibv_post_srq_recv is
 * a fast path (rnic_verbs_datapath.c); a QP takes its SRQ in ibv_create_qp (rnic_verbs_objects.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rnic_verbs.h"

/* ibv_srq_init_attr is rnic_srq_init_attr (rnic_verbs_abi.c checks ibv_srq_attr; srq_context comes first in
 * both). */
_Static_assert(offsetof(struct ibv_srq_init_attr, attr) == offsetof(struct rnic_srq_init_attr, attr),
	       "ibv_srq_init_attr is rnic_srq_init_attr");

struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct rnic_verbs_srq *q = calloc(1, sizeof(*q));
	struct rnic_srq_init_attr ia;

	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* The rnic_ SRQ's context is its ibv_ view: an async event names the ibv_srq. */
	ia = (struct rnic_srq_init_attr){ .srq_context = q };
	memcpy(&ia.attr, &attr->attr, sizeof(ia.attr));	/* the same struct (rnic_verbs_abi.c) */
	q->srq = rnic_create_srq(rnic_verbs_pd(pd)->pd, &ia);
	if (q->srq == NULL) {
		free(q);
		return NULL;
	}
	memcpy(&attr->attr, &ia.attr, sizeof(attr->attr));	/* what it got, as libibverbs reports it */
	q->ibv.context = pd->context;
	q->ibv.srq_context = attr->srq_context;
	q->ibv.pd = pd;
	q->ibv.handle = q->srq->handle;
	pthread_mutex_init(&q->ibv.mutex, NULL);
	pthread_cond_init(&q->ibv.cond, NULL);
	return &q->ibv;
}

/* verbs.h's ibv_create_srq_ex calls ibv_create_srq itself for a basic SRQ of a PD; what reaches this entry is
 * anything else: XRC or tag-matching SRQs, or other attributes, which softrnic does not have. */
struct ibv_srq *
rnic_verbs_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	(void)context;
	if (attr->comp_mask == IBV_SRQ_INIT_ATTR_PD ||
	    (attr->comp_mask == (IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_BASIC))
		return ibv_create_srq(attr->pd, (struct ibv_srq_init_attr *)attr);
	errno = EOPNOTSUPP;
	return NULL;
}

int
ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask)
{
	return rnic_modify_srq(rnic_verbs_srq(srq)->srq, (struct rnic_srq_attr *)attr, attr_mask);
}

int
ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return rnic_query_srq(rnic_verbs_srq(srq)->srq, (struct rnic_srq_attr *)attr);
}

int
ibv_destroy_srq(struct ibv_srq *srq)
{
	struct rnic_verbs_srq *q = rnic_verbs_srq(srq);
	int ret = rnic_destroy_srq(q->srq);

	if (ret != 0)
		return ret;
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(q);
	return 0;
}
