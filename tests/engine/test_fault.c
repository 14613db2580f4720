/* SPDX-License-Identifier: BSD-3-Clause
 * The fault-injection layer frame by frame: what it does to frames matches its counters exactly, its rates are
 * the ones asked for, corrupted frames are caught by the parser, a seed repeats a run exactly; burst loss
 * comes in bursts, only= spares the other kind, held frames wait their frames or their time, the link is down
 * exactly when asked, the rate limit lets through its rate and tail-drops beyond its queue (time stepped by
 * hand through rnic_fault_set_clock).
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

/* Take what B's RX queue has received, at most max frames; the number of frames read. */
static uint16_t
receive_on(struct observed *o, uint32_t *max_psn, uint16_t queue, uint16_t max)
{
	struct rte_mbuf *rx[32];
	uint16_t n = rte_eth_rx_burst(port_b, queue, rx, RTE_MIN(max, (uint16_t)RTE_DIM(rx)));

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

static uint16_t
receive(struct observed *o, uint32_t *max_psn)
{
	return receive_on(o, max_psn, 0, 32);
}

/* A RoCEv2 frame from A with this PSN: a SEND (a request) with 200 bytes, or an ACK (a response). */
/* A frame sent by A on TX queue queue: the loopback pair's ring for it ends at B's RX queue of that number. */
static void
send_frame_on(uint32_t psn, int response, uint16_t queue)
{
	static const uint8_t payload[200] = { 7 };
	struct rnic_pkt_desc d = { .ip_version = 4, .opcode = RNIC_OP_SEND_ONLY, .pkey = 0xffff, .dqpn = 9,
				   .psn = psn, .hop_limit = 64, .payload = payload, .payload_len = 200 };
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	if (response) {
		d.opcode = RNIC_OP_ACKNOWLEDGE;
		d.payload = NULL;
		d.payload_len = 0;
	}
	d.sgid.raw[10] = d.sgid.raw[11] = d.dgid.raw[10] = d.dgid.raw[11] = 0xff;
	assert_non_null(m);
	assert_true(rnic_pkt_build_mbuf(&d, m) > 0);
	assert_int_equal(rte_eth_tx_burst(port_a, queue, &m, 1), 1);
}

static void
send_frame(uint32_t psn, int response)
{
	send_frame_on(psn, response, 0);
}

/* Held frames come out on idle polls too: drain until the link stays quiet. */
static void
drain_quiet(struct observed *o, uint32_t *max_psn)
{
	for (int empty = 0; empty < 200;)
		empty = receive(o, max_psn) == 0 ? empty + 1 : 0;
}

/* FRAMES frames, PSN = index; every response_every-th one an ACK (0: none). */
static void
run_mixed(struct observed *o, uint32_t response_every)
{
	uint32_t max_psn = UINT32_MAX;

	memset(o, 0, sizeof(*o));
	for (uint32_t i = 0; i < FRAMES; i++) {
		send_frame(i, response_every != 0 && i % response_every == 0);
		while (receive(o, &max_psn) != 0)
			;
	}
	drain_quiet(o, &max_psn);
}

static void
run(struct observed *o)
{
	run_mixed(o, 0);
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
	static const char *const bad[] = {
		"drop=2", "drop=-0.1", "drop=x", "bogus=0.1", "depth=0", "depth=65", "seed=", "drop", "reorder=0.1,,seed=abc",
		"port=x", "port=-1", "port=8", "port=1x", "seed=-1",
		/* each name that needs another, alone; values out of range */
		"ge_p=0.1", "ge_r=0.5", "ge_good=0.1", "ge_p=0.1,ge_r=0.5,ge_bad=2", "ge_p=0.1,ge_r=-1",
		"delay=10", "depth=3", "reorder=0.1,delay=0", "reorder=0.1,delay=x", "reorder=0.1,delay=10000001",
		"down=0", "at=5", "every=100", "down=10,every=10", "down=10,every=5", "down=10,at=-1", "down=86400001",
		"rate=0", "queue=10", "bucket=9000", "rate=100,queue=0", "rate=100,queue=4097", "rate=100,bucket=63",
		"rate=1000001", "rate=1.5",
		"only=acks", "only=", "only=responses,drop",
	};
	char longer[600];
	struct rnic_fault_spec spec;

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(bad); i++)
		if (rnic_fault_parse(bad[i], &spec) == 0)
			fail_msg("accepted '%s'", bad[i]);
	memset(longer, 0, sizeof(longer));
	for (size_t i = 0; i + 7 < sizeof(longer); i += 7)
		memcpy(longer + i, "drop=0,", 7);
	assert_int_equal(rnic_fault_parse(longer, &spec), -EINVAL);
	/* Defaults */
	assert_int_equal(rnic_fault_parse("seed=3", &spec), 0);
	assert_true(spec.drop == 0 && spec.ge_p == 0 && spec.ge_bad == 1 && spec.reorder == 0);
	assert_int_equal(spec.depth, 3);
	assert_int_equal(spec.queue, 64);
	assert_int_equal(spec.bucket, 32768);
	assert_int_equal(spec.frames, RNIC_FAULT_ALL);
	assert_int_equal(spec.port, -1);
	assert_int_equal(spec.seed, 3);
	assert_int_equal(rnic_fault_parse("drop=0.01,reorder=0.02,duplicate=0.03,corrupt=0.001,depth=5,seed=9",
					  &spec), 0);
	assert_true(spec.drop == 0.01 && spec.reorder == 0.02 && spec.duplicate == 0.03 && spec.corrupt == 0.001);
	assert_int_equal(spec.depth, 5);
	assert_int_equal(spec.seed, 9);
	assert_int_equal(rnic_fault_parse("port=1,drop=0.5", &spec), 0);
	assert_int_equal(spec.port, 1);
	/* Every name at once */
	assert_int_equal(rnic_fault_parse("port=1,drop=0.01,ge_p=0.02,ge_r=0.3,ge_bad=0.8,ge_good=0.001,reorder=0.02,"
					  "depth=5,delay=50,duplicate=0.03,corrupt=0.001,down=20,at=100,every=1000,"
					  "rate=500,queue=32,bucket=9000,only=responses,seed=0x10", &spec), 0);
	assert_true(spec.ge_p == 0.02 && spec.ge_r == 0.3 && spec.ge_bad == 0.8 && spec.ge_good == 0.001);
	assert_int_equal(spec.depth, 5);
	assert_int_equal(spec.delay_us, 50);
	assert_int_equal(spec.down_ms, 20);
	assert_int_equal(spec.down_at_ms, 100);
	assert_int_equal(spec.down_every_ms, 1000);
	assert_int_equal(spec.rate_mbps, 500);
	assert_int_equal(spec.queue, 32);
	assert_int_equal(spec.bucket, 9000);
	assert_int_equal(spec.frames, RNIC_FAULT_RESPONSES);
	assert_int_equal(spec.seed, 16);
	assert_int_equal(rnic_fault_parse("only=requests,drop=0.1", &spec), 0);
	assert_int_equal(spec.frames, RNIC_FAULT_REQUESTS);
	/* A delay alone bounds the hold by time: the frame count allows the most. */
	assert_int_equal(rnic_fault_parse("reorder=0.1,delay=100", &spec), 0);
	assert_int_equal(spec.depth, 64);
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
	attach("drop=0.05,ge_p=0.01,ge_r=0.3,duplicate=0.05,reorder=0.05,corrupt=0.02,depth=4,seed=1234");
	run(&first);
	attach("drop=0.05,ge_p=0.01,ge_r=0.3,duplicate=0.05,reorder=0.05,corrupt=0.02,depth=4,seed=1234");
	run(&second);
	assert_int_equal(first.received, second.received);
	assert_memory_equal(first.order, second.order, first.received * sizeof(first.order[0]));
	attach("drop=0.05,ge_p=0.01,ge_r=0.3,duplicate=0.05,reorder=0.05,corrupt=0.02,depth=4,seed=1235");
	run(&other);
	assert_true(other.received != first.received ||
		    memcmp(other.order, first.order, first.received * sizeof(first.order[0])) != 0);
	rnic_fault_detach_all();
}

/* Runs of consecutive lost PSNs: how many, and the frames lost in them. */
static uint32_t
loss_runs(const struct observed *o, uint32_t *lost)
{
	uint32_t runs = 0;

	*lost = 0;
	for (uint32_t i = 0; i < FRAMES; i++) {
		if (o->seen[i] != 0)
			continue;
		(*lost)++;
		runs += i == 0 || o->seen[i - 1] != 0;
	}
	return runs;
}

/* Gilbert-Elliott: the loss of the chain's stationary bad share, p / (p + r) = 7.4 %, in bursts of 1 / r = 4
 * frames on average; independent loss at the same rate comes one frame at a time (1.08 on average). */
static void
test_burst_loss(void **state)
{
	static struct observed o;
	struct rnic_fault_counts c;
	uint32_t lost, runs;

	(void)state;
	attach("ge_p=0.02,ge_r=0.25,seed=3");
	run(&o);
	rnic_fault_get_counts(port_b, &c);
	runs = loss_runs(&o, &lost);
	assert_int_equal(lost, c.dropped);
	assert_int_equal(c.burst_dropped, c.dropped);
	assert_int_equal(o.received, FRAMES - c.dropped);
	assert_in_range(c.dropped, 150, 450);
	/* mean burst between 2.5 and 6 frames */
	assert_true(lost * 2 >= runs * 5 && lost <= runs * 6);
	attach("drop=0.074,seed=3");
	run(&o);
	runs = loss_runs(&o, &lost);
	assert_in_range(lost, 200, 400);
	assert_true(lost * 10 <= runs * 13);
	/* In the bad state a share of the frames, in the good one a few: both states lose. */
	attach("ge_p=0.01,ge_r=0.5,ge_bad=0.5,ge_good=0.05,seed=4");
	run(&o);
	rnic_fault_get_counts(port_b, &c);
	/* 0.98 x 0.05 + 0.02 x 0.5 = 5.9 % */
	assert_in_range(c.burst_dropped, 150, 330);
	rnic_fault_detach_all();
}

/* only=responses loses ACKs only (every other frame is one), only=requests the others; a frame that is not
 * RoCEv2 is neither and passes. */
static void
test_only_one_kind(void **state)
{
	static struct observed o;
	struct rnic_fault_counts c;
	struct rte_mbuf *m;

	(void)state;
	for (int kind = 0; kind < 2; kind++) {
		uint32_t lost_acks = 0, lost_sends = 0;

		attach(kind == 0 ? "only=responses,drop=0.5,seed=5" : "only=requests,drop=0.5,seed=5");
		run_mixed(&o, 2);
		rnic_fault_get_counts(port_b, &c);
		for (uint32_t i = 0; i < FRAMES; i++) {
			assert_true(o.seen[i] <= 1);
			if (o.seen[i] == 0)
				(*(i % 2 == 0 ? &lost_acks : &lost_sends))++;
		}
		assert_int_equal(c.exempt, FRAMES / 2);
		assert_int_equal(lost_acks + lost_sends, c.dropped);
		assert_int_equal(kind == 0 ? lost_sends : lost_acks, 0);
		assert_in_range(c.dropped, 800, 1200);
	}
	m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, 60));
	memset(rte_pktmbuf_mtod(m, void *), 0, 60);
	assert_int_equal(rte_eth_tx_burst(port_a, 0, &m, 1), 1);
	memset(&o, 0, sizeof(o));
	{
		uint32_t max_psn = UINT32_MAX;

		drain_quiet(&o, &max_psn);
	}
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(o.bad, 1);
	assert_int_equal(c.exempt, FRAMES / 2 + 1);
	rnic_fault_detach_all();
}

/* Time as the tests step it. */
static uint64_t fake_ns;

static uint64_t
fake_clock(void)
{
	return fake_ns;
}

/* Poll B polls times; the frames received. */
static uint32_t
poll_b(struct observed *o, uint32_t *max_psn, int polls)
{
	uint32_t before = o->received;

	for (int i = 0; i < polls; i++)
		receive(o, max_psn);
	return o->received - before;
}

/* Time by hand from 1 s, the layer given spec, and n frames sent (PSNs 0..n - 1). */
static void
fake_start(struct observed *o, const char *spec, uint32_t n)
{
	rnic_fault_set_clock(fake_clock);
	fake_ns = 1000000000;
	attach(spec);
	memset(o, 0, sizeof(*o));
	for (uint32_t i = 0; i < n; i++)
		send_frame(i, 0);
}

/* Reordering by delay: a held frame goes when its time is up, or when depth= later frames went first. */
static void
test_reorder_window(void **state)
{
	static struct observed o;
	uint32_t max_psn = UINT32_MAX;
	struct rnic_fault_counts c;

	(void)state;
	fake_start(&o, "reorder=1,delay=100,seed=1", 10);
	assert_int_equal(poll_b(&o, &max_psn, 200), 0);	/* idle polls do not count with a delay */
	fake_ns += 99000;
	assert_int_equal(poll_b(&o, &max_psn, 10), 0);
	fake_ns += 1000;
	assert_int_equal(poll_b(&o, &max_psn, 10), 10);
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(o.seen[i], 1);
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.reordered, 10);
	/* Every frame held, for 4 later frames at most: each frame lets the one 4 before it go. */
	attach("reorder=1,depth=4,delay=1000,seed=1");
	memset(&o, 0, sizeof(o));
	max_psn = UINT32_MAX;
	for (uint32_t i = 0; i < 10; i++) {
		send_frame(i, 0);
		assert_int_equal(poll_b(&o, &max_psn, 1), i >= 4);
		if (i >= 4)
			assert_int_equal(o.order[o.received - 1], i - 4);
	}
	assert_int_equal(poll_b(&o, &max_psn, 200), 0);
	fake_ns += 1000000;
	assert_int_equal(poll_b(&o, &max_psn, 1), 4);
	assert_int_equal(o.out_of_order, 0);	/* all held alike: late, but in order */
	rnic_fault_detach_all();
	rnic_fault_set_clock(NULL);
}

/* The link down: on its schedule (from 5 ms, 10 ms every 100 ms), and now for 20 ms. */
static void
test_link_down(void **state)
{
	static struct observed o;
	uint32_t max_psn = UINT32_MAX;
	struct rnic_fault_counts c;
	uint64_t start;

	(void)state;
	rnic_fault_set_clock(fake_clock);
	start = fake_ns = 1000000000;
	attach("down=10,at=5,every=100,seed=1");
	memset(&o, 0, sizeof(o));
	for (uint32_t t = 0; t < 300; t++) {
		fake_ns = start + t * 1000000ull + 500000;
		send_frame(t, 0);
		poll_b(&o, &max_psn, 2);
	}
	for (uint32_t t = 0; t < 300; t++)
		assert_int_equal(o.seen[t], !(t % 100 >= 5 && t % 100 < 15));
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.down_dropped, 30);
	assert_int_equal(c.dropped, 30);
	/* Down now: 20 ms lost, then frames pass again; and up at once when asked. */
	attach("seed=1");
	memset(&o, 0, sizeof(o));
	max_psn = UINT32_MAX;
	start = fake_ns;
	assert_int_equal(rnic_fault_link_down(port_b, 20), 0);
	for (uint32_t t = 0; t < 30; t++) {
		fake_ns = start + t * 1000000ull;
		send_frame(t, 0);
		poll_b(&o, &max_psn, 2);
		assert_int_equal(o.seen[t], t >= 20);
	}
	assert_int_equal(rnic_fault_link_down(port_b, 1000), 0);
	send_frame(30, 0);
	poll_b(&o, &max_psn, 2);
	assert_int_equal(rnic_fault_link_down(port_b, 0), 0);
	send_frame(31, 0);
	poll_b(&o, &max_psn, 2);
	assert_int_equal(o.seen[30], 0);
	assert_int_equal(o.seen[31], 1);
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.down_dropped, 21);
	assert_int_equal(rnic_fault_link_down(port_a, 10), -ENOENT);
	rnic_fault_detach_all();
	rnic_fault_set_clock(NULL);
}

#define FRAME_LEN 258	/* send_frame's SEND: Ethernet 14, IPv4 20, UDP 8, BTH 12, 200 bytes, ICRC 4 */

/* The rate limit: 100 Mbit/s (12.5 bytes a microsecond), a bucket of 4096 bytes, 8 frames of queue. */
static void
test_rate_limit(void **state)
{
	static struct observed o;
	uint32_t max_psn = UINT32_MAX, psn = 0;
	struct rnic_fault_counts c;
	uint64_t start;

	(void)state;
	rnic_fault_set_clock(fake_clock);
	fake_ns = 1000000000;
	attach("rate=100,queue=8,bucket=4096,seed=1");
	memset(&o, 0, sizeof(o));
	/* 20 frames at once: the bucket passes 16 (4096 / 258 = 15.9: the 16th leaves it 32 bytes in debt),
	 * 4 wait. */
	for (; psn < 20; psn++)
		send_frame(psn, 0);
	assert_int_equal(poll_b(&o, &max_psn, 1), 16);
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.delayed, 4);
	fake_ns += 2000;	/* 25 bytes: still 7 in debt */
	assert_int_equal(poll_b(&o, &max_psn, 5), 0);
	fake_ns += 1000;	/* 5.5 bytes to spare: one frame */
	assert_int_equal(poll_b(&o, &max_psn, 5), 1);
	/* 30 more while 3 wait: 5 find room in the queue, 25 are dropped at its tail. */
	for (; psn < 50; psn++)
		send_frame(psn, 0);
	assert_int_equal(poll_b(&o, &max_psn, 1), 0);
	for (; psn < 60; psn++)
		send_frame(psn, 0);
	assert_int_equal(poll_b(&o, &max_psn, 1), 0);
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.queue_dropped, 35);
	assert_int_equal(c.dropped, 35);
	fake_ns += 1000000000;
	assert_int_equal(poll_b(&o, &max_psn, 20), 8);
	assert_int_equal(o.out_of_order, 0);	/* first in, first out */
	for (uint32_t i = 0; i < 25; i++)
		assert_int_equal(o.seen[i], 1);
	/* Offered 10x the rate for 8 ms (a frame every 2 us): what passes is the bucket and 8 ms of the rate,
	 * (4096 + 100000) / 258 = 403.5 frames, give or take the frame in debt. */
	attach("rate=100,queue=64,bucket=4096,seed=1");
	memset(&o, 0, sizeof(o));
	max_psn = UINT32_MAX;
	start = fake_ns;
	for (uint32_t i = 0; i < FRAMES; i++) {
		fake_ns = start + 2000ull * i;
		send_frame(i, 0);
		poll_b(&o, &max_psn, 1);
	}
	assert_in_range(o.received, 402, 405);
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.queue_dropped, FRAMES - o.received - 64);
	rnic_fault_detach_all();
	rnic_fault_set_clock(NULL);
}

/* The rate limit's queue is the port's: frames read by either of B's two RX queues (a ring each, from A's
 * TX queues 0 and 1) share one bucket and one queue, first in, first out. As a queue each (before), each
 * queue's bucket let its own frames through: twice the rate, and a flow's frames reordered. */
static void
test_rate_limit_one_link(void **state)
{
	static struct observed o;
	uint32_t max_psn = UINT32_MAX;

	(void)state;
	fake_start(&o, "rate=100,queue=64,bucket=4096,seed=1", 10);
	for (uint32_t psn = 10; psn < 20; psn++)
		send_frame_on(psn, 0, 1);
	/* 10 read by queue 0 pass (2580 bytes of the bucket); of the 10 queue 1 reads, 6 (the 6th into
	 * debt), 4 wait. */
	assert_int_equal(receive_on(&o, &max_psn, 0, 10), 10);
	assert_int_equal(receive_on(&o, &max_psn, 1, 10), 6);
	fake_ns += 1000000;	/* 12500 bytes: the 4 waiting go, through queue 0 */
	assert_int_equal(receive_on(&o, &max_psn, 0, 10), 4);
	assert_int_equal(o.out_of_order, 0);
	for (uint32_t i = 0; i < 20; i++)
		assert_int_equal(o.order[i], i);
	rnic_fault_detach_all();
	rnic_fault_set_clock(NULL);
}

/* A spec replaced while the port runs: the queue takes it at its next poll; a port without the layer, or a
 * queue nobody polls, is refused. */
static void
test_update(void **state)
{
	static struct observed o;
	struct rnic_fault_spec spec;
	struct rnic_fault_counts c;

	(void)state;
	rnic_fault_detach_all();
	assert_int_equal(rnic_fault_parse("drop=1,seed=1", &spec), 0);
	assert_int_equal(rnic_fault_attach(port_b, 1, &spec), 0);
	run(&o);
	assert_int_equal(o.received, 0);
	assert_int_equal(rnic_fault_parse("duplicate=1,seed=1", &spec), 0);
	assert_int_equal(rnic_fault_update(port_b, &spec), 0);
	run(&o);
	assert_int_equal(o.received, 2 * FRAMES);
	rnic_fault_get_counts(port_b, &c);
	assert_int_equal(c.dropped, FRAMES);
	assert_int_equal(c.duplicated, FRAMES);
	assert_int_equal(rnic_fault_update(port_a, &spec), -ENOENT);
	/* Two queues; the test polls queue 0 only: queue 1 never takes the first update, so a second waits a
	 * second and is refused. */
	rnic_fault_detach_all();
	assert_int_equal(rnic_fault_attach(port_b, 2, &spec), 0);
	assert_int_equal(rnic_fault_update(port_b, &spec), 0);
	run(&o);
	assert_int_equal(rnic_fault_update(port_b, &spec), -EBUSY);
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
		cmocka_unit_test(test_burst_loss),
		cmocka_unit_test(test_only_one_kind),
		cmocka_unit_test(test_reorder_window),
		cmocka_unit_test(test_link_down),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_rate_limit_one_link),
		cmocka_unit_test(test_update),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("fault", tests, setup, teardown);
}
