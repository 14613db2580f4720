/* SPDX-License-Identifier: BSD-3-Clause
 * librdmacm's calls over softrnic's CM (rnic_cm_*, doc/cm.md): exported under librdmacm's names and symbol
 * versions (rnic_verbs.map: RDMACM_1.0, 1.2), so an unmodified librdmacm program preloaded with
 * libsoftrnic-verbs connects through the CM of the engine in its own process instead of the kernel's.
 * Each rdma_ object is the program's view of an rnic_cm_ one (its layout rdma_cma.h's); an id's verbs, QP,
 * PD and CQs are the interposer's ibv_ objects (rnic_verbs.h). librdmacm's convention: -1 and errno.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <rdma/rdma_cma.h>

#include "rnic_verbs.h"

struct rnic_verbs_cm_channel {
	struct rdma_event_channel ibv;
	struct rnic_cm_event_channel *ch;
};

/* The program's view of an rnic_cm_id, found by it in rnic_verbs_cm_ids (its context is in ibv.context). */
struct rnic_verbs_cm_id {
	struct rdma_cm_id ibv;
	struct rnic_cm_id *id;
	TAILQ_ENTRY(rnic_verbs_cm_id) next;	/* in rnic_verbs_cm_ids until destroyed */
	uint32_t events;		/* given to the program and not yet acknowledged (rnic_verbs_cm_ids_lock) */
	uint8_t own_cqs;		/* rdma_create_qp made the CQs and their channels */
	uint8_t sync;			/* made without a channel: its calls wait for their events on its own */
	struct ibv_qp_init_attr *ep_qp_attr;	/* rdma_create_ep's passive id: the QP of each request */
};

struct rnic_verbs_cm_event {
	struct rdma_cm_event ibv;
	struct rnic_cm_event *ev;
	struct rnic_verbs_cm_id *owner;	/* the id that counts it: a connection request's listener, else its id */
};

/* librdmacm's rdma_destroy_id blocks until the events given for the id are acknowledged (rdma_get_cm_event(3)),
 * which a program with an event thread relies on: rping's main thread destroys its connection's id while its
 * event thread may still be acknowledging the DISCONNECTED event. The ids not yet destroyed, and the events
 * each owns, as librdmacm's events_reported and events_completed: a connection request counts on its
 * listener. An event the CM gave for an id destroyed on its way to the program is dropped, as the kernel's
 * ucma drops a destroyed id's events not yet reported. */
static TAILQ_HEAD(, rnic_verbs_cm_id) rnic_verbs_cm_ids = TAILQ_HEAD_INITIALIZER(rnic_verbs_cm_ids);
static pthread_mutex_t rnic_verbs_cm_ids_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rnic_verbs_cm_acked = PTHREAD_COND_INITIALIZER;

/* The program's view of each device, opened once, as librdmacm opens one context (and one PD) per device
 * for all its ids. */
#define RNIC_VERBS_CM_DEVICES 16
static struct {
	struct rnic_device *dev;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
} rnic_verbs_cm_devs[RNIC_VERBS_CM_DEVICES];
static pthread_mutex_t rnic_verbs_cm_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int rnic_verbs_cm_channels;	/* open: the devices' views are closed with the last one */

static int
fail(int err)
{
	if (err == 0)
		return 0;
	errno = err;
	return -1;
}

/* The device's entry (opened on first use), or NULL. Under rnic_verbs_cm_lock. */
static int
dev_entry(struct rnic_device *dev)
{
	struct ibv_device **list;
	int i, n;

	for (i = 0; i < RNIC_VERBS_CM_DEVICES && rnic_verbs_cm_devs[i].dev != NULL; i++)
		if (rnic_verbs_cm_devs[i].dev == dev)
			return i;
	if (i == RNIC_VERBS_CM_DEVICES)
		return -1;
	list = ibv_get_device_list(&n);
	for (int k = 0; list != NULL && k < n; k++) {
		if (RNIC_VERBS_CONTAINER(list[k], struct rnic_verbs_device, ibv)->dev != dev)
			continue;
		rnic_verbs_cm_devs[i].verbs = ibv_open_device(list[k]);
		if (rnic_verbs_cm_devs[i].verbs != NULL)
			rnic_verbs_cm_devs[i].dev = dev;
	}
	ibv_free_device_list(list);
	return rnic_verbs_cm_devs[i].dev == dev ? i : -1;
}

static struct ibv_context *
verbs_of(struct rnic_context *ctx)
{
	struct ibv_context *verbs = NULL;
	int i;

	if (ctx == NULL)
		return NULL;
	pthread_mutex_lock(&rnic_verbs_cm_lock);
	i = dev_entry(ctx->device);
	if (i >= 0)
		verbs = rnic_verbs_cm_devs[i].verbs;
	pthread_mutex_unlock(&rnic_verbs_cm_lock);
	return verbs;
}

/* The device's PD for rdma_create_qp without one (librdmacm's id->pd). */
static struct ibv_pd *
default_pd(struct ibv_context *verbs)
{
	struct ibv_pd *pd = NULL;

	pthread_mutex_lock(&rnic_verbs_cm_lock);
	for (int i = 0; i < RNIC_VERBS_CM_DEVICES; i++) {
		if (rnic_verbs_cm_devs[i].verbs != verbs)
			continue;
		if (rnic_verbs_cm_devs[i].pd == NULL)
			rnic_verbs_cm_devs[i].pd = ibv_alloc_pd(verbs);
		pd = rnic_verbs_cm_devs[i].pd;
	}
	pthread_mutex_unlock(&rnic_verbs_cm_lock);
	return pd;
}

/* The program's view of an id after the CM changed it: device, addresses, route. */
static void
sync_id(struct rnic_verbs_cm_id *w)
{
	const struct rnic_cm_id *id = w->id;

	w->ibv.verbs = verbs_of(id->verbs);
	memcpy(&w->ibv.route.addr.src_storage, &id->route.addr.src_addr, sizeof(w->ibv.route.addr.src_storage));
	memcpy(&w->ibv.route.addr.dst_storage, &id->route.addr.dst_addr, sizeof(w->ibv.route.addr.dst_storage));
	memcpy(&w->ibv.route.addr.addr.ibaddr.sgid, &id->route.addr.ibaddr.sgid, sizeof(union ibv_gid));
	memcpy(&w->ibv.route.addr.addr.ibaddr.dgid, &id->route.addr.ibaddr.dgid, sizeof(union ibv_gid));
	w->ibv.route.addr.addr.ibaddr.pkey = id->route.addr.ibaddr.pkey;
	w->ibv.route.num_paths = id->route.num_paths;
	w->ibv.port_num = id->port_num;
}

static struct rnic_verbs_cm_id *
wrap_id(struct rnic_cm_id *id, struct rdma_event_channel *channel, void *context, enum rdma_port_space ps)
{
	struct rnic_verbs_cm_id *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->id = id;
	w->ibv.channel = channel;
	w->ibv.context = context;
	w->ibv.ps = ps;
	w->ibv.qp_type = IBV_QPT_RC;
	pthread_mutex_lock(&rnic_verbs_cm_ids_lock);
	TAILQ_INSERT_TAIL(&rnic_verbs_cm_ids, w, next);
	pthread_mutex_unlock(&rnic_verbs_cm_ids_lock);
	return w;
}

/* The program's id of a CM id, NULL once destroyed. Under rnic_verbs_cm_ids_lock. */
static struct rnic_verbs_cm_id *
live_id(const struct rnic_cm_id *id)
{
	struct rnic_verbs_cm_id *w;

	TAILQ_FOREACH(w, &rnic_verbs_cm_ids, next)
		if (w->id == id)
			return w;
	return NULL;
}

/* The event a synchronous call kept (id->event), acknowledged. */
static void
ack_kept(struct rdma_cm_id *pub)
{
	if (pub->event == NULL)
		return;
	rdma_ack_cm_event(pub->event);
	pub->event = NULL;
}

/* The last channel went: the devices' PDs and contexts are closed, as librdmacm closes them when it is
 * unloaded (one the program still holds objects on stays open). */
static void
close_devs(void)
{
	for (int i = 0; i < RNIC_VERBS_CM_DEVICES && rnic_verbs_cm_devs[i].dev != NULL; i++) {
		if (rnic_verbs_cm_devs[i].pd != NULL && ibv_dealloc_pd(rnic_verbs_cm_devs[i].pd) != 0)
			continue;
		rnic_verbs_cm_devs[i].pd = NULL;
		if (ibv_close_device(rnic_verbs_cm_devs[i].verbs) != 0)
			continue;
		rnic_verbs_cm_devs[i].verbs = NULL;
		rnic_verbs_cm_devs[i].dev = NULL;
	}
}

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	struct rnic_verbs_cm_channel *c;
	int err = rnic_verbs_engine_up();

	if (err != 0) {
		errno = err;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch = rnic_cm_create_event_channel();
	if (c->ch == NULL) {
		free(c);
		return NULL;
	}
	c->ibv.fd = c->ch->fd;
	pthread_mutex_lock(&rnic_verbs_cm_lock);
	rnic_verbs_cm_channels++;
	pthread_mutex_unlock(&rnic_verbs_cm_lock);
	return &c->ibv;
}

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct rnic_verbs_cm_channel *c = RNIC_VERBS_CONTAINER(channel, struct rnic_verbs_cm_channel, ibv);

	rnic_cm_destroy_event_channel(c->ch);
	free(c);
	pthread_mutex_lock(&rnic_verbs_cm_lock);
	if (--rnic_verbs_cm_channels == 0)
		close_devs();
	pthread_mutex_unlock(&rnic_verbs_cm_lock);
}

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
	       enum rdma_port_space ps)
{
	struct rnic_verbs_cm_channel *c;
	struct rnic_verbs_cm_id *w;
	struct rnic_cm_id *id;
	int sync = channel == NULL;
	int err;

	if (out == NULL)
		return fail(EINVAL);
	/* Without a channel the id is synchronous (librdmacm's): its own channel, on which its calls wait. */
	if (sync) {
		channel = rdma_create_event_channel();
		if (channel == NULL)
			return -1;
	}
	c = RNIC_VERBS_CONTAINER(channel, struct rnic_verbs_cm_channel, ibv);
	err = rnic_cm_create_id(c->ch, &id, NULL, (enum rnic_port_space)ps);
	w = err == 0 ? wrap_id(id, channel, context, ps) : NULL;
	if (w == NULL) {
		if (err == 0)
			rnic_cm_destroy_id(id);
		if (sync)
			rdma_destroy_event_channel(channel);
		return fail(err != 0 ? err : ENOMEM);
	}
	w->sync = sync;
	*out = &w->ibv;
	return 0;
}

int
rdma_destroy_id(struct rdma_cm_id *pub)
{
	struct rnic_verbs_cm_id *w = RNIC_VERBS_CONTAINER(pub, struct rnic_verbs_cm_id, ibv);
	int err;

	ack_kept(pub);	/* a synchronous id holds the event its last call waited for */
	err = rnic_cm_destroy_id(w->id);
	if (err != 0)
		return fail(err);
	pthread_mutex_lock(&rnic_verbs_cm_ids_lock);
	TAILQ_REMOVE(&rnic_verbs_cm_ids, w, next);
	while (w->events != 0)
		pthread_cond_wait(&rnic_verbs_cm_acked, &rnic_verbs_cm_ids_lock);
	pthread_mutex_unlock(&rnic_verbs_cm_ids_lock);
	if (w->sync)
		rdma_destroy_event_channel(w->ibv.channel);
	free(w->ep_qp_attr);
	free(w);
	return 0;
}

#define ID(pub) (RNIC_VERBS_CONTAINER(pub, struct rnic_verbs_cm_id, ibv))

/* librdmacm's ucma_complete: a synchronous id's call waits for its event on the id's channel and keeps it
 * (id->event, acknowledged by the next call or rdma_destroy_id); its status is the call's result. err: the
 * call's own, nothing to wait for unless 0. */
static int
complete(struct rnic_verbs_cm_id *w, int err)
{
	struct rdma_cm_event *ev;

	if (err != 0 || !w->sync)
		return fail(err);
	ack_kept(&w->ibv);
	if (rdma_get_cm_event(w->ibv.channel, &ev) != 0)
		return -1;
	w->ibv.event = ev;
	if (ev->status == 0)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return fail(ECONNREFUSED);
	return fail(ev->status < 0 ? -ev->status : ev->status);
}

int
rdma_bind_addr(struct rdma_cm_id *pub, struct sockaddr *addr)
{
	int err = rnic_cm_bind_addr(ID(pub)->id, addr);

	sync_id(ID(pub));
	return fail(err);
}

int
rdma_resolve_addr(struct rdma_cm_id *pub, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
	int err = rnic_cm_resolve_addr(ID(pub)->id, src, dst, timeout_ms);

	sync_id(ID(pub));
	return complete(ID(pub), err);
}

int
rdma_resolve_route(struct rdma_cm_id *pub, int timeout_ms)
{
	return complete(ID(pub), rnic_cm_resolve_route(ID(pub)->id, timeout_ms));
}

int
rdma_listen(struct rdma_cm_id *pub, int backlog)
{
	int err = rnic_cm_listen(ID(pub)->id, backlog);

	sync_id(ID(pub));
	return fail(err);
}

/* librdmacm's ucma_create_cqs: a completion channel and a CQ for each side the program left out. */
static int
make_cqs(struct rnic_verbs_cm_id *w, struct ibv_qp_init_attr *attr)
{
	if (attr->send_cq == NULL) {
		w->ibv.send_cq_channel = ibv_create_comp_channel(w->ibv.verbs);
		w->ibv.send_cq = w->ibv.send_cq_channel == NULL ? NULL :
			ibv_create_cq(w->ibv.verbs, (int)attr->cap.max_send_wr, &w->ibv, w->ibv.send_cq_channel, 0);
		attr->send_cq = w->ibv.send_cq;
		w->own_cqs |= 1;
	}
	if (attr->recv_cq == NULL) {
		w->ibv.recv_cq_channel = ibv_create_comp_channel(w->ibv.verbs);
		w->ibv.recv_cq = w->ibv.recv_cq_channel == NULL ? NULL :
			ibv_create_cq(w->ibv.verbs, (int)attr->cap.max_recv_wr, &w->ibv, w->ibv.recv_cq_channel, 0);
		attr->recv_cq = w->ibv.recv_cq;
		w->own_cqs |= 2;
	}
	return attr->send_cq != NULL && attr->recv_cq != NULL ? 0 : ENOMEM;
}

static void
free_cqs(struct rnic_verbs_cm_id *w)
{
	if (w->own_cqs & 1) {
		if (w->ibv.send_cq != NULL)
			ibv_destroy_cq(w->ibv.send_cq);
		if (w->ibv.send_cq_channel != NULL)
			ibv_destroy_comp_channel(w->ibv.send_cq_channel);
		w->ibv.send_cq = NULL;
		w->ibv.send_cq_channel = NULL;
	}
	if (w->own_cqs & 2) {
		if (w->ibv.recv_cq != NULL)
			ibv_destroy_cq(w->ibv.recv_cq);
		if (w->ibv.recv_cq_channel != NULL)
			ibv_destroy_comp_channel(w->ibv.recv_cq_channel);
		w->ibv.recv_cq = NULL;
		w->ibv.recv_cq_channel = NULL;
	}
	w->own_cqs = 0;
}

int
rdma_create_qp(struct rdma_cm_id *pub, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct rnic_verbs_cm_id *w = ID(pub);
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	int err;

	if (attr == NULL || w->ibv.verbs == NULL || w->ibv.qp != NULL)
		return fail(EINVAL);
	if (pd == NULL)
		pd = default_pd(w->ibv.verbs);
	if (pd == NULL || pd->context != w->ibv.verbs)
		return fail(EINVAL);
	ia = *attr;
	err = make_cqs(w, &ia);
	qp = err == 0 ? ibv_create_qp(pd, &ia) : NULL;
	if (qp == NULL) {
		err = err != 0 ? err : errno;
		free_cqs(w);
		return fail(err);
	}
	err = rnic_cm_attach_qp(w->id, rnic_verbs_qp(qp)->qp);
	if (err != 0) {
		ibv_destroy_qp(qp);
		free_cqs(w);
		return fail(err);
	}
	attr->cap = ia.cap;
	w->ibv.qp = qp;
	w->ibv.pd = pd;
	return 0;
}

void
rdma_destroy_qp(struct rdma_cm_id *pub)
{
	struct rnic_verbs_cm_id *w = ID(pub);

	if (w->ibv.qp == NULL)
		return;
	rnic_cm_attach_qp(w->id, NULL);
	ibv_destroy_qp(w->ibv.qp);
	w->ibv.qp = NULL;
	free_cqs(w);
}

static struct rnic_conn_param
conn_param(const struct rdma_conn_param *p)
{
	return (struct rnic_conn_param){
		.private_data = p->private_data, .private_data_len = p->private_data_len,
		.responder_resources = p->responder_resources, .initiator_depth = p->initiator_depth,
		.flow_control = p->flow_control, .retry_count = p->retry_count,
		.rnr_retry_count = p->rnr_retry_count, .srq = p->srq, .qp_num = p->qp_num,
	};
}

/* rdma_connect without parameters: librdmacm's defaults, the device's depths (the CM takes them down to what
 * the peer grants) and 7 retries of each kind. */
static struct rnic_conn_param
default_conn_param(const struct rnic_verbs_cm_id *w)
{
	struct ibv_device_attr attr = { 0 };

	if (w->ibv.verbs != NULL)
		ibv_query_device(w->ibv.verbs, &attr);
	return (struct rnic_conn_param){
		.responder_resources = (uint8_t)(attr.max_qp_rd_atom > UINT8_MAX ? UINT8_MAX : attr.max_qp_rd_atom),
		.initiator_depth = (uint8_t)(attr.max_qp_init_rd_atom > UINT8_MAX ? UINT8_MAX : attr.max_qp_init_rd_atom),
		.retry_count = 7, .rnr_retry_count = 7,
	};
}

int
rdma_connect(struct rdma_cm_id *pub, struct rdma_conn_param *p)
{
	struct rnic_conn_param c = p != NULL ? conn_param(p) : default_conn_param(ID(pub));

	return complete(ID(pub), rnic_cm_connect(ID(pub)->id, &c));
}

int
rdma_accept(struct rdma_cm_id *pub, struct rdma_conn_param *p)
{
	struct rnic_conn_param c;

	if (p == NULL)
		return complete(ID(pub), rnic_cm_accept(ID(pub)->id, NULL));
	c = conn_param(p);
	return complete(ID(pub), rnic_cm_accept(ID(pub)->id, &c));
}

int
rdma_reject(struct rdma_cm_id *pub, const void *private_data, uint8_t private_data_len)
{
	return fail(rnic_cm_reject(ID(pub)->id, private_data, private_data_len));
}

int
rdma_disconnect(struct rdma_cm_id *pub)
{
	return complete(ID(pub), rnic_cm_disconnect(ID(pub)->id));
}

int
rdma_set_option(struct rdma_cm_id *pub, int level, int optname, void *optval, size_t optlen)
{
	return fail(rnic_cm_set_option(ID(pub)->id, level, optname, optval, optlen));
}

uint16_t
rdma_get_src_port(struct rdma_cm_id *pub)
{
	return rnic_cm_get_src_port(ID(pub)->id);
}

uint16_t
rdma_get_dst_port(struct rdma_cm_id *pub)
{
	return rnic_cm_get_dst_port(ID(pub)->id);
}

const char *
rdma_event_str(enum rdma_cm_event_type event)
{
	return rnic_cm_event_str((enum rnic_cm_event_type)event);
}

/* The CM's next event of the channel for an id not destroyed, counted on its owner. An event of a destroyed
 * one is acknowledged (a connection request's new id, never the program's, ended: the peer gets a REJ). */
static int
next_event(struct rnic_cm_event_channel *ch, struct rnic_verbs_cm_event *e)
{
	int err;

	for (;;) {
		err = rnic_cm_get_cm_event(ch, &e->ev);
		if (err != 0)
			return err;
		pthread_mutex_lock(&rnic_verbs_cm_ids_lock);
		e->owner = live_id(e->ev->listen_id != NULL ? e->ev->listen_id : e->ev->id);
		if (e->owner != NULL)
			e->owner->events++;
		pthread_mutex_unlock(&rnic_verbs_cm_ids_lock);
		if (e->owner != NULL)
			return 0;
		if (e->ev->listen_id != NULL)
			rnic_cm_destroy_id(e->ev->id);
		rnic_cm_ack_cm_event(e->ev);
	}
}

/* The event's acknowledgement to the CM and to its owner, which rdma_destroy_id may be waiting for. */
static int
release(struct rnic_verbs_cm_event *e)
{
	int err = rnic_cm_ack_cm_event(e->ev);

	pthread_mutex_lock(&rnic_verbs_cm_ids_lock);
	if (--e->owner->events == 0)
		pthread_cond_broadcast(&rnic_verbs_cm_acked);
	pthread_mutex_unlock(&rnic_verbs_cm_ids_lock);
	free(e);
	return err;
}

int
rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **out)
{
	struct rnic_verbs_cm_channel *c = RNIC_VERBS_CONTAINER(channel, struct rnic_verbs_cm_channel, ibv);
	struct rnic_verbs_cm_event *e = calloc(1, sizeof(*e));
	struct rnic_verbs_cm_id *w, *l;
	int err;

	if (e == NULL)
		return fail(ENOMEM);
	err = next_event(c->ch, e);
	if (err != 0) {
		free(e);
		return fail(err);
	}
	/* A connection request's new id gets its view here, on the listener's channel with the listener's
	 * context, as librdmacm's. */
	l = e->ev->listen_id != NULL ? e->owner : NULL;
	w = l != NULL ? wrap_id(e->ev->id, l->ibv.channel, l->ibv.context, l->ibv.ps) : e->owner;
	if (w == NULL) {
		rnic_cm_destroy_id(e->ev->id);
		release(e);
		return fail(ENOMEM);
	}
	sync_id(w);
	e->ibv.id = &w->ibv;
	e->ibv.listen_id = l != NULL ? &l->ibv : NULL;
	e->ibv.event = (enum rdma_cm_event_type)e->ev->event;
	e->ibv.status = e->ev->status;
	e->ibv.param.conn = (struct rdma_conn_param){
		.private_data = e->ev->param.conn.private_data,
		.private_data_len = e->ev->param.conn.private_data_len,
		.responder_resources = e->ev->param.conn.responder_resources,
		.initiator_depth = e->ev->param.conn.initiator_depth,
		.flow_control = e->ev->param.conn.flow_control,
		.retry_count = e->ev->param.conn.retry_count,
		.rnr_retry_count = e->ev->param.conn.rnr_retry_count,
		.srq = e->ev->param.conn.srq,
		.qp_num = e->ev->param.conn.qp_num,
	};
	*out = &e->ibv;
	return 0;
}

/* Touches only the event and its owner: a connection request's new id may be destroyed already. */
int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (event == NULL)
		return fail(EINVAL);
	return fail(release(RNIC_VERBS_CONTAINER(event, struct rnic_verbs_cm_event, ibv)));
}

/* rdma_getaddrinfo for IP addresses: the system's getaddrinfo, the result as an RC address of the TCP port
 * space (the destination, or with RAI_PASSIVE the source). No route or connect data. */
int
rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		 struct rdma_addrinfo **res)
{
	struct addrinfo h = { .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_addrinfo *r;
	struct sockaddr *a;
	int passive = hints != NULL && (hints->ai_flags & RAI_PASSIVE);

	if (res == NULL || (node == NULL && service == NULL))
		return fail(EINVAL);
	if (hints != NULL) {
		h.ai_family = hints->ai_family;
		h.ai_flags = (passive ? AI_PASSIVE : 0) | ((hints->ai_flags & RAI_NUMERICHOST) ? AI_NUMERICHOST : 0);
	}
	if (getaddrinfo(node, service, &h, &ai) != 0)
		return fail(EADDRNOTAVAIL);
	r = calloc(1, sizeof(*r));
	a = r != NULL ? calloc(1, ai->ai_addrlen) : NULL;
	if (a == NULL) {
		free(r);
		freeaddrinfo(ai);
		return fail(ENOMEM);
	}
	memcpy(a, ai->ai_addr, ai->ai_addrlen);
	r->ai_flags = hints != NULL ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints != NULL && hints->ai_qp_type != 0 ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints != NULL && hints->ai_port_space != 0 ? hints->ai_port_space : RDMA_PS_TCP;
	if (passive) {
		r->ai_src_addr = a;
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = a;
		r->ai_dst_len = ai->ai_addrlen;
	}
	freeaddrinfo(ai);
	*res = r;
	return 0;
}

void
rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res != NULL) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}

/* librdmacm's rdma_get_request: a synchronous listener's next connection request, its new id synchronous too
 * (its own channel), with the QP rdma_create_ep asked for; the id holds the event. */
int
rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct rnic_verbs_cm_id *l = ID(listen), *w;
	struct rdma_cm_event *ev;
	int err;

	if (!l->sync || out == NULL)
		return fail(EINVAL);
	ack_kept(listen);
	if (rdma_get_cm_event(listen->channel, &ev) != 0)
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST || ev->status != 0) {
		err = ev->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED :
		      ev->status != 0 ? (ev->status < 0 ? -ev->status : ev->status) : EINVAL;
		listen->event = ev;
		return fail(err);
	}
	/* The new id keeps the request (counted on the listener, as librdmacm's). */
	w = ID(ev->id);
	err = rdma_migrate_id(&w->ibv, NULL) != 0 ? errno : 0;	/* as librdmacm's ucma_process_conn_req */
	if (err == 0 && l->ep_qp_attr != NULL) {
		struct ibv_qp_init_attr attr = *l->ep_qp_attr;

		err = rdma_create_qp(&w->ibv, listen->pd, &attr) != 0 ? errno : 0;
	}
	if (err != 0) {
		if (w->sync)
			rdma_reject(&w->ibv, NULL, 0);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(&w->ibv);
		return fail(err);
	}
	w->ibv.event = ev;
	*out = &w->ibv;
	return 0;
}

/* librdmacm's rdma_create_ep: a synchronous id for an rdma_getaddrinfo result. Passive: bound to its source
 * address, each request's QP made by rdma_get_request from qp_init_attr; active: its address and route
 * resolved and its QP made. */
int
rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
	       struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *id;
	struct rnic_verbs_cm_id *w;
	int ret;

	if (out == NULL || res == NULL)
		return fail(EINVAL);
	if (rdma_create_id(NULL, &id, NULL, (enum rdma_port_space)res->ai_port_space) != 0)
		return -1;
	w = ID(id);
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(id, res->ai_src_addr);
		if (ret == 0 && qp_init_attr != NULL) {
			w->ep_qp_attr = malloc(sizeof(*qp_init_attr));
			if (w->ep_qp_attr != NULL) {
				*w->ep_qp_attr = *qp_init_attr;
				w->ep_qp_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
			} else {
				ret = fail(ENOMEM);
			}
		}
		id->pd = pd;
	} else {
		ret = rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, 2000);
		if (ret == 0)
			ret = rdma_resolve_route(id, 2000);
		if (ret == 0 && qp_init_attr != NULL) {
			qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
			ret = rdma_create_qp(id, pd, qp_init_attr);
		}
	}
	if (ret != 0) {
		int err = errno;

		rdma_destroy_ep(id);
		return fail(err);
	}
	*out = id;
	return 0;
}

void
rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

/* The no-QP mode (a QP made and moved by the program, CONNECT_RESPONSE) is not served (doc/cm.md). */
int
rdma_init_qp_attr(struct rdma_cm_id *pub, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	(void)pub;
	(void)qp_attr;
	(void)qp_attr_mask;
	return fail(ENOSYS);
}

int
rdma_establish(struct rdma_cm_id *pub)
{
	(void)pub;
	return fail(ENOSYS);
}

/* librdmacm's rdma_migrate_id: the id's events, queued and to come, on another channel; without one, a
 * channel of the id's own (synchronous from then on). A synchronous id's own channel goes, with the event
 * its last call kept. */
int
rdma_migrate_id(struct rdma_cm_id *pub, struct rdma_event_channel *channel)
{
	struct rnic_verbs_cm_id *w = ID(pub);
	int sync = channel == NULL, err;

	if (w->sync && sync)
		return fail(EINVAL);
	if (sync) {
		channel = rdma_create_event_channel();
		if (channel == NULL)
			return -1;
	}
	err = rnic_cm_migrate_id(w->id, RNIC_VERBS_CONTAINER(channel, struct rnic_verbs_cm_channel, ibv)->ch);
	if (err != 0) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return fail(err);
	}
	if (w->sync) {
		ack_kept(pub);
		rdma_destroy_event_channel(pub->channel);
	}
	w->sync = (uint8_t)sync;
	pub->channel = channel;
	return 0;
}
