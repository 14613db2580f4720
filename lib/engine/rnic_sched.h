/* SPDX-License-Identifier: BSD-3-Clause
 * The QP scheduler of the patent (seed 004): a bitmap of QPs with work, served round-robin. A doorbell sets
 * the QP's bit; the requester clears it when the QP has nothing left to send. The cost of picking the next
 * QP does not grow with the number of QPs: a two-level bitmap (rte_bitmap) skips empty 64-QP words via its
 * summary level.
 */
#ifndef RNIC_SCHED_H
#define RNIC_SCHED_H

#include <stdint.h>

#include <rte_bitmap.h>

struct rnic_sched {
	struct rte_bitmap *active;
	uint32_t nb_slots;
	uint32_t slab_pos;	/* first slot of the 64-slot slab being served */
	uint64_t slab;		/* its bits not served yet in this round */
	uint32_t round;		/* rounds begun: the scan went back to a slab at or before the last one */
	void *mem;
};

/* Allocate a scheduler for slots 0..nb_slots-1 on the socket; returns 0 or -ENOMEM. */
int rnic_sched_init(struct rnic_sched *s, uint32_t nb_slots, int socket_id);
void rnic_sched_free(struct rnic_sched *s);

static inline void
rnic_sched_activate(struct rnic_sched *s, uint32_t slot)
{
	rte_bitmap_set(s->active, slot);
}

static inline void
rnic_sched_deactivate(struct rnic_sched *s, uint32_t slot)
{
	rte_bitmap_clear(s->active, slot);
	if (slot - s->slab_pos < 64)
		s->slab &= ~(1ULL << (slot - s->slab_pos));
}

/*
 * The next active slot in round-robin order: every active slot is returned once before any is returned
 * again. Returns 1 and the slot, or 0 when no slot is active. A round serves slots in increasing order
 * (the bitmap scan wraps around at the end of the table).
 */
static inline int
rnic_sched_next(struct rnic_sched *s, uint32_t *slot)
{
	if (s->slab == 0) {
		uint32_t last = s->slab_pos;

		if (!rte_bitmap_scan(s->active, &s->slab_pos, &s->slab))
			return 0;
		s->round += s->slab_pos <= last;
	}
	*slot = s->slab_pos + (uint32_t)__builtin_ctzll(s->slab);
	s->slab &= s->slab - 1;
	return 1;
}

/* Give back the slot rnic_sched_next has just returned, unserved: the next call returns it again. */
static inline void
rnic_sched_unget(struct rnic_sched *s, uint32_t slot)
{
	s->slab |= 1ULL << (slot - s->slab_pos);
}

/* The slot rnic_sched_next will most likely return after `ahead` more calls (0: the next one), one of the
 * slab being served, without taking it: its QP's lines can be prefetched while the current one is served.
 * 0 when the slab ends before it. */
static inline int
rnic_sched_peek(const struct rnic_sched *s, unsigned int ahead, uint32_t *slot)
{
	uint64_t rest = s->slab;

	for (unsigned int i = 0; i < ahead && rest != 0; i++)
		rest &= rest - 1;
	if (rest == 0)
		return 0;
	*slot = s->slab_pos + (uint32_t)__builtin_ctzll(rest);
	return 1;
}

#endif /* RNIC_SCHED_H */
