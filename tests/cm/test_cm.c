/* SPDX-License-Identifier: BSD-3-Clause
 * The connection manager (rnic_cm_*, lib/cm) between the two devices of the loopback pair in one process, as
 * librdmacm programs use it: a server listening on device 0's address, a client on device 1 resolving it,
 * connecting, moving data over the connection and disconnecting; a REQ nobody listens for; a rejection; CM
 * MADs lost on the way (the fault layer on QP1's frames) and retried; a peer that vanishes in the middle of
 * the handshake. The engine runs with a fault layer that drops nothing until a test says otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "cm_test.h"
#include "rnic.h"
#include "rnic_cm.h"
#include "test_env.h"
#include "rnic_fault.h"
#include "rnic_priv.h"

#define PORT 7471
#define BUF 65536

static int g_argc;
static char **g_argv;
static struct rnic_cm_event_channel *sch, *cch;	/* server's and client's channels */
static union rnic_gid server_gid;		/* device 0's address: IPv4 or IPv6, as the engine's arguments say */

/* An address of the server's device, or of nobody when nowhere is set, at the port given. */
static struct sockaddr_storage
addr_at(uint16_t port, int nowhere)
{
	union rnic_gid gid = server_gid;
	struct sockaddr_storage a;

	if (nowhere)
		gid.raw[15] ^= 0x5a;	/* on the loopback pair no device has it */
	rnic_cm_gid_to_addr(&gid, htons(port), &a);
	return a;
}

/* The next event of a channel within `seconds`, which must be of the type given. A TIMEWAIT_EXIT is passed
 * over unless asked for: a connection a test ended leaves TIMEWAIT in its own time (test_timewait_exit). */
static struct rnic_cm_event *
expect_event(struct rnic_cm_event_channel *ch, enum rnic_cm_event_type type, double seconds)
{
	double end = test_now_s() + seconds;
	struct rnic_cm_event *e = NULL;

	for (;;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		double left = end - test_now_s();

		if (left < 0 || poll(&pfd, 1, (int)(left * 1000)) != 1)
			fail_msg("no event within %.1f s (waiting for %s)", seconds, rnic_cm_event_str(type));
		assert_int_equal(rnic_cm_get_cm_event(ch, &e), 0);
		if (e->event != RNIC_CM_EVENT_TIMEWAIT_EXIT || type == RNIC_CM_EVENT_TIMEWAIT_EXIT)
			break;
		assert_int_equal(rnic_cm_ack_cm_event(e), 0);
	}
	if (e->event != type)
		fail_msg("event %s (status %d), expected %s", rnic_cm_event_str(e->event), e->status,
			 rnic_cm_event_str(type));
	return e;
}

static void
ack(struct rnic_cm_event *e)
{
	assert_int_equal(rnic_cm_ack_cm_event(e), 0);
}

static void
no_event(struct rnic_cm_event_channel *ch, double seconds)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, (int)(seconds * 1000)), 0);
}

/* Whether the channel has no event: its fd does not poll readable and a non-blocking get says EAGAIN (the
 * fd left non-blocking). */
static void
no_event_nonblocking(struct rnic_cm_event_channel *ch)
{
	struct rnic_cm_event *e;

	no_event(ch, 0.2);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	assert_int_equal(rnic_cm_get_cm_event(ch, &e), EAGAIN);
}

static uint64_t
cm_counter(int dev, const char *name)
{
	struct rnic_counter c[64];
	int n = rnic_cm_query_counters(rnic_cm.dev[dev].ctx, c, 64);

	assert_true(n > 0 && n <= 64);
	for (int i = 0; i < n; i++)
		if (strcmp(c[i].name, name) == 0)
			return c[i].value;
	fail_msg("no counter %s", name);
	return 0;
}

/* The CM messages device DEV's CM has sent, first tries and retries (an earlier test's connection may
 * still retry while a later test counts what its peer receives). */
static uint64_t
cm_sent(int dev)
{
	static const char *const sent[] = { "cm_req_sent", "cm_mra_sent", "cm_rej_sent", "cm_rep_sent",
					     "cm_rtu_sent", "cm_dreq_sent", "cm_drep_sent", "cm_retransmits" };
	uint64_t n = 0;

	for (unsigned int i = 0; i < RTE_DIM(sent); i++)
		n += cm_counter(dev, sent[i]);
	return n;
}

static void
set_u8(struct rnic_cm_id *id, int level, int name, uint8_t v)
{
	assert_int_equal(rnic_cm_set_option(id, level, name, &v, sizeof(v)), 0);
}

/* CM timers for tests that lose MADs: a 16 ms packet life time and a 128 ms response timeout, so a lost MAD
 * costs ~160 ms and 15 retries last 2.5 s, longer than a loaded machine stalls the engine's lcore; with 3
 * retries (a peer that vanishes), ~24 ms each (retries 0: Linux's timers, 4.6 s a try). */
static void
fast_timers(struct rnic_cm_id *id, uint8_t retries)
{
	if (retries == 0)
		return;
	set_u8(id, RNIC_OPTION_SOFTRNIC, RNIC_OPTION_CM_PACKET_LIFETIME, retries > 3 ? 12 : 10);
	set_u8(id, RNIC_OPTION_SOFTRNIC, RNIC_OPTION_CM_RESPONSE_TIMEOUT, retries > 3 ? 15 : 12);
	set_u8(id, RNIC_OPTION_SOFTRNIC, RNIC_OPTION_CM_MAX_RETRIES, retries);
}

static struct rnic_cm_id *
listener(uint16_t port, uint8_t retries)
{
	struct sockaddr_storage a = addr_at(port, 0);
	struct rnic_cm_id *id;

	assert_int_equal(rnic_cm_create_id(sch, &id, (void *)0x5e, RNIC_PS_TCP), 0);
	fast_timers(id, retries);
	assert_int_equal(rnic_cm_bind_addr(id, (struct sockaddr *)&a), 0);
	assert_int_equal(rnic_cm_listen(id, 8), 0);
	assert_non_null(id->verbs);
	return id;
}

/* The end of a test's connection: QPs and ids (s and l may be NULL) destroyed. */
static void
release(struct rnic_cm_id *s, struct rnic_cm_id *c, struct rnic_cm_id *l)
{
	struct rnic_cm_id *ids[] = { s, c, l };

	for (int i = 0; i < 3; i++) {
		if (ids[i] == NULL)
			continue;
		rnic_cm_destroy_qp(ids[i]);
		assert_int_equal(rnic_cm_destroy_id(ids[i]), 0);
	}
}

static struct rnic_qp_init_attr
qp_attr(void)
{
	return (struct rnic_qp_init_attr){
		.qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
}

/* The client up to ROUTE_RESOLVED towards the server's port, with its QP. */
static struct rnic_cm_id *
client(uint16_t port, uint8_t retries)
{
	struct sockaddr_storage dst = addr_at(port, 0);
	struct rnic_qp_init_attr ia = qp_attr();
	struct rnic_cm_id *id;

	assert_int_equal(rnic_cm_create_id(cch, &id, (void *)0xc1, RNIC_PS_TCP), 0);
	fast_timers(id, retries);
	assert_int_equal(rnic_cm_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ack(expect_event(cch, RNIC_CM_EVENT_ADDR_RESOLVED, 5));
	assert_non_null(id->verbs);
	assert_int_equal(rnic_cm_resolve_route(id, 2000), 0);
	ack(expect_event(cch, RNIC_CM_EVENT_ROUTE_RESOLVED, 5));
	assert_int_equal(rnic_cm_create_qp(id, NULL, &ia), 0);
	assert_non_null(id->qp);
	assert_int_equal(id->qp->state, RNIC_QPS_INIT);
	return id;
}

static void
connect_with(struct rnic_cm_id *c, const char *text)
{
	struct rnic_conn_param p = {
		.private_data = text, .private_data_len = (uint8_t)(strlen(text) + 1),
		.responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7,
	};

	assert_int_equal(rnic_cm_connect(c, &p), 0);
}

/* Connect c with text; the server takes the request, makes its QP and accepts without parameters (the
 * depths the request asked for, as librdmacm); both ends ESTABLISHED. The server's id. */
static struct rnic_cm_id *
establish_without_parameters(struct rnic_cm_id *c, const char *text)
{
	struct rnic_qp_init_attr ia = qp_attr();
	struct rnic_cm_event *e;
	struct rnic_cm_id *s;

	connect_with(c, text);
	e = expect_event(sch, RNIC_CM_EVENT_CONNECT_REQUEST, 5);
	s = e->id;
	ack(e);
	assert_int_equal(rnic_cm_create_qp(s, NULL, &ia), 0);
	assert_int_equal(rnic_cm_accept(s, NULL), 0);
	ack(expect_event(cch, RNIC_CM_EVENT_ESTABLISHED, 10));
	ack(expect_event(sch, RNIC_CM_EVENT_ESTABLISHED, 10));
	return s;
}

/* What the server tells the client in its REP: where to WRITE. */
struct server_info {
	uint64_t addr;
	uint32_t rkey;
};

/* One connection: accepted with the server's buffer in the REP, a SEND each way, a WRITE into the server's
 * buffer, every byte checked, then the client disconnects. */
static void
connection(uint8_t retries)
{
	struct rnic_cm_id *l = listener(PORT, retries), *c = client(PORT, retries), *s;
	struct rnic_cm_event *e;
	struct rnic_qp_init_attr ia = qp_attr();
	uint8_t *sbuf = rnic_alloc_buf(BUF), *cbuf = rnic_alloc_buf(BUF);
	struct rnic_mr *smr, *cmr;
	struct server_info info;
	struct rnic_conn_param acc = { .private_data = &info, .private_data_len = sizeof(info),
				       .responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = 7 };
	struct rnic_sge sge;
	struct rnic_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct rnic_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .send_flags = RNIC_SEND_SIGNALED },
			    *sbad;
	struct rnic_wc wc;
	struct rnic_qp_attr qa;
	struct rnic_qp_init_attr qia;
	struct rnic_cm_msg req, rep;

	connect_with(c, "hello from the client");
	e = expect_event(sch, RNIC_CM_EVENT_CONNECT_REQUEST, 5);
	s = e->id;
	assert_ptr_equal(e->listen_id, l);
	assert_ptr_equal(s->context, (void *)0x5e);
	assert_ptr_equal(s->channel, sch);
	assert_int_equal(e->param.conn.private_data_len, RNIC_CM_REQ_USER_PRIVATE);
	assert_string_equal((const char *)e->param.conn.private_data, "hello from the client");
	assert_int_equal(e->param.conn.qp_num, c->qp->qp_num);
	assert_int_equal(e->param.conn.responder_resources, 1);
	assert_int_equal(e->param.conn.initiator_depth, 1);
	assert_int_equal(e->param.conn.retry_count, 7);
	assert_int_equal(e->param.conn.rnr_retry_count, 7);
	/* The addresses of both ends, from the CMA header. */
	assert_int_equal(rnic_cm_get_src_port(s), htons(PORT));
	assert_int_equal(rnic_cm_get_dst_port(s), rnic_cm_get_src_port(c));
	assert_memory_equal(rnic_cm_get_peer_addr(s), rnic_cm_get_local_addr(c), sizeof(struct sockaddr_storage));
	assert_memory_equal(rnic_cm_get_peer_addr(c), rnic_cm_get_local_addr(s), sizeof(struct sockaddr_storage));
	ack(e);

	assert_int_equal(rnic_cm_create_qp(s, NULL, &ia), 0);
	smr = rnic_reg_mr(s->pd, sbuf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	cmr = rnic_reg_mr(c->pd, cbuf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);
	assert_non_null(smr);
	assert_non_null(cmr);
	sge = (struct rnic_sge){ .addr = (uintptr_t)sbuf, .length = 4096, .lkey = smr->lkey };
	assert_int_equal(rnic_post_recv(s->qp, &rwr, &rbad), 0);
	info = (struct server_info){ .addr = (uintptr_t)sbuf + 8192, .rkey = smr->rkey };
	assert_int_equal(rnic_cm_accept(s, &acc), 0);
	assert_int_equal(s->qp->state, RNIC_QPS_RTS);

	e = expect_event(cch, RNIC_CM_EVENT_ESTABLISHED, 10);
	assert_ptr_equal(e->id, c);
	assert_int_equal(e->param.conn.private_data_len, RNIC_CM_REP_PRIVATE);
	memcpy(&info, e->param.conn.private_data, sizeof(info));
	assert_int_equal(e->param.conn.qp_num, s->qp->qp_num);
	ack(e);
	ack(expect_event(sch, RNIC_CM_EVENT_ESTABLISHED, 10));
	/* The QPs as the CM left them: connected to each other, the PSNs of the REQ and REP as Linux's ib_cm
	 * reads them: a message's starting PSN is the first its sender receives (the client sends from the REP's,
	 * the server from the REQ's). The REQ as the server decoded it, the REP as the server sent it. */
	req = rnic_cm_id_priv(s)->req;
	assert_int_equal(rnic_cm_decode(rnic_cm_id_priv(s)->mad, &rep), 0);
	assert_int_equal(rep.attr_id, RNIC_CM_REP);
	assert_int_not_equal(req.starting_psn, rep.starting_psn);
	assert_int_equal(rnic_query_qp(c->qp, &qa, RNIC_QP_STATE | RNIC_QP_DEST_QPN | RNIC_QP_SQ_PSN | RNIC_QP_RQ_PSN,
				       &qia), 0);
	assert_int_equal(qa.qp_state, RNIC_QPS_RTS);
	assert_int_equal(qa.dest_qp_num, s->qp->qp_num);
	assert_int_equal(qa.sq_psn, rep.starting_psn);
	assert_int_equal(qa.rq_psn, req.starting_psn);
	assert_int_equal(rnic_query_qp(s->qp, &qa, RNIC_QP_STATE | RNIC_QP_DEST_QPN | RNIC_QP_SQ_PSN | RNIC_QP_RQ_PSN,
				       &qia), 0);
	assert_int_equal(qa.dest_qp_num, c->qp->qp_num);
	assert_int_equal(qa.sq_psn, req.starting_psn);
	assert_int_equal(qa.rq_psn, rep.starting_psn);

	/* A SEND client -> server, then a WRITE into the buffer the REP named. */
	for (int i = 0; i < 4096; i++)
		cbuf[i] = (uint8_t)(i * 7 + 1);
	sge = (struct rnic_sge){ .addr = (uintptr_t)cbuf, .length = 4096, .lkey = cmr->lkey };
	swr.opcode = RNIC_WR_SEND;
	assert_int_equal(rnic_post_send(c->qp, &swr, &sbad), 0);
	swr.opcode = RNIC_WR_RDMA_WRITE;
	swr.wr.rdma.remote_addr = info.addr;
	swr.wr.rdma.rkey = info.rkey;
	assert_int_equal(rnic_post_send(c->qp, &swr, &sbad), 0);
	for (int got = 0; got < 2;) {
		double end = test_now_s() + 10;

		while (rnic_poll_cq(c->send_cq, 1, &wc) == 0)
			assert_true(test_now_s() < end);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		got++;
	}
	for (double end = test_now_s() + 10; rnic_poll_cq(s->recv_cq, 1, &wc) == 0;)
		assert_true(test_now_s() < end);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 4096);
	assert_memory_equal(sbuf, cbuf, 4096);
	assert_memory_equal(sbuf + 8192, cbuf, 4096);
	/* The passive side READs from the active one (rping's first step): the active QP's responder resources. */
	sge = (struct rnic_sge){ .addr = (uintptr_t)sbuf + 16384, .length = 4096, .lkey = smr->lkey };
	swr.opcode = RNIC_WR_RDMA_READ;
	swr.wr.rdma.remote_addr = (uintptr_t)cbuf;
	swr.wr.rdma.rkey = cmr->rkey;
	assert_int_equal(rnic_post_send(s->qp, &swr, &sbad), 0);
	for (double end = test_now_s() + 10; rnic_poll_cq(s->send_cq, 1, &wc) == 0;)
		assert_true(test_now_s() < end);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	assert_memory_equal(sbuf + 16384, cbuf, 4096);

	/* The client disconnects: DREQ, the server's DISCONNECTED, its rdma_disconnect answers with the DREP. */
	assert_int_equal(rnic_cm_disconnect(c), 0);
	assert_int_equal(c->qp->state, RNIC_QPS_ERR);
	ack(expect_event(sch, RNIC_CM_EVENT_DISCONNECTED, 10));
	assert_int_equal(rnic_cm_disconnect(s), 0);
	assert_int_equal(s->qp->state, RNIC_QPS_ERR);
	e = expect_event(cch, RNIC_CM_EVENT_DISCONNECTED, 10);
	assert_int_equal(e->status, 0);
	ack(e);
	assert_int_equal(rnic_cm_disconnect(c), EINVAL);	/* done already */

	assert_int_equal(rnic_dereg_mr(smr), 0);
	assert_int_equal(rnic_dereg_mr(cmr), 0);
	rnic_free_buf(sbuf);
	rnic_free_buf(cbuf);
	release(s, c, l);
}

static void
test_connect_accept_data_disconnect(void **state)
{
	uint64_t req = cm_counter(1, "cm_req_sent"), rep = cm_counter(0, "cm_rep_sent");
	uint64_t rtu = cm_counter(1, "cm_rtu_sent"), dreq = cm_counter(1, "cm_dreq_sent");
	uint64_t drep = cm_counter(0, "cm_drep_sent");

	(void)state;
	connection(0);
	/* One of each on a lossless link: nothing sent twice. */
	assert_int_equal(cm_counter(1, "cm_req_sent"), req + 1);
	assert_int_equal(cm_counter(0, "cm_rep_sent"), rep + 1);
	assert_int_equal(cm_counter(1, "cm_rtu_sent"), rtu + 1);
	assert_int_equal(cm_counter(1, "cm_dreq_sent"), dreq + 1);
	assert_int_equal(cm_counter(0, "cm_drep_sent"), drep + 1);
	assert_int_equal(cm_counter(0, "cm_retransmits") + cm_counter(1, "cm_retransmits"), 0);
}

/* rdma_accept without parameters (as rping calls it) grants what the request asked for, as librdmacm does:
 * both QPs get the responder resources and initiator depth of the REQ, so the passive side may READ. */
static void
test_accept_without_parameters(void **state)
{
	struct rnic_cm_id *l = listener(PORT + 6, 0), *c = client(PORT + 6, 0), *s;
	struct rnic_qp_init_attr qia;
	struct rnic_qp_attr qa;

	(void)state;
	s = establish_without_parameters(c, "defaults");
	assert_int_equal(rnic_query_qp(s->qp, &qa, RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MAX_QP_RD_ATOMIC, &qia), 0);
	assert_int_equal(qa.max_dest_rd_atomic, 1);
	assert_int_equal(qa.max_rd_atomic, 1);
	assert_int_equal(qa.timeout, 17);	/* Linux's for RoCE: cm_ack_timeout(ACK delay 15, life time 16) */
	assert_int_equal(rnic_query_qp(c->qp, &qa, RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MAX_QP_RD_ATOMIC, &qia), 0);
	assert_int_equal(qa.max_dest_rd_atomic, 1);
	assert_int_equal(qa.max_rd_atomic, 1);
	assert_int_equal(qa.timeout, 17);
	assert_int_equal(rnic_cm_disconnect(c), 0);
	ack(expect_event(sch, RNIC_CM_EVENT_DISCONNECTED, 10));
	assert_int_equal(rnic_cm_disconnect(s), 0);
	ack(expect_event(cch, RNIC_CM_EVENT_DISCONNECTED, 10));
	release(s, c, l);
}

/* After a disconnect each end leaves TIMEWAIT, twice the packet life time later (512 ms at Linux's 16), with
 * TIMEWAIT_EXIT, status 0, after its DISCONNECTED, as rdma_cm passes ib_cm's timewait exit on. */
static void
test_timewait_exit(void **state)
{
	struct rnic_cm_id *l = listener(PORT + 8, 0), *c = client(PORT + 8, 0), *s;
	struct rnic_cm_event *e;
	double start;

	(void)state;
	s = establish_without_parameters(c, "timewait");
	assert_int_equal(rnic_cm_disconnect(c), 0);
	ack(expect_event(sch, RNIC_CM_EVENT_DISCONNECTED, 10));
	/* the server's TIMEWAIT starts with its DREP, the client's when that DREP arrives */
	start = test_now_s();
	assert_int_equal(rnic_cm_disconnect(s), 0);
	ack(expect_event(cch, RNIC_CM_EVENT_DISCONNECTED, 10));
	for (int i = 0; i < 2; i++) {
		e = expect_event(i == 0 ? sch : cch, RNIC_CM_EVENT_TIMEWAIT_EXIT, 10);
		assert_true(test_now_s() - start >= 0.5);
		assert_ptr_equal(e->id, i == 0 ? s : c);
		assert_int_equal(e->status, 0);
		ack(e);
	}
	release(s, c, l);
}

/* A listener with a backlog of one request not yet taken: a second REQ is dropped unanswered (counted), as
 * Linux's ucma and ib_cm drop it, not rejected; the client's next try, once the first request was taken, is
 * delivered, and both connections form. */
static void
test_backlog_full(void **state)
{
	struct sockaddr_storage a = addr_at(PORT + 7, 0);
	struct rnic_cm_id *l, *c1 = client(PORT + 7, 8), *c2 = client(PORT + 7, 8), *s[2];
	struct pollfd pfd = { .fd = sch->fd, .events = POLLIN };
	uint64_t drops = cm_counter(0, "cm_backlog_drops");
	struct rnic_cm_event *e;

	(void)state;
	assert_int_equal(rnic_cm_create_id(sch, &l, NULL, RNIC_PS_TCP), 0);
	assert_int_equal(rnic_cm_bind_addr(l, (struct sockaddr *)&a), 0);
	assert_int_equal(rnic_cm_listen(l, 1), 0);
	connect_with(c1, "first");
	assert_int_equal(poll(&pfd, 1, 5000), 1);	/* c1's request delivered, not taken */
	connect_with(c2, "second");
	for (double end = test_now_s() + 5; cm_counter(0, "cm_backlog_drops") == drops && test_now_s() < end;)
		;
	assert_true(cm_counter(0, "cm_backlog_drops") > drops);
	/* Taking the first request makes room: the second comes with c2's next try. */
	for (int i = 0; i < 2; i++) {
		e = expect_event(sch, RNIC_CM_EVENT_CONNECT_REQUEST, 5);
		assert_string_equal(e->param.conn.private_data, i == 0 ? "first" : "second");
		s[i] = e->id;
		ack(e);
	}
	for (int i = 0; i < 2; i++) {
		struct rnic_qp_init_attr ia = qp_attr();

		assert_int_equal(rnic_cm_create_qp(s[i], NULL, &ia), 0);
		assert_int_equal(rnic_cm_accept(s[i], NULL), 0);
	}
	for (int i = 0; i < 2; i++) {
		ack(expect_event(cch, RNIC_CM_EVENT_ESTABLISHED, 10));
		ack(expect_event(sch, RNIC_CM_EVENT_ESTABLISHED, 10));
	}
	/* A life time of 12 (fast_timers): the ACK timeout is the CA's ACK delay, 15, not 13, both ends, as
	 * Linux's cm_ack_timeout gives it. */
	for (int i = 0; i < 2; i++) {
		struct rnic_cm_id *qid = i == 0 ? c1 : s[0];
		struct rnic_qp_init_attr qia;
		struct rnic_qp_attr qa;

		assert_int_equal(rnic_query_qp(qid->qp, &qa, RNIC_QP_TIMEOUT, &qia), 0);
		assert_int_equal(qa.timeout, 15);
	}
	assert_int_equal(rnic_cm_disconnect(c1), 0);
	assert_int_equal(rnic_cm_disconnect(c2), 0);
	for (int i = 0; i < 2; i++)
		ack(expect_event(sch, RNIC_CM_EVENT_DISCONNECTED, 10));
	assert_int_equal(rnic_cm_disconnect(s[0]), 0);
	assert_int_equal(rnic_cm_disconnect(s[1]), 0);
	for (int i = 0; i < 2; i++)
		ack(expect_event(cch, RNIC_CM_EVENT_DISCONNECTED, 10));
	release(s[0], c1, NULL);
	release(s[1], c2, l);
}

/* A REQ for a port nobody listens on: REJ reason 8 (invalid service ID), as Linux's cm_match_req sends, which
 * rdma_cm reports as REJECTED with the reason as status. */
static void
test_no_listener_rejected(void **state)
{
	uint64_t before = cm_counter(0, "cm_no_listener");
	struct rnic_cm_id *c = client(PORT + 1, 0);
	struct rnic_cm_event *e;

	(void)state;
	connect_with(c, "anyone?");
	e = expect_event(cch, RNIC_CM_EVENT_REJECTED, 5);
	assert_ptr_equal(e->id, c);
	assert_int_equal(e->status, RNIC_CM_REJ_INVALID_SERVICE_ID);
	ack(e);
	assert_int_equal(cm_counter(0, "cm_no_listener"), before + 1);
	assert_int_equal(c->qp->state, RNIC_QPS_ERR);
	release(NULL, c, NULL);
}

/* rdma_reject: REJ reason 28 (consumer defined), its private data to the client. */
static void
test_reject(void **state)
{
	struct rnic_cm_id *l = listener(PORT + 2, 0), *c = client(PORT + 2, 0), *s;
	struct rnic_cm_event *e;

	(void)state;
	connect_with(c, "let me in");
	e = expect_event(sch, RNIC_CM_EVENT_CONNECT_REQUEST, 5);
	s = e->id;
	ack(e);
	assert_int_equal(rnic_cm_reject(s, "no", 3), 0);
	e = expect_event(cch, RNIC_CM_EVENT_REJECTED, 5);
	assert_int_equal(e->status, RNIC_CM_REJ_CONSUMER_DEFINED);
	assert_string_equal((const char *)e->param.conn.private_data, "no");
	ack(e);
	assert_int_equal(rnic_cm_accept(s, NULL), EINVAL);	/* rejected already */
	release(s, c, l);
}

static void
gsi_faults(const char *spec_text)
{
	struct rnic_fault_spec spec;

	assert_int_equal(rnic_fault_parse(spec_text, &spec), 0);
	assert_int_equal(rnic_fault_update(rnic_engine_device(0)->port_id, &spec), 0);
	assert_int_equal(rnic_fault_update(rnic_engine_device(1)->port_id, &spec), 0);
}

/* A third of the CM's MADs lost both ways: the messages are sent again, connections still form, move their
 * data and end. The data path's frames are not touched (only=gsi). */
static void
test_lost_mads_retried(void **state)
{
	uint64_t before = cm_counter(0, "cm_retransmits") + cm_counter(1, "cm_retransmits");
	struct rnic_fault_counts f0, f1;
	struct rnic_fault_spec spec;

	(void)state;
	assert_int_equal(rnic_fault_parse("only=gsi,drop=0.3", &spec), 0);
	assert_int_equal(spec.frames, RNIC_FAULT_GSI);
	gsi_faults("only=gsi,drop=0.3,seed=20");
	for (int i = 0; i < 6; i++)
		connection(15);
	gsi_faults("drop=0");
	rnic_fault_get_counts(rnic_engine_device(0)->port_id, &f0);
	rnic_fault_get_counts(rnic_engine_device(1)->port_id, &f1);
	assert_true(f0.dropped + f1.dropped > 0);
	assert_true(f0.exempt + f1.exempt > 0);		/* the data frames passed untouched */
	assert_true(cm_counter(0, "cm_retransmits") + cm_counter(1, "cm_retransmits") > before);
}

/* The client vanishes after its REQ reached the server (every MAD towards it lost from then on): the
 * server's REP is sent again until its retries run out (UNREACHABLE, ETIMEDOUT, as rdma_cm reports a REP
 * timeout), and so is the client's REQ, which no REP answers (UNREACHABLE too). */
static void
test_peer_vanishes(void **state)
{
	struct rnic_cm_id *l = listener(PORT + 3, 3), *c = client(PORT + 3, 3), *s;
	struct rnic_qp_init_attr ia = qp_attr();
	struct rnic_cm_event *e;
	struct rnic_fault_spec spec;
	uint64_t timeouts = cm_counter(0, "cm_timeouts");

	(void)state;
	connect_with(c, "going away");
	e = expect_event(sch, RNIC_CM_EVENT_CONNECT_REQUEST, 5);
	s = e->id;
	ack(e);
	assert_int_equal(rnic_fault_parse("only=gsi,drop=1", &spec), 0);
	assert_int_equal(rnic_fault_update(rnic_engine_device(1)->port_id, &spec), 0);
	assert_int_equal(rnic_cm_create_qp(s, NULL, &ia), 0);
	assert_int_equal(rnic_cm_accept(s, NULL), 0);
	e = expect_event(sch, RNIC_CM_EVENT_UNREACHABLE, 10);
	assert_ptr_equal(e->id, s);
	assert_int_equal(e->status, -ETIMEDOUT);
	ack(e);
	e = expect_event(cch, RNIC_CM_EVENT_UNREACHABLE, 10);
	assert_ptr_equal(e->id, c);
	assert_int_equal(e->status, -ETIMEDOUT);
	ack(e);
	assert_int_equal(cm_counter(0, "cm_timeouts"), timeouts + 1);
	assert_int_equal(s->qp->state, RNIC_QPS_ERR);
	gsi_faults("drop=0");
	no_event(sch, 0.1);
	release(s, c, l);
}

/* Calls out of turn are refused, as librdmacm's: EINVAL, nothing sent. */
static void
test_bad_calls(void **state)
{
	struct rnic_cm_id *id, *other;
	struct rnic_conn_param p = { 0 };
	struct sockaddr_storage a = addr_at(PORT + 4, 0), nowhere = addr_at(1, 1);

	(void)state;
	assert_int_equal(rnic_cm_create_id(cch, &id, NULL, RNIC_PS_UDP), EPROTONOSUPPORT);
	assert_int_equal(rnic_cm_create_id(cch, &id, NULL, RNIC_PS_TCP), 0);
	assert_int_equal(rnic_cm_connect(id, &p), EINVAL);		/* no route */
	assert_int_equal(rnic_cm_accept(id, &p), EINVAL);		/* no request */
	assert_int_equal(rnic_cm_resolve_route(id, 100), EINVAL);	/* no address */
	assert_int_equal(rnic_cm_bind_addr(id, (struct sockaddr *)&nowhere), EADDRNOTAVAIL);
	assert_int_equal(rnic_cm_bind_addr(id, (struct sockaddr *)&a), 0);
	assert_int_equal(rnic_cm_listen(id, 1), 0);
	assert_int_equal(rnic_cm_create_id(cch, &other, NULL, RNIC_PS_TCP), 0);
	assert_int_equal(rnic_cm_bind_addr(other, (struct sockaddr *)&a), EADDRINUSE);
	assert_int_equal(rnic_cm_destroy_id(other), 0);
	assert_int_equal(rnic_cm_destroy_id(id), 0);
	/* An address nobody answers ARP for: on the loopback pair, no device has it. */
	assert_int_equal(rnic_cm_create_id(cch, &id, NULL, RNIC_PS_TCP), 0);
	assert_int_equal(rnic_cm_resolve_addr(id, NULL, (struct sockaddr *)&nowhere, 500), 0);
	ack(expect_event(cch, RNIC_CM_EVENT_ADDR_ERROR, 5));
	assert_int_equal(rnic_cm_destroy_id(id), 0);
}

/* Events of a destroyed id leave its channel with it, as Linux's ucma_cleanup_ctx_events drops them: the
 * channel's fd no longer polls readable for them and a non-blocking get says EAGAIN. A listener destroyed
 * with a connection request not taken takes the request with it (the new id rejects the client's REQ). */
static void
test_destroy_drops_events(void **state)
{
	struct rnic_cm_event_channel *ch = rnic_cm_create_event_channel();
	struct sockaddr_storage dst = addr_at(PORT + 9, 0);
	struct pollfd pfd = { .events = POLLIN };
	struct rnic_cm_id *id, *l, *c;
	struct rnic_cm_event *e;

	(void)state;
	assert_non_null(ch);
	pfd.fd = ch->fd;
	assert_int_equal(rnic_cm_create_id(ch, &id, NULL, RNIC_PS_TCP), 0);
	assert_int_equal(rnic_cm_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);	/* ADDR_RESOLVED queued, not taken */
	assert_int_equal(rnic_cm_destroy_id(id), 0);
	no_event_nonblocking(ch);
	rnic_cm_destroy_event_channel(ch);

	l = listener(PORT + 9, 0);
	c = client(PORT + 9, 0);	/* Linux's timers: the REJ comes long before a retry */
	connect_with(c, "gone");
	pfd.fd = sch->fd;
	assert_int_equal(poll(&pfd, 1, 5000), 1);	/* CONNECT_REQUEST queued, not taken */
	assert_int_equal(rnic_cm_destroy_id(l), 0);
	no_event(sch, 0.2);
	e = expect_event(cch, RNIC_CM_EVENT_REJECTED, 10);
	assert_ptr_equal(e->id, c);
	ack(e);
	release(NULL, c, NULL);
}

/* A get waiting on a channel (test_destroy_channel_under_get): its return, if it ever comes. */
struct waiter {
	struct rnic_cm_event_channel *ch;
	pthread_mutex_t lock;
	int returned;
};

static void *
wait_event(void *arg)
{
	struct waiter *w = arg;
	struct rnic_cm_event *e;

	rnic_cm_get_cm_event(w->ch, &e);
	pthread_mutex_lock(&w->lock);
	w->returned = 1;
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* A channel destroyed under another thread's get (rping's event thread while its main thread ends): the
 * get, woken after (here through a copy of the eventfd), finds the channel destroyed and never returns, as
 * librdmacm's (its read of the closed fd); it does not read the channel freed under it. */
static void
test_destroy_channel_under_get(void **state)
{
	struct waiter w = { .ch = rnic_cm_create_event_channel(), .lock = PTHREAD_MUTEX_INITIALIZER };
	uint64_t one = 1;
	pthread_t t;
	int fd;

	(void)state;
	assert_non_null(w.ch);
	fd = dup(w.ch->fd);
	assert_true(fd >= 0);
	assert_int_equal(pthread_create(&t, NULL, wait_event, &w), 0);
	usleep(100000);		/* the thread waits on the fd */
	rnic_cm_destroy_event_channel(w.ch);
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	usleep(100000);
	pthread_mutex_lock(&w.lock);
	assert_int_equal(w.returned, 0);
	pthread_mutex_unlock(&w.lock);
	pthread_detach(t);
	close(fd);
}

/* rnic_cm_migrate_id (librdmacm's rdma_migrate_id): a listener moved with a connection request queued takes
 * the request to its new channel (the new id on that channel), a client moved with ESTABLISHED queued takes
 * that; the old channels keep nothing of them, and the ids' later events come on the new channel. */
static void
test_migrate_id(void **state)
{
	struct rnic_cm_event_channel *ch = rnic_cm_create_event_channel();
	struct rnic_cm_id *l = listener(PORT + 10, 0), *c = client(PORT + 10, 0), *s;
	struct pollfd pfd = { .fd = sch->fd, .events = POLLIN };
	struct rnic_qp_init_attr ia = qp_attr();
	struct rnic_cm_event *e;
	int sflags = fcntl(sch->fd, F_GETFL), cflags = fcntl(cch->fd, F_GETFL);

	(void)state;
	assert_non_null(ch);
	assert_int_equal(rnic_cm_migrate_id(l, NULL), EINVAL);
	connect_with(c, "moved");
	assert_int_equal(poll(&pfd, 1, 5000), 1);	/* CONNECT_REQUEST queued on sch, not taken */
	assert_int_equal(rnic_cm_migrate_id(l, ch), 0);
	assert_ptr_equal(l->channel, ch);
	no_event_nonblocking(sch);
	e = expect_event(ch, RNIC_CM_EVENT_CONNECT_REQUEST, 1);
	assert_ptr_equal(e->listen_id, l);
	s = e->id;
	assert_ptr_equal(s->channel, ch);
	ack(e);
	assert_int_equal(rnic_cm_create_qp(s, NULL, &ia), 0);
	assert_int_equal(rnic_cm_accept(s, NULL), 0);
	pfd.fd = cch->fd;
	assert_int_equal(poll(&pfd, 1, 10000), 1);	/* the client's ESTABLISHED queued on cch */
	assert_int_equal(rnic_cm_migrate_id(c, ch), 0);
	no_event_nonblocking(cch);
	/* Both ESTABLISHED on ch, in either order. */
	for (int i = 0; i < 2; i++) {
		e = expect_event(ch, RNIC_CM_EVENT_ESTABLISHED, 10);
		assert_true(e->id == c || e->id == s);
		ack(e);
	}
	assert_int_equal(rnic_cm_disconnect(c), 0);
	e = expect_event(ch, RNIC_CM_EVENT_DISCONNECTED, 10);
	assert_ptr_equal(e->id, s);
	ack(e);
	assert_int_equal(rnic_cm_disconnect(s), 0);
	e = expect_event(ch, RNIC_CM_EVENT_DISCONNECTED, 10);
	assert_ptr_equal(e->id, c);
	ack(e);
	no_event(sch, 0);
	no_event(cch, 0);
	assert_int_equal(fcntl(sch->fd, F_SETFL, sflags), 0);
	assert_int_equal(fcntl(cch->fd, F_SETFL, cflags), 0);
	release(s, c, l);
	rnic_cm_destroy_event_channel(ch);
}

/* A peer that sends QP1 anything: CM MADs of every attribute with random fields, and REQs to a listener
 * with random fields but a CMA header (more than the channel's queue holds). Nothing crashes, every MAD is
 * counted, the requests the queue could not hold are refused, and a connection still forms afterwards. */
static void
test_hostile_mads(void **state)
{
	struct rnic_cm_id *l = listener(PORT + 5, 0);
	struct test_side b;
	struct rnic_ah_attr av = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64 } };
	uint64_t received = cm_counter(0, "cm_received"), seed = 0x9e3779b97f4a7c15ull;
	uint64_t missing = test_counter(rnic_cm.dev[0].ctx, "recv_wqe_missing"), malformed = cm_counter(0, "cm_malformed");
	uint64_t peer_sent = cm_sent(1);
	struct rnic_cm_event *e;
	struct rnic_ah *ah;
	struct rnic_qp *qp;
	struct rnic_wc wc;
	unsigned int requests = 0, outstanding = 0;
	const unsigned int total = 1536;	/* 256-byte MADs in whole pages (aligned_alloc) */

	(void)state;
	assert_int_equal(test_side_open(&b, rnic_engine_device(1), total * RNIC_MAD_SIZE, RNIC_ACCESS_LOCAL_WRITE), 0);
	qp = cm_test_ud_qp(b.pd, b.cq, RNIC_GSI_QKEY, 1);
	assert_non_null(qp);
	av.grh.dgid = rnic_engine_device(0)->gid[0];
	ah = rnic_create_ah(b.pd, &av);
	assert_non_null(ah);
	for (unsigned int i = 0; i < total; i++) {
		uint8_t *mad = b.buf + (size_t)i * RNIC_MAD_SIZE;
		struct rnic_sge sge = { .addr = (uintptr_t)mad, .length = RNIC_MAD_SIZE, .lkey = b.mr->lkey };
		struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_SEND,
					   .send_flags = RNIC_SEND_SIGNALED }, *bad;

		for (unsigned int k = 0; k < RNIC_MAD_SIZE; k++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			mad[k] = (uint8_t)seed;
		}
		mad[0] = 1;
		mad[1] = 0x07;
		mad[2] = 2;
		mad[3] = RNIC_MAD_METHOD_SEND;
		mad[16] = 0;
		mad[17] = (uint8_t)(0x10 + i % 8);	/* REQ ... DREP, and LAP (not spoken) */
		if (i % 8 == 0 && i % 16 == 0) {
			/* a REQ to the listener: RC, a path MTU the port carries, the CMA header */
			const uint64_t sid = ((uint64_t)RNIC_PS_TCP << 16) | (PORT + 5);

			for (int k = 0; k < 8; k++)
				mad[24 + 8 + k] = (uint8_t)(sid >> (56 - 8 * k));
			mad[24 + 43] &= 0xf9;
			mad[24 + 50] = (uint8_t)((mad[24 + 50] & 0x0f) | (1 + i % 3) << 4);
			mad[24 + 140] = 0;
			mad[24 + 141] = 0x40;
			requests++;
		}
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = RNIC_GSI_QPN;
		wr.wr.ud.remote_qkey = RNIC_GSI_QKEY;
		while (outstanding >= 64) {
			if (rnic_poll_cq(b.cq, 1, &wc) == 1)
				outstanding--;
		}
		assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
		outstanding++;
	}
	for (double end = test_now_s() + 10; outstanding > 0 && test_now_s() < end;)
		if (rnic_poll_cq(b.cq, 1, &wc) == 1)
			outstanding--;
	/* Every MAD reached the CM, or QP1 had no receive buffer free for it (UD: dropped, counted); so did what
	 * device 1's CM sent meanwhile (a retry of an earlier test's connection on a loaded machine). */
	for (double end = test_now_s() + 10; cm_counter(0, "cm_received") + test_counter(rnic_cm.dev[0].ctx, "recv_wqe_missing") <
	     received + missing + total + (cm_sent(1) - peer_sent) && test_now_s() < end;)
		;
	assert_int_equal(cm_counter(0, "cm_received") + test_counter(rnic_cm.dev[0].ctx, "recv_wqe_missing"),
			 received + missing + total + (cm_sent(1) - peer_sent));
	assert_true(cm_counter(0, "cm_received") > received);
	assert_true(cm_counter(0, "cm_malformed") > malformed);	/* LAP, and REQs of other transports */
	/* Every request delivered is taken and refused; the rest found the listener's backlog full (dropped). */
	for (struct pollfd p = { .fd = sch->fd, .events = POLLIN }; poll(&p, 1, 200) == 1;) {
		assert_int_equal(rnic_cm_get_cm_event(sch, &e), 0);
		assert_int_equal(e->event, RNIC_CM_EVENT_CONNECT_REQUEST);
		assert_int_equal(rnic_cm_reject(e->id, NULL, 0), 0);
		assert_int_equal(rnic_cm_destroy_id(e->id), 0);
		ack(e);
	}
	assert_true(requests > 0);
	assert_int_equal(rnic_destroy_ah(ah), 0);
	assert_int_equal(rnic_destroy_qp(qp), 0);
	test_side_close(&b);
	assert_int_equal(rnic_cm_destroy_id(l), 0);
	connection(0);
}

static int
setup(void **state)
{
	union rnic_gid gid;

	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0 || rnic_engine_start() != 0)
		return -1;
	sch = rnic_cm_create_event_channel();
	cch = rnic_cm_create_event_channel();
	if (sch == NULL || cch == NULL)
		return -1;
	gid = rnic_engine_device(0)->gid[0];
	server_gid = gid;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rnic_cm_destroy_event_channel(sch);
	rnic_cm_destroy_event_channel(cch);
	rnic_engine_stop();
	return rnic_engine_fini();	/* -EBUSY if the CM left a context open */
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_accept_data_disconnect),
		cmocka_unit_test(test_accept_without_parameters),
		cmocka_unit_test(test_timewait_exit),
		cmocka_unit_test(test_no_listener_rejected),
		cmocka_unit_test(test_backlog_full),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_bad_calls),
		cmocka_unit_test(test_lost_mads_retried),
		cmocka_unit_test(test_peer_vanishes),
		cmocka_unit_test(test_destroy_drops_events),
		cmocka_unit_test(test_destroy_channel_under_get),
		cmocka_unit_test(test_migrate_id),
		cmocka_unit_test(test_hostile_mads),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("cm", tests, setup, teardown);
}
