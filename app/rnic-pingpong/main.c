/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-pingpong: RC traffic between two softrnic processes (two hosts, two namespaces, or two processes
 * joined by net_memif), with every byte verified. The peers exchange QPN, PSN, GID, rkey and buffer
 * address over TCP first, as perftest does.
 *
 *   rnic-pingpong [EAL args] -- [engine args] --server PORT        (listens for the exchange)
 *   rnic-pingpong [EAL args] -- [engine args] --client HOST:PORT
 * Options after the engine arguments: --size BYTES (default 65536), --iters N (1-128, default 10),
 * --mtu BYTES.
 *
 * The client WRITEs a pattern into the server's buffer and SENDs a note; the server checks the pattern,
 * fills its buffer with its own pattern and answers with a SEND; the client READs that back and checks it.
 * Exit status 0 when every iteration verified, 1 otherwise (with the reason on stderr).
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
#include "rnic_version.h"

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
	const char *client;
	uint32_t size;
	uint32_t iters;
	enum rnic_mtu mtu;
};

static int
fail(const char *what)
{
	fprintf(stderr, "rnic-pingpong: %s\n", what);
	return 1;
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' }, { "client", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 'z' }, { "iters", required_argument, NULL, 'n' },
		{ "mtu", required_argument, NULL, 'm' }, { NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct opts){ .size = 65536, .iters = 10, .mtu = RNIC_MTU_1024 };
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': o->server_port = optarg; break;
		case 'c': o->client = optarg; break;
		case 'z': o->size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': o->iters = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm':
			for (int m = RNIC_MTU_256; m <= RNIC_MTU_4096; m++)
				if (strtoul(optarg, NULL, 0) == 128ul << m)
					o->mtu = (enum rnic_mtu)m;
			break;
		default: return -1;
		}
	}
	if ((o->server_port == NULL) == (o->client == NULL) || o->size == 0 || o->size > (64u << 20) || o->iters == 0 ||
	    o->iters > 128)
		return -1;
	return 0;
}

/* The out-of-band exchange: the connection stays open (returned) for the goodbye at the end. */
static int
exchange(const struct opts *o, const struct peer_info *mine, struct peer_info *theirs)
{
	int fd = oob_connect(o->client, o->server_port);

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

int
main(int argc, char **argv)
{
	struct rnic_device **list;
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct peer_info mine = { 0 };
	struct conn c = { 0 };
	struct opts o;
	union rnic_gid gid;
	int consumed, ret, oob;
	char bye = 0;

	/* Engine arguments we do not know stay for us: split them off first. */
	int app_argc = 1;
	char *app_argv[64] = { argv[0] };

	if (rnic_version_asked(argc, argv)) {
		rnic_print_version("rnic-pingpong");
		return 0;
	}

	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "--server") == 0 || strcmp(argv[i], "--client") == 0 ||
		     strcmp(argv[i], "--size") == 0 || strcmp(argv[i], "--iters") == 0 ||
		     strcmp(argv[i], "--mtu") == 0) && i + 1 < argc && app_argc < 62) {
			app_argv[app_argc++] = argv[i];
			app_argv[app_argc++] = argv[i + 1];
			memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 2) * sizeof(argv[0]));
			argc -= 2;
			i--;
		}
	}
	if (parse_opts(app_argc, app_argv, &o) != 0)
		return fail("usage: rnic-pingpong [EAL args] -- [engine args] --server PORT | --client HOST:PORT "
			    "[--size N] [--iters N] [--mtu BYTES]");
	consumed = rnic_engine_init(argc, argv);
	if (consumed < 0)
		return fail("engine initialisation failed");
	if (rnic_engine_start() != 0)
		return fail("engine start failed");
	list = rnic_get_device_list(NULL);
	ctx = list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	rnic_free_device_list(list);
	if (ctx == NULL)
		return fail(errno == EDQUOT ? "cannot open the device: over rnicd's quota for this client" :
			    "cannot open the device");
	/* Frames sent before the link is up are lost (memif connects, a veth comes up): wait for it. */
	struct rnic_port_attr port;

	for (int i = 0; i < TIMEOUT_S * 100 && (rnic_query_port(ctx, 1, &port) != 0 || port.state != RNIC_PORT_ACTIVE); i++)
		usleep(10000);
	if (port.state != RNIC_PORT_ACTIVE)
		return fail("the port's link did not come up");
	pd = rnic_alloc_pd(ctx);
	c.size = o.size;
	c.buf = calloc(1, o.size + 64);
	c.cq = rnic_create_cq(ctx, 64, NULL, NULL, 0);
	c.rcq = rnic_create_cq(ctx, 128, NULL, NULL, 0);
	c.mr = rnic_reg_mr(pd, c.buf, o.size + 64, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			   RNIC_ACCESS_REMOTE_READ);
	c.qp = rnic_create_qp(pd, &(struct rnic_qp_init_attr){ .send_cq = c.cq, .recv_cq = c.rcq,
		.qp_type = RNIC_QPT_RC, .cap = { .max_send_wr = 16, .max_recv_wr = 128, .max_send_sge = 1,
						 .max_recv_sge = 1 } });
	if (pd == NULL || c.buf == NULL || c.cq == NULL || c.rcq == NULL || c.mr == NULL || c.qp == NULL)
		return fail("cannot create the verbs objects");
	rnic_query_gid(ctx, 1, 0, &gid);
	mine.qpn = c.qp->qp_num;
	mine.psn = random_psn();
	mine.rkey = c.mr->rkey;
	mine.addr = (uintptr_t)c.buf;
	memcpy(mine.gid, gid.raw, 16);
	oob = exchange(&o, &mine, &c.peer);
	if (oob < 0)
		return fail("the out-of-band exchange failed");
	if (to_rts(c.qp, &c.peer, mine.psn, o.mtu) != 0)
		return fail("cannot bring the QP to RTS");
	ret = run(&c, o.client != NULL, o.iters);
	if (ret == 0)
		printf("{\"role\": \"%s\", \"iterations\": %u, \"bytes\": %u, \"mtu\": %u, \"verified\": true}\n",
		       o.client != NULL ? "client" : "server", o.iters, o.size, 128u << o.mtu);
	/*
	 * Goodbye: the client closes its port first and then tells the server, which closes only after, so
	 * neither port disappears while the other still sends (a memif peer leaving mid-teardown is unsafe).
	 */
	if (o.client == NULL && recv(oob, &bye, 1, MSG_WAITALL) != 1)
		fprintf(stderr, "rnic-pingpong: no goodbye from the client\n");
	usleep(100000);	/* the last ACKs on their way */
	rnic_engine_stop();
	rnic_destroy_qp(c.qp);
	rnic_dereg_mr(c.mr);
	rnic_destroy_cq(c.cq);
	rnic_destroy_cq(c.rcq);
	rnic_dealloc_pd(pd);
	rnic_close_device(ctx);
	rnic_engine_fini();
	if (o.client != NULL && write(oob, &bye, 1) != 1)
		fprintf(stderr, "rnic-pingpong: goodbye not sent\n");
	close(oob);
	free(c.buf);
	return ret;
}
