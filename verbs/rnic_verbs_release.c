/* SPDX-License-Identifier: BSD-3-Clause
 * What a context holds, and its release at ibv_close_device: a process that closes its verbs device with
 * objects left (perftest's ib_send_bw does) has them released by the kernel, which keeps every object's
 * uobject on the file it closes; the interposer keeps each object in its kind's list for the same end, and
 * releases them in rnic_verbs_kind's order before rnic_close_device, which still refuses a context with
 * objects left (doc/verbs.md). Control path only: the lists take a mutex, posts and polls never touch them.
 */
#include <errno.h>

#include "rnic_verbs.h"

void
rnic_verbs_track(struct ibv_context *context, enum rnic_verbs_kind kind, struct rnic_verbs_obj *obj)
{
	struct rnic_verbs_context *c = rnic_verbs_ctx(context);
	struct rnic_verbs_obj *head = &c->objs[kind];

	pthread_mutex_lock(&c->objs_lock);
	obj->next = head->next;
	obj->prev = head;
	head->next->prev = obj;
	head->next = obj;
	pthread_mutex_unlock(&c->objs_lock);
}

void
rnic_verbs_untrack(struct ibv_context *context, struct rnic_verbs_obj *obj)
{
	struct rnic_verbs_context *c = rnic_verbs_ctx(context);

	pthread_mutex_lock(&c->objs_lock);
	obj->prev->next = obj->next;
	obj->next->prev = obj->prev;
	obj->next = obj->prev = obj;
	pthread_mutex_unlock(&c->objs_lock);
}

static int
release_qp(struct rnic_verbs_obj *o)
{
	return ibv_destroy_qp(&RNIC_VERBS_CONTAINER(o, struct rnic_verbs_qp, link)->ibv);
}

static int
release_srq(struct rnic_verbs_obj *o)
{
	return ibv_destroy_srq(&RNIC_VERBS_CONTAINER(o, struct rnic_verbs_srq, link)->ibv);
}

static int
release_ah(struct rnic_verbs_obj *o)
{
	return ibv_destroy_ah(&RNIC_VERBS_CONTAINER(o, struct rnic_verbs_ah, link)->ibv);
}

static int
release_mr(struct rnic_verbs_obj *o)
{
	return ibv_dereg_mr(&RNIC_VERBS_CONTAINER(o, struct rnic_verbs_mr, link)->ibv);
}

/* The completion events the program took and did not acknowledge are acknowledged first (the kernel drops
 * them with the file; rnic_destroy_cq refuses while they are out). */
static int
release_cq(struct rnic_verbs_obj *o)
{
	struct rnic_verbs_cq *q = RNIC_VERBS_CONTAINER(o, struct rnic_verbs_cq, link);
	unsigned int unacked = q->events_taken - q->cq->comp_events_completed;

	rnic_ack_cq_events(q->cq, unacked);
	return ibv_destroy_cq(&q->ibv);
}

static int
release_channel(struct rnic_verbs_obj *o)
{
	return ibv_destroy_comp_channel(&RNIC_VERBS_CONTAINER(o, struct rnic_verbs_channel, link)->ibv);
}

static int
release_pd(struct rnic_verbs_obj *o)
{
	return ibv_dealloc_pd(&RNIC_VERBS_CONTAINER(o, struct rnic_verbs_pd, link)->ibv);
}

static int (*const release_kind[RNIC_VERBS_KINDS])(struct rnic_verbs_obj *o) = {
	[RNIC_VERBS_QP] = release_qp,
	[RNIC_VERBS_SRQ] = release_srq,
	[RNIC_VERBS_AH] = release_ah,
	[RNIC_VERBS_MR] = release_mr,
	[RNIC_VERBS_CQ] = release_cq,
	[RNIC_VERBS_CHANNEL] = release_channel,
	[RNIC_VERBS_PD] = release_pd,
};

/* The first object of the list, or NULL. */
static struct rnic_verbs_obj *
first_obj(struct rnic_verbs_context *c, struct rnic_verbs_obj *head)
{
	struct rnic_verbs_obj *o;

	pthread_mutex_lock(&c->objs_lock);
	o = head->next != head ? head->next : NULL;
	pthread_mutex_unlock(&c->objs_lock);
	return o;
}

int
rnic_verbs_release_all(struct rnic_verbs_context *c)
{
	for (int kind = 0; kind < RNIC_VERBS_KINDS; kind++) {
		struct rnic_verbs_obj *o;

		/* Each release unlinks its object (its destroy verb untracks it): the list shrinks every turn. */
		while ((o = first_obj(c, &c->objs[kind])) != NULL) {
			int ret = release_kind[kind](o);

			if (ret != 0)
				return ret;
		}
	}
	return 0;
}
