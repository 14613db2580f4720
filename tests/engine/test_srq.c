/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues end to end, with the engine running (sharded responders too: meson runs it with the
 * responder stage on two lcores, so the QPs of one SRQ take its WQEs from two lcores at once): one SRQ shared
 * by RC QPs and a UD QP, every message's bytes and wr_id checked; the limit event, one shot and re-armed;
 * RNR while the SRQ is empty, then recovery; destroy refused while a QP uses it; a QP in error leaves the
 * SRQ's WQEs to the others and raises Last WQE Reached; UC on an SRQ; the verbs' argument checks.
 * Run as: test_srq <EAL args with worker lcores> [-- engine args]
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_byteorder.h>
#include <rte_common.h>

#include "rnic.h"
#include "test_env.h"

#define BUF_SIZE (4u << 20)
#define SLOT 16384u		/* receive buffer per SRQ WQE (in B's buffer) */
#define NB_RC 3

static int g_argc;
static char **g_argv;
static struct test_side A, B;

static int
setup(void **state)
{
	(void)state;
	return test_sides_start(g_argc, g_argv, &A, &B, BUF_SIZE, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ);
}

static int
teardown(void **state)
{
	(void)state;
	return test_sides_stop(&A, &B);
}

static struct rnic_srq *
make_srq(struct rnic_pd *pd, uint32_t max_wr)
{
	struct rnic_srq_init_attr ia = { .attr = { .max_wr = max_wr, .max_sge = 2 } };
	struct rnic_srq *srq = rnic_create_srq(pd, &ia);

	assert_non_null(srq);
	assert_true(ia.attr.max_wr >= max_wr);
	assert_true(ia.attr.max_sge >= 2);
	return srq;
}

static struct rnic_qp *
make_qp(struct test_side *s, enum rnic_qp_type type, struct rnic_srq *srq)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .srq = srq, .qp_type = type,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct rnic_qp *qp = rnic_create_qp(s->pd, &ia);

	assert_non_null(qp);
	if (srq != NULL)	/* the QP's own receive caps are ignored on an SRQ */
		assert_int_equal(ia.cap.max_recv_wr, 0);
	return qp;
}

/* The loss timer at 4.096 us x 2^16 (268 ms): nothing is lost on the loopback pair, but the sharded map runs
 * five lcores on this machine's two CPUs, which a loaded machine (a sanitizer build) can starve for longer
 * than the usual 67 ms times the retries. */
static void
connect_pair(struct rnic_qp *a, struct rnic_qp *b, uint8_t rnr_retry)
{
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0x40, .timeout = 16, .retry_cnt = 7,
					.rnr_retry = rnr_retry };

	assert_int_equal(test_connect(a, b->qp_num, &B.gid, &path), 0);
	assert_int_equal(test_connect(b, a->qp_num, &A.gid, &path), 0);
}

/* Post n receives on the SRQ, wr_id first_id + i, each into its SLOT of B's buffer (two SGEs of half a slot). */
static void
post_srq(struct rnic_srq *srq, uint64_t first_id, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t id = first_id + i;
		uint8_t *slot = B.buf + (id % (BUF_SIZE / SLOT)) * SLOT;
		struct rnic_sge sge[2] = { { (uintptr_t)slot, SLOT / 2, B.mr->lkey },
					   { (uintptr_t)slot + SLOT / 2, SLOT / 2, B.mr->lkey } };
		struct rnic_recv_wr wr = { .wr_id = id, .sg_list = sge, .num_sge = 2 }, *bad;

		memset(slot, 0, SLOT);
		assert_int_equal(rnic_post_srq_recv(srq, &wr, &bad), 0);
	}
}

static void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Wait (bounded) for n completions on cq. */
static void
wait_wc(struct rnic_cq *cq, int n, struct rnic_wc *wc)
{
	double t0 = test_now_s();
	int got = 0;

	while (got < n) {
		int r = rnic_poll_cq(cq, n - got, wc + got);

		assert_true(r >= 0);
		got += r;
		if (test_now_s() - t0 > 10)
			fail_msg("timed out: %d of %d completions", got, n);
	}
}

static void
expect_no_wc(struct rnic_cq *cq)
{
	struct rnic_wc wc;
	struct timespec ts = { 0, 30 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	assert_int_equal(rnic_poll_cq(cq, 1, &wc), 0);
}

/* The next async event of the context within a second: 0 and *e, or -1 when none came. */
static int
next_event(struct rnic_context *ctx, struct rnic_async_event *e)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, 1000) != 1)
		return -1;
	assert_int_equal(rnic_get_async_event(ctx, e), 0);
	rnic_ack_async_event(e);
	return 0;
}

static void
expect_no_event(struct rnic_context *ctx)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, 50), 0);
}

/* Message i of A's QP q: its length and the seed of its bytes. */
static uint32_t
msg_len(uint32_t q, uint32_t i)
{
	static const uint32_t sizes[] = { 1, 1023, 1024, 1025, 4000, 8192, 0, 12345 };

	return sizes[(q + i) % RTE_DIM(sizes)];
}

static void
send_msg(struct rnic_qp *qp, uint64_t wr_id, uint32_t len, uint32_t seed, struct rnic_ah *ah, uint32_t dqpn)
{
	uint8_t *src = A.buf + (wr_id % (BUF_SIZE / SLOT)) * SLOT;
	struct rnic_sge sge = { (uintptr_t)src, len, A.mr->lkey };
	struct rnic_send_wr wr = { .wr_id = wr_id, .opcode = RNIC_WR_SEND_WITH_IMM, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED, .imm_data = rte_cpu_to_be_32(seed) }, *bad;

	fill(src, len, seed);
	if (ah != NULL) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = dqpn;
		wr.wr.ud.remote_qkey = 0x11111111;
	}
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

/*
 * NB_RC RC QPs and a UD QP of B on one SRQ, each sent ROUNDS messages of assorted lengths (multi-packet ones
 * among them) by its peer at once: every message lands in exactly one SRQ WQE, each WQE is used once, and
 * the bytes in the WQE's buffer are the message's (found by the immediate each message carries).
 */
static void
test_srq_shared(void **state)
{
	enum { ROUNDS = 40, TOTAL = (NB_RC + 1) * ROUNDS };
	struct rnic_srq *srq = make_srq(B.pd, TOTAL);
	struct rnic_qp *a[NB_RC + 1], *b[NB_RC + 1];
	struct rnic_ah_attr ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = B.gid } };
	struct rnic_ah *ah;
	struct rnic_wc wc[TOTAL];
	uint8_t seen[TOTAL] = { 0 };
	struct rnic_recv_wr rwr = { .wr_id = 1 }, *bad;
	struct rnic_srq_attr attr;

	(void)state;
	for (int q = 0; q < NB_RC; q++) {
		a[q] = make_qp(&A, RNIC_QPT_RC, NULL);
		b[q] = make_qp(&B, RNIC_QPT_RC, srq);
		connect_pair(a[q], b[q], 7);
	}
	a[NB_RC] = make_qp(&A, RNIC_QPT_UD, NULL);
	b[NB_RC] = make_qp(&B, RNIC_QPT_UD, srq);
	connect_pair(a[NB_RC], b[NB_RC], 0);
	ah = rnic_create_ah(A.pd, &ah_attr);
	assert_non_null(ah);
	/* A QP on an SRQ has no receive queue of its own (EINVAL, as providers). */
	assert_int_equal(rnic_post_recv(b[0], &rwr, &bad), EINVAL);
	assert_ptr_equal(bad, &rwr);
	assert_int_equal(rnic_query_srq(srq, &attr), 0);
	assert_true(attr.max_wr >= TOTAL);
	assert_int_equal(attr.srq_limit, 0);

	post_srq(srq, 1000, TOTAL);
	for (uint32_t i = 0; i < ROUNDS; i++)
		for (uint32_t q = 0; q <= NB_RC; q++)
			send_msg(a[q], q * ROUNDS + i, q == NB_RC ? RTE_MIN(msg_len(q, i), 1024u) : msg_len(q, i),
				 q * ROUNDS + i, q == NB_RC ? ah : NULL, b[NB_RC]->qp_num);
	wait_wc(A.cq, TOTAL, wc);
	for (int i = 0; i < TOTAL; i++)
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
	wait_wc(B.cq, TOTAL, wc);
	for (int i = 0; i < TOTAL; i++) {
		uint32_t seed = rte_be_to_cpu_32(wc[i].imm_data), q = seed / ROUNDS;
		int ud = q == NB_RC;
		uint32_t len = ud ? RTE_MIN(msg_len(q, seed % ROUNDS), 1024u) : msg_len(q, seed % ROUNDS);
		uint8_t *slot = B.buf + (wc[i].wr_id % (BUF_SIZE / SLOT)) * SLOT;
		uint8_t *expect = malloc(len + 1);

		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		assert_int_equal(wc[i].opcode, RNIC_WC_RECV);
		assert_true(wc[i].wr_id >= 1000 && wc[i].wr_id < 1000 + TOTAL);
		assert_int_equal(seen[wc[i].wr_id - 1000]++, 0);	/* each WQE once */
		assert_true(q <= NB_RC);
		assert_int_equal(wc[i].qp_num, b[q]->qp_num);
		assert_int_equal(wc[i].byte_len, len + (ud ? 40 : 0));
		fill(expect, len, seed);
		assert_memory_equal(slot + (ud ? 40 : 0), expect, len);
		free(expect);
	}
	expect_no_wc(B.cq);
	/* Destroying the SRQ while QPs use it is refused; then the QPs go and it may. */
	assert_int_equal(rnic_destroy_srq(srq), EBUSY);
	for (int q = 0; q <= NB_RC; q++) {
		assert_int_equal(rnic_destroy_qp(a[q]), 0);
		assert_int_equal(rnic_destroy_qp(b[q]), 0);
	}
	assert_int_equal(rnic_destroy_ah(ah), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

/* One RC pair on an SRQ of B; sends n messages of len bytes, waits for both sides' completions. */
static void
exchange(struct rnic_qp *a, uint32_t n, uint32_t len, struct rnic_wc *wc)
{
	for (uint32_t i = 0; i < n; i++)
		send_msg(a, i, len, i, NULL, 0);
	wait_wc(A.cq, (int)n, wc);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
	wait_wc(B.cq, (int)n, wc);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
}

/* SRQ_LIMIT_REACHED: once when fewer WQEs than the limit are left, not again until modify_srq arms it again. */
static void
test_srq_limit(void **state)
{
	struct rnic_srq *srq = make_srq(B.pd, 16);
	struct rnic_qp *a = make_qp(&A, RNIC_QPT_RC, NULL), *b = make_qp(&B, RNIC_QPT_RC, srq);
	struct rnic_srq_attr attr = { .srq_limit = 4 };
	struct rnic_async_event e;
	struct rnic_wc wc[16];

	(void)state;
	connect_pair(a, b, 7);
	post_srq(srq, 1, 10);
	assert_int_equal(rnic_modify_srq(srq, &attr, RNIC_SRQ_LIMIT), 0);
	assert_int_equal(rnic_query_srq(srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 4);
	exchange(a, 6, 100, wc);		/* 4 left: not below the limit */
	expect_no_event(B.ctx);
	exchange(a, 1, 100, wc);		/* 3 left */
	assert_int_equal(next_event(B.ctx, &e), 0);
	assert_int_equal(e.event_type, RNIC_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(e.element.srq, srq);
	assert_int_equal(srq->events_completed, 1);
	assert_int_equal(rnic_query_srq(srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 0);	/* fired: disarmed */
	exchange(a, 2, 100, wc);		/* 1 left: no second event */
	expect_no_event(B.ctx);
	/* Armed again: the next take below it fires again. */
	attr.srq_limit = 3;
	assert_int_equal(rnic_modify_srq(srq, &attr, RNIC_SRQ_LIMIT), 0);
	post_srq(srq, 100, 2);			/* 3 left */
	expect_no_event(B.ctx);
	exchange(a, 1, 100, wc);		/* 2 left */
	assert_int_equal(next_event(B.ctx, &e), 0);
	assert_int_equal(e.event_type, RNIC_EVENT_SRQ_LIMIT_REACHED);
	/* A limit past max_wr, or a resize, is refused and changes nothing. */
	attr.srq_limit = 1000;
	assert_int_equal(rnic_modify_srq(srq, &attr, RNIC_SRQ_LIMIT), EINVAL);
	attr = (struct rnic_srq_attr){ .max_wr = 64 };
	assert_int_equal(rnic_modify_srq(srq, &attr, RNIC_SRQ_MAX_WR), EOPNOTSUPP);
	assert_int_equal(rnic_query_srq(srq, &attr), 0);
	assert_int_equal(attr.max_wr, 16);
	assert_int_equal(rnic_destroy_qp(a), 0);
	assert_int_equal(rnic_destroy_qp(b), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

/* An empty SRQ: the RC responder answers RNR NAKs (nothing placed, nothing completed); a post lets the requester's
 * retry through. A UD message finding it empty is dropped. */
static void
test_srq_rnr(void **state)
{
	struct rnic_srq *srq = make_srq(B.pd, 8);
	struct rnic_qp *a = make_qp(&A, RNIC_QPT_RC, NULL), *b = make_qp(&B, RNIC_QPT_RC, srq);
	struct rnic_qp_counters c;
	struct rnic_wc wc[2];
	double t0;

	(void)state;
	connect_pair(a, b, 7);		/* RNR retries without limit */
	send_msg(a, 5, 3000, 5, NULL, 0);
	t0 = test_now_s();
	do {
		assert_int_equal(rnic_query_qp_counters(b, &c), 0);
		assert_true(test_now_s() - t0 < 5);
	} while (c.rnr_naks_sent < 2);
	expect_no_wc(A.cq);
	expect_no_wc(B.cq);
	post_srq(srq, 77, 1);
	wait_wc(A.cq, 1, wc);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	wait_wc(B.cq, 1, wc);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(wc[0].byte_len, 3000);
	assert_int_equal(rnic_destroy_qp(a), 0);
	assert_int_equal(rnic_destroy_qp(b), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

/*
 * A QP of an SRQ goes to error: it raises Last WQE Reached, completes nothing of the SRQ's (none in progress),
 * and the SRQ's WQEs all go to the QP still working, none lost.
 */
static void
test_srq_error_leaves_wqes(void **state)
{
	struct rnic_srq *srq = make_srq(B.pd, 16);
	struct rnic_qp *a1 = make_qp(&A, RNIC_QPT_RC, NULL), *b1 = make_qp(&B, RNIC_QPT_RC, srq);
	struct rnic_qp *a2 = make_qp(&A, RNIC_QPT_RC, NULL), *b2 = make_qp(&B, RNIC_QPT_RC, srq);
	struct rnic_qp_attr err = { .qp_state = RNIC_QPS_ERR };
	struct rnic_async_event e;
	struct rnic_wc wc[16];

	(void)state;
	connect_pair(a1, b1, 7);
	connect_pair(a2, b2, 7);
	post_srq(srq, 500, 8);
	send_msg(a1, 1, 2000, 1, NULL, 0);	/* b1 takes one */
	wait_wc(A.cq, 1, wc);
	wait_wc(B.cq, 1, wc);
	assert_int_equal(wc[0].wr_id, 500);
	assert_int_equal(wc[0].qp_num, b1->qp_num);
	assert_int_equal(rnic_modify_qp(b1, &err, RNIC_QP_STATE), 0);
	assert_int_equal(next_event(B.ctx, &e), 0);
	assert_int_equal(e.event_type, RNIC_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(e.element.qp, b1);
	expect_no_event(B.ctx);
	expect_no_wc(B.cq);			/* no SRQ WQE flushed for b1 */
	for (uint32_t i = 0; i < 7; i++)
		send_msg(a2, 10 + i, 100 + i, 10 + i, NULL, 0);
	wait_wc(A.cq, 7, wc);
	wait_wc(B.cq, 7, wc);
	for (uint32_t i = 0; i < 7; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		assert_int_equal(wc[i].qp_num, b2->qp_num);
		assert_int_equal(wc[i].wr_id, 501 + i);		/* in posting order, none lost */
		assert_int_equal(wc[i].byte_len, 100 + i);
	}
	assert_int_equal(rnic_destroy_qp(a1), 0);
	assert_int_equal(rnic_destroy_qp(b1), 0);
	assert_int_equal(rnic_destroy_qp(a2), 0);
	assert_int_equal(rnic_destroy_qp(b2), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

/* UC on an SRQ: multi-packet SENDs land in its WQEs in order, as on RC. */
static void
test_srq_uc(void **state)
{
	struct rnic_srq *srq = make_srq(B.pd, 8);
	struct rnic_qp *a = make_qp(&A, RNIC_QPT_UC, NULL), *b = make_qp(&B, RNIC_QPT_UC, srq);
	struct rnic_wc wc[4];

	(void)state;
	connect_pair(a, b, 0);
	post_srq(srq, 300, 4);
	for (uint32_t i = 0; i < 4; i++)
		send_msg(a, i, 2500 + i, 40 + i, NULL, 0);
	wait_wc(A.cq, 4, wc);
	wait_wc(B.cq, 4, wc);
	for (uint32_t i = 0; i < 4; i++) {
		uint8_t expect[2504];

		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 300 + i);
		assert_int_equal(wc[i].byte_len, 2500 + i);
		fill(expect, 2500 + i, 40 + i);
		assert_memory_equal(B.buf + ((300 + i) % (BUF_SIZE / SLOT)) * SLOT, expect, 2500 + i);
	}
	assert_int_equal(rnic_destroy_qp(a), 0);
	assert_int_equal(rnic_destroy_qp(b), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

/* The verbs' argument checks: sizes, another PD's SRQ, posting past max_wr or max_sge. */
static void
test_srq_checks(void **state)
{
	struct rnic_srq_init_attr ia = { .attr = { .max_wr = 0, .max_sge = 1 } };
	struct rnic_device_attr dattr;
	struct rnic_pd *other = rnic_alloc_pd(B.ctx);
	struct rnic_srq *srq;
	struct rnic_qp_init_attr qia = { .send_cq = B.cq, .recv_cq = B.cq, .qp_type = RNIC_QPT_RC,
					 .cap = { .max_send_wr = 4 } };
	struct rnic_sge sge[3] = { { (uintptr_t)B.buf, 8, B.mr->lkey } };
	struct rnic_recv_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = 1 }, *bad;
	uint32_t n;

	(void)state;
	assert_int_equal(rnic_query_device(B.ctx, &dattr), 0);
	assert_true(dattr.max_srq > 0 && dattr.max_srq_wr > 0 && dattr.max_srq_sge > 0);
	assert_null(rnic_create_srq(B.pd, &ia));
	assert_int_equal(errno, EINVAL);
	ia.attr.max_wr = (uint32_t)dattr.max_srq_wr + 1;
	assert_null(rnic_create_srq(B.pd, &ia));
	assert_int_equal(errno, EINVAL);
	ia.attr = (struct rnic_srq_attr){ .max_wr = 4, .max_sge = 2 };
	srq = rnic_create_srq(B.pd, &ia);
	assert_non_null(srq);
	qia.srq = srq;
	assert_null(rnic_create_qp(other, &qia));	/* an SRQ of another PD */
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rnic_dealloc_pd(B.pd), EBUSY);	/* the SRQ holds its PD */
	for (n = 0; rnic_post_srq_recv(srq, &wr, &bad) == 0; n++)
		assert_true(n < 64);
	assert_int_equal(n, ia.attr.max_wr);
	assert_int_equal(rnic_post_srq_recv(srq, &wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr);
	wr.num_sge = (int)ia.attr.max_sge + 1;
	assert_int_equal(rnic_destroy_srq(srq), 0);
	srq = make_srq(B.pd, 4);
	assert_int_equal(rnic_post_srq_recv(srq, &wr, &bad), EINVAL);
	assert_int_equal(rnic_destroy_srq(srq), 0);
	assert_int_equal(rnic_dealloc_pd(other), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srq_shared),
		cmocka_unit_test(test_srq_limit),
		cmocka_unit_test(test_srq_rnr),
		cmocka_unit_test(test_srq_error_leaves_wqes),
		cmocka_unit_test(test_srq_uc),
		cmocka_unit_test(test_srq_checks),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests(tests, setup, teardown);
}
