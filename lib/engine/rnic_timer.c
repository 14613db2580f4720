/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's timer wheel (rnic_timer.h).
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "rnic_timer.h"

int
rnic_timer_init(struct rnic_timer_wheel *w, uint32_t nb_slots, int socket_id)
{
	memset(w, 0, sizeof(*w));
	w->next = rte_malloc_socket("rnic_wheel", sizeof(uint32_t) * nb_slots, 0, socket_id);
	w->filed = rte_zmalloc_socket("rnic_wheel", nb_slots, 0, socket_id);
	if (w->next == NULL || w->filed == NULL) {
		rnic_timer_free(w);
		return -ENOMEM;
	}
	w->nb_slots = nb_slots;
	w->tick_cycles = RTE_MAX(rte_get_tsc_hz() >> 16, (uint64_t)1);
	w->next_tick = rte_get_tsc_cycles() / w->tick_cycles;
	w->due_tsc = (w->next_tick + 1) * w->tick_cycles;
	for (unsigned int b = 0; b < RNIC_WHEEL_SIZE; b++)
		w->bucket[b] = RNIC_WHEEL_NONE;
	return 0;
}

void
rnic_timer_free(struct rnic_timer_wheel *w)
{
	rte_free(w->next);
	rte_free(w->filed);
	w->next = NULL;
	w->filed = NULL;
}

void
rnic_timer_file(struct rnic_timer_wheel *w, uint32_t slot, uint64_t tsc)
{
	uint64_t tick = tsc / w->tick_cycles;
	uint32_t b;

	if (w->filed[slot])
		return;
	tick = RTE_MAX(tick, w->next_tick);
	tick = RTE_MIN(tick, w->next_tick + RNIC_WHEEL_SIZE - 1);
	b = (uint32_t)(tick & (RNIC_WHEEL_SIZE - 1));
	w->next[slot] = w->bucket[b];
	w->bucket[b] = slot;
	w->filed[slot] = 1;
}

unsigned int
rnic_timer_expire(struct rnic_timer_wheel *w, uint64_t now, void (*expire)(void *arg, uint32_t slot), void *arg)
{
	/* Only ticks wholly in the past. The wheel moves past a bucket before its slots are handed out, so one
	 * filed again from the callback, even for a tick already gone, lands in a later bucket: in the one being
	 * emptied it would wait a whole turn of the wheel. */
	uint64_t until;
	unsigned int fired = 0, turns = 0;

	/* Called on every requester poll: most calls fall within a tick and cost a comparison, no division. */
	if (now < w->due_tsc)
		return 0;
	until = now / w->tick_cycles;
	while (w->next_tick < until) {
		uint32_t b = (uint32_t)(w->next_tick & (RNIC_WHEEL_SIZE - 1)), slot = w->bucket[b];

		w->bucket[b] = RNIC_WHEEL_NONE;
		w->next_tick++;
		while (slot != RNIC_WHEEL_NONE) {
			uint32_t next = w->next[slot];

			w->filed[slot] = 0;
			expire(arg, slot);
			fired++;
			slot = next;
		}
		/* Far behind (the lcore was away): one turn of the wheel has seen every bucket. */
		if (++turns == RNIC_WHEEL_SIZE) {
			w->next_tick = until;
			break;
		}
	}
	w->due_tsc = (w->next_tick + 1) * w->tick_cycles;
	return fired;
}
