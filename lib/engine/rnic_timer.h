/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's timers (the seed's TimerControl, seed 003 §3.7): a hashed timer wheel of QP slots.
 *
 * Each slot has one deadline, the earliest of its QP's loss timer and RNR timer, kept by the wheel in a
 * compact per-slot array. The slot is filed under the tick of that deadline or an earlier one: moving a
 * deadline later (every ACK does) or cancelling it (the last ACK does) only writes the array, and when the
 * filed tick comes the wheel re-files or drops the slot by itself. The QP's context is touched only when
 * its deadline has really come: with tens of thousands of QPs it is cold, and the ACKs of every round of
 * the round robin would otherwise bring each QP back into the cache once more for nothing.
 */
#ifndef RNIC_TIMER_H
#define RNIC_TIMER_H

#include <stdint.h>

#define RNIC_WHEEL_SIZE 4096		/* buckets; a power of two */
#define RNIC_WHEEL_NONE UINT32_MAX

struct rnic_timer_wheel {
	uint64_t tick_cycles;		/* TSC cycles per tick (about 16 us) */
	uint64_t next_tick;		/* the oldest tick not expired yet */
	uint64_t due_tsc;		/* when next_tick has fully passed: before it, expiring has nothing to do */
	uint32_t nb_slots;
	uint64_t *due;			/* per slot: its deadline (TSC), 0 for none */
	uint32_t *next;			/* per slot: the next and previous slots filed in the same bucket */
	uint32_t *prev;
	uint32_t *bucket_of;		/* per slot: the bucket it is filed in, RNIC_WHEEL_NONE if none */
	uint32_t bucket[RNIC_WHEEL_SIZE];	/* first slot filed under each tick (mod the wheel) */
};

/* 0 or -ENOMEM. */
int rnic_timer_init(struct rnic_timer_wheel *w, uint32_t nb_slots, int socket_id);
void rnic_timer_free(struct rnic_timer_wheel *w);

/* The slot's deadline is now tsc (0: it has none). An earlier deadline than the one filed files the slot
 * earlier; a later one or none costs a store. Deadlines past the wheel's horizon wait at the horizon, and
 * are filed again from there. */
void rnic_timer_set(struct rnic_timer_wheel *w, uint32_t slot, uint64_t tsc);

/* Call expire(arg, slot) for every slot whose deadline lies in a tick that has fully passed at now (its
 * deadline cleared first: the callback sets the next one). Returns the slots handed out. */
unsigned int rnic_timer_expire(struct rnic_timer_wheel *w, uint64_t now,
			       void (*expire)(void *arg, uint32_t slot), void *arg);

#endif /* RNIC_TIMER_H */
