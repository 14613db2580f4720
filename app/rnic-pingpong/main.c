/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-pingpong: RC traffic between two softrnic processes (two hosts, two namespaces, or two processes
 * joined by net_memif), with every byte verified. The peers exchange QPN, PSN, GID, rkey and buffer
 * address over TCP first, as perftest does.
 *
 *   rnic-pingpong --server PORT [options] [engine options] [-- EAL options [-- engine options]]
 *   rnic-pingpong --client HOST:PORT [options] [engine options] [-- EAL options [-- engine options]]
 * Options: --size BYTES (default 65536), --iters N (1-128, default 10), --mtu BYTES (default 1024); the
 * command line is rnic-perf's (app/common/rnic_tool.h: EAL options merge with the defaults).
 *
 * The client WRITEs a pattern into the server's buffer and SENDs a note; the server checks the pattern,
 * fills its buffer with its own pattern and answers with a SEND; the client READs that back and checks it.
 * Exit status 0 when every iteration verified, 1 when the run failed, 2 for bad options (with the reason on
 * stderr).
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "oob.h"
#include "psn.h"
#include "rnic.h"
#include "rnic_tool.h"

#define TIMEOUT_S 20

struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t pad;
	uint64_t addr;
	uint8_t gid[16];
};

struct opts {
	const char *server_port;
	const char *client;		/* HOST:PORT */
	uint32_t size;
	uint32_t iters;
	enum rnic_mtu mtu;
};

static const char usage[] =
	"usage: rnic-pingpong --server PORT | --client HOST:PORT [--size BYTES] [--iters N] [--mtu BYTES]\n"
	"                     [engine options] [-- EAL options [-- engine options]]\n"
	"  --size BYTES   the RDMA buffer, 1 .. 67108864 (default 65536)\n"
	"  --iters N      WRITE, SEND, READ rounds, 1 .. 128 (default 10)\n"
	"  --mtu BYTES    path MTU: 256, 512, 1024 (default), 2048 or 4096\n";

static int
fail(const char *what)
{
	fprintf(stderr, "rnic-pingpong: %s\n", what);
	return 1;
}

/* A usage error: the reason, exit status 2. */
static int
bad(const char *opt, const char *value, const char *why)
{
	if (value[0] != '\0')
		fprintf(stderr, "rnic-pingpong: %s '%s': %s (rnic-pingpong --help lists the options)\n", opt, value,
			why);
	else
		fprintf(stderr, "rnic-pingpong: %s: %s (rnic-pingpong --help lists the options)\n", opt, why);
	return 2;
}

static int
parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (s[0] == '-' || s[0] == '\0' || *end != '\0' || errno != 0 || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
set_opt(struct opts *o, int opt, const char *arg)
{
	uint32_t v;

	switch (opt) {
	case 's':
		o->server_port = arg;
		return parse_u32(arg, 1, 65535, &v) == 0 ? 0 : bad("--server", arg, "a TCP port, 1 .. 65535");
	case 'c':
		o->client = arg;
		return strrchr(arg, ':') != NULL && parse_u32(strrchr(arg, ':') + 1, 1, 65535, &v) == 0 ? 0 :
		       bad("--client", arg, "HOST:PORT");
	case 'z':
		return parse_u32(arg, 1, 64u << 20, &o->size) == 0 ? 0 : bad("--size", arg, "1 .. 67108864");
	case 'n':
		return parse_u32(arg, 1, 128, &o->iters) == 0 ? 0 : bad("--iters", arg, "1 .. 128");
	case 'm':
		for (int m = RNIC_MTU_256; m <= RNIC_MTU_4096 && parse_u32(arg, 256, 4096, &v) == 0; m++) {
			if (v == 128u << m) {
				o->mtu = (enum rnic_mtu)m;
				return 0;
			}
		}
		return bad("--mtu", arg, "256, 512, 1024, 2048 or 4096");
	default:
		return 2;
	}
}

static void
print_help(int opt)
{
	if (opt == 'h') {
		fputs(usage, stdout);
		fputs(rnic_tool_engine_opts_help, stdout);
		fputs("  EAL options after \"--\" are added to the defaults (" RNIC_TOOL_EAL_DEFAULTS ");\n"
		      "      one of the same kind replaces its default (--file-prefix replaces --no-shconf)\n"
		      "  rnic-pingpong --help-engine lists the engine's options\n", stdout);
	} else if (opt == 'E') {
		rnic_engine_usage(stdout);
	} else {
		printf("rnic-pingpong (softrnic) %s\n", RNIC_VERSION);
	}
}

/* 0, 1 (--help or --version done) or 2 (a usage error, said). */
static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' }, { "client", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 'z' }, { "iters", required_argument, NULL, 'n' },
		{ "mtu", required_argument, NULL, 'm' }, { "help", no_argument, NULL, 'h' },
		{ "help-engine", no_argument, NULL, 'E' }, { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret = 0;

	*o = (struct opts){ .size = 65536, .iters = 10, .mtu = RNIC_MTU_1024 };
	optind = 0;
	opterr = 0;
	while (ret == 0 && (opt = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
		if (opt == 'h' || opt == 'E' || opt == 'V') {
			print_help(opt);
			return 1;
		}
		if (opt == ':' || opt == '?')
			return bad(argv[optind - 1], "", opt == ':' ? "missing value" : "unknown option");
		ret = set_opt(o, opt, optarg);
	}
	if (ret == 0 && optind < argc)
		return bad(argv[optind], "", "unexpected argument");
	if (ret == 0 && (o->server_port == NULL) == (o->client == NULL))
		return bad("--server/--client", "", "give exactly one");
	return ret;
}

/* The out-of-band exchange: the connection stays open (returned) for the goodbye at the end. */
static int
exchange(const struct opts *o, const struct peer_info *mine, struct peer_info *theirs)
{
	int fd = o->client != NULL ? oob_connect_to(o->client) : oob_connect(NULL, o->server_port);

	if (fd >= 0 && oob_exchange(fd, mine, theirs, sizeof(*mine)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int
wait_one(struct rnic_cq *cq, struct rnic_wc *wc)
{
	time_t deadline = time(NULL) + TIMEOUT_S;

	while (time(NULL) < deadline) {
		int n = rnic_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return wc->status == RNIC_WC_SUCCESS ? 0 : -1;
		usleep(10);
	}
	return -1;
}

static void
pattern(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 13 + (i >> 10));
}

static int
to_rts(struct rnic_qp *qp, const struct peer_info *peer, uint32_t my_psn, enum rnic_mtu mtu)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
				  .qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ };

	if (rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	if (rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
			   RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.max_rd_atomic = 4;
	return rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
			      RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC) ? -1 : 0;
}

struct conn {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_qp *qp;
	struct rnic_cq *cq;		/* send completions */
	struct rnic_cq *rcq;		/* receive completions */
	struct rnic_mr *mr;
	uint8_t *buf;		/* [0, size): the RDMA area; [size, size + 64): SEND/RECV notes */
	uint32_t size;
	struct peer_info peer;
};

static int
post(struct conn *c, enum rnic_wr_opcode op, uint32_t len, uint64_t local_off, uint64_t raddr)
{
	struct rnic_sge sge = { (uintptr_t)c->buf + local_off, len, c->mr->lkey };
	struct rnic_send_wr wr = { .opcode = op, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;
	struct rnic_wc wc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = c->peer.rkey;
	return rnic_post_send(c->qp, &wr, &bad) != 0 || wait_one(c->cq, &wc) != 0 ? -1 : 0;
}

static int
post_note_recv(struct conn *c)
{
	struct rnic_sge sge = { (uintptr_t)c->buf + c->size, 64, c->mr->lkey };
	struct rnic_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(c->qp, &wr, &bad);
}

static int
run(struct conn *c, int client, uint32_t iters)
{
	struct rnic_wc wc;

	/* Every note's receive is posted before the first note can arrive. */
	for (uint32_t it = 0; it < iters; it++)
		if (post_note_recv(c) != 0)
			return fail("post_recv failed");
	for (uint32_t it = 0; it < iters; it++) {
		if (client) {
			pattern(c->buf, c->size, it);
			if (post(c, RNIC_WR_RDMA_WRITE, c->size, 0, c->peer.addr) != 0 ||
			    post(c, RNIC_WR_SEND, 8, c->size + 32, 0) != 0)
				return fail("WRITE or SEND failed");
			if (wait_one(c->rcq, &wc) != 0)	/* the server's answer */
				return fail("no answer from the server");
			memset(c->buf, 0, c->size);
			if (post(c, RNIC_WR_RDMA_READ, c->size, 0, c->peer.addr) != 0)
				return fail("READ failed");
			uint8_t *expect = malloc(c->size);

			pattern(expect, c->size, it + 1000);
			int same = memcmp(expect, c->buf, c->size) == 0;

			free(expect);
			if (!same)
				return fail("READ data differs from the server's pattern");
		} else {
			uint8_t *expect = malloc(c->size);

			if (wait_one(c->rcq, &wc) != 0) {
				free(expect);
				return fail("no note from the client");
			}
			pattern(expect, c->size, it);
			int same = memcmp(expect, c->buf, c->size) == 0;

			free(expect);
			if (!same)
				return fail("WRITE data differs from the client's pattern");
			pattern(c->buf, c->size, it + 1000);
			if (post(c, RNIC_WR_SEND, 8, c->size + 32, 0) != 0)
				return fail("SEND failed");
		}
	}
	return 0;
}

/* The device, its link up, and the verbs objects of the test. */
static int
open_verbs(struct conn *c, const struct opts *o)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_port_attr port = { 0 };

	c->ctx = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	rnic_free_device_list(list);
	if (c->ctx == NULL)
		return fail(errno == EDQUOT ? "cannot open the device: over rnicd's quota for this client" :
			    "no device (the engine's --port names it)");
	/* Frames sent before the link is up are lost (memif connects, a veth comes up): wait for it. */
	for (int i = 0; i < TIMEOUT_S * 100 && (rnic_query_port(c->ctx, 1, &port) != 0 ||
						port.state != RNIC_PORT_ACTIVE); i++)
		usleep(10000);
	if (port.state != RNIC_PORT_ACTIVE)
		return fail("the port's link did not come up");
	c->pd = rnic_alloc_pd(c->ctx);
	c->size = o->size;
	c->buf = calloc(1, o->size + 64);
	c->cq = rnic_create_cq(c->ctx, 64, NULL, NULL, 0);
	c->rcq = rnic_create_cq(c->ctx, 128, NULL, NULL, 0);
	if (c->pd == NULL || c->buf == NULL || c->cq == NULL || c->rcq == NULL)
		return fail("cannot create the PD, the CQs or the buffer");
	c->mr = rnic_reg_mr(c->pd, c->buf, o->size + 64, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			    RNIC_ACCESS_REMOTE_READ);
	c->qp = rnic_create_qp(c->pd, &(struct rnic_qp_init_attr){ .send_cq = c->cq, .recv_cq = c->rcq,
		.qp_type = RNIC_QPT_RC, .cap = { .max_send_wr = 16, .max_recv_wr = 128, .max_send_sge = 1,
						 .max_recv_sge = 1 } });
	return c->mr == NULL || c->qp == NULL ? fail("cannot register the buffer or create the QP") : 0;
}

static void
close_verbs(struct conn *c)
{
	if (c->qp != NULL)
		rnic_destroy_qp(c->qp);
	if (c->mr != NULL)
		rnic_dereg_mr(c->mr);
	if (c->cq != NULL)
		rnic_destroy_cq(c->cq);
	if (c->rcq != NULL)
		rnic_destroy_cq(c->rcq);
	if (c->pd != NULL)
		rnic_dealloc_pd(c->pd);
	if (c->ctx != NULL)
		rnic_close_device(c->ctx);
}

/* The exchange with the peer and the QP to RTS. The exchange's socket, or -1. */
static int
connect_peer(struct conn *c, const struct opts *o)
{
	struct peer_info mine = { 0 };
	union rnic_gid gid;
	int oob;

	rnic_query_gid(c->ctx, 1, 0, &gid);
	mine.qpn = c->qp->qp_num;
	mine.psn = random_psn();
	mine.rkey = c->mr->rkey;
	mine.addr = (uintptr_t)c->buf;
	memcpy(mine.gid, gid.raw, 16);
	oob = exchange(o, &mine, &c->peer);
	if (oob < 0) {
		fail("the out-of-band exchange failed (no peer on the TCP port?)");
		return -1;
	}
	if (to_rts(c->qp, &c->peer, mine.psn, o->mtu) != 0) {
		fail("cannot bring the QP to RTS");
		close(oob);
		return -1;
	}
	return oob;
}

/* The test, its result line, the goodbye. 0, or 1 with the reason said. */
static int
pingpong(struct conn *c, const struct opts *o)
{
	int oob = open_verbs(c, o) == 0 ? connect_peer(c, o) : -1, ret = oob < 0;

	if (ret == 0)
		ret = run(c, o->client != NULL, o->iters);
	if (ret == 0)
		printf("{\"role\": \"%s\", \"iterations\": %u, \"bytes\": %u, \"mtu\": %u, \"verified\": true}\n",
		       o->client != NULL ? "client" : "server", o->iters, o->size, 128u << o->mtu);
	usleep(100000);	/* the last ACKs on their way */
	/* Neither port may go while the other side's lcores poll it (oob_goodbye). */
	if (oob_goodbye(oob, o->client == NULL, OOB_BEFORE_STOP) != 0)
		fprintf(stderr, "rnic-pingpong: the server did not stop\n");
	rnic_engine_stop();
	if (oob_goodbye(oob, o->client == NULL, OOB_STOPPED) != 0)
		fprintf(stderr, "rnic-pingpong: no goodbye from the client\n");
	close_verbs(c);
	rnic_engine_fini();
	oob_goodbye(oob, o->client == NULL, OOB_DOWN);
	if (oob >= 0)
		close(oob);
	free(c->buf);
	return ret;
}

int
main(int argc, char **argv)
{
	static struct rnic_tool_cmdline cl;
	struct conn c = { 0 };
	struct opts o;
	int ret;

	if (rnic_tool_split("rnic-pingpong", argc, argv, &cl) != 0)
		return 2;
	ret = parse_opts(cl.app_argc, cl.app_argv, &o);
	if (ret != 0)
		return ret == 1 ? 0 : 2;
	ret = rnic_engine_init(cl.init_argc, cl.init_argv);
	if (ret < 0) {
		fprintf(stderr, "rnic-pingpong: the engine did not start: %s (its options: rnic-pingpong "
			"--help-engine; EAL's: rnic-pingpong -- --help)\n", strerror(-ret));
		return ret == -EINVAL ? 2 : 1;
	}
	if (rnic_engine_start() != 0) {
		rnic_engine_fini();
		return fail("the engine's lcores did not start");
	}
	return pingpong(&c, &o);
}
