/* SPDX-License-Identifier: BSD-3-Clause
 * Congestion control end to end on the loopback pair (doc/congestion.md): the traffic class's ECN bits on
 * the wire, the notification point answering CE-marked requests and responses with CNPs (at most one per
 * np_min_time_between_cnps per QP and side), the reaction point cutting the sender's rate; a QP's
 * rate_limit held by its pacer (100 Mbit/s to 1 Gbit/s); and N:1 incast through a congested queue
 * (CC_SUITE=incast, INCAST_SENDERS=N). The fault layer (--fault ecn=P) marks CE as a switch would; the test's arguments give
 * it one (ecn=0) to update.
 * Run as: test_cc <EAL args with a worker lcore> -- --fault ecn=0 [--cc ...]
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_cycles.h>

#include "rnic.h"
#include "rnic_fault.h"
#include "rnic_pacer.h"
#include "test_env.h"

#define DEPTH 16
#define MSG_BYTES 65536
#define BUF_BYTES (1u << 20)
#define CNP_GAP_US 1000		/* the test's np_min_time_between_cnps (meson.build) */

static int g_argc;
static char **g_argv;
static struct test_side a, b;	/* device 0 sends, device 1 receives */

static int
setup(void **state)
{
	(void)state;
	return test_sides_start(g_argc, g_argv, &a, &b, BUF_BYTES, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
}

static int
teardown(void **state)
{
	(void)state;
	return test_sides_stop(&a, &b);
}

static double
now_s(void)
{
	return (double)rte_get_timer_cycles() / (double)rte_get_timer_hz();
}

static void
set_fault(struct test_side *s, const char *text)
{
	struct rnic_fault_spec spec;

	assert_int_equal(rnic_fault_parse(text, &spec), 0);
	assert_int_equal(rnic_fault_update(rnic_ctx_dev(s->ctx)->port_id, &spec), 0);
}

static uint64_t
counter(struct test_side *s, const char *name)
{
	uint64_t v = test_counter(s->ctx, name);

	assert_true(v != UINT64_MAX);	/* the device has the counter */
	return v;
}

/* An RC QP of a connected to one of b, both with this traffic class in their address vectors (so the
 * responses carry it too). */
static void
connected_pair(uint8_t tclass, struct rnic_qp **qa, struct rnic_qp **qb)
{
	struct rnic_qp_init_attr ia = {
		.qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	const struct test_path path = { .mtu = RNIC_MTU_4096, .psn = 0, .timeout = 14, .retry_cnt = 7,
					.traffic_class = tclass };

	ia.send_cq = ia.recv_cq = a.cq;
	*qa = rnic_create_qp(a.pd, &ia);
	ia.send_cq = ia.recv_cq = b.cq;
	*qb = rnic_create_qp(b.pd, &ia);
	assert_non_null(*qa);
	assert_non_null(*qb);
	assert_int_equal(test_connect(*qa, (*qb)->qp_num, &b.gid, &path), 0);
	assert_int_equal(test_connect(*qb, (*qa)->qp_num, &a.gid, &path), 0);
}

/* n WRITEs of 64 KB on qp, their wr_id's high half tag. */
static void
post_tagged(struct rnic_qp *qp, uint32_t tag, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct rnic_sge sge = { (uintptr_t)a.buf, MSG_BYTES, a.mr->lkey };
		struct rnic_send_wr wr = { .wr_id = (uint64_t)tag << 32 | i, .sg_list = &sge, .num_sge = 1,
					   .opcode = RNIC_WR_RDMA_WRITE,
					   .send_flags = RNIC_SEND_SIGNALED,
					   .wr.rdma = { (uintptr_t)b.buf, b.mr->rkey } };
		struct rnic_send_wr *bad;

		assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
	}
}

static void
post_writes(struct rnic_qp *qp, uint32_t n)
{
	post_tagged(qp, 0, n);
}

/* n WRITEs of 64 KB on qp, DEPTH at a time, each completing successfully; returns the seconds taken. */
static double
run_writes(struct rnic_qp *qp, uint32_t n)
{
	uint32_t posted = RTE_MIN(n, (uint32_t)DEPTH), done = 0;
	double t0 = now_s();
	struct rnic_wc wc[DEPTH];

	post_writes(qp, posted);
	while (done < n) {
		int got = rnic_poll_cq(a.cq, DEPTH, wc);

		for (int i = 0; i < got; i++)
			assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		done += (uint32_t)got;
		if (posted < n && got > 0) {
			uint32_t more = RTE_MIN(n - posted, (uint32_t)got);

			post_writes(qp, more);
			posted += more;
		}
		if (now_s() - t0 > 30)
			fail_msg("%u of %u WRITEs done in 30 s", done, n);
	}
	return now_s() - t0;
}

static void
destroy_pair(struct rnic_qp *qa, struct rnic_qp *qb)
{
	assert_int_equal(rnic_destroy_qp(qa), 0);
	assert_int_equal(rnic_destroy_qp(qb), 0);
}

/* Counters before and after a run. */
struct snapshot {
	uint64_t marked_b, cnp_sent_b, cnp_handled_a, cuts_a, rx_b, marked_a, cnp_sent_a, cnp_handled_b;
};

static void
snap(struct snapshot *s)
{
	s->marked_b = counter(&b, "ecn_marked");
	s->cnp_sent_b = counter(&b, "cnp_sent");
	s->cnp_handled_a = counter(&a, "cnp_handled");
	s->cuts_a = counter(&a, "rate_cuts");
	s->rx_b = counter(&b, "rx_packets");
	s->marked_a = counter(&a, "ecn_marked");
	s->cnp_sent_a = counter(&a, "cnp_sent");
	s->cnp_handled_b = counter(&b, "cnp_handled");
}

static int
np_on(void)
{
	return rnic_ctx_dev(a.ctx)->cc.np_enable;
}

/* ECT(0) requests, every one marked CE on the way to device 1: each counted there, and CNPs back to the
 * sender, no more than one per np_min_time_between_cnps, every one acted on (a cut of its rate). With
 * --cc none, marked frames are counted and nothing else happens. */
static void
test_marked_requests(void **state)
{
	struct rnic_qp *qa, *qb;
	struct snapshot s0, s1;
	double secs;

	(void)state;
	connected_pair(26 << 2 | RNIC_ECN_ECT0, &qa, &qb);
	set_fault(&b, "ecn=1");
	snap(&s0);
	secs = run_writes(qa, 64);
	set_fault(&b, "ecn=0");
	snap(&s1);
	print_message("%.3f s: %llu frames marked, %llu CNPs sent, %llu handled, %llu cuts\n", secs,
		      (unsigned long long)(s1.marked_b - s0.marked_b), (unsigned long long)(s1.cnp_sent_b - s0.cnp_sent_b),
		      (unsigned long long)(s1.cnp_handled_a - s0.cnp_handled_a), (unsigned long long)(s1.cuts_a - s0.cuts_a));
	/* Every frame device 1 received was a request, and marked. */
	assert_true(s1.marked_b - s0.marked_b >= 64 * (MSG_BYTES / 4096));
	assert_int_equal(s1.marked_b - s0.marked_b, s1.rx_b - s0.rx_b);
	assert_int_equal(counter(&b, "np_ecn_marked_roce_packets"), counter(&b, "ecn_marked"));
	if (!np_on()) {
		assert_int_equal(s1.cnp_sent_b, s0.cnp_sent_b);
		destroy_pair(qa, qb);
		return;
	}
	assert_true(s1.cnp_sent_b - s0.cnp_sent_b >= 1);
	assert_true((double)(s1.cnp_sent_b - s0.cnp_sent_b) <= secs * 1e6 / CNP_GAP_US + 2);
	assert_int_equal(counter(&b, "np_cnp_sent"), counter(&b, "cnp_sent"));
	/* The CNPs' link is not marked nor lossy: each reaches the sender's QP and is acted on. */
	assert_int_equal(s1.cnp_handled_a - s0.cnp_handled_a, s1.cnp_sent_b - s0.cnp_sent_b);
	assert_int_equal(counter(&a, "rp_cnp_handled"), counter(&a, "cnp_handled"));
	assert_true(s1.cuts_a - s0.cuts_a >= 1);
	destroy_pair(qa, qb);
}

/* Responses (ACKs) marked on the way back: the completer's side is the notification point, the responder's
 * QP the reaction point. */
static void
test_marked_responses(void **state)
{
	struct rnic_qp *qa, *qb;
	struct snapshot s0, s1;

	(void)state;
	connected_pair(26 << 2 | RNIC_ECN_ECT0, &qa, &qb);
	set_fault(&a, "ecn=1");
	snap(&s0);
	run_writes(qa, 32);
	set_fault(&a, "ecn=0");
	snap(&s1);
	assert_true(s1.marked_a - s0.marked_a >= 1);
	if (!np_on()) {
		assert_int_equal(s1.cnp_sent_a, s0.cnp_sent_a);
		destroy_pair(qa, qb);
		return;
	}
	assert_true(s1.cnp_sent_a - s0.cnp_sent_a >= 1);
	assert_int_equal(s1.cnp_handled_b - s0.cnp_handled_b, s1.cnp_sent_a - s0.cnp_sent_a);
	destroy_pair(qa, qb);
}

/* Both devices' DCQCN switched to rp, np (rnic_set_cc). */
static void
switch_cc(int rp, int np)
{
	assert_int_equal(rnic_set_cc(a.ctx, rp, np), 0);
	assert_int_equal(rnic_set_cc(b.ctx, rp, np), 0);
}

/* DCQCN switched while the engine runs (rnic_set_cc): both points off, marked requests get no CNP; the
 * notification point on and the reaction point off, the CNPs come and are ignored; both on, they cut the
 * sender's rate. Bad arguments change nothing. The devices' flags are as they were at the end. */
static void
test_switched(void **state)
{
	static const int setting[][2] = { { 0, 0 }, { 0, 1 }, { 1, 1 } };	/* rp, np */
	const struct rnic_cc_params was = rnic_ctx_dev(a.ctx)->cc;

	(void)state;
	assert_int_equal(rnic_set_cc(NULL, 1, 1), -EINVAL);
	assert_int_equal(rnic_set_cc(a.ctx, 2, 1), -EINVAL);
	assert_int_equal(rnic_set_cc(a.ctx, 1, -1), -EINVAL);
	assert_int_equal(rnic_ctx_dev(a.ctx)->cc.rp_enable, was.rp_enable);
	assert_int_equal(rnic_ctx_dev(a.ctx)->cc.np_enable, was.np_enable);
	for (unsigned int i = 0; i < RTE_DIM(setting); i++) {
		uint64_t ignored = counter(&a, "cnp_ignored");
		struct rnic_qp *qa, *qb;
		struct snapshot s0, s1;

		switch_cc(setting[i][0], setting[i][1]);
		connected_pair(26 << 2 | RNIC_ECN_ECT0, &qa, &qb);
		set_fault(&b, "ecn=1");
		snap(&s0);
		run_writes(qa, 16);
		set_fault(&b, "ecn=0");
		snap(&s1);
		print_message("rp %d np %d: %llu marked, %llu CNPs sent, %llu handled, %llu ignored, %llu cuts\n",
			      setting[i][0], setting[i][1], (unsigned long long)(s1.marked_b - s0.marked_b),
			      (unsigned long long)(s1.cnp_sent_b - s0.cnp_sent_b),
			      (unsigned long long)(s1.cnp_handled_a - s0.cnp_handled_a),
			      (unsigned long long)(counter(&a, "cnp_ignored") - ignored),
			      (unsigned long long)(s1.cuts_a - s0.cuts_a));
		assert_true(s1.marked_b - s0.marked_b >= 16 * (MSG_BYTES / 4096));
		if (setting[i][1] == 0) {
			assert_int_equal(s1.cnp_sent_b, s0.cnp_sent_b);
		} else if (setting[i][0] == 0) {
			assert_true(s1.cnp_sent_b - s0.cnp_sent_b >= 1);
			assert_int_equal(s1.cnp_handled_a, s0.cnp_handled_a);
			assert_int_equal(counter(&a, "cnp_ignored") - ignored, s1.cnp_sent_b - s0.cnp_sent_b);
			assert_int_equal(s1.cuts_a, s0.cuts_a);
		} else {
			assert_true(s1.cnp_sent_b - s0.cnp_sent_b >= 1);
			assert_int_equal(s1.cnp_handled_a - s0.cnp_handled_a, s1.cnp_sent_b - s0.cnp_sent_b);
			assert_true(s1.cuts_a - s0.cuts_a >= 1);
		}
		destroy_pair(qa, qb);
	}
	switch_cc((int)was.rp_enable, (int)was.np_enable);
}

/* Not ECN-capable (ECN bits 00): a switch does not mark it, nothing answers. An address vector's CE is not
 * sent as CE (only the network sets it): no frame arrives marked. */
static void
test_not_ect_and_no_fake_ce(void **state)
{
	static const uint8_t tclass[] = { 26 << 2 | RNIC_ECN_NOT_ECT, 26 << 2 | RNIC_ECN_CE };

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(tclass); i++) {
		struct rnic_qp *qa, *qb;
		struct snapshot s0, s1;

		connected_pair(tclass[i], &qa, &qb);
		if (i == 0)
			set_fault(&b, "ecn=1");
		snap(&s0);
		run_writes(qa, 16);
		set_fault(&b, "ecn=0");
		snap(&s1);
		assert_int_equal(s1.marked_b, s0.marked_b);
		assert_int_equal(s1.cnp_sent_b, s0.cnp_sent_b);
		destroy_pair(qa, qb);
	}
}

/* Keep qp's queue full for secs seconds: each completion replaced by a new WRITE. */
static void
keep_busy(struct rnic_qp *qp, double secs)
{
	struct rnic_wc wc[DEPTH];

	for (double t0 = now_s(); now_s() - t0 < secs;) {
		int got = rnic_poll_cq(a.cq, DEPTH, wc);

		for (int i = 0; i < got; i++)
			assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		if (got > 0)
			post_writes(qp, (uint32_t)got);
	}
}

/* Let the n WRITEs outstanding on a's CQ complete. */
static void
drain(uint32_t n)
{
	struct rnic_wc wc[DEPTH];

	for (double t0 = now_s(); n > 0;) {
		int got = rnic_poll_cq(a.cq, (int)RTE_MIN(n, (uint32_t)DEPTH), wc);

		for (int i = 0; i < got; i++)
			assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		n -= (uint32_t)got;
		if (now_s() - t0 > 30)
			fail_msg("%u WRITEs not done in 30 s", n);
	}
}

static int
cmp_double(const void *x, const void *y)
{
	double a_ = *(const double *)x, b_ = *(const double *)y;

	return (a_ > b_) - (a_ < b_);
}

#define RL_WINDOWS 10
#define RL_WINDOW_S 0.1

/*
 * What a's pacer let go (frames, headers included) in RL_WINDOWS windows of RL_WINDOW_S with rate_limit
 * KBPS (modify_qp RTS -> RTS) and its queue kept full of 64 KB WRITEs, sorted: per second of the clock
 * (wall[]) and per second the engine's lcore ran (cpu[]); *burst_bits: its bucket.
 */
static void
released_rates(uint32_t kbps, double wall[RL_WINDOWS], double cpu[RL_WINDOWS], double *burst_bits)
{
	struct rnic_qp_attr attr = { .qp_state = RNIC_QPS_RTS, .rate_limit = kbps };
	const uint64_t *released;
	struct rnic_qp *qa, *qb;

	connected_pair(0, &qa, &qb);
	assert_int_equal(rnic_modify_qp(qa, &attr, RNIC_QP_STATE | RNIC_QP_RATE_LIMIT), 0);
	released = &rnic_qp_priv(qa)->cc.pacer.released;
	post_writes(qa, DEPTH);
	keep_busy(qa, 0.1);
	for (int w = 0; w < RL_WINDOWS; w++) {
		uint64_t b0 = __atomic_load_n(released, __ATOMIC_RELAXED), c0 = rte_get_timer_cycles(), b1, c1;
		uint64_t ran0 = test_engine_cpu_ns(0), ran1;

		keep_busy(qa, RL_WINDOW_S);
		b1 = __atomic_load_n(released, __ATOMIC_RELAXED);
		c1 = rte_get_timer_cycles();
		ran1 = test_engine_cpu_ns(0);
		assert_true(ran1 > ran0);
		wall[w] = (double)(b1 - b0) * 8 / ((double)(c1 - c0) / (double)rte_get_timer_hz());
		cpu[w] = (double)(b1 - b0) * 8 / ((double)(ran1 - ran0) / 1e9);
	}
	*burst_bits = (double)(rnic_qp_priv(qa)->cc.pacer.burst >> RNIC_PACER_SHIFT) * 8;
	drain(DEPTH);
	qsort(wall, RL_WINDOWS, sizeof(wall[0]), cmp_double);
	qsort(cpu, RL_WINDOWS, sizeof(cpu[0]), cmp_double);
	destroy_pair(qa, qb);
}

/*
 * A QP with rate_limit X: no window more than 5 % above X and two buckets, by the clock (a pacer that lets
 * more through is broken whatever the machine does; without the pacer the QP sends at the engine's speed,
 * several Gbit/s); and per second the engine's lcore ran, the best window at least 0.9 X. The bucket holds
 * 64 us at the rate, so each time the machine takes the lcore away for longer the pacer loses that time:
 * by the clock a loaded 2-core machine showed 0.6 X in every window at 100 Mbit/s, which says nothing of
 * the pacer. A pacer that earns too little fails either way: the count that dropped fractions of a byte
 * released 0.14 X. And on the clean link, no early probe nor go-back-N.
 */
static void
test_rate_limit(void **state)
{
	static const uint32_t mbps[] = { 100, 300, 1000 };
	double wall[RL_WINDOWS], cpu[RL_WINDOWS], burst_bits;

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(mbps); i++) {
		double x = mbps[i] * 1e6;
		uint64_t probes = counter(&a, "probes"), rtx = counter(&a, "retransmits");

		released_rates(mbps[i] * 1000, wall, cpu, &burst_bits);
		/* Nothing is lost: a paced QP's packets wait for its pacer, not for an ACK, and it must not probe
		 * and go back N. The 16 frames of a 64 KB WRITE take 5.4 ms at 100 Mbit/s and ask for one ACK, at
		 * the last; timed from the first, the probe came after 1 ms (570 a second at 100 and 300 Mbit/s).
		 * The wait now starts at the packet that asks; a few may come from the machine taking the lcore
		 * away for longer than the wait while an ACK is due. */
		probes = counter(&a, "probes") - probes;
		rtx = counter(&a, "retransmits") - rtx;
		print_message("rate_limit %u Mbit/s: %llu early probes, %llu go-back-N\n", mbps[i],
			      (unsigned long long)probes, (unsigned long long)rtx);
		assert_true(probes <= 20);
		print_message("rate_limit %u Mbit/s: released %.1f .. %.1f Mbit/s (median %.1f); per second the "
			      "engine ran %.1f .. %.1f (median %.1f)\n", mbps[i], wall[0] / 1e6,
			      wall[RL_WINDOWS - 1] / 1e6, wall[RL_WINDOWS / 2] / 1e6, cpu[0] / 1e6,
			      cpu[RL_WINDOWS - 1] / 1e6, cpu[RL_WINDOWS / 2] / 1e6);
		assert_true(cpu[RL_WINDOWS - 1] >= 0.9 * x);
		assert_true(wall[RL_WINDOWS - 1] <= 1.05 * x + 2 * burst_bits / RL_WINDOW_S);
	}
}

/* ------------------------------------------------------------------------------------------------------ */
/* Incast                                                                                                   */

#define INCAST_MAX_QPS 16
#define INCAST_WARMUP_S 0.5
#define INCAST_S 2.0
#define INCAST_WALL_S 20

/* The bottleneck the test's arguments give device 1's port: --fault port=1,rate=R,queue=Q,kmax=K,... */
static const struct rnic_fault_spec *
bottleneck(struct rnic_fault_spec *spec)
{
	for (int i = 0; i < g_argc; i++)
		if (strcmp(g_argv[i], "--fault") == 0 && i + 1 < g_argc && strstr(g_argv[i + 1], "rate=") != NULL &&
		    rnic_fault_parse(g_argv[i + 1], spec) == 0)
			return spec;
	fail_msg("no --fault with rate= in the test's arguments");
	return NULL;
}

/* The senders of the incast: INCAST_SENDERS (1 to INCAST_MAX_QPS), 4 without it. */
static int
incast_senders(void)
{
	const char *v = getenv("INCAST_SENDERS");
	int n = v != NULL ? atoi(v) : 4;

	if (n < 1 || n > INCAST_MAX_QPS)
		fail_msg("INCAST_SENDERS=%s: 1 to %d", v, INCAST_MAX_QPS);
	return n;
}

/* The time device 1's link has served (the modelled bottleneck's clock: the engine lcore's time), in s. */
static double
served_s(void)
{
	struct rnic_fault_counts f;

	rnic_fault_get_counts(rnic_ctx_dev(b.ctx)->port_id, &f);
	return (double)f.served_ns / 1e9;
}

/* Keep every QP's queue full while the link serves secs seconds (at most INCAST_WALL_S by the clock); per
 * QP, the WRITEs completed. */
static void
incast_window(struct rnic_qp *const *qps, double secs, uint64_t *done)
{
	struct rnic_wc wc[DEPTH];
	double t0 = now_s(), s0 = served_s();

	while (served_s() - s0 < secs) {
		int got = rnic_poll_cq(a.cq, DEPTH, wc);

		for (int i = 0; i < got; i++) {
			struct rnic_qp *qp = qps[wc[i].wr_id >> 32];

			if (wc[i].status != RNIC_WC_SUCCESS)
				fail_msg("QP %u: %s", qp->qp_num, rnic_wc_status_str(wc[i].status));
			done[wc[i].wr_id >> 32]++;
			post_tagged(qp, wc[i].wr_id >> 32, 1);
		}
		if (now_s() - t0 > INCAST_WALL_S)
			fail_msg("the link served %.2f s of %.2f in %d s", served_s() - s0, secs, INCAST_WALL_S);
	}
}

/* The depth below which p of the frames found the queue (from the layer's histogram, bins of one frame). */
static uint32_t
depth_quantile(const uint64_t *d0, const uint64_t *d1, double p)
{
	uint64_t total = 0, seen = 0;

	for (int i = 0; i < RNIC_FAULT_DEPTH_BINS; i++)
		total += d1[i] - d0[i];
	for (uint32_t i = 0; i < RNIC_FAULT_DEPTH_BINS; i++) {
		seen += d1[i] - d0[i];
		if ((double)seen >= p * (double)total)
			return i;
	}
	return RNIC_FAULT_DEPTH_BINS - 1;
}

/*
 * N:1 incast (doc/congestion.md; N: INCAST_SENDERS): N QPs of device 0 keep 64 KB WRITEs queued to N QPs of
 * device 1 through the fault layer's bottleneck in front of device 1 (a rate-limited queue marking ECN by
 * depth). The bottleneck runs by the engine lcore's time (what its link served, served_ns), and so do the
 * windows: after a warm-up, over the measured one, with DCQCN: the queue's p99 depth below kmax, no frame
 * lost, Jain's fairness of the QPs' goodputs >= 0.95, their sum >= 0.9 of the bottleneck's capacity (its
 * rate over the time it served); with --cc none, the queue fills (p99 at kmax or more) and frames are lost.
 */
static void
test_incast(void **state)
{
	struct rnic_qp *qa[INCAST_MAX_QPS] = { NULL }, *qb[INCAST_MAX_QPS] = { NULL };
	uint64_t done[INCAST_MAX_QPS] = { 0 }, warm[INCAST_MAX_QPS] = { 0 };
	uint16_t port = rnic_ctx_dev(b.ctx)->port_id;
	int n = incast_senders();
	struct rnic_fault_counts f0, f1;
	struct rnic_fault_spec spec;
	double sum = 0, sq = 0, t0, secs, served, jain, goodput;
	uint64_t ran0, ran1;
	uint32_t p99;

	(void)state;
	bottleneck(&spec);
	for (int i = 0; i < n; i++) {
		connected_pair(26 << 2 | RNIC_ECN_ECT0, &qa[i], &qb[i]);
		post_tagged(qa[i], (uint32_t)i, DEPTH);
	}
	incast_window(qa, INCAST_WARMUP_S, warm);
	rnic_fault_get_counts(port, &f0);
	ran0 = test_engine_cpu_ns(0);
	t0 = now_s();
	incast_window(qa, INCAST_S, done);
	secs = now_s() - t0;
	ran1 = test_engine_cpu_ns(0);
	rnic_fault_get_counts(port, &f1);
	served = (double)(f1.served_ns - f0.served_ns) / 1e9;
	for (int i = 0; i < n; i++) {
		double bps = (double)done[i] * MSG_BYTES * 8 / served;

		sum += bps;
		sq += bps * bps;
	}
	jain = sum * sum / (n * sq);
	goodput = sum / (spec.rate_mbps * 1e6);
	p99 = depth_quantile(f0.depth, f1.depth, 0.99);
	print_message("incast %d:1, DCQCN %s: goodput %.3f of %u Mbit/s (served %.2f of %.2f s, the engine ran "
		      "%.2f s), Jain %.3f, queue p50 %u p99 %u (kmax %u, queue %u), %llu frames lost, %llu marked\n",
		      n, rnic_ctx_dev(a.ctx)->cc.rp_enable ? "on" : "off", goodput, spec.rate_mbps, served, secs,
		      (double)(ran1 - ran0) / 1e9, jain, depth_quantile(f0.depth, f1.depth, 0.5), p99, spec.kmax,
		      spec.queue, (unsigned long long)(f1.queue_dropped - f0.queue_dropped),
		      (unsigned long long)(f1.ecn_marked - f0.ecn_marked));
	for (int i = 0; i < n; i++) {
		const struct rnic_dcqcn_rp *rp = &rnic_qp_priv(qa[i])->cc.rp;

		print_message("  QP %u: %llu WRITEs; its rate %.1f Mbit/s, target %.1f, alpha %u/1024%s\n",
			      qa[i]->qp_num, (unsigned long long)done[i], rp->rc / 1e3, rp->rt / 1e3, rp->alpha,
			      rp->active ? "" : " (not running DCQCN)");
	}
	if (rnic_ctx_dev(a.ctx)->cc.rp_enable) {
		assert_true(p99 < spec.kmax);
		assert_int_equal(f1.queue_dropped, f0.queue_dropped);
		assert_true(jain >= 0.95);
		assert_true(goodput >= 0.9);
	} else {
		assert_true(p99 >= spec.kmax);
		assert_true(f1.queue_dropped > f0.queue_dropped);
	}
	drain((uint32_t)n * DEPTH);
	for (int i = 0; i < n; i++)
		destroy_pair(qa[i], qb[i]);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marked_requests),
		cmocka_unit_test(test_marked_responses),
		cmocka_unit_test(test_not_ect_and_no_fake_ce),
		cmocka_unit_test(test_switched),
		cmocka_unit_test(test_rate_limit),
	};
	const struct CMUnitTest incast[] = {
		cmocka_unit_test(test_incast),
	};
	const char *suite = getenv("CC_SUITE");

	g_argc = argc;
	g_argv = argv;
	if (suite != NULL && strcmp(suite, "incast") == 0)
		return cmocka_run_group_tests_name("incast", incast, setup, teardown);
	return cmocka_run_group_tests_name("cc", tests, setup, teardown);
}
