/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's per-stage latency: the engine's histograms (rnic_query_device_stage_latency) per device of this
 * process, as a table, as JSON, and raw (--hist-out, for scripts/plot_stages.py). Every figure is in
 * nanoseconds, as in DPDK telemetry's /rnic/stages.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

/* What a stage counts: the requester WQEs, the others frames (a message of n MTUs is n frames). */
static const char *
stage_unit(const char *stage)
{
	return strcmp(stage, "requester") == 0 ? "WQE" : "frame";
}

void
perf_stages_snapshot(struct perf_stage_set *s, struct perf_end *const *ends, int n)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < n && i < 2; i++) {
		int k = rnic_query_device_stage_latency(ends[i]->ctx, s->stage[i], PERF_MAX_STAGES);

		if (k <= 0)
			return;	/* a client of rnicd: the stages run in the daemon (its telemetry has them) */
		s->nb_stages = k < PERF_MAX_STAGES ? k : PERF_MAX_STAGES;
		s->dev[i] = ends[i]->name;
		s->nb_dev = i + 1;
	}
}

void
perf_stages_since(struct perf_stage_set *s, const struct perf_stage_set *before)
{
	for (int d = 0; d < s->nb_dev && d < before->nb_dev; d++) {
		for (int k = 0; k < s->nb_stages; k++) {
			rnic_latency_hist_sub(&s->stage[d][k].queued, &before->stage[d][k].queued);
			rnic_latency_hist_sub(&s->stage[d][k].busy, &before->stage[d][k].busy);
		}
	}
}

static void
hist_add(struct rnic_latency_hist *a, const struct rnic_latency_hist *b)
{
	a->count += b->count;
	for (unsigned int i = 0; i < RNIC_LAT_BUCKETS; i++)
		a->bucket[i] += b->bucket[i];
}

/* sum += s (the sizes of a sweep, for one table after it); the first s sets the devices. */
void
perf_stages_add(struct perf_stage_set *sum, const struct perf_stage_set *s)
{
	if (sum->nb_dev == 0) {
		*sum = *s;
		return;
	}
	for (int d = 0; d < sum->nb_dev && d < s->nb_dev; d++) {
		for (int k = 0; k < sum->nb_stages; k++) {
			hist_add(&sum->stage[d][k].queued, &s->stage[d][k].queued);
			hist_add(&sum->stage[d][k].busy, &s->stage[d][k].busy);
		}
	}
}

/* A quantile in ns as a table cell: "-" when nothing was measured. */
static const char *
cell(const struct rnic_latency_hist *h, double q, char *buf, size_t len)
{
	if (h->count == 0)
		return "-";
	snprintf(buf, len, "%.0f", rnic_latency_quantile_ns(h, q));
	return buf;
}

static void
print_row(const char *dev, const struct rnic_stage_latency *l)
{
	static const double q[3] = { 0.5, 0.99, 0.999 };
	char c[6][24];
	uint64_t count = l->busy.count > l->queued.count ? l->busy.count : l->queued.count;

	printf(" %-8s %-10s %10llu %-6s %9s %9s %9s   %9s %9s %9s\n", dev, l->stage, (unsigned long long)count,
	       stage_unit(l->stage), cell(&l->queued, q[0], c[0], 24), cell(&l->queued, q[1], c[1], 24),
	       cell(&l->queued, q[2], c[2], 24), cell(&l->busy, q[0], c[3], 24), cell(&l->busy, q[1], c[4], 24),
	       cell(&l->busy, q[2], c[5], 24));
}

/* The table: a row per device and stage, nanoseconds; what says what it covers (a size, or the sweep). */
void
perf_stages_print(const struct perf_opts *o, const struct perf_stage_set *s, const char *what)
{
	if (o->json || o->output != OUT_FULL || s->nb_dev == 0)
		return;
	printf(" per-stage latency in ns, %s, per device (rnic_query_device_stage_latency)\n", what);
	printf(" %-8s %-10s %10s %-6s %9s %9s %9s   %9s %9s %9s\n", "device", "stage", "count", "of", "queued p50",
	       "p99", "p99.9", "busy p50", "p99", "p99.9");
	for (int d = 0; d < s->nb_dev; d++)
		for (int k = 0; k < s->nb_stages; k++)
			print_row(s->dev[d], &s->stage[d][k]);
	printf(" queued: requester: post_send to the WQE's start, behind the QP's earlier WQEs (it grows with -t: a\n"
	       "   queue, not the stage's delay); wire: handed to TX to the peer's parser (loopback only); responder,\n"
	       "   completer: parsed to taken. busy: the stage's own time per WQE or frame. '-': not measured.\n");
}

static void
json_hist(const char *name, const struct rnic_latency_hist *h)
{
	if (h->count == 0) {
		printf("\"%s\": {\"count\": 0, \"p50\": null, \"p99\": null, \"p999\": null}", name);
		return;
	}
	printf("\"%s\": {\"count\": %llu, \"p50\": %.1f, \"p99\": %.1f, \"p999\": %.1f}", name,
	       (unsigned long long)h->count, rnic_latency_quantile_ns(h, 0.5), rnic_latency_quantile_ns(h, 0.99),
	       rnic_latency_quantile_ns(h, 0.999));
}

/* "stages_ns": [...] of a --json line. */
void
perf_stages_json(const struct perf_stage_set *s)
{
	const char *sep = "";

	printf("\"stages_ns\": [");
	for (int d = 0; d < s->nb_dev; d++) {
		for (int k = 0; k < s->nb_stages; k++) {
			const struct rnic_stage_latency *l = &s->stage[d][k];

			printf("%s{\"device\": \"%s\", \"stage\": \"%s\", \"unit\": \"%s\", ", sep, s->dev[d], l->stage,
			       stage_unit(l->stage));
			json_hist("queued", &l->queued);
			printf(", ");
			json_hist("busy", &l->busy);
			printf("}");
			sep = ", ";
		}
	}
	printf("]");
}

/* --hist-out: one JSON document, every size's raw histograms; the buckets' bounds once. */
static FILE *hist;
static const char *hist_sep;

int
perf_hist_open(const struct perf_opts *o)
{
	double lo, hi;

	if (o->hist_out == NULL)
		return 0;
	hist = fopen(o->hist_out, "w");
	if (hist == NULL)
		return perf_fail("--hist-out %s: %s", o->hist_out, strerror(errno));
	fprintf(hist, "{\"unit\": \"ns\", \"bucket_ns\": [");
	for (unsigned int b = 0; b < RNIC_LAT_BUCKETS && rnic_latency_bucket_ns(b, &lo, &hi) == 0; b++)
		fprintf(hist, "%s[%.3f, %.3f]", b ? ", " : "", lo, hi);
	fprintf(hist, "],\n \"results\": [");
	hist_sep = "";
	return 0;
}

static void
hist_raw(const char *name, const struct rnic_latency_hist *h)
{
	const char *sep = "";

	fprintf(hist, "\"%s\": {\"count\": %llu, \"buckets\": [", name, (unsigned long long)h->count);
	for (unsigned int b = 0; b < RNIC_LAT_BUCKETS; b++) {
		if (h->bucket[b] != 0) {
			fprintf(hist, "%s[%u, %llu]", sep, b, (unsigned long long)h->bucket[b]);
			sep = ", ";
		}
	}
	fprintf(hist, "]}");
}

void
perf_hist_add(uint32_t size, const struct perf_stage_set *s)
{
	if (hist == NULL)
		return;
	fprintf(hist, "%s\n  {\"size\": %u, \"stages\": [", hist_sep, size);
	for (int d = 0; d < s->nb_dev; d++) {
		for (int k = 0; k < s->nb_stages; k++) {
			fprintf(hist, "%s\n   {\"device\": \"%s\", \"stage\": \"%s\", \"unit\": \"%s\", ", d || k ? "," : "",
				s->dev[d], s->stage[d][k].stage, stage_unit(s->stage[d][k].stage));
			hist_raw("queued", &s->stage[d][k].queued);
			fprintf(hist, ", ");
			hist_raw("busy", &s->stage[d][k].busy);
			fprintf(hist, "}");
		}
	}
	fprintf(hist, "]}");
	hist_sep = ",";
}

int
perf_hist_close(void)
{
	int ret = 0;

	if (hist == NULL)
		return 0;
	fprintf(hist, "\n ]}\n");
	if (ferror(hist) || fclose(hist) != 0)
		ret = perf_fail("--hist-out: write error");
	hist = NULL;
	return ret;
}
