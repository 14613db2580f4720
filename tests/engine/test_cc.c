/* SPDX-License-Identifier: BSD-3-Clause
 * Congestion control end to end on the loopback pair (doc/congestion.md): the traffic class's ECN bits on
 * the wire, the notification point answering CE-marked requests and responses with CNPs (at most one per
 * np_min_time_between_cnps per QP and side), the reaction point cutting the sender's rate; and a QP's
 * rate_limit held by its pacer. The fault layer (--fault ecn=P) marks CE as a switch would; the test's
 * arguments give it one (ecn=0) to update.
 * Run as: test_cc <EAL args with a worker lcore> -- --fault ecn=0 [--cc ...]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_cycles.h>

#include "rnic.h"
#include "rnic_fault.h"
#include "rnic_pipeline.h"
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
	struct rnic_device **list;
	int access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE;

	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	if (test_side_open(&a, list[0], BUF_BYTES, access) != 0 || test_side_open(&b, list[1], BUF_BYTES, access) != 0)
		return -1;
	rnic_free_device_list(list);
	return rnic_engine_start();
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	test_side_close(&a);
	test_side_close(&b);
	return rnic_engine_fini();
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

	if (v == UINT64_MAX)
		fail_msg("no counter %s", name);
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

static void
post_writes(struct rnic_qp *qp, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct rnic_sge sge = { (uintptr_t)a.buf, MSG_BYTES, a.mr->lkey };
		struct rnic_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_RDMA_WRITE,
					   .send_flags = RNIC_SEND_SIGNALED,
					   .wr.rdma = { (uintptr_t)b.buf, b.mr->rkey } };
		struct rnic_send_wr *bad;

		assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
	}
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

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marked_requests),
		cmocka_unit_test(test_marked_responses),
		cmocka_unit_test(test_not_ect_and_no_fake_ce),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("cc", tests, setup, teardown);
}
