/* SPDX-License-Identifier: BSD-3-Clause
 * What the verbs objects (MRs, CQs, QPs) share of their context and PD: its host memory, its async event
 * queue and the PD's reference count. Here, below them, so they need not call the device module above them
 * (doc/architecture.md).
 */
#include <errno.h>

#include <rte_malloc.h>

#include "rnic_priv.h"

void *
rnic_hostmem_alloc(struct rnic_context *context, size_t size)
{
	struct rnic_context_priv *ctx = rnic_context_priv(context);

	if (ctx->hostmem != NULL)
		return ctx->hostmem->alloc(ctx->hostmem_arg, size);
	return rte_zmalloc_socket("rnic_hostmem", size, RTE_CACHE_LINE_SIZE, ctx->dev->socket_id);
}

void
rnic_hostmem_free(struct rnic_context *context, void *ptr)
{
	struct rnic_context_priv *ctx = rnic_context_priv(context);

	if (ptr == NULL)
		return;
	if (ctx->hostmem != NULL)
		ctx->hostmem->free(ctx->hostmem_arg, ptr);
	else
		rte_free(ptr);
}

int
rnic_async_event_raise(struct rnic_context *context, enum rnic_event_type type, void *element)
{
	struct rnic_context_priv *ctx = rnic_context_priv(context);
	struct rnic_async_event ev = { .event_type = type };

	if (type == RNIC_EVENT_CQ_ERR)
		ev.element.cq = element;
	else
		ev.element.qp = element;
	if (rnic_evq_post(&ctx->async, &ev, sizeof(ev)) != 0) {
		RNIC_LOG_LIMITED(ERR, "%s: async event ring full, %s lost", ctx->dev->name, rnic_event_type_str(type));
		return -ENOSPC;
	}
	return 0;
}

void
rnic_pd_get(struct rnic_pd *pd)
{
	__atomic_fetch_add(&rnic_pd_priv(pd)->refcnt, 1, __ATOMIC_ACQ_REL);
}

void
rnic_pd_put(struct rnic_pd *pd)
{
	__atomic_fetch_sub(&rnic_pd_priv(pd)->refcnt, 1, __ATOMIC_ACQ_REL);
}
