/* SPDX-License-Identifier: BSD-3-Clause
 * Per-stage latency stamps (rnic.h, rnic_query_stage_latency): where the engine takes them and how they are
 * bucketed. A frame carries the TSC of its last stage boundary in an mbuf dynamic field; a WQE's post time is
 * kept beside its wr_id. Each histogram has one writer, the lcore of its stage.
 */
#ifndef RNIC_LATENCY_H
#define RNIC_LATENCY_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include "rnic.h"

enum rnic_lat_stage {
	RNIC_LAT_REQUESTER,
	RNIC_LAT_WIRE,
	RNIC_LAT_PARSER,
	RNIC_LAT_RESPONDER,
	RNIC_LAT_COMPLETER,
	RNIC_LAT_MAX
};

extern const char *const rnic_lat_stage_names[RNIC_LAT_MAX];

/* Stamps on (the default) or off (--no-latency), and the offset of the frames' TSC field. */
extern int rnic_latency_on;
extern int rnic_tsc_dynfield;

/* Register the mbuf field; 0 or a negative errno. */
int rnic_latency_init(void);

/* Bucket of a duration in TSC cycles: exact below 16, then 8 buckets per power of two. */
static inline unsigned int
rnic_lat_bucket(uint64_t cycles)
{
	unsigned int msb;

	if (cycles < 16)
		return (unsigned int)cycles;
	msb = 63u - (unsigned int)__builtin_clzll(cycles);
	return RTE_MIN(16u + (msb - 4u) * 8u + (unsigned int)((cycles >> (msb - 3u)) & 7u),
		       (unsigned int)RNIC_LAT_BUCKETS - 1u);
}

static inline void
rnic_lat_record(struct rnic_latency_hist *h, uint64_t cycles, uint64_t times)
{
	h->bucket[rnic_lat_bucket(cycles)] += times;
	h->count += times;
}

static inline uint64_t *
rnic_mbuf_tsc(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, rnic_tsc_dynfield, uint64_t *);
}

#endif /* RNIC_LATENCY_H */
