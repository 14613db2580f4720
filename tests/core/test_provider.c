/* SPDX-License-Identifier: BSD-3-Clause
 * The verbs' front door (rnic_provider.h): every control verb checks its arguments, then calls the
 * provider of the context's device, whichever it is; the device list is the process's provider's. A
 * recording provider stands in for the engine and rnicd here, so no EAL is needed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rnic_priv.h"
#include "rnic_qp.h"

enum op {
	OP_OPEN, OP_CLOSE, OP_QUERY_PORT, OP_COUNTERS, OP_ASYNC, OP_ALLOC_PD, OP_DEALLOC_PD, OP_REG_MR, OP_DEREG_MR,
	OP_CHANNEL, OP_CREATE_CQ, OP_DESTROY_CQ, OP_CREATE_QP, OP_MODIFY_QP, OP_QUERY_QP, OP_DESTROY_QP,
	OP_QP_COUNTERS, OP_MAX
};

static unsigned int calls[OP_MAX];
static struct rnic_device dev;
static struct rnic_pd the_pd;
static struct rnic_mr the_mr;
static struct rnic_cq the_cq;
/* rnic_query_qp reads the library's side of a QP after the provider: a provider's QPs are rnic_qp_priv. */
static struct rnic_qp_priv the_qp_priv;
#define the_qp (the_qp_priv.pub)

static struct rnic_context *
fake_open(struct rnic_device *d)
{
	struct rnic_context_priv *ctx = calloc(1, sizeof(*ctx));

	calls[OP_OPEN]++;
	ctx->dev = d;
	ctx->pub.device = d;
	ctx->pub.num_comp_vectors = 1;
	ctx->pub.async_fd = -1;
	return &ctx->pub;
}

static int
fake_close(struct rnic_context *ctx)
{
	calls[OP_CLOSE]++;
	free(ctx);
	return 0;
}

static int
fake_query_port(struct rnic_context *ctx, struct rnic_port_attr *attr)
{
	(void)ctx;
	calls[OP_QUERY_PORT]++;
	memset(attr, 0, sizeof(*attr));
	attr->active_mtu = RNIC_MTU_2048;
	return 0;
}

static int
fake_counters(struct rnic_context *ctx, struct rnic_counter *c, int n)
{
	(void)ctx, (void)c, (void)n;
	calls[OP_COUNTERS]++;
	return 7;
}

static int
fake_async(struct rnic_context *ctx, struct rnic_async_event *ev)
{
	(void)ctx, (void)ev;
	calls[OP_ASYNC]++;
	errno = EAGAIN;
	return -1;
}

static struct rnic_pd *
fake_alloc_pd(struct rnic_context *ctx)
{
	calls[OP_ALLOC_PD]++;
	the_pd.context = ctx;
	return &the_pd;
}

static int
fake_dealloc_pd(struct rnic_pd *pd)
{
	(void)pd;
	calls[OP_DEALLOC_PD]++;
	return 0;
}

static struct rnic_mr *
fake_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access)
{
	(void)addr, (void)length, (void)access;
	calls[OP_REG_MR]++;
	the_mr.context = pd->context;
	the_mr.pd = pd;
	return &the_mr;
}

static int
fake_dereg_mr(struct rnic_mr *mr)
{
	(void)mr;
	calls[OP_DEREG_MR]++;
	return 0;
}

static struct rnic_comp_channel *
fake_channel(struct rnic_context *ctx)
{
	(void)ctx;
	calls[OP_CHANNEL]++;
	errno = ENOTSUP;
	return NULL;
}

/* No channel is ever made (fake_channel): these two are never reached, but every member is set. */
static int
fake_destroy_channel(struct rnic_comp_channel *ch)
{
	(void)ch;
	return ENOTSUP;
}

static int
fake_cq_event(struct rnic_comp_channel *ch, struct rnic_cq **cq, void **cq_context)
{
	(void)ch;
	(void)cq;
	(void)cq_context;
	errno = ENOTSUP;
	return -1;
}

static void
fake_deliver_cq_event(struct rnic_cq *cq)
{
	(void)cq;
}

static struct rnic_cq *
fake_create_cq(struct rnic_context *ctx, int cqe, void *cq_context, struct rnic_comp_channel *ch, int vector)
{
	(void)cq_context, (void)ch, (void)vector;
	calls[OP_CREATE_CQ]++;
	the_cq.context = ctx;
	the_cq.cqe = cqe;
	return &the_cq;
}

static int
fake_destroy_cq(struct rnic_cq *cq)
{
	(void)cq;
	calls[OP_DESTROY_CQ]++;
	return 0;
}

static struct rnic_qp *
fake_create_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia)
{
	calls[OP_CREATE_QP]++;
	the_qp.context = pd->context;
	the_qp.pd = pd;
	the_qp.send_cq = ia->send_cq;
	the_qp.recv_cq = ia->recv_cq;
	the_qp.qp_type = ia->qp_type;
	return &the_qp;
}

static int
fake_modify_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr, int mask)
{
	(void)qp, (void)attr, (void)mask;
	calls[OP_MODIFY_QP]++;
	return 0;
}

static int
fake_query_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr)
{
	(void)qp;
	calls[OP_QUERY_QP]++;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = RNIC_QPS_INIT;
	return 0;
}

static int
fake_destroy_qp(struct rnic_qp *qp)
{
	(void)qp;
	calls[OP_DESTROY_QP]++;
	return 0;
}

static int
fake_qp_counters(struct rnic_qp *qp, struct rnic_qp_counters *c)
{
	(void)qp;
	calls[OP_QP_COUNTERS]++;
	memset(c, 0, sizeof(*c));
	return 0;
}

static const struct rnic_provider_ops fake_ops = {
	.name = "fake",
	.open_device = fake_open,
	.close_device = fake_close,
	.query_port = fake_query_port,
	.query_device_counters = fake_counters,
	.get_async_event = fake_async,
	.alloc_pd = fake_alloc_pd,
	.dealloc_pd = fake_dealloc_pd,
	.reg_mr = fake_reg_mr,
	.dereg_mr = fake_dereg_mr,
	.create_comp_channel = fake_channel,
	.destroy_comp_channel = fake_destroy_channel,
	.get_cq_event = fake_cq_event,
	.deliver_cq_event = fake_deliver_cq_event,
	.create_cq = fake_create_cq,
	.destroy_cq = fake_destroy_cq,
	.create_qp = fake_create_qp,
	.modify_qp = fake_modify_qp,
	.query_qp = fake_query_qp,
	.destroy_qp = fake_destroy_qp,
	.query_qp_counters = fake_qp_counters,
};

static int
fake_device_count(void)
{
	return 1;
}

static struct rnic_device *
fake_device(int index)
{
	return index == 0 ? &dev : NULL;
}

static const struct rnic_provider fake_provider = {
	.name = "fake",
	.remote = 1,
	.device_count = fake_device_count,
	.device = fake_device,
};

static int
setup(void **state)
{
	(void)state;
	memset(calls, 0, sizeof(calls));
	memset(&dev, 0, sizeof(dev));
	snprintf(dev.name, sizeof(dev.name), "fake0");
	dev.ops = &fake_ops;
	dev.lim.max_cqe = 64;
	dev.lim.max_qp_wr = 64;
	dev.lim.max_sge = 4;
	dev.lim.max_inline_data = 64;
	dev.lim.max_mr_size = 1u << 20;
	rnic_provider_set(&fake_provider);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rnic_provider_set(NULL);
	return 0;
}

/* No provider (before rnic_engine_init): no devices. The provider's list otherwise. */
static void
test_device_list(void **state)
{
	struct rnic_device **list;
	int n = -1;

	(void)state;
	rnic_provider_set(NULL);
	list = rnic_get_device_list(&n);
	assert_non_null(list);
	assert_int_equal(n, 0);
	assert_null(list[0]);
	rnic_free_device_list(list);
	rnic_provider_set(&fake_provider);
	list = rnic_get_device_list(&n);
	assert_int_equal(n, 1);
	assert_ptr_equal(list[0], &dev);
	assert_null(list[1]);
	rnic_free_device_list(list);
	/* The stage latencies are the engine's, and this provider's engine is elsewhere. */
	assert_int_equal(rnic_query_stage_latency(NULL, 0), -ENOTSUP);
}

/* Every control verb reaches the device's provider, once, after its own argument checks. */
static void
test_dispatch(void **state)
{
	static char buf[4096];
	struct rnic_port_attr port;
	struct rnic_async_event ev;
	struct rnic_qp_attr attr = { 0 };
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_RC, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
							    .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp_counters qc;
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *qp;

	(void)state;
	ctx = rnic_open_device(&dev);
	assert_non_null(ctx);
	assert_int_equal(rnic_query_port(ctx, 1, &port), 0);
	assert_int_equal(port.active_mtu, RNIC_MTU_2048);
	assert_int_equal(rnic_query_port(ctx, 2, &port), EINVAL);	/* checked before the provider */
	assert_int_equal(rnic_query_device_counters(ctx, NULL, 0), 7);
	assert_int_equal(rnic_get_async_event(ctx, &ev), -1);
	assert_null(rnic_create_comp_channel(ctx));
	assert_int_equal(errno, ENOTSUP);
	pd = rnic_alloc_pd(ctx);
	assert_ptr_equal(pd, &the_pd);
	assert_ptr_equal(rnic_reg_mr(pd, buf, sizeof(buf), RNIC_ACCESS_LOCAL_WRITE), &the_mr);
	cq = rnic_create_cq(ctx, 16, NULL, NULL, 0);
	assert_ptr_equal(cq, &the_cq);
	assert_null(rnic_create_cq(ctx, 65, NULL, NULL, 0));		/* over max_cqe: not the provider's */
	assert_int_equal(errno, EINVAL);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = rnic_create_qp(pd, &ia);
	assert_ptr_equal(qp, &the_qp);
	attr.qp_state = RNIC_QPS_INIT;
	assert_int_equal(rnic_modify_qp(qp, &attr, RNIC_QP_STATE), 0);
	assert_int_equal(rnic_query_qp(qp, &attr, 0, &ia), 0);
	assert_int_equal(attr.qp_state, RNIC_QPS_INIT);
	assert_int_equal(rnic_query_qp_counters(qp, &qc), 0);
	assert_int_equal(rnic_destroy_qp(qp), 0);
	assert_int_equal(rnic_dereg_mr(&the_mr), 0);
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_dealloc_pd(pd), 0);
	assert_int_equal(rnic_close_device(ctx), 0);
	for (int op = 0; op < OP_MAX; op++)
		assert_int_equal(calls[op], 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_device_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dispatch, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
