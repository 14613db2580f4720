/* SPDX-License-Identifier: BSD-3-Clause
 * Engine, devices, contexts, PDs, AHs and async events.
 * Run as: test_core <EAL args> -- --max-pd 4 (meson passes them).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_lcore.h>

#include "rnic.h"
#include "rnic_priv.h"

static int g_argc;
static char **g_argv;
static struct rnic_device **g_list;
static int g_ndev;

static int
setup(void **state)
{
	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	g_list = rnic_get_device_list(&g_ndev);
	return g_list == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	rnic_free_device_list(g_list);
	return rnic_engine_fini();
}

static void
test_device_list(void **state)
{
	(void)state;
	assert_int_equal(g_ndev, 2);
	assert_string_equal(rnic_get_device_name(g_list[0]), "rnic0");
	assert_string_equal(rnic_get_device_name(g_list[1]), "rnic1");
	assert_null(g_list[2]);
	assert_int_not_equal(rnic_get_device_guid(g_list[0]), rnic_get_device_guid(g_list[1]));
	assert_null(rnic_open_device(NULL));
	assert_int_equal(errno, EINVAL);
}

static void
test_query(void **state)
{
	struct rnic_context *ctx = rnic_open_device(g_list[0]);
	struct rnic_device_attr attr;
	struct rnic_port_attr port;
	union rnic_gid gid;
	static const uint8_t gid0[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [13] = 77, [14] = 0, [15] = 1 };

	(void)state;
	assert_non_null(ctx);
	assert_int_equal(rnic_query_device(ctx, &attr), 0);
	assert_int_equal(attr.max_pd, 4);
	assert_int_equal(attr.phys_port_cnt, 1);
	assert_true(attr.max_qp > 0 && attr.max_cqe > 0 && attr.max_sge > 0 && attr.max_mr > 0);
	assert_int_equal(attr.node_guid, rnic_get_device_guid(g_list[0]));

	assert_int_equal(rnic_query_port(ctx, 1, &port), 0);
	assert_int_equal(port.state, RNIC_PORT_ACTIVE);
	assert_int_equal(port.link_layer, RNIC_LINK_LAYER_ETHERNET);
	assert_int_equal(port.active_mtu, RNIC_MTU_4096);
	assert_int_equal(rnic_query_port(ctx, 2, &port), EINVAL);

	assert_int_equal(rnic_query_gid(ctx, 1, 0, &gid), 0);
	assert_memory_equal(gid.raw, gid0, 16);
	assert_int_equal(rnic_query_gid(ctx, 1, 1, &gid), 0);
	assert_memory_equal(gid.raw, (uint8_t[16]){ 0 }, 16);
	assert_int_equal(rnic_query_gid(ctx, 1, RNIC_GID_TBL_LEN, &gid), EINVAL);
	assert_int_equal(rnic_query_gid(ctx, 1, -1, &gid), EINVAL);
	assert_int_equal(rnic_query_gid(ctx, 0, 0, &gid), EINVAL);
	assert_int_equal(rnic_close_device(ctx), 0);
}

static void
test_pd_limits_and_refs(void **state)
{
	struct rnic_context *ctx = rnic_open_device(g_list[0]);
	struct rnic_pd *pd[5];

	(void)state;
	for (int i = 0; i < 4; i++) {
		pd[i] = rnic_alloc_pd(ctx);
		assert_non_null(pd[i]);
	}
	/* Distinct PD numbers. */
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			assert_int_not_equal(pd[i]->handle, pd[j]->handle);
	pd[4] = rnic_alloc_pd(ctx);
	assert_null(pd[4]);
	assert_int_equal(errno, ENOMEM);

	rnic_pd_get(pd[0]);
	assert_int_equal(rnic_dealloc_pd(pd[0]), EBUSY);
	rnic_pd_put(pd[0]);
	for (int i = 0; i < 4; i++)
		assert_int_equal(rnic_dealloc_pd(pd[i]), 0);
	/* Freed PDs can be allocated again, with new numbers. */
	pd[0] = rnic_alloc_pd(ctx);
	assert_non_null(pd[0]);
	assert_true(pd[0]->handle > 4);
	assert_int_equal(rnic_dealloc_pd(pd[0]), 0);
	assert_null(rnic_alloc_pd(NULL));
	assert_int_equal(rnic_dealloc_pd(NULL), EINVAL);
	assert_int_equal(rnic_close_device(ctx), 0);
}

static void
test_ah(void **state)
{
	struct rnic_context *ctx = rnic_open_device(g_list[0]);
	struct rnic_pd *pd = rnic_alloc_pd(ctx);
	struct rnic_ah_attr attr = { .is_global = 1, .port_num = 1 };
	struct rnic_ah *ah;

	(void)state;
	rnic_query_gid(ctx, 1, 0, &attr.grh.dgid);
	ah = rnic_create_ah(pd, &attr);
	assert_non_null(ah);
	assert_ptr_equal(ah->pd, pd);
	assert_int_equal(rnic_dealloc_pd(pd), EBUSY);

	struct rnic_ah_attr bad = attr;
	bad.is_global = 0;	/* RoCE needs a GRH */
	assert_null(rnic_create_ah(pd, &bad));
	assert_int_equal(errno, EINVAL);
	bad = attr;
	bad.grh.sgid_index = 1;	/* unset GID entry */
	assert_null(rnic_create_ah(pd, &bad));
	bad = attr;
	memset(&bad.grh.dgid, 0, sizeof(bad.grh.dgid));
	assert_null(rnic_create_ah(pd, &bad));
	bad = attr;
	bad.port_num = 2;
	assert_null(rnic_create_ah(pd, &bad));
	assert_int_equal(errno, EINVAL);

	assert_int_equal(rnic_destroy_ah(ah), 0);
	assert_int_equal(rnic_dealloc_pd(pd), 0);
	assert_int_equal(rnic_close_device(ctx), 0);
}

static void
test_async_events(void **state)
{
	struct rnic_context *ctx = rnic_open_device(g_list[1]);
	struct rnic_async_event ev;
	struct rnic_qp fake_qp = { 0 };
	int flags;

	(void)state;
	/* Non-blocking: nothing pending gives EAGAIN, as libibverbs. */
	flags = fcntl(ctx->async_fd, F_GETFL);
	assert_int_equal(fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
	assert_int_equal(rnic_get_async_event(ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);

	assert_int_equal(rnic_async_event_raise(ctx, RNIC_EVENT_QP_FATAL, &fake_qp), 0);
	assert_int_equal(rnic_async_event_raise(ctx, RNIC_EVENT_COMM_EST, &fake_qp), 0);
	assert_int_equal(rnic_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, RNIC_EVENT_QP_FATAL);
	assert_ptr_equal(ev.element.qp, &fake_qp);
	rnic_ack_async_event(&ev);
	assert_int_equal(rnic_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, RNIC_EVENT_COMM_EST);
	rnic_ack_async_event(&ev);
	assert_int_equal(fake_qp.events_completed, 2);
	assert_int_equal(rnic_get_async_event(ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);

	/* A full ring loses the event and says so, never blocks the raiser. */
	int raised = 0;
	while (rnic_async_event_raise(ctx, RNIC_EVENT_SQ_DRAINED, &fake_qp) == 0 && raised < 100000)
		raised++;
	assert_true(raised > 0 && raised < 100000);
	assert_int_equal(rnic_async_event_raise(ctx, RNIC_EVENT_SQ_DRAINED, &fake_qp), -ENOSPC);
	assert_int_equal(rnic_get_async_event(ctx, &ev), 0);
	assert_int_equal(rnic_close_device(ctx), 0);
}

static void
test_strings(void **state)
{
	(void)state;
	assert_string_equal(rnic_wc_status_str(RNIC_WC_REM_ACCESS_ERR), "remote access error");
	assert_string_equal(rnic_wc_status_str(RNIC_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	assert_string_equal(rnic_wc_status_str((enum rnic_wc_status)999), "unknown");
	assert_string_equal(rnic_event_type_str(RNIC_EVENT_CQ_ERR), "CQ error");
	assert_string_equal(rnic_event_type_str((enum rnic_event_type)-1), "unknown");
}

struct counting_stage {
	volatile uint64_t polls;
	volatile unsigned int lcore;
};

static unsigned int
count_poll(void *arg, unsigned int budget)
{
	struct counting_stage *s = arg;

	(void)budget;
	s->lcore = rte_lcore_id();
	s->polls++;
	return 0;
}

static void
test_stages_run_on_workers(void **state)
{
	struct counting_stage cs = { 0, 0 }, on_main = { 0, 0 };
	struct rnic_stage stage = { .name = "count", .poll = count_poll, .arg = &cs };
	struct rnic_stage main_stage = { .name = "count-main", .poll = count_poll, .arg = &on_main };
	unsigned int worker = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);

	(void)state;
	assert_true(worker < RTE_MAX_LCORE);	/* the test runs with two lcores */
	assert_int_equal(rnic_engine_add_stage(RTE_MAX_LCORE, &stage), -EINVAL);
	assert_int_equal(rnic_engine_add_stage(worker, &stage), 0);
	/* the test's map (-l 0,1: every stage on the worker) leaves the application's thread free to sleep */
	assert_int_equal(rnic_engine_manual_progress(), 0);
	assert_int_equal(rnic_engine_add_stage(rte_get_main_lcore(), &main_stage), 0);
	assert_int_equal(rnic_engine_manual_progress(), 1);
	assert_int_equal(rnic_engine_progress(), 0);	/* the engine is not started */
	assert_int_equal(rnic_engine_start(), 0);
	assert_int_equal(rnic_engine_start(), -EBUSY);
	assert_int_equal(rnic_engine_add_stage(worker, &stage), -EBUSY);
	/* Bounded wait for the worker to poll. */
	for (int i = 0; i < 2000 && cs.polls < 1000; i++)
		usleep(1000);
	/* The main lcore's stage runs only when the application calls in (manual progress). */
	assert_int_equal(on_main.polls, 0);
	for (int i = 0; i < 10; i++)
		rnic_engine_progress();
	assert_int_equal(on_main.polls, 10);
	assert_int_equal(on_main.lcore, rte_get_main_lcore());
	assert_int_equal(rnic_engine_stop(), 0);
	assert_true(cs.polls >= 1000);
	assert_int_equal(cs.lcore, worker);
	uint64_t after_stop = cs.polls;
	usleep(10000);
	assert_int_equal(cs.polls, after_stop);
	rnic_engine_progress();
	assert_int_equal(on_main.polls, 10);	/* stopped: progress runs nothing */
}

/*
 * A context that still holds objects is not closed (EBUSY, as libibverbs' providers): nothing is freed, each
 * object still works, and the refusal lasts until the last of them (QP, AH, MR, CQ, completion channel, PD)
 * is destroyed.
 */
static void
test_close_refuses_live_objects(void **state)
{
	struct rnic_context *ctx = rnic_open_device(g_list[0]);
	struct rnic_comp_channel *ch = rnic_create_comp_channel(ctx);
	struct rnic_cq *cq = rnic_create_cq(ctx, 16, NULL, ch, 0);
	struct rnic_pd *pd = rnic_alloc_pd(ctx);
	static uint8_t buf[4096];
	struct rnic_mr *mr = rnic_reg_mr(pd, buf, sizeof(buf), RNIC_ACCESS_LOCAL_WRITE);
	struct rnic_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	struct rnic_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = RNIC_QPT_RC,
					.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						 .max_recv_sge = 1 } };
	struct rnic_qp *qp = rnic_create_qp(pd, &ia);
	struct rnic_ah *ah;
	struct rnic_device_attr attr;
	struct rnic_qp_attr qa;
	struct rnic_wc wc;

	(void)state;
	assert_int_equal(rnic_query_gid(ctx, 1, 0, &ah_attr.grh.dgid), 0);
	ah = rnic_create_ah(pd, &ah_attr);
	assert_true(ch != NULL && cq != NULL && pd != NULL && mr != NULL && qp != NULL && ah != NULL);
	for (int left = 6; left > 0; left--) {
		assert_int_equal(rnic_close_device(ctx), EBUSY);
		assert_int_equal(rnic_engine_fini(), -EBUSY);	/* the context is still open */
		/* Nothing was freed: the context and what is left of its objects still work. */
		assert_int_equal(rnic_query_device(ctx, &attr), 0);
		switch (left) {
		case 6:
			assert_int_equal(rnic_query_qp(qp, &qa, 0, &ia), 0);
			assert_int_equal(rnic_destroy_qp(qp), 0);
			break;
		case 5:
			assert_int_equal(rnic_destroy_ah(ah), 0);
			break;
		case 4:
			assert_int_equal(rnic_dereg_mr(mr), 0);
			break;
		case 3:
			assert_int_equal(rnic_poll_cq(cq, 1, &wc), 0);
			assert_int_equal(rnic_destroy_cq(cq), 0);
			break;
		case 2:
			assert_int_equal(rnic_destroy_comp_channel(ch), 0);
			break;
		default:
			assert_int_equal(rnic_dealloc_pd(pd), 0);
		}
	}
	assert_int_equal(rnic_close_device(ctx), 0);
}

static void
test_fini_refuses_open_context(void **state)
{
	struct rnic_context *ctx = rnic_open_device(g_list[0]);

	(void)state;
	assert_int_equal(rnic_engine_fini(), -EBUSY);
	assert_int_equal(rnic_close_device(ctx), 0);
	assert_int_equal(rnic_engine_init(g_argc, g_argv), -EALREADY);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_list),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_pd_limits_and_refs),
		cmocka_unit_test(test_ah),
		cmocka_unit_test(test_async_events),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_stages_run_on_workers),
		cmocka_unit_test(test_close_refuses_live_objects),
		cmocka_unit_test(test_fini_refuses_open_context),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("core", tests, setup, teardown);
}
