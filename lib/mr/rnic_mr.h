/* SPDX-License-Identifier: BSD-3-Clause
 * Memory regions: the MPT (one entry per region) and MTT (page addresses), the key/PD/rights/bounds checks
 * of the seed's VirtToPhys, and the per-lcore 4-way set-associative translation cache (doc/mr.md, "Checks"
 * and "The translation cache").
 *
 * Keys: lkey = rkey = MPT index << key_bits | generation bits, the index taking as few bits as the table needs
 * and the generation the rest (doc/mr.md). Each registration of an index gets the next of its generations,
 * scrambled by a per-table permutation from a random start per index; free indexes are reused
 * least-recently-freed first, and an index whose generations are used up is retired, never reused. So a
 * key of a deregistered region never matches a later region. Index 0 is never used: it is never valid.
 */
#ifndef RNIC_MR_H
#define RNIC_MR_H

#include <stdint.h>

#include "rnic_priv.h"

#define RNIC_MR_PAGE_SHIFT 12
#define RNIC_MR_CACHE_SETS 64
#define RNIC_MR_CACHE_WAYS 4

/* One MPT entry: what the seed's Match-Info checks compare against. */
struct rnic_mpt_entry {
	uint64_t va;			/* first byte of the region */
	uint64_t length;
	uint32_t pdn;
	uint32_t mtt_base;		/* MTT index of the page holding va */
	uint32_t key;			/* the whole lkey/rkey of the registration */
	uint16_t access;		/* RNIC_ACCESS_* */
	uint8_t valid;
};

/* What an access needs (the seed's Flags): local read needs nothing beyond a valid key and PD. */
enum rnic_mr_need {
	RNIC_MR_NEED_LOCAL_READ = 0,
	RNIC_MR_NEED_LOCAL_WRITE = RNIC_ACCESS_LOCAL_WRITE,
	RNIC_MR_NEED_REMOTE_WRITE = RNIC_ACCESS_REMOTE_WRITE,
	RNIC_MR_NEED_REMOTE_READ = RNIC_ACCESS_REMOTE_READ,
	RNIC_MR_NEED_REMOTE_ATOMIC = RNIC_ACCESS_REMOTE_ATOMIC,
};

/* Result of a check, in the order the seed performs them. */
enum rnic_mr_status {
	RNIC_MR_OK = 0,
	RNIC_MR_BAD_INDEX,		/* key's MPT index beyond the table (or 0) */
	RNIC_MR_INVALID,		/* the entry is free: never registered or deregistered */
	RNIC_MR_BAD_KEY,		/* generation bits differ: a stale key */
	RNIC_MR_BAD_PD,
	RNIC_MR_NO_RIGHTS,
	RNIC_MR_OUT_OF_BOUNDS,		/* [va, va + len) not inside the region, or va + len overflows */
	RNIC_MR_MISALIGNED,		/* an atomic target not 8-byte aligned */
	RNIC_MR_STATUS_MAX
};

/* Completion status of the local side for a failed check of its own SGE or key. */
enum rnic_wc_status rnic_mr_status_to_wc(enum rnic_mr_status st);
/* NAK syndrome the responder answers a failed remote check with (RNIC_AETH_NAK_*, rnic_wire.h). */
uint8_t rnic_mr_status_to_nak(enum rnic_mr_status st);
const char *rnic_mr_status_str(enum rnic_mr_status st);

/* A contiguous piece of a translated access (the seed's gather/scatter requests). */
struct rnic_mr_seg {
	uint8_t *addr;
	uint32_t len;
};

struct rnic_mr_cache_way {
	uint32_t tag;			/* MPT index + 1; 0 = empty */
	uint32_t last_use;
	struct rnic_mpt_entry entry;
};

/*
 * A per-lcore translation cache. Deregistration bumps the table's epoch; a cache that sees a new epoch
 * empties itself before its next lookup, and rnic_dereg_mr waits until every engine lcore has passed a
 * quiescent point, so no access uses a deregistered region once rnic_dereg_mr has returned.
 */
struct rnic_mr_cache {
	uint32_t epoch;
	uint32_t tick;
	struct rnic_mr_cache_way set[RNIC_MR_CACHE_SETS][RNIC_MR_CACHE_WAYS];
	uint64_t hits;
	uint64_t misses;
	uint64_t evictions;
	uint64_t flushes;
};

struct rnic_mr_table {
	struct rnic_mpt_entry *mpt;
	uint32_t nb_mpt;
	uint32_t key_bits;		/* a key's generation bits: its MPT index is key >> key_bits */
	uint64_t *mtt;			/* page addresses (in-process: this process's view of the page) */
	uint32_t nb_mtt;
	uint32_t epoch;			/* bumped by every deregistration (cache invalidation) */
	/* control path only, under dev->lock */
	uint32_t *free_index;		/* FIFO of free MPT indexes (nb_mpt entries): oldest freed first */
	uint32_t free_head;
	uint32_t nb_free_index;
	uint32_t *uses;			/* registrations of each index so far; 2^key_bits: retired */
	uint32_t *gen_start;		/* each index's random first generation */
	uint32_t mix[2];		/* odd multipliers of the generation permutation (random) */
	uint32_t nb_retired;
	struct rnic_mtt_extent *free_mtt;	/* free MTT ranges, sorted by start */
	uint32_t nb_free_mtt;
	uint32_t nb_mr;
};

/* Create/free the device's MPT and MTT (called by the device module). */
int rnic_mr_table_create(struct rnic_device *dev);
void rnic_mr_table_free(struct rnic_device *dev);

/*
 * The key allocator (under dev->lock; rnic_reg_mr and rnic_dereg_mr use it). take: the free index freed
 * longest ago and the key of its next registration; -ENOMEM when no index is free. give: a deregistered
 * index goes back to the free list, or is retired when every key of it has been handed out once.
 */
int rnic_mr_slot_take(struct rnic_mr_table *t, uint32_t *index, uint32_t *key);
void rnic_mr_slot_give(struct rnic_mr_table *t, uint32_t index);

void rnic_mr_cache_init(struct rnic_mr_cache *cache);

/*
 * Check an access of len bytes at va with key for a QP of PD pdn, and split it into page-contiguous
 * segments (at most max_segs; pass 0 to check only). The cache may be NULL (control path, tests).
 * Returns RNIC_MR_OK and the number of segments in *nb_segs, or the first failing check.
 */
enum rnic_mr_status rnic_mr_translate(struct rnic_mr_table *t, struct rnic_mr_cache *cache, uint32_t key,
				      uint32_t pdn, uint32_t need, uint64_t va, uint64_t len,
				      struct rnic_mr_seg *segs, uint32_t max_segs, uint32_t *nb_segs);

#define RNIC_MR_RUN_SEGS 2

/*
 * The address of an access of len bytes that rnic_mr_translate split into the n segments of seg (at most
 * RNIC_MR_RUN_SEGS asked for) when it is one run of this process's memory (two pages at most that follow
 * each other there: any access of up to 4 KB), else NULL. A data path keeps it for the accesses within it,
 * each a copy without a translation, while rnic_mr_epoch_holds for the epoch of the cache that made it.
 */
static inline uint8_t *
rnic_mr_run(const struct rnic_mr_seg *seg, uint32_t n, uint64_t len)
{
	return n != 0 && seg[0].len + (n == 2 ? seg[1].len : 0) == len &&
	       (n == 1 || seg[0].addr + seg[0].len == seg[1].addr) ? seg[0].addr : NULL;
}

/* Whether a translation made while a cache's epoch was epoch still holds: no region was deregistered since
 * (one that was may be its region: translated again, an access to it fails as it must). */
static inline int
rnic_mr_epoch_holds(struct rnic_mr_table *t, uint32_t epoch)
{
	return __atomic_load_n(&t->epoch, __ATOMIC_ACQUIRE) == epoch;
}

/*
 * rnic_reg_mr for memory this process reaches at another address than the registrant's: rnicd registers a
 * client's buffer at the client's VA (addr: what keys and WQEs name) while the MTT maps it to the daemon's
 * own mapping of the same pages (host). rnic_reg_mr(pd, a, l, x) is rnic_mr_reg_host(pd, a, a, l, x).
 */
struct rnic_mr *rnic_mr_reg_host(struct rnic_pd *pd, void *addr, void *host, size_t length, int access);

#endif /* RNIC_MR_H */
