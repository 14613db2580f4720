/* SPDX-License-Identifier: BSD-3-Clause
 * verbs-check: RC RDMA WRITE, WRITE with immediate, SEND with immediate, READ, FETCH_ADD and both outcomes
 * of CMP_SWAP between two peers, each in turn the one that acts, with every byte, immediate, byte count,
 * returned atomic value and final atomic target checked on the end that can see it. One source, two builds:
 * against libibverbs for the interop suite's guest (Linux Soft-RoCE: tests/interop/guest/build.sh), and
 * against softrnic with VERBS_ON_RNIC (verbs_rnic.h maps the names; meson builds it as rnic-verbs-check),
 * so both ends run the same checks (doc/interop.md).
 *
 *   verbs-check [options] [HOST]                                  libibverbs
 *   rnic-verbs-check [options] [HOST] -- EAL args [-- engine args]  softrnic
 * Without HOST it waits for its peer on the TCP port (the server); with HOST it connects (the client).
 * Options: -p PORT (18516), -d DEVICE (libibverbs: the device's name; default the first), -g GID_INDEX (0),
 * -m MTU (256 .. 4096; 1024), -s SIZE (a multiple of 64 up to 16 MB; 65536), -n ROUNDS (1 .. 1000; 4),
 * -T SECONDS (how long one completion or one message of the peer may take; 30).
 *
 * The peers exchange QPN, PSN, GID, rkey, address and size over TCP (the same struct both ways, in network
 * byte order), bring an RC QP each to RTS, and then, for every round, the client acts and the server is
 * acted upon, then the other way round. The TCP connection also carries the turns: the passive end says
 * READY once its memory is laid out, the active end DONE once its operations completed, and the passive
 * end answers with the number of its checks that failed. Exit 0 when every check on this end and every
 * check the peer reported passed; the last line says how many checks passed, or how many failed.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#ifdef VERBS_ON_RNIC
#include "verbs_rnic.h"
#define PROGRAM "rnic-verbs-check"
#else
#include <infiniband/verbs.h>
#define PROGRAM "verbs-check"
/* The kernel drives a libibverbs device: nothing to bring up, nothing to progress. */
static int verbs_backend_init(int argc, char **argv) { (void)argc; (void)argv; return 0; }
static void verbs_backend_progress(void) {}
static void verbs_backend_stop(void) {}
static void verbs_backend_fini(void) {}
static void *verbs_alloc_buf(size_t len) { return aligned_alloc(4096, (len + 4095) & ~(size_t)4095); }
static void verbs_free_buf(void *buf) { free(buf); }
#endif
#include "oob.h"

struct opts {
	const char *host;	/* the server's address (client); NULL: wait for the peer (server) */
	const char *port;	/* TCP port of the exchange */
	const char *device;	/* libibverbs device name; NULL: the first */
	int gid_index;
	enum ibv_mtu mtu;
	uint32_t size;
	uint32_t rounds;
	int timeout_s;
};

/* What a QP's peer needs; network byte order on the wire. */
struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t size;
	uint64_t addr;
	uint8_t gid[16];
};

/* The turns' messages on the TCP connection (network byte order). */
enum { MSG_READY = 0x52454459, MSG_DONE = 0x444f4e45, MSG_VERDICT = 0x56455244 };
struct turn_msg {
	uint32_t tag;
	uint32_t value;		/* DONE: nothing; VERDICT: the passive end's failed checks */
};

/* The registered buffer, size bytes per region (the same layout on both ends), then 64 bytes for the
 * atomic target and the local landing slot of atomic results. */
enum region { REG_WRITE, REG_WRITE_IMM, REG_READ, REG_LOCAL, REG_RECV, REG_ATOMIC, REG_COUNT };

/* The operations of a turn, as pattern seeds. */
enum op { OP_WRITE = 1, OP_WRITE_IMM, OP_SEND_IMM, OP_READ };

struct check_ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
	uint32_t size;
	int fd;			/* the TCP connection to the peer */
	int timeout_s;
	int client;
	struct peer_info peer;	/* host byte order, but the GID */
	unsigned int passed;
	unsigned int failed;
};

#define ATOMIC_ADD 0x0000001000000001ull

static uint8_t *
region(struct check_ctx *c, enum region r)
{
	return c->buf + (size_t)r * c->size;
}

static uint64_t
peer_region(const struct check_ctx *c, enum region r)
{
	return c->peer.addr + (uint64_t)r * c->size;
}

static uint32_t
seed(uint32_t round, int turn, enum op op)
{
	return round * 16 + (uint32_t)turn * 8 + (uint32_t)op;
}

static void
fill(uint8_t *p, uint32_t len, uint32_t s)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(s * 157 + i * 7 + (i >> 8) * 13 + (i >> 16));
}

/* The first byte that differs from the pattern, or -1. */
static long
differs(const uint8_t *p, uint32_t len, uint32_t s)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(s * 157 + i * 7 + (i >> 8) * 13 + (i >> 16)))
			return (long)i;
	return -1;
}

static uint64_t
atomic_start(uint32_t round, int turn)
{
	return 0x0123456789ab0000ull + round * 2 + (uint64_t)turn;
}

static uint64_t
atomic_swap(uint32_t round, int turn)
{
	return 0xfedcba9876543210ull ^ ((uint64_t)round << 8) ^ (uint64_t)turn;
}

static uint32_t
immediate(uint32_t round, int turn, enum op op)
{
	return htonl(0xa5000000u | round << 8 | (uint32_t)turn << 4 | (uint32_t)op);
}

static void
check(struct check_ctx *c, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
check(struct check_ctx *c, int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		c->passed++;
		return;
	}
	c->failed++;
	fprintf(stderr, PROGRAM " (%s): FAILED: ", c->client ? "client" : "server");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Whether the peer closed its end of the TCP connection (it gave up, or never got its QP ready). */
static int
peer_gone(const struct check_ctx *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

	return c->fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* One completion of cq, within the time limit. 0, or -1 when none came (or the peer left). */
static int
wait_wc(struct check_ctx *c, struct ibv_cq *cq, struct ibv_wc *wc)
{
	double deadline = now_s() + c->timeout_s;

	for (unsigned int i = 0; now_s() < deadline; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return 0;
		if (i % 1024 == 0 && peer_gone(c)) {
			fprintf(stderr, PROGRAM ": the peer closed the connection\n");
			return -1;
		}
		verbs_backend_progress();
		usleep(10);
	}
	return -1;
}

/* Send a turn message. 0 or -1. */
static int
send_msg(struct check_ctx *c, uint32_t tag, uint32_t value)
{
	struct turn_msg m = { htonl(tag), htonl(value) };

	return write(c->fd, &m, sizeof(m)) == (ssize_t)sizeof(m) ? 0 : -1;
}

/* The peer's next turn message, which must carry tag; the engine keeps running while it waits (the peer
 * may be reading our memory meanwhile). 0 with *value, or -1. */
static int
wait_msg(struct check_ctx *c, uint32_t tag, uint32_t *value)
{
	double deadline = now_s() + c->timeout_s;
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	struct turn_msg m;

	while (poll(&p, 1, 1) == 0) {
		if (now_s() > deadline) {
			fprintf(stderr, PROGRAM ": no message from the peer in %d s\n", c->timeout_s);
			return -1;
		}
		verbs_backend_progress();
	}
	if (recv(c->fd, &m, sizeof(m), MSG_WAITALL) != (ssize_t)sizeof(m) || ntohl(m.tag) != tag) {
		fprintf(stderr, PROGRAM ": the peer closed the connection or is out of step\n");
		return -1;
	}
	*value = ntohl(m.value);
	return 0;
}

/* Post one signaled work request and wait for its completion. 0, or -1 (a failed completion counts as a
 * failed check). */
static int
post_wait(struct check_ctx *c, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->qp, wr, &bad) != 0 || wait_wc(c, c->scq, &wc) != 0) {
		check(c, 0, "%s: not posted or no completion in %d s", what, c->timeout_s);
		return -1;
	}
	check(c, wc.status == IBV_WC_SUCCESS, "%s: completion status %s", what, ibv_wc_status_str(wc.status));
	return wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static int
rdma(struct check_ctx *c, int opcode, enum region local, enum region remote, uint32_t imm, const char *what)
{
	struct ibv_sge sge = { (uintptr_t)region(c, local), c->size, c->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = opcode, .imm_data = imm };

	wr.wr.rdma.remote_addr = peer_region(c, remote);
	wr.wr.rdma.rkey = c->peer.rkey;
	return post_wait(c, &wr, what);
}

/* An atomic on the peer's target; the original value it returns, in *orig. */
static int
atomic(struct check_ctx *c, int opcode, uint64_t compare_add, uint64_t swap, uint64_t *orig, const char *what)
{
	uint64_t *slot = (uint64_t *)(void *)(region(c, REG_ATOMIC) + 8);
	struct ibv_sge sge = { (uintptr_t)slot, 8, c->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = opcode };

	wr.wr.atomic.remote_addr = peer_region(c, REG_ATOMIC);
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	wr.wr.atomic.rkey = c->peer.rkey;
	*slot = 0;
	if (post_wait(c, &wr, what) != 0)
		return -1;
	*orig = *slot;
	return 0;
}

/* The active end's turn: every operation on the peer's memory, the data it reads and the values the
 * atomics return checked here. */
static int
active_turn(struct check_ctx *c, uint32_t round, int turn)
{
	uint64_t start = atomic_start(round, turn), swap = atomic_swap(round, turn), orig = 0;
	uint32_t peer_failed;
	long bad;

	if (wait_msg(c, MSG_READY, &peer_failed) != 0)
		return -1;
	fill(region(c, REG_LOCAL), c->size, seed(round, turn, OP_WRITE));
	if (rdma(c, IBV_WR_RDMA_WRITE, REG_LOCAL, REG_WRITE, 0, "RDMA WRITE") != 0)
		return -1;
	fill(region(c, REG_LOCAL), c->size, seed(round, turn, OP_WRITE_IMM));
	if (rdma(c, IBV_WR_RDMA_WRITE_WITH_IMM, REG_LOCAL, REG_WRITE_IMM, immediate(round, turn, OP_WRITE_IMM),
		 "RDMA WRITE with immediate") != 0)
		return -1;
	fill(region(c, REG_LOCAL), c->size, seed(round, turn, OP_SEND_IMM));
	if (rdma(c, IBV_WR_SEND_WITH_IMM, REG_LOCAL, REG_RECV, immediate(round, turn, OP_SEND_IMM),
		 "SEND with immediate") != 0)
		return -1;
	memset(region(c, REG_LOCAL), 0, c->size);
	if (rdma(c, IBV_WR_RDMA_READ, REG_LOCAL, REG_READ, 0, "RDMA READ") != 0)
		return -1;
	bad = differs(region(c, REG_LOCAL), c->size, seed(round, turn, OP_READ));
	check(c, bad < 0, "round %u: RDMA READ: byte %ld differs from the peer's pattern", round, bad);
	if (atomic(c, IBV_WR_ATOMIC_FETCH_AND_ADD, ATOMIC_ADD, 0, &orig, "FETCH_ADD") != 0)
		return -1;
	check(c, orig == start, "round %u: FETCH_ADD returned %#llx, not %#llx", round, (unsigned long long)orig,
	      (unsigned long long)start);
	if (atomic(c, IBV_WR_ATOMIC_CMP_AND_SWP, start + ATOMIC_ADD, swap, &orig, "CMP_SWAP (equal)") != 0)
		return -1;
	check(c, orig == start + ATOMIC_ADD, "round %u: CMP_SWAP (equal) returned %#llx, not %#llx", round,
	      (unsigned long long)orig, (unsigned long long)(start + ATOMIC_ADD));
	/* The compare value is stale now: no swap, and the swapped-in value comes back. */
	if (atomic(c, IBV_WR_ATOMIC_CMP_AND_SWP, start, 0, &orig, "CMP_SWAP (different)") != 0)
		return -1;
	check(c, orig == swap, "round %u: CMP_SWAP (different) returned %#llx, not %#llx", round,
	      (unsigned long long)orig, (unsigned long long)swap);
	if (send_msg(c, MSG_DONE, 0) != 0 || wait_msg(c, MSG_VERDICT, &peer_failed) != 0)
		return -1;
	check(c, peer_failed == 0, "round %u: the peer counted %u failed checks of what this end did", round,
	      peer_failed);
	return 0;
}

static int
post_recvs(struct check_ctx *c, int n)
{
	struct ibv_sge sge = { (uintptr_t)region(c, REG_RECV), c->size, c->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	for (int i = 0; i < n; i++)
		if (ibv_post_recv(c->qp, &wr, &bad) != 0)
			return -1;
	return 0;
}

/* A receive completion of the turn: its status, opcode, immediate and byte count. */
static int
check_recv(struct check_ctx *c, uint32_t round, int opcode, uint32_t imm, const char *what)
{
	struct ibv_wc wc;

	if (wait_wc(c, c->rcq, &wc) != 0) {
		check(c, 0, "round %u: %s: no receive completion in %d s", round, what, c->timeout_s);
		return -1;
	}
	check(c, wc.status == IBV_WC_SUCCESS, "round %u: %s: receive status %s", round, what,
	      ibv_wc_status_str(wc.status));
	check(c, (int)wc.opcode == opcode, "round %u: %s: receive opcode %d, not %d", round, what, (int)wc.opcode,
	      opcode);
	check(c, (wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == imm, "round %u: %s: immediate %#x (flags %#x), "
	      "not %#x", round, what, ntohl(wc.imm_data), (unsigned int)wc.wc_flags, ntohl(imm));
	check(c, wc.byte_len == c->size, "round %u: %s: byte_len %u, not %u", round, what, wc.byte_len, c->size);
	return wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static void
check_region(struct check_ctx *c, enum region r, uint32_t s, uint32_t round, const char *what)
{
	long bad = differs(region(c, r), c->size, s);

	check(c, bad < 0, "round %u: %s: byte %ld differs from the peer's pattern", round, what, bad);
}

/* The passive end's turn: its memory laid out for the peer, then what the peer's operations left in it
 * checked here; the number of failed checks goes back to the peer. */
static int
passive_turn(struct check_ctx *c, uint32_t round, int turn)
{
	uint64_t *target = (uint64_t *)(void *)region(c, REG_ATOMIC);
	unsigned int failed_before = c->failed;
	uint32_t unused;

	memset(region(c, REG_WRITE), 0, c->size);
	memset(region(c, REG_WRITE_IMM), 0, c->size);
	memset(region(c, REG_RECV), 0, c->size);
	fill(region(c, REG_READ), c->size, seed(round, turn, OP_READ));
	*target = atomic_start(round, turn);
	/* One receive for the WRITE with immediate (it consumes one, data-less), one for the SEND. */
	if (post_recvs(c, 2) != 0 || send_msg(c, MSG_READY, 0) != 0)
		return -1;
	if (check_recv(c, round, IBV_WC_RECV_RDMA_WITH_IMM, immediate(round, turn, OP_WRITE_IMM),
		       "RDMA WRITE with immediate") != 0)
		return -1;
	/* RC places a WRITE before the later WRITE with immediate completes (IBA 9.5): both are there now. */
	check_region(c, REG_WRITE, seed(round, turn, OP_WRITE), round, "RDMA WRITE");
	check_region(c, REG_WRITE_IMM, seed(round, turn, OP_WRITE_IMM), round, "RDMA WRITE with immediate");
	if (check_recv(c, round, IBV_WC_RECV, immediate(round, turn, OP_SEND_IMM), "SEND with immediate") != 0)
		return -1;
	check_region(c, REG_RECV, seed(round, turn, OP_SEND_IMM), round, "SEND with immediate");
	if (wait_msg(c, MSG_DONE, &unused) != 0)
		return -1;
	check(c, *target == atomic_swap(round, turn), "round %u: the atomic target holds %#llx after FETCH_ADD "
	      "and the CMP_SWAPs, not %#llx", round, (unsigned long long)*target,
	      (unsigned long long)atomic_swap(round, turn));
	return send_msg(c, MSG_VERDICT, c->failed - failed_before);
}

static struct ibv_context *
open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list != NULL && list[i] != NULL && ctx == NULL; i++)
		if (name == NULL || strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx = ibv_open_device(list[i]);
	if (list != NULL)
		ibv_free_device_list(list);
	return ctx;
}

static int
create_objects(struct check_ctx *c, const struct opts *o)
{
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	size_t len = (size_t)REG_COUNT * o->size + 64;

	c->ctx = open_device(o->device);
	if (c->ctx == NULL) {
		fprintf(stderr, PROGRAM ": no device%s%s\n", o->device != NULL ? " named " : "",
			o->device != NULL ? o->device : "");
		return -1;
	}
	c->pd = ibv_alloc_pd(c->ctx);
	c->scq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
	c->rcq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
	c->buf = verbs_alloc_buf(len);
	if (c->pd == NULL || c->scq == NULL || c->rcq == NULL || c->buf == NULL)
		return -1;
	memset(c->buf, 0, len);
	c->mr = ibv_reg_mr(c->pd, c->buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	init.send_cq = c->scq;
	init.recv_cq = c->rcq;
	c->qp = c->mr != NULL ? ibv_create_qp(c->pd, &init) : NULL;
	return c->qp != NULL ? 0 : -1;
}

static void
destroy_objects(struct check_ctx *c)
{
	if (c->qp != NULL)
		ibv_destroy_qp(c->qp);
	if (c->mr != NULL)
		ibv_dereg_mr(c->mr);
	if (c->scq != NULL)
		ibv_destroy_cq(c->scq);
	if (c->rcq != NULL)
		ibv_destroy_cq(c->rcq);
	if (c->pd != NULL)
		ibv_dealloc_pd(c->pd);
	if (c->ctx != NULL)
		ibv_close_device(c->ctx);
	if (c->buf != NULL)
		verbs_free_buf(c->buf);
}

/* The peers' QP numbers, PSNs, GIDs, rkeys, addresses and sizes, over TCP. */
static int
exchange(struct check_ctx *c, const struct opts *o, uint32_t psn)
{
	struct peer_info mine = { htonl(c->qp->qp_num), htonl(psn), htonl(c->mr->rkey), htonl(o->size),
				  htobe64((uintptr_t)c->buf), { 0 } }, theirs;
	union ibv_gid gid;

	if (ibv_query_gid(c->ctx, 1, o->gid_index, &gid) != 0) {
		fprintf(stderr, PROGRAM ": no GID at index %d\n", o->gid_index);
		return -1;
	}
	memcpy(mine.gid, gid.raw, sizeof(mine.gid));
	c->fd = oob_connect(o->host, o->port);
	if (c->fd < 0 || oob_exchange(c->fd, &mine, &theirs, sizeof(mine)) != 0) {
		fprintf(stderr, PROGRAM ": the exchange with the peer over TCP failed\n");
		return -1;
	}
	c->peer = (struct peer_info){ ntohl(theirs.qpn), ntohl(theirs.psn), ntohl(theirs.rkey), ntohl(theirs.size),
				      be64toh(theirs.addr), { 0 } };
	memcpy(c->peer.gid, theirs.gid, sizeof(c->peer.gid));
	if (c->peer.size != o->size) {
		fprintf(stderr, PROGRAM ": the peer runs with -s %u, this end with -s %u\n", c->peer.size, o->size);
		return -1;
	}
	return 0;
}

static int
to_rts(struct check_ctx *c, const struct opts *o, uint32_t psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags =
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };

	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = c->peer.qpn;
	a.rq_psn = c->peer.psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = (uint8_t)o->gid_index;
	memcpy(a.ah_attr.grh.dgid.raw, c->peer.gid, sizeof(c->peer.gid));
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;		/* 67 ms: the guest runs under emulation, and frames may be lost on purpose */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int
usage(const char *why)
{
	fprintf(stderr, PROGRAM ": %s\nusage: " PROGRAM " [-p PORT] [-d DEVICE] [-g GID_INDEX] [-m MTU] [-s SIZE] "
		"[-n ROUNDS] [-T SECONDS] [HOST]%s\n", why,
#ifdef VERBS_ON_RNIC
		" -- EAL args [-- engine args]"
#else
		""
#endif
		);
	return 2;
}

static int
parse_mtu(const char *text, enum ibv_mtu *mtu)
{
	for (int m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		if (strtol(text, NULL, 0) == 128l << m) {
			*mtu = (enum ibv_mtu)m;
			return 0;
		}
	}
	return -1;
}

/* Our options and HOST, up to the first "--" (what follows is the backend's: *backend_at its index). */
static int
parse_opts(int argc, char **argv, struct opts *o, int *backend_at)
{
	int opt, n = 1;

	*o = (struct opts){ .port = "18516", .mtu = IBV_MTU_1024, .size = 65536, .rounds = 4, .timeout_s = 30 };
	while (n < argc && strcmp(argv[n], "--") != 0)
		n++;
	*backend_at = n;
	optind = 1;
	while ((opt = getopt(n, argv, "p:d:g:m:s:n:T:")) != -1) {
		switch (opt) {
		case 'p': o->port = optarg; break;
		case 'd': o->device = optarg; break;
		case 'g': o->gid_index = atoi(optarg); break;
		case 'm': if (parse_mtu(optarg, &o->mtu) != 0) return usage("-m: 256, 512, 1024, 2048 or 4096"); break;
		case 's': o->size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': o->rounds = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'T': o->timeout_s = atoi(optarg); break;
		default: return usage("unknown option");
		}
	}
	if (optind < n)
		o->host = argv[optind++];
	if (optind < n)
		return usage("more than one HOST");
	if (o->size == 0 || o->size % 64 != 0 || o->size > (16u << 20) || o->rounds == 0 || o->rounds > 1000 ||
	    o->timeout_s <= 0 || o->gid_index < 0 || o->gid_index > 255)
		return usage("-s: a multiple of 64 up to 16 MB; -n: 1 .. 1000; -T: > 0; -g: 0 .. 255");
	return 0;
}

static int
run(struct check_ctx *c, const struct opts *o)
{
	/* Turn 0: the client acts; turn 1: the server acts. */
	for (uint32_t round = 0; round < o->rounds; round++) {
		for (int turn = 0; turn < 2; turn++) {
			int active = (turn == 0) == c->client;

			if ((active ? active_turn(c, round, turn) : passive_turn(c, round, turn)) != 0) {
				check(c, 0, "round %u: the %s turn stopped", round, active ? "active" : "passive");
				return -1;
			}
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct check_ctx c = { .fd = -1 };
	char *no_args[] = { argv[0], NULL };
	struct opts o;
	int backend_at, ret;
	uint32_t psn;

	ret = parse_opts(argc, argv, &o, &backend_at);
	if (ret != 0)
		return ret;
	/* The backend's arguments, with the program's name first in place of the "--", as EAL wants it. */
	if (backend_at < argc) {
		argv[backend_at] = argv[0];
		ret = verbs_backend_init(argc - backend_at, argv + backend_at);
	} else {
		ret = verbs_backend_init(1, no_args);
	}
	if (ret != 0)
		return 1;
	c.client = o.host != NULL;
	c.size = o.size;
	c.timeout_s = o.timeout_s;
	psn = (uint32_t)(getpid() * 2654435761u) & 0xffffff;
	if (create_objects(&c, &o) != 0)
		fprintf(stderr, PROGRAM ": cannot create the verbs objects\n");
	else if (exchange(&c, &o, psn) != 0)
		;
	else if (to_rts(&c, &o, psn) != 0)
		fprintf(stderr, PROGRAM ": cannot bring the QP to RTS\n");
	else
		run(&c, &o);
	if (c.passed > 0 && c.failed == 0)
		printf(PROGRAM " (%s): %u rounds of %u bytes each way: all %u checks passed\n",
		       c.client ? "client" : "server", o.rounds, o.size, c.passed);
	else
		printf(PROGRAM " (%s): %u checks passed, %u failed\n", c.client ? "client" : "server", c.passed,
		       c.failed);
	ret = c.passed > 0 && c.failed == 0 ? 0 : 1;
	/* The last ACKs on their way before the QP goes. */
	for (int i = 0; i < 1000; i++) {
		verbs_backend_progress();
		usleep(100);
	}
	verbs_backend_stop();
	if (c.fd >= 0)
		close(c.fd);
	destroy_objects(&c);
	verbs_backend_fini();
	return ret;
}
