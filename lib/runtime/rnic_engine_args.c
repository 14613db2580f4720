/* SPDX-License-Identifier: BSD-3-Clause
 * The engine arguments: --config FILE, ports and addresses, the stage map, capture and fault options and
 * the device limits (rnic_engine_usage, config/softrnic.conf).
 */
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "rnic_runtime.h"

static const struct rnic_limits default_limits = {
	.max_pd = 4096,
	.max_mr = 16384,
	.max_mr_size = 1ULL << 32,
	.max_mtt_entries = 1u << 20,
	.max_cq = 4096,
	.max_cqe = 1u << 16,
	.max_qp = 4096,
	.max_qp_wr = 8192,
	.max_sge = 30,
	.max_inline_data = 512,
	.max_qp_rd_atom = RNIC_MAX_RD_ATOMIC,
	.max_ah = 4096,
	.window = RNIC_DEFAULT_WINDOW,
};

void
rnic_engine_usage(void *stream)
{
	fprintf(stream,
		"softrnic engine arguments (after the EAL arguments and \"--\"):\n"
		"  --config FILE    read engine arguments from FILE first (config/softrnic.conf shows them all)\n"
		"  --port NAME      use this ethdev (a --vdev or PCI device given to EAL) as a device;\n"
		"                   repeat for several; without --port: two devices on a net_ring pair\n"
		"  --ip ADDR[,ADDR] IPv4 or IPv6 address of the next device (its GID 0), in device order;\n"
		"                   more addresses (at most 4 in all, one family) are its GIDs 1, 2, ...:\n"
		"                   one per tenant (rnicd's tenant gids); without --ip a port on a kernel\n"
		"                   interface (iface=) takes that interface's address\n"
		"  --mtu BYTES      port MTU for RoCE payloads: 256, 512, 1024, 2048 or 4096 (default 4096)\n"
		"  --mbufs N        mbufs per port pool (default %u)\n"
		"  --stages MAP     stage -> lcore map: one (every stage on the first worker lcore), two\n"
		"                   (doorbell, requester, completer | parser, responder), split (doorbell |\n"
		"                   requester, completer | parser | responder), host (doorbell,\n"
		"                   requester, completer on the main lcore | parser, responder on the\n"
		"                   first worker), devices (every stage of device i on one lcore: the\n"
		"                   workers in turn, then the main lcore; devices=L+L+... names device i's\n"
		"                   lcore), shards (every stage of shard k on worker k, the doorbell on\n"
		"                   the first; shards=L+L+... names them), or\n"
		"                   doorbell=L,requester=L,completer=L,parser=L,responder=L (lcore ids;\n"
		"                   requester and completer share one). L+L+... gives a stage several\n"
		"                   lcores: QPs are sharded by QPN over them (requester, completer and\n"
		"                   responder, as many each; the parser one or as many). Stages on the main lcore run when the\n"
		"                   application calls rnic_poll_cq or rnic_engine_progress (manual\n"
		"                   progress). Default: two with two worker lcores or more, else one\n"
		"  --neigh IP,MAC   the MAC of a peer on another host, instead of ARP/ND (repeatable)\n"
		"  --pcap FILE      capture what every port sends and receives to a pcapng file (slows the\n"
		"                   data path; doc/capture.md)\n"
		"  --pcap-snaplen N keep the first N bytes of each frame (64 .. 65535; default: whole frames)\n"
		"  --pcap-count N   stop capturing after N frames\n"
		"  --pcap-filter F  only frames matching F: qp=N (destination QP), opcode=send|write|\n"
		"                   read_request|read_response|ack|atomic|atomic_ack|cnp|N, dir=in|out;\n"
		"                   comma-separated, every kind given must match (one of its values)\n"
		"  --fault SPEC     faults on what every port receives (doc/rnic_rt.md): drop=P,\n"
		"                   ge_p=P,ge_r=P[,ge_bad=P,ge_good=P] (burst loss), reorder=P[,depth=K]\n"
		"                   [,delay=US], duplicate=P, corrupt=P, down=MS[,at=MS,every=MS],\n"
		"                   rate=MBIT[,queue=FRAMES,bucket=BYTES,kmin=F,kmax=F,pmax=P] (a queue that\n"
		"                   marks ECN by depth), ecn=P, only=responses|requests, seed=S\n"
		"                   (reproducible for a seed); port=N: only what device N receives\n"
		"                   (repeatable; overrides the spec without port=)\n"
		"  --no-latency     take no per-stage latency stamps (rnic_query_stage_latency)\n"
		"  --idle-sleep US  a worker lcore that found no work in %u loops in a row sleeps US\n"
		"                   microseconds (1 .. %u) per loop until work comes (default: poll)\n"
		"  --window BYTES   bytes of SEND/WRITE frames an RC QP may have sent and not had\n"
		"                   acknowledged (%u .. %u, default %u)\n"
		"  --cc SPEC        congestion control (doc/congestion.md): dcqcn (the default: answer\n"
		"                   CE marks with CNPs, cut and recover a QP's rate on CNPs) or none,\n"
		"                   and NAME=VALUE of mlx5's DCQCN parameters: rp_enable, np_enable,\n"
		"                   np_min_time_between_cnps, np_cnp_dscp, rp_time_reset,\n"
		"                   rp_byte_reset, rp_threshold, rp_ai_rate, rp_hai_rate, rp_gd,\n"
		"                   rp_min_dec_fac, rp_min_rate, rp_max_rate, rp_dce_tcp_g,\n"
		"                   rp_dce_tcp_rtt, rp_rate_reduce_monitor_period,\n"
		"                   rp_initial_alpha_value; comma-separated, repeatable\n"
		"  --max-qp N  --max-cq N  --max-cqe N  --max-mr N  --max-pd N\n"
		"  --max-qp-wr N  --max-sge N  --max-inline N   device limits\n",
		DEFAULT_MBUFS, IDLE_LOOPS_BEFORE_SLEEP, MAX_IDLE_SLEEP_US, RNIC_MIN_WINDOW, RNIC_MAX_WINDOW,
		RNIC_DEFAULT_WINDOW);
}

/* Parse an address into a RoCEv2 GID: IPv6 as is, IPv4 as ::ffff:a.b.c.d. */
int
rnic_parse_gid(const char *text, union rnic_gid *gid)
{
	struct in_addr v4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET6, text, gid->raw) == 1)
		return 0;
	if (inet_pton(AF_INET, text, &v4) != 1)
		return -EINVAL;
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &v4, sizeof(v4));
	return 0;
}

int
rnic_parse_u32(const char *opt, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < min || v > max) {
		RNIC_LOG(ERR, "--%s %s: expected a number from %u to %u", opt, text, min, max);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* --ip ADDR[,ADDR...]: a device's GID table, GID 0 first; one address family, as the device's ARP or ND
 * speaks one. */
static int
parse_gid_list(const char *text, union rnic_gid gid[RNIC_GID_TBL_LEN], unsigned int *count)
{
	char buf[RNIC_GID_TBL_LEN * (INET6_ADDRSTRLEN + 1)], *save = NULL;
	unsigned int n = 0;

	if (strlen(text) >= sizeof(buf)) {
		RNIC_LOG(ERR, "--ip %s: too long (at most %d addresses)", text, RNIC_GID_TBL_LEN);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *a = strtok_r(buf, ",", &save); a != NULL; a = strtok_r(NULL, ",", &save)) {
		if (n == RNIC_GID_TBL_LEN) {
			RNIC_LOG(ERR, "--ip %s: at most %d addresses (the GID table's entries)", text,
				 RNIC_GID_TBL_LEN);
			return -EINVAL;
		}
		if (rnic_parse_gid(a, &gid[n]) != 0) {
			RNIC_LOG(ERR, "--ip %s: '%s' is not an IPv4 or IPv6 address", text, a);
			return -EINVAL;
		}
		if (rnic_gid_is_ipv4(&gid[n]) != rnic_gid_is_ipv4(&gid[0])) {
			RNIC_LOG(ERR, "--ip %s: IPv4 and IPv6 addresses mixed on one device", text);
			return -EINVAL;
		}
		n++;
	}
	if (n == 0) {
		RNIC_LOG(ERR, "--ip '%s': no address", text);
		return -EINVAL;
	}
	*count = n;
	return 0;
}

static int
parse_mtu(const char *text, enum rnic_mtu *mtu)
{
	static const unsigned int bytes[] = { 256, 512, 1024, 2048, 4096 };

	for (unsigned int i = 0; i < RTE_DIM(bytes); i++) {
		if (strtoul(text, NULL, 10) == bytes[i] && strspn(text, "0123456789") == strlen(text)) {
			*mtu = (enum rnic_mtu)(RNIC_MTU_256 + i);
			return 0;
		}
	}
	RNIC_LOG(ERR, "--mtu %s: expected 256, 512, 1024, 2048 or 4096", text);
	return -EINVAL;
}

enum {
	OPT_PORT = 256, OPT_IP, OPT_MTU, OPT_MBUFS, OPT_STAGES, OPT_NEIGH, OPT_PCAP, OPT_PCAP_SNAPLEN, OPT_PCAP_COUNT,
	OPT_PCAP_FILTER, OPT_FAULT, OPT_NO_LATENCY, OPT_IDLE_SLEEP, OPT_MAX_QP, OPT_MAX_CQ, OPT_MAX_CQE, OPT_MAX_MR,
	OPT_MAX_PD, OPT_MAX_QP_WR, OPT_MAX_SGE, OPT_MAX_INLINE, OPT_WINDOW, OPT_CC,
};

/* A --cc parameter: its mlx5 name, where it goes and its range. */
struct cc_key {
	const char *name;
	size_t off;
	uint32_t min;
	uint32_t max;
};

#define CC_U32(n, lo, hi) { #n, offsetof(struct rnic_cc_params, n), lo, hi }

static const struct cc_key cc_keys[] = {
	CC_U32(rp_enable, 0, 1),
	CC_U32(np_enable, 0, 1),
	CC_U32(np_cnp_dscp, 0, 63),
	CC_U32(np_min_time_between_cnps, 0, 1000000),
	CC_U32(rp_time_reset, 1, 1000000),
	CC_U32(rp_byte_reset, 1, 1u << 24),
	CC_U32(rp_threshold, 1, 1000),
	CC_U32(rp_ai_rate, 1, 1000000),
	CC_U32(rp_hai_rate, 1, 1000000),
	CC_U32(rp_gd, 0, 15),
	CC_U32(rp_min_dec_fac, 0, 100),
	CC_U32(rp_min_rate, 1, 1000000),
	CC_U32(rp_max_rate, 0, 1000000),
	CC_U32(rp_dce_tcp_g, 0, 1024),
	CC_U32(rp_dce_tcp_rtt, 1, 1000000),
	CC_U32(rp_rate_reduce_monitor_period, 0, 1000000),
	CC_U32(rp_initial_alpha_value, 0, 1023),
};

/* One item of --cc: dcqcn, none, or NAME=VALUE. */
static int
parse_cc_item(char *item, struct rnic_cc_params *cc)
{
	char *eq = strchr(item, '=');
	uint32_t v;

	if (strcmp(item, "dcqcn") == 0 || strcmp(item, "none") == 0) {
		cc->rp_enable = cc->np_enable = item[0] == 'd';
		return 0;
	}
	if (eq != NULL) {
		*eq = '\0';
		for (unsigned int i = 0; i < RTE_DIM(cc_keys); i++) {
			const struct cc_key *k = &cc_keys[i];

			char opt[64];

			if (strcmp(item, k->name) != 0)
				continue;
			snprintf(opt, sizeof(opt), "cc %s=", k->name);
			if (rnic_parse_u32(opt, eq + 1, k->min, k->max, &v) != 0)
				return -EINVAL;
			*(uint32_t *)(void *)((uint8_t *)cc + k->off) = v;
			return 0;
		}
	}
	RNIC_LOG(ERR, "--cc %s: expected dcqcn, none or NAME=VALUE of a DCQCN parameter (rnic_engine_usage)", item);
	return -EINVAL;
}

static int
parse_cc(const char *text, struct rnic_cc_params *cc)
{
	char buf[512], *save;

	if (strlen(text) >= sizeof(buf)) {
		RNIC_LOG(ERR, "--cc: longer than %zu characters", sizeof(buf) - 1);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save))
		if (parse_cc_item(item, cc) != 0)
			return -EINVAL;
	return 0;
}

/* --pcap and its options. */
static int
parse_capture(int opt, const char *text, struct rnic_engine_args *args)
{
	struct rnic_capture_conf *c = &args->capture;
	uint32_t count_hi;

	if (opt == OPT_PCAP) {
		c->path = text;
		return 0;
	}
	args->capture_options = 1;
	if (opt == OPT_PCAP_SNAPLEN)
		return rnic_parse_u32("pcap-snaplen", text, 64, 65535, &c->snaplen);
	if (opt == OPT_PCAP_COUNT) {
		int ret = rnic_parse_u32("pcap-count", text, 1, UINT32_MAX, &count_hi);

		c->count = count_hi;
		return ret;
	}
	if (rnic_capture_parse_filter(text, &c->filter) != 0) {
		RNIC_LOG(ERR, "--pcap-filter %s: expected qp=N, opcode=NAME|N or dir=in|out, comma-separated", text);
		return -EINVAL;
	}
	return 0;
}

static int
parse_limit(int opt, const char *text, struct rnic_limits *lim)
{
	switch (opt) {
	case OPT_MAX_QP:
		return rnic_parse_u32("max-qp", text, 1, 1u << 20, &lim->max_qp);
	case OPT_MAX_CQ:
		return rnic_parse_u32("max-cq", text, 1, 1u << 20, &lim->max_cq);
	case OPT_MAX_CQE:
		return rnic_parse_u32("max-cqe", text, 2, 1u << 22, &lim->max_cqe);
	case OPT_MAX_MR:
		return rnic_parse_u32("max-mr", text, 1, 1u << 24, &lim->max_mr);
	case OPT_MAX_PD:
		return rnic_parse_u32("max-pd", text, 1, 1u << 24, &lim->max_pd);
	case OPT_MAX_QP_WR:
		return rnic_parse_u32("max-qp-wr", text, 1, 1u << 15, &lim->max_qp_wr);
	case OPT_MAX_SGE:
		return rnic_parse_u32("max-sge", text, 1, 30, &lim->max_sge);
	case OPT_MAX_INLINE:
		return rnic_parse_u32("max-inline", text, 0, 4096, &lim->max_inline_data);
	case OPT_WINDOW:
		return rnic_parse_u32("window", text, RNIC_MIN_WINDOW, RNIC_MAX_WINDOW, &lim->window);
	}
	return -EINVAL;
}

/*
 * The engine arguments with `--config FILE` replaced, in place, by the file's words ('#' starts a
 * comment): arguments after it override the file's. The words live in buf.
 */
static int
expand_config(int argc, char **argv, char *buf, char **out, int *out_argc)
{
	int n = 0;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--config") != 0) {
			if (n == MAX_CONFIG_ARGS)
				goto too_many;
			out[n++] = argv[i];
			continue;
		}
		if (i + 1 == argc || buf[0] != '\0') {
			RNIC_LOG(ERR, "--config: %s", i + 1 == argc ? "missing file name" : "given more than once");
			return -EINVAL;
		}
		FILE *f = fopen(argv[++i], "r");
		size_t len = f == NULL ? 0 : fread(buf, 1, MAX_CONFIG_BYTES, f);

		if (f == NULL || ferror(f) || len == MAX_CONFIG_BYTES) {
			RNIC_LOG(ERR, "--config %s: %s", argv[i], f == NULL ? strerror(errno) :
				 "unreadable or larger than 16 KB");
			if (f != NULL)
				fclose(f);
			return -EINVAL;
		}
		fclose(f);
		buf[len] = '\0';
		char *lines;

		for (char *line = strtok_r(buf, "\n", &lines); line != NULL; line = strtok_r(NULL, "\n", &lines)) {
			line[strcspn(line, "#")] = '\0';
			for (char *save, *w = strtok_r(line, " \t\r", &save); w != NULL; w = strtok_r(NULL, " \t\r", &save)) {
				if (n == MAX_CONFIG_ARGS)
					goto too_many;
				out[n++] = w;
			}
		}
	}
	*out_argc = n;
	return 0;
too_many:
	RNIC_LOG(ERR, "more than %d engine arguments", MAX_CONFIG_ARGS);
	return -EINVAL;
}

static const struct option engine_longopts[] = {
	{ "port", required_argument, NULL, OPT_PORT },
	{ "ip", required_argument, NULL, OPT_IP },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "mbufs", required_argument, NULL, OPT_MBUFS },
	{ "stages", required_argument, NULL, OPT_STAGES },
	{ "neigh", required_argument, NULL, OPT_NEIGH },
	{ "pcap", required_argument, NULL, OPT_PCAP },
	{ "pcap-snaplen", required_argument, NULL, OPT_PCAP_SNAPLEN },
	{ "pcap-count", required_argument, NULL, OPT_PCAP_COUNT },
	{ "pcap-filter", required_argument, NULL, OPT_PCAP_FILTER },
	{ "fault", required_argument, NULL, OPT_FAULT },
	{ "no-latency", no_argument, NULL, OPT_NO_LATENCY },
	{ "idle-sleep", required_argument, NULL, OPT_IDLE_SLEEP },
	{ "max-qp", required_argument, NULL, OPT_MAX_QP },
	{ "max-cq", required_argument, NULL, OPT_MAX_CQ },
	{ "max-cqe", required_argument, NULL, OPT_MAX_CQE },
	{ "max-mr", required_argument, NULL, OPT_MAX_MR },
	{ "max-pd", required_argument, NULL, OPT_MAX_PD },
	{ "max-qp-wr", required_argument, NULL, OPT_MAX_QP_WR },
	{ "max-sge", required_argument, NULL, OPT_MAX_SGE },
	{ "max-inline", required_argument, NULL, OPT_MAX_INLINE },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "cc", required_argument, NULL, OPT_CC },
	{ NULL, 0, NULL, 0 },
};

/* One engine argument (getopt's opt and optarg) into args. */
static int
parse_option(int opt, char *arg, struct rnic_engine_args *args)
{
	switch (opt) {
	case OPT_PORT:
		if (args->nb_ports == RNIC_MAX_DEVICES) {
			RNIC_LOG(ERR, "--port: at most %d ports", RNIC_MAX_DEVICES);
			return -EINVAL;
		}
		snprintf(args->port_name[args->nb_ports++], RTE_ETH_NAME_MAX_LEN, "%s", arg);
		break;
	case OPT_IP:
		if (args->nb_ips == RNIC_MAX_DEVICES) {
			RNIC_LOG(ERR, "--ip %s: at most %d --ip, one per device", arg, RNIC_MAX_DEVICES);
			return -EINVAL;
		}
		if (parse_gid_list(arg, args->ip[args->nb_ips], &args->nb_gids[args->nb_ips]) != 0)
			return -EINVAL;
		args->nb_ips++;
		break;
	case OPT_MTU:
		return parse_mtu(arg, &args->mtu);
	case OPT_MBUFS:
		return rnic_parse_u32("mbufs", arg, 1023, 1u << 24, &args->mbufs);
	case OPT_STAGES:
		args->stages = arg;
		break;
	case OPT_NEIGH:
		return rnic_neighbours_add(arg);
	case OPT_PCAP:
	case OPT_PCAP_SNAPLEN:
	case OPT_PCAP_COUNT:
	case OPT_PCAP_FILTER:
		return parse_capture(opt, arg, args);
	case OPT_FAULT:
		if (args->nb_faults == RTE_DIM(args->fault)) {
			RNIC_LOG(ERR, "--fault: at most %u", (unsigned int)RTE_DIM(args->fault));
			return -EINVAL;
		}
		args->fault[args->nb_faults++] = arg;
		break;
	case OPT_NO_LATENCY:
		args->no_latency = 1;
		break;
	case OPT_IDLE_SLEEP:
		return rnic_parse_u32("idle-sleep", arg, 1, MAX_IDLE_SLEEP_US, &args->idle_sleep_us);
	case OPT_CC:
		return parse_cc(arg, &args->cc);
	default:
		return parse_limit(opt, arg, &args->lim);
	}
	return 0;
}

static int
parse_engine_args(int argc, char **argv, struct rnic_engine_args *args)
{
	int opt, ret = 0;

	memset(args, 0, sizeof(*args));
	args->mtu = RNIC_MTU_4096;
	args->mbufs = DEFAULT_MBUFS;
	args->lim = default_limits;
	args->cc = (struct rnic_cc_params)RNIC_CC_DEFAULTS;

	optind = 0;	/* 0, not 1: glibc then forgets the state EAL's own getopt left behind */
	opterr = 0;
	while (ret == 0 && (opt = getopt_long(argc, argv, "", engine_longopts, NULL)) != -1) {
		if (opt == '?') {
			RNIC_LOG(ERR, "unknown or incomplete engine argument '%s'", argv[optind - 1]);
			return -EINVAL;
		}
		ret = parse_option(opt, optarg, args);
	}
	if (ret == 0 && optind < argc) {
		RNIC_LOG(ERR, "unexpected engine argument '%s'", argv[optind]);
		ret = -EINVAL;
	}
	if (ret == 0 && args->capture_options && args->capture.path == NULL) {
		RNIC_LOG(ERR, "--pcap-snaplen, --pcap-count and --pcap-filter need --pcap FILE");
		ret = -EINVAL;
	}
	return ret;
}

/* The engine arguments: what EAL left of argv, with --config FILE's words in place (they live as long as the
 * engine, as args points into them). */
int
rnic_engine_parse_args(int argc, char **argv, struct rnic_engine_args *args)
{
	static char config_words[MAX_CONFIG_BYTES + 1];
	char *eargv[MAX_CONFIG_ARGS + 1];
	int eargc = 0, ret;

	config_words[0] = '\0';
	ret = expand_config(argc, argv, config_words, eargv, &eargc);
	return ret != 0 ? ret : parse_engine_args(eargc, eargv, args);
}
