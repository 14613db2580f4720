/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf: perftest-style bandwidth and latency benchmark for softrnic (ib_write_bw, ib_read_lat, ...),
 * with the per-stage latency table no hardware RNIC gives.
 *
 *   rnic-perf [options] [-- EAL args]                       loopback (default): two devices, one process
 *   rnic-perf --server PORT [engine options] [-- EAL args]  server: takes the test from the client
 *   rnic-perf --client HOST:PORT [options] [-- EAL args]    client: runs the test against the server
 * rnic-perf --help lists the options. Exit status 0 when every run completed (and verified, with
 * --verify), 1 when one failed, 2 for bad options.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <rte_cycles.h>

#include "oob.h"
#include "perf.h"

#define MAX_ARGS 128
#define WAIT_S 10		/* bound of every wait for the peer or a completion */
#define PEAK_WINDOW_S 0.05
#define QKEY 0x11111111u
#define UD_GRH 40

const char *const perf_op_names[OP_N] = { "write", "read", "send", "fetch_add", "cmp_swap" };

static const char usage[] =
	"usage: rnic-perf [options] [-- EAL args]\n"
	"  -o, --op OP             write (default), read, send, fetch_add, cmp_swap\n"
	"      --bw | --lat        bandwidth (default) or latency (ping-pong for write and send)\n"
	"  -s, --size BYTES        message size (default 65536; atomics: 8)\n"
	"  -a                      all sizes 2 .. 2^23\n"
	"  -n, --iters N           messages per size (default 5000 bw, 1000 lat)\n"
	"  -D, --duration SEC      run for SEC seconds instead of -n\n"
	"  -q, --qp N              QPs, 1 .. 65536 (default 1)\n"
	"  -m, --mtu BYTES         path MTU 256..4096 (default 4096)\n"
	"  -c, --connection T      RC (default), UC or UD\n"
	"  -t, --tx-depth N        outstanding messages per QP (default 128)\n"
	"  -I, --inline_size N     post messages up to N bytes inline (default 0)\n"
	"      --report_gbits      bandwidth in Gb/s\n"
	"      --verify            check every byte of every message (and atomic results)\n"
	"      --json              one JSON object per result line\n"
	"      --loopback          two devices in this process over a net_ring pair (the default)\n"
	"      --server PORT       wait for a client on TCP PORT (it sends the test's parameters)\n"
	"      --client HOST:PORT  run the test against a server\n"
	"  engine options, passed on: --pcap FILE, --fault SPEC, --stages MAP, --port NAME, --ip ADDR,\n"
	"      --neigh IP,MAC, --no-latency, --mbufs N, --max-qp N, --max-cqe N, --window BYTES\n"
	"  EAL args after --; default: -l 0,1 --no-huge -m 1024 --no-pci --no-shconf --log-level=error\n";

/* ------------------------------------------------------------------------------------------------------ */
/* Options                                                                                                  */

static int
bad(const char *what, const char *value)
{
	fprintf(stderr, "rnic-perf: %s: '%s'\n%s", what, value, usage);
	return -1;
}

static int
parse_number(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (s[0] == '-')
		return -1;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Engine options rnic-perf passes on (with their argument, but --no-latency). */
static const char *const engine_opts[] = { "--pcap", "--fault", "--stages", "--port", "--ip", "--neigh",
					   "--mbufs", "--max-qp", "--max-cqe", "--window", NULL };

static int
parse_args(int argc, char **argv, struct perf_opts *o, int *eargc, char **eargv)
{
	static const struct option longopts[] = {
		{ "op", required_argument, NULL, 'o' }, { "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' }, { "duration", required_argument, NULL, 'D' },
		{ "qp", required_argument, NULL, 'q' }, { "mtu", required_argument, NULL, 'm' },
		{ "connection", required_argument, NULL, 'c' }, { "tx-depth", required_argument, NULL, 't' },
		{ "inline_size", required_argument, NULL, 'I' }, { "report_gbits", no_argument, NULL, 'G' },
		{ "verify", no_argument, NULL, 'V' }, { "json", no_argument, NULL, 'J' },
		{ "bw", no_argument, NULL, 'B' }, { "lat", no_argument, NULL, 'L' },
		{ "loopback", no_argument, NULL, 'l' }, { "server", required_argument, NULL, 'S' },
		{ "client", required_argument, NULL, 'C' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *app[MAX_ARGS] = { argv[0] };
	int napp = 1, opt, eal_at = argc, size_given = 0, iters_given = 0;
	uint64_t v;

	*o = (struct perf_opts){ .op = OP_WRITE, .mode = MODE_BW, .size = 65536, .nb_qp = 1, .mtu = RNIC_MTU_4096,
				 .conn = RNIC_QPT_RC, .tx_depth = 128 };
	/* Split: engine options go to the engine, what follows "--" is EAL's, the rest is ours. */
	*eargc = 1;
	eargv[0] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			eal_at = i + 1;
			break;
		}
		int eng = strcmp(argv[i], "--no-latency") == 0 ? 1 : 0;

		for (int k = 0; engine_opts[k] != NULL && !eng; k++)
			if (strcmp(argv[i], engine_opts[k]) == 0)
				eng = 2;
		if (eng == 2 && i + 1 >= argc)
			return bad("missing value", argv[i]);
		if (napp + 2 >= MAX_ARGS)
			return bad("too many arguments", argv[i]);
		if (eng != 0) {
			i += eng - 1;	/* past its value */
			continue;
		}
		app[napp++] = argv[i];
	}
	/* EAL arguments first (the user's or the defaults), then "--" and the engine's. */
	if (eal_at < argc) {
		for (int i = eal_at; i < argc && *eargc < MAX_ARGS - 16; i++)
			eargv[(*eargc)++] = argv[i];
	} else {
		static char *defaults[] = { "-l", "0,1", "--no-huge", "-m", "1024", "--no-pci", "--no-shconf",
					    "--log-level=error" };

		for (unsigned int i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			eargv[(*eargc)++] = defaults[i];
	}
	eargv[(*eargc)++] = "--";
	int stages_given = 0;

	for (int i = 1; i < eal_at - (eal_at < argc ? 1 : 0) && *eargc < MAX_ARGS - 4; i++) {
		int eng = strcmp(argv[i], "--no-latency") == 0;

		for (int k = 0; engine_opts[k] != NULL && !eng; k++) {
			if (strcmp(argv[i], engine_opts[k]) == 0) {
				stages_given |= strcmp(argv[i], "--stages") == 0;
				eargv[(*eargc)++] = argv[i];
				eargv[(*eargc)++] = argv[++i];
				break;
			}
		}
		if (eng)
			eargv[(*eargc)++] = argv[i];
	}
	if (!stages_given) {
		eargv[(*eargc)++] = "--stages";
		eargv[(*eargc)++] = NULL;	/* chosen from the workload once it is parsed */
		o->stages_arg = &eargv[*eargc - 1];
	}

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(napp, app, ":o:s:an:D:q:m:c:t:I:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			for (o->op = 0; o->op < OP_N && strcmp(optarg, perf_op_names[o->op]) != 0; o->op++)
				;
			if (o->op == OP_N)
				return bad("--op: not an operation", optarg);
			break;
		case 's':
			if (parse_number(optarg, 1, PERF_MAX_SIZE, &v) != 0)
				return bad("--size: 1 .. 8388608", optarg);
			o->size = (uint32_t)v;
			size_given = 1;
			break;
		case 'a': o->sweep = 1; break;
		case 'n':
			if (parse_number(optarg, 1, 1000000000ull, &v) != 0)
				return bad("--iters: 1 .. 1e9", optarg);
			o->iters = v;
			iters_given = 1;
			break;
		case 'D': {
			char *end;

			o->duration = strtod(optarg, &end);
			if (*end != '\0' || !(o->duration > 0 && o->duration <= 3600))
				return bad("--duration: seconds, 0 .. 3600", optarg);
			break;
		}
		case 'q':
			if (parse_number(optarg, 1, PERF_MAX_QP, &v) != 0)
				return bad("--qp: 1 .. 65536", optarg);
			o->nb_qp = (uint32_t)v;
			break;
		case 'm': {
			int m;

			o->mtu_given = 1;
			for (m = RNIC_MTU_256; m <= RNIC_MTU_4096; m++)
				if (parse_number(optarg, 1, 4096, &v) == 0 && v == 128u << m)
					break;
			if (m > RNIC_MTU_4096)
				return bad("--mtu: 256, 512, 1024, 2048 or 4096", optarg);
			o->mtu = (enum rnic_mtu)m;
			break;
		}
		case 'c':
			if (strcmp(optarg, "RC") == 0)
				o->conn = RNIC_QPT_RC;
			else if (strcmp(optarg, "UC") == 0)
				o->conn = RNIC_QPT_UC;
			else if (strcmp(optarg, "UD") == 0)
				o->conn = RNIC_QPT_UD;
			else
				return bad("--connection: RC, UC or UD", optarg);
			break;
		case 't':
			if (parse_number(optarg, 1, 4096, &v) != 0)
				return bad("--tx-depth: 1 .. 4096", optarg);
			o->tx_depth = (uint32_t)v;
			break;
		case 'I':
			if (parse_number(optarg, 0, 512, &v) != 0)
				return bad("--inline_size: 0 .. 512", optarg);
			o->inline_size = (uint32_t)v;
			break;
		case 'G': o->report_gbits = 1; break;
		case 'V': o->verify = 1; break;
		case 'J': o->json = 1; break;
		case 'B': o->mode = MODE_BW; break;
		case 'L': o->mode = MODE_LAT; break;
		case 'l': break;
		case 'S': o->server_port = optarg; break;
		case 'C': o->client = optarg; break;
		case 'h': fputs(usage, stdout); exit(0);
		case ':': return bad("missing value", app[optind - 1]);
		default: return bad("unknown option", app[optind - 1]);
		}
	}
	if (optind < napp)
		return bad("unexpected argument", app[optind]);
	if (o->server_port != NULL && o->client != NULL)
		return bad("--server and --client", "both given");
	if ((o->server_port != NULL || o->client != NULL) && o->nb_qp > PERF_MAX_QP_REMOTE)
		return bad("--qp: 1 .. 1024 between two processes", "--server/--client");
	if (o->op == OP_FETCH_ADD || o->op == OP_CMP_SWAP) {
		if ((size_given && o->size != 8) || o->sweep)
			return bad("atomics are 8 bytes", "--size/-a");
		o->size = 8;
	}
	if (o->conn != RNIC_QPT_RC && (o->op == OP_READ || o->op == OP_FETCH_ADD || o->op == OP_CMP_SWAP))
		return bad("READ and atomics need --connection RC", perf_op_names[o->op]);
	if (o->conn == RNIC_QPT_UD && o->op != OP_SEND)
		return bad("UD carries SEND only", perf_op_names[o->op]);
	if (o->conn == RNIC_QPT_UD && !o->sweep && o->size > (128u << o->mtu))
		return bad("UD messages are at most one MTU", "--size");
	if (o->mode == MODE_LAT && o->client != NULL && o->duration > 0)
		return bad("latency against a server takes -n, not -D", "-D");
	if (!iters_given)
		o->iters = o->mode == MODE_BW ? 5000 : 1000;
	/* rnic-perf polls all the time, so its own lcore can carry engine stages (manual progress). Below
	 * 4 KB the host interface's stages (doorbell, requester, completer) go beside the posts and polls that
	 * share their lines, the wire's on a worker; from 4 KB the copies dominate and every stage goes on
	 * the worker, leaving the application's lcore to --verify (doc/performance.md has the measurements). */
	if (o->stages_arg != NULL)
		*o->stages_arg = o->size >= 4096 && !o->sweep ? "one" : "host";
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Setting up                                                                                               */

static int
fail(const char *what)
{
	fprintf(stderr, "rnic-perf: %s\n", what);
	return -1;
}

static uint64_t
slot_bytes(const struct perf_opts *o, uint32_t size)
{
	return RTE_ALIGN_CEIL((uint64_t)size + (o->conn == RNIC_QPT_UD ? UD_GRH : 0), 64);
}

/* Open a device: PD, CQs, the buffer areas sized for the largest message, QPs in RESET. */
static int
end_open(struct perf_end *e, struct rnic_device *dev, const struct perf_opts *o, uint32_t max_size)
{
	struct rnic_port_attr port;
	uint32_t depth = o->mode == MODE_BW ? o->tx_depth : 2;

	e->nb_qp = o->nb_qp;
	e->slot = slot_bytes(o, max_size);
	e->slots_per_qp = (uint32_t)RTE_MIN((uint64_t)depth, RTE_MAX(PERF_AREA_BYTES / 2 / o->nb_qp / e->slot,
								     (uint64_t)1));
	e->area_bytes = 2ull * o->nb_qp * e->slots_per_qp * e->slot;
	e->ctx = rnic_open_device(dev);
	if (e->ctx == NULL)
		return fail("cannot open the device");
	if (rnic_query_port(e->ctx, 1, &port) != 0 || o->mtu > port.active_mtu)
		return fail("--mtu is above the port's MTU");
	e->pd = rnic_alloc_pd(e->ctx);
	e->cq = rnic_create_cq(e->ctx, (int)(o->nb_qp * e->slots_per_qp + 64), NULL, NULL, 0);
	e->rcq = rnic_create_cq(e->ctx, (int)(o->nb_qp * e->slots_per_qp + 64), NULL, NULL, 0);
	/* rnic_alloc_buf: memory rnicd can map when this process is its client (RNIC_DAEMON). */
	e->area = rnic_alloc_buf(e->area_bytes);
	if (e->pd == NULL || e->cq == NULL || e->rcq == NULL || e->area == NULL)
		return fail("cannot create PD, CQs or buffers (more QPs x depth than the CQ limit?)");
	memset(e->area, 0, e->area_bytes);
	e->mr = rnic_reg_mr(e->pd, e->area, e->area_bytes, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			    RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);
	if (e->mr == NULL)
		return fail("cannot register the buffers");
	for (uint32_t q = 0; q < o->nb_qp; q++) {
		struct rnic_qp_init_attr ia = {
			.send_cq = e->cq, .recv_cq = e->rcq, .qp_type = o->conn,
			.cap = { .max_send_wr = e->slots_per_qp + 1, .max_recv_wr = e->slots_per_qp + 1,
				 .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = o->inline_size },
		};

		e->qp[q] = rnic_create_qp(e->pd, &ia);
		if (e->qp[q] == NULL)
			return fail("cannot create the QPs (--qp above the device's limit?)");
	}
	return 0;
}

static void
end_close(struct perf_end *e)
{
	for (uint32_t q = 0; q < e->nb_qp; q++)
		if (e->qp[q] != NULL)
			rnic_destroy_qp(e->qp[q]);
	if (e->ah != NULL)
		rnic_destroy_ah(e->ah);
	if (e->mr != NULL)
		rnic_dereg_mr(e->mr);
	if (e->cq != NULL)
		rnic_destroy_cq(e->cq);
	if (e->rcq != NULL)
		rnic_destroy_cq(e->rcq);
	if (e->pd != NULL)
		rnic_dealloc_pd(e->pd);
	if (e->ctx != NULL)
		rnic_close_device(e->ctx);
	rnic_free_buf(e->area);
	memset(e, 0, sizeof(*e));
}

static void
end_info(const struct perf_end *e, uint32_t q, struct perf_qp_info *info)
{
	union rnic_gid gid;

	rnic_query_gid(e->ctx, 1, 0, &gid);
	*info = (struct perf_qp_info){
		.qpn = e->qp[q]->qp_num, .psn = (uint32_t)(rand() & 0xffffff), .rkey = e->mr->rkey,
		.rx_addr = (uintptr_t)perf_rx_slot(e, q, 0), .tx_addr = (uintptr_t)perf_tx_slot(e, q, 0),
	};
	memcpy(info->gid, gid.raw, 16);
}

/* READs and atomics a QP keeps outstanding: as many as the device allows for READ and atomic tests
 * (perftest's default), one otherwise (the responder allocates a resource per outstanding one). */
static uint8_t
rd_atomic_depth(struct perf_end *e, const struct perf_opts *o)
{
	struct rnic_device_attr attr;

	if (o->op != OP_READ && o->op != OP_FETCH_ADD && o->op != OP_CMP_SWAP)
		return 1;
	if (rnic_query_device(e->ctx, &attr) != 0 || attr.max_qp_rd_atom < 1)
		return 16;
	return (uint8_t)RTE_MIN(attr.max_qp_rd_atom, UINT8_MAX);
}

/* Take QP q to RTS towards the peer (its info in e->peer[q]); mine is this QP's own info. */
static int
end_connect(struct perf_end *e, uint32_t q, const struct perf_qp_info *mine, const struct perf_opts *o)
{
	const struct perf_qp_info *p = &e->peer[q];
	int rc = o->conn == RNIC_QPT_RC, ud = o->conn == RNIC_QPT_UD;
	uint8_t outs = rd_atomic_depth(e, o);
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = QKEY,
		.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
	};

	if (rnic_modify_qp(e->qp[q], &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
			   (ud ? RNIC_QP_QKEY : RNIC_QP_ACCESS_FLAGS)) != 0)
		return fail("cannot move a QP to INIT");
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_RTR, .path_mtu = o->mtu, .dest_qp_num = p->qpn, .rq_psn = p->psn,
		.max_dest_rd_atomic = outs, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1 },
	};
	memcpy(a.ah_attr.grh.dgid.raw, p->gid, 16);
	if (rnic_modify_qp(e->qp[q], &a, RNIC_QP_STATE |
			   (ud ? 0 : RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN) |
			   (rc ? RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER : 0)) != 0)
		return fail("cannot move a QP to RTR");
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_RTS, .sq_psn = mine->psn, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.max_rd_atomic = outs,
	};
	if (rnic_modify_qp(e->qp[q], &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN |
			   (rc ? RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC :
			    0)) != 0)
		return fail("cannot move a QP to RTS");
	if (ud && e->ah == NULL) {
		struct rnic_ah_attr ah = { .is_global = 1, .port_num = 1 };

		memcpy(ah.grh.dgid.raw, p->gid, 16);
		e->ah = rnic_create_ah(e->pd, &ah);
		if (e->ah == NULL)
			return fail("cannot create the UD address handle");
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Posting and completing                                                                                   */

static int
post_recv(struct perf_end *e, uint32_t q, uint64_t idx)
{
	struct rnic_sge sge = { (uintptr_t)perf_rx_slot(e, q, idx), (uint32_t)e->slot, e->mr->lkey };
	struct rnic_recv_wr wr = { .wr_id = ((uint64_t)q << 40) | idx, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(e->qp[q], &wr, &bad);
}

/* Post message msg of QP q (the requester's side of every operation). */
static int
post_msg(struct perf_end *e, const struct perf_opts *o, uint32_t q, uint64_t msg, uint32_t size)
{
	const struct perf_qp_info *p = &e->peer[q];
	uint64_t slot_off = (msg % e->slots_per_qp) * e->slot;
	int atomic = o->op == OP_FETCH_ADD || o->op == OP_CMP_SWAP;
	struct rnic_sge sge = {
		.addr = (uintptr_t)(o->op == OP_READ || atomic ? perf_rx_slot(e, q, msg) : perf_tx_slot(e, q, msg)),
		.length = size, .lkey = e->mr->lkey,
	};
	struct rnic_send_wr wr = { .wr_id = ((uint64_t)q << 40) | msg, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;
	static const enum rnic_wr_opcode wr_op[OP_N] = {
		[OP_WRITE] = RNIC_WR_RDMA_WRITE, [OP_READ] = RNIC_WR_RDMA_READ, [OP_SEND] = RNIC_WR_SEND,
		[OP_FETCH_ADD] = RNIC_WR_ATOMIC_FETCH_AND_ADD, [OP_CMP_SWAP] = RNIC_WR_ATOMIC_CMP_AND_SWP,
	};

	wr.opcode = wr_op[o->op];
	if (size <= o->inline_size && (o->op == OP_WRITE || o->op == OP_SEND))
		wr.send_flags |= RNIC_SEND_INLINE;
	if (atomic) {
		/* One counter per QP, at the start of the peer's rx area of the QP. */
		wr.wr.atomic.remote_addr = p->rx_addr;
		wr.wr.atomic.rkey = p->rkey;
		wr.wr.atomic.compare_add = o->op == OP_FETCH_ADD ? 1 : msg;
		wr.wr.atomic.swap = msg + 1;
	} else if (o->conn == RNIC_QPT_UD) {
		wr.wr.ud.ah = e->ah;
		wr.wr.ud.remote_qpn = p->qpn;
		wr.wr.ud.remote_qkey = QKEY;
	} else {
		wr.wr.rdma.remote_addr = (o->op == OP_READ ? p->tx_addr : p->rx_addr) + slot_off;
		wr.wr.rdma.rkey = p->rkey;
	}
	return rnic_post_send(e->qp[q], &wr, &bad);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The responder's side: receives for SEND, the echo of the latency tests                                   */

/*
 * A received message (--verify). Its first 8 bytes say which it is (messages of 8 bytes or more): RC must
 * deliver each in order exactly once; UC and UD may lose some (a SEND finding no receive is dropped), so a
 * later one may come, never an earlier one again.
 */
static int
check_received(struct perf_end *e, const struct perf_opts *o, uint32_t q, const uint8_t *data, uint32_t len,
	       uint32_t size)
{
	uint64_t msg = e->next_msg[q];

	if (len != size + (o->conn == RNIC_QPT_UD ? UD_GRH : 0))
		return -1;
	if (size >= 8) {
		memcpy(&msg, data, 8);
		if (o->conn == RNIC_QPT_RC ? msg != e->next_msg[q] : msg < e->next_msg[q])
			return -1;
		e->next_msg[q] = msg + 1;
		return perf_check(data + 8, size - 8, q, msg) == 0 ? 0 : -1;
	}
	if (o->conn != RNIC_QPT_RC)
		return 0;	/* too short to say which message it is */
	e->next_msg[q] = msg + 1;
	return perf_check(data, size, q, msg);
}

/* What a SEND carries (--verify): its number in the first 8 bytes, then the pattern. */
static void
fill_send(uint8_t *p, uint32_t size, uint32_t q, uint64_t msg)
{
	if (size < 8) {
		perf_fill(p, size, q, msg);
		return;
	}
	memcpy(p, &msg, 8);
	perf_fill(p + 8, size - 8, q, msg);
}

/* Receive completions: check (--verify) and post the receive again. -1 on an error completion or bad data. */
static int
serve_receives(struct perf_end *e, const struct perf_opts *o, uint32_t size, uint64_t *total)
{
	struct rnic_wc wc[64];
	int n = rnic_poll_cq(e->rcq, 64, wc);

	for (int i = 0; i < n; i++) {
		uint32_t q = (uint32_t)(wc[i].wr_id >> 40);
		uint64_t idx = wc[i].wr_id & ((1ull << 40) - 1);
		const uint8_t *data = perf_rx_slot(e, q, idx) + (o->conn == RNIC_QPT_UD ? UD_GRH : 0);

		if (wc[i].status != RNIC_WC_SUCCESS) {
			fprintf(stderr, "rnic-perf: receive failed: %s\n", rnic_wc_status_str(wc[i].status));
			return -1;
		}
		if (o->verify && check_received(e, o, q, data, wc[i].byte_len, size) != 0) {
			fprintf(stderr, "rnic-perf: QP %u message %llu: received data differs\n", q,
				(unsigned long long)e->received[q]);
			return -1;
		}
		e->received[q]++;
		(*total)++;
		if (post_recv(e, q, idx + e->slots_per_qp) != 0)
			return fail("cannot post a receive");
	}
	return n < 0 ? -1 : 0;
}

static int
post_receives(struct perf_end *e)
{
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		e->received[q] = 0;
		e->next_msg[q] = 0;
		for (uint32_t k = 0; k < e->slots_per_qp; k++)
			if (post_recv(e, q, k) != 0)
				return fail("cannot post the receives");
	}
	return 0;
}

/* Fill the tx slots the peer READs from (READ tests), and zero the atomic counters. */
static void
prepare_target(struct perf_end *e, const struct perf_opts *o, uint32_t size)
{
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		for (uint32_t k = 0; k < e->slots_per_qp && o->op == OP_READ; k++)
			perf_fill(perf_tx_slot(e, q, k), size, q, k);
		memset(perf_rx_slot(e, q, 0), 0, 8);
	}
}

static int check_target_now(struct perf_end *e, const struct perf_opts *o, uint32_t size, const uint64_t *count,
			    int quiet);

/* The target's state after a run of count messages per QP (--verify): WRITE data, atomic counters. UC
 * completes a WRITE when it is sent: give the last ones time to land. */
static int
check_target(struct perf_end *e, const struct perf_opts *o, uint32_t size, const uint64_t *count)
{
	for (int i = 0; o->conn != RNIC_QPT_RC && i < 1000; i++) {
		if (check_target_now(e, o, size, count, 1) == 0)
			return 0;
		/* The target's stages may be this thread's own (manual progress): run them, then wait. */
		while (rnic_engine_progress() != 0)
			;
		usleep(1000);
	}
	return check_target_now(e, o, size, count, 0);
}

static int
check_target_now(struct perf_end *e, const struct perf_opts *o, uint32_t size, const uint64_t *count, int quiet)
{
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		uint64_t counter;

		if (o->op == OP_WRITE) {
			/* Each slot holds the last message written to it. */
			for (uint64_t m = count[q] > e->slots_per_qp ? count[q] - e->slots_per_qp : 0; m < count[q]; m++)
				if (perf_check(perf_rx_slot(e, q, m), size, q, m) != 0) {
					if (quiet)
						return -1;
					fprintf(stderr, "rnic-perf: QP %u message %llu: written data differs\n", q,
						(unsigned long long)m);
					return -1;
				}
		} else if (o->op == OP_FETCH_ADD || o->op == OP_CMP_SWAP) {
			memcpy(&counter, perf_rx_slot(e, q, 0), 8);
			if (counter != count[q]) {
				fprintf(stderr, "rnic-perf: QP %u: atomic counter %llu, expected %llu\n", q,
					(unsigned long long)counter, (unsigned long long)count[q]);
				return -1;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Bandwidth                                                                                                */

struct peer_side {
	struct perf_end *end;		/* the peer in this process (loopback), or NULL */
	uint64_t received;
};

/* Check one send completion of the requester (--verify: what can be checked from here). */
static int
check_completion(struct perf_end *e, const struct perf_opts *o, const struct rnic_wc *wc, uint32_t size,
		 const struct perf_end *target)
{
	uint32_t q = (uint32_t)(wc->wr_id >> 40);
	uint64_t msg = wc->wr_id & ((1ull << 40) - 1);
	uint64_t orig;

	if (wc->status != RNIC_WC_SUCCESS) {
		fprintf(stderr, "rnic-perf: QP %u message %llu: %s\n", q, (unsigned long long)msg,
			rnic_wc_status_str(wc->status));
		return -1;
	}
	if (!o->verify)
		return 0;
	switch (o->op) {
	case OP_WRITE:
		/* RC completes once the data is placed; UC once it is sent: that is checked at the end. */
		if (target != NULL && o->conn == RNIC_QPT_RC && perf_check(perf_rx_slot(target, q, msg), size, q, msg) != 0)
			goto differs;
		break;
	case OP_READ:
		if (perf_check(perf_rx_slot(e, q, msg), size, q, msg % e->slots_per_qp) != 0)
			goto differs;
		memset(perf_rx_slot(e, q, msg), 0, size);	/* the next READ into it must write it again */
		break;
	case OP_FETCH_ADD:
	case OP_CMP_SWAP:
		/* RC executes a QP's atomics in order: the n-th found the counter at n. */
		memcpy(&orig, perf_rx_slot(e, q, msg), 8);
		if (orig != msg)
			goto differs;
		break;
	default:
		break;
	}
	return 0;
differs:
	fprintf(stderr, "rnic-perf: QP %u message %llu: data differs\n", q, (unsigned long long)msg);
	return -1;
}

static double
monotonic_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* TSC cycles per second: EAL measured them; a client of rnicd (RNIC_DAEMON) has no EAL and measures here. */
static double
tsc_hz(void)
{
	static double hz;
	double t0, c0;

	if (hz != 0)
		return hz;
	if (rte_get_tsc_hz() != 0)
		return hz = (double)rte_get_tsc_hz();
	t0 = monotonic_s();
	c0 = (double)rte_rdtsc();
	usleep(50000);
	return hz = ((double)rte_rdtsc() - c0) / (monotonic_s() - t0);
}

/* Seconds from the TSC: the polling loops read the time on every turn, and a clock_gettime costs a VM about
 * as much as a turn of the engine (5% of the 64 B message rate). */
static double
now_s(void)
{
	return (double)rte_rdtsc() / tsc_hz();
}

/* Post on QP q while it has fewer than tx-depth messages outstanding (and the run wants more). */
static int
fill_qp(struct perf_end *e, const struct perf_opts *o, uint32_t q, uint32_t size, uint64_t *posted, uint64_t target)
{
	while (e->posted[q] - e->done[q] < e->slots_per_qp && *posted < target) {
		uint64_t msg = e->posted[q];

		if (o->verify && o->op == OP_WRITE)
			perf_fill(perf_tx_slot(e, q, msg), size, q, msg);
		if (o->verify && o->op == OP_SEND)
			fill_send(perf_tx_slot(e, q, msg), size, q, msg);
		/* The SQ holds tx-depth WQEs and at most that many are outstanding: a post cannot find it
		 * full, and the doorbell needs no room (one per QP is ever queued). */
		if (post_msg(e, o, q, msg, size) != 0)
			return fail("post_send failed");
		e->posted[q]++;
		(*posted)++;
	}
	return 0;
}

static int
run_bw(struct perf_end *e, struct peer_side *peer, const struct perf_opts *o, uint32_t size, struct perf_result *r)
{
	uint64_t posted = 0, done = 0, target = o->duration > 0 ? UINT64_MAX : o->iters, window_done = 0;
	double start = now_s(), window_start = start, last_progress = start, end_by = start + o->duration;
	int stop_posting = 0;

	for (uint32_t q = 0; q < e->nb_qp; q++)
		e->posted[q] = e->done[q] = 0;
	/* Every QP starts with tx-depth messages; afterwards a QP posts again when one of its own completes,
	 * so the work per completion does not grow with the number of QPs. */
	for (uint32_t q = 0; q < e->nb_qp; q++)
		if (fill_qp(e, o, q, size, &posted, target) != 0)
			return -1;
	while (done < posted || !stop_posting) {
		struct rnic_wc wc[64];
		double t = now_s();
		int n;

		if ((o->duration > 0 && t >= end_by) || posted >= target)
			stop_posting = 1;
		n = rnic_poll_cq(e->cq, 64, wc);
		if (n < 0)
			return fail("poll_cq failed");
		for (int i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(wc[i].wr_id >> 40);

			if (check_completion(e, o, &wc[i], size, peer->end) != 0)
				return -1;
			e->done[q]++;
			if (!stop_posting && fill_qp(e, o, q, size, &posted, target) != 0)
				return -1;
		}
		done += (uint64_t)n;
		if (peer->end != NULL && o->op == OP_SEND &&
		    serve_receives(peer->end, o, size, &peer->received) != 0)
			return -1;
		if (t - window_start >= PEAK_WINDOW_S) {
			double MBps = (double)(done - window_done) * size / (t - window_start) / 1048576.0;

			r->bw_peak_MBps = RTE_MAX(r->bw_peak_MBps, MBps);
			window_start = t;
			window_done = done;
		}
		if (t - last_progress >= 1.0 && (o->duration > 2 || t - start > 2)) {
			fprintf(stderr, "rnic-perf: %.0f s, %llu messages, %.3f Gb/s\n", t - start,
				(unsigned long long)done, (double)done * size * 8 / (t - start) / 1e9);
			last_progress = t;
		}
		if (n == 0 && t - start > (o->duration > 0 ? o->duration : 0) + 600)
			return fail("the run does not finish (10 minutes past its end)");
	}
	r->seconds = now_s() - start;
	r->iters = done;
	r->bw_avg_MBps = (double)done * size / r->seconds / 1048576.0;
	r->bw_peak_MBps = RTE_MAX(r->bw_peak_MBps, r->bw_avg_MBps);
	r->msg_rate_Mpps = (double)done / r->seconds / 1e6;
	/* SENDs: every message must also have arrived (RC); UC and UD may lose some, counted. */
	for (double t0 = now_s(); peer->end != NULL && o->op == OP_SEND && peer->received < done;) {
		if (serve_receives(peer->end, o, size, &peer->received) != 0)
			return -1;
		if (o->conn != RNIC_QPT_RC && now_s() - t0 > 0.2)
			break;
		if (now_s() - t0 > WAIT_S)
			return fail("SENDs completed but not all were received");
	}
	if (peer->end != NULL && o->op == OP_SEND)
		r->lost = done - peer->received;
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Latency                                                                                                  */

/* Wait for one completion on cq. */
static int
wait_wc(struct rnic_cq *cq, struct rnic_wc *wc)
{
	double deadline = now_s() + WAIT_S;

	for (;;) {
		int n = rnic_poll_cq(cq, 1, wc);

		if (n == 1)
			return wc->status == RNIC_WC_SUCCESS ? 0 : fail(rnic_wc_status_str(wc->status));
		if (n < 0 || now_s() > deadline)
			return fail("no completion");
	}
}

/* Wait until the last byte of a buffer the peer writes takes the value. */
static int
wait_byte(const volatile uint8_t *p, uint8_t value)
{
	double deadline = now_s() + WAIT_S;

	while (*p != value) {
		rnic_engine_progress();
		if (now_s() > deadline)
			return fail("the peer's WRITE did not arrive");
	}
	return 0;
}

/* Reap the signaled completions of the ping-pong's WRITEs/SENDs (their status only). */
static int
reap(struct rnic_cq *cq)
{
	struct rnic_wc wc[16];
	int n = rnic_poll_cq(cq, 16, wc);

	for (int i = 0; i < n; i++)
		if (wc[i].status != RNIC_WC_SUCCESS)
			return fail(rnic_wc_status_str(wc[i].status));
	return n < 0 ? -1 : 0;
}

/* One half of a ping-pong: e sends message it (WRITE or SEND) to its peer, whose end is "to" when it is in
 * this process. The receiving side of it: wait, check, answer. */
static int
ping(struct perf_end *e, const struct perf_opts *o, uint32_t qp_tag, uint64_t it, uint32_t size)
{
	uint8_t *tx = perf_tx_slot(e, 0, 0);

	if (o->verify)
		perf_fill(tx, size, qp_tag, it);
	tx[size - 1] = (uint8_t)(it % 250 + 1);
	return post_msg(e, o, 0, 0, size);
}

static int
pong_wait(struct perf_end *e, const struct perf_opts *o, uint32_t qp_tag, uint64_t it, uint32_t size)
{
	uint8_t *rx = perf_rx_slot(e, 0, 0);
	struct rnic_wc wc;

	if (o->op == OP_WRITE) {
		if (wait_byte(rx + size - 1, (uint8_t)(it % 250 + 1)) != 0)
			return -1;
	} else {
		uint64_t idx;

		if (wait_wc(e->rcq, &wc) != 0)
			return -1;
		idx = wc.wr_id & ((1ull << 40) - 1);
		if (post_recv(e, 0, idx + e->slots_per_qp) != 0)
			return -1;
		rx = perf_rx_slot(e, 0, idx) + (o->conn == RNIC_QPT_UD ? UD_GRH : 0);
	}
	if (o->verify) {
		uint8_t last = rx[size - 1];
		int ok;

		/* The last byte is the marker: compare the rest, then the marker. */
		rx[size - 1] = 0;
		perf_fill(perf_tx_slot(e, 0, 1), size, qp_tag, it);
		perf_tx_slot(e, 0, 1)[size - 1] = 0;
		ok = memcmp(rx, perf_tx_slot(e, 0, 1), size) == 0 && last == (uint8_t)(it % 250 + 1);
		rx[size - 1] = last;
		if (!ok)
			return fail("ping-pong data differs");
	}
	return reap(e->cq);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
lat_stats(double *lat, uint64_t n, struct perf_result *r)
{
	double sum = 0, sq = 0;

	qsort(lat, n, sizeof(lat[0]), cmp_double);
	for (uint64_t i = 0; i < n; i++) {
		sum += lat[i];
		sq += lat[i] * lat[i];
	}
	r->iters = n;
	r->lat_min = lat[0];
	r->lat_max = lat[n - 1];
	r->lat_avg = sum / (double)n;
	r->lat_stdev = sqrt(RTE_MAX(sq / (double)n - r->lat_avg * r->lat_avg, 0.0));
	r->lat_p50 = lat[(n - 1) / 2];
	r->lat_p99 = lat[(uint64_t)((double)(n - 1) * 0.99)];
	r->lat_p999 = lat[(uint64_t)((double)(n - 1) * 0.999)];
}

/*
 * The latency loop of the requester's end; with the peer in this process (loopback) it also plays the peer's
 * part. WRITE and SEND: ping-pong, half the round trip (perftest's write_lat/send_lat). READ and atomics:
 * post one, wait for its completion.
 */
static int
run_lat(struct perf_end *e, struct perf_end *peer, const struct perf_opts *o, uint32_t size, struct perf_result *r)
{
	uint64_t cap = o->duration > 0 ? 1024 : o->iters, n = 0;
	double *lat = malloc(sizeof(double) * cap), start = now_s();
	double hz = tsc_hz();
	int ret = 0;

	if (lat == NULL)
		return fail("out of memory");
	e->posted[0] = 0;
	while (ret == 0 && (o->duration > 0 ? now_s() - start < o->duration : n < o->iters)) {
		uint64_t t0 = rte_rdtsc(), t1;
		struct rnic_wc wc;

		if (o->op == OP_WRITE || o->op == OP_SEND) {
			ret = ping(e, o, 0, n, size);
			if (ret == 0 && peer != NULL)
				ret = pong_wait(peer, o, 0, n, size) || ping(peer, o, 1, n, size);
			if (ret == 0)
				ret = pong_wait(e, o, 1, n, size);
			t1 = rte_rdtsc();
			lat[n] = (double)(t1 - t0) / hz * 1e6 / 2;
		} else {
			ret = post_msg(e, o, 0, n, size) || wait_wc(e->cq, &wc) || check_completion(e, o, &wc, size, NULL);
			t1 = rte_rdtsc();
			lat[n] = (double)(t1 - t0) / hz * 1e6;
		}
		if (++n == cap && o->duration > 0) {
			double *more = realloc(lat, sizeof(double) * cap * 2);

			if (more == NULL) {
				ret = fail("out of memory");
				break;
			}
			lat = more;
			cap *= 2;
		}
	}
	if (ret == 0 && n > 0) {
		r->seconds = now_s() - start;
		lat_stats(lat, n, r);
	}
	free(lat);
	return ret;
}

/* The server's part of a latency run: answer each ping (WRITE, SEND; READ and atomics need nothing). */
static int
serve_lat(struct perf_end *e, const struct perf_opts *o, uint32_t size)
{
	for (uint64_t n = 0; n < o->iters && (o->op == OP_WRITE || o->op == OP_SEND); n++)
		if (pong_wait(e, o, 0, n, size) != 0 || ping(e, o, 1, n, size) != 0)
			return -1;
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Runs                                                                                                     */

static void
stage_snapshot(struct perf_result *r)
{
	r->nb_stages = rnic_query_stage_latency(r->stages, (int)RTE_DIM(r->stages));
	if (r->nb_stages < 0)
		r->nb_stages = 0;
}

static void
stage_since(struct perf_result *r, const struct perf_result *before)
{
	stage_snapshot(r);
	for (int s = 0; s < r->nb_stages && s < before->nb_stages; s++) {
		rnic_latency_hist_sub(&r->stages[s].queued, &before->stages[s].queued);
		rnic_latency_hist_sub(&r->stages[s].busy, &before->stages[s].busy);
	}
}

/* The sizes of the run: one, or the -a sweep. */
static uint32_t
next_size(const struct perf_opts *o, uint32_t size)
{
	if (!o->sweep)
		return size == 0 ? o->size : 0;
	size = size == 0 ? 2 : size * 2;
	if (o->conn == RNIC_QPT_UD && size > (128u << o->mtu))
		return 0;
	return size <= PERF_MAX_SIZE ? size : 0;
}

static uint32_t
max_size(const struct perf_opts *o)
{
	return o->sweep ? (o->conn == RNIC_QPT_UD ? 128u << o->mtu : PERF_MAX_SIZE) : o->size;
}

/* One size between two ends in this process. */
static int
loopback_size(struct perf_end *a, struct perf_end *b, const struct perf_opts *o, uint32_t size)
{
	struct perf_result r = { .size = size }, before;
	struct peer_side peer = { .end = b };
	int ret;

	stage_snapshot(&before);
	prepare_target(b, o, size);
	if (o->op == OP_SEND && post_receives(b) != 0)
		return -1;
	if (o->mode == MODE_LAT && o->op == OP_SEND && post_receives(a) != 0)
		return -1;
	ret = o->mode == MODE_BW ? run_bw(a, &peer, o, size, &r) : run_lat(a, b, o, size, &r);
	if (ret == 0 && o->verify && o->mode == MODE_BW)
		ret = check_target(b, o, size, a->posted);
	if (ret != 0)
		return -1;
	r.verified = o->verify;
	stage_since(&r, &before);
	perf_print_result(o, &r);
	return 0;
}

/* Leave no receive behind between sizes: QPs go back to RESET and are connected again. */
static int
reconnect(struct perf_end *e, const struct perf_qp_info *mine, const struct perf_opts *o)
{
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RESET };

		if (rnic_modify_qp(e->qp[q], &a, RNIC_QP_STATE) != 0 || end_connect(e, q, &mine[q], o) != 0)
			return -1;
	}
	/* What the previous size left in the CQs (flushed receives included) is not this size's. */
	for (struct rnic_wc wc[16]; rnic_poll_cq(e->cq, 16, wc) > 0 || rnic_poll_cq(e->rcq, 16, wc) > 0;)
		;
	return 0;
}

static int
run_loopback(const struct perf_opts *o)
{
	static struct perf_end a, b;
	static struct perf_qp_info ia[PERF_MAX_QP], ib[PERF_MAX_QP];
	struct rnic_device **list = rnic_get_device_list(NULL);
	int ret = -1;

	if (list == NULL || list[0] == NULL || list[1] == NULL) {
		rnic_free_device_list(list);
		return fail("--loopback needs two devices (the engine's default pair: give no --port)");
	}
	if (end_open(&a, list[0], o, max_size(o)) == 0 && end_open(&b, list[1], o, max_size(o)) == 0) {
		for (uint32_t q = 0; q < o->nb_qp; q++) {
			end_info(&a, q, &ia[q]);
			end_info(&b, q, &ib[q]);
			a.peer[q] = ib[q];
			b.peer[q] = ia[q];
		}
		perf_print_header(o);
		ret = 0;
		for (uint32_t size = next_size(o, 0); size != 0 && ret == 0; size = next_size(o, size)) {
			ret = reconnect(&a, ia, o) || reconnect(&b, ib, o);
			if (ret == 0)
				ret = loopback_size(&a, &b, o, size);
		}
	}
	end_close(&a);
	end_close(&b);
	rnic_free_device_list(list);
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Server and client                                                                                        */

/* The test's parameters, as the client sends them. */
struct wire_opts {
	uint32_t op, mode, size, sweep, nb_qp, mtu, conn, tx_depth, inline_size, verify;
	uint64_t iters;
	double duration;
};

/* Per size: the client's "start" (count unused) and "done" (messages per QP); the server's answer. */
struct ctl {
	uint32_t size;
	int32_t ok;
	uint64_t count[PERF_MAX_QP_REMOTE];
};

static int
ctl_send(int fd, const struct ctl *c)
{
	return write(fd, c, sizeof(*c)) == (ssize_t)sizeof(*c) ? 0 : fail("the peer went away");
}

static int
ctl_recv(int fd, struct ctl *c, int wait)
{
	ssize_t n = recv(fd, c, sizeof(*c), wait ? MSG_WAITALL : MSG_DONTWAIT | MSG_PEEK);

	if (!wait)
		return n == (ssize_t)sizeof(*c) ? ctl_recv(fd, c, 1) : 1;	/* 1: nothing yet */
	return n == (ssize_t)sizeof(*c) ? 0 : fail("the peer went away");
}

static int
exchange_qps(int fd, struct perf_end *e, struct perf_qp_info *mine, const struct perf_opts *o)
{
	for (uint32_t q = 0; q < o->nb_qp; q++)
		end_info(e, q, &mine[q]);
	if (oob_exchange(fd, mine, e->peer, sizeof(mine[0]) * o->nb_qp) != 0)
		return fail("the QP exchange failed");
	return 0;
}

static int
open_single(struct perf_end *e, const struct perf_opts *o)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_port_attr port = { 0 };
	int ret;

	if (list == NULL || list[0] == NULL) {
		rnic_free_device_list(list);
		return fail("no device");
	}
	ret = end_open(e, list[0], o, max_size(o));
	rnic_free_device_list(list);
	/* Frames sent before the link is up are lost (memif connects, a veth comes up): wait for it. */
	for (int i = 0; ret == 0 && i < WAIT_S * 100; i++) {
		if (rnic_query_port(e->ctx, 1, &port) == 0 && port.state == RNIC_PORT_ACTIVE)
			break;
		usleep(10000);
	}
	return ret == 0 && port.state != RNIC_PORT_ACTIVE ? fail("the port's link did not come up") : ret;
}

static int
run_server(const struct perf_opts *local)
{
	static struct perf_end e;
	static struct perf_qp_info mine[PERF_MAX_QP];
	struct perf_opts o = *local;
	struct wire_opts w;
	struct ctl c;
	int fd = oob_connect(NULL, local->server_port), ret;

	if (fd < 0 || recv(fd, &w, sizeof(w), MSG_WAITALL) != (ssize_t)sizeof(w))
		return fail("no client");
	o.op = w.op;
	o.mode = w.mode;
	o.size = w.size;
	o.sweep = (int)w.sweep;
	o.nb_qp = w.nb_qp;
	o.mtu = w.mtu;
	o.conn = w.conn;
	o.tx_depth = w.tx_depth;
	o.inline_size = w.inline_size;
	o.verify = (int)w.verify;
	o.iters = w.iters;
	o.duration = w.duration;
	ret = open_single(&e, &o) || exchange_qps(fd, &e, mine, &o);
	for (uint32_t size = next_size(&o, 0); ret == 0 && size != 0; size = next_size(&o, size)) {
		uint64_t received = 0, want;

		ret = reconnect(&e, mine, &o) || ctl_recv(fd, &c, 1);
		if (ret != 0)
			break;
		prepare_target(&e, &o, size);
		if (o.op == OP_SEND && post_receives(&e) != 0)
			ret = -1;
		/* Ready: the client may start. */
		c.ok = 1;
		if (ret == 0)
			ret = ctl_send(fd, &c);
		if (ret == 0 && o.mode == MODE_LAT) {
			ret = serve_lat(&e, &o, size) || ctl_recv(fd, &c, 1);
		} else if (ret == 0) {
			int got;

			/* Until the client says it is done and every SEND it counted has arrived. */
			while ((got = ctl_recv(fd, &c, 0)) == 1 && ret == 0)
				if (o.op == OP_SEND)
					ret = serve_receives(&e, &o, size, &received);
			want = 0;
			for (uint32_t q = 0; q < o.nb_qp; q++)
				want += c.count[q];
			for (double t0 = now_s(); ret == 0 && got == 0 && o.op == OP_SEND && received < want;)
				if (serve_receives(&e, &o, size, &received) != 0 || now_s() - t0 > WAIT_S)
					ret = fail("not every SEND arrived");
			if (got < 0)
				ret = -1;
			if (ret == 0 && o.verify)
				ret = check_target(&e, &o, size, c.count);
		}
		c.ok = ret == 0;
		if (ctl_send(fd, &c) != 0)
			ret = -1;
	}
	if (fd >= 0)
		close(fd);
	end_close(&e);
	return ret;
}

static int
run_client(const struct perf_opts *o)
{
	static struct perf_end e;
	static struct perf_qp_info mine[PERF_MAX_QP];
	struct wire_opts w = {
		.op = o->op, .mode = o->mode, .size = o->size, .sweep = (uint32_t)o->sweep, .nb_qp = o->nb_qp,
		.mtu = o->mtu, .conn = o->conn, .tx_depth = o->tx_depth, .inline_size = o->inline_size,
		.verify = (uint32_t)o->verify, .iters = o->iters, .duration = o->duration,
	};
	int fd = oob_connect(o->client, NULL), ret;

	if (fd < 0 || write(fd, &w, sizeof(w)) != (ssize_t)sizeof(w))
		return fail("cannot reach the server");
	ret = open_single(&e, o) || exchange_qps(fd, &e, mine, o);
	if (ret == 0)
		perf_print_header(o);
	for (uint32_t size = next_size(o, 0); ret == 0 && size != 0; size = next_size(o, size)) {
		struct perf_result r = { .size = size }, before;
		struct peer_side peer = { 0 };
		struct ctl c = { .size = size };

		ret = reconnect(&e, mine, o) || ctl_send(fd, &c) || ctl_recv(fd, &c, 1);
		if (ret != 0 || !c.ok)
			break;
		stage_snapshot(&before);
		if (o->mode == MODE_LAT && o->op == OP_SEND)
			ret = post_receives(&e);
		if (ret == 0)
			ret = o->mode == MODE_BW ? run_bw(&e, &peer, o, size, &r) : run_lat(&e, NULL, o, size, &r);
		memcpy(c.count, e.posted, sizeof(e.posted[0]) * o->nb_qp);
		c.ok = ret == 0;
		if (ctl_send(fd, &c) != 0 || ctl_recv(fd, &c, 1) != 0 || !c.ok)
			ret = ret != 0 ? ret : fail("the server found the data wrong");
		if (ret == 0) {
			r.verified = o->verify;
			stage_since(&r, &before);
			perf_print_result(o, &r);
		}
	}
	if (fd >= 0)
		close(fd);
	end_close(&e);
	return ret;
}

/* Without -m, perftest's default: the MTU of the (first) device's port. */
static int
default_mtu(struct perf_opts *o)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_context *ctx = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	struct rnic_port_attr port;
	int ret = -1;

	if (ctx != NULL && rnic_query_port(ctx, 1, &port) == 0) {
		o->mtu = port.active_mtu;
		ret = 0;
	}
	if (ctx != NULL)
		rnic_close_device(ctx);
	rnic_free_device_list(list);
	return ret == 0 ? 0 : fail("no device");
}

int
main(int argc, char **argv)
{
	static char *eargv[MAX_ARGS];
	struct perf_opts o;
	int eargc, ret;

	if (parse_args(argc, argv, &o, &eargc, eargv) != 0)
		return 2;
	srand((unsigned int)getpid());
	if (rnic_engine_init(eargc, eargv) < 0 || rnic_engine_start() != 0) {
		fprintf(stderr, "rnic-perf: the engine did not start (rnic_engine_usage lists its arguments)\n");
		return 2;
	}
	if (!o.mtu_given && default_mtu(&o) != 0)
		ret = -1;
	else
		ret = o.server_port != NULL ? run_server(&o) : o.client != NULL ? run_client(&o) : run_loopback(&o);
	/* The last ACKs on their way before the ports go (this lcore's stages may carry them). */
	for (double t0 = now_s(); now_s() - t0 < 0.1;)
		if (rnic_engine_progress() == 0)
			usleep(1000);
	rnic_engine_stop();
	rnic_engine_fini();
	return ret == 0 ? 0 : 1;
}
