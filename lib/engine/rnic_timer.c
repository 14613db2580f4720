/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's timer wheel (rnic_timer.h).
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "rnic_timer.h"

#define WHEEL_MASK (RNIC_WHEEL_SIZE - 1)

int
rnic_timer_init(struct rnic_timer_wheel *w, uint32_t nb_slots, int socket_id)
{
	memset(w, 0, sizeof(*w));
	w->due = rte_zmalloc_socket("rnic_wheel", sizeof(*w->due) * nb_slots, 0, socket_id);
	w->next = rte_malloc_socket("rnic_wheel", sizeof(*w->next) * nb_slots, 0, socket_id);
	w->prev = rte_malloc_socket("rnic_wheel", sizeof(*w->prev) * nb_slots, 0, socket_id);
	w->bucket_of = rte_malloc_socket("rnic_wheel", sizeof(*w->bucket_of) * nb_slots, 0, socket_id);
	if (w->due == NULL || w->next == NULL || w->prev == NULL || w->bucket_of == NULL) {
		rnic_timer_free(w);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < nb_slots; s++)
		w->bucket_of[s] = RNIC_WHEEL_NONE;
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
	rte_free(w->due);
	rte_free(w->next);
	rte_free(w->prev);
	rte_free(w->bucket_of);
	w->due = NULL;
	w->next = NULL;
	w->prev = NULL;
	w->bucket_of = NULL;
}

/* The tick a deadline is filed under: its own, within [next_tick, the horizon]. */
static uint64_t
filing_tick(const struct rnic_timer_wheel *w, uint64_t tsc)
{
	uint64_t tick = tsc / w->tick_cycles;

	tick = RTE_MAX(tick, w->next_tick);
	return RTE_MIN(tick, w->next_tick + RNIC_WHEEL_SIZE - 1);
}

static void
link_slot(struct rnic_timer_wheel *w, uint32_t slot, uint64_t tick)
{
	uint32_t b = (uint32_t)(tick & WHEEL_MASK), head = w->bucket[b];

	w->next[slot] = head;
	w->prev[slot] = RNIC_WHEEL_NONE;
	if (head != RNIC_WHEEL_NONE)
		w->prev[head] = slot;
	w->bucket[b] = slot;
	w->bucket_of[slot] = b;
}

static void
unlink_slot(struct rnic_timer_wheel *w, uint32_t slot)
{
	uint32_t next = w->next[slot], prev = w->prev[slot];

	if (prev != RNIC_WHEEL_NONE)
		w->next[prev] = next;
	else
		w->bucket[w->bucket_of[slot]] = next;
	if (next != RNIC_WHEEL_NONE)
		w->prev[next] = prev;
	w->bucket_of[slot] = RNIC_WHEEL_NONE;
}

void
rnic_timer_set(struct rnic_timer_wheel *w, uint32_t slot, uint64_t tsc)
{
	uint32_t b = w->bucket_of[slot];

	w->due[slot] = tsc;
	if (tsc == 0)
		return;		/* dropped when its tick comes */
	if (b != RNIC_WHEEL_NONE) {
		/* Filed ticks lie in [next_tick, next_tick + RNIC_WHEEL_SIZE): the bucket names one. */
		uint64_t filed = w->next_tick + ((b - w->next_tick) & WHEEL_MASK);

		/* Looked at in time (re-filed then if still later): the deadline's tick is the filed one or later,
		 * told by a product, not filing_tick's division: a QP's every progress moves its deadline later. */
		if (filed == w->next_tick || tsc >= filed * w->tick_cycles)
			return;
		unlink_slot(w, slot);
	}
	link_slot(w, slot, filing_tick(w, tsc));
}

unsigned int
rnic_timer_expire(struct rnic_timer_wheel *w, uint64_t now, void (*expire)(void *arg, uint32_t slot), void *arg)
{
	uint64_t until;
	unsigned int fired = 0;

	/* Called on every requester poll: most calls fall within a tick and cost a comparison, no division. */
	if (now < w->due_tsc)
		return 0;
	until = now / w->tick_cycles;
	/* Far behind (the lcore was away): one turn of the wheel sees every bucket. */
	if (until - w->next_tick > RNIC_WHEEL_SIZE)
		w->next_tick = until - RNIC_WHEEL_SIZE;
	while (w->next_tick < until) {
		uint32_t b = (uint32_t)(w->next_tick & WHEEL_MASK), slot = w->bucket[b];

		/* The wheel moves past a bucket before its slots are handed out, so one filed again from the
		 * callback, even for a tick already gone, lands in a later bucket, not a turn later. */
		w->bucket[b] = RNIC_WHEEL_NONE;
		w->next_tick++;
		while (slot != RNIC_WHEEL_NONE) {
			uint32_t next = w->next[slot];
			uint64_t due = w->due[slot];

			w->bucket_of[slot] = RNIC_WHEEL_NONE;
			if (due != 0 && due / w->tick_cycles < until) {
				w->due[slot] = 0;
				expire(arg, slot);
				fired++;
			} else if (due != 0) {
				/* Moved later: filed again, past every bucket this call still empties. */
				link_slot(w, slot, filing_tick(w, due));
			}
			slot = next;
		}
	}
	w->due_tsc = (w->next_tick + 1) * w->tick_cycles;
	return fired;
}
