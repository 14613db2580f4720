/* SPDX-License-Identifier: BSD-3-Clause
 * The rnic_cm_* API (rnic.h): librdmacm's calls, each doing what rdma_cm does for it (doc/cm.md).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_random.h>

#include "rnic_client_cm.h"
#include "rnic_cm.h"
#include "rnic_evq.h"
#include "rnic_pipeline.h"
#include "rnic_provider.h"

#define LOCK() pthread_mutex_lock(&rnic_cm.lock)
#define UNLOCK() pthread_mutex_unlock(&rnic_cm.lock)

/* An rnicd client's CM is the daemon's (it owns QP1): each call goes there (lib/client/rnic_client_cm.c). */
#define REMOTE() rnic_provider_remote()

/* ------------------------------------------------------------------------------------------------------ */
/* Event channels and events                                                                                */

struct rnic_cm_event_channel *
rnic_cm_create_event_channel(void)
{
	struct rnic_cm_channel *ch;
	int ret;

	if (REMOTE())
		return rnic_client_cm_create_event_channel();
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	TAILQ_INIT(&ch->events);
	ch->pub.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->pub.fd < 0) {
		ret = errno;
		free(ch);
		errno = ret;
		return NULL;
	}
	LOCK();
	ret = rnic_cm_start();
	if (ret == 0) {
		rnic_cm.channels++;
		TAILQ_INSERT_TAIL(&rnic_cm.channel_list, ch, next);
	} else {
		rnic_cm_stop_if_unused();
	}
	UNLOCK();
	if (ret != 0) {
		close(ch->pub.fd);
		free(ch);
		errno = -ret;
		return NULL;
	}
	return &ch->pub;
}

static void end_id(struct rnic_cm_id_priv *id);

/* An event not delivered (its id or listener destroyed, or its channel) goes with the references it holds; a
 * connection request's new id, never the application's, is ended (the peer gets a REJ) and freed. */
static void
drop_event(struct rnic_cm_channel *ch, struct rnic_cm_event_entry *e)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(e->pub.id);
	struct rnic_cm_id_priv *listener = e->pub.listen_id != NULL ? rnic_cm_id_priv(e->pub.listen_id) : NULL;

	rnic_cm_channel_remove(ch, e);
	free(e);
	if (listener != NULL) {
		listener->backlog++;
		if (!id->destroyed)
			end_id(id);	/* the application's reference it never got */
		rnic_cm_id_put(listener);
	}
	rnic_cm_id_put(id);
}

/* An event of the id on any channel (one moved to another channel may have left some on its first), or of
 * the listener it is. */
static struct rnic_cm_event_entry *
event_of(struct rnic_cm_id_priv *id, struct rnic_cm_channel **chp)
{
	struct rnic_cm_event_entry *e;
	struct rnic_cm_channel *ch;

	TAILQ_FOREACH(ch, &rnic_cm.channel_list, next)
		TAILQ_FOREACH(e, &ch->events, next)
			if (e->pub.id == &id->pub || e->pub.listen_id == &id->pub) {
				*chp = ch;
				return e;
			}
	return NULL;
}

/* The events of a destroyed id, and the connection requests of a destroyed listener, leave their channels,
 * as Linux's ucma_cleanup_ctx_events drops them: the channel's fd no longer polls readable for them. One
 * at a time from the start: dropping a request ends its new id, whose own events go too. */
static void
drop_events_of(struct rnic_cm_id_priv *id)
{
	struct rnic_cm_event_entry *e;
	struct rnic_cm_channel *ch;

	while ((e = event_of(id, &ch)) != NULL)
		drop_event(ch, e);
}

/* A get waiting on the channel's fd (another thread's) keeps the channel until it sees it destroyed. */
void
rnic_cm_destroy_event_channel(struct rnic_cm_event_channel *pub)
{
	struct rnic_cm_channel *ch = (struct rnic_cm_channel *)pub;
	int unused;

	if (ch == NULL)
		return;
	if (REMOTE()) {
		rnic_client_cm_destroy_event_channel(pub);
		return;
	}
	LOCK();
	while (!TAILQ_EMPTY(&ch->events))
		drop_event(ch, TAILQ_FIRST(&ch->events));
	TAILQ_REMOVE(&rnic_cm.channel_list, ch, next);
	rnic_cm.channels--;
	rnic_cm_stop_if_unused();
	close(ch->pub.fd);
	unused = rnic_evq_waiters_destroy(&ch->waiters);
	UNLOCK();
	if (unused)
		free(ch);
}

/* The oldest event of the channel, taken out, or NULL. A connection request taken makes room in its
 * listener's backlog. */
static struct rnic_cm_event_entry *
take_event(struct rnic_cm_channel *ch)
{
	struct rnic_cm_event_entry *e;

	LOCK();
	e = TAILQ_FIRST(&ch->events);
	if (e != NULL) {
		rnic_cm_channel_remove(ch, e);
		if (e->pub.listen_id != NULL)
			rnic_cm_id_priv(e->pub.listen_id)->backlog++;
	}
	UNLOCK();
	return e;
}

/* The taken event as the application sees it: its private data, its id's event. */
static struct rnic_cm_event *
give_event(struct rnic_cm_event_entry *e)
{
	if (e->pub.param.conn.private_data_len != 0)
		e->pub.param.conn.private_data = e->private_data;
	e->pub.id->event = &e->pub;
	return &e->pub;
}

int
rnic_cm_get_cm_event(struct rnic_cm_event_channel *pub, struct rnic_cm_event **event)
{
	struct rnic_cm_channel *ch = (struct rnic_cm_channel *)pub;
	struct rnic_cm_event_entry *e;
	int err = 0;

	if (ch == NULL || event == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_get_cm_event(pub, event);
	rnic_evq_waiter_enter(&rnic_cm.lock, &ch->waiters);
	/* Another thread may take the event the fd woke us for, or destroy its id: then wait again. */
	while ((e = take_event(ch)) == NULL) {
		err = rnic_evq_waiter_wait(&rnic_cm.lock, &ch->waiters, ch->pub.fd, ch);
		if (err != 0)
			break;
	}
	rnic_evq_waiter_leave(&rnic_cm.lock, &ch->waiters, ch);
	if (e == NULL)
		return err;
	*event = give_event(e);
	return 0;
}

int
rnic_cm_take_event(struct rnic_cm_event_channel *pub, struct rnic_cm_event **event)
{
	struct rnic_cm_event_entry *e = take_event((struct rnic_cm_channel *)pub);

	if (e == NULL)
		return EAGAIN;
	*event = give_event(e);
	return 0;
}

void
rnic_cm_channel_set_notify(struct rnic_cm_event_channel *pub, void (*notify)(void *arg, int readable), void *arg)
{
	struct rnic_cm_channel *ch = (struct rnic_cm_channel *)pub;

	LOCK();
	ch->notify = notify;
	ch->notify_arg = arg;
	UNLOCK();
}

int
rnic_cm_id_dev_index(struct rnic_cm_id *pub)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	int index;

	LOCK();
	index = id->dev != NULL ? (int)(id->dev - rnic_cm.dev) : -1;
	UNLOCK();
	return index;
}

int
rnic_cm_ack_cm_event(struct rnic_cm_event *event)
{
	struct rnic_cm_event_entry *e = (struct rnic_cm_event_entry *)event;

	if (e == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_ack_cm_event(event);
	LOCK();
	if (e->pub.id->event == &e->pub)
		e->pub.id->event = NULL;
	rnic_cm_id_put(rnic_cm_id_priv(e->pub.id));
	if (e->pub.listen_id != NULL)
		rnic_cm_id_put(rnic_cm_id_priv(e->pub.listen_id));
	UNLOCK();
	free(e);
	return 0;
}

const char *
rnic_cm_event_str(enum rnic_cm_event_type event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
		"RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
		"RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
		"RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	return (unsigned int)event < RTE_DIM(names) ? names[event] : "UNKNOWN EVENT";
}

/* ------------------------------------------------------------------------------------------------------ */
/* Ids                                                                                                      */

int
rnic_cm_create_id(struct rnic_cm_event_channel *channel, struct rnic_cm_id **out, void *context,
		  enum rnic_port_space ps)
{
	struct rnic_cm_id_priv *id;

	if (channel == NULL || out == NULL)
		return EINVAL;
	if (ps != RNIC_PS_TCP)
		return EPROTONOSUPPORT;		/* UD (RDMA_PS_UDP, SIDR) and IB's port space are not served */
	if (REMOTE())
		return rnic_client_cm_create_id(channel, out, context, ps);
	id = calloc(1, sizeof(*id));
	if (id == NULL)
		return ENOMEM;
	id->pub.channel = channel;
	id->pub.context = context;
	id->pub.ps = ps;
	id->pub.qp_type = RNIC_QPT_RC;
	id->refs = 1;
	id->response_timeout = RNIC_CM_RESPONSE_TIMEOUT;
	id->max_retries = RNIC_CM_MAX_RETRIES;
	id->packet_lifetime = RNIC_CM_PACKET_LIFETIME;
	LOCK();
	TAILQ_INSERT_TAIL(&rnic_cm.ids, id, next);
	UNLOCK();
	*out = &id->pub;
	return 0;
}

/* What a destroyed id tells its peer (Linux's cm_destroy_id): a REJ for a handshake under way, a DREQ (once,
 * not waited for) for a connection, a DREP for a DREQ not answered. */
static void
leave(struct rnic_cm_id_priv *id)
{
	switch (id->state) {
	case RNIC_CM_REQ_SENT:
	case RNIC_CM_MRA_REQ_RCVD:
		rnic_cm_send_rej(id, RNIC_CM_REJ_TIMEOUT, RNIC_CM_ABOUT_REQ, NULL, 0);
		break;
	case RNIC_CM_REQ_RCVD:
	case RNIC_CM_MRA_REQ_SENT:
	case RNIC_CM_REP_SENT:
		rnic_cm_send_rej(id, RNIC_CM_REJ_CONSUMER_DEFINED,
				 id->state == RNIC_CM_REP_SENT ? RNIC_CM_ABOUT_OTHER : RNIC_CM_ABOUT_REQ, NULL, 0);
		break;
	case RNIC_CM_ESTABLISHED:
		rnic_cm_send_dreq(id);
		break;
	case RNIC_CM_DREQ_RCVD:
		rnic_cm_send_drep(id);
		break;
	default:
		break;
	}
	id->mad_pending = 0;
	id->state = RNIC_CM_IDLE;
}

/* The id given up: the peer told, its events dropped, the application's reference released. */
static void
end_id(struct rnic_cm_id_priv *id)
{
	leave(id);
	id->destroyed = 1;
	drop_events_of(id);
	rnic_cm_id_put(id);
}

int
rnic_cm_destroy_id(struct rnic_cm_id *pub)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);

	if (id == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_destroy_id(pub);
	LOCK();
	if (id->destroyed) {
		UNLOCK();
		return EINVAL;
	}
	end_id(id);
	rnic_cm_stop_if_unused();
	UNLOCK();
	return 0;
}

/* The id's events not yet taken from its channel move to another, in their order, as Linux's ucma_move_events
 * moves them: its own, and a listener's connection requests (whose new ids, not yet the application's, go
 * with them to the new channel). Under the lock. */
static void
move_events(struct rnic_cm_id_priv *id, struct rnic_cm_channel *to)
{
	struct rnic_cm_channel *from = (struct rnic_cm_channel *)id->pub.channel;
	struct rnic_cm_event_entry *e, *next;

	for (e = TAILQ_FIRST(&from->events); e != NULL; e = next) {
		next = TAILQ_NEXT(e, next);
		if (e->pub.id != &id->pub && e->pub.listen_id != &id->pub)
			continue;
		rnic_cm_channel_remove(from, e);
		if (e->pub.listen_id == &id->pub)
			e->pub.id->channel = &to->pub;
		rnic_cm_channel_add(to, e);
	}
}

/* librdmacm's rdma_migrate_id: the id's events, those queued and those to come, on another channel. Events
 * already taken stay the application's to acknowledge (librdmacm waits for them: nothing here needs to). */
int
rnic_cm_migrate_id(struct rnic_cm_id *pub, struct rnic_cm_event_channel *channel)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	int ret = 0;

	if (id == NULL || channel == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_migrate_id(pub, channel);
	LOCK();
	if (id->destroyed) {
		ret = EINVAL;
	} else if (id->pub.channel != channel) {
		move_events(id, (struct rnic_cm_channel *)channel);
		id->pub.channel = channel;
	}
	UNLOCK();
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Addresses                                                                                                */

static int
port_in_use(uint16_t port_be, const struct rnic_cm_id_priv *self)
{
	struct rnic_cm_id_priv *id;

	TAILQ_FOREACH(id, &rnic_cm.ids, next)
		if (id != self && !id->destroyed && id->state != RNIC_CM_IDLE &&
		    rnic_cm_addr_port((const struct sockaddr *)&id->pub.route.addr.src_addr) == port_be &&
		    (id->state == RNIC_CM_LISTEN || id->state == RNIC_CM_ADDR_BOUND))
			return 1;
	return 0;
}

static int
ephemeral_port(const struct rnic_cm_id_priv *self, uint16_t *port_be)
{
	uint32_t span = RNIC_CM_PORT_LAST - RNIC_CM_PORT_FIRST + 1, start = (uint32_t)(rte_rand() % span);

	for (uint32_t k = 0; k < span; k++) {
		uint16_t p = rte_cpu_to_be_16((uint16_t)(RNIC_CM_PORT_FIRST + (start + k) % span));

		if (!port_in_use(p, self)) {
			*port_be = p;
			return 0;
		}
	}
	return EADDRINUSE;
}

static void
set_port(struct sockaddr_storage *a, uint16_t port_be)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = port_be;
	else
		((struct sockaddr_in6 *)a)->sin6_port = port_be;
}

static int
is_any(const struct sockaddr *a)
{
	static const union rnic_gid v4_any = { .raw = { [10] = 0xff, [11] = 0xff } }, v6_any;
	union rnic_gid g;

	if (rnic_cm_addr_to_gid(a, &g) != 0)
		return 0;
	return memcmp(&g, a->sa_family == AF_INET ? &v4_any : &v6_any, sizeof(g)) == 0;
}

static void
attach_dev(struct rnic_cm_id_priv *id, struct rnic_cm_dev *d)
{
	id->dev = d;
	id->pub.verbs = d->ctx;
	id->pub.pd = d->pd;
	id->pub.port_num = 1;
	id->pub.route.addr.ibaddr.sgid = d->gid;
	id->pub.route.addr.ibaddr.pkey = rte_cpu_to_be_16(0xffff);
}

/* rdma_bind_addr under the lock: the address's device (any: none yet), the port (0: an ephemeral one). */
static int
bind_locked(struct rnic_cm_id_priv *id, const struct sockaddr *addr)
{
	struct sockaddr_storage a;
	union rnic_gid gid;
	uint16_t port;
	int ret;

	if (addr == NULL || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return EAFNOSUPPORT;
	if (id->state != RNIC_CM_IDLE || id->destroyed)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	memcpy(&a, addr, rnic_cm_addr_len(addr));
	if (!is_any(addr)) {
		struct rnic_cm_dev *d;

		rnic_cm_addr_to_gid(addr, &gid);
		d = rnic_cm_dev_by_gid(&gid);
		if (d == NULL)
			return EADDRNOTAVAIL;
		attach_dev(id, d);
	}
	port = rnic_cm_addr_port(addr);
	if (port == 0) {
		ret = ephemeral_port(id, &port);
		if (ret != 0)
			return ret;
	} else if (port_in_use(port, id)) {
		return EADDRINUSE;
	}
	set_port(&a, port);
	id->pub.route.addr.src_addr = a;
	id->state = RNIC_CM_ADDR_BOUND;
	return 0;
}

int
rnic_cm_bind_addr(struct rnic_cm_id *pub, struct sockaddr *addr)
{
	int ret;

	if (pub == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_bind_addr(pub, addr);
	LOCK();
	ret = bind_locked(rnic_cm_id_priv(pub), addr);
	UNLOCK();
	return ret;
}

/* The device an unbound id reaches dst from: softrnic has no routing table, so the first device of the
 * address family that is not dst itself (on the loopback pair, the other device). */
static struct rnic_cm_dev *
source_dev(const union rnic_gid *dgid)
{
	for (unsigned int i = 0; i < rnic_cm.nb_dev; i++) {
		struct rnic_cm_dev *d = &rnic_cm.dev[i];

		if (rnic_gid_is_ipv4(&d->gid) == rnic_gid_is_ipv4(dgid) && memcmp(&d->gid, dgid, sizeof(*dgid)) != 0)
			return d;
	}
	return NULL;
}

static int
resolve_addr_locked(struct rnic_cm_id_priv *id, const struct sockaddr *src, const struct sockaddr *dst,
		    int timeout_ms)
{
	struct sockaddr_storage any;
	union rnic_gid dgid;
	struct rnic_cm_dev *d;
	int ret;

	if (dst == NULL || rnic_cm_addr_to_gid(dst, &dgid) != 0)
		return EAFNOSUPPORT;
	if (id->state == RNIC_CM_IDLE) {
		if (src == NULL) {
			memset(&any, 0, sizeof(any));
			any.ss_family = dst->sa_family;
			src = (const struct sockaddr *)&any;
		}
		ret = bind_locked(id, src);
		if (ret != 0)
			return ret;
	} else if (id->state != RNIC_CM_ADDR_BOUND) {
		return EINVAL;
	}
	if (id->dev == NULL) {
		d = source_dev(&dgid);
		if (d == NULL)
			return EADDRNOTAVAIL;
		attach_dev(id, d);
		rnic_cm_gid_to_addr(&d->gid, rnic_cm_addr_port((const struct sockaddr *)&id->pub.route.addr.src_addr),
				    &id->pub.route.addr.src_addr);
	}
	memset(&id->pub.route.addr.dst_addr, 0, sizeof(id->pub.route.addr.dst_addr));
	memcpy(&id->pub.route.addr.dst_addr, dst, rnic_cm_addr_len(dst));
	id->pub.route.addr.ibaddr.dgid = dgid;
	id->addr_deadline = rnic_cm_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	id->state = RNIC_CM_ADDR_QUERY;
	rnic_engine_route_prepare(id->dev->device, &dgid);	/* ARP/ND now; the thread looks at the answer */
	return 0;
}

int
rnic_cm_resolve_addr(struct rnic_cm_id *pub, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
	int ret;

	if (pub == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_resolve_addr(pub, src, dst, timeout_ms);
	LOCK();
	ret = resolve_addr_locked(rnic_cm_id_priv(pub), src, dst, timeout_ms);
	UNLOCK();
	return ret;
}

int
rnic_cm_resolve_route(struct rnic_cm_id *pub, int timeout_ms)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	int ret = 0;

	if (id == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_resolve_route(pub, timeout_ms);
	LOCK();
	/* RoCE's route is the GIDs and the port's MTU, known once the address is: nothing to ask (Linux's
	 * cma_resolve_iboe_route makes the path record the same way). */
	if (id->state != RNIC_CM_ADDR_RESOLVED) {
		ret = EINVAL;
	} else {
		id->state = RNIC_CM_ROUTE_RESOLVED;
		id->pub.route.num_paths = 1;
		rnic_cm_event(id, RNIC_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL);
	}
	UNLOCK();
	return ret;
}

struct sockaddr *
rnic_cm_get_local_addr(struct rnic_cm_id *id)
{
	return (struct sockaddr *)&id->route.addr.src_addr;
}

struct sockaddr *
rnic_cm_get_peer_addr(struct rnic_cm_id *id)
{
	return (struct sockaddr *)&id->route.addr.dst_addr;
}

uint16_t
rnic_cm_get_src_port(struct rnic_cm_id *id)
{
	return rnic_cm_addr_port(rnic_cm_get_local_addr(id));
}

uint16_t
rnic_cm_get_dst_port(struct rnic_cm_id *id)
{
	return rnic_cm_addr_port(rnic_cm_get_peer_addr(id));
}

int
rnic_cm_set_option(struct rnic_cm_id *pub, int level, int optname, void *optval, size_t optlen)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	uint8_t v;

	if (id == NULL || optval == NULL || optlen == 0)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_set_option(pub, level, optname, optval, optlen);
	if (level == RNIC_OPTION_ID && (optname == RNIC_OPTION_ID_REUSEADDR || optname == RNIC_OPTION_ID_AFONLY))
		return optlen == sizeof(int) ? 0 : EINVAL;
	if (optlen != sizeof(uint8_t))
		return EINVAL;
	v = *(const uint8_t *)optval;
	if (level == RNIC_OPTION_ID && optname == RNIC_OPTION_ID_TOS)
		id->tos = v;
	else if (level == RNIC_OPTION_ID && optname == RNIC_OPTION_ID_ACK_TIMEOUT && v <= 31)
		id->ack_timeout = v;
	else if (level == RNIC_OPTION_SOFTRNIC && optname == RNIC_OPTION_CM_RESPONSE_TIMEOUT && v <= 31)
		id->response_timeout = v;
	else if (level == RNIC_OPTION_SOFTRNIC && optname == RNIC_OPTION_CM_MAX_RETRIES && v <= 15)
		id->max_retries = v;
	else if (level == RNIC_OPTION_SOFTRNIC && optname == RNIC_OPTION_CM_PACKET_LIFETIME && v <= 31)
		id->packet_lifetime = v;
	else
		return level == RNIC_OPTION_ID || level == RNIC_OPTION_SOFTRNIC ? EINVAL : ENOSYS;
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The QP                                                                                                   */

/* rdma_cm's INIT before a connection: no remote access yet (the connection grants it). Under the lock. */
static int
attach_locked(struct rnic_cm_id_priv *id, struct rnic_qp *qp)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .pkey_index = 0, .port_num = 1 };
	int ret;

	if (id->dev == NULL || id->pub.qp != NULL || qp->qp_type != RNIC_QPT_RC || qp->srq != NULL ||
	    qp->context->device != id->dev->ctx->device)
		return EINVAL;
	ret = rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS);
	if (ret == 0)
		id->pub.qp = qp;
	return ret;
}

int
rnic_cm_attach_qp(struct rnic_cm_id *pub, struct rnic_qp *qp)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	int ret = 0;

	if (id == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_attach_qp(pub, qp, 0);
	LOCK();
	if (qp == NULL)
		id->pub.qp = NULL;
	else
		ret = attach_locked(id, qp);
	UNLOCK();
	return ret;
}

/* A QP rnic_cm_create_qp made given to the id: here under the lock, or to the daemon's CM (an rnicd client). */
static int
attach_made(struct rnic_cm_id *pub, struct rnic_qp *qp, uint8_t own_cqs)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	int ret;

	if (REMOTE())
		return rnic_client_cm_attach_qp(pub, qp, own_cqs);
	LOCK();
	ret = attach_locked(id, qp);
	if (ret == 0)
		id->own_cqs = own_cqs;
	UNLOCK();
	return ret;
}

int
rnic_cm_create_qp(struct rnic_cm_id *pub, struct rnic_pd *pd, struct rnic_qp_init_attr *attr)
{
	struct rnic_qp_init_attr ia;
	struct rnic_qp *qp;
	uint8_t own;
	int ret;

	if (pub == NULL || attr == NULL)
		return EINVAL;
	/* Checked again where the QP is attached, under the lock that covers the id. */
	if (pub->verbs == NULL || pub->qp != NULL || attr->qp_type != RNIC_QPT_RC || attr->srq != NULL ||
	    (pd != NULL && pd->context->device != pub->verbs->device))
		return EINVAL;
	ia = *attr;
	/* librdmacm makes the CQs the application leaves out. */
	if (ia.send_cq == NULL)
		ia.send_cq = rnic_create_cq(pub->verbs, (int)RTE_MAX(ia.cap.max_send_wr, 1u), NULL, NULL, 0);
	if (ia.recv_cq == NULL)
		ia.recv_cq = rnic_create_cq(pub->verbs, (int)RTE_MAX(ia.cap.max_recv_wr, 1u), NULL, NULL, 0);
	own = (uint8_t)((ia.send_cq != attr->send_cq) | (ia.recv_cq != attr->recv_cq) << 1);
	qp = ia.send_cq != NULL && ia.recv_cq != NULL ? rnic_create_qp(pd != NULL ? pd : pub->pd, &ia) : NULL;
	ret = qp == NULL ? errno : attach_made(pub, qp, own);
	if (ret != 0) {
		if (qp != NULL)
			rnic_destroy_qp(qp);
		if ((own & 1) && ia.send_cq != NULL)
			rnic_destroy_cq(ia.send_cq);
		if ((own & 2) && ia.recv_cq != NULL)
			rnic_destroy_cq(ia.recv_cq);
		return ret;
	}
	pub->send_cq = ia.send_cq;
	pub->recv_cq = ia.recv_cq;
	attr->cap = ia.cap;
	return 0;
}

void
rnic_cm_destroy_qp(struct rnic_cm_id *pub)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);

	struct rnic_cq *send_cq, *recv_cq;
	struct rnic_qp *qp;
	uint8_t own;

	if (id == NULL)
		return;
	if (REMOTE()) {
		rnic_client_cm_destroy_qp(pub);
		return;
	}
	LOCK();
	qp = id->pub.qp;
	send_cq = id->pub.send_cq;
	recv_cq = id->pub.recv_cq;
	own = id->own_cqs;
	id->pub.qp = NULL;
	id->own_cqs = 0;
	id->pub.send_cq = id->pub.recv_cq = NULL;
	UNLOCK();
	/* Outside the lock: destroying waits for the engine's lcores, the CM's thread need not. */
	if (qp == NULL)
		return;
	rnic_destroy_qp(qp);
	if (own & 1)
		rnic_destroy_cq(send_cq);
	if (own & 2)
		rnic_destroy_cq(recv_cq);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Connecting                                                                                               */

/* The CMA header of a REQ (Linux's cma_format_hdr). */
static void
cma_hdr(const struct rnic_cm_id_priv *id, uint8_t *pd)
{
	const struct rnic_cm_addr *a = &id->pub.route.addr;
	int v4 = rnic_gid_is_ipv4(&a->ibaddr.sgid);
	uint16_t port = rnic_cm_addr_port((const struct sockaddr *)&a->src_addr);

	pd[0] = RNIC_CMA_VERSION;
	pd[1] = (uint8_t)((v4 ? 4 : 6) << 4);
	memcpy(pd + 2, &port, 2);
	if (v4) {
		memcpy(pd + 4 + 12, &a->ibaddr.sgid.raw[12], 4);
		memcpy(pd + 20 + 12, &a->ibaddr.dgid.raw[12], 4);
	} else {
		memcpy(pd + 4, a->ibaddr.sgid.raw, 16);
		memcpy(pd + 20, a->ibaddr.dgid.raw, 16);
	}
}

static uint8_t
max_depth(const struct rnic_cm_id_priv *id, uint8_t asked)
{
	return (uint8_t)RTE_MIN(asked, id->dev->device->lim.max_qp_rd_atom);
}

static int
connect_locked(struct rnic_cm_id_priv *id, const struct rnic_conn_param *p)
{
	struct rnic_cm_msg m;

	if (id->state != RNIC_CM_ROUTE_RESOLVED || id->pub.qp == NULL)
		return EINVAL;
	if (p->private_data_len > RNIC_CM_REQ_USER_PRIVATE)
		return EINVAL;
	memset(&m, 0, sizeof(m));
	id->local_comm_id = rnic_cm.next_comm_id++;
	id->tid = rnic_cm.next_tid++;
	id->local_psn = (uint32_t)rte_rand() & 0xffffff;
	id->responder_resources = max_depth(id, p->responder_resources);
	id->initiator_depth = max_depth(id, p->initiator_depth);
	id->retry_count = (uint8_t)RTE_MIN(p->retry_count, 7);
	id->path_mtu = (uint8_t)id->dev->device->active_mtu;
	/* ib_cm's REQ: the path's life time and this CA's ACK delay (the REP's may change it) */
	id->local_ack_timeout = rnic_cm_ack_timeout(RNIC_CM_CA_ACK_DELAY, id->packet_lifetime);
	id->peer = (struct rnic_gsi_addr){ .gid = id->pub.route.addr.ibaddr.dgid, .qpn = RNIC_GSI_QPN };
	id->peer_response_timeout = id->response_timeout;
	m.attr_id = RNIC_CM_REQ;
	m.tid = id->tid;
	m.local_comm_id = id->local_comm_id;
	m.service_id = ((uint64_t)RNIC_PS_TCP << 16) |
		       rte_be_to_cpu_16(rnic_cm_addr_port((const struct sockaddr *)&id->pub.route.addr.dst_addr));
	m.local_ca_guid = rte_be_to_cpu_64(id->dev->device->guid);
	m.local_qpn = id->pub.qp->qp_num;
	m.responder_resources = id->responder_resources;
	m.initiator_depth = id->initiator_depth;
	m.remote_cm_response_timeout = id->response_timeout;
	m.transport_type = RNIC_CM_TRANSPORT_RC;
	m.flow_control = p->flow_control;
	m.starting_psn = id->local_psn;
	m.local_cm_response_timeout = id->response_timeout;
	m.retry_count = id->retry_count;
	m.pkey = 0xffff;
	m.path_mtu = id->path_mtu;
	m.rnr_retry_count = (uint8_t)RTE_MIN(p->rnr_retry_count, 7);
	m.max_cm_retries = id->max_retries;
	m.primary_local_lid = 0xffff;		/* RoCE: the permissive LID, as ib_cm sets it */
	m.primary_remote_lid = 0xffff;
	m.primary_local_gid = id->pub.route.addr.ibaddr.sgid;
	m.primary_remote_gid = id->pub.route.addr.ibaddr.dgid;
	m.traffic_class = id->tos;
	m.hop_limit = RNIC_CM_HOP_LIMIT;
	m.local_ack_timeout = id->local_ack_timeout;
	cma_hdr(id, m.private_data);
	if (p->private_data != NULL)
		memcpy(m.private_data + RNIC_CMA_HDR_LEN, p->private_data, p->private_data_len);
	id->state = RNIC_CM_REQ_SENT;
	rnic_cm_send_timed(id, &m, 2 * rnic_cm_time_ms(id->packet_lifetime) + rnic_cm_time_ms(id->response_timeout),
			   id->max_retries);
	return 0;
}

int
rnic_cm_connect(struct rnic_cm_id *pub, struct rnic_conn_param *p)
{
	int ret;

	if (pub == NULL || p == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_connect(pub, p);
	LOCK();
	ret = connect_locked(rnic_cm_id_priv(pub), p);
	UNLOCK();
	return ret;
}

int
rnic_cm_listen(struct rnic_cm_id *pub, int backlog)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	struct sockaddr_in any = { .sin_family = AF_INET };
	int ret = 0;

	if (id == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_listen(pub, backlog);
	LOCK();
	if (id->state == RNIC_CM_IDLE)
		ret = bind_locked(id, (const struct sockaddr *)&any);
	if (ret == 0 && id->state != RNIC_CM_ADDR_BOUND)
		ret = EINVAL;
	if (ret == 0) {
		id->state = RNIC_CM_LISTEN;
		/* Requests delivered and not yet taken (Linux's ucma: up to max_backlog, which 0 or less asks for). */
		id->backlog = backlog > 0 && backlog < RNIC_CM_MAX_BACKLOG ? (uint32_t)backlog : RNIC_CM_MAX_BACKLOG;
	}
	UNLOCK();
	return ret;
}

static int
accept_locked(struct rnic_cm_id_priv *id, const struct rnic_conn_param *p)
{
	struct rnic_cm_msg m;
	int ret;

	if ((id->state != RNIC_CM_REQ_RCVD && id->state != RNIC_CM_MRA_REQ_SENT) || id->pub.qp == NULL ||
	    p->private_data_len > RNIC_CM_REP_PRIVATE)
		return EINVAL;
	id->local_psn = (uint32_t)rte_rand() & 0xffffff;
	id->responder_resources = max_depth(id, RTE_MIN(p->responder_resources, id->req.initiator_depth));
	id->initiator_depth = max_depth(id, RTE_MIN(p->initiator_depth, id->req.responder_resources));
	ret = rnic_cm_qp_connect(id);
	if (ret != 0)
		return ret;
	memset(&m, 0, sizeof(m));
	m.attr_id = RNIC_CM_REP;
	m.tid = id->tid;
	m.local_comm_id = id->local_comm_id;
	m.remote_comm_id = id->remote_comm_id;
	m.local_qpn = id->pub.qp->qp_num;
	m.starting_psn = id->local_psn;
	m.responder_resources = id->responder_resources;
	m.initiator_depth = id->initiator_depth;
	m.target_ack_delay = RNIC_CM_CA_ACK_DELAY;
	m.flow_control = p->flow_control;
	m.rnr_retry_count = (uint8_t)RTE_MIN(p->rnr_retry_count, 7);
	m.local_ca_guid = rte_be_to_cpu_64(id->dev->device->guid);
	if (p->private_data != NULL)
		memcpy(m.private_data, p->private_data, p->private_data_len);
	id->state = RNIC_CM_REP_SENT;
	rnic_cm_send_timed(id, &m, 2 * rnic_cm_time_ms(id->packet_lifetime) +
			   rnic_cm_time_ms(id->peer_response_timeout), id->peer_max_retries);
	return 0;
}

int
rnic_cm_accept(struct rnic_cm_id *pub, struct rnic_conn_param *p)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	struct rnic_conn_param dflt;
	int ret;

	if (id == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_accept(pub, p);
	LOCK();
	/* Without parameters, librdmacm's: the depths the request asked for (as the CONNECT_REQUEST event gave
	 * them), 7 retries. */
	dflt = (struct rnic_conn_param){
		.responder_resources = id->req.initiator_depth, .initiator_depth = id->req.responder_resources,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	ret = accept_locked(id, p != NULL ? p : &dflt);
	UNLOCK();
	return ret;
}

int
rnic_cm_reject(struct rnic_cm_id *pub, const void *private_data, uint8_t private_data_len)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	int ret = 0;

	if (id == NULL || private_data_len > RNIC_CM_REJ_PRIVATE)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_reject(pub, private_data, private_data_len);
	LOCK();
	if (id->state != RNIC_CM_REQ_RCVD && id->state != RNIC_CM_MRA_REQ_SENT) {
		ret = EINVAL;
	} else {
		rnic_cm_send_rej(id, RNIC_CM_REJ_CONSUMER_DEFINED, RNIC_CM_ABOUT_REQ, private_data, private_data_len);
		id->state = RNIC_CM_IDLE;
	}
	UNLOCK();
	return ret;
}

int
rnic_cm_disconnect(struct rnic_cm_id *pub)
{
	struct rnic_cm_id_priv *id = rnic_cm_id_priv(pub);
	int ret = 0;

	if (id == NULL)
		return EINVAL;
	if (REMOTE())
		return rnic_client_cm_disconnect(pub);
	LOCK();
	switch (id->state) {
	case RNIC_CM_REP_SENT:
	case RNIC_CM_ESTABLISHED:
		/* rdma_disconnect: the QP to error first (its WRs flush), then the DREQ */
		rnic_cm_qp_error(id);
		rnic_cm_send_dreq(id);
		id->state = RNIC_CM_DREQ_SENT;
		break;
	case RNIC_CM_DREQ_RCVD:
		rnic_cm_qp_error(id);
		rnic_cm_send_drep(id);
		rnic_cm_enter_timewait(id);
		break;
	default:
		ret = EINVAL;
		break;
	}
	UNLOCK();
	return ret;
}
