/* SPDX-License-Identifier: BSD-3-Clause
 * RC READ at depth over a lossy link (--fault on both ports of the loopback pair): 4 QPs each keep 16 READs
 * of 64 KB outstanding, and every READ must complete once, successfully, with its bytes. Go-back-N sends
 * READs again whole or from their first missing response: duplicates once took responder resources of their
 * own, the next READ was NAKed as one too many, the responder's QP failed and the requester ended in
 * RETRY_EXC_ERR.
 * Run as: test_read_loss <EAL args with a worker lcore> -- --fault SPEC
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
#include "rnic_fault.h"
#include "rnic_priv.h"

#define NQP 4
#define DEPTH 16
#define MSG (64u << 10)
#define READS 96		/* per QP */
#define AREA (DEPTH * MSG)	/* per QP: the READs' targets (A) and their source (B) */

static int g_argc;
static char **g_argv;

static struct test_side A, B;
static struct rnic_qp *qa[NQP], *qb[NQP];	/* A's QPs, B's */

static void
create_qps(struct test_side *s, struct rnic_qp **qp)
{
	for (int i = 0; i < NQP; i++) {
		struct rnic_qp_init_attr ia = { .send_cq = s->cq, .recv_cq = s->cq, .qp_type = RNIC_QPT_RC,
			.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };

		qp[i] = rnic_create_qp(s->pd, &ia);
		assert_non_null(qp[i]);
	}
}

static void
destroy_qps(struct rnic_qp **qp)
{
	for (int i = 0; i < NQP; i++)
		rnic_destroy_qp(qp[i]);
}

static int
setup(void **state)
{
	/* A 4 ms loss timer, READs 16 deep each way (the responder keeps as many resources). */
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0xfffe00, .timeout = 10, .retry_cnt = 7,
					.rnr_retry = 7, .rd_atomic = DEPTH };

	(void)state;
	if (test_sides_start(g_argc, g_argv, &A, &B, NQP * AREA, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ) != 0)
		return -1;
	create_qps(&A, qa);
	create_qps(&B, qb);
	for (int i = 0; i < NQP; i++)
		if (test_connect(qa[i], qb[i]->qp_num, &B.gid, &path) != 0 ||
		    test_connect(qb[i], qa[i]->qp_num, &A.gid, &path) != 0)
			return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	destroy_qps(qa);
	destroy_qps(qb);
	return test_sides_stop(&A, &B);
}

/* READ number n of QP q: slot n % DEPTH of the QP's area, from B's copy of the same slot. */
static void
post_read(int q, uint32_t n)
{
	uint32_t off = (uint32_t)q * AREA + (n % DEPTH) * MSG;
	struct rnic_sge sge = { (uintptr_t)(A.buf + off), MSG, A.mr->lkey };
	struct rnic_send_wr wr = { .wr_id = (uint64_t)q << 32 | n, .opcode = RNIC_WR_RDMA_READ, .sg_list = &sge,
				   .num_sge = 1, .send_flags = RNIC_SEND_SIGNALED }, *bad;

	memset(A.buf + off, 0, MSG);
	wr.wr.rdma.remote_addr = (uintptr_t)(B.buf + off);
	wr.wr.rdma.rkey = B.mr->rkey;
	assert_int_equal(rnic_post_send(qa[q], &wr, &bad), 0);
}

static void
test_read_depth_under_loss(void **state)
{
	uint32_t posted[NQP] = { 0 }, done[NQP] = { 0 }, total = 0;
	time_t deadline = time(NULL) + 60;
	struct rnic_fault_counts fa, fb;

	(void)state;
	for (uint32_t k = 0; k < NQP * AREA; k++)
		B.buf[k] = (uint8_t)(k * 7 + (k >> 12));
	for (int q = 0; q < NQP; q++)
		for (; posted[q] < DEPTH; posted[q]++)
			post_read(q, posted[q]);
	while (total < NQP * READS) {
		struct rnic_wc wc;
		int n = rnic_poll_cq(A.cq, 1, &wc);
		uint32_t q, i, off;

		assert_true(n >= 0);
		if (n == 0) {
			if (time(NULL) > deadline)
				fail_msg("timed out: %u of %u READs", total, NQP * READS);
			continue;
		}
		if (wc.status != RNIC_WC_SUCCESS)
			fail_msg("READ %llx: %s", (unsigned long long)wc.wr_id, rnic_wc_status_str(wc.status));
		q = (uint32_t)(wc.wr_id >> 32);
		i = (uint32_t)wc.wr_id;
		assert_int_equal(i, done[q]);	/* once each, in order */
		off = q * AREA + (i % DEPTH) * MSG;
		if (memcmp(A.buf + off, B.buf + off, MSG) != 0)
			fail_msg("QP %u READ %u: data differs", q, i);
		done[q]++;
		total++;
		if (posted[q] < READS)
			post_read((int)q, posted[q]++);
	}
	rnic_fault_get_counts(rnic_engine_device(0)->port_id, &fa);
	rnic_fault_get_counts(rnic_engine_device(1)->port_id, &fb);
	printf("faults: A dropped %lu reordered %lu, B dropped %lu reordered %lu\n", (unsigned long)fa.dropped,
	       (unsigned long)fa.reordered, (unsigned long)fb.dropped, (unsigned long)fb.reordered);
	assert_true(fa.dropped > 0 && fb.dropped > 0);
	/* The responders never refused a READ. */
	for (int q = 0; q < NQP; q++) {
		struct rnic_qp_counters c;

		assert_int_equal(rnic_query_qp_counters(qb[q], &c), 0);
		assert_int_equal(c.inv_req_naks_sent, 0);
		assert_int_equal(qb[q]->state, RNIC_QPS_RTS);
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_depth_under_loss),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("read-loss", tests, setup, teardown);
}
