/* SPDX-License-Identifier: BSD-3-Clause
 * Deferred reclamation (rnic_engine_retire, doc/architecture.md): an MR or QP destroyed while an engine lcore
 * is held up past rnic_engine_quiesce's second is released only once that lcore has passed a quiescent
 * point, never freed under it. An lcore is held up by a stage of the test's own that spins.
 * Run as: test_rcu <EAL args with a worker lcore> (meson passes them).
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
#include <rte_lcore.h>

#include "rnic.h"
#include "rnic_priv.h"

#define STALL_LIMIT_S 10	/* a stalled stage gives up after this long whatever the test does */

static int g_argc;
static char **g_argv;

/* A stage that, while stall is set, spins without returning: its lcore reports no quiescent state. */
struct stalling_stage {
	volatile int stall;
	volatile int stalled;	/* the stage is spinning now */
};

static unsigned int
stall_poll(void *arg, unsigned int budget)
{
	struct stalling_stage *s = arg;
	uint64_t limit = rte_get_timer_cycles() + STALL_LIMIT_S * rte_get_timer_hz();

	(void)budget;
	if (!s->stall)
		return 0;
	s->stalled = 1;
	while (s->stall && rte_get_timer_cycles() < limit)
		;
	s->stalled = 0;
	return 1;
}

struct fixture {
	struct stalling_stage stage;
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	uint8_t buf[4096];
};

static int
setup(void **state)
{
	static struct fixture f;
	struct rnic_stage stage = { .name = "stall", .poll = stall_poll, .arg = &f.stage };
	struct rnic_device **list;

	memset(&f, 0, sizeof(f));
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	if (rnic_engine_add_stage(rte_get_next_lcore(rte_get_main_lcore(), 1, 0), &stage) != 0)
		return -1;
	list = rnic_get_device_list(NULL);
	f.ctx = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	rnic_free_device_list(list);
	f.pd = f.ctx != NULL ? rnic_alloc_pd(f.ctx) : NULL;
	f.cq = f.pd != NULL ? rnic_create_cq(f.ctx, 16, NULL, NULL, 0) : NULL;
	if (f.cq == NULL || rnic_engine_start() != 0)
		return -1;
	*state = &f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	f->stage.stall = 0;
	rnic_destroy_cq(f->cq);
	rnic_dealloc_pd(f->pd);
	rnic_close_device(f->ctx);
	return rnic_engine_fini();
}

/* Hold the worker lcore in the stalling stage (bounded wait for it to get there). */
static void
stall(struct stalling_stage *s)
{
	s->stall = 1;
	for (int i = 0; i < 2000 && !s->stalled; i++)
		usleep(1000);
	assert_true(s->stalled);
}

/* Let it go; rnic_engine_quiesce then succeeds and runs the deferred releases. */
static void
release(struct stalling_stage *s)
{
	s->stall = 0;
	for (int i = 0; i < 2000 && s->stalled; i++)
		usleep(1000);
	assert_false(s->stalled);
	assert_int_equal(rnic_engine_quiesce(), 0);
}

/* A PD of its own, with an MR over the fixture's buffer in it. */
static struct rnic_mr *
pd_with_mr(struct fixture *f, struct rnic_pd **pd)
{
	struct rnic_mr *mr;

	*pd = rnic_alloc_pd(f->ctx);
	assert_non_null(*pd);
	mr = rnic_reg_mr(*pd, f->buf, sizeof(f->buf), RNIC_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	return mr;
}

/* The MR's PD reference (and MTT, key slot, memory) stays until the lcore has passed a quiescent point. */
static void
test_dereg_mr_deferred(void **state)
{
	struct fixture *f = *state;
	struct rnic_pd *pd;
	struct rnic_mr *mr = pd_with_mr(f, &pd);

	stall(&f->stage);
	assert_int_equal(rnic_engine_quiesce(), -ETIMEDOUT);
	assert_int_equal(rnic_dereg_mr(mr), 0);
	/* The region is not released yet: its PD is still referenced. */
	assert_int_equal(rnic_dealloc_pd(pd), EBUSY);
	release(&f->stage);
	assert_int_equal(rnic_dealloc_pd(pd), 0);
}

/* An RC QP in PD pd on a new CQ of its own (*cq). */
static struct rnic_qp *
qp_on_new_cq(struct fixture *f, struct rnic_pd *pd, struct rnic_cq **cq)
{
	struct rnic_qp_init_attr ia = {
		.qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rnic_qp *qp;

	*cq = rnic_create_cq(f->ctx, 16, NULL, NULL, 0);
	assert_non_null(*cq);
	ia.send_cq = ia.recv_cq = *cq;
	qp = rnic_create_qp(pd, &ia);
	assert_non_null(qp);
	return qp;
}

/* The destroyed QP keeps its CQ and PD references until the lcore has passed a quiescent point. */
static void
test_destroy_qp_deferred(void **state)
{
	struct fixture *f = *state;
	struct rnic_cq *cq;
	struct rnic_qp *qp = qp_on_new_cq(f, f->pd, &cq);

	stall(&f->stage);
	assert_int_equal(rnic_destroy_qp(qp), 0);
	assert_int_equal(rnic_destroy_cq(cq), EBUSY);
	release(&f->stage);
	assert_int_equal(rnic_destroy_cq(cq), 0);
}

/*
 * A program told its QP is gone destroys the QP's CQ and PD next, knowing nothing of the engine's lcores
 * (perftest through rnicd under the sanitizers: "Failed to destroy CQ"): once the lcore is back, the
 * destroys run the deferred release themselves, no quiesce of anyone else's needed.
 */
static void
test_destroy_cq_pd_after_deferred_qp(void **state)
{
	struct fixture *f = *state;
	struct rnic_pd *pd = rnic_alloc_pd(f->ctx);
	struct rnic_cq *cq;
	struct rnic_qp *qp;

	assert_non_null(pd);
	qp = qp_on_new_cq(f, pd, &cq);
	stall(&f->stage);
	assert_int_equal(rnic_destroy_qp(qp), 0);	/* deferred: the lcore holds up past the second */
	f->stage.stall = 0;
	for (int i = 0; i < 2000 && f->stage.stalled; i++)
		usleep(1000);
	assert_false(f->stage.stalled);
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_dealloc_pd(pd), 0);
}

/* Without a held-up lcore the release is immediate, as before. */
static void
test_dereg_mr_immediate(void **state)
{
	struct fixture *f = *state;
	struct rnic_pd *pd;
	struct rnic_mr *mr = pd_with_mr(f, &pd);

	assert_int_equal(rnic_dereg_mr(mr), 0);
	assert_int_equal(rnic_dealloc_pd(pd), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dereg_mr_immediate),
		cmocka_unit_test(test_dereg_mr_deferred),
		cmocka_unit_test(test_destroy_qp_deferred),
		cmocka_unit_test(test_destroy_cq_pd_after_deferred_qp),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests(tests, setup, teardown);
}
