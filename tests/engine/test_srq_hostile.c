/* SPDX-License-Identifier: BSD-3-Clause
 * Shared receive queues frame by frame: both devices' stages run on the test's own thread (the engine has no
 * worker lcore), and the test delivers A's frames to B one at a time, so a message can be left half-received.
 * - A QP of the SRQ in error with a SEND half-received: that one WQE completes flushed, with its wr_id; the
 *   SRQ's other WQEs go to its other QP, none lost; Last WQE Reached is raised once.
 * - The SRQ's memory as a hostile tenant writes it (an rnicd client's SRQ is its shared memory): a WQE
 *   rewritten after its message's first packet changes nothing (read once); a head past what the SRQ holds
 *   fails the SRQ (SRQ_ERR once, counted, the QP NAKed with a remote operational error), never a crash.
 * Run as: test_srq_hostile <EAL args with one lcore>
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "rnic.h"
#include "rnic_srq.h"
#include "test_env.h"
#include "test_pipeline.h"

#define BUF (256 * 1024)
#define SLOT 8192u
#define MSG 3000u		/* three packets at PMTU 1024 */

static int g_argc;
static char **g_argv;
static struct rnic_context *ctx_a, *ctx_b;
static struct rnic_pipeline *pipe_a, *pipe_b;
static struct rte_mempool *pool;
static union rnic_gid gid_a, gid_b;
static struct rnic_pd *pd_a, *pd_b;
static struct rnic_cq *cq_a, *cq_b;
static struct rnic_mr *mr_a, *mr_b;
static uint8_t *buf_a, *buf_b;

static int
setup(void **state)
{
	int access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE;

	(void)state;
	if (test_env_open_pair(g_argc, g_argv, &ctx_a, &ctx_b) != 0 || rnic_query_gid(ctx_a, 1, 0, &gid_a) != 0 ||
	    rnic_query_gid(ctx_b, 1, 0, &gid_b) != 0)
		return -1;
	pool = rte_pktmbuf_pool_create("srq_hostile", 2047, 64, 0, RTE_PKTMBUF_HEADROOM + 8192, SOCKET_ID_ANY);
	pipe_a = pool != NULL ? test_pipeline_attach(ctx_a, pool) : NULL;
	pipe_b = pipe_a != NULL ? test_pipeline_attach(ctx_b, pool) : NULL;
	if (pipe_b == NULL)
		return -1;
	buf_a = aligned_alloc(4096, BUF);
	buf_b = aligned_alloc(4096, BUF);
	pd_a = rnic_alloc_pd(ctx_a);
	pd_b = rnic_alloc_pd(ctx_b);
	cq_a = rnic_create_cq(ctx_a, 256, NULL, NULL, 0);
	cq_b = rnic_create_cq(ctx_b, 256, NULL, NULL, 0);
	mr_a = pd_a != NULL && buf_a != NULL ? rnic_reg_mr(pd_a, buf_a, BUF, access) : NULL;
	mr_b = pd_b != NULL && buf_b != NULL ? rnic_reg_mr(pd_b, buf_b, BUF, access) : NULL;
	return cq_a != NULL && cq_b != NULL && mr_a != NULL && mr_b != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	rnic_dereg_mr(mr_a);
	rnic_dereg_mr(mr_b);
	rnic_destroy_cq(cq_a);
	rnic_destroy_cq(cq_b);
	rnic_dealloc_pd(pd_a);
	rnic_dealloc_pd(pd_b);
	free(buf_a);
	free(buf_b);
	rnic_close_device(ctx_b);
	return test_env_close(ctx_a);
}

/* A's stages (the requester sends what was posted, the completer takes B's answers). */
static void
pump_a(void)
{
	test_pipeline_pump(pipe_a);
}

static void
pump_b(void)
{
	test_pipeline_pump(pipe_b);
}

/* Take what A sent off B's port: up to max frames in order, into m; returns how many. */
static unsigned int
frames_to_b(struct rte_mbuf **m, unsigned int max)
{
	uint16_t port = rnic_ctx_dev(ctx_b)->port_id;
	unsigned int n = 0;

	for (uint16_t q = 0; q < 2; q++)
		n += rte_eth_rx_burst(port, q, m + n, (uint16_t)(max - n));
	return n;
}

/* Hand one of A's frames to B's port again (A's port sends into B's: the loopback pair). */
static void
deliver(struct rte_mbuf *m)
{
	assert_int_equal(rte_eth_tx_burst(rnic_ctx_dev(ctx_a)->port_id, 0, &m, 1), 1);
}

static void
drop_frames(struct rte_mbuf **m, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
}

static struct rnic_qp *
new_qp(struct rnic_pd *pd, struct rnic_cq *cq, struct rnic_srq *srq)
{
	struct rnic_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = RNIC_QPT_RC,
					.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp *qp = rnic_create_qp(pd, &ia);

	assert_non_null(qp);
	return qp;
}

static void
connect_pair(struct rnic_qp *a, struct rnic_qp *b)
{
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0x10, .timeout = 20, .retry_cnt = 7,
					.rnr_retry = 7 };

	assert_int_equal(test_connect(a, b->qp_num, &gid_b, &path), 0);
	assert_int_equal(test_connect(b, a->qp_num, &gid_a, &path), 0);
}

static struct rnic_srq *
new_srq(uint32_t nb_posted)
{
	struct rnic_srq_init_attr ia = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct rnic_srq *srq = rnic_create_srq(pd_b, &ia);

	assert_non_null(srq);
	for (uint32_t i = 0; i < nb_posted; i++) {
		struct rnic_sge sge = { (uintptr_t)buf_b + i * SLOT, SLOT, mr_b->lkey };
		struct rnic_recv_wr wr = { .wr_id = 1 + i, .sg_list = &sge, .num_sge = 1 }, *bad;

		assert_int_equal(rnic_post_srq_recv(srq, &wr, &bad), 0);
	}
	memset(buf_b, 0, BUF);
	return srq;
}

static void
send_msg(struct rnic_qp *qp, uint64_t wr_id, uint32_t len, uint8_t byte)
{
	struct rnic_sge sge = { (uintptr_t)buf_a + (wr_id % 16) * SLOT, len, mr_a->lkey };
	struct rnic_send_wr wr = { .wr_id = wr_id, .opcode = RNIC_WR_SEND, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;

	memset(buf_a + (wr_id % 16) * SLOT, byte, len);
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

/* A's multi-packet SEND of MSG bytes: its frames taken off B's port before B sees them (three). */
static unsigned int
send_held_back(struct rnic_qp *qp, struct rte_mbuf **m, uint8_t byte)
{
	unsigned int n;

	send_msg(qp, 99, MSG, byte);
	pump_a();
	n = frames_to_b(m, 8);
	assert_int_equal(n, 3);
	return n;
}

static int
next_event(struct rnic_context *ctx, struct rnic_async_event *e)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, 100) != 1)
		return -1;
	assert_int_equal(rnic_get_async_event(ctx, e), 0);
	rnic_ack_async_event(e);
	return 0;
}

static void
drain_events(struct rnic_context *ctx)
{
	struct rnic_async_event e;

	while (next_event(ctx, &e) == 0)
		;
}

/*
 * b1 has taken WQE 1 for a SEND whose first packet only has arrived when it goes to error: WQE 1 completes
 * flushed (its wr_id in the CQE), Last WQE Reached comes once, and WQEs 2-4 stay in the SRQ for b2.
 */
static void
test_flush_in_progress(void **state)
{
	struct rnic_srq *srq = new_srq(4);
	struct rnic_qp *a1 = new_qp(pd_a, cq_a, NULL), *b1 = new_qp(pd_b, cq_b, srq);
	struct rnic_qp *a2 = new_qp(pd_a, cq_a, NULL), *b2 = new_qp(pd_b, cq_b, srq);
	struct rnic_qp_attr err = { .qp_state = RNIC_QPS_ERR };
	struct rnic_async_event e;
	struct rte_mbuf *m[8];
	struct rnic_wc wc[8];
	unsigned int n;

	(void)state;
	connect_pair(a1, b1);
	connect_pair(a2, b2);
	drain_events(ctx_b);
	n = send_held_back(a1, m, 0x5a);
	deliver(m[0]);			/* the FIRST packet only: b1 takes WQE 1 */
	drop_frames(m + 1, n - 1);
	pump_b();
	assert_int_equal(rnic_poll_cq(cq_b, 8, wc), 0);
	assert_int_equal(rnic_modify_qp(b1, &err, RNIC_QP_STATE), 0);
	assert_int_equal(rnic_poll_cq(cq_b, 8, wc), 1);
	assert_int_equal(wc[0].status, RNIC_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].qp_num, b1->qp_num);
	assert_int_equal(next_event(ctx_b, &e), 0);
	assert_int_equal(e.event_type, RNIC_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(e.element.qp, b1);
	/* Once: the QP's queues flushed again (a post in error) raise nothing more. */
	assert_int_equal(rnic_modify_qp(b1, &err, RNIC_QP_STATE), 0);
	assert_int_equal(next_event(ctx_b, &e), -1);
	for (uint32_t i = 0; i < 3; i++)
		send_msg(a2, 10 + i, 200 + i, (uint8_t)i);
	for (int i = 0; i < 20; i++) {
		pump_a();
		pump_b();
	}
	assert_int_equal(rnic_poll_cq(cq_b, 8, wc), 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		assert_int_equal(wc[i].qp_num, b2->qp_num);
		assert_int_equal(wc[i].wr_id, 2 + i);
		assert_int_equal(wc[i].byte_len, 200 + i);
		assert_int_equal(buf_b[(1 + i) * SLOT], (uint8_t)i);
	}
	while (rnic_poll_cq(cq_a, 8, wc) > 0)
		;
	assert_int_equal(rnic_destroy_qp(a1), 0);
	assert_int_equal(rnic_destroy_qp(b1), 0);
	assert_int_equal(rnic_destroy_qp(a2), 0);
	assert_int_equal(rnic_destroy_qp(b2), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

/* The WQE a SEND landed in rewritten (another buffer, another length) after its first packet: the rest of the
 * message is placed by the copy taken at the first packet, all in the original buffer. */
static void
test_wqe_rewritten_mid_message(void **state)
{
	struct rnic_srq *srq = new_srq(2);
	struct rnic_srq_priv *s = rnic_srq_priv(srq);
	struct rnic_qp *a = new_qp(pd_a, cq_a, NULL), *b = new_qp(pd_b, cq_b, srq);
	struct rnic_wqe_data evil = { .byte_count = rte_cpu_to_be_32(16), .lkey = rte_cpu_to_be_32(mr_b->lkey),
				      .addr = rte_cpu_to_be_64((uintptr_t)buf_b + 7 * SLOT) };
	struct rte_mbuf *m[8];
	struct rnic_wc wc[4];
	unsigned int n;

	(void)state;
	connect_pair(a, b);
	n = send_held_back(a, m, 0x77);
	deliver(m[0]);
	pump_b();
	/* WQE 1's scatter entry, in the SRQ's memory, now names 16 bytes elsewhere. */
	memcpy(rnic_wq_slot(&s->wq, 0) + sizeof(struct rnic_wqe_next), &evil, sizeof(evil));
	for (unsigned int i = 1; i < n; i++)
		deliver(m[i]);
	pump_b();
	assert_int_equal(rnic_poll_cq(cq_b, 4, wc), 1);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].byte_len, MSG);
	for (uint32_t i = 0; i < MSG; i++)
		assert_int_equal(buf_b[i], 0x77);
	assert_int_equal(buf_b[7 * SLOT], 0);
	pump_a();
	while (rnic_poll_cq(cq_a, 4, wc) > 0)
		;
	assert_int_equal(rnic_destroy_qp(a), 0);
	assert_int_equal(rnic_destroy_qp(b), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

/*
 * The SRQ's head written past what it holds: the SRQ fails (SRQ_ERR once, bad_queue_index counted), the QP
 * that found it fails and NAKs the request with a remote operational error; another QP of the SRQ finds it
 * failed too. Nothing is placed, nothing crashes.
 */
static void
test_head_past_the_srq(void **state)
{
	struct rnic_srq *srq = new_srq(2);
	struct rnic_srq_priv *s = rnic_srq_priv(srq);
	struct rnic_qp *a1 = new_qp(pd_a, cq_a, NULL), *b1 = new_qp(pd_b, cq_b, srq);
	struct rnic_qp *a2 = new_qp(pd_a, cq_a, NULL), *b2 = new_qp(pd_b, cq_b, srq);
	uint64_t bad_before = test_counter(ctx_b, "bad_queue_index");
	struct rnic_async_event e;
	struct rnic_wc wc[8];
	int srq_err = 0, fatal = 0;

	(void)state;
	connect_pair(a1, b1);
	connect_pair(a2, b2);
	drain_events(ctx_b);
	s->wq.idx->head = s->taken + s->wq.wqe_cnt + 5;
	send_msg(a1, 1, 100, 1);
	send_msg(a2, 2, 100, 2);
	for (int i = 0; i < 20; i++) {
		pump_a();
		pump_b();
	}
	assert_int_equal(rnic_poll_cq(cq_a, 8, wc), 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(wc[i].status, RNIC_WC_REM_OP_ERR);
	while (next_event(ctx_b, &e) == 0) {
		srq_err += e.event_type == RNIC_EVENT_SRQ_ERR;
		fatal += e.event_type == RNIC_EVENT_QP_FATAL;
		if (e.event_type == RNIC_EVENT_SRQ_ERR)
			assert_ptr_equal(e.element.srq, srq);
	}
	assert_int_equal(srq_err, 1);
	assert_int_equal(fatal, 2);
	assert_true(test_counter(ctx_b, "bad_queue_index") >= bad_before + 2);
	assert_int_equal(b1->state, RNIC_QPS_ERR);
	assert_int_equal(b2->state, RNIC_QPS_ERR);
	assert_int_equal(buf_b[0], 0);
	while (rnic_poll_cq(cq_b, 8, wc) > 0)
		assert_int_equal(wc[0].status, RNIC_WC_WR_FLUSH_ERR);
	assert_int_equal(rnic_destroy_qp(a1), 0);
	assert_int_equal(rnic_destroy_qp(b1), 0);
	assert_int_equal(rnic_destroy_qp(a2), 0);
	assert_int_equal(rnic_destroy_qp(b2), 0);
	assert_int_equal(rnic_destroy_srq(srq), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush_in_progress),
		cmocka_unit_test(test_wqe_rewritten_mid_message),
		cmocka_unit_test(test_head_past_the_srq),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests(tests, setup, teardown);
}
