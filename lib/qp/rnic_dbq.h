/* SPDX-License-Identifier: BSD-3-Clause
 * The doorbell queue of an rnicd client: 64-bit SQ doorbells (rnic_wqe.h) from the client's posting threads
 * (multi-producer) to the engine's doorbell stage (single consumer), in memory the client shares with rnicd.
 *
 * Unlike an rte_ring, nothing the consumer relies on lives in the shared memory: the engine keeps its own
 * copy of the size and of its consumer index (struct rnic_dbq_reader), so a client that scribbles over the
 * queue can lose its own doorbells but never make the engine read outside the queue. The doorbells
 * themselves are checked like any doorbell (the QP must exist and belong to the client).
 */
#ifndef RNIC_DBQ_H
#define RNIC_DBQ_H

#include <errno.h>
#include <stdint.h>

#include <rte_pause.h>

struct rnic_dbq {
	uint32_t prod_head;		/* producers reserve slots here */
	uint32_t prod_tail;		/* ... and publish them here, in order */
	uint32_t size;			/* slots, a power of two (for the producers; the engine keeps its own) */
	uint32_t cons;			/* slots the engine has taken (written by the engine only) */
	uint64_t slot[];
};

/* The engine's view of one client's queue. */
struct rnic_dbq_reader {
	struct rnic_dbq *q;		/* the daemon's mapping; NULL: free entry */
	uint32_t mask;
	uint64_t bad_index;		/* producer indexes no producer writes, skipped (the device's bad_dbq_index) */
	uint32_t cons;
	uint32_t owner;			/* the client: doorbells may only name its QPs */
	uint32_t tenant;		/* < RNIC_MAX_TENANTS: whose share of the doorbell stage they take */
};

static inline size_t
rnic_dbq_memsize(uint32_t size)
{
	return sizeof(struct rnic_dbq) + (size_t)size * sizeof(uint64_t);
}

/* Producer (rnic_post_send in a client): 0, or -ENOBUFS when the queue is full. */
static inline int
rnic_dbq_push(struct rnic_dbq *q, uint64_t db)
{
	uint32_t size = q->size;
	uint32_t head = __atomic_load_n(&q->prod_head, __ATOMIC_RELAXED);

	do {
		if (head - __atomic_load_n(&q->cons, __ATOMIC_ACQUIRE) >= size)
			return -ENOBUFS;
	} while (!__atomic_compare_exchange_n(&q->prod_head, &head, head + 1, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	q->slot[head & (size - 1)] = db;
	/* Publish in reservation order: wait for the producers that reserved before us (a few stores away). */
	while (__atomic_load_n(&q->prod_tail, __ATOMIC_ACQUIRE) != head)
		rte_pause();
	__atomic_store_n(&q->prod_tail, head + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Consumer (the engine's doorbell stage): take up to n doorbells from q, the queue the caller loaded from
 * r->q once (the control path may clear r->q meanwhile; it frees the queue only after a quiescent state).
 * A producer index further ahead of ours than the queue holds comes from no producer (rnic_dbq_push stays
 * within a queue of the consumer index we publish): the client wrote it, and what lies before it is not
 * doorbells. The reader skips to it, takes nothing and counts the queue's bad index: the client lost its
 * own doorbells, and the engine does not spend its turns on up to 2^32 slots of garbage. */
static inline unsigned int
rnic_dbq_pop(struct rnic_dbq_reader *r, struct rnic_dbq *q, uint64_t *db, unsigned int n)
{
	uint32_t tail = __atomic_load_n(&q->prod_tail, __ATOMIC_ACQUIRE), avail = tail - r->cons;
	unsigned int i;

	if (avail > r->mask + 1) {
		r->cons = tail;
		__atomic_store_n(&r->bad_index, r->bad_index + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&q->cons, r->cons, __ATOMIC_RELEASE);
		return 0;
	}
	if (n > avail)
		n = avail;
	for (i = 0; i < n; i++)
		db[i] = __atomic_load_n(&q->slot[(r->cons + i) & r->mask], __ATOMIC_RELAXED);
	r->cons += n;
	if (n > 0)
		__atomic_store_n(&q->cons, r->cons, __ATOMIC_RELEASE);
	return n;
}

#endif /* RNIC_DBQ_H */
