/* SPDX-License-Identifier: BSD-3-Clause
 * What the CM does with each message it receives (IBA 12.9's state machines for the active and the passive
 * side; Linux's cm.c handlers and cma.c's events; doc/cm.md).
 */
#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_common.h>

#include "rnic_cm.h"

#define TCP_SERVICE_BASE ((uint64_t)RNIC_PS_TCP << 16)	/* service IDs 0x0000000001060000 | port */

/* The id whose connection the message is about: our communication ID is its remote one. */
static struct rnic_cm_id_priv *
by_local_id(uint32_t comm_id)
{
	struct rnic_cm_id_priv *id;

	TAILQ_FOREACH(id, &rnic_cm.ids, next)
		if (!id->destroyed && id->local_comm_id == comm_id && id->state >= RNIC_CM_REQ_SENT)
			return id;
	return NULL;
}

/* A REQ seen before: the same peer's communication ID from the same CA. */
static struct rnic_cm_id_priv *
by_remote_req(const struct rnic_cm_msg *m)
{
	struct rnic_cm_id_priv *id;

	TAILQ_FOREACH(id, &rnic_cm.ids, next)
		if (id->state >= RNIC_CM_REQ_RCVD && id->remote_comm_id == m->local_comm_id &&
		    id->remote_ca_guid == m->local_ca_guid)
			return id;
	return NULL;
}

static int
addr_is_any(const struct sockaddr_storage *a)
{
	static const uint8_t zero[16];

	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr == 0;
	return memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr, zero, 16) == 0;
}

static struct rnic_cm_id_priv *
listener_for(const struct rnic_cm_dev *d, uint64_t service_id)
{
	struct rnic_cm_id_priv *id;

	if ((service_id & ~0xffffull) != TCP_SERVICE_BASE)
		return NULL;
	TAILQ_FOREACH(id, &rnic_cm.ids, next) {
		const struct sockaddr_storage *src = &id->pub.route.addr.src_addr;
		union rnic_gid gid;

		if (id->destroyed || id->state != RNIC_CM_LISTEN ||
		    rte_be_to_cpu_16(rnic_cm_addr_port((const struct sockaddr *)src)) != (service_id & 0xffff))
			continue;
		if (addr_is_any(src))
			return id;
		if (rnic_cm_addr_to_gid((const struct sockaddr *)src, &gid) == 0 &&
		    memcmp(&gid, &d->gid, sizeof(gid)) == 0)
			return id;
	}
	return NULL;
}

/* The CMA header (Linux's struct cma_hdr): version 0, IP version 4 or 6 in the high nibble, the source port,
 * then source and destination addresses in 16 bytes each (IPv4 in the last 4). */
static int
cma_hdr_parse(const uint8_t *pd, struct sockaddr_storage *src, struct sockaddr_storage *dst)
{
	uint8_t ipv = pd[1] >> 4;
	uint16_t port;
	union rnic_gid g;

	if (pd[0] != RNIC_CMA_VERSION || (ipv != 4 && ipv != 6))
		return -EINVAL;
	memcpy(&port, pd + 2, 2);
	memset(&g, 0, sizeof(g));
	if (ipv == 4) {
		g.raw[10] = 0xff;
		g.raw[11] = 0xff;
		memcpy(&g.raw[12], pd + 4 + 12, 4);
	} else {
		memcpy(g.raw, pd + 4, 16);
	}
	rnic_cm_gid_to_addr(&g, port, src);
	if (ipv == 4)
		memcpy(&g.raw[12], pd + 20 + 12, 4);
	else
		memcpy(g.raw, pd + 20, 16);
	rnic_cm_gid_to_addr(&g, 0, dst);
	return 0;
}

/* A REJ for a REQ that made no id (no listener, a malformed REQ): from the REQ's addressing alone. */
static void
reject_req(struct rnic_cm_dev *d, const struct rnic_cm_msg *req, const struct rnic_gsi_addr *from, uint16_t reason)
{
	struct rnic_cm_id_priv tmp = {
		.dev = d, .peer = *from, .tid = req->tid, .remote_comm_id = req->local_comm_id,
	};

	rnic_cm_send_rej(&tmp, reason, RNIC_CM_ABOUT_REQ, NULL, 0);
}

/* A REQ again: answered by the state it left us in (Linux's cm_dup_req_handler, with IBA's MRA for a REQ the
 * application has not answered yet). */
static void
dup_req(struct rnic_cm_id_priv *id)
{
	struct rnic_cm_msg m = {
		.attr_id = RNIC_CM_MRA, .tid = id->tid, .local_comm_id = id->local_comm_id,
		.remote_comm_id = id->remote_comm_id, .message = RNIC_CM_ABOUT_REQ,
		.service_timeout = id->response_timeout,
	};

	id->dev->stats.duplicates++;
	switch (id->state) {
	case RNIC_CM_REQ_RCVD:
		id->state = RNIC_CM_MRA_REQ_SENT;
		/* fall through */
	case RNIC_CM_MRA_REQ_SENT:
		rnic_cm_send(id, &m);
		break;
	case RNIC_CM_REP_SENT:
		rnic_gsi_send(id->dev->gsi, &id->peer, id->mad);	/* the REP again */
		break;
	default:
		break;
	}
}

static struct rnic_cm_id_priv *
new_child(struct rnic_cm_id_priv *listener, struct rnic_cm_dev *d, const struct rnic_cm_msg *m,
	  const struct rnic_gsi_addr *from)
{
	struct rnic_cm_id_priv *id = calloc(1, sizeof(*id));

	if (id == NULL)
		return NULL;
	id->pub.channel = listener->pub.channel;
	id->pub.context = listener->pub.context;
	id->pub.ps = listener->pub.ps;
	id->pub.qp_type = RNIC_QPT_RC;
	id->pub.port_num = 1;
	id->pub.verbs = d->ctx;
	id->pub.pd = d->pd;
	id->refs = 1;
	id->dev = d;
	id->tos = listener->tos;
	id->ack_timeout = listener->ack_timeout;
	id->response_timeout = listener->response_timeout;
	id->max_retries = listener->max_retries;
	id->state = RNIC_CM_REQ_RCVD;
	id->local_comm_id = rnic_cm.next_comm_id++;
	id->remote_comm_id = m->local_comm_id;
	id->remote_ca_guid = m->local_ca_guid;
	id->tid = m->tid;
	id->peer = *from;
	id->req = *m;
	id->remote_qpn = m->local_qpn;
	id->remote_psn = m->starting_psn;
	id->path_mtu = m->path_mtu;
	id->retry_count = m->retry_count;
	id->rnr_retry_count = m->rnr_retry_count;
	id->local_ack_timeout = m->local_ack_timeout;
	id->packet_lifetime = m->local_ack_timeout > 0 ? m->local_ack_timeout - 1 : 0;
	id->peer_response_timeout = m->local_cm_response_timeout;
	id->peer_max_retries = m->max_cm_retries;
	id->pub.route.num_paths = 1;
	id->pub.route.addr.ibaddr.sgid = d->gid;
	id->pub.route.addr.ibaddr.dgid = m->primary_local_gid;
	id->pub.route.addr.ibaddr.pkey = rte_cpu_to_be_16(m->pkey);
	TAILQ_INSERT_TAIL(&rnic_cm.ids, id, next);
	return id;
}

static void
recv_req(struct rnic_cm_dev *d, const struct rnic_cm_msg *m, const struct rnic_gsi_addr *from)
{
	struct rnic_cm_id_priv *listener, *id = by_remote_req(m);
	struct sockaddr_storage src, dst;
	struct rnic_conn_param conn;

	if (id != NULL) {
		dup_req(id);
		return;
	}
	if (m->transport_type != RNIC_CM_TRANSPORT_RC ||
	    cma_hdr_parse(m->private_data, &src, &dst) != 0) {
		d->stats.malformed++;
		reject_req(d, m, from, RNIC_CM_REJ_CONSUMER_DEFINED);
		return;
	}
	if (m->path_mtu < RNIC_MTU_256 || m->path_mtu > (uint8_t)d->device->active_mtu) {
		d->stats.malformed++;
		reject_req(d, m, from, RNIC_CM_REJ_INVALID_MTU);	/* a path this port cannot carry */
		return;
	}
	listener = listener_for(d, m->service_id);
	if (listener == NULL) {
		/* As Linux's cm_match_req: nobody listens on this service. */
		d->stats.no_listener++;
		reject_req(d, m, from, RNIC_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	if (listener->backlog == 0) {
		/* As Linux's ucma (backlog) and ib_cm (-ENOMEM: "do not reject to allow future retries"): no
		 * answer, the peer's next try may find room. */
		d->stats.backlog_drops++;
		return;
	}
	id = new_child(listener, d, m, from);
	if (id == NULL) {
		reject_req(d, m, from, RNIC_CM_REJ_NO_RESOURCES);
		return;
	}
	id->pub.route.addr.dst_addr = src;
	rnic_cm_gid_to_addr(&d->gid, (uint16_t)rte_cpu_to_be_16((uint16_t)(m->service_id & 0xffff)),
			    &id->pub.route.addr.src_addr);
	/* rdma_cm's CONNECT_REQUEST: the REQ's depths seen from this side, the data after the CMA header. */
	conn = (struct rnic_conn_param){
		.private_data = m->private_data + RNIC_CMA_HDR_LEN,
		.private_data_len = RNIC_CM_REQ_USER_PRIVATE,
		.responder_resources = m->initiator_depth,
		.initiator_depth = m->responder_resources,
		.flow_control = m->flow_control,
		.retry_count = m->retry_count,
		.rnr_retry_count = m->rnr_retry_count,
		.srq = m->srq,
		.qp_num = m->local_qpn,
	};
	if (rnic_cm_event(id, RNIC_CM_EVENT_CONNECT_REQUEST, 0, listener, &conn) == 0) {
		listener->backlog--;
	} else {
		/* The application is not taking its requests: this one is refused, not kept unseen. */
		rnic_cm_send_rej(id, RNIC_CM_REJ_NO_RESOURCES, RNIC_CM_ABOUT_REQ, NULL, 0);
		id->destroyed = 1;
		rnic_cm_id_put(id);
	}
}

static void
recv_mra(struct rnic_cm_id_priv *id, const struct rnic_cm_msg *m)
{
	uint64_t wait = rnic_cm_time_ms(id->packet_lifetime) + rnic_cm_time_ms(m->service_timeout);

	if ((id->state == RNIC_CM_REQ_SENT || id->state == RNIC_CM_MRA_REQ_RCVD) &&
	    m->message == RNIC_CM_ABOUT_REQ) {
		/* The peer is working on it: wait for the time it says, the REQ no longer sent again until then. */
		id->state = RNIC_CM_MRA_REQ_RCVD;
		id->deadline_ms = rnic_cm_now_ms() + wait;
	} else if (id->state == RNIC_CM_REP_SENT && m->message == RNIC_CM_ABOUT_REP) {
		id->deadline_ms = rnic_cm_now_ms() + wait;
	}
}

static void
recv_rej(struct rnic_cm_id_priv *id, const struct rnic_cm_msg *m)
{
	struct rnic_conn_param conn = { .private_data = m->private_data, .private_data_len = RNIC_CM_REJ_PRIVATE };

	switch (id->state) {
	case RNIC_CM_REQ_SENT:
	case RNIC_CM_MRA_REQ_RCVD:
	case RNIC_CM_REP_SENT:
		id->mad_pending = 0;
		id->state = RNIC_CM_IDLE;
		rnic_cm_qp_error(id);
		rnic_cm_event(id, RNIC_CM_EVENT_REJECTED, m->reason, NULL, &conn);
		break;
	default:
		break;
	}
}

static void
send_rtu(struct rnic_cm_id_priv *id)
{
	struct rnic_cm_msg m = {
		.attr_id = RNIC_CM_RTU, .tid = id->tid, .local_comm_id = id->local_comm_id,
		.remote_comm_id = id->remote_comm_id,
	};

	rnic_cm_send(id, &m);
}

static void
recv_rep(struct rnic_cm_id_priv *id, const struct rnic_cm_msg *m)
{
	struct rnic_conn_param conn = {
		.private_data = m->private_data, .private_data_len = RNIC_CM_REP_PRIVATE,
		.responder_resources = m->initiator_depth, .initiator_depth = m->responder_resources,
		.flow_control = m->flow_control, .rnr_retry_count = m->rnr_retry_count, .srq = m->srq,
		.qp_num = m->local_qpn,
	};
	int ret;

	if (id->state == RNIC_CM_ESTABLISHED && id->remote_comm_id == m->local_comm_id) {
		id->dev->stats.duplicates++;	/* our RTU was lost: the peer sent its REP again */
		send_rtu(id);
		return;
	}
	if (id->state != RNIC_CM_REQ_SENT && id->state != RNIC_CM_MRA_REQ_RCVD)
		return;
	id->mad_pending = 0;
	id->remote_comm_id = m->local_comm_id;
	id->remote_ca_guid = m->local_ca_guid;
	id->remote_qpn = m->local_qpn;
	id->remote_psn = m->starting_psn;
	id->initiator_depth = RTE_MIN(id->initiator_depth, m->responder_resources);
	id->responder_resources = RTE_MIN(id->responder_resources, m->initiator_depth);
	id->rnr_retry_count = m->rnr_retry_count;
	/* ib_cm's cm_rep_handler: the ACK timeout of the path with the peer's ACK delay */
	id->local_ack_timeout = rnic_cm_ack_timeout(m->target_ack_delay, id->packet_lifetime);
	ret = rnic_cm_qp_connect(id);
	if (ret != 0) {
		/* As rdma_cm's cma_rep_recv: the QP could not take the connection. */
		rnic_cm_send_rej(id, RNIC_CM_REJ_CONSUMER_DEFINED, RNIC_CM_ABOUT_REP, NULL, 0);
		id->state = RNIC_CM_IDLE;
		rnic_cm_qp_error(id);
		rnic_cm_event(id, RNIC_CM_EVENT_CONNECT_ERROR, -ret, NULL, NULL);
		return;
	}
	send_rtu(id);
	id->state = RNIC_CM_ESTABLISHED;
	rnic_cm_event(id, RNIC_CM_EVENT_ESTABLISHED, 0, NULL, &conn);
}

static void
recv_rtu(struct rnic_cm_id_priv *id)
{
	if (id->state != RNIC_CM_REP_SENT)
		return;
	id->mad_pending = 0;
	id->state = RNIC_CM_ESTABLISHED;
	rnic_cm_event(id, RNIC_CM_EVENT_ESTABLISHED, 0, NULL, NULL);
}

static void
recv_dreq(struct rnic_cm_dev *d, struct rnic_cm_id_priv *id, const struct rnic_cm_msg *m,
	  const struct rnic_gsi_addr *from)
{
	if (id == NULL || (id->pub.qp != NULL && m->remote_qpn != id->pub.qp->qp_num)) {
		/* Ours no more (TIMEWAIT over, destroyed): a DREP all the same, as Linux's cm_issue_drep. */
		struct rnic_cm_id_priv tmp = { .dev = d, .peer = *from, .tid = m->tid,
					       .remote_comm_id = m->local_comm_id };

		d->stats.unmatched++;
		rnic_cm_send_drep(&tmp);
		return;
	}
	switch (id->state) {
	case RNIC_CM_REP_SENT:		/* the RTU was lost, the peer is done already */
	case RNIC_CM_ESTABLISHED:
		id->mad_pending = 0;
		id->tid = m->tid;
		id->state = RNIC_CM_DREQ_RCVD;
		rnic_cm_event(id, RNIC_CM_EVENT_DISCONNECTED, 0, NULL, NULL);
		break;
	case RNIC_CM_DREQ_SENT:		/* both ends disconnect at once */
		id->tid = m->tid;
		rnic_cm_send_drep(id);
		rnic_cm_enter_timewait(id);
		rnic_cm_event(id, RNIC_CM_EVENT_DISCONNECTED, 0, NULL, NULL);
		break;
	case RNIC_CM_TIMEWAIT:		/* our DREP was lost */
		id->dev->stats.duplicates++;
		id->tid = m->tid;
		rnic_cm_send_drep(id);
		break;
	default:
		break;
	}
}

static void
recv_drep(struct rnic_cm_id_priv *id)
{
	if (id->state != RNIC_CM_DREQ_SENT)
		return;
	rnic_cm_enter_timewait(id);
	rnic_cm_event(id, RNIC_CM_EVENT_DISCONNECTED, 0, NULL, NULL);
}

void
rnic_cm_recv(void *arg, struct rnic_gsi *gsi, const uint8_t *mad, const struct rnic_gsi_addr *from)
{
	struct rnic_cm_dev *d = arg;
	struct rnic_cm_id_priv *id;
	struct rnic_cm_msg m;

	(void)gsi;
	d->stats.received++;
	if (rnic_cm_decode(mad, &m) != 0) {
		d->stats.malformed++;
		return;
	}
	if (m.attr_id == RNIC_CM_REQ) {
		recv_req(d, &m, from);
		return;
	}
	id = by_local_id(m.remote_comm_id);
	if (id != NULL && id->dev != d)
		id = NULL;
	if (m.attr_id == RNIC_CM_DREQ) {
		recv_dreq(d, id, &m, from);
		return;
	}
	if (id == NULL) {
		d->stats.unmatched++;
		return;
	}
	switch (m.attr_id) {
	case RNIC_CM_MRA: recv_mra(id, &m); break;
	case RNIC_CM_REJ: recv_rej(id, &m); break;
	case RNIC_CM_REP: recv_rep(id, &m); break;
	case RNIC_CM_RTU: recv_rtu(id); break;
	default: recv_drep(id); break;
	}
}
