/* SPDX-License-Identifier: BSD-3-Clause
 * QP scheduler memory (the fast path is inline in rnic_sched.h).
 */
#include <errno.h>

#include <rte_malloc.h>

#include "rnic_sched.h"

int
rnic_sched_init(struct rnic_sched *s, uint32_t nb_slots, int socket_id)
{
	uint32_t size = rte_bitmap_get_memory_footprint(nb_slots);

	s->mem = rte_zmalloc_socket("rnic_sched", size, RTE_CACHE_LINE_SIZE, socket_id);
	if (s->mem == NULL)
		return -ENOMEM;
	s->active = rte_bitmap_init(nb_slots, s->mem, size);
	if (s->active == NULL) {
		rte_free(s->mem);
		s->mem = NULL;
		return -ENOMEM;
	}
	s->nb_slots = nb_slots;
	s->slab_pos = 0;
	s->slab = 0;
	return 0;
}

void
rnic_sched_free(struct rnic_sched *s)
{
	if (s->active != NULL)
		rte_bitmap_free(s->active);
	rte_free(s->mem);
	s->mem = NULL;
	s->active = NULL;
}
