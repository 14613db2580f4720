/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf output: perftest's tables, the per-stage latency table, or one JSON object per result.
 */
#include <stdio.h>

#include "perf.h"

#define LINE "---------------------------------------------------------------------------------------"

static const char *
conn_name(enum rnic_qp_type t)
{
	return t == RNIC_QPT_RC ? "RC" : t == RNIC_QPT_UC ? "UC" : "UD";
}

void
perf_print_header(const struct perf_opts *o)
{
	if (o->json)
		return;
	printf("%s\n", LINE);
	printf("                    RDMA %s %s test (softrnic)\n", perf_op_names[o->op],
	       o->mode == MODE_BW ? "BW" : "Latency");
	printf(" Connection type : %s\t\tNumber of qps : %u\n", conn_name(o->conn), o->nb_qp);
	printf(" TX depth        : %u\t\tMtu           : %u[B]\n", o->mode == MODE_BW ? o->tx_depth : 1,
	       128u << o->mtu);
	printf(" Inline size     : %u\t\tVerify        : %s\n", o->inline_size, o->verify ? "on" : "off");
	printf("%s\n", LINE);
	if (o->mode == MODE_BW)
		printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n",
		       o->report_gbits ? "Gb/sec" : "MB/sec", o->report_gbits ? "Gb/sec" : "MB/sec");
	else
		printf(" #bytes #iterations    t_min[usec]    t_median[usec]    t_avg[usec]    99%% percentile[usec]"
		       "    99.9%% percentile[usec]    t_max[usec]\n");
}

static double
bw_unit(const struct perf_opts *o, double MBps)
{
	return o->report_gbits ? MBps * 8.0 * 1.048576 / 1000.0 : MBps;	/* MB = 2^20 bytes, as perftest */
}

static void
print_stages_table(const struct perf_result *r)
{
	printf(" per-stage latency [usec]          queued before the stage          busy in the stage\n");
	printf(" stage        messages        p50       p99     p99.9         p50       p99     p99.9\n");
	for (int s = 0; s < r->nb_stages; s++) {
		const struct rnic_stage_latency *l = &r->stages[s];

		printf(" %-10s %10llu  %9.3f %9.3f %9.3f   %9.3f %9.3f %9.3f\n", l->stage,
		       (unsigned long long)(l->busy.count > l->queued.count ? l->busy.count : l->queued.count),
		       rnic_latency_quantile_ns(&l->queued, 0.5) / 1e3, rnic_latency_quantile_ns(&l->queued, 0.99) / 1e3,
		       rnic_latency_quantile_ns(&l->queued, 0.999) / 1e3, rnic_latency_quantile_ns(&l->busy, 0.5) / 1e3,
		       rnic_latency_quantile_ns(&l->busy, 0.99) / 1e3, rnic_latency_quantile_ns(&l->busy, 0.999) / 1e3);
	}
}

static void
print_json_hist(const char *name, const struct rnic_latency_hist *h)
{
	printf("\"%s\": {\"count\": %llu, \"p50\": %.1f, \"p99\": %.1f, \"p999\": %.1f}", name,
	       (unsigned long long)h->count, rnic_latency_quantile_ns(h, 0.5), rnic_latency_quantile_ns(h, 0.99),
	       rnic_latency_quantile_ns(h, 0.999));
}

static void
print_json(const struct perf_opts *o, const struct perf_result *r)
{
	printf("{\"op\": \"%s\", \"mode\": \"%s\", \"connection\": \"%s\", \"size\": %u, \"iterations\": %llu, "
	       "\"qps\": %u, \"tx_depth\": %u, \"mtu\": %u, \"seconds\": %.6f, \"verified\": %s, ",
	       perf_op_names[o->op], o->mode == MODE_BW ? "bw" : "lat", conn_name(o->conn), r->size,
	       (unsigned long long)r->iters, o->nb_qp, o->tx_depth, 128u << o->mtu, r->seconds,
	       r->verified ? "true" : "false");
	if (o->mode == MODE_BW)
		printf("\"bw_peak_MBps\": %.6f, \"bw_avg_MBps\": %.6f, \"bw_avg_Gbps\": %.6f, \"msg_rate_Mpps\": %.6f, "
		       "\"lost\": %llu, ", r->bw_peak_MBps, r->bw_avg_MBps, r->bw_avg_MBps * 8.0 * 1.048576 / 1000.0,
		       r->msg_rate_Mpps, (unsigned long long)r->lost);
	else
		printf("\"lat_us\": {\"min\": %.3f, \"p50\": %.3f, \"avg\": %.3f, \"p99\": %.3f, \"p999\": %.3f, "
		       "\"max\": %.3f, \"stdev\": %.3f}, ", r->lat_min, r->lat_p50, r->lat_avg, r->lat_p99, r->lat_p999,
		       r->lat_max, r->lat_stdev);
	printf("\"stages_ns\": [");
	for (int s = 0; s < r->nb_stages; s++) {
		printf("%s{\"stage\": \"%s\", ", s ? ", " : "", r->stages[s].stage);
		print_json_hist("queued", &r->stages[s].queued);
		printf(", ");
		print_json_hist("busy", &r->stages[s].busy);
		printf("}");
	}
	printf("]}\n");
}

void
perf_print_result(const struct perf_opts *o, const struct perf_result *r)
{
	if (o->json) {
		print_json(o, r);
	} else if (o->mode == MODE_BW) {
		printf(" %-10u %-14llu %-18.2f %-20.2f %.6f\n", r->size, (unsigned long long)r->iters,
		       bw_unit(o, r->bw_peak_MBps), bw_unit(o, r->bw_avg_MBps), r->msg_rate_Mpps);
		if (r->lost != 0)
			printf(" (%llu messages not received: UC/UD drop a SEND that finds no receive)\n",
			       (unsigned long long)r->lost);
	} else {
		printf(" %-6u %-11llu %-14.2f %-17.2f %-14.2f %-22.2f %-24.2f %.2f\n", r->size,
		       (unsigned long long)r->iters, r->lat_min, r->lat_p50, r->lat_avg, r->lat_p99, r->lat_p999,
		       r->lat_max);
	}
	if (!o->json && r->nb_stages > 0)
		print_stages_table(r);
	fflush(stdout);
}
