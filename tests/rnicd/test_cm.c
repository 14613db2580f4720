/* SPDX-License-Identifier: BSD-3-Clause
 * The CM through rnicd (doc/cm.md, "Through rnicd"): clients of one daemon, on its embedded loopback pair
 * (rnic0 10.77.0.1, rnic1 10.77.0.2), connecting with the rnic_cm_* calls, which the daemon's CM serves.
 *   data       a server and a client: connect (private data both ways), a 64 KB WRITE and a SEND over the
 *              connection, every byte checked, disconnect on both sides (the server's QP destroyed first,
 *              by rnic_destroy_qp, as rping does: its id lets go of it); nothing left in the daemon
 *   tenants    two tenants (uids 4101, 4102, cm-ports 20000-20099 and 21000-21099) with a listener each; a
 *              REQ to the first's port reaches its channel only (the second's fd never polls readable);
 *              the second cannot listen on the first's port or bind outside its range (EACCES), nor make
 *              a 4th id (max-cm-ids 3: EDQUOT), nor give the CM a QP (gids 1: the CM sends from GID 0,
 *              EPERM), nor a tenant without an entry bind below 1024 (needs root: skipped without)
 *   death      a server that dies holding a connection request: the client gets REJECTED; one killed while
 *              connected: the client gets DISCONNECTED; the daemon has no CM id left
 *   hostile    raw requests: bad and foreign handles, bad lengths and sizes, a QP of another process,
 *              3000 requests of random bytes, 257 events held unacknowledged, floods of ids and channels,
 *              a UD QP with QP1's Q_Key: each a clear error, the daemon still serves
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <arpa/inet.h>

#include "harness.h"

#define SERVER_IP "10.77.0.1"

static struct sockaddr_in
addr(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	CHECK(inet_pton(AF_INET, ip, &a.sin_addr) == 1, "address %s", ip);
	return a;
}

/* Whether the channel's fd polls readable within ms. */
static int
readable(struct rnic_cm_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The channel's next event, which must be of this type (within TIMEOUT_S). */
static struct rnic_cm_event *
expect_event(struct rnic_cm_event_channel *ch, enum rnic_cm_event_type type)
{
	struct rnic_cm_event *ev;
	int ret;

	CHECK(readable(ch, TIMEOUT_S * 1000), "no event (waiting for %s)", rnic_cm_event_str(type));
	ret = rnic_cm_get_cm_event(ch, &ev);
	CHECK(ret == 0, "get_cm_event: %s", strerror(ret));
	CHECK(ev->event == type, "%s (status %d), expected %s", rnic_cm_event_str(ev->event), ev->status,
	      rnic_cm_event_str(type));
	return ev;
}

static void
ack_next(struct rnic_cm_event_channel *ch, enum rnic_cm_event_type type)
{
	rnic_cm_ack_cm_event(expect_event(ch, type));
}

static struct rnic_cm_id *
listener(struct rnic_cm_event_channel *ch, uint16_t port)
{
	struct sockaddr_in a = addr(SERVER_IP, port);
	struct rnic_cm_id *id;
	int ret;

	CHECK(rnic_cm_create_id(ch, &id, NULL, RNIC_PS_TCP) == 0, "create_id");
	ret = rnic_cm_bind_addr(id, (struct sockaddr *)&a);
	CHECK(ret == 0, "bind %u: %s", port, strerror(ret));
	CHECK(rnic_cm_listen(id, 8) == 0, "listen");
	return id;
}

/* A client's id resolved towards the server's port, with a QP made by the CM. */
static struct rnic_cm_id *
resolved(struct rnic_cm_event_channel *ch, uint16_t port)
{
	struct sockaddr_in dst = addr(SERVER_IP, port);
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_RC, .cap = { .max_send_wr = 8, .max_recv_wr = 8,
		.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_cm_id *id;
	int ret;

	CHECK(rnic_cm_create_id(ch, &id, NULL, RNIC_PS_TCP) == 0, "create_id");
	ret = rnic_cm_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000);
	CHECK(ret == 0, "resolve_addr: %s", strerror(ret));
	ack_next(ch, RNIC_CM_EVENT_ADDR_RESOLVED);
	CHECK(rnic_cm_resolve_route(id, 2000) == 0, "resolve_route");
	ack_next(ch, RNIC_CM_EVENT_ROUTE_RESOLVED);
	CHECK(id->verbs != NULL && strcmp(id->verbs->device->name, "rnic1") == 0, "the client's id is not on rnic1");
	ret = rnic_cm_create_qp(id, NULL, &ia);
	CHECK(ret == 0, "create_qp: %s", strerror(ret));
	return id;
}

static void
connect_with(struct rnic_cm_id *id, const char *text)
{
	struct rnic_conn_param p = { .private_data = text, .private_data_len = (uint8_t)(strlen(text) + 1),
				     .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
				     .rnr_retry_count = 7 };
	int ret = rnic_cm_connect(id, &p);

	CHECK(ret == 0, "connect: %s", strerror(ret));
}

static pid_t
child(void)
{
	pid_t c = fork();

	CHECK(c >= 0, "fork");
	if (c == 0)
		CHECK(prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "prctl");
	return c;
}

static void
expect_exit0(pid_t c, const char *who)
{
	int st = wait_child(c, 120);

	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed (status %#x)", who, st);
}

static void
signal_fd(int fd)
{
	CHECK(write(fd, "x", 1) == 1, "signal");
}

static void
wait_fd(int fd)
{
	char b;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	CHECK(poll(&p, 1, TIMEOUT_S * 1000) == 1 && read(fd, &b, 1) == 1, "the other side never said it was ready");
}

/* ------------------------------------------------------------------------------------------------------ */
/* data                                                                                                     */

/* What the server's REP carries: where the client WRITEs. */
struct target {
	uint64_t addr;
	uint32_t rkey;
};

static void
data_server(int ready_fd)
{
	struct rnic_cm_event_channel *ch;
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_RC, .cap = { .max_send_wr = 8, .max_recv_wr = 8,
		.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_cm_id *lid, *id;
	struct rnic_cm_event *ev;
	struct target t;
	struct rnic_conn_param p = { .private_data = &t, .private_data_len = sizeof(t), .responder_resources = 1,
				     .initiator_depth = 1, .rnr_retry_count = 7 };
	struct rnic_mr *mr;
	struct rnic_sge sge;
	struct rnic_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct rnic_wc wc;
	uint8_t *buf;
	int ret;

	client_init();
	ch = rnic_cm_create_event_channel();
	CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
	lid = listener(ch, 7471);
	signal_fd(ready_fd);
	ev = expect_event(ch, RNIC_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	CHECK(ev->listen_id == lid && ev->param.conn.private_data_len >= 6 &&
	      memcmp(ev->param.conn.private_data, "hello", 6) == 0, "the request's listener or private data");
	CHECK(id->verbs != NULL && strcmp(id->verbs->device->name, "rnic0") == 0, "the request is not on rnic0");
	CHECK(ntohs(rnic_cm_get_src_port(id)) == 7471, "the new id's port");
	rnic_cm_ack_cm_event(ev);
	ret = rnic_cm_create_qp(id, NULL, &ia);
	CHECK(ret == 0, "create_qp: %s", strerror(ret));
	buf = rnic_alloc_buf(BUF_BYTES);
	CHECK(buf != NULL, "alloc_buf");
	memset(buf, 0, BUF_BYTES);
	mr = rnic_reg_mr(id->pd, buf, BUF_BYTES, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	CHECK(mr != NULL, "reg_mr: %s", strerror(errno));
	sge = (struct rnic_sge){ .addr = (uintptr_t)buf + RECV_OFF, .length = 64, .lkey = mr->lkey };
	CHECK(rnic_post_recv(id->qp, &wr, &bad) == 0, "post_recv");
	t = (struct target){ .addr = (uintptr_t)buf, .rkey = mr->rkey };
	ret = rnic_cm_accept(id, &p);
	CHECK(ret == 0, "accept: %s", strerror(ret));
	ack_next(ch, RNIC_CM_EVENT_ESTABLISHED);
	/* The client WRITEs, then SENDs: the SEND's completion says the WRITE is in place. */
	for (double t0 = now_s(); rnic_poll_cq(id->recv_cq, 1, &wc) == 0;)
		CHECK(now_s() - t0 < TIMEOUT_S, "no SEND from the client");
	CHECK(wc.status == RNIC_WC_SUCCESS && wc.opcode == RNIC_WC_RECV, "the SEND: %s",
	      rnic_wc_status_str(wc.status));
	CHECK(matches(buf, MSG, 71) && memcmp(buf + RECV_OFF, "done", 5) == 0, "the WRITE's bytes differ");
	/* The QP destroyed as rping destroys it (ibv_destroy_qp, not rdma_destroy_qp): the id lets go of it,
	 * and taking the next event does not look at it (rping's event thread read it freed, and crashed). */
	CHECK(rnic_destroy_qp(id->qp) == 0, "destroy_qp");
	CHECK(id->qp == NULL, "the id still names the QP destroyed");
	ack_next(ch, RNIC_CM_EVENT_DISCONNECTED);
	CHECK(rnic_cm_disconnect(id) == 0, "disconnect");
	rnic_cm_destroy_qp(id);		/* the CQs rnic_cm_create_qp made for the QP */
	CHECK(rnic_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(rnic_cm_destroy_id(id) == 0 && rnic_cm_destroy_id(lid) == 0, "destroy_id");
	rnic_cm_destroy_event_channel(ch);
	rnic_free_buf(buf);
	_exit(0);
}

static void
data_client(void)
{
	struct rnic_cm_event_channel *ch;
	struct rnic_cm_event *ev;
	struct rnic_cm_id *id;
	struct target t;
	struct rnic_mr *mr;
	struct rnic_qp_attr attr;
	struct rnic_qp_init_attr init;
	uint8_t *buf;

	client_init();
	ch = rnic_cm_create_event_channel();
	CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
	id = resolved(ch, 7471);
	connect_with(id, "hello");
	ev = expect_event(ch, RNIC_CM_EVENT_ESTABLISHED);
	CHECK(ev->param.conn.private_data_len >= sizeof(t), "the REP's private data");
	memcpy(&t, ev->param.conn.private_data, sizeof(t));
	rnic_cm_ack_cm_event(ev);
	CHECK(rnic_query_qp(id->qp, &attr, 0, &init) == 0 && attr.qp_state == RNIC_QPS_RTS,
	      "the daemon's CM did not take the client's QP to RTS");
	buf = rnic_alloc_buf(BUF_BYTES);
	CHECK(buf != NULL, "alloc_buf");
	mr = rnic_reg_mr(id->pd, buf, BUF_BYTES, RNIC_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "reg_mr: %s", strerror(errno));
	fill(buf, MSG, 71);
	memcpy(buf + SEND_OFF, "done", 5);
	post(id->qp, RNIC_WR_RDMA_WRITE, (uintptr_t)buf, MSG, mr->lkey, t.addr, t.rkey);
	expect_ok(id->send_cq, RNIC_WC_RDMA_WRITE);
	post(id->qp, RNIC_WR_SEND, (uintptr_t)buf + SEND_OFF, 5, mr->lkey, 0, 0);
	expect_ok(id->send_cq, RNIC_WC_SEND);
	CHECK(rnic_cm_disconnect(id) == 0, "disconnect");
	ack_next(ch, RNIC_CM_EVENT_DISCONNECTED);
	rnic_cm_destroy_qp(id);
	CHECK(rnic_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(rnic_cm_destroy_id(id) == 0, "destroy_id");
	rnic_cm_destroy_event_channel(ch);
	rnic_free_buf(buf);
	_exit(0);
}

static void
test_data(void)
{
	struct rnicd_stats before = daemon_stats(), st;
	int p[2];
	pid_t s, c;

	CHECK(pipe(p) == 0, "pipe");
	s = child();
	if (s == 0)
		data_server(p[1]);
	wait_fd(p[0]);
	c = child();
	if (c == 0)
		data_client();
	expect_exit0(c, "the client");
	expect_exit0(s, "the server");
	st = daemon_stats();
	CHECK(st.cm_ids_live == 0 && st.cm_ids_freed == before.cm_ids_freed && st.qps_live == 0 &&
	      st.clients_gone == before.clients_gone,
	      "left in the daemon: %lu CM ids, %lu freed by it, %lu QPs", (unsigned long)st.cm_ids_live,
	      (unsigned long)st.cm_ids_freed, (unsigned long)st.qps_live);
	printf("data: connected through the daemon's CM, 64 KB WRITE and a SEND checked, disconnected\n");
}

/* ------------------------------------------------------------------------------------------------------ */
/* tenants                                                                                                  */

static void
become(uid_t uid)
{
	CHECK(setgid(uid) == 0 && setuid(uid) == 0, "setuid %u: %s", (unsigned int)uid, strerror(errno));
	CHECK(prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "prctl");
	client_init();
}

/* A's listener gets the request (and rejects it); B, listening too, never sees it. */
static void
tenant_a(int ready_fd, int done_fd)
{
	struct rnic_cm_event_channel *ch;
	struct rnic_cm_event *ev;
	struct rnic_cm_id *lid;

	become(4101);
	ch = rnic_cm_create_event_channel();
	CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
	lid = listener(ch, 20001);
	signal_fd(ready_fd);
	ev = expect_event(ch, RNIC_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev->listen_id == lid && memcmp(ev->param.conn.private_data, "for-a", 6) == 0, "A's request");
	CHECK(rnic_cm_reject(ev->id, "no-thanks", 10) == 0, "reject");
	rnic_cm_destroy_id(ev->id);
	rnic_cm_ack_cm_event(ev);
	signal_fd(done_fd);
	rnic_cm_destroy_id(lid);
	rnic_cm_destroy_event_channel(ch);
	_exit(0);
}

static void
tenant_b(int ready_fd, int done_fd)
{
	struct rnic_cm_event_channel *ch;
	struct rnic_cm_event *ev;
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_RC, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_cm_id *lid, *other, *third, *fourth;
	struct sockaddr_in a_port = addr(SERVER_IP, 20001), outside = addr(SERVER_IP, 30000);

	become(4102);
	ch = rnic_cm_create_event_channel();
	CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
	lid = listener(ch, 21001);
	CHECK(rnic_cm_create_id(ch, &other, NULL, RNIC_PS_TCP) == 0, "create_id");
	CHECK(rnic_cm_bind_addr(other, (struct sockaddr *)&a_port) == EACCES, "B bound A's port");
	CHECK(rnic_cm_bind_addr(other, (struct sockaddr *)&outside) == EACCES, "B bound outside its cm-ports");
	CHECK(rnic_cm_resolve_addr(other, (struct sockaddr *)&outside, (struct sockaddr *)&a_port, 1000) == EACCES,
	      "B resolved from a port outside its cm-ports");
	CHECK(rnic_cm_create_id(ch, &third, NULL, RNIC_PS_TCP) == 0, "B's third id");
	CHECK(rnic_cm_create_id(ch, &fourth, NULL, RNIC_PS_TCP) == EDQUOT, "B's fourth id, over its max-cm-ids");
	rnic_cm_destroy_id(third);
	/* The CM's connections send from GID index 0, which B's gids leave out. */
	CHECK(rnic_cm_create_qp(lid, NULL, &ia) == EPERM, "B's CM took a QP it would send from GID 0");
	signal_fd(ready_fd);
	wait_fd(done_fd);
	CHECK(!readable(ch, 500), "B's channel polls readable: it saw a request for A");
	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	CHECK(rnic_cm_get_cm_event(ch, &ev) == EAGAIN, "B's channel holds an event");
	rnic_cm_destroy_id(other);
	rnic_cm_destroy_id(lid);
	rnic_cm_destroy_event_channel(ch);
	_exit(0);
}

static void
tenant_c(void)
{
	struct rnic_cm_event_channel *ch;
	struct rnic_cm_event *ev;
	struct rnic_cm_id *id, *low;
	struct sockaddr_in port80 = addr(SERVER_IP, 80);

	become(4103);
	ch = rnic_cm_create_event_channel();
	CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
	CHECK(rnic_cm_create_id(ch, &low, NULL, RNIC_PS_TCP) == 0, "create_id");
	CHECK(rnic_cm_bind_addr(low, (struct sockaddr *)&port80) == EACCES, "a tenant bound port 80");
	rnic_cm_destroy_id(low);
	id = resolved(ch, 20001);
	connect_with(id, "for-a");
	ev = expect_event(ch, RNIC_CM_EVENT_REJECTED);
	CHECK(ev->status == 28 && ev->param.conn.private_data_len >= 10 &&
	      memcmp(ev->param.conn.private_data, "no-thanks", 10) == 0, "the REJ: status %d", ev->status);
	rnic_cm_ack_cm_event(ev);
	rnic_cm_destroy_qp(id);
	rnic_cm_destroy_id(id);
	rnic_cm_destroy_event_channel(ch);
	_exit(0);
}

static int
test_tenants(const char *rnicd)
{
	char config[128];
	int ready[2], done[2];
	pid_t a, b, c;
	FILE *f;

	if (getuid() != 0) {
		printf("tenants: needs root (children of other uids): skipped\n");
		return 77;
	}
	snprintf(config, sizeof(config), "/tmp/rnicd-cm-%d.conf", (int)getpid());
	f = fopen(config, "w");
	CHECK(f != NULL, "config");
	fprintf(f, "tenant uid=4101 cm-ports 20000-20099\ntenant uid=4102 cm-ports 21000-21099 max-cm-ids 3 gids 1\n");
	fclose(f);
	start_daemon(rnicd, config);
	unlink(config);
	open_to_all_users();
	CHECK(pipe(ready) == 0 && pipe(done) == 0, "pipe");
	a = child();
	if (a == 0)
		tenant_a(ready[1], done[1]);
	b = child();
	if (b == 0)
		tenant_b(ready[1], done[0]);
	wait_fd(ready[0]);
	wait_fd(ready[0]);
	c = child();
	if (c == 0)
		tenant_c();
	expect_exit0(c, "the connecting tenant");
	expect_exit0(a, "tenant A");
	expect_exit0(b, "tenant B");
	printf("tenants: A's request reached A alone; B refused A's port and ports outside its range (EACCES), "
	       "its 4th id (EDQUOT)\n");
	stop_daemon();
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* death                                                                                                    */

/* A server that takes the request and then dies: without accepting (accept 0), or once connected. */
static void
dying_server(int ready_fd, int accept)
{
	struct rnic_cm_event_channel *ch;
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_RC, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_cm_event *ev;

	client_init();
	ch = rnic_cm_create_event_channel();
	CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
	listener(ch, (uint16_t)(7472 + accept));
	signal_fd(ready_fd);
	ev = expect_event(ch, RNIC_CM_EVENT_CONNECT_REQUEST);
	if (accept) {
		CHECK(rnic_cm_create_qp(ev->id, NULL, &ia) == 0, "create_qp");
		CHECK(rnic_cm_accept(ev->id, NULL) == 0, "accept");
		ack_next(ch, RNIC_CM_EVENT_ESTABLISHED);
	}
	signal_fd(ready_fd);
	pause();	/* killed */
	_exit(1);
}

static void
test_death(void)
{
	struct rnicd_stats st;
	int p[2][2];
	pid_t s[2];

	/* Both servers first: a child forked once this process is a client would inherit its engine. */
	for (int accept = 0; accept < 2; accept++) {
		CHECK(pipe(p[accept]) == 0, "pipe");
		s[accept] = child();
		if (s[accept] == 0)
			dying_server(p[accept][1], accept);
	}
	client_init();
	is_parent = 1;
	for (int accept = 0; accept < 2; accept++) {
		struct rnic_cm_event_channel *ch;
		struct rnic_cm_event *ev;
		struct rnic_cm_id *id;

		wait_fd(p[accept][0]);
		ch = rnic_cm_create_event_channel();
		CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
		id = resolved(ch, (uint16_t)(7472 + accept));
		connect_with(id, "x");
		if (accept)
			ack_next(ch, RNIC_CM_EVENT_ESTABLISHED);
		wait_fd(p[accept][0]);
		kill(s[accept], SIGKILL);
		wait_child(s[accept], TIMEOUT_S);
		ev = expect_event(ch, accept ? RNIC_CM_EVENT_DISCONNECTED : RNIC_CM_EVENT_REJECTED);
		rnic_cm_ack_cm_event(ev);
		if (accept)
			CHECK(rnic_cm_disconnect(id) == 0, "disconnect");
		rnic_cm_destroy_qp(id);
		CHECK(rnic_cm_destroy_id(id) == 0, "destroy_id");
		rnic_cm_destroy_event_channel(ch);
	}
	st = daemon_stats();
	CHECK(st.cm_ids_live == 0 && st.cm_ids_freed == 4, "CM ids: %lu live, %lu freed by the daemon (4: two "
	      "listeners, two connections)", (unsigned long)st.cm_ids_live, (unsigned long)st.cm_ids_freed);
	rnic_engine_fini();
	printf("death: a server dead holding a request: REJECTED; dead while connected: DISCONNECTED; its ids freed\n");
}

/* ------------------------------------------------------------------------------------------------------ */
/* hostile                                                                                                  */

static struct rnicd_rep rep;

static int
request(int s, struct rnicd_req *req, uint32_t cmd, size_t len, int *fd)
{
	int trunc, ret;

	req->cmd = cmd;
	req->version = RNICD_PROTO_VERSION;
	CHECK(rnicd_send_msg(s, req, len, -1) == 0, "send");
	ret = (int)rnicd_recv_msg(s, &rep, sizeof(rep), fd, &trunc);
	CHECK(ret >= (int)offsetof(struct rnicd_rep, u), "no reply: the daemon went away");
	return rep.status;
}

static int
cm(int s, struct rnicd_req *req, uint32_t cmd)
{
	return request(s, req, cmd, rnicd_req_size(cmd), NULL);
}

static uint32_t
new_channel(int s)
{
	struct rnicd_req req = { 0 };
	int fd = -1;

	CHECK(request(s, &req, RNICD_CM_CREATE_CHANNEL, rnicd_req_size(RNICD_CM_CREATE_CHANNEL), &fd) == 0 &&
	      fd >= 0, "CM_CREATE_CHANNEL");
	close(fd);
	return rep.u.cm.handle;
}

/* A client process with a QP, which says its connection's id and the QP's handle. */
static pid_t
qp_owner(uint32_t *client_id, uint32_t *handle)
{
	int p[2];
	pid_t c;

	CHECK(pipe(p) == 0, "pipe");
	c = child();
	if (c == 0) {
		struct end e = { 0 };
		uint32_t v[2];

		client_init();
		end_open(&e, 0);
		CHECK(rnic_client_qp_ref(e.qp, &v[0], &v[1]) == 0, "qp_ref");
		CHECK(write(p[1], v, sizeof(v)) == (ssize_t)sizeof(v), "write");
		pause();
		_exit(1);
	}
	CHECK(read(p[0], client_id, 4) == 4 && read(p[0], handle, 4) == 4, "the QP owner said nothing");
	return c;
}

/* Requests of every CM command with random bytes (of the right size), naming the connection's channel and
 * id half of the time: each answered, none ending the daemon. Seeded: a failure is reproduced by its seed. */
static void
random_requests(int s, uint32_t ch, uint32_t id, unsigned int seed, int n)
{
	struct rnicd_req req;
	int accepted = 0;

	srand(seed);
	for (int i = 0; i < n; i++) {
		uint32_t cmd = RNICD_CM_DESTROY_CHANNEL + (uint32_t)rand() % (RNICD_CM_ACK_EVENT - RNICD_CM_DESTROY_CHANNEL + 1);

		for (size_t k = 0; k < sizeof(req); k++)
			((uint8_t *)&req)[k] = (uint8_t)rand();
		if (rand() & 1) {
			req.u.cm.channel = ch;
			req.u.cm.id = id;
		}
		if (rand() & 1) {	/* IPv4 addresses, some of them the daemon's */
			req.u.cm.src.ss_family = AF_INET;
			req.u.cm.dst.ss_family = AF_INET;
			((struct sockaddr_in *)&req.u.cm.dst)->sin_addr.s_addr = htonl(0x0a4d0000u | (rand() & 3));
		}
		if (cmd == RNICD_CM_DESTROY_CHANNEL || cmd == RNICD_CM_DESTROY_ID)
			continue;	/* the handles stay for the rest */
		accepted += cm(s, &req, cmd) == 0;
	}
	printf("hostile: %d random requests (seed %u), %d of them served\n", n, seed, accepted);
}

/* The next event of a raw connection's channel (waiting for the CM's thread): its token. */
static uint64_t
take_raw(int s, uint32_t ch)
{
	struct rnicd_req req = { .u.cm.channel = ch };
	int ret;

	for (double t0 = now_s(); (ret = cm(s, &req, RNICD_CM_GET_EVENT)) == EAGAIN; usleep(1000))
		CHECK(now_s() - t0 < TIMEOUT_S, "no event");
	CHECK(ret == 0, "CM_GET_EVENT: %s", strerror(ret));
	return rep.u.cm_event.token;
}

/* Events taken and never acknowledged: 256, then ENOBUFS until one is. 129 ids, each resolved (an event)
 * and routed (another). */
static void
held_events(void)
{
	struct sockaddr_in dst = addr(SERVER_IP, 9);
	struct rnicd_req req = { 0 };
	int s = raw_connect(), ret;
	uint32_t ch, id[129];
	uint64_t token = 0;

	CHECK(s >= 0, "connect");
	ch = new_channel(s);
	for (int i = 0; i < 129; i++) {
		req.u.cm.channel = ch;
		req.u.cm.arg = RNIC_PS_TCP;
		CHECK(cm(s, &req, RNICD_CM_CREATE_ID) == 0, "CM_CREATE_ID");
		id[i] = rep.u.cm.handle;
		req.u.cm.id = id[i];
		req.u.cm.src.ss_family = 0;
		memcpy(&req.u.cm.dst, &dst, sizeof(dst));
		req.u.cm.arg = 2000;
		CHECK(cm(s, &req, RNICD_CM_RESOLVE_ADDR) == 0, "CM_RESOLVE_ADDR");
	}
	for (int i = 0; i < 129; i++)
		take_raw(s, ch);
	for (int i = 0; i < 129; i++) {
		req.u.cm.id = id[i];
		CHECK(cm(s, &req, RNICD_CM_RESOLVE_ROUTE) == 0, "CM_RESOLVE_ROUTE");
	}
	for (int i = 0; i < 127; i++)
		token = take_raw(s, ch);
	req.u.cm.channel = ch;
	ret = cm(s, &req, RNICD_CM_GET_EVENT);
	CHECK(ret == ENOBUFS, "a 257th event held: %s", strerror(ret));
	req.u.cm.token = token;
	CHECK(cm(s, &req, RNICD_CM_ACK_EVENT) == 0, "CM_ACK_EVENT");
	take_raw(s, ch);
	close(s);	/* the daemon acknowledges the rest */
}

/* A client's UD QP may not take a controlled Q_Key (QP1's among them): EPERM. */
static void
controlled_qkey(void)
{
	pid_t c = child();

	if (c == 0) {
		struct end e = { 0 };
		struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_UD, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
			.max_send_sge = 1, .max_recv_sge = 1 } };
		struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = 0x80010000u };
		int mask = RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_QKEY;
		struct rnic_qp *qp;

		client_init();
		end_open(&e, 0);
		ia.send_cq = ia.recv_cq = e.cq;
		qp = rnic_create_qp(e.pd, &ia);
		CHECK(qp != NULL, "UD QP: %s", strerror(errno));
		CHECK(rnic_modify_qp(qp, &a, mask) == EPERM, "a client's UD QP took QP1's Q_Key");
		a.qkey = 0x1234;
		CHECK(rnic_modify_qp(qp, &a, mask) == 0, "a client's UD QP refused an ordinary Q_Key");
		_exit(0);
	}
	expect_exit0(c, "the UD client");
}

static void
test_hostile(void)
{
	struct rnicd_req req = { 0 };
	int s = raw_connect(), s2 = raw_connect(), i, ret;
	uint32_t ch, ch2, id, client_id, qp;
	int fd;
	struct rnicd_stats st;
	pid_t owner;

	CHECK(s >= 0 && s2 >= 0, "connect");
	ch = new_channel(s);
	req.u.cm.channel = ch;
	req.u.cm.arg = RNIC_PS_TCP;
	CHECK(cm(s, &req, RNICD_CM_CREATE_ID) == 0, "CM_CREATE_ID");
	id = rep.u.cm.handle;
	req.u.cm.arg = RNIC_PS_UDP;
	CHECK(cm(s, &req, RNICD_CM_CREATE_ID) == EPROTONOSUPPORT, "an id of the UDP port space");
	/* Handles: none, forged, another connection's. */
	req.u.cm.id = 0;
	CHECK(cm(s, &req, RNICD_CM_LISTEN) == ENOENT, "handle 0");
	req.u.cm.id = id + 77;
	CHECK(cm(s, &req, RNICD_CM_DISCONNECT) == ENOENT, "a forged handle");
	req.u.cm.id = id;
	CHECK(cm(s2, &req, RNICD_CM_DESTROY_ID) == ENOENT, "another connection's id");
	req.u.cm.channel = ch;
	CHECK(cm(s2, &req, RNICD_CM_GET_EVENT) == ENOENT, "another connection's channel");
	ch2 = new_channel(s2);
	req.u.cm.channel = ch2;
	CHECK(cm(s, &req, RNICD_CM_MIGRATE_ID) == ENOENT, "an id moved to another connection's channel");
	/* Lengths and sizes. */
	CHECK(request(s, &req, RNICD_CM_BIND, rnicd_req_size(RNICD_CM_BIND) - 1, NULL) == EBADMSG, "a short BIND");
	memset(&req.u.cm.src, 0, sizeof(req.u.cm.src));
	req.u.cm.src.ss_family = AF_UNIX;
	CHECK(cm(s, &req, RNICD_CM_BIND) == EAFNOSUPPORT, "an AF_UNIX address");
	req.u.cm.conn.private_data_len = 250;
	CHECK(cm(s, &req, RNICD_CM_CONNECT) == EINVAL, "250 bytes of private data");
	req.u.cm.optlen = 1000;
	CHECK(cm(s, &req, RNICD_CM_SET_OPTION) == EINVAL, "an option of 1000 bytes");
	req.u.cm.token = 12345;
	CHECK(cm(s, &req, RNICD_CM_ACK_EVENT) == ENOENT, "an event never taken acknowledged");
	req.u.cm.channel = ch;
	CHECK(cm(s, &req, RNICD_CM_GET_EVENT) == EAGAIN, "an event from an empty channel");
	CHECK(cm(s, &req, RNICD_CM_DESTROY_CHANNEL) == EBUSY, "a channel destroyed under its id");
	/* Another process's QP (its connection's id and the QP's handle). */
	owner = qp_owner(&client_id, &qp);
	req.u.cm.id = id;
	req.u.cm.arg2 = (int32_t)client_id;
	req.u.cm.qp = qp;
	CHECK(cm(s, &req, RNICD_CM_ATTACH_QP) == ENOENT, "another process's QP attached");
	kill(owner, SIGKILL);
	wait_child(owner, TIMEOUT_S);
	random_requests(s, ch, id, 20261202, 3000);
	held_events();
	controlled_qkey();
	/* Floods: ids, then channels, each up to the connection's table. */
	req.u.cm.channel = ch;
	req.u.cm.arg = RNIC_PS_TCP;
	for (i = 0; i < 400 && (ret = cm(s, &req, RNICD_CM_CREATE_ID)) == 0; i++)
		;
	CHECK(ret == EDQUOT && i == 255, "ids: %d made, then %s", i, strerror(ret));
	for (i = 0; i < 100 && (ret = request(s, &req, RNICD_CM_CREATE_CHANNEL,
					      rnicd_req_size(RNICD_CM_CREATE_CHANNEL), &fd)) == 0; i++)
		close(fd);
	CHECK(ret == EDQUOT && i == 15, "channels: %d made, then %s", i, strerror(ret));
	st = daemon_stats();
	CHECK(st.cm_ids_live >= 256, "%lu CM ids live", (unsigned long)st.cm_ids_live);
	close(s);
	close(s2);
	for (double t0 = now_s(); (st = daemon_stats()).cm_ids_live != 0; usleep(20000))
		CHECK(now_s() - t0 < TIMEOUT_S, "the hostile connection's ids stay: %lu", (unsigned long)st.cm_ids_live);
	CHECK(st.cm_ids_freed >= 256 + 129, "%lu ids freed by the daemon", (unsigned long)st.cm_ids_freed);
	test_data();	/* still serving */
	printf("hostile: bad and foreign handles, lengths, sizes, a foreign QP, floods refused; the daemon serves\n");
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc != 3) {
		fprintf(stderr, "usage: test_cm RNICD data|tenants|death|hostile\n");
		return 2;
	}
	if (strcmp(argv[2], "tenants") == 0)
		return test_tenants(argv[1]);
	start_daemon(argv[1], NULL);
	if (strcmp(argv[2], "data") == 0)
		test_data();
	else if (strcmp(argv[2], "death") == 0)
		test_death();
	else if (strcmp(argv[2], "hostile") == 0)
		test_hostile();
	else
		CHECK(0, "unknown scenario %s", argv[2]);
	stop_daemon();
	return 0;
}
