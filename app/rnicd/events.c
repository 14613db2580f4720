/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd's events for its clients (doc/rnicd.md, "Events"): the engine raises a session's async events on the
 * daemon's context, and its CQs' completion events on one completion channel of the daemon's per session;
 * the control loop takes them (both fds are in its poll set), names the object by the client's handle and
 * sends each as one message (struct rnicd_event) on a socket the client holds the other end of: the
 * context's async_fd, or the client's completion channel's fd. A client that does not read them loses
 * events (its socket is full: counted and said once), and stalls nobody.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnicd.h"

int
rnicd_event_socket(int *daemon_end, int *client_end)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return errno;
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
		int err = errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	*daemon_end = sv[0];
	*client_end = sv[1];
	return 0;
}

static int
set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ? errno : 0;
}

int
rnicd_events_open(struct rnicd_session *s, int *client_end)
{
	/* Read by the control loop only when poll() says an event is there; never block it. */
	int ret = set_nonblock(s->ctx->async_fd);

	if (ret == 0)
		ret = rnicd_event_socket(&s->async_sock, client_end);
	return ret;
}

static void
send_event(struct rnicd_session *s, int sock, const struct rnicd_event *ev)
{
	uint32_t left_out;

	if (send(sock, ev, sizeof(*ev), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(*ev))
		return;
	if (errno != EAGAIN && errno != ENOBUFS)
		return;		/* the client closed its end: nobody waits for the event */
	s->events_dropped++;
	if (!s->events_logged && rnicd_tenant_log_ok(s->tenant, &left_out))
		RNICD_LOG(WARNING, "client %u (pid %d): its event socket is full (it does not read its events): "
			  "events dropped", s->id, (int)s->pid);
	s->events_logged = 1;
}

static struct rnicd_channel *
channel_get(struct rnicd_session *s, uint32_t handle)
{
	return handle >= 1 && handle <= RNICD_MAX_CHANNELS && s->chan[handle - 1].used ? &s->chan[handle - 1] : NULL;
}

int
rnicd_events_create_channel(struct rnicd_session *s, struct rnicd_rep *rep, int *client_end, int *daemon_end)
{
	struct rnicd_channel *ch = NULL;
	int ret;

	for (uint32_t i = 0; i < RNICD_MAX_CHANNELS && ch == NULL; i++)
		if (!s->chan[i].used)
			ch = &s->chan[i];
	if (ch == NULL)
		return EDQUOT;
	/* The daemon's one channel of the session, for every CQ that has a client's channel. */
	if (s->evch == NULL) {
		s->evch = rnic_create_comp_channel(s->ctx);
		if (s->evch == NULL)
			return errno;
		ret = set_nonblock(s->evch->fd);
		if (ret != 0)
			return ret;
	}
	ret = rnicd_event_socket(&ch->sock, client_end);
	if (ret != 0)
		return ret;
	ch->used = 1;
	ch->cqs = 0;
	*daemon_end = ch->sock;
	rep->u.obj.handle = (uint32_t)(ch - s->chan) + 1;
	return 0;
}

int
rnicd_events_destroy_channel(struct rnicd_session *s, uint32_t handle)
{
	struct rnicd_channel *ch = channel_get(s, handle);

	if (ch == NULL)
		return ENOENT;
	if (ch->cqs != 0)
		return EBUSY;
	close(ch->sock);
	ch->used = 0;
	return 0;
}

int
rnicd_events_cq_channel(struct rnicd_session *s, uint32_t handle, struct rnic_comp_channel **evch, void **cq_context)
{
	struct rnicd_channel *ch;

	*evch = NULL;
	*cq_context = NULL;
	if (handle == 0)
		return 0;
	ch = channel_get(s, handle);
	if (ch == NULL)
		return ENOENT;
	*evch = s->evch;
	*cq_context = (void *)(uintptr_t)handle;	/* the daemon's CQ context: its client's channel */
	return 0;
}

void
rnicd_events_cq_bound(struct rnicd_session *s, const struct rnic_cq *cq, int delta)
{
	struct rnicd_channel *ch = channel_get(s, (uint32_t)(uintptr_t)cq->cq_context);

	if (ch != NULL)
		ch->cqs = (uint32_t)((int)ch->cqs + delta);
}

/* Completion events: CQ handle to the client's channel of the CQ. */
static void
forward_completions(struct rnicd_session *s)
{
	struct rnic_cq *cq;
	void *cq_context;

	while (s->evch != NULL && rnic_get_cq_event(s->evch, &cq, &cq_context) == 0) {
		struct rnicd_channel *ch = channel_get(s, (uint32_t)(uintptr_t)cq_context);
		struct rnicd_event ev = { .handle = rnicd_session_handle_of(s, cq, OBJ_CQ) };

		/* The daemon's view of the event is done: the client acknowledges its own. */
		rnic_ack_cq_events(cq, 1);
		if (ch != NULL && ev.handle != 0)
			send_event(s, ch->sock, &ev);
	}
}

/* Async events: the QP, CQ or SRQ named by the client's handle. An event about an object the session no longer
 * has (it went between the event and now) is dropped without touching it. */
static void
forward_async(struct rnicd_session *s)
{
	struct rnic_async_event e;

	while (s->ctx != NULL && rnic_get_async_event(s->ctx, &e) == 0) {
		struct rnicd_event ev = { .event_type = (uint32_t)e.event_type };

		switch (e.event_type) {
		case RNIC_EVENT_CQ_ERR:
			ev.handle = rnicd_session_handle_of(s, e.element.cq, OBJ_CQ);
			break;
		case RNIC_EVENT_SRQ_ERR:
		case RNIC_EVENT_SRQ_LIMIT_REACHED:
			ev.handle = rnicd_session_handle_of(s, e.element.srq, OBJ_SRQ);
			break;
		case RNIC_EVENT_DEVICE_FATAL:
		case RNIC_EVENT_PORT_ACTIVE:
		case RNIC_EVENT_PORT_ERR:
		case RNIC_EVENT_LID_CHANGE:
		case RNIC_EVENT_PKEY_CHANGE:
		case RNIC_EVENT_SM_CHANGE:
		case RNIC_EVENT_CLIENT_REREGISTER:
		case RNIC_EVENT_GID_CHANGE:
			ev.port_num = (uint32_t)e.element.port_num;
			rnic_ack_async_event(&e);
			send_event(s, s->async_sock, &ev);
			continue;
		default:
			ev.handle = rnicd_session_handle_of(s, e.element.qp, OBJ_QP);
			break;
		}
		if (ev.handle == 0)
			continue;
		rnic_ack_async_event(&e);
		send_event(s, s->async_sock, &ev);
	}
}

void
rnicd_events_forward(struct rnicd_session *s)
{
	forward_async(s);
	forward_completions(s);
}

int
rnicd_events_fds(const struct rnicd_session *s, int *fds)
{
	int n = 0;

	if (s->ctx != NULL && s->async_sock >= 0)
		fds[n++] = s->ctx->async_fd;
	if (s->evch != NULL)
		fds[n++] = s->evch->fd;
	return n;
}

void
rnicd_events_close(struct rnicd_session *s)
{
	for (uint32_t i = 0; i < RNICD_MAX_CHANNELS; i++) {
		if (s->chan[i].used)
			close(s->chan[i].sock);
		s->chan[i].used = 0;
	}
	if (s->evch != NULL && rnic_destroy_comp_channel(s->evch) == 0)
		s->evch = NULL;
	if (s->async_sock >= 0)
		close(s->async_sock);
	s->async_sock = -1;
}
