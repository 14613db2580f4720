/* SPDX-License-Identifier: BSD-3-Clause
 * Tenants' caps (doc/congestion.md, "Tenants' caps"; issue 21): two tenants of device 0 keep WRITEs queued on
 * two QPs each, one with a cap set by rnic_device_tenant_cap (bits a second, then messages a second), the
 * other without. The engine's counters of each (rnic_device_tenant_stats: payload bytes and request packets,
 * which the cap's code does not keep) measure what each sent, per second of the clock and per second the
 * engine's lcore ran (the machine is loaded: the time it takes the lcore away, the buckets lose). The
 * tenants are the contexts' numbers, as rnicd sets them.
 * Run as: test_caps <EAL args with a worker lcore: -l 0,1>
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_cycles.h>

#include "rnic.h"
#include "rnic_priv.h"
#include "test_env.h"

#define CAPPED 1			/* the tenants' numbers */
#define FREE 2
#define QPS 2				/* of each tenant */
#define DEPTH 64			/* WRITEs each QP keeps queued */
#define BUF_BYTES (1u << 20)
#define WINDOWS 8
#define WINDOW_S 0.1
#define WARMUP_S 0.2			/* a new cap taken, the queues full, before the windows */
#define FRAME_HDR 58			/* a WRITE packet's bytes besides its payload, at least: Ethernet, IPv4,
					 * UDP, BTH, ICRC (the first of a message has a RETH more) */
#define BUCKET_US 64			/* what a cap's bucket holds (RNIC_PACER_BURST_US) */

static int g_argc;
static char **g_argv;
static struct test_side capped, uncapped, peer;
static struct rnic_qp *qps[2 * 2 * 2 * QPS];	/* the tenants' and the peer's, of both tests */
static unsigned int nb_qps;
static uint32_t msg_bytes;

static void
open_side(struct test_side *s, struct rnic_device *dev, uint32_t tenant)
{
	assert_int_equal(test_side_open(s, dev, BUF_BYTES, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE), 0);
	rnic_context_priv(s->ctx)->tenant = tenant;	/* before its QPs: they are served as its */
}

static int
setup(void **state)
{
	struct rnic_device **list;

	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	open_side(&capped, list[0], CAPPED);
	open_side(&uncapped, list[0], FREE);
	open_side(&peer, list[1], 0);
	rnic_free_device_list(list);
	return rnic_engine_start();
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	while (nb_qps > 0)
		rnic_destroy_qp(qps[--nb_qps]);
	test_side_close(&capped);
	test_side_close(&uncapped);
	test_side_close(&peer);
	return rnic_engine_fini();
}

static struct rnic_device *
dev0(void)
{
	return rnic_ctx_dev(capped.ctx);
}

/* An RC QP of s connected to a new QP of the peer (path MTU 4096). */
static struct rnic_qp *
connected_qp(struct test_side *s)
{
	struct rnic_qp_init_attr ia = {
		.qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	const struct test_path path = { .mtu = RNIC_MTU_4096, .psn = 0, .timeout = 14, .retry_cnt = 7 };
	struct rnic_qp *qp, *pq;

	ia.send_cq = ia.recv_cq = s->cq;
	qp = rnic_create_qp(s->pd, &ia);
	ia.send_cq = ia.recv_cq = peer.cq;
	pq = rnic_create_qp(peer.pd, &ia);
	assert_non_null(qp);
	assert_non_null(pq);
	assert_int_equal(test_connect(qp, pq->qp_num, &peer.gid, &path), 0);
	assert_int_equal(test_connect(pq, qp->qp_num, &s->gid, &path), 0);
	qps[nb_qps++] = qp;
	qps[nb_qps++] = pq;
	return qp;
}

static void
post_writes(struct rnic_qp *qp, struct test_side *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct rnic_sge sge = { (uintptr_t)s->buf, msg_bytes, s->mr->lkey };
		struct rnic_send_wr wr = { .wr_id = (uintptr_t)qp, .sg_list = &sge, .num_sge = 1,
					   .opcode = RNIC_WR_RDMA_WRITE, .send_flags = RNIC_SEND_SIGNALED,
					   .wr.rdma = { (uintptr_t)peer.buf, peer.mr->rkey } };
		struct rnic_send_wr *bad;

		assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
	}
}

/* Each completion of s replaced by a new WRITE on its QP; the WRITEs that completed. */
static int
refill(struct test_side *s)
{
	struct rnic_wc wc[64];
	int n = rnic_poll_cq(s->cq, 64, wc);

	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		post_writes((struct rnic_qp *)(uintptr_t)wc[i].wr_id, s, 1);
	}
	return n;
}

static double
now_s(void)
{
	return (double)rte_get_timer_cycles() / (double)rte_get_timer_hz();
}

/* Both tenants' queues kept full for s seconds; the thread sleeps while nothing completes, so that it leaves
 * the CPU to the engine's lcore. */
static void
keep_busy(double s)
{
	for (double t0 = now_s(); now_s() - t0 < s;)
		if (refill(&capped) + refill(&uncapped) == 0)
			usleep(50);
}

/* Two tenants' WRITEs of bytes each, QPS QPs each, every queue full. */
static void
start_tenants(uint32_t bytes)
{
	msg_bytes = bytes;
	for (int i = 0; i < QPS; i++) {
		post_writes(connected_qp(&capped), &capped, DEPTH);
		post_writes(connected_qp(&uncapped), &uncapped, DEPTH);
	}
}

/* Let every WRITE complete (none replaced): the QPs stay for teardown. */
static void
drain(void)
{
	int left = 2 * QPS * DEPTH;
	struct rnic_wc wc[64];

	for (double t0 = now_s(); left > 0 && now_s() - t0 < 20;) {
		int n = rnic_poll_cq(capped.cq, 64, wc) + rnic_poll_cq(uncapped.cq, 64, wc);

		left -= n;
		if (n == 0)
			usleep(100);
	}
	assert_int_equal(left, 0);
}

/* What a tenant sent in a window: its frames' bytes (payload and headers) or its packets (messages, for
 * WRITEs of one packet), per second of the clock and per second the engine's lcore ran. */
struct window {
	double wall[2];			/* [0] the capped tenant, [1] the other */
	double cpu[2];
};

static double
sent(const struct rnic_tenant_stats *a, const struct rnic_tenant_stats *b, int msgs)
{
	if (msgs)
		return (double)(b->packets - a->packets);
	return (double)(b->bytes - a->bytes) + (double)(b->packets - a->packets) * FRAME_HDR;
}

static void
measure(struct window w[WINDOWS], int msgs)
{
	keep_busy(WARMUP_S);
	for (int i = 0; i < WINDOWS; i++) {
		struct rnic_tenant_stats c0, c1, u0, u1;
		uint64_t t0 = rte_get_timer_cycles(), ran0 = test_engine_cpu_ns(0), t1, ran1;
		double wall_s, cpu_s;

		rnic_device_tenant_stats(dev0(), CAPPED, &c0);
		rnic_device_tenant_stats(dev0(), FREE, &u0);
		keep_busy(WINDOW_S);
		rnic_device_tenant_stats(dev0(), CAPPED, &c1);
		rnic_device_tenant_stats(dev0(), FREE, &u1);
		t1 = rte_get_timer_cycles();
		ran1 = test_engine_cpu_ns(0);
		assert_true(ran1 > ran0);
		wall_s = (double)(t1 - t0) / (double)rte_get_timer_hz();
		cpu_s = (double)(ran1 - ran0) / 1e9;
		w[i].wall[0] = sent(&c0, &c1, msgs) / wall_s;
		w[i].wall[1] = sent(&u0, &u1, msgs) / wall_s;
		w[i].cpu[0] = sent(&c0, &c1, msgs) / cpu_s;
		w[i].cpu[1] = sent(&u0, &u1, msgs) / cpu_s;
	}
}

/*
 * The capped tenant at x (bytes or messages a second) with a bucket of bucket: no window by the clock above
 * x by more than 5 % and two buckets (a cap that lets more through is broken whatever the machine does;
 * without it the tenant takes half the engine, several times x); per second the engine's lcore ran, the
 * best window at least 0.9 x (the buckets lose the time the lcore is away: by the clock a loaded machine
 * shows less); and the other tenant takes the rest: its median window per second of the lcore above 2 x.
 */
static void
check_cap(const char *what, const struct window w[WINDOWS], double x, double bucket)
{
	double best = 0, worst_wall = 0, free_cpu[WINDOWS];

	for (int i = 0; i < WINDOWS; i++) {
		print_message("%s cap %.0f: capped %.0f/s by the clock, %.0f per second of the lcore; the other "
			      "%.0f per second of the lcore\n", what, x, w[i].wall[0], w[i].cpu[0], w[i].cpu[1]);
		best = RTE_MAX(best, w[i].cpu[0]);
		worst_wall = RTE_MAX(worst_wall, w[i].wall[0]);
		free_cpu[i] = w[i].cpu[1];
	}
	for (int i = 1; i < WINDOWS; i++)	/* the median of the other tenant's */
		for (int j = i; j > 0 && free_cpu[j - 1] > free_cpu[j]; j--) {
			double t = free_cpu[j];

			free_cpu[j] = free_cpu[j - 1];
			free_cpu[j - 1] = t;
		}
	print_message("%s cap %.0f: the highest window by the clock %.3f x, the best per second of the lcore "
		      "%.3f x; the other tenant's median %.1f x\n", what, x, worst_wall / x, best / x,
		      free_cpu[WINDOWS / 2] / x);
	assert_true(worst_wall <= 1.05 * x + 2 * bucket / WINDOW_S);
	assert_true(best >= 0.9 * x);
	assert_true(free_cpu[WINDOWS / 2] >= 2 * x);
}

/*
 * A cap of 200 Mbit/s on the wire, WRITEs of 16 KB (4 frames each); then the cap lifted: the tenant's
 * QPs that waited for its tokens go back, and it takes its share of the engine again.
 */
static void
test_cap_bytes(void **state)
{
	const double bps = 200e6, x = bps / 8;
	struct rnic_tenant_stats s0, s1;
	struct window w[WINDOWS], after[WINDOWS];
	double lifted = 0;

	(void)state;
	start_tenants(16384);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, (uint64_t)bps, 0), 0);
	rnic_device_tenant_stats(dev0(), CAPPED, &s0);
	measure(w, 0);
	rnic_device_tenant_stats(dev0(), CAPPED, &s1);
	print_message("bytes cap: %llu visits held, %.3f s held\n", (unsigned long long)(s1.cap_waits - s0.cap_waits),
		      (double)(s1.cap_held_ns - s0.cap_held_ns) / 1e9);
	check_cap("bytes", w, x, RTE_MAX(x * BUCKET_US / 1e6, 8448.0));
	assert_true(s1.cap_waits > s0.cap_waits && s1.cap_held_ns > s0.cap_held_ns);

	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, 0), 0);
	measure(after, 0);
	for (int i = 0; i < WINDOWS; i++)
		lifted = RTE_MAX(lifted, after[i].cpu[0]);
	print_message("bytes cap lifted: the tenant's best %.1f x per second of the lcore\n", lifted / x);
	assert_true(lifted > 2 * x);
	drain();
}

/* A cap of 20 000 messages a second, WRITEs of 256 bytes (a packet each); no cap of bytes. */
static void
test_cap_messages(void **state)
{
	const double x = 20000;
	struct rnic_tenant_stats s0, s1;
	struct window w[WINDOWS];

	(void)state;
	start_tenants(256);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, (uint64_t)x), 0);
	rnic_device_tenant_stats(dev0(), CAPPED, &s0);
	measure(w, 1);
	rnic_device_tenant_stats(dev0(), CAPPED, &s1);
	print_message("message cap: %llu messages counted, %llu visits held\n",
		      (unsigned long long)(s1.cap_messages - s0.cap_messages),
		      (unsigned long long)(s1.cap_waits - s0.cap_waits));
	check_cap("messages", w, x, RTE_MAX(x * BUCKET_US / 1e6, 2.0));
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, 0), 0);
	drain();
}

/* Rates the engine cannot hold exactly are refused. */
static void
test_cap_limits(void **state)
{
	(void)state;
	assert_int_equal(rnic_device_tenant_cap(dev0(), RNIC_MAX_TENANTS, 1000000, 0), -EINVAL);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, RNIC_CAP_MIN_BPS - 1, 0), -EINVAL);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, RNIC_CAP_MAX_BPS + 1, 0), -EINVAL);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, RNIC_CAP_MAX_MPS + 1), -EINVAL);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, 0), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_limits),
		cmocka_unit_test(test_cap_bytes),
		cmocka_unit_test(test_cap_messages),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests(tests, setup, teardown);
}
