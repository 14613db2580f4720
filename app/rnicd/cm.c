/* SPDX-License-Identifier: BSD-3-Clause
 * The connection manager through rnicd (doc/cm.md, "Through rnicd"): the daemon runs the one CM of its
 * devices (lib/cm: QP1 on each, the CM's thread, the timers, every id's state machine) and serves its
 * clients' rnic_cm_* calls on it. A session's channels and ids are handles of its own tables
 * (id << 16 | index + 1), with the daemon's rnic_cm_event_channel and rnic_cm_id behind them: a handle of
 * another session names nothing (ENOENT). A connection request reaches the channel of the listener it
 * matched, which is the session's that listens: a tenant sees its own listeners' requests only, and ports
 * outside its `cm-ports` are refused (EACCES). A QP the CM drives is one of the same process's (pid and
 * tenant); the CM moves it in the daemon, as in-process.
 *
 * Events stay queued in the daemon. Each channel has a socketpair whose one end is the client's channel fd,
 * kept readable exactly while the daemon's queue holds an event, as the channel's own eventfd is
 * (rnic_cm_channel_set_notify): a wakeup sent with each event queued, and with the last one taken or
 * dropped (an id destroyed), the client's end drained by the daemon itself, which holds it too. Both with
 * MSG_DONTWAIT, which no flag the client sets on its descriptor changes: a client that reads its end, or
 * never does, only confuses its own readiness. Events taken and not acknowledged hold their ids:
 * RNICD_CM_HELD a session at most.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_common.h>

#include "rnicd.h"
#include "rnic_cm.h"

#define RNICD_CM_CHANNELS 16		/* a session's CM channels */
#define RNICD_CM_IDS 256		/* its ids: past it (or the tenant's max-cm-ids), EDQUOT, and connection
					 * requests refused */
#define RNICD_CM_HELD 256		/* events taken and not yet acknowledged: past it, ENOBUFS */
#define HANDLE_SHIFT 16

struct cm_chan {
	struct rnic_cm_event_channel *ch;	/* NULL: free */
	int wake;				/* the daemon's end of the wakeup socket */
	int client;				/* the client's end (a copy of what the client holds) */
};

struct rnicd_cm {
	struct cm_chan chan[RNICD_CM_CHANNELS];
	struct rnic_cm_id *id[RNICD_CM_IDS];
	struct {
		struct rnic_cm_event *ev;	/* NULL: free */
		uint64_t token;
	} held[RNICD_CM_HELD];
	uint64_t next_token;
};

/* ------------------------------------------------------------------------------------------------------ */
/* Handles                                                                                                  */

static uint32_t
handle_of(const struct rnicd_session *s, uint32_t index)
{
	return (s->id & 0xffff) << HANDLE_SHIFT | (index + 1);
}

/* The index a handle of this session names in a table of n, or -1. */
static int
index_of(const struct rnicd_session *s, uint32_t handle, uint32_t n)
{
	uint32_t index = (handle & 0xffff) - 1;

	return handle >> HANDLE_SHIFT == (s->id & 0xffff) && index < n ? (int)index : -1;
}

static struct cm_chan *
chan_get(struct rnicd_session *s, uint32_t handle)
{
	int i = index_of(s, handle, RNICD_CM_CHANNELS);

	return i >= 0 && s->cm->chan[i].ch != NULL ? &s->cm->chan[i] : NULL;
}

static struct rnic_cm_id *
id_get(struct rnicd_session *s, uint32_t handle)
{
	int i = index_of(s, handle, RNICD_CM_IDS);

	return i >= 0 ? s->cm->id[i] : NULL;
}

/* The handle of one of the session's ids, or 0. */
static uint32_t
id_handle(const struct rnicd_session *s, const struct rnic_cm_id *id)
{
	for (uint32_t i = 0; i < RNICD_CM_IDS; i++)
		if (s->cm->id[i] == id)
			return handle_of(s, i);
	return 0;
}

/* A free place in the session's id table, or -1. */
static int
id_slot(const struct rnicd_session *s)
{
	for (uint32_t i = 0; i < RNICD_CM_IDS; i++)
		if (s->cm->id[i] == NULL)
			return (int)i;
	return -1;
}

static void
view_of(struct rnic_cm_id *id, struct rnicd_cm_view *v)
{
	v->route = id->route;
	v->dev_index = rnic_cm_id_dev_index(id);
	v->port_num = id->port_num;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Channels and events                                                                                      */

/* An event was queued on the channel / its last one left it (under the CM's lock): the client's end polls
 * readable / no longer. A full socket already polls readable. */
static void
wake(void *arg, int readable)
{
	const struct cm_chan *c = arg;
	char b[16] = { 1 };

	if (!readable) {
		while (recv(c->client, b, sizeof(b), MSG_DONTWAIT) >= 0)
			;
		return;
	}
	if (send(c->wake, b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN && errno != ENOBUFS)
		RNIC_LOG_LIMITED(DEBUG, "rnicd CM: wakeup: %s", strerror(errno));
}

static int
create_channel(struct rnicd_session *s, struct rnicd_rep *rep, int *fd_out)
{
	struct cm_chan *c = NULL;
	int ret;

	for (uint32_t i = 0; i < RNICD_CM_CHANNELS && c == NULL; i++)
		if (s->cm->chan[i].ch == NULL)
			c = &s->cm->chan[i];
	if (c == NULL)
		return EDQUOT;
	ret = rnicd_event_socket(&c->wake, &c->client);
	if (ret != 0)
		return ret;
	shutdown(c->wake, SHUT_RD);	/* what the client writes there is nobody's */
	c->ch = rnic_cm_create_event_channel();
	if (c->ch == NULL) {
		ret = errno;
		close(c->wake);
		close(c->client);
		return ret;
	}
	rnic_cm_channel_set_notify(c->ch, wake, c);
	*fd_out = c->client;		/* sent, and kept */
	rep->u.cm.handle = handle_of(s, (uint32_t)(c - s->cm->chan));
	return 0;
}

static void
close_channel(struct cm_chan *c)
{
	rnic_cm_destroy_event_channel(c->ch);	/* its events dropped: after it, no wakeup */
	close(c->wake);
	close(c->client);
	c->ch = NULL;
}

/* EBUSY while an id of the session has its events there (the CM would queue them on a freed channel). */
static int
destroy_channel(struct rnicd_session *s, const struct rnicd_req *req)
{
	struct cm_chan *c = chan_get(s, req->u.cm.channel);

	if (c == NULL)
		return ENOENT;
	for (uint32_t i = 0; i < RNICD_CM_IDS; i++)
		if (s->cm->id[i] != NULL && s->cm->id[i]->channel == c->ch)
			return EBUSY;
	close_channel(c);
	return 0;
}

/* The id a taken event names, in the session's table: a connection request's new id gets its place there;
 * with none free it is refused (the peer gets a REJ) and 0 returned. */
static uint32_t
event_id(struct rnicd_session *s, struct rnic_cm_event *ev)
{
	uint32_t handle = id_handle(s, ev->id), left_out;
	int i;

	if (handle != 0 || ev->event != RNIC_CM_EVENT_CONNECT_REQUEST)
		return handle;
	i = id_slot(s);
	if (i >= 0 && rnicd_tenant_charge(s->tenant, RNICD_RES_CM_ID, 1, s->pid) == 0) {
		s->cm->id[i] = ev->id;
		rnicd.stats.cm_ids_live++;
		return handle_of(s, (uint32_t)i);
	}
	rnicd.stats.cm_requests_dropped++;
	if (rnicd_tenant_log_ok(s->tenant, &left_out))
		RNICD_LOG(WARNING, "client %u (pid %d, tenant %s): a connection request refused: no room for its "
			  "CM id (the connection's %u, or the tenant's max-cm-ids)", s->id, (int)s->pid, s->tenant->name,
			  RNICD_CM_IDS);
	rnic_cm_destroy_id(ev->id);
	return 0;
}

static int
get_event(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep)
{
	struct cm_chan *c = chan_get(s, req->u.cm.channel);
	struct rnic_cm_event *ev;
	uint32_t slot;
	int ret;

	if (c == NULL)
		return ENOENT;
	for (slot = 0; slot < RNICD_CM_HELD && s->cm->held[slot].ev != NULL; slot++)
		;
	if (slot == RNICD_CM_HELD)
		return ENOBUFS;		/* acknowledge some first */
	do {
		ret = rnic_cm_take_event(c->ch, &ev);
		if (ret != 0)
			return ret;	/* EAGAIN: none */
		rep->u.cm_event.id = event_id(s, ev);
		if (rep->u.cm_event.id == 0)
			rnic_cm_ack_cm_event(ev);
	} while (rep->u.cm_event.id == 0);
	rep->u.cm_event.listen_id = ev->listen_id != NULL ? id_handle(s, ev->listen_id) : 0;
	rep->u.cm_event.event = (int32_t)ev->event;
	rep->u.cm_event.status = ev->status;
	rep->u.cm_event.conn = ev->param.conn;
	rep->u.cm_event.conn.private_data = NULL;
	if (ev->param.conn.private_data != NULL)
		memcpy(rep->u.cm_event.private_data, ev->param.conn.private_data,
		       RTE_MIN(ev->param.conn.private_data_len, (uint8_t)RNICD_CM_EVENT_PRIVATE));
	view_of(ev->id, &rep->u.cm_event.view);
	s->cm->held[slot].ev = ev;
	s->cm->held[slot].token = ++s->cm->next_token;
	rep->u.cm_event.token = s->cm->held[slot].token;
	return 0;
}

static int
ack_event(struct rnicd_session *s, const struct rnicd_req *req)
{
	for (uint32_t i = 0; i < RNICD_CM_HELD; i++) {
		if (s->cm->held[i].ev == NULL || s->cm->held[i].token != req->u.cm.token)
			continue;
		rnic_cm_ack_cm_event(s->cm->held[i].ev);
		s->cm->held[i].ev = NULL;
		return 0;
	}
	return ENOENT;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Ids                                                                                                      */

static int
create_id(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep)
{
	struct cm_chan *c = chan_get(s, req->u.cm.channel);
	int i = id_slot(s), ret;

	if (c == NULL)
		return ENOENT;
	if (i < 0 || rnicd_tenant_charge(s->tenant, RNICD_RES_CM_ID, 1, s->pid) != 0)
		return EDQUOT;
	ret = rnic_cm_create_id(c->ch, &s->cm->id[i], NULL, (enum rnic_port_space)req->u.cm.arg);
	if (ret != 0) {
		rnicd_tenant_release(s->tenant, RNICD_RES_CM_ID, 1);
		return ret;
	}
	rnicd.stats.cm_ids_live++;
	rep->u.cm.handle = handle_of(s, (uint32_t)i);
	return 0;
}

static void
destroy_id(struct rnicd_session *s, uint32_t index)
{
	/* Its QP stays the client's, and nothing of the CM may reach it after (the QP may go first). */
	rnic_cm_attach_qp(s->cm->id[index], NULL);
	rnic_cm_destroy_id(s->cm->id[index]);
	s->cm->id[index] = NULL;
	rnicd_tenant_release(s->tenant, RNICD_RES_CM_ID, 1);
	rnicd.stats.cm_ids_live--;
}

/* An address from a client: AF_INET or AF_INET6 (family 0: none, where none may be), and its port within
 * the tenant's cm-ports. */
static int
check_addr(struct rnicd_session *s, const struct sockaddr_storage *a, int may_be_none)
{
	uint16_t port;

	if (a->ss_family == 0 && may_be_none)
		return 0;
	if (a->ss_family == AF_INET)
		port = ((const struct sockaddr_in *)a)->sin_port;
	else if (a->ss_family == AF_INET6)
		port = ((const struct sockaddr_in6 *)a)->sin6_port;
	else
		return EAFNOSUPPORT;
	return rnicd_tenant_cm_port_check(s->tenant, rte_be_to_cpu_16(port), s->pid);
}

static int
resolve_addr(struct rnicd_session *s, struct rnic_cm_id *id, struct rnicd_req *req)
{
	int ret = check_addr(s, &req->u.cm.src, 1);

	if (ret == 0 && req->u.cm.dst.ss_family != AF_INET && req->u.cm.dst.ss_family != AF_INET6)
		ret = EAFNOSUPPORT;
	if (ret != 0)
		return ret;
	return rnic_cm_resolve_addr(id, req->u.cm.src.ss_family != 0 ? (struct sockaddr *)&req->u.cm.src : NULL,
				    (struct sockaddr *)&req->u.cm.dst, req->u.cm.arg);
}

static int
attach_qp(struct rnicd_session *s, struct rnic_cm_id *id, const struct rnicd_req *req)
{
	struct rnic_qp *qp;

	int ret;

	if (req->u.cm.qp == 0)
		return rnic_cm_attach_qp(id, NULL);
	qp = rnicd_session_qp(s, (uint32_t)req->u.cm.arg2, req->u.cm.qp);
	if (qp == NULL)
		return ENOENT;
	/* The CM's connections send from the device's GID index 0 (rnic_cm_qp_connect): the tenant's gids
	 * must allow it, as for a MODIFY_QP of its own. */
	ret = rnicd_tenant_gid_check(s->tenant, 0, s->pid);
	return ret != 0 ? ret : rnic_cm_attach_qp(id, qp);
}

/* CONNECT, ACCEPT (arg 0: without parameters), REJECT: the parameters with the private data sent along. */
static int
connection(struct rnic_cm_id *id, struct rnicd_req *req)
{
	struct rnic_conn_param *p = &req->u.cm.conn;

	if (p->private_data_len > RNICD_CM_MAX_PRIVATE)
		return EINVAL;
	p->private_data = p->private_data_len != 0 ? req->u.cm.private_data : NULL;
	switch (req->cmd) {
	case RNICD_CM_CONNECT:
		return rnic_cm_connect(id, p);
	case RNICD_CM_ACCEPT:
		return rnic_cm_accept(id, req->u.cm.arg != 0 ? p : NULL);
	default:
		return rnic_cm_reject(id, p->private_data, p->private_data_len);
	}
}

/* Requests about one id, whose view the reply carries. */
static int
id_request(struct rnicd_session *s, struct rnicd_req *req, struct rnicd_rep *rep)
{
	struct rnic_cm_id *id = id_get(s, req->u.cm.id);
	struct cm_chan *c;
	int ret;

	if (id == NULL)
		return ENOENT;
	switch (req->cmd) {
	case RNICD_CM_DESTROY_ID:
		destroy_id(s, (uint32_t)index_of(s, req->u.cm.id, RNICD_CM_IDS));
		return 0;
	case RNICD_CM_MIGRATE_ID:
		c = chan_get(s, req->u.cm.channel);
		ret = c == NULL ? ENOENT : rnic_cm_migrate_id(id, c->ch);
		break;
	case RNICD_CM_BIND:
		ret = check_addr(s, &req->u.cm.src, 0);
		if (ret == 0)
			ret = rnic_cm_bind_addr(id, (struct sockaddr *)&req->u.cm.src);
		break;
	case RNICD_CM_RESOLVE_ADDR:
		ret = resolve_addr(s, id, req);
		break;
	case RNICD_CM_RESOLVE_ROUTE:
		ret = rnic_cm_resolve_route(id, req->u.cm.arg);
		break;
	case RNICD_CM_LISTEN:
		ret = rnic_cm_listen(id, req->u.cm.arg);	/* bound within cm-ports, or to an ephemeral port */
		break;
	case RNICD_CM_ATTACH_QP:
		ret = attach_qp(s, id, req);
		break;
	case RNICD_CM_DISCONNECT:
		ret = rnic_cm_disconnect(id);
		break;
	case RNICD_CM_SET_OPTION:
		ret = req->u.cm.optlen == 0 || req->u.cm.optlen > sizeof(req->u.cm.private_data) ? EINVAL :
		      rnic_cm_set_option(id, req->u.cm.arg, req->u.cm.arg2, req->u.cm.private_data, req->u.cm.optlen);
		break;
	default:
		ret = connection(id, req);
		break;
	}
	view_of(id, &rep->u.cm.view);
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Requests and departures                                                                                  */

int
rnicd_cm_serve(struct rnicd_session *s, const struct rnicd_req *in, struct rnicd_rep *rep, int *fd_out)
{
	struct rnicd_req req = *in;	/* the private data pointer is set in the copy */

	*fd_out = -1;
	if (s->cm == NULL && (s->cm = calloc(1, sizeof(*s->cm))) == NULL)
		return ENOMEM;
	switch (req.cmd) {
	case RNICD_CM_CREATE_CHANNEL:
		return create_channel(s, rep, fd_out);
	case RNICD_CM_DESTROY_CHANNEL:
		return destroy_channel(s, &req);
	case RNICD_CM_CREATE_ID:
		return create_id(s, &req, rep);
	case RNICD_CM_GET_EVENT:
		return get_event(s, &req, rep);
	case RNICD_CM_ACK_EVENT:
		return ack_event(s, &req);
	default:
		return id_request(s, &req, rep);
	}
}

void
rnicd_cm_end(struct rnicd_session *s)
{
	uint32_t left_out, ids = 0;

	if (s->cm == NULL)
		return;
	for (uint32_t i = 0; i < RNICD_CM_IDS; i++) {
		if (s->cm->id[i] == NULL)
			continue;
		destroy_id(s, i);
		rnicd.stats.cm_ids_freed++;
		ids++;
	}
	for (uint32_t i = 0; i < RNICD_CM_HELD; i++)
		if (s->cm->held[i].ev != NULL)
			rnic_cm_ack_cm_event(s->cm->held[i].ev);
	for (uint32_t i = 0; i < RNICD_CM_CHANNELS; i++)
		if (s->cm->chan[i].ch != NULL)
			close_channel(&s->cm->chan[i]);
	if (ids != 0 && rnicd_tenant_log_ok(s->tenant, &left_out))
		RNICD_LOG(INFO, "client %u (pid %d, tenant %s) went with %u CM ids: destroyed (their peers told)",
			  s->id, (int)s->pid, s->tenant->name, ids);
	free(s->cm);
	s->cm = NULL;
}

void
rnicd_cm_qp_gone(struct rnic_qp *qp)
{
	for (struct rnicd_session *s = rnicd.sessions; s != NULL; s = s->next)
		for (uint32_t i = 0; s->cm != NULL && i < RNICD_CM_IDS; i++)
			if (s->cm->id[i] != NULL && s->cm->id[i]->qp == qp)
				rnic_cm_attach_qp(s->cm->id[i], NULL);
}
