/* SPDX-License-Identifier: BSD-3-Clause
 * The engine: EAL and port bring-up, the devices on the ports, and the worker lcores that run the stages.
 * This is what the kernel driver and the firmware do for a hardware RNIC.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_pause.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "rnic_capture.h"
#include "rnic_fault.h"
#include "rnic_neigh.h"
#include "rnic_pipeline.h"
#include "rnic_priv.h"
#include "rnic_client.h"
#include "rnic_cq.h"
#include "rnic_port.h"

RTE_LOG_REGISTER_DEFAULT(rnic_logtype, INFO);

#define RNIC_STAGE_BUDGET 32
#define DEFAULT_MBUFS 8191
#define DEFAULT_PORT_DESC 1024
#define QUIESCE_TIMEOUT_MS 1000
#define MAX_CONFIG_ARGS 256
#define MAX_CONFIG_BYTES 16384
#define IDLE_LOOPS_BEFORE_SLEEP 1024	/* --idle-sleep: polling loops without work before the first sleep */
#define MAX_IDLE_SLEEP_US 10000		/* well below QUIESCE_TIMEOUT_MS: a sleeping lcore still quiesces */

/* One lcore's stages; aligned, as each lcore writes its own cycle counts on every loop. */
struct rnic_lcore_stages {
	unsigned int count;
	struct rnic_stage stage[RNIC_MAX_STAGES_PER_LCORE];
	uint64_t busy_cycles;		/* loops in which a stage found work */
	uint64_t idle_cycles;		/* loops in which none did */
} __rte_cache_aligned;

/* Engine arguments, parsed from what follows "--" in rnic_engine_init's argv. */
struct rnic_engine_args {
	unsigned int nb_ports;			/* 0: the embedded loopback pair */
	char port_name[RNIC_MAX_DEVICES][RTE_ETH_NAME_MAX_LEN];
	unsigned int nb_ips;
	union rnic_gid ip[RNIC_MAX_DEVICES];
	enum rnic_mtu mtu;
	uint32_t mbufs;
	struct rnic_limits lim;
	const char *stages;			/* NULL: "two" with two worker lcores or more, else "one" */
	struct rnic_capture_conf capture;	/* --pcap FILE and how: every frame of every port, by default */
	int capture_options;			/* --pcap-snaplen, --pcap-count or --pcap-filter given */
	const char *fault[RNIC_MAX_DEVICES + 1];	/* fault injection on the ports' RX (rnic_fault.h) */
	unsigned int nb_faults;
	int no_latency;				/* no per-stage latency stamps */
	uint32_t idle_sleep_us;			/* 0: poll without pause */
};

#define RNIC_MAX_NEIGHBORS 64

/* Static neighbours (--neigh IP,MAC): peers on other hosts, their MAC given; ARP/ND never changes them. */
struct rnic_neighbor {
	union rnic_gid gid;
	uint8_t mac[RTE_ETHER_ADDR_LEN];
};

static struct {
	int initialized;
	volatile int running;
	uint32_t idle_sleep_us;		/* --idle-sleep: an idle worker lcore sleeps this long per loop */
	int have_loopback;
	struct rnic_loopback loopback;
	unsigned int nb_started_ports;
	uint16_t started_port[RNIC_MAX_DEVICES];
	int nb_devices;
	struct rnic_device *device[RNIC_MAX_DEVICES];
	struct rte_mempool *pool[RNIC_MAX_DEVICES];
	struct rnic_lcore_stages lcore[RTE_MAX_LCORE];
	/* Worker lcores report a quiescent state after every loop iteration (rnic_engine_quiesce); the main
	 * lcore is online only while rnic_engine_progress runs its stages. */
	struct rte_rcu_qsbr *qsbr;
	unsigned int nb_neighbors;
	struct rnic_neighbor neighbor[RNIC_MAX_NEIGHBORS];
	int pdump;			/* dpdk-dumpcap may attach (rte_pdump): a shared configuration */
	/* The neighbour thread (ARP/ND, rnic_neigh.h) while the engine runs: the devices it serves are those
	 * with a port to a real network and a pipeline when the engine started. */
	pthread_t neigh_thread;
	int neigh_running;
	unsigned int nb_neigh_devices;
	struct rnic_device *neigh_device[RNIC_MAX_DEVICES];
} engine;

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

/* Headers around a RoCEv2 payload inside the IP MTU: IPv6 40, UDP 8, BTH 12, RETH 16, ICRC 4. */
#define ROCE_OVERHEAD 80

/* The largest RoCE MTU up to the one asked for whose frames fit the kernel interface of the port (a veth
 * or a NIC under AF_PACKET has the kernel's MTU, 1500 by default) and the frames its driver carries
 * (net_af_packet's framesz=); ports without either keep it. */
static enum rnic_mtu
fit_mtu(uint16_t port_id, enum rnic_mtu mtu)
{
	int link = rnic_port_interface_mtu(port_id), frame = rnic_port_max_frame(port_id);
	enum rnic_mtu fit = mtu;

	while (link > 0 && fit > RNIC_MTU_256 && (128 << fit) + ROCE_OVERHEAD > link)
		fit--;
	if (fit != mtu)
		RNIC_LOG(INFO, "port %u: interface MTU %d: RoCE MTU %d", port_id, link, 128 << fit);
	if (frame > 0 && (128 << fit) + ROCE_OVERHEAD + RTE_ETHER_HDR_LEN > frame) {
		while (fit > RNIC_MTU_256 && (128 << fit) + ROCE_OVERHEAD + RTE_ETHER_HDR_LEN > frame)
			fit--;
		RNIC_LOG(INFO, "port %u: net_af_packet frames hold %d bytes: RoCE MTU %d (MTU 4096 needs "
			 RNIC_AF_PACKET_JUMBO_ARGS ")", port_id, frame, 128 << fit);
	}
	return fit;
}

/* Default addresses of the loopback pair's two devices; they exist only inside this process. */
static const char *const default_ip[2] = { "10.77.0.1", "10.77.0.2" };

int
rnic_engine_device_count(void)
{
	return engine.nb_devices;
}

struct rnic_device *
rnic_engine_device(int index)
{
	if (index < 0 || index >= engine.nb_devices)
		return NULL;
	return engine.device[index];
}

struct rnic_device *
rnic_engine_device_by_gid(const union rnic_gid *gid)
{
	for (int i = 0; i < engine.nb_devices; i++) {
		struct rnic_device *d = engine.device[i];

		for (int g = 0; g < d->gid_count; g++)
			if (memcmp(d->gid[g].raw, gid->raw, sizeof(gid->raw)) == 0)
				return d;
	}
	return NULL;
}

void
rnic_engine_usage(void *stream)
{
	fprintf(stream,
		"softrnic engine arguments (after the EAL arguments and \"--\"):\n"
		"  --config FILE    read engine arguments from FILE first (config/softrnic.conf shows them all)\n"
		"  --port NAME      use this ethdev (a --vdev or PCI device given to EAL) as a device;\n"
		"                   repeat for several; without --port: two devices on a net_ring pair\n"
		"  --ip ADDR        IPv4 or IPv6 address of the next device (its GID 0), in device order;\n"
		"                   without it a port on a kernel interface (iface=) takes that interface's\n"
		"                   address\n"
		"  --mtu BYTES      port MTU for RoCE payloads: 256, 512, 1024, 2048 or 4096 (default 4096)\n"
		"  --mbufs N        mbufs per port pool (default %u)\n"
		"  --stages MAP     stage -> lcore map: one (every stage on the first worker lcore), two\n"
		"                   (doorbell, requester, completer | parser, responder), split (doorbell |\n"
		"                   requester, completer | parser | responder), host (doorbell,\n"
		"                   requester, completer on the main lcore | parser, responder on the\n"
		"                   first worker), devices (every stage of device i on one lcore: the\n"
		"                   workers in turn, then the main lcore; devices=L+L+... names device i's\n"
		"                   lcore), or\n"
		"                   doorbell=L,requester=L,completer=L,parser=L,responder=L (lcore ids;\n"
		"                   requester and completer share one). L+L+... gives a stage several\n"
		"                   lcores: QPs are sharded by QPN over them (requester, completer and\n"
		"                   responder, as many each). Stages on the main lcore run when the\n"
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
		"  --fault SPEC     faults on what every port receives (doc/engine.md): drop=P,\n"
		"                   ge_p=P,ge_r=P[,ge_bad=P,ge_good=P] (burst loss), reorder=P[,depth=K]\n"
		"                   [,delay=US], duplicate=P, corrupt=P, down=MS[,at=MS,every=MS],\n"
		"                   rate=MBIT[,queue=FRAMES,bucket=BYTES], only=responses|requests, seed=S\n"
		"                   (reproducible for a seed); port=N: only what device N receives\n"
		"                   (repeatable; overrides the spec without port=)\n"
		"  --no-latency     take no per-stage latency stamps (rnic_query_stage_latency)\n"
		"  --idle-sleep US  a worker lcore that found no work in %u loops in a row sleeps US\n"
		"                   microseconds (1 .. %u) per loop until work comes (default: poll)\n"
		"  --window BYTES   bytes of SEND/WRITE frames an RC QP may have sent and not had\n"
		"                   acknowledged (%u .. %u, default %u)\n"
		"  --max-qp N  --max-cq N  --max-cqe N  --max-mr N  --max-pd N\n"
		"  --max-qp-wr N  --max-sge N  --max-inline N   device limits\n",
		DEFAULT_MBUFS, IDLE_LOOPS_BEFORE_SLEEP, MAX_IDLE_SLEEP_US, RNIC_MIN_WINDOW, RNIC_MAX_WINDOW,
		RNIC_DEFAULT_WINDOW);
}

/* Parse an address into a RoCEv2 GID: IPv6 as is, IPv4 as ::ffff:a.b.c.d. */
static int
parse_gid(const char *text, union rnic_gid *gid)
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

static int
parse_u32(const char *opt, const char *text, uint32_t min, uint32_t max, uint32_t *out)
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

/* --neigh IP,MAC */
static int
parse_neighbor(const char *text)
{
	struct rnic_neighbor *n = &engine.neighbor[engine.nb_neighbors];
	char ip[INET6_ADDRSTRLEN + 1];
	const char *comma = strrchr(text, ',');
	struct rte_ether_addr mac;

	if (engine.nb_neighbors == RNIC_MAX_NEIGHBORS || comma == NULL || (size_t)(comma - text) >= sizeof(ip)) {
		RNIC_LOG(ERR, "--neigh %s: expected IP,MAC (at most %d)", text, RNIC_MAX_NEIGHBORS);
		return -EINVAL;
	}
	snprintf(ip, sizeof(ip), "%.*s", (int)(comma - text), text);
	if (parse_gid(ip, &n->gid) != 0 || rte_ether_unformat_addr(comma + 1, &mac) != 0) {
		RNIC_LOG(ERR, "--neigh %s: expected IP,MAC", text);
		return -EINVAL;
	}
	memcpy(n->mac, mac.addr_bytes, sizeof(n->mac));
	engine.nb_neighbors++;
	return 0;
}

int
rnic_engine_neighbor(const union rnic_gid *gid, uint8_t mac[6])
{
	for (unsigned int i = 0; i < engine.nb_neighbors; i++) {
		if (memcmp(engine.neighbor[i].gid.raw, gid->raw, sizeof(gid->raw)) == 0) {
			memcpy(mac, engine.neighbor[i].mac, RTE_ETHER_ADDR_LEN);
			return 0;
		}
	}
	return -ENOENT;
}

enum {
	OPT_PORT = 256, OPT_IP, OPT_MTU, OPT_MBUFS, OPT_STAGES, OPT_NEIGH, OPT_PCAP, OPT_PCAP_SNAPLEN, OPT_PCAP_COUNT,
	OPT_PCAP_FILTER, OPT_FAULT, OPT_NO_LATENCY, OPT_IDLE_SLEEP, OPT_MAX_QP, OPT_MAX_CQ, OPT_MAX_CQE, OPT_MAX_MR,
	OPT_MAX_PD, OPT_MAX_QP_WR, OPT_MAX_SGE, OPT_MAX_INLINE, OPT_WINDOW,
};

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
		return parse_u32("pcap-snaplen", text, 64, 65535, &c->snaplen);
	if (opt == OPT_PCAP_COUNT) {
		int ret = parse_u32("pcap-count", text, 1, UINT32_MAX, &count_hi);

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
		return parse_u32("max-qp", text, 1, 1u << 20, &lim->max_qp);
	case OPT_MAX_CQ:
		return parse_u32("max-cq", text, 1, 1u << 20, &lim->max_cq);
	case OPT_MAX_CQE:
		return parse_u32("max-cqe", text, 2, 1u << 22, &lim->max_cqe);
	case OPT_MAX_MR:
		return parse_u32("max-mr", text, 1, 1u << 24, &lim->max_mr);
	case OPT_MAX_PD:
		return parse_u32("max-pd", text, 1, 1u << 24, &lim->max_pd);
	case OPT_MAX_QP_WR:
		return parse_u32("max-qp-wr", text, 1, 1u << 15, &lim->max_qp_wr);
	case OPT_MAX_SGE:
		return parse_u32("max-sge", text, 1, 30, &lim->max_sge);
	case OPT_MAX_INLINE:
		return parse_u32("max-inline", text, 0, 4096, &lim->max_inline_data);
	case OPT_WINDOW:
		return parse_u32("window", text, RNIC_MIN_WINDOW, RNIC_MAX_WINDOW, &lim->window);
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

static int
parse_engine_args(int argc, char **argv, struct rnic_engine_args *args)
{
	static const struct option longopts[] = {
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
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret = 0;

	memset(args, 0, sizeof(*args));
	args->mtu = RNIC_MTU_4096;
	args->mbufs = DEFAULT_MBUFS;
	args->lim = default_limits;

	optind = 0;	/* 0, not 1: glibc then forgets the state EAL's own getopt left behind */
	opterr = 0;
	while (ret == 0 && (opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_PORT:
			if (args->nb_ports == RNIC_MAX_DEVICES) {
				RNIC_LOG(ERR, "--port: at most %d ports", RNIC_MAX_DEVICES);
				return -EINVAL;
			}
			snprintf(args->port_name[args->nb_ports++], RTE_ETH_NAME_MAX_LEN, "%s", optarg);
			break;
		case OPT_IP:
			if (args->nb_ips == RNIC_MAX_DEVICES || parse_gid(optarg, &args->ip[args->nb_ips]) != 0) {
				RNIC_LOG(ERR, "--ip %s: not an IPv4 or IPv6 address (or too many --ip)", optarg);
				return -EINVAL;
			}
			args->nb_ips++;
			break;
		case OPT_MTU:
			ret = parse_mtu(optarg, &args->mtu);
			break;
		case OPT_MBUFS:
			ret = parse_u32("mbufs", optarg, 1023, 1u << 24, &args->mbufs);
			break;
		case OPT_STAGES:
			args->stages = optarg;
			break;
		case OPT_NEIGH:
			ret = parse_neighbor(optarg);
			break;
		case OPT_PCAP:
		case OPT_PCAP_SNAPLEN:
		case OPT_PCAP_COUNT:
		case OPT_PCAP_FILTER:
			ret = parse_capture(opt, optarg, args);
			break;
		case OPT_FAULT:
			if (args->nb_faults == RTE_DIM(args->fault)) {
				RNIC_LOG(ERR, "--fault: at most %u", (unsigned int)RTE_DIM(args->fault));
				return -EINVAL;
			}
			args->fault[args->nb_faults++] = optarg;
			break;
		case OPT_NO_LATENCY:
			args->no_latency = 1;
			break;
		case OPT_IDLE_SLEEP:
			ret = parse_u32("idle-sleep", optarg, 1, MAX_IDLE_SLEEP_US, &args->idle_sleep_us);
			break;
		case '?':
			RNIC_LOG(ERR, "unknown or incomplete engine argument '%s'", argv[optind - 1]);
			return -EINVAL;
		default:
			ret = parse_limit(opt, optarg, &args->lim);
		}
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

static int
resolve_ports(struct rnic_engine_args *args, uint16_t *port_id, uint16_t nb_queues)
{
	int ret;

	if (args->nb_ports == 0) {
		ret = rnic_port_loopback_create(&engine.loopback, "rnic_lb", (int)rte_socket_id(), nb_queues);
		if (ret < 0)
			return ret;
		engine.have_loopback = 1;
		port_id[0] = engine.loopback.port[0];
		port_id[1] = engine.loopback.port[1];
		args->nb_ports = 2;
		return 0;
	}
	for (unsigned int i = 0; i < args->nb_ports; i++) {
		if (rte_eth_dev_get_port_by_name(args->port_name[i], &port_id[i]) != 0) {
			RNIC_LOG(ERR, "--port %s: no such ethdev (give it to EAL with --vdev or -a)",
				 args->port_name[i]);
			return -ENODEV;
		}
	}
	return 0;
}

static int
create_devices(struct rnic_engine_args *args, uint16_t nb_queues)
{
	uint16_t port_id[RNIC_MAX_DEVICES];
	struct rnic_device_conf conf;
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	int ret;

	ret = resolve_ports(args, port_id, nb_queues);
	if (ret < 0)
		return ret;
	for (unsigned int i = 0; i < args->nb_ports; i++) {
		int socket_id = rte_eth_dev_socket_id(port_id[i]);

		snprintf(pool_name, sizeof(pool_name), "rnic_pool%u", i);
		/* The private area keeps the parser's descriptor of a received frame (rnic_mbuf_desc). */
		engine.pool[i] = rte_pktmbuf_pool_create(pool_name, args->mbufs, 256,
							 RTE_ALIGN(sizeof(struct rnic_pkt_desc), RTE_MBUF_PRIV_ALIGN),
							 RNIC_PORT_MBUF_DATA_ROOM,
							 socket_id < 0 ? (int)rte_socket_id() : socket_id);
		if (engine.pool[i] == NULL) {
			RNIC_LOG(ERR, "port %u: cannot create a pool of %u mbufs: %s (more memory: EAL -m)",
				 port_id[i], args->mbufs, rte_strerror(rte_errno));
			return -ENOMEM;
		}
		ret = rnic_port_start(port_id[i], engine.pool[i], DEFAULT_PORT_DESC, nb_queues);
		if (ret < 0)
			return ret;
		engine.started_port[engine.nb_started_ports++] = port_id[i];

		memset(&conf, 0, sizeof(conf));
		snprintf(conf.name, sizeof(conf.name), "rnic%u", i);
		conf.port_id = port_id[i];
		conf.mtu = fit_mtu(port_id[i], args->mtu);
		conf.lim = args->lim;
		/* Room for a doorbell from every QP at once: a post never finds the ring full for lack of it. */
		conf.doorbell_ring_size = RTE_MAX(16384u, rte_align32pow2(args->lim.max_qp + 1));
		if (i < args->nb_ips)
			conf.gid = args->ip[i];
		else if (engine.have_loopback)
			parse_gid(default_ip[i], &conf.gid);
		else if (rnic_port_interface_gid(port_id[i], conf.gid.raw) != 0) {
			RNIC_LOG(ERR, "port %s: no --ip given for it, and no interface address to take", args->port_name[i]);
			return -EINVAL;
		}
		ret = rnic_device_create(&conf, &engine.device[i]);
		if (ret < 0)
			return ret;
		engine.device[i]->loopback = (uint8_t)engine.have_loopback;
		engine.nb_devices++;
	}
	return 0;
}

static int create_qsbr(void);

/* --pcap: an interface per device's port, named after the device. */
static int
start_capture(const struct rnic_capture_conf *conf, uint16_t nb_queues)
{
	struct rnic_capture_port ports[RNIC_MAX_DEVICES];

	for (int i = 0; i < engine.nb_devices; i++)
		ports[i] = (struct rnic_capture_port){ .port_id = engine.started_port[i],
						       .device = engine.device[i]->name };
	return rnic_capture_start(conf, ports, (unsigned int)engine.nb_devices, nb_queues, (int)rte_socket_id());
}

/* The n-th worker lcore, or RTE_MAX_LCORE. */
static unsigned int
worker(unsigned int n)
{
	unsigned int lcore_id;

	RTE_LCORE_FOREACH_WORKER(lcore_id)
		if (n-- == 0)
			return lcore_id;
	return RTE_MAX_LCORE;
}

/* Where each stage runs: per stage, one lcore per shard (the doorbell and parser stages: one lcore); or, for
 * the "devices" map, every stage of device i on the i-th engine lcore (rnic_engine_lcore_order). */
struct stage_map {
	uint16_t nb_shards;		/* 0: no data path (no engine lcore) */
	uint8_t per_device;
	unsigned int nb[RNIC_STAGE_MAX];
	unsigned int lcore[RNIC_STAGE_MAX][RNIC_MAX_SHARDS];
	unsigned int nb_device_lcores;	/* "devices=L+L...": device i on the i-th (cyclically) */
	unsigned int device_lcore[RNIC_MAX_DEVICES];
};

/* The engine lcores in the order the "devices" map hands them to devices: the workers, then the main lcore
 * (whose stages run when the application calls rnic_engine_progress). Returns how many. */
static unsigned int
engine_lcore_order(unsigned int order[RTE_MAX_LCORE])
{
	unsigned int n = 0, lcore_id;

	RTE_LCORE_FOREACH_WORKER(lcore_id)
		order[n++] = lcore_id;
	order[n++] = rte_get_main_lcore();
	return n;
}

/* Read a stage map: a preset, or stage=L[+L...] items. */
static int
parse_stage_map(const char *map, struct stage_map *m)
{
	static const struct {
		const char *name;
		uint8_t worker[RNIC_STAGE_MAX];	/* by enum rnic_stage_id */
	} presets[] = {
		{ "one", { 0, 0, 0, 0, 0 } },
		{ "two", { 0, 0, 1, 1, 0 } },
		{ "split", { 0, 1, 2, 3, 1 } },
	};
	char buf[256], *save;

	memset(m, 0, sizeof(*m));
	if (strcmp(map, "host") == 0) {
		/* The stages that meet the host interface (doorbells and WQEs, CQEs) on the application's
		 * lcore, where the posts and polls keep those lines; the wire's (parser, responder) on a worker. */
		const uint8_t host[RNIC_STAGE_MAX] = {
			[RNIC_STAGE_DOORBELL] = 1, [RNIC_STAGE_REQUESTER] = 1, [RNIC_STAGE_COMPLETER] = 1,
		};

		for (int st = 0; st < RNIC_STAGE_MAX; st++) {
			m->nb[st] = 1;
			m->lcore[st][0] = host[st] ? rte_get_main_lcore() : worker(0);
		}
		return 0;
	}
	if (strcmp(map, "devices") == 0 || strncmp(map, "devices=", 8) == 0) {
		m->per_device = 1;
		for (int st = 0; st < RNIC_STAGE_MAX; st++) {
			m->nb[st] = 1;
			m->lcore[st][0] = rte_get_main_lcore();	/* checked as a stand-in for every device's */
		}
		if (map[7] == '\0')
			return 0;
		snprintf(buf, sizeof(buf), "%s", map + 8);
		for (char *l = strtok_r(buf, "+", &save); l != NULL; l = strtok_r(NULL, "+", &save)) {
			unsigned int *lc = &m->device_lcore[m->nb_device_lcores];

			if (m->nb_device_lcores == RNIC_MAX_DEVICES ||
			    parse_u32("stages", l, 0, RTE_MAX_LCORE - 1, lc) != 0 || !rte_lcore_is_enabled(*lc))
				return -EINVAL;
			m->nb_device_lcores++;
		}
		return m->nb_device_lcores != 0 ? 0 : -EINVAL;
	}
	for (unsigned int i = 0; i < RTE_DIM(presets); i++) {
		if (strcmp(map, presets[i].name) != 0)
			continue;
		for (int st = 0; st < RNIC_STAGE_MAX; st++) {
			m->nb[st] = 1;
			m->lcore[st][0] = worker(presets[i].worker[st]);
		}
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", map);
	for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *lsave;
		int st;

		for (st = 0; eq != NULL && st < RNIC_STAGE_MAX; st++)
			if ((size_t)(eq - item) == strlen(rnic_stage_names[st]) &&
			    strncmp(item, rnic_stage_names[st], (size_t)(eq - item)) == 0)
				break;
		if (eq == NULL || st == RNIC_STAGE_MAX || m->nb[st] != 0)
			return -EINVAL;
		for (char *l = strtok_r(eq + 1, "+", &lsave); l != NULL; l = strtok_r(NULL, "+", &lsave)) {
			if (m->nb[st] == RNIC_MAX_SHARDS ||
			    parse_u32("stages", l, 0, RTE_MAX_LCORE - 1, &m->lcore[st][m->nb[st]]) != 0)
				return -EINVAL;
			m->nb[st]++;
		}
	}
	return 0;
}

static int
check_stage_map(const char *map, struct stage_map *m)
{
	for (int st = 0; st < RNIC_STAGE_MAX; st++) {
		if (m->nb[st] == 0) {
			RNIC_LOG(ERR, "--stages %s: no lcore for stage %s", map, rnic_stage_names[st]);
			return -EINVAL;
		}
		for (unsigned int k = 0; k < m->nb[st]; k++) {
			unsigned int l = m->lcore[st][k];

			if (l >= RTE_MAX_LCORE || !rte_lcore_is_enabled(l)) {
				RNIC_LOG(ERR, "--stages %s: stage %s needs lcores of this EAL (-l)", map,
					 rnic_stage_names[st]);
				return -EINVAL;
			}
		}
	}
	if (m->nb[RNIC_STAGE_DOORBELL] != 1 || m->nb[RNIC_STAGE_PARSER] != 1) {
		RNIC_LOG(ERR, "--stages %s: the doorbell and parser stages serve a whole device: one lcore each", map);
		return -EINVAL;
	}
	m->nb_shards = (uint16_t)m->nb[RNIC_STAGE_REQUESTER];
	if (m->nb[RNIC_STAGE_COMPLETER] != m->nb_shards || m->nb[RNIC_STAGE_RESPONDER] != m->nb_shards ||
	    memcmp(m->lcore[RNIC_STAGE_REQUESTER], m->lcore[RNIC_STAGE_COMPLETER],
		   sizeof(m->lcore[0][0]) * m->nb_shards) != 0) {
		RNIC_LOG(ERR, "--stages %s: one shard = a requester and its completer on one lcore, and a "
			 "responder: give the three stages as many lcores", map);
		return -EINVAL;
	}
	return 0;
}

/* The stage map of the arguments; no data path (nb_shards 0) without worker lcores, unless a map puts the
 * stages on the main lcore. */
static int
stage_map_of(const struct rnic_engine_args *args, struct stage_map *m)
{
	const char *map = args->stages;

	memset(m, 0, sizeof(*m));
	if (rte_lcore_count() < 2 && map == NULL) {
		RNIC_LOG(INFO, "no worker lcore: control path only, the data path does not run");
		return 0;
	}
	if (map == NULL)
		map = rte_lcore_count() > 2 ? "two" : "one";
	if (parse_stage_map(map, m) != 0 || check_stage_map(map, m) != 0) {
		RNIC_LOG(ERR, "--stages %s: not a stage map (rnic_engine_usage)", map);
		return -EINVAL;
	}
	return 0;
}

static unsigned int (*const stage_poll[RNIC_STAGE_MAX])(void *, unsigned int) = {
	[RNIC_STAGE_DOORBELL] = rnic_stage_doorbell,
	[RNIC_STAGE_REQUESTER] = rnic_stage_requester,
	[RNIC_STAGE_PARSER] = rnic_stage_parser,
	[RNIC_STAGE_RESPONDER] = rnic_stage_responder,
	[RNIC_STAGE_COMPLETER] = rnic_stage_completer,
};

/* Create each device's pipelines (one per shard) and map their stages to the lcores. */
static int
create_pipelines(const struct stage_map *m)
{
	unsigned int order[RTE_MAX_LCORE], nb_order = engine_lcore_order(order);
	int ret = 0;

	if (m->nb_device_lcores != 0) {
		memcpy(order, m->device_lcore, sizeof(m->device_lcore[0]) * m->nb_device_lcores);
		nb_order = m->nb_device_lcores;
	}

	for (int i = 0; i < engine.nb_devices && ret == 0; i++) {
		struct rnic_device *dev = engine.device[i];

		dev->nb_shards = m->nb_shards;
		for (uint16_t k = 0; k < m->nb_shards && ret == 0; k++)
			ret = rnic_pipeline_create(dev, engine.pool[i], k, &dev->pipeline[k]);
		for (int st = 0; st < RNIC_STAGE_MAX && ret == 0; st++) {
			for (unsigned int k = 0; k < m->nb[st] && ret == 0; k++) {
				struct rnic_stage stage = {
					.name = rnic_stage_names[st],
					.poll = stage_poll[st],
					.arg = dev->pipeline[k],
				};

				ret = rnic_engine_add_stage(m->per_device ? order[(unsigned int)i % nb_order] :
							    m->lcore[st][k], &stage);
			}
		}
	}
	return ret;
}

static void
release_devices(void)
{
	for (int i = engine.nb_devices - 1; i >= 0; i--) {
		for (uint16_t k = 0; k < engine.device[i]->nb_shards; k++)
			rnic_pipeline_free(engine.device[i]->pipeline[k]);
		rnic_device_destroy(engine.device[i]);
	}
	engine.nb_devices = 0;
	rnic_capture_stop();
	if (engine.pdump)
		rnic_capture_pdump_uninit();
	engine.pdump = 0;
	rnic_fault_detach_all();
	for (unsigned int i = 0; i < engine.nb_started_ports; i++)
		rnic_port_close(engine.started_port[i]);
	engine.nb_started_ports = 0;
	if (engine.have_loopback)
		rnic_port_loopback_free(&engine.loopback);
	engine.have_loopback = 0;
	for (unsigned int i = 0; i < RNIC_MAX_DEVICES; i++) {
		rte_mempool_free(engine.pool[i]);
		engine.pool[i] = NULL;
		engine.device[i] = NULL;
	}
	rte_free(engine.qsbr);
	engine.qsbr = NULL;
}

static int
create_qsbr(void)
{
	size_t size = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);

	engine.qsbr = rte_zmalloc("rnic_qsbr", size, RTE_CACHE_LINE_SIZE);
	if (engine.qsbr == NULL || rte_rcu_qsbr_init(engine.qsbr, RTE_MAX_LCORE) != 0) {
		RNIC_LOG(ERR, "cannot create the engine's RCU state");
		return -ENOMEM;
	}
	return 0;
}

int
rnic_engine_quiesce(void)
{
	uint64_t token, deadline;

	if (!engine.initialized || !engine.running)
		return 0;
	token = rte_rcu_qsbr_start(engine.qsbr);
	deadline = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * QUIESCE_TIMEOUT_MS;
	while (rte_rcu_qsbr_check(engine.qsbr, token, false) == 0) {
		if (rte_get_timer_cycles() > deadline)
			return -ETIMEDOUT;
		rte_pause();
	}
	return 0;
}

int
rnic_engine_init(int argc, char **argv)
{
	static char config_words[MAX_CONFIG_BYTES + 1];
	char *eargv[MAX_CONFIG_ARGS + 1];
	struct rnic_engine_args args;
	struct stage_map map;
	uint16_t nb_queues;
	int consumed, eargc = 0, ret;

	if (engine.initialized || rnic_client_mode()) {
		RNIC_LOG(ERR, "rnic_engine_init: the engine is already initialised");
		return -EALREADY;
	}
	/* Client mode: rnicd owns the ports and the engine; this process needs neither EAL nor hugepages. */
	if (getenv("RNIC_DAEMON") != NULL && getenv("RNIC_DAEMON")[0] != '\0') {
		ret = rnic_client_init(getenv("RNIC_DAEMON"));
		if (ret == 0)
			rnic_provider_set(&rnic_client_provider);
		return ret < 0 ? ret : argc;
	}
	consumed = rte_eal_init(argc, argv);
	if (consumed < 0) {
		ret = -rte_errno;
		RNIC_LOG(ERR, "EAL initialisation failed: %s", rte_strerror(rte_errno));
		return ret;
	}
	/* What EAL left starts with "--" (rte_eal_init consumes it) or is the application's. */
	config_words[0] = '\0';
	ret = expand_config(argc - consumed, argv + consumed, config_words, eargv, &eargc);
	if (ret == 0)
		ret = parse_engine_args(eargc, eargv, &args);
	if (ret == 0)
		ret = stage_map_of(&args, &map);
	/* Two queues per shard and direction: the shard's requester and responder each transmit on their own. */
	nb_queues = (uint16_t)(2 * RTE_MAX(map.nb_shards, (uint16_t)1));
	if (ret == 0)
		ret = create_qsbr();
	if (ret == 0) {
		rnic_latency_on = !args.no_latency;
		engine.idle_sleep_us = args.idle_sleep_us;
		ret = rnic_latency_init();
	}
	if (ret == 0)
		ret = create_devices(&args, nb_queues);
	if (ret == 0 && args.nb_faults > 0)
		ret = rnic_fault_attach_specs(args.fault, args.nb_faults, engine.started_port,
					      engine.nb_started_ports, nb_queues);
	if (ret == 0 && args.capture.path != NULL)
		ret = start_capture(&args.capture, nb_queues);
	/* dpdk-dumpcap and dpdk-proc-info attach as secondary processes: not with --no-shconf. */
	if (ret == 0)
		engine.pdump = rnic_capture_pdump_init(engine.pool[0]) == 0;
	if (ret == 0) {
		engine.initialized = 1;	/* rnic_engine_add_stage needs it */
		ret = create_pipelines(&map);
		engine.initialized = ret == 0;
	}
	if (ret < 0) {
		rnic_cq_set_progress(NULL);
		release_devices();
		rte_eal_cleanup();
		return ret;
	}
	engine.initialized = 1;
	rnic_provider_set(&rnic_local_provider);
	rnic_telemetry_register();
	/* Every argument after argv[0] was either EAL's or the engine's. */
	return argc - 1;
}

int
rnic_engine_add_stage(unsigned int lcore_id, const struct rnic_stage *stage)
{
	struct rnic_lcore_stages *ls;

	if (!engine.initialized || engine.running)
		return -EBUSY;
	if (lcore_id >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore_id)) {
		RNIC_LOG(ERR, "stage %s: lcore %u is not an lcore of this EAL", stage->name, lcore_id);
		return -EINVAL;
	}
	ls = &engine.lcore[lcore_id];
	if (ls->count == RNIC_MAX_STAGES_PER_LCORE)
		return -ENOSPC;
	ls->stage[ls->count++] = *stage;
	if (lcore_id == rte_get_main_lcore())
		rnic_cq_set_progress(rnic_engine_progress);
	return 0;
}

/* One pass over an lcore's stages: the work they did; the pass's cycles count as busy or idle. */
static unsigned int
poll_stages(struct rnic_lcore_stages *ls, uint64_t *last)
{
	unsigned int work = 0;
	uint64_t now;

	for (unsigned int i = 0; i < ls->count; i++)
		work += ls->stage[i].poll(ls->stage[i].arg, RNIC_STAGE_BUDGET);
	now = rte_rdtsc();
	if (work != 0)
		ls->busy_cycles += now - *last;
	else
		ls->idle_cycles += now - *last;
	*last = now;
	return work;
}

/*
 * A worker lcore: poll its stages round-robin until the engine stops. With --idle-sleep it gives its core
 * back while nothing happens: after IDLE_LOOPS_BEFORE_SLEEP loops without work, each further idle loop
 * sleeps; the first loop that finds work polls flat out again. The price is up to one sleep of latency
 * for the first frame or doorbell after a quiet spell (timers fire up to that much late too).
 */
static int
lcore_loop(void *arg)
{
	struct rnic_lcore_stages *ls = arg;
	unsigned int self = rte_lcore_id();
	unsigned int idle_loops = 0;
	uint64_t last;

	rte_rcu_qsbr_thread_register(engine.qsbr, self);
	rte_rcu_qsbr_thread_online(engine.qsbr, self);
	last = rte_rdtsc();
	while (engine.running) {
		unsigned int work = poll_stages(ls, &last);

		rte_rcu_qsbr_quiescent(engine.qsbr, self);
		if (work != 0)
			idle_loops = 0;
		else if (engine.idle_sleep_us != 0 && ++idle_loops >= IDLE_LOOPS_BEFORE_SLEEP)
			rte_delay_us_sleep(engine.idle_sleep_us);
	}
	rte_rcu_qsbr_thread_offline(engine.qsbr, self);
	rte_rcu_qsbr_thread_unregister(engine.qsbr, self);
	return 0;
}

/*
 * The main lcore's stages run here, on the application's thread, each time it calls (manual progress): the
 * lcore is an RCU reader only while it runs them, so a control call it makes between two passes (dereg_mr,
 * destroy_qp) does not wait for itself.
 */
unsigned int
rnic_engine_progress(void)
{
	unsigned int self = rte_get_main_lcore(), work;
	struct rnic_lcore_stages *ls = &engine.lcore[self];
	uint64_t start;

	if (!engine.running || ls->count == 0 || rte_lcore_id() != self)
		return 0;
	rte_rcu_qsbr_thread_online(engine.qsbr, self);
	start = rte_rdtsc();
	work = poll_stages(ls, &start);
	rte_rcu_qsbr_thread_offline(engine.qsbr, self);
	return work;
}

int
rnic_engine_lcore_load(unsigned int lcore_id, uint64_t *busy, uint64_t *idle, const char **names, unsigned int *nb)
{
	const struct rnic_lcore_stages *ls;

	if (!engine.initialized || lcore_id >= RTE_MAX_LCORE || engine.lcore[lcore_id].count == 0)
		return -ENOENT;
	ls = &engine.lcore[lcore_id];
	*busy = __atomic_load_n(&ls->busy_cycles, __ATOMIC_RELAXED);
	*idle = __atomic_load_n(&ls->idle_cycles, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < ls->count && i < *nb; i++)
		names[i] = ls->stage[i].name;
	*nb = RTE_MIN(*nb, ls->count);
	return 0;
}

#define NEIGH_TICK_US 1000		/* the neighbour thread's period: answers and timers are this late at most */

/* The neighbour thread: announce each device's address (gratuitous ARP, unsolicited NA), then answer, learn,
 * resolve and expire every tick. A control thread: it sleeps, and never touches a QP. */
static void *
neigh_loop(void *arg)
{
	RTE_SET_USED(arg);
	for (unsigned int i = 0; i < engine.nb_neigh_devices; i++)
		rnic_neigh_announce(engine.neigh_device[i]);
	while (__atomic_load_n(&engine.neigh_running, __ATOMIC_ACQUIRE)) {
		uint64_t now = rte_get_tsc_cycles();

		for (unsigned int i = 0; i < engine.nb_neigh_devices; i++)
			rnic_neigh_poll(engine.neigh_device[i], now);
		rte_delay_us_sleep(NEIGH_TICK_US);
	}
	return NULL;
}

/* Devices whose port leads out of the process (not the loopback pair) have neighbours to resolve. */
static int
neigh_start(void)
{
	int ret;

	engine.nb_neigh_devices = 0;
	for (int i = 0; i < engine.nb_devices; i++)
		if (!engine.device[i]->loopback && engine.device[i]->neigh != NULL)
			engine.neigh_device[engine.nb_neigh_devices++] = engine.device[i];
	if (engine.nb_neigh_devices == 0)
		return 0;
	__atomic_store_n(&engine.neigh_running, 1, __ATOMIC_RELEASE);
	ret = rte_ctrl_thread_create(&engine.neigh_thread, "rnic-neigh", NULL, neigh_loop, NULL);
	if (ret != 0) {	/* a negative errno */
		engine.neigh_running = 0;
		RNIC_LOG(ERR, "cannot start the neighbour thread: %s", strerror(-ret));
	}
	return ret;
}

static void
neigh_stop(void)
{
	if (!__atomic_load_n(&engine.neigh_running, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&engine.neigh_running, 0, __ATOMIC_RELEASE);
	pthread_join(engine.neigh_thread, NULL);
}

int
rnic_engine_running(void)
{
	return engine.running;
}

int
rnic_engine_start(void)
{
	unsigned int lcore_id, launched = 0;

	if (rnic_client_mode())
		return 0;	/* rnicd's engine runs already */
	if (!engine.initialized || engine.running)
		return -EBUSY;
	/* The main lcore's stages (rnic_engine_progress) read RCU-protected state too. */
	if (engine.lcore[rte_get_main_lcore()].count != 0)
		rte_rcu_qsbr_thread_register(engine.qsbr, rte_get_main_lcore());
	engine.running = 1;
	rte_smp_wmb();
	RTE_LCORE_FOREACH_WORKER(lcore_id) {
		if (engine.lcore[lcore_id].count == 0)
			continue;
		if (rte_eal_remote_launch(lcore_loop, &engine.lcore[lcore_id], lcore_id) != 0) {
			RNIC_LOG(ERR, "lcore %u is busy: cannot start its stages", lcore_id);
			rnic_engine_stop();
			return -EBUSY;
		}
		launched++;
	}
	if (neigh_start() != 0) {
		rnic_engine_stop();
		return -EAGAIN;
	}
	RNIC_LOG(DEBUG, "engine started on %u lcores", launched);
	return 0;
}

int
rnic_engine_stop(void)
{
	unsigned int lcore_id;

	if (rnic_client_mode())
		return 0;
	if (!engine.initialized)
		return -EINVAL;
	neigh_stop();
	engine.running = 0;
	rte_smp_wmb();
	RTE_LCORE_FOREACH_WORKER(lcore_id)
		if (engine.lcore[lcore_id].count != 0)
			rte_eal_wait_lcore(lcore_id);
	if (engine.lcore[rte_get_main_lcore()].count != 0)
		rte_rcu_qsbr_thread_unregister(engine.qsbr, rte_get_main_lcore());
	return 0;
}

int
rnic_engine_fini(void)
{
	if (rnic_client_mode()) {
		rnic_provider_set(NULL);
		rnic_client_fini();
		return 0;
	}
	if (!engine.initialized)
		return -EINVAL;
	for (int i = 0; i < engine.nb_devices; i++) {
		if (engine.device[i]->open_contexts != 0) {
			RNIC_LOG(ERR, "rnic_engine_fini: device %s still has open contexts", engine.device[i]->name);
			return -EBUSY;
		}
	}
	rnic_engine_stop();
	release_devices();
	memset(engine.lcore, 0, sizeof(engine.lcore));
	rnic_cq_set_progress(NULL);
	engine.nb_neighbors = 0;
	engine.initialized = 0;
	rnic_provider_set(NULL);
	rte_eal_cleanup();
	return 0;
}
