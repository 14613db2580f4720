/* SPDX-License-Identifier: BSD-3-Clause
 * QP scheduler (digest seed-001-002-004 §4.4 case 28): round-robin fairness, idle QPs never scheduled,
 * deactivation, a slot given back unserved, the same behaviour at 64K slots, and the prefetch hints (peek 0, 1
 * and 2 turns ahead) naming the slots served next.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_eal.h>

#include "rnic_sched.h"

#define MAX_SLOTS (1u << 16)

static uint32_t served[MAX_SLOTS];

static void
serve_rounds(struct rnic_sched *s, unsigned int picks)
{
	uint32_t slot = 0;

	memset(served, 0, sizeof(served));
	for (unsigned int i = 0; i < picks; i++) {
		uint32_t peeked[3] = { 0 }, after = 0;
		int has_peek[3];

		for (unsigned int a = 0; a < 3; a++)
			has_peek[a] = rnic_sched_peek(s, a, &peeked[a]);
		assert_int_equal(rnic_sched_next(s, &slot), 1);
		assert_true(slot < s->nb_slots);
		served[slot]++;
		/* The prefetch hints name what comes next and the turns after it, when they name anything. */
		if (has_peek[0])
			assert_int_equal(slot, peeked[0]);
		for (unsigned int a = 1; a < 3; a++) {
			if (!has_peek[a])
				continue;
			assert_int_equal(rnic_sched_peek(s, a - 1, &after), 1);
			assert_int_equal(after, peeked[a]);
		}
	}
}

static void
check_fairness(uint32_t nb_slots, const uint32_t *active, unsigned int nb_active, unsigned int rounds)
{
	struct rnic_sched s;
	uint32_t slot = 0;

	assert_int_equal(rnic_sched_init(&s, nb_slots, SOCKET_ID_ANY), 0);
	assert_int_equal(rnic_sched_next(&s, &slot), 0);	/* nothing active: nothing scheduled */
	for (unsigned int i = 0; i < nb_active; i++)
		rnic_sched_activate(&s, active[i]);
	serve_rounds(&s, nb_active * rounds);
	/* Every active slot exactly once per round; idle slots never. */
	for (unsigned int i = 0; i < nb_active; i++) {
		assert_int_equal(served[active[i]], rounds);
		served[active[i]] = 0;
	}
	for (uint32_t i = 0; i < nb_slots; i++)
		assert_int_equal(served[i], 0);
	rnic_sched_free(&s);
}

static void
test_fair_small(void **state)
{
	const uint32_t active[] = { 0, 3, 63, 64, 65, 127, 200 };

	(void)state;
	check_fairness(256, active, RTE_DIM(active), 5);
}

static void
test_fair_64k(void **state)
{
	static uint32_t active[4096];

	(void)state;
	/* Spread over the whole range, including both ends. */
	for (unsigned int i = 0; i < RTE_DIM(active); i++)
		active[i] = i * (MAX_SLOTS / RTE_DIM(active)) + (i % 7);
	active[RTE_DIM(active) - 1] = MAX_SLOTS - 1;
	check_fairness(MAX_SLOTS, active, RTE_DIM(active), 3);
}

static void
test_deactivate(void **state)
{
	struct rnic_sched s;
	uint32_t slot = 0;

	(void)state;
	assert_int_equal(rnic_sched_init(&s, 1024, SOCKET_ID_ANY), 0);
	rnic_sched_activate(&s, 10);
	rnic_sched_activate(&s, 11);
	rnic_sched_activate(&s, 700);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 10);
	/* 11 is in the slab being served: deactivating it must take it out of this round too. */
	rnic_sched_deactivate(&s, 11);
	rnic_sched_deactivate(&s, 10);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 700);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 700);
	rnic_sched_deactivate(&s, 700);
	assert_int_equal(rnic_sched_next(&s, &slot), 0);
	/* Reactivation brings it back. */
	rnic_sched_activate(&s, 11);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 11);
	rnic_sched_free(&s);
}

/* A slot given back unserved (the requester's pass ends at it) comes next, and the round goes on after it. */
static void
test_unget(void **state)
{
	struct rnic_sched s;
	uint32_t slot = 0;

	(void)state;
	assert_int_equal(rnic_sched_init(&s, 1024, SOCKET_ID_ANY), 0);
	rnic_sched_activate(&s, 3);
	rnic_sched_activate(&s, 5);
	rnic_sched_activate(&s, 900);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 3);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 5);
	rnic_sched_unget(&s, 5);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 5);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 900);
	/* The last slot of its slab given back: the slab is served again, not skipped. */
	rnic_sched_unget(&s, 900);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 900);
	assert_int_equal(rnic_sched_next(&s, &slot), 1);
	assert_int_equal(slot, 3);
	rnic_sched_free(&s);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fair_small),
		cmocka_unit_test(test_fair_64k),
		cmocka_unit_test(test_deactivate),
		cmocka_unit_test(test_unget),
	};

	if (rte_eal_init(argc, argv) < 0)
		return 1;
	return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
