/* SPDX-License-Identifier: BSD-3-Clause
 * The library as rnicd uses it (rnic_daemon.h).
 */
#include <errno.h>
#include <string.h>

#include "rnic_cq.h"
#include "rnic_daemon.h"
#include "rnic_mr.h"
#include "rnic_qp.h"
#include "rnic_srq.h"

void
rnic_daemon_device_info(const struct rnic_device *dev, struct rnicd_dev_info *info)
{
	memcpy(info->name, dev->name, sizeof(info->name));
	info->guid = dev->guid;
	info->lim = dev->lim;
	memcpy(info->gid, dev->gid, sizeof(info->gid));
	info->gid_count = dev->gid_count;
	info->active_mtu = dev->active_mtu;
}

void
rnic_daemon_context_bind(struct rnic_context *context, const struct rnic_hostmem_ops *hostmem, void *arg,
			 uint32_t client, uint32_t tenant, uint32_t sgid_mask)
{
	struct rnic_context_priv *ctx = rnic_context_priv(context);

	ctx->hostmem = hostmem;
	ctx->hostmem_arg = arg;
	ctx->owner = client;
	ctx->tenant = tenant;
	ctx->sgid_mask = sgid_mask;
}

int
rnic_daemon_attach_dbq(struct rnic_context *context, struct rnic_dbq *q, uint32_t size)
{
	struct rnic_context_priv *ctx = rnic_context_priv(context);

	return rnic_device_attach_dbq(ctx->dev, q, size, ctx->owner, ctx->tenant);
}

void
rnic_daemon_detach_dbq(struct rnic_context *context, struct rnic_dbq *q)
{
	rnic_device_detach_dbq(rnic_ctx_dev(context), q);
}

struct rnic_mr *
rnic_daemon_reg_mr(struct rnic_pd *pd, void *addr, void *host, size_t length, int access)
{
	return rnic_mr_reg_host(pd, addr, host, length, access);
}

void
rnic_daemon_cq_hif(struct rnic_cq *pub, struct rnic_daemon_cq_hif *out)
{
	const struct rnic_cq_priv *cq = rnic_cq_priv(pub);

	out->cqn = cq->cqn;
	out->nent = 1u << cq->log_nent;
	out->block = cq->cqes;
}

void
rnic_daemon_qp_hif(struct rnic_qp *pub, struct rnic_daemon_qp_hif *out)
{
	const struct rnic_qp_priv *qp = rnic_qp_priv(pub);

	out->sq_cnt = qp->sq.wqe_cnt;
	out->sq_stride = qp->sq.stride;
	out->rq_cnt = qp->rq.wqe_cnt;
	out->rq_stride = qp->rq.stride;
	out->block = qp->hif;
}

void
rnic_daemon_srq_hif(struct rnic_srq *pub, struct rnic_daemon_srq_hif *out)
{
	const struct rnic_srq_priv *srq = rnic_srq_priv(pub);

	out->srqn = srq->srqn;
	out->cnt = srq->wq.wqe_cnt;
	out->stride = srq->wq.stride;
	out->block = srq->hif;
}

int
rnic_daemon_tenant_stats(int index, uint32_t tenant, struct rnic_tenant_stats *out)
{
	const struct rnic_device *dev = rnic_engine_device(index);

	if (dev == NULL)
		return -ENODEV;
	rnic_device_tenant_stats(dev, tenant, out);
	return 0;
}

int
rnic_daemon_tenant_share(int index, uint32_t tenant, uint32_t share)
{
	struct rnic_device *dev = rnic_engine_device(index);

	if (dev == NULL)
		return -ENODEV;
	return rnic_device_tenant_share(dev, tenant, share);
}

int
rnic_daemon_tenant_cap(int index, uint32_t tenant, uint64_t bits_per_s, uint64_t msgs_per_s)
{
	struct rnic_device *dev = rnic_engine_device(index);

	if (dev == NULL)
		return -ENODEV;
	return rnic_device_tenant_cap(dev, tenant, bits_per_s, msgs_per_s);
}
