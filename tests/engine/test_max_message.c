/* SPDX-License-Identifier: BSD-3-Clause
 * max_msg_sz end to end: one RC WRITE of 2^31 bytes (the port's max_msg_sz) from a single SGE between the
 * two devices of the loopback pair, and the boundary around it. A length with bit 31 set once read as an
 * inline WQE of 0 bytes: the WRITE completed successfully and moved nothing.
 * The regions are mapped without reserve: the source's pages are read as zero but for a few marked ones,
 * so only the target (2 GiB, for the length of the test) takes memory.
 * Run as: test_max_message <EAL args with a worker lcore>
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <cmocka.h>

#include <rte_common.h>

#include "rnic.h"
#include "test_env.h"

#define MAX_MSG (1ull << 31)

static int g_argc;
static char **g_argv;

struct side {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
	uint8_t *buf;
	struct rnic_mr *mr;
	union rnic_gid gid;
};

static struct side A, B;

static void
open_side(struct side *s, struct rnic_device *dev)
{
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_RC,
					.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 2,
						 .max_recv_sge = 1 } };

	s->ctx = rnic_open_device(dev);
	assert_non_null(s->ctx);
	s->pd = rnic_alloc_pd(s->ctx);
	s->cq = rnic_create_cq(s->ctx, 16, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = rnic_create_qp(s->pd, &ia);
	s->buf = mmap(NULL, MAX_MSG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(s->buf != MAP_FAILED && s->qp != NULL);
	madvise(s->buf, MAX_MSG, MADV_HUGEPAGE);	/* 2 MB pages where the kernel has them: fewer faults */
	s->mr = rnic_reg_mr(s->pd, s->buf, MAX_MSG, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	assert_non_null(s->mr);
	assert_int_equal(rnic_query_gid(s->ctx, 1, 0, &s->gid), 0);
}

static void
close_side(struct side *s)
{
	assert_int_equal(rnic_destroy_qp(s->qp), 0);
	assert_int_equal(rnic_dereg_mr(s->mr), 0);
	munmap(s->buf, MAX_MSG);
	assert_int_equal(rnic_destroy_cq(s->cq), 0);
	assert_int_equal(rnic_dealloc_pd(s->pd), 0);
	assert_int_equal(rnic_close_device(s->ctx), 0);
}

static int
setup(void **state)
{
	const struct test_path path = { .mtu = RNIC_MTU_4096, .psn = 0, .timeout = 14, .retry_cnt = 7 };
	struct rnic_device **list;

	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	open_side(&A, list[0]);
	open_side(&B, list[1]);
	rnic_free_device_list(list);
	if (test_connect(A.qp, B.qp->qp_num, &B.gid, &path) != 0 ||
	    test_connect(B.qp, A.qp->qp_num, &A.gid, &path) != 0)
		return -1;
	return rnic_engine_start();
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	close_side(&A);
	close_side(&B);
	return rnic_engine_fini();
}

static void
test_write_max_message(void **state)
{
	static const uint64_t marks[] = { 0, 4095, 1ull << 30, MAX_MSG - 4096, MAX_MSG - 1 };
	struct rnic_sge sge[2] = { { (uintptr_t)A.buf, (uint32_t)MAX_MSG, A.mr->lkey },
				   { (uintptr_t)A.buf, 1, A.mr->lkey } };
	struct rnic_send_wr wr = { .wr_id = 31, .opcode = RNIC_WR_RDMA_WRITE, .sg_list = sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;
	struct rnic_port_attr port;
	struct rnic_wc wc;
	time_t deadline;
	int n;

	(void)state;
	assert_int_equal(rnic_query_port(A.ctx, 1, &port), 0);
	assert_int_equal(port.max_msg_sz, MAX_MSG);
	for (unsigned int i = 0; i < RTE_DIM(marks); i++) {
		A.buf[marks[i]] = (uint8_t)(0x11 * (i + 1));
		B.buf[marks[i]] = 0xee;
	}
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf;
	wr.wr.rdma.rkey = B.mr->rkey;
	/* One byte over max_msg_sz is refused at post time. */
	wr.num_sge = 2;
	assert_int_equal(rnic_post_send(A.qp, &wr, &bad), EINVAL);
	wr.num_sge = 1;
	assert_int_equal(rnic_post_send(A.qp, &wr, &bad), 0);
	deadline = time(NULL) + 120;
	while ((n = rnic_poll_cq(A.cq, 1, &wc)) == 0)
		assert_true(time(NULL) < deadline);
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.byte_len, MAX_MSG);
	for (unsigned int i = 0; i < RTE_DIM(marks); i++)
		assert_int_equal(B.buf[marks[i]], 0x11 * (i + 1));
	assert_int_equal(memcmp(A.buf, B.buf, MAX_MSG), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_max_message),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("max-message", tests, setup, teardown);
}
