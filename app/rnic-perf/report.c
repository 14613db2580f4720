/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's report: perftest's test information, tables and rows (its printf formats, so that what parses
 * perftest's output parses this), --output's single figures, --out_json's file with perftest's keys, and
 * rnic-perf's own JSON lines (--json).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* perftest_parameters.h's formats */
#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define RESULT_FMT " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
#define RESULT_FMT_G " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
#define RESULT_FMT_LAT " #bytes #iterations    t_min[%s]    t_max[%s]  t_typical[%s]    t_avg[%s]    " \
	"t_stdev[%s]   99%% percentile[%s]   99.9%% percentile[%s] \n"
#define RESULT_FMT_LAT_DUR " #bytes        #iterations       t_avg[%s]    tps average\n"
#define REPORT_FMT " %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n"
#define REPORT_FMT_EXT " %-7lu    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf\n"
#define REPORT_FMT_LAT " %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f" \
	"\t\t%-7.2f \t\t%-7.2f\n"
#define REPORT_FMT_LAT_DUR " %-7lu       %" PRIu64 "            %-7.2f        %-7.2f\n"

static const char *
conn_name(enum rnic_qp_type t)
{
	return t == RNIC_QPT_RC ? "RC" : t == RNIC_QPT_UC ? "UC" : "UD";
}

/* perftest's test name: "RDMA_Write", "Atomic FETCH_AND_ADD", ... */
static const char *
test_name(enum perf_op op)
{
	static const char *const names[OP_N] = {
		[OP_WRITE] = "RDMA_Write", [OP_READ] = "RDMA_Read", [OP_SEND] = "Send",
		[OP_FETCH_ADD] = "Atomic FETCH_AND_ADD", [OP_CMP_SWAP] = "Atomic CMP_AND_SWAP",
	};

	return names[op];
}

static const char *
lat_unit(const struct perf_opts *o)
{
	return o->report_cycles ? "cycles" : "usec";
}

/* The bandwidth as printed: MB/s (2^20 bytes) or, with --report_gbits, Gb/s (10^9 bits), as perftest. */
static double
bw_unit(const struct perf_opts *o, double MBps)
{
	return o->report_gbits ? MBps * 1048576.0 * 8 / 1e9 : MBps;
}

static void
print_columns(const struct perf_opts *o)
{
	const char *u = lat_unit(o);

	if (o->t.mode == MODE_BW)
		fputs(o->report_gbits ? RESULT_FMT_G : RESULT_FMT, stdout);
	else if (o->t.duration > 0)
		printf(RESULT_FMT_LAT_DUR, u);
	else
		printf(RESULT_FMT_LAT, u, u, u, u, u, u, u);
}

/* Where the test runs, and the first QPs' addresses (perftest prints them all). */
static void
print_addresses(const struct perf_opts *o, const struct perf_end *e)
{
	const char *where = o->role == ROLE_LOOPBACK ? "loopback, this process" :
			    o->role == ROLE_SERVER ? "server" : "client";

	printf(" softrnic        : %s, %s%s, verify %s\n", where, e->name,
	       e->peer_end != NULL ? " and its peer" : "", o->t.verify ? "on" : "off");
	for (uint32_t q = 0; q < e->nb_qp && q < 4; q++) {
		const struct perf_qp_info *l = &e->self[q], *r = &e->peer[q];

		printf(" local address: LID 0000 QPN %#06x PSN %#08x RKey %#08x VAddr %#016" PRIx64 "\n", l->qpn, l->psn,
		       l->rkey, l->rx_addr);
		printf(" remote address: LID 0000 QPN %#06x PSN %#08x RKey %#08x VAddr %#016" PRIx64 "\n", r->qpn,
		       r->psn, r->rkey, r->rx_addr);
	}
	if (e->nb_qp > 4)
		printf(" (%u QPs: the first 4 shown)\n", e->nb_qp);
}

/* The device of the results (--out_json's "Device"). */
static const char *device;

/* perftest's ctx_print_test_info, for what softrnic has, then the table's columns. */
void
perf_print_header(const struct perf_opts *o, const struct perf_end *e)
{
	const struct perf_test *t = &o->t;

	device = e->name;
	if (o->json || o->output != OUT_FULL)
		return;
	printf(RESULT_LINE);
	printf("                    %s %s%s%s Test\n", test_name(t->op), t->duplex ? "Bidirectional " : "",
	       t->post_list > 1 && t->mode == MODE_BW ? "Post List " : "", t->mode == MODE_BW ? "BW" : "Latency");
	if (t->events)
		printf(" Test with events. Using %s_comp0\n", e->name);
	printf(" Dual-port       : OFF\t\tDevice         : %s\n", e->name);
	printf(" Number of qps   : %u\t\tTransport type : IB\n", t->nb_qp);
	printf(" Connection type : %s\t\tUsing SRQ      : OFF\n", conn_name(t->conn));
	printf(" PCIe relax order: Unsupported\n ibv_wr* API     : OFF\n");
	printf(" TX depth        : %u\n", t->mode == MODE_BW ? e->slots_per_qp : 1);
	if (t->qp_ab_ms != 0)
		printf(" --qp-ab         : the first %u QP%s %u deep in their turns\n", e->few_qps,
		       e->few_qps > 1 ? "s" : "", e->few_slots);
	if (t->post_list > 1 && t->mode == MODE_BW)
		printf(" Post List       : %u\n", e->post_list);
	if (t->mode == MODE_BW)
		printf(" CQ Moderation   : %u\n", e->cq_mod);
	printf(" Mtu             : %u[B]\n Link type       : Ethernet\n GID index       : %u\n", 128u << t->mtu,
	       e->gid_index);
	if (t->op == OP_READ || perf_op_atomic(t->op))
		printf(" Outstand reads  : %u\n", e->outs);
	else
		printf(" Max inline data : %u[B]\n", t->inline_size);
	printf(" rdma_cm QPs\t : OFF\n Data ex. method : Ethernet\n");
	printf(RESULT_LINE);
	print_addresses(o, e);
	printf(RESULT_LINE);
	print_columns(o);
	fflush(stdout);
}

void
perf_print_footer(const struct perf_opts *o)
{
	if (!o->json && o->output == OUT_FULL)
		printf(RESULT_LINE);
	fflush(stdout);
}

/* A result --out_json could not write: the run fails at its end (perf_out_json_close). */
static int out_json_failed;

/* --out_json's file can be written: checked before the run, as perftest does (it creates the file). */
int
perf_out_json_open(const struct perf_opts *o)
{
	FILE *f;

	if (o->out_json_file == NULL)
		return 0;
	f = fopen(o->out_json_file, "w");
	if (f == NULL)
		return perf_fail("--out_json_file %s: %s", o->out_json_file, strerror(errno));
	fclose(f);
	return 0;
}

int
perf_out_json_close(void)
{
	return out_json_failed ? -1 : 0;
}

/* --out_json: perftest's document, its keys (the file holds the last result, as perftest's). */
static void
out_json(const struct perf_opts *o, const struct perf_result *r)
{
	const struct perf_test *t = &o->t;
	FILE *f = fopen(o->out_json_file, "w");
	int err;

	if (f == NULL) {
		out_json_failed = perf_fail("--out_json_file %s: %s", o->out_json_file, strerror(errno));
		return;
	}
	fprintf(f, "{\n\"test_info\": {\n\"test\": \"%s_%s%s%sTest\",\n", test_name(t->op), t->duplex ? "Bidirectional_" : "",
		t->post_list > 1 && t->mode == MODE_BW ? "Post_List_" : "", t->mode == MODE_BW ? "BW_" : "Latency_");
	fprintf(f, "\"Dual_port\": \"OFF\",\n\"Device\": \"%s\",\n\"Number_of_qps\": %u,\n\"Transport_type\": \"IB\",\n"
		"\"Connection_type\": \"%s\",\n\"Using_SRQ\": \"OFF\",\n\"PCIe_relax_order\": \"Unsupported\",\n"
		"\"ibv_wr_API\": \"OFF\",\n\"TX_depth\": %u,\n", device != NULL ? device : "", t->nb_qp,
		conn_name(t->conn), t->mode == MODE_BW ? t->tx_depth : 1);
	if (t->mode == MODE_BW)
		fprintf(f, "\"CQ_Moderation\": %u,\n", t->cq_mod);
	fprintf(f, "\"Mtu\": %u,\n\"Link_type\": \"Ethernet\",\n\"GID_index\": %u,\n\"Max_inline_data\": %u,\n"
		"\"rdma_cm_QPs\": \"OFF\",\n\"Data_ex_method\": \"Ethernet\"\n},\n\"results\": {\n", 128u << t->mtu,
		o->gid_index, t->inline_size);
	if (t->mode == MODE_BW)
		fprintf(f, "\"MsgSize\": %u,\n\"n_iterations\": %" PRIu64 ",\n\"BW_peak\": %.2f,\n\"BW_average\": %.2f,\n"
			"\"MsgRate\": %.6f\n", r->size, r->iters, bw_unit(o, r->bw_peak_MBps), bw_unit(o, r->bw_avg_MBps),
			r->msg_rate_Mpps);
	else if (t->duration > 0)
		fprintf(f, "\"MsgSize\": %u,\n\"n_iterations\": %" PRIu64 ",\n\"t_avg\": %.2f,\n\"tps_average\": %.2f\n",
			r->size, r->iters, r->lat_avg, r->tps);
	else
		fprintf(f, "\"MsgSize\": %u,\n\"n_iterations\": %" PRIu64 ",\n\"t_min\": %.2f,\n\"t_max\": %.2f,\n"
			"\"t_typical\": %.2f,\n\"t_avg\": %.2f,\n\"t_stdev\": %.2f,\n\"percentile_99\": %.2f,\n"
			"\"percentile_99.9\": %.2f\n", r->size, r->iters, r->lat_min, r->lat_max, r->lat_p50, r->lat_avg,
			r->lat_stdev, r->lat_p99, r->lat_p999);
	fprintf(f, "}\n}\n");
	err = ferror(f);
	if (fclose(f) != 0 || err != 0)
		out_json_failed = perf_fail("--out_json_file %s: write error", o->out_json_file);
}

/* What B (0) and A (1) of --cc-ab's, --op-ab's or --qp-ab's turns are. */
static const char *
turn_name(const struct perf_test *t, int a)
{
	static char qps[2][24];
	uint32_t n = a ? t->qp_ab_n : t->nb_qp;

	if (t->cc_ab_ms != 0)
		return a ? "off" : "on";
	if (t->op_ab_ms != 0)
		return perf_op_names[a ? t->op : t->op_ab];
	snprintf(qps[a], sizeof(qps[a]), "%u QP%s", n, n > 1 ? "s" : "");
	return qps[a];
}

/* --cc-ab's object (B on, A off), --op-ab's (B its op, A -o's), --qp-ab's (B every QP, A the first ones). */
static void
json_turns(const struct perf_test *t, const struct perf_result *r)
{
	if (t->cc_ab_ms != 0)
		printf("\"cc_ab\": {\"on_Mpps\": %.6f, \"off_Mpps\": %.6f, ", r->ab_b_Mpps, r->ab_a_Mpps);
	else if (t->op_ab_ms != 0)
		printf("\"op_ab\": {\"b\": \"%s\", \"a\": \"%s\", \"b_Mpps\": %.6f, \"a_Mpps\": %.6f, ",
		       perf_op_names[t->op_ab], perf_op_names[t->op], r->ab_b_Mpps, r->ab_a_Mpps);
	else if (t->qp_ab_ms != 0)
		printf("\"qp_ab\": {\"b\": \"%s\", \"a\": \"%s\", \"b_qps\": %u, \"b_depth\": %u, \"a_qps\": %u, "
		       "\"a_depth\": %u, \"b_Mpps\": %.6f, \"a_Mpps\": %.6f, ", turn_name(t, 0), turn_name(t, 1),
		       t->nb_qp, t->tx_depth, t->qp_ab_n, t->qp_ab_depth, r->ab_b_Mpps, r->ab_a_Mpps);
	else
		return;
	printf("\"turn_ms\": %u, \"turns\": %u, \"pairs\": %u, \"ratio\": %.6f, \"ratio_min\": %.6f, "
	       "\"ratio_max\": %.6f, \"measured\": %.6f}, ", perf_turn_ms(t), r->ab_turns, r->ab_pairs, r->ab_ratio,
	       r->ab_ratio_min, r->ab_ratio_max, r->ab_measured);
}

/* rnic-perf's --json line. */
static void
json_line(const struct perf_opts *o, const struct perf_result *r, const struct perf_stage_set *st)
{
	const struct perf_test *t = &o->t;

	printf("{\"op\": \"%s\", \"mode\": \"%s\", \"connection\": \"%s\", \"size\": %u, \"iterations\": %" PRIu64 ", "
	       "\"qps\": %u, \"tx_depth\": %u, \"cq_mod\": %u, \"post_list\": %u, \"bidirectional\": %s, \"mtu\": %u, "
	       "\"seconds\": %.6f, \"verified\": %s, ", perf_op_names[t->op], t->mode == MODE_BW ? "bw" : "lat",
	       conn_name(t->conn), r->size, r->iters, t->nb_qp, t->tx_depth, t->cq_mod, t->post_list,
	       t->duplex ? "true" : "false", 128u << t->mtu, r->seconds, r->verified ? "true" : "false");
	if (t->mode == MODE_BW)
		printf("\"bw_peak_MBps\": %.6f, \"bw_avg_MBps\": %.6f, \"bw_avg_Gbps\": %.6f, \"msg_rate_Mpps\": %.6f, "
		       "\"lost\": %" PRIu64 ", ", r->bw_peak_MBps, r->bw_avg_MBps, r->bw_avg_MBps * 1048576.0 * 8 / 1e9,
		       r->msg_rate_Mpps, r->lost);
	json_turns(t, r);
	if (t->mode != MODE_BW)
		printf("\"lat_%s\": {\"min\": %.3f, \"p50\": %.3f, \"avg\": %.3f, \"p99\": %.3f, \"p999\": %.3f, "
		       "\"max\": %.3f, \"stdev\": %.3f}, \"tps\": %.1f, ", o->report_cycles ? "cycles" : "us", r->lat_min,
		       r->lat_p50, r->lat_avg, r->lat_p99, r->lat_p999, r->lat_max, r->lat_stdev, r->tps);
	perf_stages_json(st);
	printf("}\n");
}

static void
print_row(const struct perf_opts *o, const struct perf_result *r)
{
	if (o->output == OUT_BANDWIDTH)
		printf("%lf\n", bw_unit(o, r->bw_avg_MBps));
	else if (o->output == OUT_MESSAGE_RATE)
		printf("%lf\n", r->msg_rate_Mpps);
	else if (o->output == OUT_LATENCY)
		printf("%lf\n", r->lat_avg);
	else if (o->t.mode == MODE_BW)
		printf(o->report_gbits && bw_unit(o, r->bw_avg_MBps) < 0.1 ? REPORT_FMT_EXT : REPORT_FMT,
		       (unsigned long)r->size, r->iters, bw_unit(o, r->bw_peak_MBps), bw_unit(o, r->bw_avg_MBps),
		       r->msg_rate_Mpps);
	else if (o->t.duration > 0)
		printf(REPORT_FMT_LAT_DUR, (unsigned long)r->size, r->iters, r->lat_avg, r->tps);
	else
		printf(REPORT_FMT_LAT, (unsigned long)r->size, r->iters, r->lat_min, r->lat_max, r->lat_p50, r->lat_avg,
		       r->lat_stdev, r->lat_p99, r->lat_p999);
	if (o->output == OUT_FULL && r->lost != 0)
		printf(" (%" PRIu64 " messages not received: UC and UD drop a SEND that finds no receive)\n", r->lost);
	if (o->output == OUT_FULL && perf_turn_ms(&o->t) != 0)
		printf(" %s%s and %s in %u turns of %u ms: %s %.3f, %s %.3f Mpps (medians), %s / %s %.3f (median of "
		       "%u, %.3f .. %.3f; %.0f %% of the time measured)\n", o->t.cc_ab_ms != 0 ? "DCQCN " : "",
		       turn_name(&o->t, 0), turn_name(&o->t, 1), r->ab_turns, perf_turn_ms(&o->t), turn_name(&o->t, 0),
		       r->ab_b_Mpps, turn_name(&o->t, 1), r->ab_a_Mpps, turn_name(&o->t, 0), turn_name(&o->t, 1),
		       r->ab_ratio, r->ab_pairs, r->ab_ratio_min, r->ab_ratio_max, r->ab_measured * 100);
}

/* One result: the table's row (or the JSON line), and --out_json's file. */
void
perf_print_result(const struct perf_opts *o, const struct perf_result *r, const struct perf_stage_set *st)
{
	if (o->json)
		json_line(o, r, st);
	else
		print_row(o, r);
	if (o->out_json_file != NULL)
		out_json(o, r);
	fflush(stdout);
}

/* --report-both: after the sum, each direction on its own (perftest's "Local results", "Remote results"). */
void
perf_print_both(const struct perf_opts *o, const struct perf_result *local, const struct perf_result *remote)
{
	if (o->json || o->output != OUT_FULL || !o->report_both || !o->t.duplex)
		return;
	printf(RESULT_LINE "\n Local results: \n" RESULT_LINE);
	print_columns(o);
	print_row(o, local);
	printf(RESULT_LINE "\n Remote results: \n" RESULT_LINE);
	print_columns(o);
	print_row(o, remote);
	fflush(stdout);
}

/* -H and -U: every sample, "i, value", then the columns again (perftest's). */
void
perf_print_samples(const struct perf_opts *o, const double *lat, uint64_t n)
{
	if (o->json || o->output != OUT_FULL)
		return;
	printf("#, %s\n", lat_unit(o));
	for (uint64_t i = 0; i < n; i++)
		printf("%" PRIu64 ", %g\n", i + 1, lat[i]);
	printf(RESULT_LINE);
	print_columns(o);
}

/* -b: both directions as one result (perftest adds the two ends' figures). */
void
perf_sum_results(struct perf_result *sum, const struct perf_result *a, const struct perf_result *b)
{
	*sum = *a;
	sum->iters += b->iters;
	sum->bw_avg_MBps += b->bw_avg_MBps;
	sum->bw_peak_MBps += b->bw_peak_MBps;
	sum->msg_rate_Mpps += b->msg_rate_Mpps;
	sum->lost += b->lost;
	sum->seconds = a->seconds > b->seconds ? a->seconds : b->seconds;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0 .. n) (n > 0), v sorted in place: the latency figures and the turns of --cc-ab and --op-ab. */
double
perf_sort_median(double *v, uint64_t n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 == 0 ? (v[n / 2 - 1] + v[n / 2]) / 2 : v[n / 2];
}

/* -w and -y: 0, or -1 with perftest's message. */
int
perf_check_limits(const struct perf_opts *o, const struct perf_result *r)
{
	if (o->t.mode != MODE_BW)
		return 0;
	if (o->limit_bw > 0 && bw_unit(o, r->bw_avg_MBps) < o->limit_bw)
		return perf_fail("Error: BW result is below bw limit (%.2f < %.2f)", bw_unit(o, r->bw_avg_MBps),
				 o->limit_bw);
	if (o->limit_msgrate > 0 && r->msg_rate_Mpps < o->limit_msgrate)
		return perf_fail("Error: Msg rate is below msg_rate limit (%.6f < %.6f)", r->msg_rate_Mpps,
				 o->limit_msgrate);
	return 0;
}
