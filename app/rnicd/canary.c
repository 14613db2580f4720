/* SPDX-License-Identifier: BSD-3-Clause
 * Tests only (doc/rnicd.md, "Threat model"): RNICD_TEST_CANARY=HEX fills the daemon's memory with an 8-byte
 * pattern before the engine starts: blocks of its heap and of DPDK's (half of them freed again, so that
 * later allocations reuse memory that holds it) and the data room of every mbuf of the engine's pools. A
 * client that ever finds the pattern in its memory or in a frame was shown the daemon's memory.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "rnicd.h"

#define CANARY_BLOCKS 64
#define CANARY_BLOCK_BYTES (64u << 10)

static void *heap_kept[CANARY_BLOCKS / 2];
static void *dpdk_kept[CANARY_BLOCKS / 2];

static void
fill(void *p, size_t len, uint64_t pattern)
{
	for (size_t i = 0; i + sizeof(pattern) <= len; i += sizeof(pattern))
		memcpy((uint8_t *)p + i, &pattern, sizeof(pattern));
}

static void
fill_mbuf(struct rte_mempool *mp, void *arg, void *obj, unsigned int index)
{
	struct rte_mbuf *m = obj;

	(void)mp;
	(void)index;
	fill(m->buf_addr, m->buf_len, *(const uint64_t *)arg);
}

static void
fill_pool(struct rte_mempool *mp, void *arg)
{
	if (strncmp(mp->name, "rnic_pool", 9) == 0)
		rte_mempool_obj_iter(mp, fill_mbuf, arg);
}

void
rnicd_canary_fill(void)
{
	static uint64_t pattern;
	const char *hex = getenv("RNICD_TEST_CANARY");
	void *heap[CANARY_BLOCKS], *dpdk[CANARY_BLOCKS];

	if (hex == NULL)
		return;
	pattern = strtoull(hex, NULL, 16);
	for (unsigned int i = 0; i < CANARY_BLOCKS; i++) {
		heap[i] = malloc(CANARY_BLOCK_BYTES);
		dpdk[i] = rte_malloc("rnicd_canary", CANARY_BLOCK_BYTES, 0);
		if (heap[i] != NULL)
			fill(heap[i], CANARY_BLOCK_BYTES, pattern);
		if (dpdk[i] != NULL)
			fill(dpdk[i], CANARY_BLOCK_BYTES, pattern);
	}
	for (unsigned int i = 0; i < CANARY_BLOCKS; i++) {
		if (i % 2 == 0) {
			free(heap[i]);
			rte_free(dpdk[i]);
		} else {
			heap_kept[i / 2] = heap[i];
			dpdk_kept[i / 2] = dpdk[i];
		}
	}
	rte_mempool_walk(fill_pool, &pattern);
	RNICD_LOG(WARNING, "test canary %016" PRIx64 " written into the daemon's memory", pattern);
}
