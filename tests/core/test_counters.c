/* SPDX-License-Identifier: BSD-3-Clause
 * The device counters under mlx5's names (lib/engine/rnic_hw_counters.c) count what their mlx5 namesakes count:
 * requests executed by kind (duplicates not counted again), duplicates, lost READ responses, loss timer
 * expiries, RNR retries running out, a receive queue without a WQE, a SEND longer than its receive buffer.
 * Device 0 sends, device 1 answers. Two runs:
 *   test_counters <EAL args with a worker lcore> -- --fault port=0,drop=P,seed=S
 *       every kind of request while device 0's port drops frames (the responses): the requester retransmits
 *       and sees READ gaps, the responder sees duplicates, each request still counts once
 *   test_counters <EAL args with a worker lcore>
 *       a loss-free link for the errors whose NAK must arrive: RNR retries exhausted, local length error
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "rnic.h"
#include "test_env.h"

#define WRITES 40		/* and as many READs, and half as many atomics */
#define READS WRITES
#define ATOMICS (WRITES / 2)
#define MSG (32u << 10)		/* 32 packets at MTU 1024: READ responses get lost mid-message */
#define BUF (4 * MSG)

static int g_argc;
static char **g_argv;

struct side {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	uint8_t *buf;
	struct rnic_mr *mr;
	union rnic_gid gid;
};

static struct side A, B;
static struct rnic_qp *qps[8];
static unsigned int nb_qps;

/* The side's PD, CQ and registered buffer, on its context. */
static void
open_side(struct side *s)
{
	s->pd = rnic_alloc_pd(s->ctx);
	s->cq = rnic_create_cq(s->ctx, 1024, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, BUF);
	assert_true(s->pd != NULL && s->cq != NULL && s->buf != NULL);
	memset(s->buf, 0, BUF);
	s->mr = rnic_reg_mr(s->pd, s->buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			    RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);
	assert_non_null(s->mr);
	rnic_query_gid(s->ctx, 1, 0, &s->gid);
}

static struct rnic_qp *
new_qp(struct side *s)
{
	struct rnic_qp_init_attr ia = { .send_cq = s->cq, .recv_cq = s->cq, .qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp *qp = rnic_create_qp(s->pd, &ia);

	assert_non_null(qp);
	assert_true(nb_qps < sizeof(qps) / sizeof(qps[0]));
	qps[nb_qps++] = qp;
	return qp;
}

/* A connected pair A -> B with this RNR retry count. */
static void
pair(struct rnic_qp **a, struct rnic_qp **b, uint8_t rnr_retry)
{
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0x100, .timeout = 8, .retry_cnt = 7,
					.rnr_retry = rnr_retry };

	*a = new_qp(&A);
	*b = new_qp(&B);
	assert_int_equal(test_connect(*a, (*b)->qp_num, &B.gid, &path), 0);
	assert_int_equal(test_connect(*b, (*a)->qp_num, &A.gid, &path), 0);
}

static int
setup(void **state)
{
	(void)state;
	if (test_env_open_pair(g_argc, g_argv, &A.ctx, &B.ctx) != 0)
		return -1;
	open_side(&A);
	open_side(&B);
	return rnic_engine_start();
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	for (unsigned int i = 0; i < nb_qps; i++)
		rnic_destroy_qp(qps[i]);
	for (struct side *s = &A; s != NULL; s = s == &A ? &B : NULL) {
		rnic_destroy_cq(s->cq);
		rnic_dereg_mr(s->mr);
		free(s->buf);
		rnic_dealloc_pd(s->pd);
		rnic_close_device(s->ctx);
	}
	return rnic_engine_fini();
}

static void
post(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t id, uint8_t *local, uint32_t len, uint64_t raddr)
{
	struct rnic_sge sge = { (uintptr_t)local, len, A.mr->lkey };
	struct rnic_send_wr wr = { .wr_id = id, .opcode = op, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;

	if (op == RNIC_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = B.mr->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = B.mr->rkey;
	}
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

static void
post_recv(struct rnic_qp *qp, uint32_t len)
{
	struct rnic_sge sge = { (uintptr_t)(B.buf + 3 * MSG), len, B.mr->lkey };
	struct rnic_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(rnic_post_recv(qp, &wr, &bad), 0);
}

/* The next completion on the CQ (bounded wait). */
static struct rnic_wc
next_wc(struct rnic_cq *cq)
{
	struct rnic_wc wc;
	time_t deadline = time(NULL) + 30;
	int r;

	while ((r = rnic_poll_cq(cq, 1, &wc)) == 0)
		if (time(NULL) > deadline)
			fail_msg("no completion in 30 s");
	assert_int_equal(r, 1);
	return wc;
}

static uint64_t
counter(struct side *s, const char *name)
{
	uint64_t v = test_counter(s->ctx, name);

	if (v == UINT64_MAX)
		fail_msg("no counter %s", name);
	return v;
}

/* Every kind of request, over a link that loses responses: executed once each, duplicates apart. */
static void
test_requests(void **state)
{
	struct rnic_qp *a, *b;

	(void)state;
	pair(&a, &b, 7);
	/* In rounds of a few WQEs, as the soak test: each round's losses are repaired before the next. */
	for (unsigned int round = 0; round < WRITES / 4; round++) {
		for (unsigned int i = 0; i < 4; i++) {
			post(a, RNIC_WR_RDMA_WRITE, i, A.buf, MSG, (uintptr_t)B.buf);
			post(a, RNIC_WR_RDMA_READ, i, A.buf + MSG, MSG, (uintptr_t)B.buf);
		}
		for (unsigned int i = 0; i < 2; i++)
			post(a, RNIC_WR_ATOMIC_FETCH_AND_ADD, i, A.buf + 2 * MSG, 8, (uintptr_t)(B.buf + 2 * MSG));
		for (unsigned int i = 0; i < 10; i++) {
			struct rnic_wc wc = next_wc(A.cq);

			if (wc.status != RNIC_WC_SUCCESS)
				fail_msg("round %u: %s", round, rnic_wc_status_str(wc.status));
		}
	}
	assert_int_equal(*(uint64_t *)(void *)(B.buf + 2 * MSG), ATOMICS);	/* each added once */
	assert_int_equal(counter(&B, "rx_write_requests"), WRITES);
	assert_int_equal(counter(&B, "rx_read_requests"), READS);
	assert_int_equal(counter(&B, "rx_atomic_requests"), ATOMICS);
	/* The lossy link at work, and each mlx5 name equal to what it is made of. */
	assert_true(counter(&B, "duplicates") > 0);
	assert_int_equal(counter(&B, "duplicate_request"), counter(&B, "duplicates"));
	assert_true(counter(&A, "read_gaps") > 0);
	assert_int_equal(counter(&A, "implied_nak_seq_err"), counter(&A, "read_gaps"));
	assert_int_equal(counter(&A, "local_ack_timeout_err"), counter(&A, "timeouts"));
	assert_int_equal(counter(&A, "packet_seq_err"), counter(&A, "seq_naks_received"));
	assert_int_equal(counter(&B, "out_of_sequence"), test_counter(B.ctx, "out_of_sequence"));
	assert_int_equal(counter(&A, "rp_cnp_handled"), counter(&A, "cnp_handled"));
	assert_int_equal(counter(&A, "rp_cnp_ignored"), counter(&A, "cnp_ignored"));
	assert_int_equal(counter(&B, "np_ecn_marked_roce_packets"), counter(&B, "ecn_marked"));
	assert_int_equal(counter(&A, "rx_icrc_encapsulated"), counter(&A, "rx_drop_bad_icrc"));
	assert_int_equal(counter(&B, "np_cnp_sent"), 0);	/* nothing marked CE on this link */
}

/* A SEND to an empty receive queue with no RNR retry: out_of_buffer at the responder, rnr_nak_retry_err at
 * the requester. */
static void
test_rnr(void **state)
{
	uint64_t oob = counter(&B, "out_of_buffer"), rnr = counter(&A, "rnr_nak_retry_err");
	struct rnic_qp *a, *b;
	struct rnic_wc wc;

	(void)state;
	pair(&a, &b, 0);
	post(a, RNIC_WR_SEND, 1, A.buf, 64, 0);
	wc = next_wc(A.cq);
	assert_int_equal(wc.status, RNIC_WC_RNR_RETRY_EXC_ERR);
	assert_true(counter(&B, "out_of_buffer") > oob);
	assert_int_equal(counter(&B, "out_of_buffer"), counter(&B, "recv_wqe_missing"));
	assert_int_equal(counter(&A, "rnr_nak_retry_err"), rnr + 1);
	assert_int_equal(counter(&A, "rnr_retries_exceeded"), rnr + 1);
}

/* A SEND longer than the receive buffer: resp_local_length_error at the responder; the requester is told by
 * an invalid request NAK (req_remote_invalid_request). */
static void
test_length(void **state)
{
	uint64_t len_err = counter(&B, "resp_local_length_error"), inv = counter(&A, "req_remote_invalid_request");
	struct rnic_qp *a, *b;
	struct rnic_wc wc;

	(void)state;
	pair(&a, &b, 7);
	post_recv(b, 100);
	post(a, RNIC_WR_SEND, 1, A.buf, 200, 0);
	wc = next_wc(A.cq);
	assert_int_equal(wc.status, RNIC_WC_REM_INV_REQ_ERR);
	wc = next_wc(B.cq);
	assert_int_equal(wc.status, RNIC_WC_LOC_LEN_ERR);
	assert_int_equal(counter(&B, "resp_local_length_error"), len_err + 1);
	assert_int_equal(counter(&B, "recv_length_errors"), len_err + 1);
	assert_int_equal(counter(&A, "req_remote_invalid_request"), inv + 1);
	assert_int_equal(counter(&A, "req_remote_invalid_request"), counter(&A, "inv_req_naks_received"));
}

/* softrnic's own names stay, the mlx5 names follow them, each once. */
static void
test_names(void **state)
{
	static const char *const mlx5[] = {
		"out_of_sequence", "duplicate_request", "out_of_buffer", "resp_local_length_error",
		"resp_remote_access_errors", "rx_write_requests", "rx_read_requests", "rx_atomic_requests",
		"packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err",
		"req_remote_invalid_request", "req_remote_access_errors", "np_ecn_marked_roce_packets", "np_cnp_sent",
		"rp_cnp_handled", "rp_cnp_ignored", "rx_icrc_encapsulated",
	};
	static const char *const own[] = { "tx_packets", "rx_packets", "duplicates", "acks_sent", "timeouts",
					   "rx_drop_bad_icrc", "no_qp" };
	struct rnic_counter c[256];
	int n = rnic_query_device_counters(A.ctx, c, 256);

	(void)state;
	assert_true(n > 0 && n <= 256);
	assert_int_equal(rnic_query_device_counters(A.ctx, NULL, 0), n);
	for (unsigned int i = 0; i < sizeof(mlx5) / sizeof(mlx5[0]) + sizeof(own) / sizeof(own[0]); i++) {
		const char *name = i < sizeof(mlx5) / sizeof(mlx5[0]) ? mlx5[i] : own[i - sizeof(mlx5) / sizeof(mlx5[0])];
		int seen = 0;

		for (int k = 0; k < n; k++)
			seen += strcmp(c[k].name, name) == 0;
		if (seen != 1)
			fail_msg("counter %s listed %d times", name, seen);
	}
	assert_string_equal(c[0].name, "doorbells");	/* the existing order is kept */
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest lossy[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_names),
	};
	const struct CMUnitTest errors[] = {
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_length),
		cmocka_unit_test(test_names),
	};
	int faults = 0;

	g_argc = argc;
	g_argv = argv;
	for (int i = 1; i < argc; i++)
		faults |= strcmp(argv[i], "--fault") == 0;
	if (faults)
		return cmocka_run_group_tests_name("counters over a lossy link", lossy, setup, teardown);
	return cmocka_run_group_tests_name("counters of errors", errors, setup, teardown);
}
