/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's timers (the seed's TimerControl, seed 003 §3.7): a hashed timer wheel of QP slots.
 *
 * A QP is filed under the tick of its earliest deadline (loss timer or RNR timer). The deadlines themselves
 * live in the QP's context and move on every ACK; moving one later needs no wheel operation: when the tick
 * comes, the owner looks at the QP's real deadline and fires it or files the QP again. The data path thus
 * writes a TSC per ACK and touches the wheel about once per timeout, and expiring costs nothing per idle QP
 * (no scan of the QP table).
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
	uint32_t *next;			/* per QP slot: the next slot filed in the same bucket */
	uint8_t *filed;			/* per QP slot: filed in some bucket */
	uint32_t bucket[RNIC_WHEEL_SIZE];	/* first slot filed under each tick (mod the wheel) */
};

/* 0 or -ENOMEM. */
int rnic_timer_init(struct rnic_timer_wheel *w, uint32_t nb_slots, int socket_id);
void rnic_timer_free(struct rnic_timer_wheel *w);

/* Make sure the slot is looked at no later than the tick of tsc (no-op if it is already filed: its owner
 * re-files it when that tick comes and the deadline is later). Deadlines past the wheel's horizon are
 * filed at the horizon. */
void rnic_timer_file(struct rnic_timer_wheel *w, uint32_t slot, uint64_t tsc);

/* Call expire(arg, slot) for every slot filed under a tick that has fully passed at now. The callback may
 * file the slot again. Returns the slots handed out. */
unsigned int rnic_timer_expire(struct rnic_timer_wheel *w, uint64_t now,
			       void (*expire)(void *arg, uint32_t slot), void *arg);

#endif /* RNIC_TIMER_H */
