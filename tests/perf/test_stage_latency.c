/* SPDX-License-Identifier: BSD-3-Clause
 * The per-stage latency rnic-perf reports, through the API: rnic_query_device_stage_latency counts each
 * device's own stages (WRITEs from rnic0 to rnic1 are rnic0's requester WQEs and rnic1's responder frames,
 * never both devices' summed), the devices add up to rnic_query_stage_latency, and rnic_latency_bucket_ns
 * gives buckets that tile the time axis and hold the quantiles rnic_latency_quantile_ns reads from them.
 * Run as: test_stage_latency <EAL args with a worker lcore>
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "rnic.h"
#include "test_env.h"

#define WRITES 300
#define MSG 64
#define MAX_STAGES 8

static int g_argc;
static char **g_argv;

/* One end: a device with a PD, a CQ, a buffer and an RC QP. */
struct end {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	uint8_t *buf;
	struct rnic_mr *mr;
	struct rnic_qp *qp;
	union rnic_gid gid;
};

static struct end E[2];

static void
open_end(struct end *e, struct rnic_device *dev)
{
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_RC,
					.cap = { .max_send_wr = 64, .max_recv_wr = 1, .max_send_sge = 1,
						 .max_recv_sge = 1 } };

	e->ctx = rnic_open_device(dev);
	assert_non_null(e->ctx);
	e->pd = rnic_alloc_pd(e->ctx);
	e->cq = rnic_create_cq(e->ctx, 256, NULL, NULL, 0);
	e->buf = rnic_alloc_buf(4096);
	assert_true(e->pd != NULL && e->cq != NULL && e->buf != NULL);
	e->mr = rnic_reg_mr(e->pd, e->buf, 4096, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = rnic_create_qp(e->pd, &ia);
	assert_true(e->mr != NULL && e->qp != NULL);
	assert_int_equal(rnic_query_gid(e->ctx, 1, 0, &e->gid), 0);
}

static int
setup(void **state)
{
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0x10, .timeout = 18, .retry_cnt = 7 };
	struct rnic_device **list;

	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	open_end(&E[0], list[0]);
	open_end(&E[1], list[1]);
	rnic_free_device_list(list);
	assert_int_equal(test_connect(E[0].qp, E[1].qp->qp_num, &E[1].gid, &path), 0);
	assert_int_equal(test_connect(E[1].qp, E[0].qp->qp_num, &E[0].gid, &path), 0);
	return rnic_engine_start();
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	for (int i = 0; i < 2; i++) {
		rnic_destroy_qp(E[i].qp);
		rnic_dereg_mr(E[i].mr);
		rnic_free_buf(E[i].buf);
		rnic_destroy_cq(E[i].cq);
		rnic_dealloc_pd(E[i].pd);
		rnic_close_device(E[i].ctx);
	}
	return rnic_engine_fini();
}

/* WRITES signaled 64-byte WRITEs from end 0 to end 1, each completed before the next (bounded wait). */
static void
write_all(void)
{
	struct rnic_sge sge = { (uintptr_t)E[0].buf, MSG, E[0].mr->lkey };
	time_t t0 = time(NULL);

	for (int i = 0; i < WRITES; i++) {
		struct rnic_send_wr wr = { .wr_id = (uint64_t)i, .opcode = RNIC_WR_RDMA_WRITE, .sg_list = &sge,
					   .num_sge = 1, .send_flags = RNIC_SEND_SIGNALED }, *bad;
		struct rnic_wc wc;
		int n;

		wr.wr.rdma.remote_addr = (uintptr_t)E[1].buf;
		wr.wr.rdma.rkey = E[1].mr->rkey;
		assert_int_equal(rnic_post_send(E[0].qp, &wr, &bad), 0);
		while ((n = rnic_poll_cq(E[0].cq, 1, &wc)) == 0)
			if (time(NULL) - t0 > 20)
				fail_msg("WRITE %d: no completion in 20 s", i);
		assert_int_equal(n, 1);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	}
}

/* The stages of one device (or, ctx NULL, of all) after minus before, by stage name. */
struct snapshot {
	int n;
	struct rnic_stage_latency s[MAX_STAGES];
};

static void
take(struct snapshot *snap, struct rnic_context *ctx)
{
	snap->n = ctx != NULL ? rnic_query_device_stage_latency(ctx, snap->s, MAX_STAGES) :
		  rnic_query_stage_latency(snap->s, MAX_STAGES);
	assert_true(snap->n >= 5 && snap->n <= MAX_STAGES);
}

static void
since(struct snapshot *after, const struct snapshot *before)
{
	for (int k = 0; k < after->n; k++) {
		rnic_latency_hist_sub(&after->s[k].queued, &before->s[k].queued);
		rnic_latency_hist_sub(&after->s[k].busy, &before->s[k].busy);
	}
}

static uint64_t
busy(const struct snapshot *snap, const char *stage)
{
	for (int k = 0; k < snap->n; k++)
		if (strcmp(snap->s[k].stage, stage) == 0)
			return snap->s[k].busy.count;
	fail_msg("no stage %s", stage);
	return 0;
}

static void
test_per_device(void **state)
{
	static struct snapshot before[3], after[3];

	(void)state;
	for (int i = 0; i < 3; i++)
		take(&before[i], i < 2 ? E[i].ctx : NULL);
	write_all();
	for (int i = 0; i < 3; i++) {
		take(&after[i], i < 2 ? E[i].ctx : NULL);
		since(&after[i], &before[i]);
	}
	/* The sender's requester started every WRITE, the receiver's none; the receiver's responder took every
	 * frame (one each: 64 bytes), the sender's none. */
	assert_int_equal(busy(&after[0], "requester"), WRITES);
	assert_int_equal(busy(&after[1], "requester"), 0);
	assert_int_equal(busy(&after[1], "responder"), WRITES);
	assert_int_equal(busy(&after[0], "responder"), 0);
	assert_true(busy(&after[0], "completer") >= 1 && busy(&after[1], "completer") == 0);
	/* Every stage of the two devices adds up to the engine's (the pair is all the engine has). */
	for (int k = 0; k < after[2].n; k++) {
		assert_string_equal(after[0].s[k].stage, after[2].s[k].stage);
		assert_int_equal(after[0].s[k].busy.count + after[1].s[k].busy.count, after[2].s[k].busy.count);
		assert_int_equal(after[0].s[k].queued.count + after[1].s[k].queued.count, after[2].s[k].queued.count);
	}
}

static void
test_bad_arguments(void **state)
{
	struct rnic_stage_latency s[MAX_STAGES];
	double lo, hi;

	(void)state;
	assert_int_equal(rnic_query_device_stage_latency(NULL, s, MAX_STAGES), -EINVAL);
	assert_int_equal(rnic_query_device_stage_latency(E[0].ctx, NULL, MAX_STAGES), -EINVAL);
	assert_int_equal(rnic_query_device_stage_latency(E[0].ctx, s, -1), -EINVAL);
	assert_int_equal(rnic_latency_bucket_ns(RNIC_LAT_BUCKETS, &lo, &hi), -EINVAL);
	assert_int_equal(rnic_latency_bucket_ns(0, NULL, &hi), -EINVAL);
	assert_int_equal(rnic_latency_bucket_ns(0, &lo, NULL), -EINVAL);
}

/* The buckets cover [0, ...) without gap or overlap, each wider than none; a histogram whose samples all
 * lie in one bucket has its quantiles in that bucket. */
static void
test_bucket_bounds(void **state)
{
	static struct rnic_latency_hist h;
	double prev_hi = 0;

	(void)state;
	for (unsigned int b = 0; b < RNIC_LAT_BUCKETS; b++) {
		double lo, hi, q;

		assert_int_equal(rnic_latency_bucket_ns(b, &lo, &hi), 0);
		assert_true(hi > lo);
		assert_true(fabs(lo - prev_hi) <= 1e-9 * hi);
		prev_hi = hi;
		memset(&h, 0, sizeof(h));
		h.count = h.bucket[b] = 10;
		q = rnic_latency_quantile_ns(&h, 0.5);
		if (q < lo || q > hi)
			fail_msg("bucket %u: [%.9g, %.9g) ns, its quantile %.9g ns", b, lo, hi, q);
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_device),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_bucket_bounds),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("stage_latency", tests, setup, teardown);
}
