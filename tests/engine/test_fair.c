/* SPDX-License-Identifier: BSD-3-Clause
 * Fair service between tenants (doc/engine.md): a tenant of one QP keeps WRITEs queued, alone and beside a
 * tenant of 8 QPs; two tenants of shares 1 and 3 keep WRITEs queued side by side. The engine's counters of
 * each (rnic_device_tenant_stats) measure what each sent. The tenants are the contexts' numbers, as rnicd
 * sets them.
 * FAIR_SUITE=caps: tenants' caps (doc/congestion.md, "Tenants' caps"; issue 21): two tenants keep WRITEs
 * queued on two QPs each, one with a cap set by rnic_device_tenant_cap (bits a second, then messages a
 * second), the other without. What each sent (its payload bytes and request packets, which the cap's code
 * does not count) per second of the clock and per second the engine's lcore ran (the machine is loaded: the
 * time it takes the lcore away, the buckets lose).
 * Run as: test_fair <EAL args with a worker lcore: -l 0,1>
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
#include "rnic_pacer.h"
#include "rnic_priv.h"
#include "test_env.h"

#define HEAVY_QPS 8
#define DEPTH 64
#define WINDOWS 4			/* of each kind, WINDOW_S each */
#define WINDOW_S 0.25
#define MSG_BYTES 16384
#define BUF_BYTES (1u << 20)

static int g_argc;
static char **g_argv;

#define SHARED_QPS 2			/* QPs of each tenant of the shares test */
#define SHARED_DEPTH 256		/* and WRITEs each of them keeps queued: milliseconds of the engine's work,
					 * so that a tenant's queues do not run dry while this thread waits for a CPU */
#define SHARE_WINDOW_S 0.6
#define SHARE_TRIES 3			/* windows of a setting, until one holds the ratio */
#define CAPPED 5			/* the caps tests' tenants */
#define UNCAPPED 6

static struct test_side heavy, light, peer;	/* two tenants of device 0, and their peer on device 1 */
static struct test_side one, three;	/* the tenants of the shares test (3 and 4) */
static struct test_side capped, uncapped;	/* the tenants of the caps tests (5 and 6) */
#define CAP_QPS 2			/* QPs of each tenant of a caps test */
#define CAP_MANY_QPS 512		/* ... and of the capped tenant of the many QPs' */
static struct rnic_qp *qps[2 * (HEAVY_QPS + 1 + 2 * SHARED_QPS) + 2 * 3 * 2 * CAP_QPS +
			   2 * (CAP_MANY_QPS + CAP_QPS)];	/* theirs and the peer's */
static unsigned int nb_qps;
static uint32_t msg_bytes = MSG_BYTES;	/* the WRITEs' length */

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
	open_side(&heavy, list[0], 1);
	open_side(&light, list[0], 2);
	open_side(&peer, list[1], 0);
	open_side(&one, list[0], 3);
	open_side(&three, list[0], 4);
	open_side(&capped, list[0], CAPPED);
	open_side(&uncapped, list[0], UNCAPPED);
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
	test_side_close(&heavy);
	test_side_close(&light);
	test_side_close(&peer);
	test_side_close(&one);
	test_side_close(&three);
	test_side_close(&capped);
	test_side_close(&uncapped);
	return rnic_engine_fini();
}

/* An RC QP of s of depth send WRs connected to a new QP of the peer. */
static struct rnic_qp *
connected_qp_depth(struct test_side *s, uint32_t depth)
{
	struct rnic_qp_init_attr ia = {
		.qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0, .timeout = 14, .retry_cnt = 7 };
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

static struct rnic_qp *
connected_qp(struct test_side *s)
{
	return connected_qp_depth(s, DEPTH);
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

/* Keep every QP's queue full: each completion is replaced by a new WRITE on its QP. The WRITEs that
 * completed. */
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

/* Seconds, by the EAL's timer. */
static double
now_s(void)
{
	return (double)rte_get_timer_cycles() / (double)rte_get_timer_hz();
}

/* Let every WRITE of the heavy tenant complete (none replaced), so that a window alone starts alone; the
 * light tenant's queue kept full meanwhile. */
static void
drain_heavy(void)
{
	struct rnic_wc wc[64];
	int outstanding = HEAVY_QPS * DEPTH, n;

	for (double t0 = now_s(); outstanding > 0 && now_s() - t0 < 10;) {
		if ((n = rnic_poll_cq(heavy.cq, 64, wc)) > 0)
			outstanding -= n;
		refill(&light);
	}
	assert_int_equal(outstanding, 0);
}

/* The light tenant's PSNs over one window, the heavy tenant's WRITEs kept queued (busy) or none. */
static double
light_window(struct rnic_device *dev, int busy, struct rnic_tenant_stats *heavy_out)
{
	struct rnic_tenant_stats l0, l1, h0;
	double t0 = now_s();

	rnic_device_tenant_stats(dev, 2, &l0);
	rnic_device_tenant_stats(dev, 1, &h0);
	while (now_s() - t0 < WINDOW_S) {
		if (busy)
			refill(&heavy);
		refill(&light);
	}
	rnic_device_tenant_stats(dev, 2, &l1);
	rnic_device_tenant_stats(dev, 1, heavy_out);
	heavy_out->psns -= h0.psns;
	heavy_out->deferred -= h0.deferred;
	return (double)(l1.psns - l0.psns);
}

/*
 * The tenant of one QP alone, then beside a tenant of 8 QPs that keeps all of them full, in alternating
 * windows (the same load of the machine for both). Served by QP, it kept 0.17-0.27 of its rate alone (its
 * QP waits for ACKs behind the other tenant's frames); with the tenants' shares, 0.40-0.73 (10 runs on the
 * shared 2-core machine), and 0.33 once on a machine busier still: it must keep more than 0.3, which the
 * engine without the shares never reached. (This test's own thread refills both tenants' queues, 9 QPs in
 * the busy windows against 1, and the receive path serves frames in arrival order: doc/engine.md.)
 */
static void
test_tenants_share_the_requester(void **state)
{
	struct rnic_device *dev = rnic_ctx_dev(heavy.ctx);
	struct rnic_qp *hq[HEAVY_QPS];
	double alone = 0, beside = 0, heavy_psns = 0;
	uint64_t deferred = 0;

	(void)state;
	for (int i = 0; i < HEAVY_QPS; i++)
		hq[i] = connected_qp(&heavy);
	post_writes(connected_qp(&light), &light, DEPTH);
	for (int w = 0; w < 2 * WINDOWS; w++) {
		struct rnic_tenant_stats h;
		int busy = w & 1;

		if (busy)	/* the heavy tenant's queues, full again */
			for (int i = 0; i < HEAVY_QPS; i++)
				post_writes(hq[i], &heavy, DEPTH);
		if (busy) {
			beside += light_window(dev, 1, &h);
			heavy_psns += (double)h.psns;
			deferred += h.deferred;
			drain_heavy();
		} else {
			alone += light_window(dev, 0, &h);
		}
	}
	print_message("tenant of 1 QP: %.0f PSNs alone, %.0f beside a tenant of %d QPs (ratio %.2f), which sent "
		      "%.0f PSNs and had %llu visits deferred\n", alone, beside, HEAVY_QPS, beside / alone, heavy_psns,
		      (unsigned long long)deferred);
	assert_true(alone > 0 && heavy_psns > 0);
	assert_true(beside > 0.3 * alone);
	assert_true(deferred > 0);
}

/* The packets the shares test's QP i (0 .. 2 x SHARED_QPS - 1: tenant 3's even, 4's odd) has sent. */
static uint64_t
shared_qp_sent(unsigned int i)
{
	struct rnic_qp_counters c;

	assert_int_equal(rnic_query_qp_counters(qps[2 * (HEAVY_QPS + 1) + 2 * i], &c), 0);
	return c.packets_sent;
}

/*
 * The bytes tenants 3 and 4 send over SHARE_WINDOW_S, both keeping every QP's queue full, and of what each
 * tenant's QPs sent, the least over the most (the worse of the two tenants): a tenant's turns go round its
 * QPs.
 */
static void
share_window(struct rnic_device *dev, double *bytes3, double *bytes4, double *qp_balance)
{
	struct rnic_tenant_stats a0, a1, b0, b1;
	uint64_t sent[2 * SHARED_QPS];
	double t0, lo[2] = { 0, 0 }, hi[2] = { 0, 0 };

	for (t0 = now_s(); now_s() - t0 < 0.1;) {	/* the new shares taken, the windows filled */
		refill(&one);
		refill(&three);
	}
	rnic_device_tenant_stats(dev, 3, &a0);
	rnic_device_tenant_stats(dev, 4, &b0);
	for (unsigned int i = 0; i < RTE_DIM(sent); i++)
		sent[i] = shared_qp_sent(i);
	for (t0 = now_s(); now_s() - t0 < SHARE_WINDOW_S;) {
		refill(&one);
		refill(&three);
	}
	rnic_device_tenant_stats(dev, 3, &a1);
	rnic_device_tenant_stats(dev, 4, &b1);
	for (unsigned int i = 0; i < RTE_DIM(sent); i++) {
		double n = (double)(shared_qp_sent(i) - sent[i]);

		lo[i & 1] = i < 2 ? n : RTE_MIN(lo[i & 1], n);
		hi[i & 1] = RTE_MAX(hi[i & 1], n);
	}
	*bytes3 = (double)(a1.bytes - a0.bytes);
	*bytes4 = (double)(b1.bytes - b0.bytes);
	*qp_balance = RTE_MIN(hi[0] > 0 ? lo[0] / hi[0] : 0, hi[1] > 0 ? lo[1] / hi[1] : 0);
}

/* Loss timer expiries of the shares test's QPs (none is lost on the loopback pair). */
static uint64_t
share_timeouts(void)
{
	uint64_t n = 0;

	for (unsigned int i = 2 * (HEAVY_QPS + 1); i < nb_qps; i++) {
		struct rnic_qp_counters c;

		assert_int_equal(rnic_query_qp_counters(qps[i], &c), 0);
		n += c.timeouts;
	}
	return n;
}

/*
 * Two tenants of 2 QPs each keep WRITEs of 16 KB queued; with shares 1 and 3 (rnic_device_tenant_share)
 * they must send 1:3 of the bytes, then the other way round with the shares swapped (so that the order of
 * their QPs in the scheduler is not what makes it), and 1:1 with 64 KB WRITEs. A ratio of the two tenants'
 * bytes over the same window: the load of the machine slows both alike. But this thread refills both
 * tenants' queues, and a tenant whose queues ran dry while it waited for a CPU leaves the other what it
 * does not take (the shares give way to work): each setting has up to SHARE_TRIES windows, and passes at
 * once within 10 %; the heavier tenant must get at least 2/3 of its share in the last (of 5 runs at load
 * average 6, one kept 3:1 at 2.2-2.5:1 for three windows; the others 3.00 +- 0.06 in the first). Without
 * shares the tenants get 1:1. rnicd-shares, whose clients sleep between their polls, holds 10 %. No loss
 * timer may expire: with 64 KB WRITEs at MTU 1024 each QP asks for an ACK every 64 packets, and a
 * tenant's window of 64 PSNs over 2 QPs filled with packets none of which asked for one waited for the
 * timer (each window then had tens of timeouts, through rnicd) or an early probe (in process: a tenth of
 * the bytes, which the test compares with the windows of 16 KB WRITEs). A tenant's turns go round its QPs:
 * in each window its QPs sent within half of each other (its first QP took every turn, 0.4, and its other
 * waited for its loss timer).
 */
static void
test_tenant_shares(void **state)
{
	struct rnic_device *dev = rnic_ctx_dev(one.ctx);
	static const uint32_t shares[][3] = { { 1, 3, 16384 }, { 3, 1, 16384 }, { 1, 1, 65536 } };
	uint64_t timeouts, probes = test_counter(one.ctx, "probes");
	double b3, b4, balance, total[RTE_DIM(shares)];

	(void)state;
	assert_int_equal(rnic_device_tenant_share(dev, 3, 0), -EINVAL);
	assert_int_equal(rnic_device_tenant_share(dev, 3, RNIC_SHARE_MAX + 1), -EINVAL);
	assert_int_equal(rnic_device_tenant_share(dev, RNIC_MAX_TENANTS, 1), -EINVAL);
	for (int i = 0; i < SHARED_QPS; i++) {
		post_writes(connected_qp_depth(&one, SHARED_DEPTH), &one, SHARED_DEPTH);
		post_writes(connected_qp_depth(&three, SHARED_DEPTH), &three, SHARED_DEPTH);
	}
	for (unsigned int i = 0; i < RTE_DIM(shares); i++) {
		double want = (double)shares[i][1] / shares[i][0], got = 0;
		/* got / want, as the heavier tenant's part of its share */
		double lo = want == 1 ? 0.9 : 2.0 / 3, k = 0;

		msg_bytes = shares[i][2];
		assert_int_equal(rnic_device_tenant_share(dev, 3, shares[i][0]), 0);
		assert_int_equal(rnic_device_tenant_share(dev, 4, shares[i][1]), 0);
		for (int w = 0; w < SHARE_TRIES && !(k > 0.9 && k < 1.1); w++) {
			share_window(dev, &b3, &b4, &balance);
			got = b4 / b3;
			k = want >= 1 ? got / want : want / got;
			print_message("shares %u:%u, WRITEs of %u KB: %.1f and %.1f MB, ratio %.3f (want %.3f); a "
				      "tenant's QPs %.2f of its busiest\n", shares[i][0], shares[i][1],
				      shares[i][2] >> 10, b3 / 1e6, b4 / 1e6, got, want, balance);
			assert_true(b3 > 0 && b4 > 0);
			assert_true(balance > 0.5);
		}
		assert_true(k > lo && k < 1.1);
		total[i] = b3 + b4;
	}
	/* Tenants of 64 KB WRITEs stalled by their window sent a tenth of what those of 16 KB did (64 and 840
	 * MB); sending, at least as much (0.6-1.2). */
	assert_true(total[2] > 0.25 * total[0]);
	timeouts = share_timeouts();
	probes = test_counter(one.ctx, "probes") - probes;
	print_message("loss timer expiries: %llu, early probes: %llu\n", (unsigned long long)timeouts,
		      (unsigned long long)probes);
	assert_int_equal(timeouts, 0);
	/* Nothing is lost: a probe goes only when the engine's lcore was away longer than the probe's wait
	 * while an ACK was due (each then probes for the QPs waiting). Packets that asked for no ACK
	 * drew 600-700 a run, a tenant's QP that got no turn for 67 ms its loss timer. */
	assert_true(probes <= 40);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Caps (FAIR_SUITE=caps)                                                                                   */

#define CAP_WINDOWS 8
#define CAP_WINDOW_S 0.1
#define CAP_WARMUP_S 0.2		/* a new cap taken, the queues full, before the windows */
#define FRAME_HDR 58			/* a WRITE packet's bytes besides its payload, at least: Ethernet, IPv4,
					 * UDP, BTH, ICRC (the first of a message has a RETH more) */
#define BUCKET_US 64			/* what a cap's bucket holds (RNIC_PACER_BURST_US) */

static struct rnic_device *
dev0(void)
{
	return rnic_ctx_dev(capped.ctx);
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

/* Two tenants' WRITEs of bytes each, every queue full: the capped tenant's qps QPs of depth WRITEs, the
 * other's CAP_QPS of DEPTH. The capped tenant's first QP. */
static struct rnic_qp *
start_tenants(uint32_t bytes, int qps_capped, uint32_t depth)
{
	struct rnic_qp *first = NULL;

	msg_bytes = bytes;
	for (int i = 0; i < qps_capped; i++) {
		struct rnic_qp *qp = connected_qp_depth(&capped, depth);

		first = first != NULL ? first : qp;
		post_writes(qp, &capped, depth);
	}
	for (int i = 0; i < CAP_QPS; i++)
		post_writes(connected_qp_depth(&uncapped, DEPTH), &uncapped, DEPTH);
	return first;
}

/* Let every WRITE complete (none replaced; the capped tenant had n queued): the QPs stay for teardown. */
static void
drain(int n)
{
	int left = n + CAP_QPS * DEPTH;
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
measure(struct window w[CAP_WINDOWS], int msgs)
{
	keep_busy(CAP_WARMUP_S);
	for (int i = 0; i < CAP_WINDOWS; i++) {
		struct rnic_tenant_stats c0, c1, u0, u1;
		uint64_t t0 = rte_get_timer_cycles(), ran0 = test_engine_cpu_ns(0), t1, ran1;
		double wall_s, cpu_s;

		rnic_device_tenant_stats(dev0(), CAPPED, &c0);
		rnic_device_tenant_stats(dev0(), UNCAPPED, &u0);
		keep_busy(CAP_WINDOW_S);
		rnic_device_tenant_stats(dev0(), CAPPED, &c1);
		rnic_device_tenant_stats(dev0(), UNCAPPED, &u1);
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
check_cap(const char *what, const struct window w[CAP_WINDOWS], double x, double bucket)
{
	double best = 0, worst_wall = 0, free_cpu[CAP_WINDOWS];

	for (int i = 0; i < CAP_WINDOWS; i++) {
		print_message("%s cap %.0f: capped %.0f/s by the clock, %.0f per second of the lcore; the other "
			      "%.0f per second of the lcore\n", what, x, w[i].wall[0], w[i].cpu[0], w[i].cpu[1]);
		best = RTE_MAX(best, w[i].cpu[0]);
		worst_wall = RTE_MAX(worst_wall, w[i].wall[0]);
		free_cpu[i] = w[i].cpu[1];
	}
	for (int i = 1; i < CAP_WINDOWS; i++)	/* the median of the other tenant's */
		for (int j = i; j > 0 && free_cpu[j - 1] > free_cpu[j]; j--) {
			double t = free_cpu[j];

			free_cpu[j] = free_cpu[j - 1];
			free_cpu[j - 1] = t;
		}
	print_message("%s cap %.0f: the highest window by the clock %.3f x, the best per second of the lcore "
		      "%.3f x; the other tenant's median %.1f x\n", what, x, worst_wall / x, best / x,
		      free_cpu[CAP_WINDOWS / 2] / x);
	assert_true(worst_wall <= 1.05 * x + 2 * bucket / CAP_WINDOW_S);
	assert_true(best >= 0.9 * x);
	assert_true(free_cpu[CAP_WINDOWS / 2] >= 2 * x);
}

/*
 * A cap of 200 Mbit/s on the wire, WRITEs of 16 KB (16 frames each); then the cap lifted: the tenant's
 * QPs that waited for its tokens go back, and it takes its share of the engine again.
 */
static void
test_cap_bytes(void **state)
{
	const double bps = 200e6, x = bps / 8;
	struct rnic_tenant_stats s0, s1;
	struct window w[CAP_WINDOWS], after[CAP_WINDOWS];
	double lifted = 0;

	(void)state;
	start_tenants(16384, CAP_QPS, DEPTH);
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
	for (int i = 0; i < CAP_WINDOWS; i++)
		lifted = RTE_MAX(lifted, after[i].cpu[0]);
	print_message("bytes cap lifted: the tenant's best %.1f x per second of the lcore\n", lifted / x);
	assert_true(lifted > 2 * x);
	drain(CAP_QPS * DEPTH);
}

/* A cap of 20 000 messages a second, WRITEs of 256 bytes (a packet each); no cap of bytes. */
static void
test_cap_messages(void **state)
{
	const double x = 20000;
	struct rnic_tenant_stats s0, s1;
	struct window w[CAP_WINDOWS];

	(void)state;
	start_tenants(256, CAP_QPS, DEPTH);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, (uint64_t)x), 0);
	rnic_device_tenant_stats(dev0(), CAPPED, &s0);
	measure(w, 1);
	rnic_device_tenant_stats(dev0(), CAPPED, &s1);
	print_message("message cap: %llu messages counted, %llu visits held\n",
		      (unsigned long long)(s1.cap_messages - s0.cap_messages),
		      (unsigned long long)(s1.cap_waits - s0.cap_waits));
	check_cap("messages", w, x, RTE_MAX(x * BUCKET_US / 1e6, 2.0));
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, 0), 0);
	drain(CAP_QPS * DEPTH);
}

/*
 * A tenant of CAP_MANY_QPS QPs, each with 2 WRITEs of 256 bytes queued, capped at 20 000 messages a second:
 * the cap holds as with 2 QPs, and its waiting QPs are handed back one at a time: the visits the cap stops
 * stay a few per message, as with 2 QPs (2.8-3.0: the wake's, and those of the QP's doorbell and ACK, which
 * find the tokens spent); were every waiting QP woken when tokens come, each would find them spent by the
 * first: hundreds of visits a message.
 */
static void
test_cap_many_qps(void **state)
{
	const double x = 20000;
	struct rnic_tenant_stats s0, s1;
	struct window w[CAP_WINDOWS];
	double per_msg;

	(void)state;
	start_tenants(256, CAP_MANY_QPS, 2);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, (uint64_t)x), 0);
	keep_busy(CAP_WARMUP_S);	/* each QP's first wait: once */
	rnic_device_tenant_stats(dev0(), CAPPED, &s0);
	measure(w, 1);
	rnic_device_tenant_stats(dev0(), CAPPED, &s1);
	per_msg = (double)(s1.cap_waits - s0.cap_waits) / (double)(s1.cap_messages - s0.cap_messages);
	print_message("%d QPs: %llu messages counted, %.2f visits held a message\n", CAP_MANY_QPS,
		      (unsigned long long)(s1.cap_messages - s0.cap_messages), per_msg);
	check_cap("messages of 512 QPs", w, x, RTE_MAX(x * BUCKET_US / 1e6, 2.0));
	assert_true(per_msg < 8);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, 0), 0);
	drain(CAP_MANY_QPS * 2);
}

/*
 * The lowest rate wins: a tenant capped at 200 Mbit/s, one of its 2 QPs with a rate_limit of 50 Mbit/s. That
 * QP's pacer lets no more than its limit go (5 % and two buckets by the clock), the tenant holds its cap,
 * its other QP taking the rest of it.
 */
static void
test_cap_and_rate_limit(void **state)
{
	const double bps = 200e6, x = bps / 8, limit = 50e6 / 8;
	struct rnic_qp_attr attr = { .qp_state = RNIC_QPS_RTS, .rate_limit = 50000 };
	struct window w[CAP_WINDOWS];
	const uint64_t *released;
	double t0, qp_rate;
	uint64_t b0;
	struct rnic_qp *qp;

	(void)state;
	qp = start_tenants(16384, CAP_QPS, DEPTH);
	assert_int_equal(rnic_modify_qp(qp, &attr, RNIC_QP_STATE | RNIC_QP_RATE_LIMIT), 0);
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, (uint64_t)bps, 0), 0);
	released = &rnic_qp_priv(qp)->cc.pacer.released;
	keep_busy(CAP_WARMUP_S);
	b0 = __atomic_load_n(released, __ATOMIC_RELAXED);
	t0 = now_s();
	measure(w, 0);
	qp_rate = (double)(__atomic_load_n(released, __ATOMIC_RELAXED) - b0) / (now_s() - t0);
	print_message("rate_limit 50 Mbit/s in a tenant capped at 200: the QP %.3f of its limit\n", qp_rate / limit);
	assert_true(qp_rate <= 1.05 * limit + 2 * 8448 / (now_s() - t0));
	check_cap("bytes, a QP limited below", w, x, RTE_MAX(x * BUCKET_US / 1e6, 8448.0));
	assert_int_equal(rnic_device_tenant_cap(dev0(), CAPPED, 0, 0), 0);
	drain(CAP_QPS * DEPTH);
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
		cmocka_unit_test(test_tenants_share_the_requester),
		cmocka_unit_test(test_tenant_shares),
	};
	const struct CMUnitTest caps[] = {
		cmocka_unit_test(test_cap_limits),
		cmocka_unit_test(test_cap_bytes),
		cmocka_unit_test(test_cap_messages),
		cmocka_unit_test(test_cap_many_qps),
		cmocka_unit_test(test_cap_and_rate_limit),
	};
	const char *suite = getenv("FAIR_SUITE");

	g_argc = argc;
	g_argv = argv;
	if (suite != NULL && strcmp(suite, "caps") == 0)
		return cmocka_run_group_tests_name("caps", caps, setup, teardown);
	return cmocka_run_group_tests_name("fair", tests, setup, teardown);
}
