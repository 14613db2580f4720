/* SPDX-License-Identifier: BSD-3-Clause
 * A device's counters (rnic_query_device_counters, telemetry's /rnic/stats): its pipelines' stage counters
 * summed over stages and shards, the counters kept outside them (CQ events, clients' doorbell queues, log
 * lines suppressed), the neighbour cache's, then the same under mlx5's names (rnic_hw_counters.c); and
 * each tenant's share (rnic_device_tenant_stats). doc/engine.md, "Observability", lists them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "rnic_dbq.h"
#include "rnic_neigh.h"
#include "rnic_pipeline.h"

static const char *const counter_names[] = {
#define RNIC_X(name, what) #name,
	RNIC_PIPELINE_COUNTERS(RNIC_X)
#undef RNIC_X
};

/* The device's pipeline counter at this index (the named ones, then the drops by reason), summed. */
static uint64_t
counter_sum(const struct rnic_device *dev, unsigned int index)
{
	uint64_t sum = 0;

	for (uint16_t k = 0; k < dev->nb_shards; k++) {
		for (int st = 0; st < RNIC_STAGE_MAX; st++) {
			const uint64_t *c = (const uint64_t *)&dev->pipeline[k]->stats[st];

			sum += __atomic_load_n(&c[index], __ATOMIC_RELAXED);
		}
	}
	return sum;
}

int
rnic_query_device_counters(struct rnic_context *ctx, struct rnic_counter *counters, int n)
{
	if (ctx == NULL || n < 0 || (n > 0 && counters == NULL))
		return -EINVAL;
	return rnic_ctx_ops(ctx)->query_device_counters(ctx, counters, n);
}

int
rnic_local_query_device_counters(struct rnic_context *ctx, struct rnic_counter *counters, int n)
{
	return rnic_device_counters(rnic_ctx_dev(ctx), counters, n);
}

/* The counters kept outside the pipelines: the device's CQ events, the bad producer indexes of its clients'
 * doorbell queues, and the log lines suppressed (for the whole engine: the limits are per call site, not
 * per device). */
static const char *const other_names[] = { "cq_errors", "cqes_lost", "bad_dbq_index", "log_lines_suppressed" };

/* Summed over every doorbell queue entry the device had (an entry's count outlives its queue). */
static uint64_t
dbq_bad_index(const struct rnic_device *dev)
{
	uint32_t nb = __atomic_load_n(&dev->nb_client_dbq, __ATOMIC_ACQUIRE);
	uint64_t sum = 0;

	for (uint32_t i = 0; i < nb; i++)
		sum += __atomic_load_n(&dev->client_dbq[i].bad_index, __ATOMIC_RELAXED);
	return sum;
}

static void
other_counter(const struct rnic_device *dev, unsigned int i, struct rnic_counter *c)
{
	const uint64_t values[RTE_DIM(other_names)] = {
		__atomic_load_n(&dev->cq_errors, __ATOMIC_RELAXED), __atomic_load_n(&dev->cqes_lost, __ATOMIC_RELAXED),
		dbq_bad_index(dev), __atomic_load_n(&rnic_log_suppressed, __ATOMIC_RELAXED),
	};

	snprintf(c->name, sizeof(c->name), "%s", other_names[i]);
	c->value = values[i];
}

/* The port's neighbour counters (rnic_neigh.h), as neigh_<name>. */
static const char *const neigh_names[] = {
#define RNIC_X(name, what) "neigh_" #name,
	RNIC_NEIGH_COUNTERS(RNIC_X)
#undef RNIC_X
};

static void
neigh_counters(const struct rnic_device *dev, struct rnic_counter *c)
{
	struct rnic_neigh_stats st;
	const uint64_t *v = (const uint64_t *)&st;

	RTE_BUILD_BUG_ON(sizeof(st) != sizeof(uint64_t) * RTE_DIM(neigh_names));
	rnic_neigh_stats(dev, &st);
	for (unsigned int i = 0; i < RTE_DIM(neigh_names); i++) {
		snprintf(c[i].name, sizeof(c[i].name), "%s", neigh_names[i]);
		c[i].value = v[i];
	}
}

int
rnic_device_counters(const struct rnic_device *dev, struct rnic_counter *counters, int n)
{
	const unsigned int named = RTE_DIM(counter_names);
	const unsigned int drops = named + RNIC_DROP_REASON_MAX - 1;	/* drops: every reason but "none" */
	const unsigned int others = drops + RTE_DIM(other_names);	/* then the counters kept outside */
	const unsigned int base = others + RTE_DIM(neigh_names);	/* and the neighbour cache's */
	const unsigned int total = base + rnic_hw_counter_count();	/* then the mlx5 names */
	struct rnic_counter all[RTE_DIM(counter_names) + RNIC_DROP_REASON_MAX + RTE_DIM(other_names) +
				RTE_DIM(neigh_names) + RNIC_HW_COUNTERS_MAX];

	if (n < 0 || (n > 0 && counters == NULL))
		return -EINVAL;
	RTE_BUILD_BUG_ON(offsetof(struct rnic_pipeline_stats, rx_drops) != sizeof(uint64_t) * RTE_DIM(counter_names));
	for (unsigned int i = 0; i < drops; i++) {
		if (i < named)
			snprintf(all[i].name, sizeof(all[i].name), "%s", counter_names[i]);
		else
			snprintf(all[i].name, sizeof(all[i].name), "rx_drop_%s",
				 rnic_drop_reason_str((enum rnic_drop_reason)(i - named + 1)));
		all[i].value = counter_sum(dev, i < named ? i : i + 1);
	}
	for (unsigned int i = drops; i < others; i++)
		other_counter(dev, i - drops, &all[i]);
	neigh_counters(dev, &all[others]);
	for (unsigned int i = base; i < total; i++)
		rnic_hw_counter(i - base, all, base, &all[i]);
	if (n > 0)
		memcpy(counters, all, sizeof(all[0]) * RTE_MIN(total, (unsigned int)n));
	return (int)total;
}

void
rnic_device_tenant_stats(const struct rnic_device *dev, uint32_t tenant, struct rnic_tenant_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (tenant >= RNIC_MAX_TENANTS)
		return;
	for (uint16_t s = 0; s < dev->nb_shards; s++) {
		const struct rnic_pipeline *p = dev->pipeline[s];
		const struct rnic_req_tenant *r = &p->req_tenant[tenant];
		const struct rnic_db_tenant *d = &p->db_tenant[tenant];

		out->doorbells += d->doorbells;
		out->doorbells_dropped += d->dropped;
		out->packets += r->packets;
		out->bytes += r->bytes;
		out->psns += r->psns;
		out->deferred += r->deferred;
		out->cap_waits += r->cap_waits;
		out->cap_held_ns += (uint64_t)((double)r->cap_held_cycles * 1e9 / (double)rte_get_tsc_hz());
		out->cap_messages += r->cap_msgs.released;
	}
}

int
rnic_device_tenant_share(struct rnic_device *dev, uint32_t tenant, uint32_t share)
{
	if (tenant >= RNIC_MAX_TENANTS || share < 1 || share > RNIC_SHARE_MAX)
		return -EINVAL;
	for (uint16_t s = 0; s < dev->nb_shards; s++)
		__atomic_store_n(&dev->pipeline[s]->req_tenant[tenant].share, share, __ATOMIC_RELAXED);
	return 0;
}

int
rnic_device_tenant_cap(struct rnic_device *dev, uint32_t tenant, uint64_t bits_per_s, uint64_t msgs_per_s)
{
	if (tenant >= RNIC_MAX_TENANTS || (bits_per_s != 0 && bits_per_s < RNIC_CAP_MIN_BPS) ||
	    bits_per_s > RNIC_CAP_MAX_BPS || msgs_per_s > RNIC_CAP_MAX_MPS)
		return -EINVAL;
	for (uint16_t s = 0; s < dev->nb_shards; s++) {
		struct rnic_req_tenant *t = &dev->pipeline[s]->req_tenant[tenant];

		__atomic_store_n(&t->cap_bps, bits_per_s, __ATOMIC_RELAXED);
		__atomic_store_n(&t->cap_mps, msgs_per_s, __ATOMIC_RELAXED);
		__atomic_fetch_add(&t->cap_gen, 1, __ATOMIC_RELEASE);
	}
	return 0;
}
