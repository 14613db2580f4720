/* SPDX-License-Identifier: BSD-3-Clause
 * The library as rnicd uses it (doc/rnicd.md): what the daemon needs beyond rnic.h to serve its clients,
 * so that it reads and writes no private struct of the library. The daemon opens contexts and creates
 * objects with the rnic_* verbs (the local provider); these functions bind a context to a client (its host
 * memory, its id, its tenant, its doorbell queue) and say what to share of the objects it created.
 */
#ifndef RNIC_DAEMON_H
#define RNIC_DAEMON_H

#include <stdint.h>

#include "rnic.h"
#include "rnic_priv.h"
#include "rnicd_proto.h"

struct rnic_dbq;

/* A device as a client sees it (rnicd's device list). */
void rnic_daemon_device_info(const struct rnic_device *dev, struct rnicd_dev_info *info);

/* Serve a client with a context rnicd opened: its objects' host-interface memory comes from hostmem (the
 * client's shared region), its QPs belong to client (its doorbells may name only them), are served
 * within tenant's share, and their UD WQEs may send only from the GID indexes of sgid_mask (bit per index;
 * 0: any; an RC or UC QP's address vector rnicd checks at MODIFY_QP). Before the context creates any
 * object. */
void rnic_daemon_context_bind(struct rnic_context *ctx, const struct rnic_hostmem_ops *hostmem, void *arg,
			      uint32_t client, uint32_t tenant, uint32_t sgid_mask);

/* Let the engine poll the client's doorbell queue (size entries, in the daemon's mapping) / stop. 0 or
 * -errno. */
int rnic_daemon_attach_dbq(struct rnic_context *ctx, struct rnic_dbq *q, uint32_t size);
void rnic_daemon_detach_dbq(struct rnic_context *ctx, struct rnic_dbq *q);

/* Register a client's buffer: keys and WQEs name addr (the client's VA); the engine reaches it at host (the
 * daemon's mapping). As rnic_reg_mr otherwise. */
struct rnic_mr *rnic_daemon_reg_mr(struct rnic_pd *pd, void *addr, void *host, size_t length, int access);

/* What a client maps of a CQ: its number, its entries and the host-interface block that holds them. */
struct rnic_daemon_cq_hif {
	uint32_t cqn;
	uint32_t nent;
	const void *block;
};
void rnic_daemon_cq_hif(struct rnic_cq *cq, struct rnic_daemon_cq_hif *out);

/* What a client maps of a QP: its queues' geometry and the host-interface block (rnic_qp_hif_layout). */
struct rnic_daemon_qp_hif {
	uint32_t sq_cnt, sq_stride;
	uint32_t rq_cnt, rq_stride;
	const void *block;
};
void rnic_daemon_qp_hif(struct rnic_qp *qp, struct rnic_daemon_qp_hif *out);

/* What a client maps of an SRQ: its number, its queue's geometry and the host-interface block
 * (rnic_srq_hif_layout). */
struct rnic_daemon_srq_hif {
	uint32_t srqn;
	uint32_t cnt, stride;
	const void *block;
};
void rnic_daemon_srq_hif(struct rnic_srq *srq, struct rnic_daemon_srq_hif *out);

/* A tenant's counters on the engine's device index (rnic_get_device_list's order); -ENODEV past the last. */
int rnic_daemon_tenant_stats(int index, uint32_t tenant, struct rnic_tenant_stats *out);
/* A tenant's share of the engine on device index (rnic_device_tenant_share): 0, -ENODEV past the last device,
 * -EINVAL. */
int rnic_daemon_tenant_share(int index, uint32_t tenant, uint32_t share);
/* A tenant's cap on device index (rnic_device_tenant_cap: bits and messages a second, 0: none): 0, -ENODEV
 * past the last device, -EINVAL. */
int rnic_daemon_tenant_cap(int index, uint32_t tenant, uint64_t bits_per_s, uint64_t msgs_per_s);

#endif /* RNIC_DAEMON_H */
