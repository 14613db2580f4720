/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd end to end (doc/rnicd.md): the test starts the daemon (its embedded loopback pair rnic0/rnic1) and
 * runs client processes through it, which use the ordinary rnic_* API with RNIC_DAEMON set.
 *
 *   test_rnicd RNICD traffic    two pairs of client processes, RC WRITE / SEND / READ, every byte checked
 *   test_rnicd RNICD kill       a client killed with SIGKILL mid-transfer: the daemon and a pair of other
 *                               clients go on (traffic after the kill, verified); its objects are freed
 *                               (the daemon's counters, over the socket and over telemetry)
 *   test_rnicd RNICD isolation  another client's rkey / lkey fail (REM_ACCESS_ERR / LOC_PROT_ERR) and
 *                               write nothing; forged handles and doorbells are refused; quotas (from a
 *                               configuration file) refuse with EDQUOT
 *   test_rnicd RNICD badmsg     malformed requests are refused and the daemon keeps serving
 *   test_rnicd RNICD sigterm    SIGTERM with a client connected: exit 0, socket removed, client told
 *   test_rnicd RNICD perf PERF  the unchanged rnic-perf through rnicd (RNIC_DAEMON), every operation verified
 * Every wait is bounded; the daemon is killed if the test fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rnic.h"
#include "rnic_client.h"
#include "rnic_dbq.h"
#include "rnic_qp.h"
#include "rnic_wqe.h"

static void
send_value(struct end *e, uint64_t v)
{
	memcpy(e->buf + SEND_OFF, &v, sizeof(v));
	post(e->qp, RNIC_WR_SEND, (uintptr_t)e->buf + SEND_OFF, sizeof(v), e->mr->lkey, 0, 0);
	expect_ok(e->cq, RNIC_WC_SEND);
}

static uint64_t
recv_value(struct end *e)
{
	uint64_t v;

	expect_ok(e->cq, RNIC_WC_RECV);
	memcpy(&v, e->buf + RECV_OFF, sizeof(v));
	post_recv(e);
	return v;
}

#define LAST_ROUND (1ull << 63)

/* A client process's end: open, swap connection details with the peer process over pipes, connect. */
static struct info
end_start(struct end *e, int dev, int in, int out)
{
	struct info me, peer;

	client_init();
	end_open(e, dev);
	me = end_info(e, e->qp);
	CHECK(write(out, &me, sizeof(me)) == sizeof(me) && read(in, &peer, sizeof(peer)) == sizeof(peer),
	      "exchange");
	connect_qp(e->qp, &peer);
	post_recv(e);	/* a SEND that comes first waits for it: RNR retries without limit */
	return peer;
}

/*
 * Round r: the initiator WRITEs 64 KB into the target's dst and SENDs r; the target checks every byte,
 * fills its src and SENDs r back; the initiator READs it and checks every byte. The initiator keeps going
 * until `more` says stop (then the target is told the round is the last).
 */
static int
initiator(int dev, int in, int out, int (*more)(uint32_t round, void *arg), void *arg)
{
	struct end e = { 0 };
	struct info peer;
	uint32_t r;

	peer = end_start(&e, dev, in, out);
	for (r = 0;; r++) {
		int last = !more(r, arg);

		fill(e.buf, MSG, 2 * r + 1);
		post(e.qp, RNIC_WR_RDMA_WRITE, (uintptr_t)e.buf, MSG, e.mr->lkey, peer.addr + MSG, peer.rkey);
		expect_ok(e.cq, RNIC_WC_RDMA_WRITE);
		send_value(&e, r | (last ? LAST_ROUND : 0));
		CHECK(recv_value(&e) == r, "the target answered another round");
		post(e.qp, RNIC_WR_RDMA_READ, (uintptr_t)e.buf + MSG, MSG, e.mr->lkey, peer.addr, peer.rkey);
		expect_ok(e.cq, RNIC_WC_RDMA_READ);
		CHECK(matches(e.buf + MSG, MSG, 2 * r + 2), "round %u: READ data differs", r);
		if (last)
			break;
	}
	end_close(&e);
	rnic_engine_fini();
	return 0;
}

static int
target(int dev, int in, int out)
{
	struct end e = { 0 };
	struct info peer;

	peer = end_start(&e, dev, in, out);
	for (;;) {
		uint64_t v = recv_value(&e);
		uint32_t r = (uint32_t)v;

		CHECK(matches(e.buf + MSG, MSG, 2 * r + 1), "round %u: WRITE data differs", r);
		fill(e.buf, MSG, 2 * r + 2);
		send_value(&e, r);
		if (v & LAST_ROUND)
			break;
	}
	/* The initiator's READ of the last round comes after our SEND: wait for it to go before leaving. */
	CHECK(read(in, &peer, 1) == 0, "the initiator's end of the pipe");
	end_close(&e);
	rnic_engine_fini();
	return 0;
}

struct pair {
	pid_t init, targ;
};

/* An initiator on device dev_i and a target on dev_t, each its own process (pipes for the exchange). */
static struct pair
start_pair(int dev_i, int dev_t, int (*more)(uint32_t, void *), void *arg)
{
	int a[2], b[2];
	struct pair p;

	CHECK(pipe(a) == 0 && pipe(b) == 0, "pipe");
	p.init = fork();
	CHECK(p.init >= 0, "fork");
	if (p.init == 0) {
		close(a[0]);
		close(b[1]);
		_exit(initiator(dev_i, b[0], a[1], more, arg));
	}
	p.targ = fork();
	CHECK(p.targ >= 0, "fork");
	if (p.targ == 0) {
		close(a[1]);
		close(b[0]);
		_exit(target(dev_t, a[0], b[1]));
	}
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	return p;
}

static void
wait_pair(struct pair p, const char *what)
{
	int si = wait_child(p.init, 120), st = wait_child(p.targ, 120);

	CHECK(WIFEXITED(si) && WEXITSTATUS(si) == 0, "%s: the initiator failed (status %#x)", what, si);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the target failed (status %#x)", what, st);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Scenarios                                                                                                */

static int
fixed_rounds(uint32_t round, void *arg)
{
	return round + 1 < *(uint32_t *)arg;
}

static void
test_traffic(void)
{
	uint32_t rounds = 200;
	struct pair p1 = start_pair(0, 1, fixed_rounds, &rounds);
	struct pair p2 = start_pair(1, 0, fixed_rounds, &rounds);
	struct rnicd_stats st;

	wait_pair(p1, "pair 1");
	wait_pair(p2, "pair 2");
	st = daemon_stats();
	CHECK(st.clients_total >= 4 + 1 && st.clients_gone == 0, "clients: %lu total, %lu gone",
	      (unsigned long)st.clients_total, (unsigned long)st.clients_gone);
	CHECK(st.qps_live == 0 && st.mrs_live == 0 && st.cqs_live == 0 && st.pds_live == 0 && st.shared_bytes == 0,
	      "objects left after the clients closed: %lu QPs, %lu MRs, %lu bytes", (unsigned long)st.qps_live,
	      (unsigned long)st.mrs_live, (unsigned long)st.shared_bytes);
	printf("traffic: 2 pairs x %u rounds of 64 KB WRITE + SEND + 64 KB READ, verified\n", rounds);
}

/* Keeps two WRITEs of 64 KB in flight between its two contexts until killed; a byte on `progress` once
 * traffic flows. */
static void __attribute__((noreturn))
victim(int progress)
{
	struct end a = { 0 }, b = { 0 };
	struct info ia, ib;
	uint64_t done = 0;

	client_init();
	end_open(&a, 0);
	end_open(&b, 1);
	ia = end_info(&a, a.qp);
	ib = end_info(&b, b.qp);
	connect_qp(a.qp, &ib);
	connect_qp(b.qp, &ia);
	post(a.qp, RNIC_WR_RDMA_WRITE, (uintptr_t)a.buf, MSG, a.mr->lkey, ib.addr + MSG, ib.rkey);
	for (;;) {
		post(a.qp, RNIC_WR_RDMA_WRITE, (uintptr_t)a.buf, MSG, a.mr->lkey, ib.addr + MSG, ib.rkey);
		expect_ok(a.cq, RNIC_WC_RDMA_WRITE);
		if (++done == 20)
			CHECK(write(progress, "x", 1) == 1, "progress");
	}
}

struct kill_ctl {
	int fd;				/* the parent writes one byte after the kill */
	uint32_t after;			/* rounds still done once it came */
};

static int
until_told(uint32_t round, void *arg)
{
	struct kill_ctl *k = arg;
	struct pollfd p = { .fd = k->fd, .events = POLLIN };
	char c;

	(void)round;
	if (k->after == UINT32_MAX && poll(&p, 1, 0) == 1 && read(k->fd, &c, 1) == 1)
		k->after = 30;
	if (k->after != UINT32_MAX)
		return k->after-- > 0;
	return 1;
}

static void
test_kill(void)
{
	int prog[2], ctl[2];
	struct kill_ctl k = { .after = UINT32_MAX };
	struct rnicd_stats before, st;
	struct pair p;
	pid_t v;
	char c, tel[4096];
	int status;

	CHECK(pipe(prog) == 0 && pipe(ctl) == 0, "pipe");
	k.fd = ctl[0];
	p = start_pair(0, 1, until_told, &k);
	close(ctl[0]);
	v = fork();
	CHECK(v >= 0, "fork");
	if (v == 0)
		victim(prog[1]);
	CHECK(read(prog[0], &c, 1) == 1, "the victim made no progress");
	before = daemon_stats();
	kill(v, SIGKILL);
	status = wait_child(v, TIMEOUT_S);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the victim was not killed");
	CHECK(write(ctl[1], "k", 1) == 1, "tell the pair");	/* it does 30 more verified rounds */
	wait_pair(p, "pair beside the killed client");
	st = daemon_stats();
	CHECK(st.clients_gone == before.clients_gone + 2, "clients gone: %lu (the victim had 2 contexts)",
	      (unsigned long)st.clients_gone);
	CHECK(st.qps_freed == 2 && st.mrs_freed == 2 && st.cqs_freed == 2 && st.pds_freed == 2,
	      "freed after the kill: %lu QPs, %lu MRs, %lu CQs, %lu PDs", (unsigned long)st.qps_freed,
	      (unsigned long)st.mrs_freed, (unsigned long)st.cqs_freed, (unsigned long)st.pds_freed);
	CHECK(st.qps_live == 0 && st.mrs_live == 0 && st.shared_bytes == 0, "left: %lu QPs, %lu bytes",
	      (unsigned long)st.qps_live, (unsigned long)st.shared_bytes);
	telemetry("/rnicd/stats", tel, sizeof(tel));
	CHECK(strstr(tel, "\"clients_gone\":2") != NULL && strstr(tel, "\"qps_freed\":2") != NULL,
	      "telemetry /rnicd/stats: %s", tel);
	printf("kill: victim killed mid-transfer (%lu QPs live before); the pair did 30 verified rounds after; "
	       "telemetry: %s\n", (unsigned long)before.qps_live, tel);
}

/* The status of one work request on a fresh connection of two clients' QPs. */
static enum rnic_wc_status
try_access(struct end *src, struct rnic_qp *qp, enum rnic_wr_opcode op, uint32_t lkey, uint64_t raddr,
	   uint32_t rkey)
{
	post(qp, op, (uintptr_t)src->buf, 4096, lkey, raddr, rkey);
	return wait_wc(src->cq).status;
}

/* New QPs of two clients, connected to each other. */
static void
connected_pair(struct end *x, struct end *y, struct rnic_qp **qx, struct rnic_qp **qy)
{
	struct info ix, iy;

	*qx = new_qp(x);
	*qy = new_qp(y);
	CHECK(*qx != NULL && *qy != NULL, "new QPs: %s", strerror(errno));
	ix = end_info(x, *qx);
	iy = end_info(y, *qy);
	connect_qp(*qx, &iy);
	connect_qp(*qy, &ix);
}

/* A device counter by name (0 if the device has none of that name). */
static uint64_t
device_counter(struct rnic_context *ctx, const char *name)
{
	struct rnic_counter cnt[128];
	int n = rnic_query_device_counters(ctx, cnt, 128);

	for (int i = 0; i < n && i < 128; i++)
		if (strcmp(cnt[i].name, name) == 0)
			return cnt[i].value;
	return 0;
}

static void
test_isolation(void)
{
	struct end a = { 0 }, b = { 0 }, c = { 0 };
	struct rnic_qp *a2, *b2, *a3, *b3;
	struct rnic_qp_priv fake;
	struct rnic_mr fake_mr, *mr2;
	struct info ia, ib, ic;
	struct rnic_qp_attr attr;
	struct rnic_qp_init_attr init;
	uint64_t no_qp;
	void *big;

	client_init();
	end_open(&a, 0);	/* three clients: a on rnic0, b and c on rnic1 */
	end_open(&b, 1);
	end_open(&c, 1);
	fill(c.buf, BUF_BYTES, 99);
	fill(b.buf, BUF_BYTES, 98);
	fill(a.buf, BUF_BYTES, 97);
	/* The device's congestion control is the operator's: a tenant cannot switch it off for everyone. */
	CHECK(rnic_set_cc(a.ctx, 0, 0) == -ENOTSUP, "a tenant switched the device's DCQCN");
	ia = end_info(&a, a.qp);
	ib = end_info(&b, b.qp);
	ic = end_info(&c, c.qp);
	connect_qp(a.qp, &ib);
	connect_qp(b.qp, &ia);

	/* a WRITEs to c's memory with c's rkey through b's QP: b's PD is not c's. */
	CHECK(try_access(&a, a.qp, RNIC_WR_RDMA_WRITE, a.mr->lkey, ic.addr, ic.rkey) == RNIC_WC_REM_ACCESS_ERR,
	      "WRITE with another client's rkey did not fail with REM_ACCESS_ERR");
	CHECK(matches(c.buf, BUF_BYTES, 99), "c's memory changed");
	/* The engine moved a's QP to ERR on its own: a receive posted now completes flushed at once. */
	for (double t0 = now_s(); rnic_query_qp(a.qp, &attr, 0, &init) == 0 && attr.qp_state != RNIC_QPS_ERR;
	     usleep(1000))
		CHECK(now_s() - t0 < TIMEOUT_S, "a's QP did not enter ERR");
	post_recv(&a);
	CHECK(wait_wc(a.cq).status == RNIC_WC_WR_FLUSH_ERR, "a receive on a QP in ERR was not flushed");
	connected_pair(&a, &b, &a2, &b2);
	CHECK(try_access(&a, a2, RNIC_WR_RDMA_READ, a.mr->lkey, ic.addr, ic.rkey) == RNIC_WC_REM_ACCESS_ERR,
	      "READ with another client's rkey did not fail with REM_ACCESS_ERR");
	/* b uses c's lkey (same device) as the source of a WRITE to a: a local protection error. */
	connected_pair(&a, &b, &a3, &b3);
	CHECK(try_access(&b, b3, RNIC_WR_RDMA_WRITE, c.mr->lkey, ia.addr, ia.rkey) == RNIC_WC_LOC_PROT_ERR,
	      "another client's lkey was not refused");
	CHECK(matches(c.buf, BUF_BYTES, 99) && matches(b.buf, BUF_BYTES, 98) && matches(a.buf, BUF_BYTES, 97),
	      "memory changed");
	printf("isolation: foreign rkey -> REM_ACCESS_ERR (WRITE and READ), foreign lkey -> LOC_PROT_ERR, "
	       "nothing written\n");

	/* Handles: c's QP and MR named from a's context are not a's. */
	memcpy(&fake, c.qp, sizeof(fake));
	fake.pub.context = a.ctx;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = RNIC_QPS_ERR;
	CHECK(rnic_modify_qp(&fake.pub, &attr, RNIC_QP_STATE) == ENOENT, "a modified c's QP");
	CHECK(rnic_destroy_qp(&fake.pub) == ENOENT, "a destroyed c's QP");
	fake_mr = *c.mr;
	fake_mr.context = a.ctx;
	CHECK(rnic_dereg_mr(&fake_mr) == ENOENT, "a deregistered c's MR");
	fake.pub.handle = 0x7fff0001;
	CHECK(rnic_query_qp(&fake.pub, &attr, 0, &init) == ENOENT, "a forged handle named something");
	CHECK(rnic_query_qp(c.qp, &attr, 0, &init) == 0 && attr.qp_state == RNIC_QPS_RESET, "c's QP was touched");

	/* A doorbell on c's queue naming b's QP (same device) is dropped by the engine as not c's. */
	no_qp = device_counter(c.ctx, "no_qp");
	CHECK(rnic_dbq_push(((struct rnic_context_priv *)c.ctx)->dbq,
			    rnic_doorbell_make(0, 0, RNIC_WQE_OP_NOP, b.qp->qp_num, 0)) == 0, "doorbell");
	for (double t0 = now_s(); device_counter(c.ctx, "no_qp") == no_qp; usleep(10000))
		CHECK(now_s() - t0 < TIMEOUT_S, "the forged doorbell was not counted");
	printf("isolation: foreign and forged handles -> ENOENT; a doorbell naming another client's QP dropped\n");

	/* Quotas of the configuration file: 3 QPs, 2 MRs per client. */
	CHECK(new_qp(&a) == NULL && errno == EDQUOT, "a fourth QP was not refused with EDQUOT");
	big = rnic_alloc_buf(2u << 20);
	CHECK(big != NULL, "rnic_alloc_buf");
	CHECK(rnic_reg_mr(a.pd, big, 2u << 20, RNIC_ACCESS_LOCAL_WRITE) == NULL && errno == EDQUOT,
	      "2 MB over a 1 MB memory quota was not refused with EDQUOT");
	mr2 = rnic_reg_mr(a.pd, a.buf, 4096, RNIC_ACCESS_LOCAL_WRITE);
	CHECK(mr2 != NULL, "second MR: %s", strerror(errno));
	CHECK(rnic_reg_mr(a.pd, a.buf, 4096, RNIC_ACCESS_LOCAL_WRITE) == NULL && errno == EDQUOT,
	      "a third MR was not refused with EDQUOT");
	CHECK(rnic_reg_mr(a.pd, &fake, 64, RNIC_ACCESS_LOCAL_WRITE) == NULL && errno == EINVAL,
	      "memory not from rnic_alloc_buf was registered");
	printf("quotas: 4th QP, 3rd MR, 2 MB over a 1 MB memory quota -> EDQUOT; memory rnicd cannot map -> "
	       "EINVAL\n");
	/* Leave without cleaning up: the daemon frees it all when the connections close. */
	_exit(0);
}

/* Send raw bytes as a request; returns the reply's status. */
static struct rnicd_rep last_rep;

static int
raw_request(int s, const void *msg, size_t len, int fd)
{
	int trunc;

	CHECK(rnicd_send_msg(s, msg, len, fd) == 0, "send");
	CHECK(rnicd_recv_msg(s, &last_rep, sizeof(last_rep), NULL, &trunc) >= (ssize_t)offsetof(struct rnicd_rep, u),
	      "no reply: the daemon went away");
	return last_rep.status;
}

static void
test_badmsg(void)
{
	struct rnicd_req req = { .version = RNICD_PROTO_VERSION };
	static char big[20000];
	int s = raw_connect(), fd, unsealed, ret;
	uint32_t pd;
	struct rnicd_stats st;
	pid_t c;

	CHECK(s >= 0, "connect");
	CHECK(raw_request(s, "abc", 3, -1) == EBADMSG, "3 bytes");
	req.cmd = 999;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_LIST), -1) == EOPNOTSUPP, "unknown command");
	req.cmd = 0;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_LIST), -1) == EOPNOTSUPP, "command 0");
	req.cmd = RNICD_LIST;
	req.version = 77;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_LIST), -1) == EPROTONOSUPPORT, "bad version");
	req.version = RNICD_PROTO_VERSION;
	req.cmd = RNICD_REG_MR;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_REG_MR) - 4, -1) == EBADMSG, "short REG_MR");
	memcpy(big, &req, sizeof(req));	/* REG_MR is the longest request: 4 bytes past it come from big */
	CHECK(raw_request(s, big, rnicd_req_size(RNICD_REG_MR) + 4, -1) == EBADMSG, "long REG_MR");
	CHECK(raw_request(s, big, sizeof(big), -1) == EBADMSG, "oversized message");
	req.cmd = RNICD_ALLOC_PD;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_ALLOC_PD), -1) == ENXIO, "ALLOC_PD before OPEN");
	req.cmd = RNICD_OPEN;
	req.u.open.index = 42;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_OPEN), -1) == ENODEV, "OPEN of device 42");
	req.u.open.index = 0;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_OPEN), -1) == 0, "OPEN");
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_OPEN), -1) == EBUSY, "second OPEN");
	req.cmd = RNICD_ALLOC_PD;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_ALLOC_PD), -1) == 0, "ALLOC_PD");
	pd = last_rep.u.obj.handle;
	req.cmd = RNICD_DESTROY_QP;
	req.u.obj.handle = 12345;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_DESTROY_QP), -1) == ENOENT, "DESTROY_QP of nothing");
	req.cmd = RNICD_REG_MR;
	memset(&req.u, 0, sizeof(req.u));
	req.u.reg_mr.length = 4096;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_REG_MR), -1) == EBADF, "REG_MR without a memfd");
	unsealed = memfd_create("unsealed", 0);
	CHECK(unsealed >= 0 && ftruncate(unsealed, 8192) == 0, "memfd");
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_REG_MR), unsealed) == ENOENT, "REG_MR with a bad PD");
	req.u.reg_mr.pd = pd;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_REG_MR), unsealed) == EPERM, "unsealed memfd");
	close(unsealed);
	/* A sealed buffer, but a range beyond its end. */
	fd = memfd_create("sealed", MFD_ALLOW_SEALING);
	CHECK(fd >= 0 && ftruncate(fd, 8192) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0, "sealed memfd");
	req.u.reg_mr.offset = 8192;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_REG_MR), fd) == EINVAL, "REG_MR past the end of the file");
	close(fd);
	req.cmd = RNICD_CREATE_CQ;
	req.u.create_cq.cqe = -5;
	CHECK(raw_request(s, &req, rnicd_req_size(RNICD_CREATE_CQ), -1) == EINVAL, "CQ of -5 entries");
	close(s);

	/* A client that sends and never reads its replies: the daemon ends it instead of waiting for it. */
	s = raw_connect();
	CHECK(s >= 0 && fcntl(s, F_SETFL, O_NONBLOCK) == 0, "connect");
	req.cmd = RNICD_LIST;
	for (double t0 = now_s(); (ret = rnicd_send_msg(s, &req, rnicd_req_size(RNICD_LIST), -1)) == 0 ||
				   ret == -EAGAIN; usleep(100))
		CHECK(now_s() - t0 < TIMEOUT_S, "the daemon kept a client that reads nothing");
	CHECK(ret == -EPIPE || ret == -ECONNRESET, "sending to the daemon: %s", strerror(-ret));
	close(s);

	/* Still serving: a client works, and the refusals were counted. */
	c = fork();
	CHECK(c >= 0, "fork");
	if (c == 0) {
		struct end e = { 0 };

		client_init();
		end_open(&e, 1);
		end_close(&e);
		_exit(0);
	}
	fd = wait_child(c, TIMEOUT_S);
	CHECK(WIFEXITED(fd) && WEXITSTATUS(fd) == 0, "a client after the bad messages failed");
	st = daemon_stats();
	CHECK(st.bad_requests >= 12 && st.pds_live == 0, "bad requests %lu, PDs live %lu",
	      (unsigned long)st.bad_requests, (unsigned long)st.pds_live);
	printf("badmsg: %lu malformed or refused requests, the daemon still serves\n",
	       (unsigned long)st.bad_requests);
}

static void
test_sigterm(void)
{
	struct end e = { 0 };
	int st;

	/* A client with objects is connected (this process, as a client) when the daemon is told to stop. */
	client_init();
	is_parent = 1;
	end_open(&e, 0);
	kill(daemon_pid, SIGTERM);
	st = wait_child(daemon_pid, TIMEOUT_S);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rnicd did not exit 0 on SIGTERM (status %#x)", st);
	daemon_pid = -1;
	remove_runtime_dir();
	CHECK(access(sock_path, F_OK) != 0, "rnicd left its socket behind");
	CHECK(rnic_alloc_pd(e.ctx) == NULL, "a verb succeeded without the daemon");
	printf("sigterm: rnicd exited 0 with a client connected; the client's next verb failed: %s; "
	       "its objects are still released\n", strerror(errno));
	end_close(&e);
	rnic_engine_fini();
	rmdir(dir);
}

/* rnic-perf, unchanged, as a client: bandwidth and latency runs with every byte verified. */
static void
test_perf(const char *perf)
{
	static const char *const runs[][9] = {
		{ "-o", "write", "-s", "65536", "-n", "2000", "--verify", NULL },
		{ "-o", "read", "-s", "4096", "-q", "4", "-n", "2000", "--verify" },
		{ "-o", "send", "-s", "1000", "-n", "2000", "--verify", NULL },
		{ "-o", "fetch_add", "-s", "8", "-n", "2000", "--verify", NULL },
		{ "-o", "write", "--lat", "-s", "64", "-n", "500", "--verify", NULL },
	};
	struct rnicd_stats st;

	for (unsigned int i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char *args[12] = { (char *)perf };
		pid_t c;
		int status, n = 1;

		for (int k = 0; k < 9 && runs[i][k] != NULL; k++)
			args[n++] = (char *)runs[i][k];
		c = fork();
		CHECK(c >= 0, "fork");
		if (c == 0) {
			execv(perf, args);
			_exit(127);
		}
		status = wait_child(c, 120);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rnic-perf %s %s through rnicd failed (%#x)",
		      runs[i][1], runs[i][3], status);
	}
	st = daemon_stats();
	CHECK(st.clients_gone == 0 && st.qps_live == 0 && st.shared_bytes == 0, "rnic-perf left objects behind");
	printf("perf: rnic-perf write/read/send/fetch_add bandwidth and write latency through rnicd, verified\n");
}

static void
run_isolation(const char *rnicd)
{
	char config[128];
	struct rnicd_stats st;
	FILE *f;
	pid_t c;
	int status;

	snprintf(config, sizeof(config), "/tmp/rnicd-test-%d.conf", (int)getpid());
	f = fopen(config, "w");
	CHECK(f != NULL, "config");
	fprintf(f, "# per-client quotas of the isolation test\nmax-qp 3\nmax-mr 2  # two regions\n"
		"max-mem 1048576\n");
	fclose(f);
	start_daemon(rnicd, config);
	unlink(config);
	c = fork();
	CHECK(c >= 0, "fork");
	if (c == 0)
		test_isolation();
	status = wait_child(c, 120);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "isolation client failed (status %#x)", status);
	st = daemon_stats();
	CHECK(st.qps_live == 0 && st.mrs_live == 0 && st.clients_gone == 3,
	      "after the client left without cleaning up: %lu QPs live, %lu clients gone",
	      (unsigned long)st.qps_live, (unsigned long)st.clients_gone);
	stop_daemon();
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc != 3 && !(argc == 4 && strcmp(argv[2], "perf") == 0)) {
		fprintf(stderr, "usage: test_rnicd RNICD traffic|kill|isolation|badmsg|sigterm|perf RNIC-PERF\n");
		return 2;
	}
	if (strcmp(argv[2], "isolation") == 0) {
		run_isolation(argv[1]);
		return 0;
	}
	start_daemon(argv[1], NULL);
	if (strcmp(argv[2], "traffic") == 0) {
		test_traffic();
	} else if (strcmp(argv[2], "kill") == 0) {
		test_kill();
	} else if (strcmp(argv[2], "perf") == 0) {
		test_perf(argv[3]);
	} else if (strcmp(argv[2], "badmsg") == 0) {
		test_badmsg();
	} else if (strcmp(argv[2], "sigterm") == 0) {
		test_sigterm();
		return 0;
	} else {
		CHECK(0, "unknown scenario %s", argv[2]);
	}
	stop_daemon();
	return 0;
}
