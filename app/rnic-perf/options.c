/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's command line: perftest's flags and defaults (ib_write_bw, ib_read_lat & co., perftest 4.5)
 * where they mean the same, rnic-perf's own (--verify, --json, --hist-out, the engine's), and a clear refusal
 * of the perftest options softrnic does not support. doc/perftest.md has the side-by-side table; the table
 * below is the one place each option is defined (the parser and --help read it).
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "perf.h"
#include "rnic_tool.h"

const char *const perf_op_names[OP_N] = { "write", "read", "send", "fetch_add", "cmp_swap" };

enum opt_kind {
	K_FLAG,		/* an int of perf_opts set to 1 */
	K_FLAG8,	/* a uint8_t of perf_test set to 1 */
	K_U32,		/* a uint32_t of perf_test in [min, max] */
	K_OPT_U32,	/* a uint32_t of perf_opts in [min, max] */
	K_STR,		/* a const char * of perf_opts */
	K_FN,		/* its own setter */
	K_NO_EFFECT,	/* accepted: nothing to do in softrnic (help says why) */
	K_REFUSED,	/* not supported: refused with the reason (help) */
	K_HELP,
	K_HELP_ENGINE,
	K_VERSION,
};

struct optdef {
	const char *name;		/* long name */
	char letter;			/* short name, 0 for none */
	uint8_t has_arg;
	uint8_t kind;
	uint16_t offset;		/* K_FLAG, K_OPT_U32, K_STR: in perf_opts; K_FLAG8, K_U32: in perf_test */
	uint32_t min, max;		/* K_U32 */
	int (*set)(struct perf_opts *o, const char *arg);	/* K_FN */
	const char *arg;		/* the value's name in --help */
	const char *help;
};

static int bad(const char *opt, const char *value, const char *why);
static int refuse(const char *what, const char *why);

static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (s[0] == '-' || s[0] == '\0')
		return -1;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int
parse_double(const char *s, double min, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno == 0 && end != s && *end == '\0' && *out >= min && *out <= max ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Setters                                                                                                  */

static int
set_op_name(struct perf_opts *o, const char *arg)
{
	for (int op = 0; op < OP_N; op++) {
		if (strcmp(arg, perf_op_names[op]) == 0) {
			o->t.op = (enum perf_op)op;
			return 0;
		}
	}
	return bad("--op", arg, "write, read, send, fetch_add or cmp_swap");
}

/* --op-ab OP:MS */
static int
set_op_ab(struct perf_opts *o, const char *arg)
{
	const char *colon = strchr(arg, ':');
	uint64_t ms;

	for (int op = 0; colon != NULL && op < OP_N; op++) {
		if (strncmp(arg, perf_op_names[op], (size_t)(colon - arg)) != 0 ||
		    perf_op_names[op][colon - arg] != '\0')
			continue;
		if (parse_u64(colon + 1, 10, 10000, &ms) != 0)
			break;
		o->t.op_ab = (enum perf_op)op;
		o->t.op_ab_ms = (uint32_t)ms;
		return 0;
	}
	return bad("--op-ab", arg, "OP:MS, OP an op of -o (write, read, send), MS 10 .. 10000");
}

/* --qp-ab N:T:MS */
static int
set_qp_ab(struct perf_opts *o, const char *arg)
{
	char buf[64], *field[3] = { buf, NULL, NULL };
	uint64_t n, depth, ms;

	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		return bad("--qp-ab", arg, "too long");
	for (int i = 1; i < 3 && field[i - 1] != NULL; i++) {
		field[i] = strchr(field[i - 1], ':');
		if (field[i] != NULL)
			*field[i]++ = '\0';
	}
	if (field[2] == NULL || parse_u64(field[0], 1, PERF_MAX_QP - 1, &n) != 0 ||
	    parse_u64(field[1], 1, 4096, &depth) != 0 || parse_u64(field[2], 10, 10000, &ms) != 0)
		return bad("--qp-ab", arg, "N:T:MS, the first N QPs (below -q) with T messages in flight each "
			   "(1 .. 4096), MS 10 .. 10000");
	o->t.qp_ab_n = (uint32_t)n;
	o->t.qp_ab_depth = (uint32_t)depth;
	o->t.qp_ab_ms = (uint32_t)ms;
	return 0;
}

/* perftest's -o is --outs (READs/atomics outstanding); rnic-perf's -o names the operation: a number is the
 * one, a name the other. */
static int
set_outs_or_op(struct perf_opts *o, const char *arg)
{
	uint64_t v;

	if (arg[0] < '0' || arg[0] > '9')
		return set_op_name(o, arg);
	if (parse_u64(arg, 1, UINT8_MAX, &v) != 0)
		return bad("-o/--outs", arg, "READs and atomics outstanding per QP, 1 .. the device's maximum");
	o->t.outs = (uint32_t)v;
	return 0;
}

static int
set_atomic_type(struct perf_opts *o, const char *arg)
{
	if (strcmp(arg, "FETCH_AND_ADD") == 0)
		o->t.op = OP_FETCH_ADD;
	else if (strcmp(arg, "CMP_AND_SWAP") == 0)
		o->t.op = OP_CMP_SWAP;
	else
		return bad("-A/--atomic_type", arg, "CMP_AND_SWAP or FETCH_AND_ADD");
	return 0;
}

static int
set_bw(struct perf_opts *o, const char *arg)
{
	(void)arg;
	o->t.mode = MODE_BW;
	return 0;
}

static int
set_lat(struct perf_opts *o, const char *arg)
{
	(void)arg;
	o->t.mode = MODE_LAT;
	return 0;
}

static int
set_conn(struct perf_opts *o, const char *arg)
{
	static const struct {
		const char *name;
		enum rnic_qp_type type;
	} types[] = { { "RC", RNIC_QPT_RC }, { "UC", RNIC_QPT_UC }, { "UD", RNIC_QPT_UD } };

	for (unsigned int i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcmp(arg, types[i].name) == 0) {
			o->t.conn = types[i].type;
			return 0;
		}
	}
	if (strcmp(arg, "XRC") == 0 || strcmp(arg, "DC") == 0 || strcmp(arg, "SRD") == 0)
		return bad("-c/--connection", arg, "not supported: softrnic has RC, UC and UD QPs");
	return bad("-c/--connection", arg, "RC, UC or UD");
}

static int
set_size(struct perf_opts *o, const char *arg)
{
	uint64_t v;

	if (parse_u64(arg, 1, PERF_MAX_SIZE, &v) != 0)
		return bad("-s/--size", arg, "1 .. 8388608");
	o->t.size = (uint32_t)v;
	o->size_given = 1;
	return 0;
}

static int
set_iters(struct perf_opts *o, const char *arg)
{
	if (parse_u64(arg, 1, 1000000000ull, &o->t.iters) != 0)
		return bad("-n/--iters", arg, "1 .. 1000000000");
	o->iters_given = 1;
	return 0;
}

static int
set_duration(struct perf_opts *o, const char *arg)
{
	if (parse_double(arg, 0.001, 86400, &o->t.duration) != 0)
		return bad("-D/--duration", arg, "seconds, 0.001 .. 86400");
	o->duration_given = 1;
	return 0;
}

static int
set_cq_mod(struct perf_opts *o, const char *arg)
{
	uint64_t v;

	if (parse_u64(arg, 1, 1024, &v) != 0)
		return bad("-Q/--cq-mod", arg, "1 .. 1024");
	o->t.cq_mod = (uint32_t)v;
	o->cq_mod_given = 1;
	return 0;
}

static int
set_qp_timeout(struct perf_opts *o, const char *arg)
{
	uint64_t v;

	if (parse_u64(arg, 0, 31, &v) != 0)
		return bad("-u/--qp-timeout", arg, "0 .. 31 (4.096 us x 2^T)");
	o->t.qp_timeout = (uint8_t)v;
	return 0;
}

static int
set_mtu(struct perf_opts *o, const char *arg)
{
	uint64_t v;

	for (int m = RNIC_MTU_256; parse_u64(arg, 256, 4096, &v) == 0 && m <= RNIC_MTU_4096; m++) {
		if (v == 128u << m) {
			o->t.mtu = (enum rnic_mtu)m;
			o->mtu_given = 1;
			return 0;
		}
	}
	return bad("-m/--mtu", arg, "256, 512, 1024, 2048 or 4096");
}

static int
set_port(struct perf_opts *o, const char *arg)
{
	uint64_t v;

	if (parse_u64(arg, 1, 65535, &v) != 0)
		return bad("-p/--port", arg, "a TCP port, 1 .. 65535");
	o->port = arg;
	return 0;
}

/* Values softrnic has one of: the option is accepted with it, refused with any other. */
static int
only(const char *opt, const char *arg, const char *value, const char *why)
{
	return strcmp(arg, value) == 0 ? 0 : bad(opt, arg, why);
}

static int
set_ib_port(struct perf_opts *o, const char *arg)
{
	(void)o;
	return only("-i/--ib-port", arg, "1", "not supported: a softrnic device has one port, port 1");
}

static int
set_sl(struct perf_opts *o, const char *arg)
{
	(void)o;
	return only("-S/--sl", arg, "0", "not supported: service levels other than 0");
}

static int
set_vector(struct perf_opts *o, const char *arg)
{
	(void)o;
	return only("-X/--vector", arg, "0", "not supported: a softrnic CQ has one completion vector, 0");
}

static int
set_pkey_index(struct perf_opts *o, const char *arg)
{
	(void)o;
	return only("--pkey_index", arg, "0", "not supported: the P_Key table has one entry, index 0");
}

static int
set_force_link(struct perf_opts *o, const char *arg)
{
	(void)o;
	return only("--force-link", arg, "Ethernet", "not supported: softrnic's link layer is Ethernet (RoCEv2)");
}

static int
set_limit_bw(struct perf_opts *o, const char *arg)
{
	return parse_double(arg, 0, 1e9, &o->limit_bw) == 0 ? 0 : bad("-w/--limit_bw", arg, "a bandwidth");
}

static int
set_limit_msgrate(struct perf_opts *o, const char *arg)
{
	return parse_double(arg, 0, 1e9, &o->limit_msgrate) == 0 ? 0 : bad("-y/--limit_msgrate", arg, "Mpps");
}

static int
set_rate_limit(struct perf_opts *o, const char *arg)
{
	return parse_double(arg, 0, 4e6, &o->rate_limit) == 0 ? 0 : bad("--rate_limit", arg, "a rate (--rate_units)");
}

/* perftest's units: Gbit/s (g, the default), MB/s (M), packets/s (p, not with a QP's own limit). */
static int
set_rate_units(struct perf_opts *o, const char *arg)
{
	if (strcmp(arg, "g") == 0 || strcmp(arg, "M") == 0) {
		o->rate_units = arg[0];
		return 0;
	}
	if (strcmp(arg, "p") == 0)
		return refuse("--rate_units p", "packets/s: perftest has no pps with the QP's (HW) rate limit either");
	return bad("--rate_units", arg, "g (Gbit/s) or M (MB/s)");
}

/* The QPs' own limit (rate_limit, paced by the engine) is perftest's HW; SW and PP are perftest's pacing of
 * its own posts and mlx5's packet pacing. */
static int
set_rate_limit_type(struct perf_opts *o, const char *arg)
{
	(void)o;
	if (strcmp(arg, "HW") == 0)
		return 0;
	if (strcmp(arg, "SW") == 0 || strcmp(arg, "PP") == 0)
		return refuse("--rate_limit_type", "HW only: the QP's rate_limit, paced by the engine");
	return bad("--rate_limit_type", arg, "HW");
}

static int
set_tclass(struct perf_opts *o, const char *arg)
{
	uint64_t v;

	if (parse_u64(arg, 0, 255, &v) != 0)
		return bad("--tclass", arg, "a traffic class, 0 .. 255 (DSCP << 2 | ECN)");
	o->t.tclass = (uint8_t)v;
	return 0;
}

static int
set_output(struct perf_opts *o, const char *arg)
{
	if (strcmp(arg, "bandwidth") == 0)
		o->output = OUT_BANDWIDTH;
	else if (strcmp(arg, "message_rate") == 0)
		o->output = OUT_MESSAGE_RATE;
	else if (strcmp(arg, "latency") == 0)
		o->output = OUT_LATENCY;
	else
		return bad("--output", arg, "bandwidth, message_rate or latency");
	return 0;
}

static int
set_out_json(struct perf_opts *o, const char *arg)
{
	(void)arg;
	if (o->out_json_file == NULL)
		o->out_json_file = "perftest_out.json";
	return 0;
}

static int
set_server(struct perf_opts *o, const char *arg)
{
	(void)arg;
	o->role = ROLE_SERVER;
	o->role_given = 1;
	return 0;
}

static int
set_loopback(struct perf_opts *o, const char *arg)
{
	(void)arg;
	o->role = ROLE_LOOPBACK;
	o->role_given = 1;
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The options                                                                                              */

#define T(f) ((uint16_t)offsetof(struct perf_test, f))
#define O(f) ((uint16_t)offsetof(struct perf_opts, f))
#define FLAG(n, l, f, h) { n, l, 0, K_FLAG, O(f), 0, 0, NULL, NULL, h }
#define FLAG8(n, l, f, h) { n, l, 0, K_FLAG8, T(f), 0, 0, NULL, NULL, h }
#define U32(n, l, f, lo, hi, a, h) { n, l, 1, K_U32, T(f), lo, hi, NULL, a, h }
#define OPT_U32(n, l, f, lo, hi, a, h) { n, l, 1, K_OPT_U32, O(f), lo, hi, NULL, a, h }
#define STR(n, l, f, a, h) { n, l, 1, K_STR, O(f), 0, 0, NULL, a, h }
#define FN(n, l, has, fn, a, h) { n, l, has, K_FN, 0, 0, 0, fn, a, h }
#define NO_EFFECT(n, l, has, h) { n, l, has, K_NO_EFFECT, 0, 0, 0, NULL, NULL, h }
#define REFUSED(n, l, has, why) { n, l, has, K_REFUSED, 0, 0, 0, NULL, NULL, why }

static const struct optdef optdefs[] = {
	/* the test */
	FN("op", 0, 1, set_op_name, "OP", "write (default), read, send, fetch_add, cmp_swap (-o OP too)"),
	FN("bw", 0, 0, set_bw, NULL, "bandwidth (the default of rnic-perf)"),
	FN("lat", 0, 0, set_lat, NULL, "latency: ping-pong for write and send, one at a time for the others"),
	FN("outs", 'o', 1, set_outs_or_op, "N", "READs/atomics outstanding per QP (default the device's maximum)"),
	FN("atomic_type", 'A', 1, set_atomic_type, "TYPE", "CMP_AND_SWAP or FETCH_AND_ADD (the atomic tests)"),
	FN("connection", 'c', 1, set_conn, "RC|UC|UD", "connection type (default RC)"),
	FN("size", 's', 1, set_size, "BYTES", "message size (default 65536, latency 2, atomics 8)"),
	FLAG8("all", 'a', sweep, "all sizes 2 .. 2^23"),
	FN("iters", 'n', 1, set_iters, "N", "messages per QP and size (default 5000 write bw, else 1000)"),
	FN("duration", 'D', 1, set_duration, "SEC", "run for SEC seconds instead of -n"),
	FLAG8("run_infinitely", 0, run_infinitely, "bandwidth every -D seconds (default 5) until SIGINT/SIGTERM"),
	U32("qp", 'q', nb_qp, 1, PERF_MAX_QP, "N", "QPs, 1 .. 65536 (default 1)"),
	FN("mtu", 'm', 1, set_mtu, "BYTES", "path MTU 256 .. 4096 (default: the port's MTU)"),
	U32("tx-depth", 't', tx_depth, 1, 4096, "N", "sends outstanding per QP (default 128)"),
	U32("inline_size", 'I', inline_size, 0, 512, "N", "post messages up to N bytes inline (default 0)"),
	FN("cq-mod", 'Q', 1, set_cq_mod, "N", "one signaled send in N (default 100; 1 above 8 KB; -l's size)"),
	U32("post_list", 'l', post_list, 1, PERF_MAX_POST_LIST, "N", "N sends per post (default 1)"),
	FLAG8("bidirectional", 'b', duplex, "both ends send (bandwidth)"),
	FN("qp-timeout", 'u', 1, set_qp_timeout, "T", "RC ACK timeout 4.096 us x 2^T (default 14)"),
	FLAG8("events", 'e', events, "sleep on completion events instead of polling"),
	U32("latency_gap", 0, latency_gap_us, 0, 1000000, "US", "latency: US microseconds between exchanges"),
	FN("rate_limit", 0, 1, set_rate_limit, "RATE", "every QP's rate_limit, paced by the engine (--rate_units)"),
	FN("rate_units", 0, 1, set_rate_units, "g|M", "--rate_limit in Gbit/s (g, default) or MB/s (M)"),
	FN("rate_limit_type", 0, 1, set_rate_limit_type, "HW", "the QP's rate_limit (HW, the only one)"),
	FN("tclass", 0, 1, set_tclass, "TC", "traffic class of the QPs' GRH: DSCP << 2 | ECN (106: ECT(0))"),
	FLAG8("verify", 0, verify, "check every byte of every message (and atomic results)"),
	U32("cc-ab", 0, cc_ab_ms, 10, 10000, "MS", "DCQCN on and off in turns of MS ms, each turn's rate compared"),
	FN("op-ab", 0, 1, set_op_ab, "OP:MS", "OP and -o's op in turns of MS ms, each turn's rate compared"),
	FN("qp-ab", 0, 1, set_qp_ab, "N:T:MS", "every QP (-t each) and the first N (T each) in turns of MS ms"),
	/* where */
	FN("loopback", 0, 0, set_loopback, NULL, "two devices in this process (rnic-perf's default)"),
	FN("server", 0, 0, set_server, NULL, "wait for a client (rnic_* names: the default without HOST)"),
	FN("port", 'p', 1, set_port, "PORT", "TCP port of the exchange (default 18515; --port NAME: the engine's)"),
	STR("ib-dev", 'd', dev_name, "DEV", "device (default the first; loopback: the requester's)"),
	FN("ib-port", 'i', 1, set_ib_port, "1", "device port (softrnic devices have port 1)"),
	OPT_U32("gid-index", 'x', gid_index, 0, 255, "N", "source GID index (default 0)"),
	FN("sl", 'S', 1, set_sl, "0", "service level (0 only)"),
	FN("vector", 'X', 1, set_vector, "0", "completion vector with -e (0 only)"),
	FN("pkey_index", 0, 1, set_pkey_index, "0", "P_Key index (0 only)"),
	FN("force-link", 0, 1, set_force_link, "Ethernet", "link layer (Ethernet only)"),
	/* what is printed */
	FLAG("report_gbits", 0, report_gbits, "bandwidth in Gb/s (10^9 bits) instead of MB/s (2^20 bytes)"),
	FLAG("report-both", 0, report_both, "-b: the local and remote results apart, after their sum"),
	FLAG("noPeak", 'N', no_peak, "no peak bandwidth (printed as 0)"),
	FLAG("report-cycles", 'C', report_cycles, "latency in TSC cycles instead of microseconds"),
	FLAG("report-histogram", 'H', report_hist, "latency: every sample, sorted"),
	FLAG("report-histogrm", 0, report_hist, "perftest's spelling of --report-histogram"),
	FLAG("report-unsorted", 'U', report_unsorted, "latency: every sample in the order taken"),
	FN("output", 0, 1, set_output, "WHAT", "only one figure per result: bandwidth, message_rate, latency"),
	FN("out_json", 0, 0, set_out_json, NULL, "the report as JSON (perftest's keys) in --out_json_file"),
	STR("out_json_file", 0, out_json_file, "FILE", "the --out_json file (default perftest_out.json)"),
	FN("limit_bw", 'w', 1, set_limit_bw, "BW", "fail (exit 1) when the average bandwidth is below BW"),
	FN("limit_msgrate", 'y', 1, set_limit_msgrate, "MPPS", "fail (exit 1) when the message rate is below"),
	OPT_U32("wait_destroy", 0, wait_destroy_s, 0, 3600, "SEC", "wait SEC seconds before releasing the resources"),
	FLAG("json", 0, json, "one JSON object per result (rnic-perf's keys, per-stage latency in ns)"),
	STR("hist-out", 0, hist_out, "FILE", "the stages' raw latency histograms, JSON (scripts/plot_stages.py)"),
	{ "help", 'h', 0, K_HELP, 0, 0, 0, NULL, NULL, "this help" },
	{ "help-engine", 0, 0, K_HELP_ENGINE, 0, 0, 0, NULL, NULL, "the engine's options" },
	{ "version", 'V', 0, K_VERSION, 0, 0, 0, NULL, NULL, "the version" },
	/* perftest options with nothing to do here */
	NO_EFFECT("CPU-freq", 'F', 0, "times come from the TSC, which does not follow the CPU frequency"),
	NO_EFFECT("dont_xchg_versions", 0, 0, "the peers exchange no versions"),
	NO_EFFECT("use_old_post_send", 0, 0, "rnic_post_send is softrnic's one posting call"),
	NO_EFFECT("disable_pcie_relaxed", 0, 0, "no PCIe between the application and softrnic"),
	/* a client names its server as perftest's does, by the HOST argument */
	REFUSED("client", 0, 1, "the server is the HOST argument, as perftest's: rnic-perf [options] HOST [-p PORT]"),
	/* perftest options softrnic does not support */
	REFUSED("rdma_cm", 'R', 0, "EOPNOTSUPP: softrnic has no RDMA CM yet (the QPs connect over TCP, -p)"),
	REFUSED("com_rdma_cm", 'z', 0, "EOPNOTSUPP: softrnic has no RDMA CM yet"),
	REFUSED("comm_rdma_cm", 0, 0, "EOPNOTSUPP: softrnic has no RDMA CM yet"),
	REFUSED("tos", 'T', 1, "needs -R (RDMA CM)"),
	REFUSED("retry_count", 0, 1, "needs -R (RDMA CM)"),
	REFUSED("burst_size", 0, 1, "PP (packet pacing) only: the QP's rate_limit has the engine's burst"),
	REFUSED("typical_pkt_size", 0, 1, "PP (packet pacing) only"),
	REFUSED("margin", 'f', 1, "no margins: the whole -D is measured"),
	REFUSED("hop_limit", 'L', 1, "the GRH hop limit is the device's"),
	REFUSED("dualport", 'O', 0, "a softrnic device has one port"),
	REFUSED("report-per-port", 0, 0, "a softrnic device has one port"),
	REFUSED("reversed", 0, 0, "the client is the one that sends"),
	REFUSED("rx-depth", 'r', 1, "the receive queue holds as many receives as -t"),
	REFUSED("recv_post_list", 0, 1, "receives are posted one at a time"),
	REFUSED("inline_recv", 0, 1, "no inline receive"),
	REFUSED("use-srq", 0, 0, "rnic-perf has no SRQ mode (softrnic has SRQs: perftest's ib_send_bw --use-srq runs "
		"through softrnic-run, doc/verbs.md)"),
	REFUSED("mcg", 'g', 0, "no multicast"),
	REFUSED("MGID", 'M', 1, "no multicast"),
	REFUSED("report-counters", 'W', 1, "the device's counters are in DPDK telemetry (/rnic/stats)"),
	REFUSED("cpu_util", 0, 0, "no CPU utilisation report"),
	REFUSED("dlid", 0, 1, "an InfiniBand option (softrnic is RoCEv2)"),
	REFUSED("ipv6", 0, 0, "the GIDs are the devices' addresses: --ip ADDR and -x choose"),
	REFUSED("source_ip", 0, 1, "the exchange's TCP socket takes the route's source address"),
	REFUSED("mmap", 0, 1, "buffers come from rnic_alloc_buf"),
	REFUSED("mmap-offset", 0, 1, "buffers come from rnic_alloc_buf"),
	REFUSED("use_hugepages", 0, 0, "buffers come from rnic_alloc_buf; EAL's memory: -- --socket-mem"),
	REFUSED("mr_per_qp", 0, 0, "one MR per end"),
	REFUSED("odp", 0, 0, "no on-demand paging"),
	REFUSED("perform_warm_up", 0, 0, "no warm-up phase"),
	REFUSED("log_dci_streams", 0, 1, "no DC"),
	REFUSED("log_active_dci_streams", 0, 1, "no DC"),
	REFUSED("aes_xts", 0, 0, "no encryption"),
	REFUSED("encrypt_on_tx", 0, 0, "no encryption"),
	REFUSED("sig_before", 0, 0, "no encryption"),
	REFUSED("aes_block_size", 0, 1, "no encryption"),
	REFUSED("data_enc_keys_number", 0, 1, "no encryption"),
	REFUSED("kek_path", 0, 1, "no encryption"),
	REFUSED("credentials_path", 0, 1, "no encryption"),
	REFUSED("data_enc_key_app_path", 0, 1, "no encryption"),
};

#define NB_OPTDEFS (sizeof(optdefs) / sizeof(optdefs[0]))

/* perftest's test names as rnic-perf's: the operation and mode, and a server without HOST. */
static const struct {
	const char *name;
	enum perf_op op;
	enum perf_mode mode;
} perftest_names[] = {
	{ "rnic_write_bw", OP_WRITE, MODE_BW }, { "rnic_write_lat", OP_WRITE, MODE_LAT },
	{ "rnic_read_bw", OP_READ, MODE_BW }, { "rnic_read_lat", OP_READ, MODE_LAT },
	{ "rnic_send_bw", OP_SEND, MODE_BW }, { "rnic_send_lat", OP_SEND, MODE_LAT },
	{ "rnic_atomic_bw", OP_FETCH_ADD, MODE_BW }, { "rnic_atomic_lat", OP_FETCH_ADD, MODE_LAT },
};

static const char *prog = "rnic-perf";

static int
bad(const char *opt, const char *value, const char *why)
{
	fprintf(stderr, "%s: %s '%s': %s (%s --help lists the options)\n", prog, opt, value, why, prog);
	return -1;
}

static int
refuse(const char *what, const char *why)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, why);
	return -1;
}

void
perf_usage(const char *name, void *stream)
{
	FILE *f = stream;

	fprintf(f, "usage: %s [options] [HOST] [-- EAL options [-- engine options]]\n"
		"  rnic-perf without HOST runs in loopback: two devices in this process on a net_ring pair;\n"
		"  with HOST it is the client of the server there (rnic-perf --server, or an rnic_* name).\n"
		"  rnic_write_bw, rnic_write_lat, rnic_read_bw, rnic_read_lat, rnic_send_bw, rnic_send_lat,\n"
		"  rnic_atomic_bw, rnic_atomic_lat are perftest's ib_* tests: without HOST they are the server.\n"
		"  doc/perftest.md compares every perftest option.\n", name);
	for (unsigned int i = 0; i < NB_OPTDEFS; i++) {
		const struct optdef *d = &optdefs[i];
		char left[64];

		if (d->kind == K_REFUSED || d->kind == K_NO_EFFECT)
			continue;
		snprintf(left, sizeof(left), "%c%c%c --%s%s%s", d->letter ? '-' : ' ', d->letter ? d->letter : ' ',
			 d->letter ? ',' : ' ', d->name, d->arg ? "=" : "", d->arg ? d->arg : "");
		fprintf(f, "  %-30s %s\n", left, d->help);
	}
	fputs("  perftest options accepted with no effect: -F, --dont_xchg_versions, --use_old_post_send,\n"
	      "      --disable_pcie_relaxed; refused with the reason: -R, -z, -T, -f, -L, -O, -r, -g, -M, -W,\n"
	      "      --burst_size, --use-srq, --reversed, ... (doc/perftest.md)\n", f);
	fputs(rnic_tool_engine_opts_help, f);
	fputs("  EAL options after \"--\" are added to the defaults (" RNIC_TOOL_EAL_DEFAULTS ");\n"
	      "      one of the same kind replaces its default (--file-prefix replaces --no-shconf)\n"
	      "  exit status: 0 every run completed (and verified), 1 a run failed, 2 bad options\n", f);
}

/* "-x/--name" or "--name". */
static const char *
opt_name(const struct optdef *d, char *buf, size_t len)
{
	if (d->letter != 0)
		snprintf(buf, len, "-%c/--%s", d->letter, d->name);
	else
		snprintf(buf, len, "--%s", d->name);
	return buf;
}

/* One option found: act by its kind. 0, 1 (done: --help, --version), or -1 (a usage error). */
static int
apply(struct perf_opts *o, const struct optdef *d, const char *arg)
{
	char name[64];

	switch (d->kind) {
	case K_FLAG:
		*(int *)((char *)o + d->offset) = 1;
		return 0;
	case K_FLAG8:
		*((uint8_t *)&o->t + d->offset) = 1;
		return 0;
	case K_U32:
	case K_OPT_U32: {
		uint64_t v;

		if (parse_u64(arg, d->min, d->max, &v) != 0) {
			char range[48];

			snprintf(range, sizeof(range), "%u .. %u", d->min, d->max);
			return bad(opt_name(d, name, sizeof(name)), arg, range);
		}
		*(uint32_t *)((d->kind == K_U32 ? (char *)&o->t : (char *)o) + d->offset) = (uint32_t)v;
		return 0;
	}
	case K_STR:
		*(const char **)((char *)o + d->offset) = arg;
		return 0;
	case K_FN:
		return d->set(o, arg);
	case K_NO_EFFECT:
		return 0;
	case K_REFUSED:
		fprintf(stderr, "%s: %s: not supported: %s\n", prog, opt_name(d, name, sizeof(name)), d->help);
		return -1;
	case K_HELP:
		perf_usage(prog, stdout);
		return 1;
	case K_HELP_ENGINE:
		rnic_engine_usage(stdout);
		return 1;
	default:
		printf("%s (softrnic) %s\n", prog, RNIC_VERSION);
		return 1;
	}
}

/* The defaults before the options: perftest's, and the test an rnic_* name stands for. */
static void
set_defaults(struct perf_opts *o, const char *name)
{
	*o = (struct perf_opts){
		.t = { .op = OP_WRITE, .mode = MODE_BW, .conn = RNIC_QPT_RC, .mtu = RNIC_MTU_4096, .nb_qp = 1,
		       .tx_depth = 128, .cq_mod = 100, .post_list = 1, .qp_timeout = 14 },
		.role = ROLE_LOOPBACK, .port = PERF_DEFAULT_PORT, .rate_units = 'g',
	};
	prog = name;
	for (unsigned int i = 0; i < sizeof(perftest_names) / sizeof(perftest_names[0]); i++) {
		if (strcmp(name, perftest_names[i].name) == 0) {
			o->t.op = perftest_names[i].op;
			o->t.mode = perftest_names[i].mode;
			o->role = ROLE_SERVER;
		}
	}
}

/* getopt_long's tables, from optdefs: every long option's val is 256 + its index. */
static void
getopt_tables(struct option *longopts, char *shortopts, int *by_letter)
{
	char *s = shortopts;

	*s++ = ':';
	for (unsigned int i = 0; i < NB_OPTDEFS; i++) {
		longopts[i] = (struct option){ optdefs[i].name, optdefs[i].has_arg ? required_argument : no_argument,
					       NULL, 256 + (int)i };
		if (optdefs[i].letter != 0) {
			by_letter[(unsigned char)optdefs[i].letter] = (int)i;
			*s++ = optdefs[i].letter;
			if (optdefs[i].has_arg)
				*s++ = ':';
		}
	}
	*s = '\0';
	longopts[NB_OPTDEFS] = (struct option){ NULL, 0, NULL, 0 };
}

/* The options and the positional HOST. 0, 1 (--help or --version done) or -1. */
static int
parse_options(int argc, char **argv, struct perf_opts *o)
{
	static struct option longopts[NB_OPTDEFS + 1];
	static char shortopts[3 * NB_OPTDEFS + 2];
	int by_letter[256], opt, ret = 0;

	memset(by_letter, -1, sizeof(by_letter));
	getopt_tables(longopts, shortopts, by_letter);
	optind = 0;
	opterr = 0;
	while (ret == 0 && (opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (opt == ':')
			return refuse(argv[optind - 1], "missing value");
		if (opt == '?')
			return refuse(optopt ? (char[]){ '-', (char)optopt, '\0' } : argv[optind - 1],
				      "unknown option (rnic-perf --help lists the options)");
		ret = apply(o, &optdefs[opt >= 256 ? opt - 256 : by_letter[opt]], optarg);
	}
	if (ret == 0 && optind < argc) {
		o->host = argv[optind++];
		if (optind < argc)
			return refuse(argv[optind], "one HOST only");
	}
	return ret;
}

/* Who this process is: loopback, server, or the client of HOST. */
static int
choose_role(struct perf_opts *o)
{
	if (o->host == NULL)
		return 0;
	if (o->role_given)
		return refuse(o->host, o->role == ROLE_SERVER ? "--server takes no HOST (its TCP port is -p)" :
			      "--loopback takes no HOST");
	o->role = ROLE_CLIENT;
	return 0;
}

/* perftest's dependent defaults (force_dependecies in perftest_parameters.c). */
static int
dependent_defaults(struct perf_opts *o)
{
	struct perf_test *t = &o->t;

	if (!o->size_given)
		t->size = perf_op_atomic(t->op) ? 8 : t->mode == MODE_LAT ? 2 : 65536;
	if (!o->iters_given)
		t->iters = t->mode == MODE_BW && t->op == OP_WRITE ? 5000 : 1000;
	if (t->run_infinitely && !o->duration_given)
		t->duration = 5;
	if (t->duration == 0)
		t->tx_depth = (uint32_t)RTE_MIN((uint64_t)t->tx_depth, t->iters);
	if (t->size > 8192 && t->conn != RNIC_QPT_UD && !t->sweep && !t->events && !o->cq_mod_given)
		t->cq_mod = 1;	/* perftest: moderation would make large messages' bandwidth inaccurate */
	if (t->post_list > 1 && !o->cq_mod_given)
		t->cq_mod = t->post_list;
	t->cq_mod = RTE_MIN(t->cq_mod, t->tx_depth);
	if (t->op == OP_READ || perf_op_atomic(t->op))
		t->inline_size = 0;
	if (o->report_unsorted)
		o->report_hist = 1;
	/* kbit/s, as verbs' rate_limit */
	t->rate_limit_kbps = (uint32_t)(o->rate_limit * (o->rate_units == 'M' ? 1048576.0 * 8 / 1000 : 1e6) + 0.5);
	if (o->rate_limit > 0 && t->rate_limit_kbps == 0)
		return refuse("--rate_limit", "below 1 kbit/s");
	return 0;
}

/* --cc-ab's name, --op-ab's or --qp-ab's: the first of them given. */
static const char *
turns_name(const struct perf_test *t)
{
	return t->cc_ab_ms != 0 ? "--cc-ab" : t->op_ab_ms != 0 ? "--op-ab" : "--qp-ab";
}

/* --op-ab's own limits: the op the first end posts switches. */
static int
check_op_ab(const struct perf_test *t)
{
	if (perf_op_atomic(t->op) || perf_op_atomic(t->op_ab))
		return refuse("--op-ab", "write, read and send only (and -o one of them)");
	if (t->conn != RNIC_QPT_RC && t->op_ab == OP_READ)
		return refuse("--op-ab", "READ needs -c RC");
	if (t->conn == RNIC_QPT_UD && t->op_ab != OP_SEND)
		return refuse("--op-ab", "UD carries SEND only");
	if (t->duplex || t->verify)
		return refuse("--op-ab", "not with -b or --verify (one end posts; each message's op is not kept)");
	return 0;
}

/* --qp-ab's: the QPs that post switch, their first N taking the deeper depth in their own turns. */
static int
check_qp_ab(const struct perf_test *t)
{
	if (t->qp_ab_n >= t->nb_qp)
		return refuse("--qp-ab", "N must be below -q (N QPs in turns against all -q of them)");
	if (t->qp_ab_depth < t->tx_depth)
		return refuse("--qp-ab", "T below -t (the first N QPs are -t deep in the turns of every QP; -Q and -l "
			      "fit -t)");
	if (t->duplex)
		return refuse("--qp-ab", "not with -b (one end posts: its QPs' turns are measured)");
	return 0;
}

/* --cc-ab switches both ends' DCQCN, --op-ab the op the first end posts, --qp-ab the QPs it posts on: both
 * ends in this process, one -D run the turns fit in. */
static int
check_turns(const struct perf_opts *o)
{
	const struct perf_test *t = &o->t;
	const char *name = turns_name(t);

	if (perf_turn_ms(t) == 0)
		return 0;
	if ((t->cc_ab_ms != 0) + (t->op_ab_ms != 0) + (t->qp_ab_ms != 0) > 1)
		return refuse(name, "not with --cc-ab, --op-ab or --qp-ab together: one setting in turns");
	if (o->role != ROLE_LOOPBACK)
		return refuse(name, "in loopback only: it switches both ends of the run");
	if (t->duration == 0 || t->run_infinitely || t->sweep)
		return refuse(name, "needs -D (one size, not --run_infinitely)");
	if (t->duration * 1000 / perf_turn_ms(t) > PERF_MAX_TURNS)
		return refuse(name, "more than 4096 turns in -D");
	if (t->op_ab_ms != 0)
		return check_op_ab(t);
	return t->qp_ab_ms != 0 ? check_qp_ab(t) : 0;
}

static int
check_bw_options(const struct perf_opts *o)
{
	const struct perf_test *t = &o->t;

	if (t->mode == MODE_LAT) {
		if (t->duplex)
			return refuse("-b", "bandwidth tests only (perftest's latency tests have no -b)");
		if (t->run_infinitely)
			return refuse("--run_infinitely", "bandwidth tests only, as perftest's");
		if (perf_turn_ms(t) != 0)
			return refuse(turns_name(t), "bandwidth tests only");
		return 0;
	}
	if (t->post_list > t->tx_depth)
		return refuse("-l/--post_list", "larger than -t (a whole list must fit the send queue)");
	if (t->duration == 0 && t->iters % t->post_list != 0)
		return refuse("-n/--iters", "must be a multiple of -l/--post_list");
	if (t->post_list > 1 && t->post_list % t->cq_mod != 0)
		return refuse("-l/--post_list", "must be a multiple of -Q/--cq-mod");
	if (t->run_infinitely && t->duplex && o->role != ROLE_LOOPBACK)
		return refuse("--run_infinitely", "with -b: in loopback only");
	return check_turns(o);
}

static int
check_test(const struct perf_opts *o)
{
	const struct perf_test *t = &o->t;

	if (perf_op_atomic(t->op) && (t->size != 8 || t->sweep))
		return refuse("-s/-a", "atomics are 8 bytes");
	if (t->conn != RNIC_QPT_RC && (t->op == OP_READ || perf_op_atomic(t->op)))
		return refuse(perf_op_names[t->op], "READ and atomics need -c RC");
	if (t->conn == RNIC_QPT_UD && t->op != OP_SEND)
		return refuse(perf_op_names[t->op], "UD carries SEND only");
	if (t->conn == RNIC_QPT_UD && !t->sweep && t->size > (128u << t->mtu))
		return refuse("-s/--size", "UD messages are at most one MTU");
	if (t->events && t->op == OP_WRITE && t->mode == MODE_LAT)
		return refuse("-e/--events", "WRITE latency polls the buffer (ib_write_lat has no -e either)");
	if (o->role != ROLE_LOOPBACK && t->nb_qp > PERF_MAX_QP_REMOTE)
		return refuse("-q/--qp", "1 .. 1024 between two processes");
	if (t->mode == MODE_LAT && o->role == ROLE_CLIENT && t->duration > 0)
		return refuse("-D", "latency against a server takes -n, not -D");
	return check_bw_options(o);
}

int
perf_parse_args(int argc, char **argv, struct perf_opts *o)
{
	int ret;

	set_defaults(o, basename(argv[0]));
	ret = parse_options(argc, argv, o);
	if (ret == 0)
		ret = choose_role(o);
	if (ret == 0)
		ret = dependent_defaults(o);
	if (ret == 0)
		ret = check_test(o);
	return ret;
}

/* The sizes of the run: one, or the -a sweep. */
uint32_t
perf_next_size(const struct perf_test *t, uint32_t size)
{
	if (!t->sweep)
		return size == 0 ? t->size : 0;
	size = size == 0 ? 2 : size * 2;
	if (t->conn == RNIC_QPT_UD && size > (128u << t->mtu))
		return 0;
	return size <= PERF_MAX_SIZE ? size : 0;
}

uint32_t
perf_max_size(const struct perf_test *t)
{
	return t->sweep ? (t->conn == RNIC_QPT_UD ? 128u << t->mtu : PERF_MAX_SIZE) : t->size;
}
