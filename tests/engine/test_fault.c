/* SPDX-License-Identifier: BSD-3-Clause
 * The fault-injection layer: what it does to frames matches its counters exactly, its rates are the ones
 * asked for, corrupted frames are caught by the parser, and a seed repeats a run exactly.
 * Run as: test_fault <EAL args>  (the engine without worker lcores: the test drives the ports itself)
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "rnic.h"
#include "rnic_fault.h"
#include "rnic_priv.h"
#include "rnic_wire.h"
#include "test_env.h"

#define FRAMES 4000

static int g_argc;
static char **g_argv;
static struct rnic_context *ctx;
static uint16_t port_a, port_b;
static struct rte_mempool *pool;

static int
setup(void **state)
{
	struct rnic_device **list;

	(void)state;
	ctx = test_env_open(g_argc, g_argv);
	if (ctx == NULL)
		return -1;
	list = rnic_get_device_list(NULL);
	port_a = list[0]->port_id;
	port_b = list[1]->port_id;
	rnic_free_device_list(list);
	pool = rte_pktmbuf_pool_create("fault_test", 8191, 64, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	return pool != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	rnic_fault_detach_all();
	rte_mempool_free(pool);
	return test_env_close(ctx);
}

/* Send FRAMES frames (PSN = index) from A, and receive at B what the fault layer lets through. */
struct observed {
	uint32_t received;
	uint32_t bad;			/* dropped by the parser */
	uint32_t seen[FRAMES];		/* copies received per PSN */
	uint32_t out_of_order;		/* frames with a PSN below one received before */
	uint32_t order[3 * FRAMES];	/* PSNs in the order received (bad frames: UINT32_MAX) */
};

/* Take what B has received; the number of frames read. */
static uint16_t
receive(struct observed *o, uint32_t *max_psn)
{
	struct rte_mbuf *rx[32];
	uint16_t n = rte_eth_rx_burst(port_b, 0, rx, 32);

	for (uint16_t k = 0; k < n; k++) {
		struct rnic_pkt_desc got;

		if (rnic_pkt_parse_mbuf(rx[k], &got, 1) != RNIC_DROP_NONE) {
			o->bad++;
			o->order[o->received++] = UINT32_MAX;
		} else {
			o->seen[got.psn]++;
			/* PSNs are sent from 0 up: below the highest already seen means it came late. */
			if (*max_psn != UINT32_MAX && got.psn < *max_psn)
				o->out_of_order++;
			if (*max_psn == UINT32_MAX || got.psn > *max_psn)
				*max_psn = got.psn;
			o->order[o->received++] = got.psn;
		}
		rte_pktmbuf_free(rx[k]);
	}
	return n;
}

static void
run(struct observed *o)
{
	static const uint8_t payload[200] = { 7 };
	uint32_t max_psn = UINT32_MAX;

	memset(o, 0, sizeof(*o));
	for (uint32_t i = 0; i < FRAMES; i++) {
		struct rnic_pkt_desc d = { .ip_version = 4, .opcode = RNIC_OP_SEND_ONLY, .pkey = 0xffff, .dqpn = 9,
					   .psn = i, .hop_limit = 64, .payload = payload, .payload_len = 200 };
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

		d.sgid.raw[10] = d.sgid.raw[11] = d.dgid.raw[10] = d.dgid.raw[11] = 0xff;
		assert_non_null(m);
		assert_true(rnic_pkt_build_mbuf(&d, m) > 0);
		assert_int_equal(rte_eth_tx_burst(port_a, 0, &m, 1), 1);
		while (receive(o, &max_psn) != 0)
			;
	}
	/* Held frames come out on idle polls too: drain until the link stays quiet. */
	for (int empty = 0; empty < 200;)
		empty = receive(o, &max_psn) == 0 ? empty + 1 : 0;
}

static void
attach(const char *text)
{
	struct rnic_fault_spec spec;

	rnic_fault_detach_all();
	assert_int_equal(rnic_fault_parse(text, &spec), 0);
	assert_int_equal(rnic_fault_attach(port_b, 2, &spec), 0);
}

static void
test_parse(void **state)
{
	static const char *const bad[] = { "drop=2", "drop=-0.1", "drop=x", "bogus=0.1", "depth=0", "depth=65",
					   "seed=", "drop", "reorder=0.1,,seed=abc", "port=x", "port=-1", "port=8" };
	struct rnic_fault_spec spec;

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(bad); i++)
		if (rnic_fault_parse(bad[i], &spec) == 0)
			fail_msg("accepted '%s'", bad[i]);
	assert_int_equal(rnic_fault_parse("drop=0.01,reorder=0.02,duplicate=0.03,corrupt=0.001,depth=5,seed=9",
					  &spec), 0);
	assert_true(spec.drop == 0.01 && spec.reorder == 0.02 && spec.duplicate == 0.03 && spec.corrupt == 0.001);
	assert_int_equal(spec.depth, 5);
	assert_int_equal(spec.seed, 9);
	assert_int_equal(spec.port, -1);
	assert_int_equal(rnic_fault_parse("port=1,drop=0.5", &spec), 0);
	assert_int_equal(spec.port, 1);
}

/* Per port: a spec naming a device overrides the one for every port there; one naming a device that does
 * not exist is refused. */
static void
test_per_port(void **state)
{
	static const char *const specs[] = { "port=1,duplicate=0.5", "drop=1", "port=1,duplicate=1" };
	static const char *const beyond[] = { "drop=0.1", "port=2,drop=0.1" };
	const uint16_t ports[2] = { port_a, port_b };
	static struct observed o;
	struct rnic_fault_counts ca, cb;
	struct rte_mbuf *m[16];
	uint16_t got = 0;

	(void)state;
	rnic_fault_detach_all();
	assert_int_equal(rnic_fault_attach_specs(beyond, 2, ports, 2, 2), -EINVAL);
	assert_int_equal(rnic_fault_attach_specs(specs, 3, ports, 2, 2), 0);
	/* B's port duplicates every frame (its own spec, the last one naming it) and drops none. */
	run(&o);
	rnic_fault_get_counts(port_b, &cb);
	assert_int_equal(cb.frames, FRAMES);
	assert_int_equal(cb.duplicated, FRAMES);
	assert_int_equal(cb.dropped, 0);
	assert_int_equal(o.received, 2 * FRAMES);
	/* A's port has the spec for every port: it drops everything. */
	assert_int_equal(rte_pktmbuf_alloc_bulk(pool, m, 16), 0);
	for (int i = 0; i < 16; i++)
		rte_pktmbuf_append(m[i], 60);
	assert_int_equal(rte_eth_tx_burst(port_b, 0, m, 16), 16);
	for (int i = 0; i < 100; i++)
		got += rte_eth_rx_burst(port_a, 0, m, 16);
	assert_int_equal(got, 0);
	rnic_fault_get_counts(port_a, &ca);
	assert_int_equal(ca.frames, 16);
	assert_int_equal(ca.dropped, 16);
	rnic_fault_detach_all();
}

/* Drops, duplicates and reordering: every frame accounted for, at the rates asked for. */
static void
test_accounting_and_rates(void **state)
{
	static struct observed o;
	struct rnic_fault_counts c;
	uint32_t missing = 0, extra = 0;

	(void)state;
	attach("drop=0.1,duplicate=0.05,reorder=0.05,depth=3,seed=7");
	run(&o);
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.frames, FRAMES);
	for (uint32_t i = 0; i < FRAMES; i++) {
		missing += o.seen[i] == 0;
		extra += o.seen[i] > 1 ? o.seen[i] - 1 : 0;
	}
	assert_int_equal(o.bad, 0);
	assert_int_equal(missing, c.dropped);
	assert_int_equal(extra, c.duplicated);
	assert_int_equal(o.received, FRAMES - c.dropped + c.duplicated);
	assert_true(o.out_of_order > 0 && o.out_of_order <= c.reordered * 4);
	/* 4000 frames: each rate within a wide margin (more than 4 standard deviations) of the one asked for. */
	assert_in_range(c.dropped, 300, 500);
	assert_in_range(c.duplicated, 120, 280);
	assert_in_range(c.reordered, 120, 280);
}

/* Corruption: the parser catches what the layer damaged (all but a bit in the few fields no check covers). */
static void
test_corruption_is_caught(void **state)
{
	static struct observed o;
	struct rnic_fault_counts c;

	(void)state;
	attach("corrupt=0.2,seed=11");
	run(&o);
	rnic_fault_get_counts(port_b, &c);
	assert_in_range(c.corrupted, 650, 950);
	assert_true(o.bad <= c.corrupted);
	assert_true(o.bad * 100 >= c.corrupted * 95);
	assert_int_equal(o.received, FRAMES);
}

/* The same seed gives the same run; another seed, another. */
static void
test_reproducible(void **state)
{
	static struct observed first, second, other;

	(void)state;
	attach("drop=0.05,duplicate=0.05,reorder=0.05,corrupt=0.02,depth=4,seed=1234");
	run(&first);
	attach("drop=0.05,duplicate=0.05,reorder=0.05,corrupt=0.02,depth=4,seed=1234");
	run(&second);
	assert_int_equal(first.received, second.received);
	assert_memory_equal(first.order, second.order, first.received * sizeof(first.order[0]));
	attach("drop=0.05,duplicate=0.05,reorder=0.05,corrupt=0.02,depth=4,seed=1235");
	run(&other);
	assert_true(other.received != first.received ||
		    memcmp(other.order, first.order, first.received * sizeof(first.order[0])) != 0);
	rnic_fault_detach_all();
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_per_port),
		cmocka_unit_test(test_accounting_and_rates),
		cmocka_unit_test(test_corruption_is_caught),
		cmocka_unit_test(test_reproducible),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("fault", tests, setup, teardown);
}
