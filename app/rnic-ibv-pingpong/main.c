/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-ibv-pingpong: the peer of rdma-core's stock ibv_rc_pingpong, ibv_uc_pingpong and ibv_ud_pingpong
 * (libibverbs/examples) on softrnic, as server or client. It speaks their TCP exchange (one 52-byte message
 * "LLLL:QQQQQQ:PPPPPP:GID" each way, the GID as 32 hex digits, then "done" from the client), sets its QP up
 * as they do theirs (RC: max_dest_rd_atomic 1, min_rnr_timer 12, timeout 14, retry 7, RNR retry 7; UD:
 * Q_Key 0x11111111 and an address handle; hop limit 1 and the GID index given, -g) and plays their game: one
 * SEND of SIZE bytes at a time each way, the client first, ITERS each.
 *
 * It checks every message, which the stock tools do not: they send from the buffer they receive into, so
 * every message a stock tool sends after its first is an echo of the one it received. The first message of
 * a stock client is its untouched buffer (0x7b bytes; the first byte of every 4 KB page 0 with its -c).
 * Every message this end sends has a pattern of its own, with the first byte of every page 0, so a stock
 * server run with -c finds what it checks. UD receives also carry the GRH (40 bytes): the sender's address
 * in it and the completion's source QP are checked too.
 *
 *   rnic-ibv-pingpong [-t rc|uc|ud] [-p PORT] [-s SIZE] [-m MTU] [-n ITERS] [-g GID_INDEX] [-l SL]
 *                     [-T SECONDS] [-E] [HOST] -- EAL args [-- engine args]
 * Defaults: rc, 18515, 4096 (ud: 2048), 1024, 1000, 0, 0, 30 (the longest wait for one completion).
 * -E plays the stock tool's part instead (sends what it received, checks nothing): two of these, one with
 * -E, are the unit suite's test of the tool without a stock peer.
 * Exit 0 when every message was as expected (one JSON line says so, and whether the ACK of this end's last
 * RC message was lost: final_ack_lost()), 1 otherwise with the reason on stderr, 2 for bad options.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "oob.h"
#include "rnic.h"
#include "rnic_version.h"

#define PAGE 4096		/* the page the stock tools' -c checks the first byte of */
#define GRH_BYTES 40
#define STOCK_FILL 0x7b		/* what a stock tool's buffer holds before it receives anything */
#define UD_QKEY 0x11111111
#define RECV_SLOTS 16
#define WRID_SEND 1
#define WRID_RECV 2
#define EXCHANGE_MSG_LEN sizeof("0000:000000:000000:00000000000000000000000000000000")

struct opts {
	enum rnic_qp_type type;
	const char *port;
	const char *host;	/* the stock server's address (client); NULL: wait for a stock client */
	uint32_t size;
	enum rnic_mtu mtu;
	uint32_t iters;
	int gid_index;
	uint8_t sl;
	int timeout_s;
	int echo;		/* -E: play a stock tool's part (the peer of this tool in the unit suite) */
};

/* What the exchange carries (rc_pingpong.c's struct pingpong_dest). */
struct pp_dest {
	uint32_t lid;
	uint32_t qpn;
	uint32_t psn;
	union rnic_gid gid;
};

struct pp_ctx {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;		/* sends and receives, as the stock tools have it */
	struct rnic_mr *mr;
	struct rnic_qp *qp;
	struct rnic_ah *ah;		/* UD */
	uint8_t *buf;			/* the message to send, then RECV_SLOTS receive slots */
	uint32_t slot_len;		/* size, + the GRH for UD */
	struct pp_dest peer;
	const struct opts *o;
	uint32_t pending;		/* WRID_SEND | WRID_RECV still to complete before the next send */
	uint32_t sent, received;
	bool final_ack_lost;		/* see final_ack_lost() */
};

static int
fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
fail(const char *fmt, ...)
{
	va_list ap;

	fputs("rnic-ibv-pingpong: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* Byte i of this end's message n (n >= 1). */
static uint8_t
pattern_byte(uint32_t n, uint32_t i)
{
	return i % PAGE == 0 ? 0 : (uint8_t)(n * 37 + i * 11 + (i >> 9));
}


/* A stock client's first message: STOCK_FILL bytes, the first byte of every page either 0 (its -c) or
 * STOCK_FILL throughout. The first byte that is not, or -1. */
static long
differs_from_stock_buffer(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (i % PAGE == 0 ? p[i] != p[0] || (p[0] != 0 && p[0] != STOCK_FILL) : p[i] != STOCK_FILL)
			return (long)i;
	return -1;
}

static long
differs_from_message(const uint8_t *p, uint32_t len, uint32_t n)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(n, i))
			return (long)i;
	return -1;
}

static uint8_t *
slot(struct pp_ctx *c, uint32_t n)
{
	return c->buf + c->o->size + (size_t)(n % RECV_SLOTS) * c->slot_len;
}

/* This end's message n into the send buffer: its pattern; with -E what a stock tool sends, its untouched
 * buffer first (as with -c) and then the last message it received. */
static void
fill_message(struct pp_ctx *c, uint32_t n)
{
	uint32_t len = c->o->size;

	if (!c->o->echo) {
		for (uint32_t i = 0; i < len; i++)
			c->buf[i] = pattern_byte(n, i);
	} else if (c->received == 0) {
		memset(c->buf, STOCK_FILL, len);
		for (uint32_t i = 0; i < len; i += PAGE)
			c->buf[i] = 0;
	} else {
		memcpy(c->buf, slot(c, c->received) + (c->o->type == RNIC_QPT_UD ? GRH_BYTES : 0), len);
	}
}

/* The GRH of a UD receive (IBA 11.4.1.1): an IPv6 header, or for an IPv4 peer its IPv4 header in the last
 * 20 bytes (Linux RoCE's layout). Whether the source address in it is the peer's GID. */
static int
grh_from_peer(const uint8_t *grh, const union rnic_gid *peer)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(peer->raw, v4_prefix, sizeof(v4_prefix)) == 0)
		return memcmp(grh + 20 + 12, peer->raw + 12, 4) == 0;
	return memcmp(grh + 8, peer->raw, 16) == 0;
}

/* Check received message n (1-based): the stock client's untouched buffer, or the echo of this end's
 * message (the client's n, the server's n - 1). */
static int
check_received(struct pp_ctx *c, const struct rnic_wc *wc, uint32_t n)
{
	const uint8_t *p = slot(c, n);
	int ud = c->o->type == RNIC_QPT_UD;
	long bad;

	if (wc->opcode != RNIC_WC_RECV || wc->byte_len != c->slot_len)
		return fail("message %u: opcode %d, %u bytes (expected a receive of %u)", n, wc->opcode,
			    wc->byte_len, c->slot_len);
	if (ud && (wc->src_qp != c->peer.qpn || !(wc->wc_flags & RNIC_WC_GRH) || !grh_from_peer(p, &c->peer.gid)))
		return fail("message %u: source QP %#x (peer %#x), or its GRH is missing or not from the peer", n,
			    wc->src_qp, c->peer.qpn);
	p += ud ? GRH_BYTES : 0;
	if (c->o->echo)
		return 0;	/* a stand-in for a stock tool checks nothing, as they do not */
	if (c->o->host == NULL && n == 1)
		bad = differs_from_stock_buffer(p, c->o->size);
	else
		bad = differs_from_message(p, c->o->size, c->o->host != NULL ? n : n - 1);
	if (bad >= 0)
		return fail("message %u: byte %ld is %#x, not what %s", n, bad, p[bad],
			    c->o->host == NULL && n == 1 ? "a stock client sends first" :
			    "this end sent (the stock tool sends back what it received)");
	return 0;
}

static int
post_recv_slot(struct pp_ctx *c, uint32_t n)
{
	struct rnic_sge sge = { (uintptr_t)slot(c, n), c->slot_len, c->mr->lkey };
	struct rnic_recv_wr wr = { .wr_id = WRID_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(c->qp, &wr, &bad);
}

/* This end's message n, sent. */
static int
post_message(struct pp_ctx *c, uint32_t n)
{
	struct rnic_sge sge = { (uintptr_t)c->buf, c->o->size, c->mr->lkey };
	struct rnic_send_wr wr = { .wr_id = WRID_SEND, .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_SEND,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;

	if (c->o->type == RNIC_QPT_UD) {
		wr.wr.ud.ah = c->ah;
		wr.wr.ud.remote_qpn = c->peer.qpn;
		wr.wr.ud.remote_qkey = UD_QKEY;
	}
	fill_message(c, n);
	return rnic_post_send(c->qp, &wr, &bad);
}

static int
create_objects(struct pp_ctx *c)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_qp_init_attr init = { .qp_type = c->o->type,
		.cap = { .max_send_wr = 1, .max_recv_wr = RECV_SLOTS, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };
	size_t len;

	c->ctx = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	rnic_free_device_list(list);
	if (c->ctx == NULL)
		return fail("no device");
	c->slot_len = c->o->size + (c->o->type == RNIC_QPT_UD ? GRH_BYTES : 0);
	len = c->o->size + (size_t)RECV_SLOTS * c->slot_len;
	c->buf = rnic_alloc_buf(len);
	c->pd = rnic_alloc_pd(c->ctx);
	c->cq = rnic_create_cq(c->ctx, RECV_SLOTS + 1, NULL, NULL, 0);
	if (c->buf == NULL || c->pd == NULL || c->cq == NULL)
		return fail("cannot allocate the buffer, the PD or the CQ");
	c->mr = rnic_reg_mr(c->pd, c->buf, len, RNIC_ACCESS_LOCAL_WRITE);
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	c->qp = c->mr != NULL ? rnic_create_qp(c->pd, &init) : NULL;
	if (c->qp == NULL)
		return fail("cannot register the buffer or create the QP");
	if (rnic_modify_qp(c->qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
			   (c->o->type == RNIC_QPT_UD ? RNIC_QP_QKEY : RNIC_QP_ACCESS_FLAGS)) != 0)
		return fail("cannot bring the QP to INIT");
	for (uint32_t n = 1; n <= RECV_SLOTS; n++)
		if (post_recv_slot(c, n) != 0)
			return fail("cannot post the receives");
	return 0;
}

static void
destroy_objects(struct pp_ctx *c)
{
	if (c->ah != NULL)
		rnic_destroy_ah(c->ah);
	if (c->qp != NULL)
		rnic_destroy_qp(c->qp);
	if (c->mr != NULL)
		rnic_dereg_mr(c->mr);
	if (c->cq != NULL)
		rnic_destroy_cq(c->cq);
	if (c->pd != NULL)
		rnic_dealloc_pd(c->pd);
	if (c->ctx != NULL)
		rnic_close_device(c->ctx);
	rnic_free_buf(c->buf);
}

/* The path to the peer as the stock tools set it: global (RoCE) when the peer sent a GID, hop limit 1. */
static void
peer_av(const struct pp_ctx *c, struct rnic_ah_attr *av)
{
	*av = (struct rnic_ah_attr){ .dlid = (uint16_t)c->peer.lid, .sl = c->o->sl, .port_num = 1 };
	if (c->peer.gid.global.interface_id != 0) {
		av->is_global = 1;
		av->grh.hop_limit = 1;
		av->grh.dgid = c->peer.gid;
		av->grh.sgid_index = (uint8_t)c->o->gid_index;
	}
}

/* RTR and RTS with the peer's QPN and PSN (rc_pingpong.c's pp_connect_ctx; UC and UD as theirs). */
static int
connect_qp(struct pp_ctx *c, uint32_t my_psn)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RTR };
	int rtr = RNIC_QP_STATE, rts = RNIC_QP_STATE | RNIC_QP_SQ_PSN;

	if (c->o->type == RNIC_QPT_UD) {
		struct rnic_ah_attr av;

		peer_av(c, &av);
		c->ah = rnic_create_ah(c->pd, &av);
		if (c->ah == NULL)
			return fail("cannot create the address handle (%s)", strerror(errno));
	} else {
		a.path_mtu = c->o->mtu;
		a.dest_qp_num = c->peer.qpn;
		a.rq_psn = c->peer.psn;
		peer_av(c, &a.ah_attr);
		rtr |= RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN;
	}
	if (c->o->type == RNIC_QPT_RC) {
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		rtr |= RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER;
	}
	if (rnic_modify_qp(c->qp, &a, rtr) != 0)
		return fail("Failed to modify QP to RTR");
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = my_psn;
	if (c->o->type == RNIC_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		rts |= RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC;
	}
	return rnic_modify_qp(c->qp, &a, rts) != 0 ? fail("Failed to modify QP to RTS") : 0;
}

/* "LLLL:QQQQQQ:PPPPPP:" and the GID's 16 bytes as 32 hex digits (pingpong.c's gid_to_wire_gid: four
 * big-endian 32-bit words, that is the bytes in order), NUL-terminated: EXCHANGE_MSG_LEN bytes. */
static void
format_dest(const struct pp_dest *d, char msg[EXCHANGE_MSG_LEN])
{
	int n = snprintf(msg, EXCHANGE_MSG_LEN, "%04x:%06x:%06x:", d->lid, d->qpn, d->psn);

	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, EXCHANGE_MSG_LEN - (size_t)n, "%02x", d->gid.raw[i]);
}

static int
parse_dest(const char msg[EXCHANGE_MSG_LEN], struct pp_dest *d)
{
	char gid[33];

	if (memchr(msg, '\0', EXCHANGE_MSG_LEN) == NULL ||
	    sscanf(msg, "%x:%x:%x:%32s", &d->lid, &d->qpn, &d->psn, gid) != 4 || strlen(gid) != 32)
		return fail("the peer's exchange message is not LLLL:QQQQQQ:PPPPPP:GID");
	for (int i = 0; i < 16; i++) {
		unsigned int byte;

		if (sscanf(gid + 2 * i, "%2x", &byte) != 1)
			return fail("the peer's GID is not 32 hex digits");
		d->gid.raw[i] = (uint8_t)byte;
	}
	return 0;
}

/* The stock tools' exchange over TCP; the server connects its QP before it answers (the client may send
 * as soon as it has the answer), the client after. */
static int
exchange(struct pp_ctx *c, const struct pp_dest *mine)
{
	char msg[EXCHANGE_MSG_LEN], done[sizeof("done")];
	int fd, ret = -1;

	fd = oob_connect(c->o->host, c->o->port);
	if (fd < 0)
		return fail("no TCP connection with the stock tool on port %s", c->o->port);
	if (c->o->host != NULL) {
		format_dest(mine, msg);
		if (write(fd, msg, sizeof(msg)) == (ssize_t)sizeof(msg) &&
		    recv(fd, msg, sizeof(msg), MSG_WAITALL) == (ssize_t)sizeof(msg) && parse_dest(msg, &c->peer) == 0 &&
		    write(fd, "done", sizeof("done")) == (ssize_t)sizeof("done"))
			ret = connect_qp(c, mine->psn);
	} else if (recv(fd, msg, sizeof(msg), MSG_WAITALL) == (ssize_t)sizeof(msg) && parse_dest(msg, &c->peer) == 0 &&
		   connect_qp(c, mine->psn) == 0) {
		format_dest(mine, msg);
		if (write(fd, msg, sizeof(msg)) == (ssize_t)sizeof(msg) &&
		    recv(fd, done, sizeof(done), MSG_WAITALL) == (ssize_t)sizeof(done))
			ret = 0;
	}
	close(fd);
	return ret != 0 ? fail("the exchange with the stock tool failed") : 0;
}

/* Whether an RC send's failure is the loss of the ACK of the game's last message, which nothing can repair:
 * the stock tool exits on its last completion, and its QP with it, so the retries of a message whose ACK was
 * lost go unanswered (RNIC_WC_RETRY_EXC_ERR). It is this end's last send, after the peer's last message came:
 * as client, the peer's last message answers ours, so ours arrived; as server, ours is the game's last, and
 * the stock tool's "ITERS iters" (which the interop suite checks) says it arrived. */
static bool
final_ack_lost(const struct pp_ctx *c, const struct rnic_wc *wc)
{
	return wc->status == RNIC_WC_RETRY_EXC_ERR && wc->wr_id == WRID_SEND && c->sent + 1 == c->o->iters &&
	       c->received == c->o->iters;
}

/* One completion (rc_pingpong.c's parse_single_wc): a receive is checked and its slot posted again; once
 * this end's last send and the peer's answer both completed, the next message goes. */
static int
handle_wc(struct pp_ctx *c, const struct rnic_wc *wc)
{
	if (final_ack_lost(c, wc)) {
		c->sent++;
		c->final_ack_lost = true;
		return 0;
	}
	/* That error put the QP in the error state, which flushes the receives still posted (IBA 10.3.1). */
	if (c->final_ack_lost && wc->status == RNIC_WC_WR_FLUSH_ERR)
		return 0;
	if (wc->status != RNIC_WC_SUCCESS)
		return fail("completion of %s %u: %s", wc->wr_id == WRID_SEND ? "send" : "receive",
			    wc->wr_id == WRID_SEND ? c->sent + 1 : c->received + 1, rnic_wc_status_str(wc->status));
	if (wc->wr_id == WRID_SEND) {
		c->sent++;
	} else {
		if (check_received(c, wc, c->received + 1) != 0 || post_recv_slot(c, c->received + 1) != 0)
			return -1;
		c->received++;
	}
	c->pending &= ~(uint32_t)wc->wr_id;
	if (c->sent < c->o->iters && c->pending == 0) {
		if (post_message(c, c->sent + 1) != 0)
			return fail("cannot post send %u", c->sent + 1);
		c->pending = WRID_SEND | WRID_RECV;
	}
	return 0;
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int
pingpong(struct pp_ctx *c)
{
	double deadline = now_s() + c->o->timeout_s;

	c->pending = WRID_RECV;
	if (c->o->host != NULL) {
		if (post_message(c, 1) != 0)
			return fail("cannot post the first send");
		c->pending |= WRID_SEND;
	}
	while (c->received < c->o->iters || c->sent < c->o->iters) {
		struct rnic_wc wc[2];
		int n = rnic_poll_cq(c->cq, 2, wc);

		if (n < 0)
			return fail("poll CQ failed");
		for (int i = 0; i < n; i++)
			if (handle_wc(c, &wc[i]) != 0)
				return -1;
		if (n > 0) {
			deadline = now_s() + c->o->timeout_s;
		} else if (now_s() > deadline) {
			return fail("nothing completed in %d s (sent %u, received %u of %u)", c->o->timeout_s, c->sent,
				    c->received, c->o->iters);
		} else {
			usleep(10);
		}
	}
	return 0;
}

static int
usage(const char *why)
{
	fprintf(stderr, "rnic-ibv-pingpong: %s\nusage: rnic-ibv-pingpong [-t rc|uc|ud] [-p PORT] [-s SIZE] [-m MTU] "
		"[-n ITERS] [-g GID_INDEX] [-l SL] [-T SECONDS] [-E] [HOST] -- EAL args [-- engine args]\n", why);
	return 2;
}

/* Our options and HOST, up to the first "--" (EAL's and the engine's follow: *eal_at its index). */
static int
parse_opts(int argc, char **argv, struct opts *o, int *eal_at)
{
	int opt, n = 1, size_given = 0;

	*o = (struct opts){ .type = RNIC_QPT_RC, .port = "18515", .size = 4096, .mtu = RNIC_MTU_1024, .iters = 1000,
			    .timeout_s = 30 };
	while (n < argc && strcmp(argv[n], "--") != 0)
		n++;
	*eal_at = n;
	optind = 1;
	while ((opt = getopt(n, argv, "t:p:s:m:n:g:l:T:E")) != -1) {
		switch (opt) {
		case 't':
			o->type = strcmp(optarg, "rc") == 0 ? RNIC_QPT_RC : strcmp(optarg, "uc") == 0 ? RNIC_QPT_UC :
				  strcmp(optarg, "ud") == 0 ? RNIC_QPT_UD : 0;
			break;
		case 'p': o->port = optarg; break;
		case 's': o->size = (uint32_t)strtoul(optarg, NULL, 0); size_given = 1; break;
		case 'm':
			o->mtu = 0;
			for (int m = RNIC_MTU_256; m <= RNIC_MTU_4096; m++)
				if (strtol(optarg, NULL, 0) == 128l << m)
					o->mtu = (enum rnic_mtu)m;
			break;
		case 'n': o->iters = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'g': o->gid_index = atoi(optarg); break;
		case 'l': o->sl = (uint8_t)atoi(optarg); break;
		case 'T': o->timeout_s = atoi(optarg); break;
		case 'E': o->echo = 1; break;
		default: return usage("unknown option");
		}
	}
	if (optind < n)
		o->host = argv[optind++];
	if (!size_given && o->type == RNIC_QPT_UD)
		o->size = 2048;
	if (optind < n || o->type == 0 || o->mtu == 0 || o->size == 0 || o->size > (16u << 20) || o->iters == 0 ||
	    o->timeout_s <= 0 || o->gid_index < 0 || o->gid_index > 255)
		return usage("bad option value");
	return 0;
}

int
main(int argc, char **argv)
{
	struct pp_ctx c = { 0 };
	struct pp_dest mine = { 0 };
	struct opts o;
	int eal_at, ret;

	if (rnic_version_asked(argc, argv)) {
		rnic_print_version("rnic-ibv-pingpong");
		return 0;
	}
	ret = parse_opts(argc, argv, &o, &eal_at);
	if (ret != 0)
		return ret;
	if (eal_at == argc)
		return usage("no EAL arguments after \"--\"");
	c.o = &o;
	argv[eal_at] = argv[0];	/* EAL wants the program's name first */
	if (rnic_engine_init(argc - eal_at, argv + eal_at) < 0 || rnic_engine_start() != 0) {
		fail("the engine does not start (EAL or engine arguments)");
		return 1;
	}
	ret = create_objects(&c);
	if (ret == 0) {
		struct rnic_port_attr port = { .state = RNIC_PORT_DOWN };

		/* Frames sent before the link is up are lost: wait for it. */
		for (int i = 0; i < o.timeout_s * 100 && port.state != RNIC_PORT_ACTIVE; i++)
			if (rnic_query_port(c.ctx, 1, &port) != 0 || port.state != RNIC_PORT_ACTIVE)
				usleep(10000);
		mine.qpn = c.qp->qp_num;
		mine.psn = (uint32_t)getpid() * 2654435761u & 0xffffff;
		ret = port.state != RNIC_PORT_ACTIVE ? fail("the port's link did not come up") :
		      rnic_query_gid(c.ctx, 1, o.gid_index, &mine.gid) != 0 ? fail("no GID %d", o.gid_index) :
		      exchange(&c, &mine);
	}
	if (ret == 0)
		ret = pingpong(&c);
	if (ret == 0)
		printf("{\"role\": \"%s\", \"transport\": \"%s\", \"iterations\": %u, \"bytes\": %u, "
		       "\"final_ack_lost\": %s, \"verified\": true}\n",
		       o.host != NULL ? "client" : "server", o.type == RNIC_QPT_RC ? "rc" : o.type == RNIC_QPT_UC ? "uc" : "ud",
		       o.iters, o.size, c.final_ack_lost ? "true" : "false");
	/* The QP stays half a second after the game: the peer's retries of a message whose ACK was lost (RC
	 * timeout 14: every 67 ms) get their ACK before the QP goes. */
	for (double end = now_s() + 0.5; now_s() < end;) {
		rnic_engine_progress();
		usleep(100);
	}
	rnic_engine_stop();
	destroy_objects(&c);
	rnic_engine_fini();
	return ret == 0 ? 0 : 1;
}
