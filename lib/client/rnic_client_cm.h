/* SPDX-License-Identifier: BSD-3-Clause
 * The connection manager of an rnicd client (doc/cm.md, "Through rnicd"): the daemon owns QP1 and runs the
 * CM; the rnic_cm_* calls of a client process (lib/cm/rnic_cm_api.c) come here and become requests on a
 * connection of their own. Same arguments and returns as the rnic_cm_* call of the same name.
 */
#ifndef RNIC_CLIENT_CM_H
#define RNIC_CLIENT_CM_H

#include "rnic.h"

struct rnic_cm_event_channel *rnic_client_cm_create_event_channel(void);
void rnic_client_cm_destroy_event_channel(struct rnic_cm_event_channel *channel);
int rnic_client_cm_create_id(struct rnic_cm_event_channel *channel, struct rnic_cm_id **id, void *context,
			     enum rnic_port_space ps);
int rnic_client_cm_destroy_id(struct rnic_cm_id *id);
int rnic_client_cm_migrate_id(struct rnic_cm_id *id, struct rnic_cm_event_channel *channel);
int rnic_client_cm_bind_addr(struct rnic_cm_id *id, struct sockaddr *addr);
int rnic_client_cm_resolve_addr(struct rnic_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
				int timeout_ms);
int rnic_client_cm_resolve_route(struct rnic_cm_id *id, int timeout_ms);
int rnic_client_cm_listen(struct rnic_cm_id *id, int backlog);
/* own_cqs: bit 0 / 1, the send / receive CQ was made for the QP (rnic_cm_create_qp): destroyed with it. */
int rnic_client_cm_attach_qp(struct rnic_cm_id *id, struct rnic_qp *qp, uint8_t own_cqs);
void rnic_client_cm_destroy_qp(struct rnic_cm_id *id);
/* The QP is being destroyed (ibv_destroy_qp of a QP rdma_create_qp made, as rping does): no id names it
 * any more, so that a get on another thread does not look at it. */
void rnic_client_cm_forget_qp(const struct rnic_qp *qp);
int rnic_client_cm_connect(struct rnic_cm_id *id, struct rnic_conn_param *param);
int rnic_client_cm_accept(struct rnic_cm_id *id, struct rnic_conn_param *param);
int rnic_client_cm_reject(struct rnic_cm_id *id, const void *private_data, uint8_t private_data_len);
int rnic_client_cm_disconnect(struct rnic_cm_id *id);
int rnic_client_cm_set_option(struct rnic_cm_id *id, int level, int optname, void *optval, size_t optlen);
int rnic_client_cm_get_cm_event(struct rnic_cm_event_channel *channel, struct rnic_cm_event **event);
int rnic_client_cm_ack_cm_event(struct rnic_cm_event *event);

#endif /* RNIC_CLIENT_CM_H */
