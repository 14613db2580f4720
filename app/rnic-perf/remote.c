/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf between two processes: the client sends the test, the peers exchange what their QPs need over
 * TCP (as perftest does), then per size a START/READY handshake, the run, and each sending side's DONE (its
 * result and counts) answered by the other's VERDICT (what it received was complete and right). Both sides
 * print the report: the server prints the client's figures (-b: their sum with its own).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "oob.h"
#include "perf.h"

#define HELLO_MAGIC "rnicperf"

enum ctl_type { CTL_START = 1, CTL_READY, CTL_PERIOD, CTL_DONE, CTL_VERDICT };

/* The client's first message: the test. */
struct hello {
	char magic[8];
	struct perf_test t;
};

/* Every control message after it. */
struct ctl {
	uint32_t type;
	uint32_t size;
	int32_t ok;
	uint32_t pad;
	struct perf_result r;		/* PERIOD, DONE: the sender's figures */
	uint64_t count[PERF_MAX_QP_REMOTE];	/* DONE: messages sent per QP */
};

/* One side of the exchange. */
struct remote {
	int fd;
	struct perf_end *e;
	const struct perf_opts *o;
	uint32_t size;
};

static const char *const ctl_names[] = { "?", "START", "READY", "PERIOD", "DONE", "VERDICT" };

static int
ctl_send(const struct remote *r, struct ctl *c, uint32_t type)
{
	c->type = type;
	c->size = r->size;
	return write(r->fd, c, sizeof(*c)) == (ssize_t)sizeof(*c) ? 0 : perf_fail("the peer went away");
}

/* The next message, if one is there: 0, 1 (none yet) or -1 (the peer went away or sent nonsense). */
static int
ctl_poll(const struct remote *r, struct ctl *c)
{
	ssize_t n = recv(r->fd, c, sizeof(*c), MSG_DONTWAIT | MSG_PEEK);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	if (n > 0 && n < (ssize_t)sizeof(*c))
		return 1;	/* the rest is on its way */
	if (n <= 0 || recv(r->fd, c, sizeof(*c), MSG_WAITALL) != (ssize_t)sizeof(*c))
		return perf_fail("the peer went away");
	if (c->type < CTL_START || c->type > CTL_VERDICT || c->size != r->size)
		return perf_fail("the peer sent a message out of turn (type %u, size %u)", c->type, c->size);
	return 0;
}

/*
 * Nothing to do on this thread but wait for the peer's next message: it has no stages of its own and no
 * receives to post again (a one-way WRITE or READ server, a side awaiting its VERDICT). It sleeps in poll()
 * then, as perftest's server sleeps in read(): spinning would take half of the core it shares (with the
 * client, when both run on one machine) from the work being measured. The timeout keeps a signal that
 * came before the poll from waiting long.
 */
static void
ctl_idle(const struct remote *r)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };

	if (!r->e->receives && !rnic_engine_manual_progress())
		(void)poll(&p, 1, 100);
}

/*
 * Wait for the peer's message of this type, serving this end's receives meanwhile (the peer's SENDs need
 * them posted again) and running this thread's stages. A server prints the client's --run_infinitely periods
 * as they come.
 */
static int
ctl_await(const struct remote *r, uint32_t type, struct ctl *c)
{
	for (;;) {
		int got = ctl_poll(r, c);

		if (got < 0)
			return -1;
		if (got == 0 && c->type == type)
			return 0;
		if (got == 0 && c->type == CTL_PERIOD && r->o->role == ROLE_SERVER)
			perf_print_result(r->o, &c->r, &(struct perf_stage_set){ 0 });
		else if (got == 0)
			return perf_fail("expected %s from the peer, got %s", ctl_names[type], ctl_names[c->type]);
		if (r->e->receives && perf_serve_receives(r->e, &r->o->t, r->size) != 0)
			return -1;
		rnic_engine_progress();
		if (got == 1)
			ctl_idle(r);
		if (perf_aborted(&r->o->t))
			return perf_fail("interrupted");
	}
}

/* What the peer sent arrived complete and right (--verify): its SENDs, the data it wrote, its atomics. */
static int
verify_peer(const struct remote *r, const struct ctl *done)
{
	const struct perf_test *t = &r->o->t;
	uint64_t want = 0;

	if (t->mode != MODE_BW)
		return 0;
	for (uint32_t q = 0; q < r->e->nb_qp; q++)
		want += done->count[q];
	if (r->e->receives && perf_wait_received(r->e, t, r->size, want) != 0)
		return -1;
	return t->verify ? perf_check_target(r->e, t, r->size, done->count) : 0;
}

/*
 * After a size: a side that sent says DONE (result, counts), a side that received verifies and answers with
 * its VERDICT. peer: the peer's result when it sent.
 */
static int
finish_size(const struct remote *r, const struct perf_result *mine, int sent, int peer_sent,
	    struct perf_result *peer)
{
	static struct ctl c;

	memset(&c, 0, sizeof(c));
	c.r = *mine;
	memcpy(c.count, r->e->posted, sizeof(c.count[0]) * r->e->nb_qp);
	if (sent && ctl_send(r, &c, CTL_DONE) != 0)
		return -1;
	if (peer_sent) {
		if (ctl_await(r, CTL_DONE, &c) != 0)
			return -1;
		*peer = c.r;
		c.ok = verify_peer(r, &c) == 0;
		if (ctl_send(r, &c, CTL_VERDICT) != 0 || !c.ok)
			return -1;
	}
	if (sent && (ctl_await(r, CTL_VERDICT, &c) != 0 || !c.ok))
		return perf_fail("the peer found what it received incomplete or wrong (its report says why)");
	return 0;
}

/* The client's --run_infinitely periods: printed here and sent to the server, which prints them too. */
static int
send_period(void *arg, const struct perf_result *res, int n)
{
	const struct remote *r = arg;
	static struct ctl c;

	(void)n;
	memset(&c, 0, sizeof(c));
	c.r = res[0];
	perf_print_result(r->o, &res[0], &(struct perf_stage_set){ 0 });
	return ctl_send(r, &c, CTL_PERIOD);
}

/* The ends' part in a size, and what it needs before the run (both sides). */
static int
prepare_size(const struct remote *r, int sends)
{
	const struct perf_test *t = &r->o->t;
	struct perf_end *e = r->e;

	e->sends = sends;
	e->receives = t->op == OP_SEND && t->mode == MODE_BW && (r->o->role == ROLE_SERVER || t->duplex);
	if (perf_end_connect_all(e, r->o) != 0)
		return -1;
	perf_prepare_target(e, t, r->size);
	return t->op == OP_SEND ? perf_post_receives(e) : 0;
}

/* This side's run of a size: the requester's (client, or both with -b), or the server's answers. */
static int
run_size(const struct remote *r, struct perf_result *mine)
{
	struct perf_end *ends[1] = { r->e };
	const struct perf_opts *o = r->o;

	if (o->t.mode == MODE_LAT)
		return o->role == ROLE_CLIENT ? perf_run_lat(r->e, NULL, o, r->size, mine) :
		       perf_serve_lat(r->e, &o->t, r->size);
	if (!r->e->sends)
		return 0;	/* the server of a one-way test: it serves receives while it awaits DONE */
	return perf_run_bw(ends, 1, o, r->size, mine, send_period, (void *)r);
}

/* One size, either side: handshake, run, DONE and VERDICT, the report. */
static int
remote_size(const struct remote *r, struct perf_stage_set *sweep)
{
	const struct perf_opts *o = r->o;
	int client = o->role == ROLE_CLIENT, sends = client ? 1 : o->t.duplex && o->t.mode == MODE_BW;
	struct perf_result mine = { .size = r->size }, peer = { 0 }, sum;
	static struct perf_stage_set before, st;
	static struct ctl c;
	struct perf_end *ends[1] = { r->e };

	memset(&c, 0, sizeof(c));
	if (client ? prepare_size(r, sends) || ctl_send(r, &c, CTL_START) || ctl_await(r, CTL_READY, &c) :
	    ctl_await(r, CTL_START, &c) || prepare_size(r, sends) || ctl_send(r, &c, CTL_READY))
		return -1;
	perf_stages_snapshot(&before, ends, 1);
	if (run_size(r, &mine) != 0)
		return -1;
	mine.verified = o->t.verify;
	if (finish_size(r, &mine, sends, client ? o->t.duplex && o->t.mode == MODE_BW : 1, &peer) != 0)
		return -1;
	perf_stages_snapshot(&st, ends, 1);
	perf_stages_since(&st, &before);
	sum = client ? mine : peer;
	if (o->t.duplex && o->t.mode == MODE_BW)
		perf_sum_results(&sum, &mine, &peer);
	if (!o->t.run_infinitely)
		perf_print_result(o, &sum, &st);
	perf_print_both(o, &mine, &peer);
	perf_hist_add(r->size, &st);
	perf_stages_add(sweep, &st);
	return perf_check_limits(o, &sum) || perf_end_quiesce(r->e);
}

/* The device (-d, default the first), its link up, the QPs' information exchanged with the peer. */
static int
open_single(const struct remote *r)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_device *dev = NULL;
	struct rnic_port_attr port = { 0 };
	int ret;

	for (int i = 0; list != NULL && list[i] != NULL && dev == NULL; i++)
		if (r->o->dev_name == NULL || strcmp(rnic_get_device_name(list[i]), r->o->dev_name) == 0)
			dev = list[i];
	ret = dev == NULL ? perf_fail(r->o->dev_name ? "-d %s: no such device" : "no device", r->o->dev_name) :
	      perf_end_open(r->e, dev, r->o);
	rnic_free_device_list(list);
	/* Frames sent before the link is up are lost (memif connects, a veth comes up): wait for it. */
	for (int i = 0; ret == 0 && i < PERF_WAIT_S * 100; i++) {
		if (rnic_query_port(r->e->ctx, 1, &port) == 0 && port.state == RNIC_PORT_ACTIVE)
			break;
		usleep(10000);
	}
	if (ret == 0 && port.state != RNIC_PORT_ACTIVE)
		return perf_fail("the link of %s's port did not come up in %d s", r->e->name, PERF_WAIT_S);
	if (ret == 0)
		ret = perf_end_info(r->e);
	if (ret == 0 && oob_exchange(r->fd, r->e->self, r->e->peer, sizeof(r->e->self[0]) * r->e->nb_qp) != 0)
		ret = perf_fail("the exchange of the QPs' addresses failed");
	return ret;
}

/* The exchange's socket, kept for the goodbye (oob_goodbye). */
static int goodbye_fd = -1;

/* One step of taking the engine down beside the peer's (oob.h: neither port may go while the other polls). */
void
perf_remote_goodbye(const struct perf_opts *o, enum oob_goodbye_step step)
{
	if (goodbye_fd < 0)
		return;
	if (oob_goodbye(goodbye_fd, o->role == ROLE_SERVER, step) != 0) {
		fprintf(stderr, "rnic-perf: the peer did not say goodbye\n");
		step = OOB_DOWN;
	}
	if (step == OOB_DOWN || (step == OOB_STOPPED && o->role == ROLE_SERVER)) {
		close(goodbye_fd);
		goodbye_fd = -1;
	}
}

/* Every size of the test, then the table of the stages. */
static int
run_sizes(struct remote *r)
{
	static struct perf_stage_set sweep;
	int ret = open_single(r);

	if (ret == 0)
		perf_print_header(r->o, r->e);
	for (uint32_t s = perf_next_size(&r->o->t, 0); ret == 0 && s != 0; s = perf_next_size(&r->o->t, s)) {
		r->size = s;
		ret = remote_size(r, &sweep);
	}
	if (ret == 0) {
		perf_print_footer(r->o);
		perf_stages_print(r->o, &sweep, r->o->t.sweep ? "the whole sweep" : "the run");
	}
	if (r->o->wait_destroy_s != 0)
		sleep(r->o->wait_destroy_s);
	perf_end_close(r->e);
	goodbye_fd = r->fd;	/* open until the engines are down (perf_remote_goodbye) */
	return ret;
}

/* A test from the network: only what a client of ours could send (a hostile or foreign one is refused). */
static int
check_hello(const struct hello *h)
{
	const struct perf_test *t = &h->t;
	int flags_ok = t->sweep <= 1 && t->duplex <= 1 && t->run_infinitely <= 1 && t->verify <= 1 && t->events <= 1;

	if (memcmp(h->magic, HELLO_MAGIC, sizeof(h->magic)) != 0)
		return perf_fail("the client is not an rnic-perf of this version");
	if (t->op >= OP_N || t->mode > MODE_LAT || (t->conn != RNIC_QPT_RC && t->conn != RNIC_QPT_UC &&
	    t->conn != RNIC_QPT_UD) || t->mtu < RNIC_MTU_256 || t->mtu > RNIC_MTU_4096 || t->size == 0 ||
	    t->size > PERF_MAX_SIZE || t->nb_qp == 0 || t->nb_qp > PERF_MAX_QP_REMOTE || t->tx_depth == 0 ||
	    t->tx_depth > 4096 || t->inline_size > 512 || t->cq_mod == 0 || t->cq_mod > 1024 || t->post_list == 0 ||
	    t->post_list > PERF_MAX_POST_LIST || t->outs > UINT8_MAX || t->iters == 0 || t->iters > 1000000000ull ||
	    !(t->duration >= 0 && t->duration <= 86400) || t->qp_timeout > 31 || !flags_ok)
		return perf_fail("the client's test is out of range: refused");
	return 0;
}

/* The server: takes the test from its client (its own test options give way), then runs it. */
int
perf_run_server(struct perf_opts *o)
{
	static struct perf_end e;
	struct remote r = { .e = &e, .o = o };
	struct hello h;

	r.fd = oob_connect(NULL, o->port);
	if (r.fd < 0)
		return perf_fail(perf_interrupted ? "interrupted" : "no client on TCP port %s: %s", o->port,
				 strerror(errno));
	if (recv(r.fd, &h, sizeof(h), MSG_WAITALL) != (ssize_t)sizeof(h) || check_hello(&h) != 0) {
		close(r.fd);
		return perf_fail("no test from the client");
	}
	o->t = h.t;
	o->t.events = 0;	/* the client's choice: the server polls */
	return run_sizes(&r);
}

int
perf_run_client(const struct perf_opts *o)
{
	static struct perf_end e;
	struct remote r = { .e = &e, .o = o };
	struct hello h = { .t = o->t };

	memcpy(h.magic, HELLO_MAGIC, sizeof(h.magic));
	r.fd = oob_connect(o->host, o->port);
	if (r.fd < 0)
		return perf_fail("cannot reach the server %s on TCP port %s", o->host, o->port);
	if (write(r.fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		close(r.fd);
		return perf_fail("the server went away");
	}
	return run_sizes(&r);
}
