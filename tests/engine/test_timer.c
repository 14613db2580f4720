/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's timer wheel (rnic_timer.h): a slot fires once its tick has wholly passed and not before,
 * filing an already filed slot is a no-op, far deadlines wait at the horizon, and a slot filed again from its
 * own callback, even for a tick already gone, fires on the next tick, not a turn of the wheel later.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_memory.h>

#include "rnic_timer.h"

#define SLOTS 64

struct fired {
	struct rnic_timer_wheel *w;
	unsigned int count[SLOTS];
	uint64_t refile_at[SLOTS];	/* non-zero: the callback files the slot again for this TSC */
};

static void
on_expire(void *arg, uint32_t slot)
{
	struct fired *f = arg;

	assert_true(slot < SLOTS);
	f->count[slot]++;
	if (f->refile_at[slot] != 0) {
		uint64_t at = f->refile_at[slot];

		f->refile_at[slot] = 0;
		rnic_timer_file(f->w, slot, at);
	}
}

/* The TSC at the start of the wheel's k-th tick from now. */
static uint64_t
tick_tsc(const struct rnic_timer_wheel *w, uint64_t k)
{
	return (w->next_tick + k) * w->tick_cycles;
}

static void
new_wheel(struct rnic_timer_wheel *w, struct fired *f)
{
	assert_int_equal(rnic_timer_init(w, SLOTS, SOCKET_ID_ANY), 0);
	memset(f, 0, sizeof(*f));
	f->w = w;
}

static void
test_fires_when_tick_passed(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	rnic_timer_file(&w, 3, tick_tsc(&w, 10) + 1);
	rnic_timer_file(&w, 3, tick_tsc(&w, 5));	/* already filed: no-op */
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 10), on_expire, &f), 0);
	assert_int_equal(f.count[3], 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);	/* tick 10 is over */
	assert_int_equal(f.count[3], 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 100), on_expire, &f), 0);	/* once */
	rnic_timer_free(&w);
}

static void
test_horizon(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	rnic_timer_file(&w, 7, tick_tsc(&w, 10 * RNIC_WHEEL_SIZE));
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, RNIC_WHEEL_SIZE - 1), on_expire, &f), 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[7], 1);
	rnic_timer_free(&w);
}

/* A deadline already gone when the callback files it (an RNR wait that has just ended, say): the next tick. */
static void
test_refile_from_callback(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;
	uint64_t start;

	(void)state;
	new_wheel(&w, &f);
	start = tick_tsc(&w, 0);
	rnic_timer_file(&w, 5, start);
	f.refile_at[5] = start;		/* in the past by the time it fires */
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[5], 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[5], 2);
	/* A later deadline filed from the callback waits for its own tick. */
	f.refile_at[5] = tick_tsc(&w, 20);
	rnic_timer_file(&w, 5, tick_tsc(&w, 0));
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 19), on_expire, &f), 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[5], 4);
	rnic_timer_free(&w);
}

/* An lcore that was away for longer than a turn: every filed slot fires, once. */
static void
test_far_behind(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	for (uint32_t s = 0; s < SLOTS; s++)
		rnic_timer_file(&w, s, tick_tsc(&w, s * 61));
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 3 * RNIC_WHEEL_SIZE), on_expire, &f), SLOTS);
	for (uint32_t s = 0; s < SLOTS; s++)
		assert_int_equal(f.count[s], 1);
	rnic_timer_free(&w);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fires_when_tick_passed),
		cmocka_unit_test(test_horizon),
		cmocka_unit_test(test_refile_from_callback),
		cmocka_unit_test(test_far_behind),
	};

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	return cmocka_run_group_tests_name("timer", tests, NULL, NULL);
}
