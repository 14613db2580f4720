/* SPDX-License-Identifier: BSD-3-Clause
 * The CM of an rnicd client (doc/cm.md, "Through rnicd"): the daemon runs the one CM of its devices, with
 * QP1, the timers and every id's state machine; here are the process's views of its channels, ids and
 * events, refreshed by each reply and event. The requests go on one connection of the process's own, made
 * with its first channel and closed with the last once no id is left. The ids' contexts are this process's
 * contexts on the daemon's devices (one each, opened when an id is bound to the device), whose QPs the
 * daemon's CM drives once attached (RNICD_CM_ATTACH_QP names them by their connection and handle).
 *
 * A channel's fd is a socket the daemon keeps readable exactly while it holds an event of the channel (as
 * an in-process channel's eventfd): a get asks for the oldest, and waits on the fd while there is none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_common.h>

#include "rnic_client.h"
#include "rnic_client_cm.h"
#include "rnic_evq.h"

struct ccm_channel {
	struct rnic_cm_event_channel pub;	/* pub.fd: readable while the daemon holds an event */
	uint32_t handle;
	struct rnic_evq_waiters waiters;	/* gets waiting on the fd: a destroyed channel is freed after the last */
};

struct ccm_id {
	struct rnic_cm_id pub;
	TAILQ_ENTRY(ccm_id) next;
	uint32_t handle;
	uint32_t refs;			/* the application's until destroyed, one per event it holds */
	uint8_t own_cqs;		/* rnic_cm_create_qp made them: bit 0 send, bit 1 receive */
};

struct ccm_event {
	struct rnic_cm_event pub;
	uint64_t token;			/* the daemon's name for it, until acknowledged */
	uint8_t private_data[RNICD_CM_EVENT_PRIVATE];
};

static struct {
	pthread_mutex_t lock;		/* what follows, and one request at a time on the connection */
	int sock;			/* -1 while the process has no channel and no id */
	uint32_t channels;
	TAILQ_HEAD(, ccm_id) ids;
	struct rnic_context *ctx[RNIC_MAX_DEVICES];	/* the ids' verbs */
	struct rnic_pd *pd[RNIC_MAX_DEVICES];		/* rnic_cm_create_qp without a PD */
} ccm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.sock = -1,
	.ids = TAILQ_HEAD_INITIALIZER(ccm.ids),
};

#define LOCK() pthread_mutex_lock(&ccm.lock)
#define UNLOCK() pthread_mutex_unlock(&ccm.lock)

static struct ccm_id *
ccm_id(struct rnic_cm_id *id)
{
	return (struct ccm_id *)id;
}

/* A request under the lock. The daemon gone: ECONNRESET or EPIPE. */
static int
cm_call(struct rnicd_req *req, uint32_t cmd, struct rnicd_rep *rep, int *fd_in)
{
	return ccm.sock < 0 ? ENOTCONN : rnicd_call(ccm.sock, req, cmd, -1, rep, fd_in);
}

/* What a destroy request's status means to the application: with the daemon gone, so is the object. */
static int
destroyed(int ret)
{
	return ret == ECONNRESET || ret == EPIPE || ret == ENOTCONN ? 0 : ret;
}

/* The connection, contexts and PDs go once nothing of the CM is left. Under the lock. */
static void
stop_if_unused(void)
{
	if (ccm.sock < 0 || ccm.channels != 0 || !TAILQ_EMPTY(&ccm.ids))
		return;
	close(ccm.sock);
	ccm.sock = -1;
	for (int i = 0; i < RNIC_MAX_DEVICES; i++) {
		if (ccm.pd[i] != NULL && rnic_dealloc_pd(ccm.pd[i]) != 0)
			continue;	/* the application's QPs still use it: the context stays open too */
		ccm.pd[i] = NULL;
		if (ccm.ctx[i] != NULL && rnic_close_device(ccm.ctx[i]) == 0)
			ccm.ctx[i] = NULL;
	}
}

/* The CM's context and PD on device i, opened once. */
static void
open_dev(int i)
{
	struct rnic_device **list;
	int n = 0;

	if (i < 0 || i >= RNIC_MAX_DEVICES || ccm.pd[i] != NULL)
		return;
	list = rnic_get_device_list(&n);
	if (list != NULL && i < n && ccm.ctx[i] == NULL)
		ccm.ctx[i] = rnic_open_device(list[i]);
	rnic_free_device_list(list);
	if (ccm.ctx[i] != NULL)
		ccm.pd[i] = rnic_alloc_pd(ccm.ctx[i]);
	if (ccm.pd[i] == NULL)
		RNIC_LOG(ERR, "rnicd CM: no context on device %d: %s", i, strerror(errno));
}

/* The daemon's view of an id onto the application's. Under the lock. */
static void
apply_view(struct ccm_id *id, const struct rnicd_cm_view *v)
{
	id->pub.route = v->route;
	id->pub.port_num = (uint8_t)v->port_num;
	if (id->pub.verbs != NULL || v->dev_index < 0)
		return;
	open_dev(v->dev_index);
	if (v->dev_index < RNIC_MAX_DEVICES && ccm.pd[v->dev_index] != NULL) {
		id->pub.verbs = ccm.ctx[v->dev_index];
		id->pub.pd = ccm.pd[v->dev_index];
	}
}

/* A request about one id whose reply carries its view. */
static int
id_call(struct rnic_cm_id *pub, struct rnicd_req *req, uint32_t cmd)
{
	struct ccm_id *id = ccm_id(pub);
	struct rnicd_rep rep;
	int ret;

	req->u.cm.id = id->handle;
	LOCK();
	ret = cm_call(req, cmd, &rep, NULL);
	if (ret == 0)
		apply_view(id, &rep.u.cm.view);
	UNLOCK();
	return ret;
}

static int
copy_addr(struct sockaddr_storage *to, const struct sockaddr *a)
{
	size_t len;

	if (a == NULL)
		return EAFNOSUPPORT;
	if (a->sa_family == AF_INET)
		len = sizeof(struct sockaddr_in);
	else if (a->sa_family == AF_INET6)
		len = sizeof(struct sockaddr_in6);
	else
		return EAFNOSUPPORT;
	memcpy(to, a, len);
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Channels and ids                                                                                         */

struct rnic_cm_event_channel *
rnic_client_cm_create_event_channel(void)
{
	struct ccm_channel *ch = calloc(1, sizeof(*ch));
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	int fd = -1, ret = 0;

	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	LOCK();
	if (ccm.sock < 0) {
		ccm.sock = rnic_client_connect();
		ret = ccm.sock < 0 ? -ccm.sock : 0;
		if (ret != 0)
			ccm.sock = -1;
	}
	if (ret == 0)
		ret = cm_call(&req, RNICD_CM_CREATE_CHANNEL, &rep, &fd);
	if (ret == 0 && fd < 0)
		ret = EPROTO;
	if (ret == 0) {
		ch->handle = rep.u.cm.handle;
		ch->pub.fd = fd;
		ccm.channels++;
	}
	stop_if_unused();
	UNLOCK();
	if (ret != 0) {
		free(ch);
		errno = ret;
		return NULL;
	}
	return &ch->pub;
}

void
rnic_client_cm_destroy_event_channel(struct rnic_cm_event_channel *pub)
{
	struct ccm_channel *ch = (struct ccm_channel *)pub;
	struct rnicd_req req = { .u.cm.channel = ch->handle };
	struct rnicd_rep rep;

	LOCK();
	cm_call(&req, RNICD_CM_DESTROY_CHANNEL, &rep, NULL);
	ccm.channels--;
	stop_if_unused();
	close(ch->pub.fd);
	if (rnic_evq_waiters_destroy(&ch->waiters))
		free(ch);
	UNLOCK();
}

/* A new view of an id of the daemon's (handle). Under the lock. */
static struct ccm_id *
id_new(uint32_t handle, struct rnic_cm_event_channel *channel, void *context)
{
	struct ccm_id *id = calloc(1, sizeof(*id));

	if (id == NULL)
		return NULL;
	id->handle = handle;
	id->refs = 1;
	id->pub.channel = channel;
	id->pub.context = context;
	id->pub.ps = RNIC_PS_TCP;
	id->pub.qp_type = RNIC_QPT_RC;
	TAILQ_INSERT_TAIL(&ccm.ids, id, next);
	return id;
}

static void
id_put(struct ccm_id *id)
{
	if (--id->refs != 0)
		return;
	TAILQ_REMOVE(&ccm.ids, id, next);
	free(id);
}

int
rnic_client_cm_create_id(struct rnic_cm_event_channel *channel, struct rnic_cm_id **out, void *context,
			 enum rnic_port_space ps)
{
	struct rnicd_req req = { .u.cm = { .channel = ((struct ccm_channel *)channel)->handle, .arg = ps } };
	struct rnicd_rep rep;
	struct ccm_id *id = NULL;
	int ret;

	LOCK();
	ret = cm_call(&req, RNICD_CM_CREATE_ID, &rep, NULL);
	if (ret == 0) {
		id = id_new(rep.u.cm.handle, channel, context);
		if (id == NULL) {
			req.u.cm.id = rep.u.cm.handle;
			cm_call(&req, RNICD_CM_DESTROY_ID, &rep, NULL);
			ret = ENOMEM;
		}
	}
	UNLOCK();
	if (id != NULL)
		*out = &id->pub;
	return ret;
}

int
rnic_client_cm_destroy_id(struct rnic_cm_id *pub)
{
	struct ccm_id *id = ccm_id(pub);
	struct rnicd_req req = { .u.cm.id = id->handle };
	struct rnicd_rep rep;
	int ret;

	LOCK();
	ret = destroyed(cm_call(&req, RNICD_CM_DESTROY_ID, &rep, NULL));
	if (ret == 0) {
		id->handle = 0;
		id_put(id);	/* the events it still holds keep the view until acknowledged */
		stop_if_unused();
	}
	UNLOCK();
	return ret;
}

int
rnic_client_cm_migrate_id(struct rnic_cm_id *pub, struct rnic_cm_event_channel *channel)
{
	struct rnicd_req req = { .u.cm.channel = ((struct ccm_channel *)channel)->handle };
	int ret = id_call(pub, &req, RNICD_CM_MIGRATE_ID);

	if (ret == 0)
		pub->channel = channel;
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Addresses and options                                                                                    */

int
rnic_client_cm_bind_addr(struct rnic_cm_id *pub, struct sockaddr *addr)
{
	struct rnicd_req req = { 0 };
	int ret = copy_addr(&req.u.cm.src, addr);

	return ret != 0 ? ret : id_call(pub, &req, RNICD_CM_BIND);
}

int
rnic_client_cm_resolve_addr(struct rnic_cm_id *pub, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
	struct rnicd_req req = { .u.cm.arg = timeout_ms };
	int ret = copy_addr(&req.u.cm.dst, dst);

	if (ret == 0 && src != NULL)
		ret = copy_addr(&req.u.cm.src, src);
	return ret != 0 ? ret : id_call(pub, &req, RNICD_CM_RESOLVE_ADDR);
}

int
rnic_client_cm_resolve_route(struct rnic_cm_id *pub, int timeout_ms)
{
	struct rnicd_req req = { .u.cm.arg = timeout_ms };

	return id_call(pub, &req, RNICD_CM_RESOLVE_ROUTE);
}

int
rnic_client_cm_listen(struct rnic_cm_id *pub, int backlog)
{
	struct rnicd_req req = { .u.cm.arg = backlog };

	return id_call(pub, &req, RNICD_CM_LISTEN);
}

int
rnic_client_cm_set_option(struct rnic_cm_id *pub, int level, int optname, void *optval, size_t optlen)
{
	struct rnicd_req req = { .u.cm = { .arg = level, .arg2 = optname, .optlen = (uint32_t)optlen } };

	if (optlen > sizeof(req.u.cm.private_data))
		return EINVAL;
	memcpy(req.u.cm.private_data, optval, optlen);
	return id_call(pub, &req, RNICD_CM_SET_OPTION);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The QP and the connection                                                                                */

/* The client's view of a QP the daemon's CM moved: its state as the daemon has it. */
static void
refresh_qp(struct rnic_qp *qp)
{
	struct rnic_qp_init_attr init;
	struct rnic_qp_attr attr;

	if (qp != NULL)
		rnic_query_qp(qp, &attr, 0, &init);
}

int
rnic_client_cm_attach_qp(struct rnic_cm_id *pub, struct rnic_qp *qp, uint8_t own_cqs)
{
	struct rnicd_req req = { 0 };
	uint32_t client_id = 0, handle = 0;
	int ret = qp != NULL ? rnic_client_qp_ref(qp, &client_id, &handle) : 0;

	if (ret != 0)
		return ret;
	req.u.cm.arg2 = (int32_t)client_id;
	req.u.cm.qp = handle;
	ret = id_call(pub, &req, RNICD_CM_ATTACH_QP);
	if (ret == 0) {
		pub->qp = qp;
		ccm_id(pub)->own_cqs = own_cqs;
		refresh_qp(qp);
	}
	return ret;
}

void
rnic_client_cm_forget_qp(const struct rnic_qp *qp)
{
	struct ccm_id *id;

	LOCK();
	TAILQ_FOREACH(id, &ccm.ids, next)
		if (id->pub.qp == qp)
			id->pub.qp = NULL;
	UNLOCK();
}

void
rnic_client_cm_destroy_qp(struct rnic_cm_id *pub)
{
	struct rnic_cq *send_cq = pub->send_cq, *recv_cq = pub->recv_cq;
	uint8_t own = ccm_id(pub)->own_cqs;
	struct rnic_qp *qp;

	LOCK();		/* a get taking an event of the id looks at its QP under the lock (take) */
	qp = pub->qp;
	pub->qp = NULL;
	UNLOCK();
	/* The QP may be gone already (rnic_destroy_qp: rnic_client_cm_forget_qp), the CQs made for it not. */
	if (qp != NULL) {
		rnic_client_cm_attach_qp(pub, NULL, 0);
		rnic_destroy_qp(qp);
	}
	ccm_id(pub)->own_cqs = 0;
	pub->send_cq = pub->recv_cq = NULL;
	if (own & 1)
		rnic_destroy_cq(send_cq);
	if (own & 2)
		rnic_destroy_cq(recv_cq);
}

static int
conn_call(struct rnic_cm_id *pub, const struct rnic_conn_param *p, uint32_t cmd)
{
	struct rnicd_req req = { .u.cm.arg = p != NULL };

	if (p != NULL) {
		if (p->private_data_len > RNICD_CM_MAX_PRIVATE || (p->private_data_len != 0 && p->private_data == NULL))
			return EINVAL;
		req.u.cm.conn = *p;
		req.u.cm.conn.private_data = NULL;
		if (p->private_data_len != 0)
			memcpy(req.u.cm.private_data, p->private_data, p->private_data_len);
	}
	return id_call(pub, &req, cmd);
}

int
rnic_client_cm_connect(struct rnic_cm_id *pub, struct rnic_conn_param *p)
{
	return conn_call(pub, p, RNICD_CM_CONNECT);
}

int
rnic_client_cm_accept(struct rnic_cm_id *pub, struct rnic_conn_param *p)
{
	int ret = conn_call(pub, p, RNICD_CM_ACCEPT);

	if (ret == 0)
		refresh_qp(pub->qp);	/* the daemon's CM moved it to RTS */
	return ret;
}

int
rnic_client_cm_reject(struct rnic_cm_id *pub, const void *private_data, uint8_t private_data_len)
{
	struct rnic_conn_param p = { .private_data = private_data, .private_data_len = private_data_len };

	return conn_call(pub, &p, RNICD_CM_REJECT);
}

int
rnic_client_cm_disconnect(struct rnic_cm_id *pub)
{
	struct rnicd_req req = { 0 };
	int ret = id_call(pub, &req, RNICD_CM_DISCONNECT);

	if (ret == 0)
		refresh_qp(pub->qp);
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Events                                                                                                   */

/* The id an event names: the application's, or a connection request's new one (on the channel the request
 * came on, with its listener's context). Under the lock. */
static struct ccm_id *
event_id(uint32_t handle, struct ccm_id *listener, struct rnic_cm_event_channel *channel)
{
	struct ccm_id *id;

	TAILQ_FOREACH(id, &ccm.ids, next)
		if (id->handle == handle)
			return id;
	return listener != NULL ? id_new(handle, channel, listener->pub.context) : NULL;
}

static int
take(struct ccm_channel *ch, struct ccm_event *e)
{
	struct rnicd_req req = { .u.cm.channel = ch->handle };
	struct rnicd_rep rep;
	struct ccm_id *id, *listener = NULL;
	int ret;

	LOCK();
	/* Destroyed between two gets of a thread that loops on them (rping's event thread, the program
	 * ending): asked, the daemon would answer an error, which rping's thread meets with exit() while the
	 * program tears down (a client crashed so). */
	if (ch->waiters.destroyed)
		rnic_evq_waiter_park(&ccm.lock, &ch->waiters, ch);
	ret = cm_call(&req, RNICD_CM_GET_EVENT, &rep, NULL);
	if (ret == 0 && rep.u.cm_event.listen_id != 0 &&
	    (listener = event_id(rep.u.cm_event.listen_id, NULL, NULL)) == NULL)
		ret = EPROTO;
	if (ret == 0 && (id = event_id(rep.u.cm_event.id, listener, &ch->pub)) == NULL)
		ret = listener != NULL ? ENOMEM : EPROTO;
	if (ret != 0) {
		UNLOCK();
		return ret;
	}
	id->refs++;
	if (listener != NULL)
		listener->refs++;
	apply_view(id, &rep.u.cm_event.view);
	e->token = rep.u.cm_event.token;
	e->pub.id = &id->pub;
	e->pub.listen_id = listener != NULL ? &listener->pub : NULL;
	e->pub.event = (enum rnic_cm_event_type)rep.u.cm_event.event;
	e->pub.status = rep.u.cm_event.status;
	e->pub.param.conn = rep.u.cm_event.conn;
	e->pub.param.conn.private_data_len = (uint8_t)RTE_MIN(e->pub.param.conn.private_data_len,
							      RNICD_CM_EVENT_PRIVATE);
	memcpy(e->private_data, rep.u.cm_event.private_data, e->pub.param.conn.private_data_len);
	e->pub.param.conn.private_data = e->pub.param.conn.private_data_len != 0 ? e->private_data : NULL;
	id->pub.event = &e->pub;
	/* Under the lock: another thread may be destroying the QP (rping's main thread ending while its event
	 * thread takes the DISCONNECTED event); rnic_client_cm_destroy_qp lets go of it under the lock first. */
	refresh_qp(id->pub.qp);
	UNLOCK();
	return 0;
}

int
rnic_client_cm_get_cm_event(struct rnic_cm_event_channel *pub, struct rnic_cm_event **event)
{
	struct ccm_channel *ch = (struct ccm_channel *)pub;
	struct ccm_event *e = calloc(1, sizeof(*e));
	int ret;

	if (e == NULL)
		return ENOMEM;
	rnic_evq_waiter_enter(&ccm.lock, &ch->waiters);
	for (;;) {
		ret = take(ch, e);
		if (ret != EAGAIN)
			break;
		ret = rnic_evq_waiter_wait(&ccm.lock, &ch->waiters, pub->fd, ch);
		if (ret != 0)
			break;
	}
	rnic_evq_waiter_leave(&ccm.lock, &ch->waiters, ch);
	if (ret != 0) {
		free(e);
		return ret;
	}
	*event = &e->pub;
	return 0;
}

int
rnic_client_cm_ack_cm_event(struct rnic_cm_event *event)
{
	struct ccm_event *e = (struct ccm_event *)event;
	struct rnicd_req req = { .u.cm.token = e->token };
	struct rnicd_rep rep;

	LOCK();
	cm_call(&req, RNICD_CM_ACK_EVENT, &rep, NULL);
	if (e->pub.id->event == &e->pub)
		e->pub.id->event = NULL;
	id_put(ccm_id(e->pub.id));
	if (e->pub.listen_id != NULL)
		id_put(ccm_id(e->pub.listen_id));
	stop_if_unused();
	UNLOCK();
	free(e);
	return 0;
}
