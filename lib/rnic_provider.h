/* SPDX-License-Identifier: BSD-3-Clause
 * Verbs providers: who carries out a context's control verbs (doc/architecture.md, "Providers").
 *
 * As libibverbs' verbs_context_ops: the rnic_* verbs check their arguments, then call the provider of the
 * context's device. Two providers exist: the local one (the engine runs in this process; qp, cq, mr and
 * core implement its ops) and rnicd's client (lib/client: requests to the daemon, which runs the engine).
 * The data-path verbs (post_send, post_recv, poll_cq, req_notify_cq) are not in the table: both providers
 * lay out the same host-interface memory (in-process, or shared by rnicd), so one implementation serves
 * both, without an indirect call per post or poll. A verbs interposer maps libibverbs' context ops onto
 * this table.
 */
#ifndef RNIC_PROVIDER_H
#define RNIC_PROVIDER_H

#include <stddef.h>

#include "rnic.h"

struct rnic_device;

/* A device's provider: every member is set (a verb the provider lacks fails with ENOTSUP there). The
 * conventions of the matching rnic_* verb hold: NULL with errno, or the verb's return code. */
struct rnic_provider_ops {
	const char *name;
	struct rnic_context *(*open_device)(struct rnic_device *dev);
	int (*close_device)(struct rnic_context *ctx);
	int (*query_port)(struct rnic_context *ctx, struct rnic_port_attr *attr);
	int (*query_device_counters)(struct rnic_context *ctx, struct rnic_counter *counters, int n);
	int (*set_cc)(struct rnic_context *ctx, int rp_enable, int np_enable);
	int (*get_async_event)(struct rnic_context *ctx, struct rnic_async_event *event);
	struct rnic_pd *(*alloc_pd)(struct rnic_context *ctx);
	int (*dealloc_pd)(struct rnic_pd *pd);
	struct rnic_mr *(*reg_mr)(struct rnic_pd *pd, void *addr, size_t length, int access);
	int (*dereg_mr)(struct rnic_mr *mr);
	struct rnic_comp_channel *(*create_comp_channel)(struct rnic_context *ctx);
	int (*destroy_comp_channel)(struct rnic_comp_channel *channel);
	int (*get_cq_event)(struct rnic_comp_channel *channel, struct rnic_cq **cq, void **cq_context);
	/* A CQ of a channel fired (its arm is cleared): queue its completion event on the channel. From the
	 * engine's producers or the consumer arming over CQEs already there; lock-free. */
	void (*deliver_cq_event)(struct rnic_cq *cq);
	struct rnic_cq *(*create_cq)(struct rnic_context *ctx, int cqe, void *cq_context,
				     struct rnic_comp_channel *channel, int comp_vector);
	int (*destroy_cq)(struct rnic_cq *cq);
	struct rnic_qp *(*create_qp)(struct rnic_pd *pd, struct rnic_qp_init_attr *ia);
	int (*modify_qp)(struct rnic_qp *qp, struct rnic_qp_attr *attr, int mask);
	int (*query_qp)(struct rnic_qp *qp, struct rnic_qp_attr *attr);
	int (*destroy_qp)(struct rnic_qp *qp);
	int (*query_qp_counters)(struct rnic_qp *qp, struct rnic_qp_counters *counters);
	struct rnic_srq *(*create_srq)(struct rnic_pd *pd, struct rnic_srq_init_attr *ia);
	int (*modify_srq)(struct rnic_srq *srq, struct rnic_srq_attr *attr, int mask);
	int (*query_srq)(struct rnic_srq *srq, struct rnic_srq_attr *attr);
	int (*destroy_srq)(struct rnic_srq *srq);
};

/* The devices of the process: the engine's own, or rnicd's (rnic_get_device_list lists them). */
struct rnic_provider {
	const char *name;
	int remote;			/* the engine runs in another process (rnicd): its stages are not ours */
	const struct rnic_provider_ops *ops;	/* of the devices it creates */
	/* A remote provider's connection to its engine (path: RNIC_DAEMON): 0 or a negative errno / its end. */
	int (*init)(const char *path);
	void (*fini)(void);
	int (*device_count)(void);
	struct rnic_device *(*device)(int index);
};

/*
 * The providers register themselves at load time (RTE_INIT: the local one from lib/device, rnicd's client
 * from lib/client), so the runtime, below both in the module graph (doc/architecture.md), finds them here
 * in core without calling up: rnic_provider_find(0) is the local one, rnic_provider_find(1) the remote one.
 */
void rnic_provider_register(const struct rnic_provider *provider);
const struct rnic_provider *rnic_provider_find(int remote);

/* The process's provider, chosen by rnic_engine_init (NULL: none yet, no devices) / its choice. */
const struct rnic_provider *rnic_provider_get(void);
void rnic_provider_set(const struct rnic_provider *provider);
/* Whether the process's provider is remote: rnicd's engine serves it (client mode, doc/rnicd.md). */
int rnic_provider_remote(void);

/* The local provider's ops, implemented by each object's module (checked arguments, as the ops). */
struct rnic_mr *rnic_local_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access);
int rnic_local_dereg_mr(struct rnic_mr *mr);
struct rnic_comp_channel *rnic_local_create_comp_channel(struct rnic_context *ctx);
int rnic_local_destroy_comp_channel(struct rnic_comp_channel *channel);
int rnic_local_get_cq_event(struct rnic_comp_channel *channel, struct rnic_cq **cq, void **cq_context);
void rnic_local_deliver_cq_event(struct rnic_cq *cq);
struct rnic_cq *rnic_local_create_cq(struct rnic_context *ctx, int cqe, void *cq_context,
				     struct rnic_comp_channel *channel, int comp_vector);
int rnic_local_destroy_cq(struct rnic_cq *cq);
struct rnic_qp *rnic_local_create_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia);
int rnic_local_modify_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr, int mask);
int rnic_local_query_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr);
int rnic_local_destroy_qp(struct rnic_qp *qp);
int rnic_local_query_qp_counters(struct rnic_qp *qp, struct rnic_qp_counters *counters);
struct rnic_srq *rnic_local_create_srq(struct rnic_pd *pd, struct rnic_srq_init_attr *ia);
int rnic_local_modify_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr, int mask);
int rnic_local_query_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr);
int rnic_local_destroy_srq(struct rnic_srq *srq);
int rnic_local_query_device_counters(struct rnic_context *ctx, struct rnic_counter *counters, int n);
int rnic_local_set_cc(struct rnic_context *ctx, int rp_enable, int np_enable);

#endif /* RNIC_PROVIDER_H */
