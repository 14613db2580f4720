/* SPDX-License-Identifier: BSD-3-Clause
 * The connection manager's engine room (rnic_cm.h, doc/cm.md): its devices and thread, the timers, sending
 * the messages, driving a connection's QP, and the events.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_random.h>

#include "rnic_cm.h"
#include "rnic_pipeline.h"

struct rnic_cm rnic_cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.ids = TAILQ_HEAD_INITIALIZER(rnic_cm.ids),
	.channel_list = TAILQ_HEAD_INITIALIZER(rnic_cm.channel_list),
};

#define THREAD_PERIOD_NS 1000000	/* the thread polls QP1 and the timers every millisecond */

uint64_t
rnic_cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint8_t
rnic_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_lifetime)
{
	int t = packet_lifetime + 1;

	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return (uint8_t)RTE_MIN(t, 31);
}

uint64_t
rnic_cm_time_ms(uint8_t t)
{
	return 1ull << (t > 8 ? t - 8 : 0);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Addresses                                                                                                */

int
rnic_cm_addr_to_gid(const struct sockaddr *addr, union rnic_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (addr->sa_family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &((const struct sockaddr_in *)(const void *)addr)->sin_addr, 4);
		return 0;
	}
	if (addr->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

void
rnic_cm_gid_to_addr(const union rnic_gid *gid, uint16_t port_be, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (rnic_gid_is_ipv4(gid)) {
		struct sockaddr_in *in = (struct sockaddr_in *)out;

		in->sin_family = AF_INET;
		in->sin_port = port_be;
		memcpy(&in->sin_addr, &gid->raw[12], 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = port_be;
		memcpy(&in6->sin6_addr, gid->raw, 16);
	}
}

uint16_t
rnic_cm_addr_port(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)addr)->sin_port;
	if (addr->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)(const void *)addr)->sin6_port;
	return 0;
}

socklen_t
rnic_cm_addr_len(const struct sockaddr *addr)
{
	return addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

struct rnic_cm_dev *
rnic_cm_dev_by_gid(const union rnic_gid *gid)
{
	for (unsigned int i = 0; i < rnic_cm.nb_dev; i++)
		if (memcmp(&rnic_cm.dev[i].gid, gid, sizeof(*gid)) == 0)
			return &rnic_cm.dev[i];
	return NULL;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Events                                                                                                   */

void
rnic_cm_id_put(struct rnic_cm_id_priv *id)
{
	if (--id->refs != 0)
		return;
	TAILQ_REMOVE(&rnic_cm.ids, id, next);
	free(id);
}

static unsigned int
event_private(const struct rnic_conn_param *conn)
{
	return conn != NULL && conn->private_data != NULL ? RTE_MIN(conn->private_data_len, RNIC_CM_PRIVATE_MAX) : 0;
}

/* The channel's eventfd is non-zero exactly while it has events: written with each (a wakeup per event, as
 * ucma's, for edge-triggered epoll), read back to 0 with the last, all under the lock, so that the read never
 * blocks and a fd polled readable has an event. */
static void
channel_signal(struct rnic_cm_channel *ch, int readable)
{
	uint64_t v = 1;
	ssize_t n = readable ? write(ch->pub.fd, &v, sizeof(v)) : read(ch->pub.fd, &v, sizeof(v));

	if (n != sizeof(v))
		RNIC_LOG_LIMITED(ERR, "CM: event channel's eventfd %s: %s", readable ? "write" : "read",
				 strerror(errno));
	if (ch->notify != NULL)
		ch->notify(ch->notify_arg, readable);
}

void
rnic_cm_channel_remove(struct rnic_cm_channel *ch, struct rnic_cm_event_entry *e)
{
	TAILQ_REMOVE(&ch->events, e, next);
	if (--ch->nb_events == 0)
		channel_signal(ch, 0);
}

void
rnic_cm_channel_add(struct rnic_cm_channel *ch, struct rnic_cm_event_entry *e)
{
	TAILQ_INSERT_TAIL(&ch->events, e, next);
	ch->nb_events++;
	channel_signal(ch, 1);
}

int
rnic_cm_event(struct rnic_cm_id_priv *id, enum rnic_cm_event_type type, int status,
	      struct rnic_cm_id_priv *listen_id, const struct rnic_conn_param *conn)
{
	struct rnic_cm_channel *ch = (struct rnic_cm_channel *)id->pub.channel;
	struct rnic_cm_event_entry *e = NULL;

	if (id->destroyed)
		return 0;	/* given up: its channel keeps nothing of it (rnic_cm_destroy_id) */
	if (ch->nb_events < RNIC_CM_EVENTS)
		e = calloc(1, sizeof(*e));
	if (e == NULL) {
		if (id->dev != NULL)
			id->dev->stats.events_lost++;
		RNIC_LOG_LIMITED(ERR, "CM: event %s lost: the channel's queue is full", rnic_cm_event_str(type));
		return -ENOSPC;
	}
	e->pub.id = &id->pub;
	e->pub.listen_id = listen_id != NULL ? &listen_id->pub : NULL;
	e->pub.event = type;
	e->pub.status = status;
	if (conn != NULL) {
		e->pub.param.conn = *conn;
		e->pub.param.conn.private_data_len = (uint8_t)event_private(conn);
		if (e->pub.param.conn.private_data_len != 0)
			memcpy(e->private_data, conn->private_data, e->pub.param.conn.private_data_len);
		e->pub.param.conn.private_data = NULL;	/* set to the entry's copy when taken */
	}
	rnic_cm_channel_add(ch, e);
	id->refs++;
	if (listen_id != NULL)
		listen_id->refs++;
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Sending                                                                                                  */

static void
count_sent(struct rnic_cm_dev *dev, uint16_t attr)
{
	switch (attr) {
	case RNIC_CM_REQ: dev->stats.req_sent++; break;
	case RNIC_CM_MRA: dev->stats.mra_sent++; break;
	case RNIC_CM_REJ: dev->stats.rej_sent++; break;
	case RNIC_CM_REP: dev->stats.rep_sent++; break;
	case RNIC_CM_RTU: dev->stats.rtu_sent++; break;
	case RNIC_CM_DREQ: dev->stats.dreq_sent++; break;
	default: dev->stats.drep_sent++; break;
	}
}

/* Send a message to where `to` says, outside any connection's timer. */
static void
send_to(struct rnic_cm_dev *dev, const struct rnic_gsi_addr *to, const struct rnic_cm_msg *msg, uint8_t *mad)
{
	if (rnic_cm_encode(msg, mad) != 0)
		return;
	count_sent(dev, msg->attr_id);
	rnic_gsi_send(dev->gsi, to, mad);	/* lost or not sent: the peer's retries or ours cover it */
}

void
rnic_cm_send(struct rnic_cm_id_priv *id, struct rnic_cm_msg *msg)
{
	uint8_t mad[RNIC_MAD_SIZE];

	send_to(id->dev, &id->peer, msg, mad);
}

void
rnic_cm_send_timed(struct rnic_cm_id_priv *id, struct rnic_cm_msg *msg, uint64_t timeout_ms, uint32_t retries)
{
	send_to(id->dev, &id->peer, msg, id->mad);
	id->mad_pending = 1;
	id->timeout_ms = timeout_ms;
	id->retries_left = retries;
	id->deadline_ms = rnic_cm_now_ms() + timeout_ms;
}

static void
copy_private(struct rnic_cm_msg *m, const void *pd, uint8_t len, unsigned int max)
{
	if (pd != NULL && len != 0)
		memcpy(m->private_data, pd, RTE_MIN(len, max));
}

void
rnic_cm_send_rej(struct rnic_cm_id_priv *id, uint16_t reason, uint8_t about, const void *pd, uint8_t len)
{
	struct rnic_cm_msg m = {
		.attr_id = RNIC_CM_REJ, .tid = id->tid, .local_comm_id = id->local_comm_id,
		.remote_comm_id = id->remote_comm_id, .message = about, .reason = reason,
	};

	copy_private(&m, pd, len, RNIC_CM_REJ_PRIVATE);
	id->mad_pending = 0;
	rnic_cm_send(id, &m);
}

void
rnic_cm_send_dreq(struct rnic_cm_id_priv *id)
{
	struct rnic_cm_msg m = {
		.attr_id = RNIC_CM_DREQ, .local_comm_id = id->local_comm_id, .remote_comm_id = id->remote_comm_id,
		.remote_qpn = id->remote_qpn,
	};

	id->tid = m.tid = rnic_cm.next_tid++;
	rnic_cm_send_timed(id, &m, 2 * rnic_cm_time_ms(id->packet_lifetime) +
			   rnic_cm_time_ms(id->peer_response_timeout), id->max_retries);
}

void
rnic_cm_send_drep(struct rnic_cm_id_priv *id)
{
	struct rnic_cm_msg m = {
		.attr_id = RNIC_CM_DREP, .tid = id->tid, .local_comm_id = id->local_comm_id,
		.remote_comm_id = id->remote_comm_id,
	};

	rnic_cm_send(id, &m);
}

void
rnic_cm_enter_timewait(struct rnic_cm_id_priv *id)
{
	id->state = RNIC_CM_TIMEWAIT;
	id->mad_pending = 0;
	id->timewait_end_ms = rnic_cm_now_ms() + 2 * rnic_cm_time_ms(id->packet_lifetime);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The connection's QP                                                                                      */

int
rnic_cm_qp_connect(struct rnic_cm_id_priv *id)
{
	struct rnic_qp *qp = id->pub.qp;
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_INIT, .pkey_index = 0, .port_num = 1,
		/* ib_cm's INIT: remote writes, and reads and atomics when the peer may send them */
		.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE |
			(id->responder_resources != 0 ? RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC : 0),
	};
	int ret;

	ret = rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTR;
	a.path_mtu = (enum rnic_mtu)id->path_mtu;
	a.dest_qp_num = id->remote_qpn;
	/* The starting PSN a REQ or REP carries is the first its sender receives (Linux's ib_cm: rq_psn from its
	 * own message, sq_psn from the peer's), not the first it sends. */
	a.rq_psn = id->local_psn;
	a.max_dest_rd_atomic = id->responder_resources;
	a.min_rnr_timer = 0;		/* as ib_cm sets it */
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = id->pub.route.addr.ibaddr.dgid;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = RNIC_CM_HOP_LIMIT;
	a.ah_attr.grh.traffic_class = id->tos;
	ret = rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
			     RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = id->remote_psn;
	a.timeout = id->ack_timeout != 0 ? id->ack_timeout : id->local_ack_timeout;
	a.retry_cnt = id->retry_count;
	a.rnr_retry = id->rnr_retry_count;
	a.max_rd_atomic = id->initiator_depth;
	return rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
			      RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC);
}

void
rnic_cm_qp_error(struct rnic_cm_id_priv *id)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_ERR };

	if (id->pub.qp != NULL)
		rnic_modify_qp(id->pub.qp, &a, RNIC_QP_STATE);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Timers                                                                                                   */

/* A message ran out of retries (IBA 12.9: the state's timeout transition; Linux's cm_process_send_error and
 * cma_ib_handler's events). */
static void
timed_out(struct rnic_cm_id_priv *id)
{
	id->mad_pending = 0;
	if (id->dev != NULL)
		id->dev->stats.timeouts++;
	switch (id->state) {
	case RNIC_CM_REQ_SENT:
	case RNIC_CM_MRA_REQ_RCVD:
	case RNIC_CM_REP_SENT:
		id->state = RNIC_CM_IDLE;
		rnic_cm_qp_error(id);
		rnic_cm_event(id, RNIC_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL);
		break;
	case RNIC_CM_DREQ_SENT:
		rnic_cm_enter_timewait(id);
		rnic_cm_event(id, RNIC_CM_EVENT_DISCONNECTED, -ETIMEDOUT, NULL, NULL);
		break;
	default:
		break;
	}
}

/* ADDR_QUERY: the destination's MAC known (a device of this process, --neigh, ARP/ND answered), or not. */
static void
addr_query(struct rnic_cm_id_priv *id, uint64_t now)
{
	uint8_t mac[6];
	int ret = rnic_route_lookup(id->dev->device, &id->pub.route.addr.ibaddr.dgid, mac);

	if (ret == -EAGAIN && now < id->addr_deadline)
		return;
	if (ret == 0) {
		id->state = RNIC_CM_ADDR_RESOLVED;
		rnic_cm_event(id, RNIC_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL);
		return;
	}
	id->state = RNIC_CM_ADDR_BOUND;
	rnic_cm_event(id, RNIC_CM_EVENT_ADDR_ERROR, ret == -EAGAIN ? -ETIMEDOUT : -EHOSTUNREACH, NULL, NULL);
}

static void
run_timers(uint64_t now)
{
	struct rnic_cm_id_priv *id;

	TAILQ_FOREACH(id, &rnic_cm.ids, next) {
		if (id->state == RNIC_CM_ADDR_QUERY) {
			addr_query(id, now);
		} else if (id->state == RNIC_CM_TIMEWAIT && now >= id->timewait_end_ms) {
			/* as cma_ib_handler passes ib_cm's TIMEWAIT_EXIT on (a destroyed id is IDLE: none) */
			id->state = RNIC_CM_IDLE;
			rnic_cm_event(id, RNIC_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, NULL);
		} else if (id->mad_pending && now >= id->deadline_ms) {
			if (id->retries_left == 0) {
				timed_out(id);
				continue;
			}
			id->retries_left--;
			id->deadline_ms = now + id->timeout_ms;
			id->dev->stats.retransmits++;
			rnic_gsi_send(id->dev->gsi, &id->peer, id->mad);
		}
	}
}

static void *
cm_thread(void *arg)
{
	const struct timespec period = { .tv_nsec = THREAD_PERIOD_NS };

	(void)arg;
	/* trylock: rnic_cm_stop_if_unused holds the lock while it waits for this thread to end */
	while (!__atomic_load_n(&rnic_cm.stop, __ATOMIC_ACQUIRE)) {
		if (pthread_mutex_trylock(&rnic_cm.lock) == 0) {
			for (unsigned int i = 0; i < rnic_cm.nb_dev; i++)
				rnic_gsi_poll(rnic_cm.dev[i].gsi);
			run_timers(rnic_cm_now_ms());
			pthread_mutex_unlock(&rnic_cm.lock);
		}
		nanosleep(&period, NULL);
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Lifecycle                                                                                                */

static void
dev_close(struct rnic_cm_dev *d)
{
	rnic_gsi_close(d->gsi);
	if (d->pd != NULL && rnic_dealloc_pd(d->pd) != 0)
		RNIC_LOG(WARNING, "CM: %s: the PD of the CM's context is still in use", d->device->name);
	if (d->ctx != NULL && rnic_close_device(d->ctx) != 0)
		RNIC_LOG(WARNING, "CM: %s: the CM's context still holds objects: left open", d->device->name);
	memset(d, 0, sizeof(*d));
}

static int
dev_open(struct rnic_cm_dev *d, struct rnic_device *device)
{
	int ret;

	d->device = device;
	d->gid = device->gid[0];
	d->ctx = rnic_open_device(device);
	d->pd = d->ctx != NULL ? rnic_alloc_pd(d->ctx) : NULL;
	if (d->pd == NULL)
		return -(errno != 0 ? errno : ENOMEM);
	ret = rnic_gsi_open(device, &d->gsi);
	if (ret == 0)
		rnic_gsi_set_cm_handler(d->gsi, rnic_cm_recv, d);
	return ret;
}

int
rnic_cm_start(void)
{
	int n = rnic_engine_device_count(), ret = 0;

	if (rnic_cm.running)
		return 0;
	if (rnic_provider_remote())
		return -ENOTSUP;	/* rnicd owns the ports, and QP1 with them */
	if (n <= 0)
		return -ENODEV;
	for (int i = 0; i < n && i < RNIC_MAX_DEVICES && ret == 0; i++) {
		ret = dev_open(&rnic_cm.dev[i], rnic_engine_device(i));
		rnic_cm.nb_dev = (unsigned int)i + 1;
	}
	if (ret == 0) {
		rnic_cm.next_comm_id = (uint32_t)rte_rand() | 1;
		rnic_cm.next_tid = rte_rand();
		rnic_cm.stop = 0;
		ret = -pthread_create(&rnic_cm.thread, NULL, cm_thread, NULL);
	}
	if (ret != 0) {
		for (unsigned int i = 0; i < rnic_cm.nb_dev; i++)
			dev_close(&rnic_cm.dev[i]);
		rnic_cm.nb_dev = 0;
		return ret;
	}
	rnic_cm.running = 1;
	return 0;
}

void
rnic_cm_stop_if_unused(void)
{
	if (!rnic_cm.running || rnic_cm.channels != 0 || !TAILQ_EMPTY(&rnic_cm.ids))
		return;
	__atomic_store_n(&rnic_cm.stop, 1, __ATOMIC_RELEASE);
	pthread_join(rnic_cm.thread, NULL);
	for (unsigned int i = 0; i < rnic_cm.nb_dev; i++)
		dev_close(&rnic_cm.dev[i]);
	rnic_cm.nb_dev = 0;
	rnic_cm.running = 0;
}

int
rnic_cm_query_counters(struct rnic_context *ctx, struct rnic_counter *out, int n)
{
	static const char *const names[] = {
#define RNIC_X(name, what) "cm_" #name,
		RNIC_CM_COUNTERS(RNIC_X)
#undef RNIC_X
	};
	struct rnic_cm_dev *d = NULL;
	int nb_gsi, total;

	if (ctx == NULL || n < 0 || (n > 0 && out == NULL))
		return -EINVAL;
	pthread_mutex_lock(&rnic_cm.lock);
	for (unsigned int i = 0; i < rnic_cm.nb_dev; i++)
		if (rnic_cm.dev[i].device == rnic_ctx_dev(ctx))
			d = &rnic_cm.dev[i];
	if (d == NULL) {
		pthread_mutex_unlock(&rnic_cm.lock);
		return -ENODEV;
	}
	nb_gsi = rnic_gsi_counters(d->gsi, out, n);
	total = nb_gsi + (int)RTE_DIM(names);
	for (int i = 0; i < (int)RTE_DIM(names) && nb_gsi + i < n; i++) {
		snprintf(out[nb_gsi + i].name, sizeof(out[0].name), "%s", names[i]);
		out[nb_gsi + i].value = ((const uint64_t *)&d->stats)[i];
	}
	pthread_mutex_unlock(&rnic_cm.lock);
	return total;
}
