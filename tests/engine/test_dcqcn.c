/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN's reaction point and the pacer's rate, step by step on a QP context with time given by hand
 * (rnic_dcqcn.h, doc/congestion.md): the first CNP's cut, the monitor period (a CNP within it cuts at its
 * end), alpha's update, fast recovery, additive and hyper increase by timer and byte counter, the way back
 * to the line rate (the QP then runs neither DCQCN nor its pacer, unless rp_max_rate is below the port's
 * speed), a rate_limit below DCQCN's rate, the pacer earning nothing for the time the lcore was away, and
 * the pacer's rate asked in a loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>

#include "rnic_dcqcn.h"
#include "rnic_requester.h"
#include "rnic_pacer.h"

#define LINE_MBPS 10000u

static struct rnic_pipeline *p;
static struct rnic_qp_priv *q;
static uint64_t us;		/* TSC cycles per microsecond */

static int
setup(void **state)
{
	struct rnic_device dev;

	(void)state;
	memset(&dev, 0, sizeof(dev));
	dev.cc = (struct rnic_cc_params)RNIC_CC_DEFAULTS;
	dev.cc.rp_max_rate = LINE_MBPS;
	p = calloc(1, sizeof(*p));
	q = calloc(1, sizeof(*q));
	if (p == NULL || q == NULL)
		return -1;
	rnic_cc_conf_init(&p->cc, &dev);
	us = rte_get_tsc_hz() / 1000000;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	free(p);
	free(q);
	return 0;
}

static void
fresh_qp(void)
{
	memset(q, 0, sizeof(*q));
	memset(RNIC_STATS(p, COMPLETER), 0, sizeof(struct rnic_pipeline_stats));
}

/* The defaults are mlx5's; the line rate is rp_max_rate. */
static void
test_conf(void **state)
{
	(void)state;
	assert_int_equal(p->cc.line_rate, LINE_MBPS * 1000);
	assert_int_equal(p->cc.ai, 5000);
	assert_int_equal(p->cc.hai, 50000);
	assert_int_equal(p->cc.min_rate, 1000);
	assert_int_equal(p->cc.g, 1019);
	assert_int_equal(p->cc.time_reset, 300 * us);
	assert_int_equal(p->cc.cut_period, 4 * us);
	assert_int_equal(p->cc.cnp_gap, 4 * us);
	assert_int_equal(p->cc.cnp_tclass, 48 << 2 | RNIC_ECN_ECT0);
	/* No port here to say its speed: rp_max_rate is the only bound, so DCQCN keeps a QP to it. */
	assert_true(p->cc.cap_paced);
}

/* The first CNP: the line rate less alpha / 2 (alpha 1023/1024), the target the line rate, the pacer on at
 * the new rate. A second within the monitor period (4 us) cuts at its end, as mlx5 (a cut when a CNP came
 * in the period): before, it counted for alpha only and the QP kept its rate until the next CNP after the
 * period, however long that took. */
static void
test_cut(void **state)
{
	uint64_t t = 1000 * us;
	uint32_t rc, alpha;

	(void)state;
	fresh_qp();
	rnic_dcqcn_react(p, q, t);
	rc = LINE_MBPS * 1000 - (uint32_t)(((uint64_t)LINE_MBPS * 1000 * 1023) >> 11);
	assert_true(q->cc.rp.active);
	assert_int_equal(q->cc.rp.alpha, 1023);
	assert_int_equal(q->cc.rp.rc, rc);
	assert_int_equal(q->cc.rp.rt, LINE_MBPS * 1000);
	assert_true(q->req.paced);
	assert_int_equal(q->cc.pacer.rate, rc);
	assert_int_equal(RNIC_STATS(p, COMPLETER)->rate_cuts, 1);

	rnic_dcqcn_react(p, q, t + 2 * us);
	assert_int_equal(q->cc.rp.rc, rc);
	assert_int_equal(RNIC_STATS(p, COMPLETER)->rate_cuts, 1);
	assert_true(q->cc.rp.cnp_in_period);
	rnic_dcqcn_advance(p, q, t + 3 * us);
	assert_int_equal(RNIC_STATS(p, COMPLETER)->rate_cuts, 1);

	/* At the period's end, 4 us after the first cut: alpha's periods until then (two decaying, the third
	 * with the CNP: x 1019 / 1024 + 5, the fourth decaying), then the cut by that alpha, from the target at
	 * the old rate; the pacer follows. Nothing more without another CNP. */
	rnic_dcqcn_advance(p, q, t + 6 * us);
	alpha = 1023 * 1019 / 1024 * 1019 / 1024;
	alpha = (alpha * 1019 / 1024 + 5) * 1019 / 1024;
	assert_int_equal(RNIC_STATS(p, COMPLETER)->rate_cuts, 2);
	assert_int_equal(q->cc.rp.cut_tsc, t + 4 * us);
	assert_int_equal(q->cc.rp.rt, rc);
	assert_int_equal(q->cc.rp.rc, rc - (uint32_t)(((uint64_t)rc * alpha) >> 11));
	assert_int_equal(q->cc.pacer.rate, q->cc.rp.rc);
	rnic_dcqcn_advance(p, q, t + 20 * us);
	assert_int_equal(RNIC_STATS(p, COMPLETER)->rate_cuts, 2);

	/* A CNP after the period cuts at once. */
	rc = q->cc.rp.rc;
	rnic_dcqcn_react(p, q, t + 21 * us);
	assert_int_equal(RNIC_STATS(p, COMPLETER)->rate_cuts, 3);
	assert_true(q->cc.rp.rc < rc);
}

/* Increase by the timer: fast recovery first (halfway to the target, the target unchanged), then additive
 * (rp_ai_rate) once the timer's stage reached rp_threshold (1), hyper (rp_hai_rate) only with the byte
 * counter's too. */
static void
test_timer_increase(void **state)
{
	uint64_t t = 1000 * us;
	uint32_t rc, rt;

	(void)state;
	fresh_qp();
	p->cc.cap_paced = 0;		/* the line rate is the port's speed */
	rnic_dcqcn_react(p, q, t);
	rc = q->cc.rp.rc;
	rt = q->cc.rp.rt;
	rnic_dcqcn_advance(p, q, t + 300 * us);		/* stage 0: fast recovery */
	assert_int_equal(q->cc.rp.rt, rt);
	assert_int_equal(q->cc.rp.rc, (rc + rt + 1) / 2);
	assert_int_equal(q->cc.rp.t_stage, 1);
	assert_int_equal(q->cc.pacer.rate, q->cc.rp.rc);
	rc = q->cc.rp.rc;
	/* rt is the line rate: additive increase is capped there. */
	rnic_dcqcn_advance(p, q, t + 600 * us);
	assert_int_equal(q->cc.rp.rt, LINE_MBPS * 1000);
	assert_int_equal(q->cc.rp.rc, (rc + LINE_MBPS * 1000 + 1) / 2);
	/* Long enough: back at the line rate, DCQCN and the pacer off. */
	rnic_dcqcn_advance(p, q, t + 40 * 300 * us);
	assert_false(q->cc.rp.active);
	assert_false(q->req.paced);
	p->cc.cap_paced = 1;
}

/* The machine took the lcore away for 9 of 10 ms (a gap between the requester's passes): the increase timer
 * runs 1 ms of the 10 (3 events of 300 us, not 33, which would bring the rate back at once). */
static void
test_lcore_away(void **state)
{
	uint64_t t = 1000 * us;

	(void)state;
	fresh_qp();
	p->away_cycles = 0;
	p->last_pass_tsc = 0;
	rnic_requester_clock(p, t);
	rnic_dcqcn_react(p, q, t);
	rnic_requester_clock(p, t + 500 * us);		/* a pass of the lcore, half a millisecond on */
	rnic_requester_clock(p, t + 10500 * us);		/* the next one 10 ms later: away for 9 of them */
	assert_int_equal(p->away_cycles, 9000 * us);
	rnic_dcqcn_advance(p, q, t + 10500 * us);
	assert_int_equal(q->cc.rp.t_stage, 5);		/* 1.5 ms: 5 events */
	assert_true(q->cc.rp.active);
	p->away_cycles = 0;
	p->last_pass_tsc = 0;
}

/* An rp_max_rate below the port's speed: a QP back at it stays paced at it (the port would let it go
 * faster), and a later CNP cuts from there. */
static void
test_max_rate_below_port(void **state)
{
	uint64_t t = 1000 * us;

	(void)state;
	fresh_qp();
	assert_true(p->cc.cap_paced);
	rnic_dcqcn_react(p, q, t);
	rnic_dcqcn_advance(p, q, t + 40 * 300 * us);
	assert_int_equal(q->cc.rp.rc, LINE_MBPS * 1000);
	assert_true(q->cc.rp.active);
	assert_true(q->req.paced);
	assert_int_equal(q->cc.pacer.rate, LINE_MBPS * 1000);
	/* alpha decayed meanwhile: the CNP raises it for its period, and the next one cuts by it. */
	rnic_dcqcn_react(p, q, t + 41 * 300 * us);
	rnic_dcqcn_react(p, q, t + 41 * 300 * us + 5 * us);
	assert_true(q->cc.rp.rc < LINE_MBPS * 1000);
	assert_int_equal(q->cc.pacer.rate, q->cc.rp.rc);
}

/* Two cuts bring the target below the line rate; then the stages: fast recovery, additive, hyper (the
 * byte counter counts bytes sent: rp_byte_reset x 64 of them make an event). */
static void
test_stages(void **state)
{
	uint64_t t = 1000 * us;
	uint32_t rt;

	(void)state;
	fresh_qp();
	rnic_dcqcn_react(p, q, t);
	rnic_dcqcn_react(p, q, t + 10 * us);
	rt = q->cc.rp.rt;
	assert_true(rt < LINE_MBPS * 1000);
	/* Each event increases at the stages reached before it: the byte counter's first at (timer 0, bytes 0):
	 * fast recovery; the timer's first at (0, 1): additive, as is every one while only one count passed
	 * rp_threshold (1); hyper once both did. */
	rnic_dcqcn_sent(p, q, p->cc.byte_reset);
	assert_int_equal(q->cc.rp.bc_stage, 1);
	assert_int_equal(q->cc.rp.rt, rt);
	rnic_dcqcn_advance(p, q, t + 10 * us + 300 * us);
	assert_int_equal(q->cc.rp.t_stage, 1);
	assert_int_equal(q->cc.rp.rt, rt + p->cc.ai);
	rt += p->cc.ai;
	rnic_dcqcn_sent(p, q, p->cc.byte_reset);	/* (1, 1) */
	assert_int_equal(q->cc.rp.rt, rt + p->cc.ai);
	rt += p->cc.ai;
	rnic_dcqcn_advance(p, q, t + 10 * us + 600 * us);	/* (1, 2) */
	assert_int_equal(q->cc.rp.rt, rt + p->cc.ai);
	rt += p->cc.ai;
	rnic_dcqcn_sent(p, q, p->cc.byte_reset);	/* (2, 2) */
	assert_int_equal(q->cc.rp.rt, rt + p->cc.hai);
}

/* The pacer paces at the lower of rate_limit and DCQCN's rate, and stops with neither. */
static void
test_pacer_rate(void **state)
{
	uint64_t t = 1000 * us;

	(void)state;
	fresh_qp();
	q->req.rate_limit = 100000;	/* 100 Mbit/s */
	rnic_pacer_update(p, q);
	assert_true(q->req.paced);
	assert_int_equal(q->cc.pacer.rate, 100000);
	assert_int_equal(q->cc.pacer.burst, (int64_t)RNIC_PACER_MIN_BURST << RNIC_PACER_SHIFT);
	rnic_dcqcn_react(p, q, t);	/* DCQCN's rate (5 Gbit/s) is above the limit */
	assert_int_equal(q->cc.pacer.rate, 100000);
	q->req.rate_limit = 0;
	rnic_pacer_update(p, q);
	assert_int_equal(q->cc.pacer.rate, q->cc.rp.rc);
	q->cc.rp.active = 0;
	rnic_pacer_update(p, q);
	assert_false(q->req.paced);
}

/* Frames of 4154 bytes (a 4 KB WRITE's) the pacer lets go now, up to max, each charged. */
static unsigned int
frames_now(unsigned int max)
{
	unsigned int n = 0;

	while (n < max && rnic_pacer_admit(p, q)) {
		rnic_pacer_charge(p, q, 4154);
		n++;
	}
	return n;
}

/*
 * The pacer runs by the requester's time: of 10 ms in which the lcore was away for 9 (a gap between the
 * requester's passes), a QP at 10 Mbit/s earns 1 ms, 1250 bytes, and stays in debt for the frame it sent.
 * By the TSC it earned its whole bucket (two frames: 6.8 ms at this rate), and so did every QP in every gap:
 * 16 QPs of an incast sent 2 or 3 frames each at once when the lcore came back, twice their rates in all.
 * And a count made in the gap before a pass took it out (the requester's time then goes back) earns nothing.
 */
static void
test_pacer_lcore_away(void **state)
{
	uint64_t t = rte_get_tsc_cycles();
	int64_t owed;

	(void)state;
	fresh_qp();
	p->away_cycles = 0;
	p->last_pass_tsc = 0;
	assert_int_equal(rnic_timer_init(&p->pace_timers, 16, SOCKET_ID_ANY), 0);
	q->req.rate_limit = 10000;
	rnic_pacer_update(p, q);
	assert_int_equal(frames_now(4), 1);
	rnic_requester_clock(p, t - 10000 * us);
	rnic_requester_clock(p, t);			/* away for 9 of the last 10 ms */
	q->cc.pacer.refill_tsc -= 10000 * us;		/* ... counted before them */
	owed = q->cc.pacer.tokens;
	assert_int_equal(frames_now(4), 0);
	assert_true(q->cc.pacer.tokens - owed >= (int64_t)1249 << RNIC_PACER_SHIFT);	/* 1 ms less rounding */
	assert_true(q->cc.pacer.tokens - owed < (int64_t)1500 << RNIC_PACER_SHIFT);
	q->cc.pacer.refill_tsc = rnic_req_now(p) + 5000 * us;
	owed = q->cc.pacer.tokens;
	assert_int_equal(frames_now(4), 0);
	assert_int_equal(q->cc.pacer.tokens, owed);
	rnic_timer_free(&p->pace_timers);
	p->away_cycles = 0;
	p->last_pass_tsc = 0;
}

/*
 * The pacer asked in a tight loop, a frame charged each time it says yes. This thread may lose the CPU for
 * a while on a loaded machine: after such a gap (the loop's two calls more than 50 us apart) the pacer lets
 * a bucket go at once, and earns nothing more for the gap. So over 0.2 s: what it let through is at most its
 * rate over the whole time plus a bucket per gap; and in the steady part of the time the loop ran, from the
 * time a bucket drains at the rate after the start or a gap, at least half its rate (a gap's burst is up to a
 * bucket, often less: taking a whole bucket per gap off the total understates the rate when gaps are many).
 * It earned nothing while running when its count dropped the fraction of a byte earned since the previous
 * call (a call every few hundred cycles: 0.5 Mbit/s of 100).
 */
static void
test_pacer_in_a_loop(void **state)
{
	const double bps = 100e6, bucket = (RNIC_PACER_MIN_BURST + 4154) * 8.0;
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc(), prev = t0, now, ran = 0, gap = hz / 20000;
	uint64_t drain = (uint64_t)(bucket / bps * (double)hz), burst_end = t0 + drain, steady_ran = 0, before;
	unsigned int gaps = 0;
	double released, elapsed, steady = 0;

	(void)state;
	fresh_qp();
	assert_int_equal(rnic_timer_init(&p->pace_timers, 16, SOCKET_ID_ANY), 0);
	q->req.rate_limit = (uint32_t)(bps / 1000);
	rnic_pacer_update(p, q);
	while ((now = rte_rdtsc()) - t0 < hz / 5) {
		if (now - prev > gap) {
			gaps++;
			burst_end = now + drain;
		} else {
			ran += now - prev;
			if (now >= burst_end)
				steady_ran += now - prev;
		}
		prev = now;
		before = q->cc.pacer.released;
		if (rnic_pacer_admit(p, q))
			rnic_pacer_charge(p, q, 4154);
		if (now >= burst_end)
			steady += (double)(q->cc.pacer.released - before) * 8;
	}
	elapsed = (double)(now - t0) / (double)hz;
	released = (double)q->cc.pacer.released * 8;
	rnic_timer_free(&p->pace_timers);
	print_message("released %.1f Mbit/s of 100 over %.3f s, %.3f s of it running, %u gaps; %.1f Mbit/s over "
		      "%.3f s of steady running\n", released / elapsed / 1e6, elapsed, (double)ran / (double)hz, gaps,
		      steady / ((double)steady_ran / (double)hz) / 1e6, (double)steady_ran / (double)hz);
	assert_true(released <= bps * elapsed + bucket * (gaps + 1));
	assert_true(steady_ran > 0);
	assert_true(steady >= 0.5 * bps * (double)steady_ran / (double)hz);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_timer_increase),
		cmocka_unit_test(test_max_rate_below_port),
		cmocka_unit_test(test_stages),
		cmocka_unit_test(test_lcore_away),
		cmocka_unit_test(test_pacer_rate),
		cmocka_unit_test(test_pacer_lcore_away),
		cmocka_unit_test(test_pacer_in_a_loop),
	};
	int ret;

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	ret = cmocka_run_group_tests(tests, setup, teardown);
	rte_eal_cleanup();
	return ret;
}
