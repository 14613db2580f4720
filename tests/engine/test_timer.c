/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's timer wheel (rnic_timer.h): a slot fires once its deadline's tick has wholly passed and not
 * before, an earlier deadline moves it earlier, a later one or a cancelled one never calls back early (the
 * wheel re-files or drops the slot by itself), far deadlines wait at the horizon, and a slot filed again from
 * its own callback, even for a tick already gone, fires on the next tick, not a turn of the wheel later.
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
		rnic_timer_set(f->w, slot, at);
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
	rnic_timer_set(&w, 3, tick_tsc(&w, 10) + 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 10), on_expire, &f), 0);
	assert_int_equal(f.count[3], 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);	/* tick 10 is over */
	assert_int_equal(f.count[3], 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 100), on_expire, &f), 0);	/* once */
	rnic_timer_free(&w);
}

/* An RNR wait shorter than the loss timer already filed: the slot fires at the earlier deadline, once. */
static void
test_earlier_deadline(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	rnic_timer_set(&w, 3, tick_tsc(&w, 10));
	rnic_timer_set(&w, 9, tick_tsc(&w, 10));
	rnic_timer_set(&w, 3, tick_tsc(&w, 5));	/* taken out of the middle of tick 10's list */
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 5), on_expire, &f), 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[3], 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 100), on_expire, &f), 1);
	assert_int_equal(f.count[3], 1);
	assert_int_equal(f.count[9], 1);
	rnic_timer_free(&w);
}

/* A deadline moved later (an ACK) is re-filed by the wheel without a call; a cancelled one is dropped. */
static void
test_later_and_cancelled(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	rnic_timer_set(&w, 3, tick_tsc(&w, 5));
	rnic_timer_set(&w, 3, tick_tsc(&w, 50));
	rnic_timer_set(&w, 4, tick_tsc(&w, 5));
	rnic_timer_set(&w, 4, 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 6), on_expire, &f), 0);
	assert_int_not_equal(w.bucket_of[3], RNIC_WHEEL_NONE);	/* filed again, under tick 50 */
	assert_int_equal(w.bucket_of[4], RNIC_WHEEL_NONE);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 44), on_expire, &f), 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[3], 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 3 * RNIC_WHEEL_SIZE), on_expire, &f), 0);
	assert_int_equal(f.count[4], 0);
	rnic_timer_free(&w);
}

/* rnic_timer_set tells a deadline's tick against the filed one without dividing: a deadline moved later
 * within the filed tick stays there, one a cycle before it is filed earlier, and one already past stays under
 * the oldest tick not expired, which the next expiry hands back. */
static void
test_filed_tick_edges(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	rnic_timer_set(&w, 3, tick_tsc(&w, 10));
	rnic_timer_set(&w, 3, tick_tsc(&w, 11) - 1);		/* the same tick, later */
	assert_int_equal(w.bucket_of[3], (uint32_t)((w.next_tick + 10) & (RNIC_WHEEL_SIZE - 1)));
	rnic_timer_set(&w, 3, tick_tsc(&w, 10) - 1);		/* the tick before */
	assert_int_equal(w.bucket_of[3], (uint32_t)((w.next_tick + 9) & (RNIC_WHEEL_SIZE - 1)));
	rnic_timer_set(&w, 4, tick_tsc(&w, 0));
	rnic_timer_set(&w, 4, tick_tsc(&w, 0) - 1000);		/* already past: filed under the oldest tick */
	assert_int_equal(w.bucket_of[4], (uint32_t)(w.next_tick & (RNIC_WHEEL_SIZE - 1)));
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[4], 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 9), on_expire, &f), 1);	/* ticks 1-9 */
	assert_int_equal(f.count[3], 1);
	rnic_timer_free(&w);
}

static void
test_horizon(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	rnic_timer_set(&w, 7, tick_tsc(&w, 10 * RNIC_WHEEL_SIZE));
	/* Filed at the horizon, then again, a turn at a time, without a call until the deadline's tick. */
	for (int turn = 0; turn < 10; turn++)
		assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, RNIC_WHEEL_SIZE - 1), on_expire, &f), 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 10), on_expire, &f), 0);
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
	rnic_timer_set(&w, 5, start);
	f.refile_at[5] = start;		/* in the past by the time it fires */
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[5], 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[5], 2);
	/* A later deadline filed from the callback waits for its own tick. */
	f.refile_at[5] = tick_tsc(&w, 20);
	rnic_timer_set(&w, 5, tick_tsc(&w, 0));
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 19), on_expire, &f), 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	assert_int_equal(f.count[5], 4);
	rnic_timer_free(&w);
}

/* An lcore that was away for longer than a turn: every slot due by then fires, once; a later one waits. */
static void
test_far_behind(void **state)
{
	struct rnic_timer_wheel w;
	struct fired f;

	(void)state;
	new_wheel(&w, &f);
	for (uint32_t s = 0; s < SLOTS - 1; s++)
		rnic_timer_set(&w, s, tick_tsc(&w, s * 61));
	rnic_timer_set(&w, SLOTS - 1, tick_tsc(&w, 3 * RNIC_WHEEL_SIZE + 10));	/* at the horizon first */
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 3 * RNIC_WHEEL_SIZE), on_expire, &f), SLOTS - 1);
	for (uint32_t s = 0; s < SLOTS - 1; s++)
		assert_int_equal(f.count[s], 1);
	assert_int_equal(f.count[SLOTS - 1], 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 10), on_expire, &f), 0);
	assert_int_equal(rnic_timer_expire(&w, tick_tsc(&w, 1), on_expire, &f), 1);
	rnic_timer_free(&w);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fires_when_tick_passed),
		cmocka_unit_test(test_earlier_deadline),
		cmocka_unit_test(test_later_and_cancelled),
		cmocka_unit_test(test_horizon),
		cmocka_unit_test(test_filed_tick_edges),
		cmocka_unit_test(test_refile_from_callback),
		cmocka_unit_test(test_far_behind),
	};

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	return cmocka_run_group_tests_name("timer", tests, NULL, NULL);
}
