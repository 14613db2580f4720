/* SPDX-License-Identifier: BSD-3-Clause
 * Per-stage latency: the frames' TSC field, and the public queries (rnic.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>

#include "rnic_latency.h"
#include "rnic_pipeline.h"

const char *const rnic_lat_stage_names[RNIC_LAT_MAX] = {
	[RNIC_LAT_REQUESTER] = "requester",
	[RNIC_LAT_WIRE] = "wire",
	[RNIC_LAT_PARSER] = "parser",
	[RNIC_LAT_RESPONDER] = "responder",
	[RNIC_LAT_COMPLETER] = "completer",
};

int rnic_latency_on = 1;
int rnic_tsc_dynfield = -1;

int
rnic_latency_init(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "rnic_dynfield_stage_tsc",
		.size = sizeof(uint64_t),
		.align = __alignof__(uint64_t),
	};

	rnic_tsc_dynfield = rte_mbuf_dynfield_register(&desc);
	if (rnic_tsc_dynfield < 0) {
		RNIC_LOG(ERR, "cannot register the mbuf field of the latency stamps: %s", rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}

static void
hist_add(struct rnic_latency_hist *a, const struct rnic_latency_hist *b)
{
	/* Bucket by bucket, each a whole load of a counter its lcore stores: a consistent-enough snapshot. */
	a->count += __atomic_load_n(&b->count, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < RNIC_LAT_BUCKETS; i++)
		a->bucket[i] += __atomic_load_n(&b->bucket[i], __ATOMIC_RELAXED);
}

/* The histograms of every shard of dev added to stages (the first n of them). */
static void
add_device(const struct rnic_device *dev, struct rnic_stage_latency *stages, int n)
{
	for (int s = 0; s < RNIC_LAT_MAX && s < n; s++) {
		for (uint16_t k = 0; k < dev->nb_shards; k++) {
			hist_add(&stages[s].queued, &dev->pipeline[k]->lat[s].queued);
			hist_add(&stages[s].busy, &dev->pipeline[k]->lat[s].busy);
		}
	}
}

/* Check a query's arguments, then empty and name the stages it fills. */
static int
query_start(struct rnic_stage_latency *stages, int n)
{
	if (n < 0 || (n > 0 && stages == NULL))
		return -EINVAL;
	if (rnic_provider_get() != NULL && rnic_provider_get()->remote)
		return -ENOTSUP;	/* the stages run in rnicd: its telemetry has them (/rnic/stages) */
	for (int s = 0; s < RNIC_LAT_MAX && s < n; s++) {
		memset(&stages[s], 0, sizeof(stages[s]));
		snprintf(stages[s].stage, sizeof(stages[s].stage), "%s", rnic_lat_stage_names[s]);
	}
	return 0;
}

int
rnic_query_stage_latency(struct rnic_stage_latency *stages, int n)
{
	int ret = query_start(stages, n);

	if (ret != 0)
		return ret;
	for (int d = 0; rnic_engine_device(d) != NULL; d++)
		add_device(rnic_engine_device(d), stages, n);
	return RNIC_LAT_MAX;
}

int
rnic_query_device_stage_latency(struct rnic_context *context, struct rnic_stage_latency *stages, int n)
{
	int ret = context == NULL ? -EINVAL : query_start(stages, n);

	if (ret != 0)
		return ret;
	add_device(rnic_ctx_dev(context), stages, n);
	return RNIC_LAT_MAX;
}

void
rnic_latency_hist_sub(struct rnic_latency_hist *a, const struct rnic_latency_hist *b)
{
	a->count -= b->count;
	for (unsigned int i = 0; i < RNIC_LAT_BUCKETS; i++)
		a->bucket[i] -= b->bucket[i];
}

/* The cycles a bucket covers, [lo, hi): exact below 16, then 8 buckets per power of two (rnic_lat_bucket). */
static void
bucket_range(unsigned int b, double *lo, double *hi)
{
	unsigned int msb, sub;

	if (b < 16) {
		*lo = b;
		*hi = b + 1;
		return;
	}
	msb = (b - 16) / 8 + 4;
	sub = (b - 16) % 8;
	*lo = (double)(1ull << msb) * (1.0 + sub / 8.0);
	*hi = (double)(1ull << msb) * (1.0 + (sub + 1) / 8.0);
}

/* The cycles a bucket stands for: its middle. */
static double
bucket_cycles(unsigned int b)
{
	double lo, hi;

	if (b < 16)
		return b;
	bucket_range(b, &lo, &hi);
	return (lo + hi) / 2;
}

int
rnic_latency_bucket_ns(unsigned int bucket, double *lo_ns, double *hi_ns)
{
	double lo, hi;

	if (bucket >= RNIC_LAT_BUCKETS || lo_ns == NULL || hi_ns == NULL)
		return -EINVAL;
	bucket_range(bucket, &lo, &hi);
	/* As rnic_latency_quantile_ns converts: a bucket's quantile is within its bounds to the last bit. */
	*lo_ns = lo * 1e9 / (double)rte_get_tsc_hz();
	*hi_ns = hi * 1e9 / (double)rte_get_tsc_hz();
	return 0;
}

double
rnic_latency_quantile_ns(const struct rnic_latency_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (h == NULL || h->count == 0 || q <= 0 || q > 1)
		return 0;
	rank = (uint64_t)(q * (double)h->count + 0.5);
	rank = RTE_MAX(rank, (uint64_t)1);
	for (unsigned int b = 0; b < RNIC_LAT_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank)
			return bucket_cycles(b) * 1e9 / (double)rte_get_tsc_hz();
	}
	return bucket_cycles(RNIC_LAT_BUCKETS - 1) * 1e9 / (double)rte_get_tsc_hz();
}
