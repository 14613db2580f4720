/* SPDX-License-Identifier: BSD-3-Clause
 * librdmacm's synchronous mode through libsoftrnic-verbs (doc/cm.md), as rdma_server and rdma_client use it:
 * ids without an event channel, rdma_getaddrinfo, rdma_create_ep, rdma_get_request, connect / accept /
 * disconnect that block until their event, and rdma_verbs.h's calls; rdma_migrate_id. A program built against librdmacm and
 * libibverbs, run through softrnic-run with its default engine (rnic0 10.77.0.1 and rnic1 10.77.0.2 joined
 * in the process): the server on a thread, the client on the main one.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define SERVER_IP "10.77.0.1"
#define MSG 64

struct server {
	const char *port;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int listening;
	int result;		/* 0, or the step that failed (errno in err) */
	int err;
	uint8_t got[MSG];
};

static void
ep_attr(struct ibv_qp_init_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->cap.max_send_wr = attr->cap.max_recv_wr = 1;
	attr->cap.max_send_sge = attr->cap.max_recv_sge = 1;
	attr->cap.max_inline_data = 16;
	attr->sq_sig_all = 1;
}

static void
fill(uint8_t *buf, uint8_t seed)
{
	for (int i = 0; i < MSG; i++)
		buf[i] = (uint8_t)(seed + i * 7);
}

static void
set_listening(struct server *s, int v)
{
	pthread_mutex_lock(&s->lock);
	s->listening = v;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

#define STEP(s, n, call) do { if ((call) != 0) { (s)->result = (n); (s)->err = errno; goto out; } } while (0)

/* rdma_server's steps: a passive endpoint, one request, its message received and answered. */
static void *
server_main(void *arg)
{
	struct server *s = arg;
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res = NULL;
	struct rdma_cm_id *listen_id = NULL, *id = NULL;
	struct ibv_mr *mr = NULL, *send_mr = NULL;
	struct ibv_qp_init_attr attr;
	uint8_t recv_buf[MSG], send_buf[MSG];
	struct ibv_wc wc;
	int n;

	ep_attr(&attr);
	fill(send_buf, 0x50);
	STEP(s, 1, rdma_getaddrinfo(SERVER_IP, s->port, &hints, &res));
	STEP(s, 2, rdma_create_ep(&listen_id, res, NULL, &attr));
	STEP(s, 3, rdma_listen(listen_id, 0));
	set_listening(s, 1);
	STEP(s, 4, rdma_get_request(listen_id, &id));
	STEP(s, 5, id->qp == NULL || id->verbs == NULL);
	mr = rdma_reg_msgs(id, recv_buf, MSG);
	send_mr = rdma_reg_msgs(id, send_buf, MSG);
	STEP(s, 6, mr == NULL || send_mr == NULL);
	STEP(s, 7, rdma_post_recv(id, NULL, recv_buf, MSG, mr));
	STEP(s, 8, rdma_accept(id, NULL));
	while ((n = rdma_get_recv_comp(id, &wc)) == 0)
		;
	STEP(s, 9, n < 0 || wc.status != IBV_WC_SUCCESS || wc.byte_len != MSG);
	memcpy(s->got, recv_buf, MSG);
	STEP(s, 10, rdma_post_send(id, NULL, send_buf, MSG, send_mr, 0));
	while ((n = rdma_get_send_comp(id, &wc)) == 0)
		;
	STEP(s, 11, n < 0 || wc.status != IBV_WC_SUCCESS);
	STEP(s, 12, rdma_disconnect(id));
out:
	set_listening(s, -1);
	if (mr != NULL)
		rdma_dereg_mr(mr);
	if (send_mr != NULL)
		rdma_dereg_mr(send_mr);
	if (id != NULL)
		rdma_destroy_ep(id);
	if (listen_id != NULL)
		rdma_destroy_ep(listen_id);
	if (res != NULL)
		rdma_freeaddrinfo(res);
	return NULL;
}

static void
start_server(struct server *s, pthread_t *t, const char *port)
{
	memset(s, 0, sizeof(*s));
	s->port = port;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	assert_int_equal(pthread_create(t, NULL, server_main, s), 0);
	pthread_mutex_lock(&s->lock);
	while (s->listening == 0)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	assert_int_equal(s->listening, 1);
}

/* rdma_client's steps against the server: a message each way, every byte checked, both ends disconnected. */
static void
test_sync_client_server(void **state)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr attr, qattr;
	struct ibv_qp_attr qp_attr;
	struct ibv_mr *mr, *send_mr;
	uint8_t recv_buf[MSG], send_buf[MSG], want[MSG];
	struct server s;
	struct ibv_wc wc;
	pthread_t t;
	int n;

	(void)state;
	start_server(&s, &t, "7611");
	ep_attr(&attr);
	fill(send_buf, 0x11);
	assert_int_equal(rdma_getaddrinfo(SERVER_IP, "7611", &hints, &res), 0);
	assert_int_equal(rdma_create_ep(&id, res, NULL, &attr), 0);
	/* Synchronous: rdma_create_ep returned with the route resolved and the QP made. */
	assert_non_null(id->qp);
	assert_non_null(id->pd);
	assert_non_null(id->recv_cq_channel);
	assert_int_equal(ibv_query_qp(id->qp, &qp_attr, IBV_QP_CAP, &qattr), 0);
	assert_true(qattr.cap.max_inline_data >= 16);
	mr = rdma_reg_msgs(id, recv_buf, MSG);
	send_mr = rdma_reg_msgs(id, send_buf, MSG);
	assert_non_null(mr);
	assert_non_null(send_mr);
	assert_int_equal(rdma_post_recv(id, NULL, recv_buf, MSG, mr), 0);
	if (rdma_connect(id, NULL) != 0) {
		int err = errno;

		pthread_join(t, NULL);
		fail_msg("rdma_connect: %s (server: step %d, %s)", strerror(err), s.result, strerror(s.err));
	}
	/* Blocking connect: the QP is ready to send when it returns. */
	assert_int_equal(ibv_query_qp(id->qp, &qp_attr, IBV_QP_STATE, &qattr), 0);
	assert_int_equal(qp_attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(rdma_post_send(id, NULL, send_buf, MSG, send_mr, 0), 0);
	while ((n = rdma_get_send_comp(id, &wc)) == 0)
		;
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	while ((n = rdma_get_recv_comp(id, &wc)) == 0)
		;
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, MSG);
	fill(want, 0x50);
	assert_memory_equal(recv_buf, want, MSG);
	assert_int_equal(rdma_disconnect(id), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(s.result, 0);
	assert_memory_equal(s.got, send_buf, MSG);
	rdma_dereg_mr(mr);
	rdma_dereg_mr(send_mr);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

/* A port nobody listens on: the blocking connect fails with librdmacm's ECONNREFUSED (a REJ). */
static void
test_sync_refused(void **state)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;

	(void)state;
	ep_attr(&attr);
	assert_int_equal(rdma_getaddrinfo(SERVER_IP, "7612", &hints, &res), 0);
	assert_int_equal(rdma_create_ep(&id, res, NULL, &attr), 0);
	errno = 0;
	assert_int_equal(rdma_connect(id, NULL), -1);
	assert_int_equal(errno, ECONNREFUSED);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

/* The next event of a channel, within 10 s, of the type given, acknowledged unless kept. */
static struct rdma_cm_event *
next_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type, int keep)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e;

	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_int_equal(rdma_get_cm_event(ch, &e), 0);
	if (e->event != type)
		fail_msg("event %s, expected %s", rdma_event_str(e->event), rdma_event_str(type));
	if (!keep) {
		assert_int_equal(rdma_ack_cm_event(e), 0);
		return NULL;
	}
	return e;
}

static int
readable(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

/* The server's address on a port; a listener there on the channel. */
static struct rdma_cm_id *
listener(struct rdma_event_channel *ch, struct sockaddr_in *sa, uint16_t port)
{
	struct rdma_cm_id *l;

	assert_non_null(ch);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, SERVER_IP, &sa->sin_addr), 1);
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)sa), 0);
	assert_int_equal(rdma_listen(l, 4), 0);
	return l;
}

/* A client id on the channel, its route to the server resolved and its QP made. */
static struct rdma_cm_id *
client(struct rdma_event_channel *cch, struct sockaddr_in *sa)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *c;

	assert_non_null(cch);
	assert_int_equal(rdma_create_id(cch, &c, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)sa, 2000), 0);
	next_event(cch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	assert_int_equal(rdma_resolve_route(c, 2000), 0);
	next_event(cch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	ep_attr(&attr);
	attr.qp_type = IBV_QPT_RC;
	assert_int_equal(rdma_create_qp(c, NULL, &attr), 0);
	return c;
}

/* rdma_migrate_id as librdmacm's: a listener moved with a connection request queued takes it to its new
 * channel (the new id on that channel); a new id moved to no channel becomes synchronous (a channel of its
 * own, where its ESTABLISHED comes), and moved back drops that channel with the event it kept; a synchronous
 * id cannot be moved to no channel. The client disconnects; the server's id gets DISCONNECTED where it was moved. */
static void
test_migrate_id(void **state)
{
	struct rdma_event_channel *ch1 = rdma_create_event_channel(), *ch2 = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel(), *own;
	struct sockaddr_in sa;
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
					 .rnr_retry_count = 7 };
	struct rdma_cm_id *l, *c, *s;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_event *e;

	(void)state;
	assert_non_null(ch2);
	l = listener(ch1, &sa, 7613);
	c = client(cch, &sa);
	assert_int_equal(rdma_connect(c, &param), 0);

	assert_int_equal(readable(ch1, 10000), 1);	/* the CONNECT_REQUEST queued on ch1 */
	assert_int_equal(rdma_migrate_id(l, ch2), 0);
	assert_ptr_equal(l->channel, ch2);
	assert_int_equal(readable(ch1, 200), 0);
	e = next_event(ch2, RDMA_CM_EVENT_CONNECT_REQUEST, 1);
	assert_ptr_equal(e->listen_id, l);
	s = e->id;
	assert_ptr_equal(s->channel, ch2);
	assert_int_equal(rdma_ack_cm_event(e), 0);

	assert_int_equal(rdma_migrate_id(s, NULL), 0);	/* synchronous: a channel of its own */
	own = s->channel;
	assert_true(own != NULL && own != ch1 && own != ch2);
	errno = 0;
	assert_int_equal(rdma_migrate_id(s, NULL), -1);
	assert_int_equal(errno, EINVAL);
	ep_attr(&attr);
	attr.qp_type = IBV_QPT_RC;
	assert_int_equal(rdma_create_qp(s, NULL, &attr), 0);
	assert_int_equal(rdma_accept(s, NULL), 0);	/* synchronous: returns once ESTABLISHED */
	assert_non_null(s->event);
	assert_int_equal(s->event->event, RDMA_CM_EVENT_ESTABLISHED);
	next_event(cch, RDMA_CM_EVENT_ESTABLISHED, 0);
	assert_int_equal(rdma_migrate_id(s, ch1), 0);	/* its own channel goes, with the event it kept */
	assert_ptr_equal(s->channel, ch1);
	assert_null(s->event);

	assert_int_equal(rdma_disconnect(c), 0);
	next_event(ch1, RDMA_CM_EVENT_DISCONNECTED, 0);
	assert_int_equal(rdma_disconnect(s), 0);
	next_event(cch, RDMA_CM_EVENT_DISCONNECTED, 0);
	assert_int_equal(readable(ch2, 0), 0);
	rdma_destroy_qp(s);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(s), 0);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(ch1);
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(cch);
}

/* An event thread's late acknowledgement (test_destroy_waits_for_ack). */
struct late_ack {
	struct rdma_cm_event *e;
	pthread_mutex_t lock;
	int acked;
};

static void *
ack_late(void *arg)
{
	struct late_ack *a = arg;

	usleep(200000);
	pthread_mutex_lock(&a->lock);
	a->acked = 1;
	pthread_mutex_unlock(&a->lock);
	rdma_ack_cm_event(a->e);
	return NULL;
}

/* librdmacm's rdma_destroy_id blocks until the id's events are acknowledged (rdma_get_cm_event(3)): rping's
 * server destroys its connection's id as soon as its event thread has seen DISCONNECTED, which the thread
 * acknowledges after (an id freed under it was a heap-use-after-free of rping's event thread). And a new id
 * destroyed while its connection request is held does not wait for it: the request counts on the listener,
 * and its acknowledgement afterwards touches no freed id. */
static void
test_destroy_waits_for_ack(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *cch = rdma_create_event_channel();
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
					 .rnr_retry_count = 7 };
	struct late_ack a = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct rdma_cm_id *l, *c[2], *s;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_event *e;
	struct sockaddr_in sa;
	pthread_t t;

	(void)state;
	l = listener(ch, &sa, 7614);
	for (int i = 0; i < 2; i++)
		c[i] = client(cch, &sa);

	/* The first request refused by destroying its id, the request still held. */
	assert_int_equal(rdma_connect(c[0], &param), 0);
	e = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 1);
	assert_int_equal(rdma_destroy_id(e->id), 0);
	assert_int_equal(rdma_ack_cm_event(e), 0);
	next_event(cch, RDMA_CM_EVENT_REJECTED, 0);

	/* The second connected, then disconnected by the client. */
	assert_int_equal(rdma_connect(c[1], &param), 0);
	e = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 1);
	s = e->id;
	assert_int_equal(rdma_ack_cm_event(e), 0);
	ep_attr(&attr);
	attr.qp_type = IBV_QPT_RC;
	assert_int_equal(rdma_create_qp(s, NULL, &attr), 0);
	assert_int_equal(rdma_accept(s, NULL), 0);
	next_event(cch, RDMA_CM_EVENT_ESTABLISHED, 0);
	next_event(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	assert_int_equal(rdma_disconnect(c[1]), 0);
	a.e = next_event(ch, RDMA_CM_EVENT_DISCONNECTED, 1);
	assert_ptr_equal(a.e->id, s);
	assert_int_equal(pthread_create(&t, NULL, ack_late, &a), 0);
	rdma_destroy_qp(s);
	assert_int_equal(rdma_destroy_id(s), 0);	/* returns once the thread has acknowledged */
	pthread_mutex_lock(&a.lock);
	assert_int_equal(a.acked, 1);
	pthread_mutex_unlock(&a.lock);
	assert_int_equal(pthread_join(t, NULL), 0);

	next_event(cch, RDMA_CM_EVENT_DISCONNECTED, 0);
	for (int i = 0; i < 2; i++) {
		rdma_destroy_qp(c[i]);
		assert_int_equal(rdma_destroy_id(c[i]), 0);
	}
	assert_int_equal(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(cch);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_client_server),
		cmocka_unit_test(test_sync_refused),
		cmocka_unit_test(test_migrate_id),
		cmocka_unit_test(test_destroy_waits_for_ack),
	};

	alarm(100);	/* a blocking call that never returns fails the test instead of hanging it */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
