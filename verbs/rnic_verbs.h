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

#include <pthread.h>
#include <stddef.h>

#include <infiniband/verbs.h>

#include "rnic.h"
#include "rnic_send_batch.h"

#define RNIC_VERBS_CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct rnic_verbs_device {
	struct ibv_device ibv;
	struct rnic_device *dev;
};

/*
 * The objects of a context, one list per kind (rnic_verbs_release.c), so that closing the context releases
 * what the program left on it, as the kernel does when a process closes its verbs device. The kinds in the
 * order they are released: an object is released before those it holds (a QP holds its CQs, SRQ and PD, a
 * CQ its channel, an SRQ, MR or AH its PD).
 */
enum rnic_verbs_kind {
	RNIC_VERBS_QP,
	RNIC_VERBS_SRQ,
	RNIC_VERBS_AH,
	RNIC_VERBS_MR,
	RNIC_VERBS_CQ,
	RNIC_VERBS_CHANNEL,
	RNIC_VERBS_PD,
	RNIC_VERBS_KINDS
};

struct rnic_verbs_obj {
	struct rnic_verbs_obj *prev, *next;
};

/* libibverbs finds struct verbs_context just before struct ibv_context (verbs_get_ctx): the ibv_context
 * must be the verbs_context's last field, and the verbs_context this object's last. */
struct rnic_verbs_context {
	struct rnic_context *ctx;
	pthread_mutex_t objs_lock;
	struct rnic_verbs_obj objs[RNIC_VERBS_KINDS];	/* each kind's list head */
	struct verbs_context vctx;
};

struct rnic_verbs_pd {
	struct ibv_pd ibv;
	struct rnic_pd *pd;
	struct rnic_verbs_obj link;
};

struct rnic_verbs_mr {
	struct ibv_mr ibv;
	struct rnic_mr *mr;
	struct rnic_verbs_obj link;
};

struct rnic_verbs_channel {
	struct ibv_comp_channel ibv;
	struct rnic_comp_channel *ch;
	struct rnic_verbs_obj link;
};

/* The rnic_ CQ's cq_context is this object: a completion event names the ibv_cq and the program's context.
 * An ibv_cq_ex begins with an ibv_cq (rnic_verbs_abi.c checks): every CQ has both views, the extended poll
 * entries are set on those made by ibv_create_cq_ex. */
struct rnic_verbs_cq {
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ex;
	};
	struct rnic_cq *cq;
	struct rnic_verbs_obj link;
	unsigned int events_taken;	/* completion events ibv_get_cq_event returned (the close acknowledges
					 * those the program did not) */
	struct ibv_wc wc;		/* the extended poll's current completion (ibv_start_poll / ibv_next_poll) */
};

/* An ibv_qp_ex begins with its ibv_qp: a QP made by ibv_create_qp_ex with send_ops_flags hands out the
 * extended view (ibv_qp_to_qp_ex), whose ibv_wr_* entries build a batch of send work requests. */
struct rnic_verbs_qp {
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex ex;
	};
	struct rnic_qp *qp;
	struct rnic_verbs_obj link;
	int has_ex;
	struct rnic_send_batch batch;	/* between ibv_wr_start and ibv_wr_complete / ibv_wr_abort */
};

/* The rnic_ SRQ's srq_context is this object: an SRQ event names the ibv_srq. */
struct rnic_verbs_srq {
	struct ibv_srq ibv;
	struct rnic_srq *srq;
	struct rnic_verbs_obj link;
};

struct rnic_verbs_ah {
	struct ibv_ah ibv;
	struct rnic_ah *ah;
	struct rnic_verbs_obj link;
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

/* Keep / forget an object of the context in its kind's list. */
void rnic_verbs_track(struct ibv_context *context, enum rnic_verbs_kind kind, struct rnic_verbs_obj *obj);
void rnic_verbs_untrack(struct ibv_context *context, struct rnic_verbs_obj *obj);
/* Release every object left on the context, in rnic_verbs_kind's order: 0, or the first error. */
int rnic_verbs_release_all(struct rnic_verbs_context *c);

/* A QP's or CQ's extended entries (rnic_verbs_qp_ex.c, rnic_verbs_cq_ex.c). */
struct ibv_qp *rnic_verbs_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *rnic_verbs_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_cq_ex *rnic_verbs_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
int rnic_verbs_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr);
struct rnic_verbs_cq *rnic_verbs_new_cq(struct ibv_context *context, int cqe, void *cq_context,
					struct ibv_comp_channel *channel, int comp_vector);

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
