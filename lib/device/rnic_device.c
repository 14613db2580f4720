/* SPDX-License-Identifier: BSD-3-Clause
 * Devices, contexts, protection domains, address handles and async events.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "rnic_priv.h"
#include "rnic_cq.h"
#include "rnic_mr.h"
#include "rnic_qp.h"
#include "rnic_dbq.h"
#include "rnic_provider.h"

#define ASYNC_RING_SIZE 256

int
rnic_device_attach_dbq(struct rnic_device *dev, struct rnic_dbq *q, uint32_t size, uint32_t owner,
		       uint32_t tenant)
{
	int ret = -ENOSPC;

	if (size == 0 || (size & (size - 1)) != 0 || tenant >= RNIC_MAX_TENANTS)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < RNIC_MAX_CLIENT_DBQ; i++) {
		struct rnic_dbq_reader *r = &dev->client_dbq[i];

		if (r->q != NULL)
			continue;
		r->mask = size - 1;
		r->cons = __atomic_load_n(&q->cons, __ATOMIC_ACQUIRE);
		r->owner = owner;
		r->tenant = tenant;
		__atomic_store_n(&r->q, q, __ATOMIC_RELEASE);
		if (i >= dev->nb_client_dbq)
			__atomic_store_n(&dev->nb_client_dbq, i + 1, __ATOMIC_RELEASE);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

void
rnic_device_detach_dbq(struct rnic_device *dev, struct rnic_dbq *q)
{
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < dev->nb_client_dbq; i++)
		if (dev->client_dbq[i].q == q)
			__atomic_store_n(&dev->client_dbq[i].q, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dev->lock);
	/* The doorbell stage may still be reading the queue it found before; its memory goes next. */
	for (int tries = 0; rnic_engine_quiesce() < 0; tries++) {
		if (tries == 10) {
			RNIC_LOG(WARNING, "%s: engine did not quiesce; doorbell queue detached anyway", dev->name);
			break;
		}
	}
}

struct rnic_device **
rnic_get_device_list(int *num_devices)
{
	const struct rnic_provider *provider = rnic_provider_get();
	int n = provider == NULL ? 0 : provider->device_count();
	struct rnic_device **list;

	list = calloc((size_t)n + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		list[i] = provider->device(i);
	if (num_devices != NULL)
		*num_devices = n;
	return list;
}

void
rnic_free_device_list(struct rnic_device **list)
{
	free(list);
}

const char *
rnic_get_device_name(struct rnic_device *device)
{
	return device == NULL ? NULL : device->name;
}

uint64_t
rnic_get_device_guid(struct rnic_device *device)
{
	return device == NULL ? 0 : device->guid;
}

static struct rnic_context *
local_open_device(struct rnic_device *device)
{
	struct rnic_context_priv *ctx;
	char name[RTE_RING_NAMESIZE];

	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	snprintf(name, sizeof(name), "rnic_ev_%p", (void *)ctx);
	if (rnic_evq_create(&ctx->async, name, sizeof(struct rnic_async_event), ASYNC_RING_SIZE,
			    device->socket_id) != 0) {
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	ctx->pub.async_fd = ctx->async.fd;
	ctx->pub.device = device;
	ctx->pub.num_comp_vectors = 1;
	ctx->dev = device;
	pthread_mutex_lock(&device->lock);
	device->open_contexts++;
	pthread_mutex_unlock(&device->lock);
	return &ctx->pub;
}

struct rnic_context *
rnic_open_device(struct rnic_device *device)
{
	if (device == NULL) {
		errno = EINVAL;
		return NULL;
	}
	return device->ops->open_device(device);
}

static int
local_close_device(struct rnic_context *context)
{
	struct rnic_context_priv *ctx = rnic_context_priv(context);

	pthread_mutex_lock(&ctx->dev->lock);
	ctx->dev->open_contexts--;
	pthread_mutex_unlock(&ctx->dev->lock);
	rnic_evq_free(&ctx->async);
	free(ctx);
	return 0;
}

int
rnic_close_device(struct rnic_context *context)
{
	struct rnic_context_priv *ctx;

	if (context == NULL)
		return EINVAL;
	ctx = rnic_context_priv(context);
	if (__atomic_load_n(&ctx->nb_objects, __ATOMIC_RELAXED) != 0)
		return EBUSY;	/* nothing is freed: the application destroys its objects first */
	return rnic_ctx_ops(context)->close_device(context);
}

int
rnic_query_device(struct rnic_context *context, struct rnic_device_attr *attr)
{
	const struct rnic_device *dev;
	const struct rnic_limits *lim;

	if (context == NULL || attr == NULL)
		return EINVAL;
	dev = rnic_ctx_dev(context);
	lim = &dev->lim;
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "softrnic %s", RNIC_VERSION);
	attr->node_guid = dev->guid;
	attr->sys_image_guid = dev->guid;
	attr->max_mr_size = lim->max_mr_size;
	attr->page_size_cap = 4096;
	attr->max_qp = (int)lim->max_qp;
	attr->max_qp_wr = (int)lim->max_qp_wr;
	attr->max_sge = (int)lim->max_sge;
	attr->max_sge_rd = (int)lim->max_sge;
	attr->max_cq = (int)lim->max_cq;
	attr->max_cqe = (int)lim->max_cqe;
	attr->max_mr = (int)lim->max_mr;
	attr->max_pd = (int)lim->max_pd;
	attr->max_qp_rd_atom = (int)lim->max_qp_rd_atom;
	attr->max_res_rd_atom = (int)(lim->max_qp_rd_atom * lim->max_qp);
	attr->max_qp_init_rd_atom = (int)lim->max_qp_rd_atom;
	attr->atomic_cap = RNIC_ATOMIC_HCA;
	attr->max_ah = (int)lim->max_ah;
	attr->max_srq = (int)lim->max_qp;	/* as many SRQs as QPs, each as deep and wide as a QP's RQ */
	attr->max_srq_wr = (int)lim->max_qp_wr;
	attr->max_srq_sge = (int)lim->max_sge;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	attr->phys_port_cnt = 1;
	attr->max_inline_data = lim->max_inline_data;
	return 0;
}

static int
local_query_port(struct rnic_context *context, struct rnic_port_attr *attr)
{
	const struct rnic_device *dev = rnic_ctx_dev(context);
	struct rte_eth_link link;

	memset(attr, 0, sizeof(*attr));
	if (rte_eth_link_get_nowait(dev->port_id, &link) != 0)
		link.link_status = RTE_ETH_LINK_DOWN;
	attr->state = link.link_status == RTE_ETH_LINK_UP ? RNIC_PORT_ACTIVE : RNIC_PORT_DOWN;
	attr->phys_state = link.link_status == RTE_ETH_LINK_UP ? 5 : 3;	/* LinkUp / Disabled */
	attr->max_mtu = RNIC_MTU_4096;
	attr->active_mtu = dev->active_mtu;
	attr->gid_tbl_len = RNIC_GID_TBL_LEN;
	attr->max_msg_sz = RNIC_MAX_MSG_SIZE;
	attr->pkey_tbl_len = 1;
	attr->link_layer = RNIC_LINK_LAYER_ETHERNET;
	return 0;
}

int
rnic_query_port(struct rnic_context *context, uint8_t port_num, struct rnic_port_attr *attr)
{
	if (context == NULL || attr == NULL || port_num != 1)
		return EINVAL;
	return rnic_ctx_ops(context)->query_port(context, attr);
}

int
rnic_query_gid(struct rnic_context *context, uint8_t port_num, int index, union rnic_gid *gid)
{
	const struct rnic_device *dev;

	if (context == NULL || gid == NULL || port_num != 1)
		return EINVAL;
	dev = rnic_ctx_dev(context);
	if (index < 0 || index >= RNIC_GID_TBL_LEN)
		return EINVAL;
	/* Unused GID table entries read as zero, as on hardware. */
	if (index >= dev->gid_count)
		memset(gid, 0, sizeof(*gid));
	else
		*gid = dev->gid[index];
	return 0;
}

static int
local_get_async_event(struct rnic_context *context, struct rnic_async_event *event)
{
	return rnic_evq_get(&rnic_context_priv(context)->async, event, sizeof(*event));
}

/* As ibv_get_async_event: blocks unless async_fd was made non-blocking; returns 0, or -1 with errno. */
int
rnic_get_async_event(struct rnic_context *context, struct rnic_async_event *event)
{
	if (context == NULL || event == NULL) {
		errno = EINVAL;
		return -1;
	}
	return rnic_ctx_ops(context)->get_async_event(context, event);
}

void
rnic_ack_async_event(struct rnic_async_event *event)
{
	if (event == NULL)
		return;
	switch (event->event_type) {
	case RNIC_EVENT_CQ_ERR:
		__atomic_fetch_add(&event->element.cq->async_events_completed, 1, __ATOMIC_RELEASE);
		break;
	case RNIC_EVENT_QP_FATAL:
	case RNIC_EVENT_QP_REQ_ERR:
	case RNIC_EVENT_QP_ACCESS_ERR:
	case RNIC_EVENT_COMM_EST:
	case RNIC_EVENT_SQ_DRAINED:
	case RNIC_EVENT_QP_LAST_WQE_REACHED:
		__atomic_fetch_add(&event->element.qp->events_completed, 1, __ATOMIC_RELEASE);
		break;
	case RNIC_EVENT_SRQ_ERR:
	case RNIC_EVENT_SRQ_LIMIT_REACHED:
		__atomic_fetch_add(&event->element.srq->events_completed, 1, __ATOMIC_RELEASE);
		break;
	default:
		break;
	}
}

static struct rnic_pd *
local_alloc_pd(struct rnic_context *context)
{
	struct rnic_device *dev = rnic_ctx_dev(context);
	struct rnic_pd_priv *pd;

	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->pd_count == dev->lim.max_pd) {
		pthread_mutex_unlock(&dev->lock);
		RNIC_LOG(DEBUG, "%s: max_pd (%u) reached", dev->name, dev->lim.max_pd);
		free(pd);
		errno = ENOMEM;
		return NULL;
	}
	dev->pd_count++;
	/* PD numbers are never reused, so a stale PD number cannot match a new PD. */
	pd->pdn = dev->next_pdn++;
	pthread_mutex_unlock(&dev->lock);
	pd->pub.context = context;
	pd->pub.handle = pd->pdn;
	return &pd->pub;
}

struct rnic_pd *
rnic_alloc_pd(struct rnic_context *context)
{
	struct rnic_pd *pd;

	if (context == NULL) {
		errno = EINVAL;
		return NULL;
	}
	pd = rnic_ctx_ops(context)->alloc_pd(context);
	if (pd != NULL)
		rnic_ctx_hold(context);
	return pd;
}

static int
local_dealloc_pd(struct rnic_pd *pd)
{
	struct rnic_pd_priv *p = rnic_pd_priv(pd);
	struct rnic_device *dev = rnic_ctx_dev(pd->context);
	if (!rnic_engine_users_gone(&p->refcnt))
		return EBUSY;
	pthread_mutex_lock(&dev->lock);
	dev->pd_count--;
	pthread_mutex_unlock(&dev->lock);
	free(p);
	return 0;
}

int
rnic_dealloc_pd(struct rnic_pd *pd)
{
	struct rnic_context *context;
	int ret;

	if (pd == NULL)
		return EINVAL;
	context = pd->context;
	ret = rnic_ctx_ops(context)->dealloc_pd(pd);
	if (ret == 0)
		rnic_ctx_release(context);
	return ret;
}

struct rnic_ah *
rnic_create_ah(struct rnic_pd *pd, struct rnic_ah_attr *attr)
{
	struct rnic_device *dev;
	struct rnic_ah_priv *ah;
	static const union rnic_gid zero_gid;

	if (pd == NULL || attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	dev = rnic_ctx_dev(pd->context);
	/* RoCE addresses by GID: an AH without a GRH, or with an unset source/destination GID, is invalid. */
	if (!attr->is_global || attr->port_num != 1 || attr->grh.sgid_index >= dev->gid_count ||
	    memcmp(&attr->grh.dgid, &zero_gid, sizeof(zero_gid)) == 0) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->ah_count == dev->lim.max_ah) {
		pthread_mutex_unlock(&dev->lock);
		free(ah);
		errno = ENOMEM;
		return NULL;
	}
	dev->ah_count++;
	pthread_mutex_unlock(&dev->lock);
	rnic_engine_route_prepare(dev, &attr->grh.dgid);	/* its sends need the MAC: ARP/ND now (rnic_neigh.h) */
	ah->attr = *attr;
	ah->pub.context = pd->context;
	ah->pub.pd = pd;
	rnic_pd_get(pd);
	return &ah->pub;
}

int
rnic_destroy_ah(struct rnic_ah *ah)
{
	struct rnic_device *dev;

	if (ah == NULL)
		return EINVAL;
	dev = rnic_ctx_dev(ah->context);
	pthread_mutex_lock(&dev->lock);
	dev->ah_count--;
	pthread_mutex_unlock(&dev->lock);
	rnic_pd_put(ah->pd);
	free(ah);
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The local provider: the engine of this process carries out the verbs (rnic_provider.h)                  */

static const struct rnic_provider_ops local_ops = {
	.name = "local",
	.open_device = local_open_device,
	.close_device = local_close_device,
	.query_port = local_query_port,
	.query_device_counters = rnic_local_query_device_counters,
	.set_cc = rnic_local_set_cc,
	.get_async_event = local_get_async_event,
	.alloc_pd = local_alloc_pd,
	.dealloc_pd = local_dealloc_pd,
	.reg_mr = rnic_local_reg_mr,
	.dereg_mr = rnic_local_dereg_mr,
	.create_comp_channel = rnic_local_create_comp_channel,
	.destroy_comp_channel = rnic_local_destroy_comp_channel,
	.get_cq_event = rnic_local_get_cq_event,
	.deliver_cq_event = rnic_local_deliver_cq_event,
	.create_cq = rnic_local_create_cq,
	.destroy_cq = rnic_local_destroy_cq,
	.create_qp = rnic_local_create_qp,
	.modify_qp = rnic_local_modify_qp,
	.query_qp = rnic_local_query_qp,
	.destroy_qp = rnic_local_destroy_qp,
	.query_qp_counters = rnic_local_query_qp_counters,
	.create_srq = rnic_local_create_srq,
	.modify_srq = rnic_local_modify_srq,
	.query_srq = rnic_local_query_srq,
	.destroy_srq = rnic_local_destroy_srq,
};

static const struct rnic_provider local_provider = {
	.name = "local",
	.remote = 0,
	.ops = &local_ops,
	.device_count = rnic_engine_device_count,
	.device = rnic_engine_device,
};

RTE_INIT(rnic_local_provider_register)
{
	rnic_provider_register(&local_provider);
}
