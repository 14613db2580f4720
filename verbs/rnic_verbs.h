/* SPDX-License-Identifier: BSD-3-Clause
 * libsoftrnic-verbs: the libibverbs interposer's objects (doc/verbs.md).
 *
 * A program built against libibverbs (rdma-core 44's ABI, <infiniband/verbs.h>) holds struct ibv_* objects
 * and calls into them two ways: through exported functions (ibv_open_device, ibv_create_qp...), which this
 * library defines with libibverbs' symbol versions and so takes over when preloaded, and through the
 * context's function pointers, which verbs.h's inline functions call directly (ibv_post_send, ibv_poll_cq,
 * ibv_query_port, ibv_query_device_ex...). Each ibv_ object here is the program's view of one rnic_ object:
 * the ibv_ struct first, the rnic_ object it stands for after it. The rnic_* verbs carry out the work, each
 * through the provider of its device (lib/rnic_provider.h).
 */
#ifndef RNIC_VERBS_H
#define RNIC_VERBS_H

#include <stddef.h>

#include <infiniband/verbs.h>

#include "rnic.h"

#define RNIC_VERBS_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct rnic_verbs_device {
	struct ibv_device ibv;
	struct rnic_device *dev;
};

/* libibverbs finds struct verbs_context just before struct ibv_context (verbs_get_ctx): the ibv_context
 * must be the verbs_context's last field, and the verbs_context this object's last. */
struct rnic_verbs_context {
	struct rnic_context *ctx;
	struct verbs_context vctx;
};

struct rnic_verbs_pd {
	struct ibv_pd ibv;
	struct rnic_pd *pd;
};

struct rnic_verbs_mr {
	struct ibv_mr ibv;
	struct rnic_mr *mr;
};

struct rnic_verbs_channel {
	struct ibv_comp_channel ibv;
	struct rnic_comp_channel *ch;
};

/* The rnic_ CQ's cq_context is this object: a completion event names the ibv_cq and the program's context. */
struct rnic_verbs_cq {
	struct ibv_cq ibv;
	struct rnic_cq *cq;
};

struct rnic_verbs_qp {
	struct ibv_qp ibv;
	struct rnic_qp *qp;
};

/* The rnic_ SRQ's srq_context is this object: an SRQ event names the ibv_srq. */
struct rnic_verbs_srq {
	struct ibv_srq ibv;
	struct rnic_srq *srq;
};

struct rnic_verbs_ah {
	struct ibv_ah ibv;
	struct rnic_ah *ah;
};

static inline struct rnic_verbs_context *
rnic_verbs_ctx(struct ibv_context *context)
{
	return RNIC_VERBS_CONTAINER(context, struct rnic_verbs_context, vctx.context);
}

static inline struct rnic_verbs_pd *
rnic_verbs_pd(struct ibv_pd *pd)
{
	return RNIC_VERBS_CONTAINER(pd, struct rnic_verbs_pd, ibv);
}

static inline struct rnic_verbs_cq *
rnic_verbs_cq(struct ibv_cq *cq)
{
	return RNIC_VERBS_CONTAINER(cq, struct rnic_verbs_cq, ibv);
}

static inline struct rnic_verbs_qp *
rnic_verbs_qp(struct ibv_qp *qp)
{
	return RNIC_VERBS_CONTAINER(qp, struct rnic_verbs_qp, ibv);
}

static inline struct rnic_verbs_srq *
rnic_verbs_srq(struct ibv_srq *srq)
{
	return RNIC_VERBS_CONTAINER(srq, struct rnic_verbs_srq, ibv);
}

/* The engine of the process, brought up on first use from SOFTRNIC_ARGS (rnic_verbs_engine.c): 0 or an errno. */
int rnic_verbs_engine_up(void);

/* The context's function pointers (rnic_verbs_datapath.c: the fast paths; rnic_verbs_unsupported.c: every
 * other entry, EOPNOTSUPP). */
void rnic_verbs_set_datapath_ops(struct ibv_context_ops *ops);
void rnic_verbs_set_unsupported_ops(struct verbs_context *vctx);

/* verbs_context entries that rnic_verbs_device.c implements. */
int rnic_verbs_query_port_ex(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
			     size_t attr_len);
struct ibv_srq *rnic_verbs_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
int rnic_verbs_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);

#endif /* RNIC_VERBS_H */
