/* SPDX-License-Identifier: BSD-3-Clause
 * The fault matrix: RC WRITE, READ, SEND and FETCH_ADD, 64 B and 64 KB (atomics: 8 B), depth 1 and 16, on
 * 4 QPs, under a fault pattern: every message completes exactly once, in order per QP, successfully, with
 * its data verified (WRITE: the target's bytes; READ: the bytes read; SEND: each receive, in order, and no
 * receive more; FETCH_ADD: each result and the final counter, so an add executed twice shows), and nothing
 * more completes afterwards. A link that goes down longer than the retry budget instead ends in
 * RETRY_EXC_ERR on every QP, then flushes, within a bounded time.
 *
 *   fault_matrix [options] -- EAL args [-- engine args]
 *
 * Loopback (default): the two devices of this process, device 0 the requester; --pattern NAME gives both
 * ports that fault (the names of patterns[] below; the engine's own --fault otherwise). Two processes:
 * --server PORT on one and --client HOST:PORT on the other, one port each; whatever is between them (the
 * kernel, in tests/engine/fault-veth.sh) makes the faults. Options:
 *   --pattern NAME       loopback: a fault pattern (repeatable; "all": every one in turn)
 *   --case OP:SIZE:DEPTH only this case (repeatable; OP write, read, send, fetch_add)
 *   --messages N         per QP and case (default 8 at depth 1, 48 at depth 16)
 *   --duration S         run the cases again and again for S seconds (the soak)
 *   --seed S             the first fault seed (each case and round takes the next)
 *   --timeout T --retry-cnt N   the QPs' loss timer exponent (default 12: 16.8 ms) and retries (7)
 *   --link-down MS       once traffic flows, the link goes down for MS ms (loopback: both ports)
 *   --expect-retry-exceeded   every QP must end in RETRY_EXC_ERR (the link stays down too long)
 *   --announce           print "traffic flowing" when it does (the veth test takes the link down then)
 *   --label NAME         two processes: the name of what is between them, for the report
 *   --max-resent-per-lost X   a case fails when it resent more than X frames per frame lost (judged from
 *                        MIN_LOST_JUDGED lost frames on; doc/engine.md's go-back-N costs)
 * Each case prints one JSON line: what it moved, in how long, what the faults did and what recovery cost.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <cmocka.h>

#include <rte_common.h>

#include "oob.h"
#include "rnic.h"
#include "rnic_fault.h"
#include "rnic_priv.h"
#include "test_env.h"

#define NQP 4
#define SLOTS 64			/* per QP and direction; a message uses slot (number % SLOTS) */
#define SLOT_BYTES 65536u
#define MAX_DEPTH 16
#define MAX_CASES 64
#define MAX_PATTERNS 16
#define CASE_TIMEOUT_S 60
#define QUIET_MS 20			/* after the last completion: nothing more may come */
#define READ_TAG (1ull << 40)		/* READ sources: a pattern no message number gives */
#define FIRST_PSN 0xfffff0		/* PSNs wrap during a case */

enum op { OP_WRITE, OP_READ, OP_SEND, OP_FETCH_ADD, OP_N };
static const char *const op_names[OP_N] = { "write", "read", "send", "fetch_add" };

/* The fault patterns of the matrix, as --fault specs on both ports of the loopback pair. */
static const struct {
	const char *name;
	const char *spec;
} patterns[] = {
	{ "none", "seed=1" },
	{ "uniform", "drop=0.01" },				/* 1 % of the frames, independently */
	{ "burst", "ge_p=0.0025,ge_r=0.25" },			/* 1 %, in bursts of 4 on average */
	{ "ack-only", "only=responses,drop=0.1" },		/* 10 % of ACKs, NAKs and READ responses */
	{ "reorder", "reorder=0.02,depth=8,delay=200" },	/* 2 % held for 8 frames or 200 us */
	{ "duplicate", "duplicate=0.02" },
	{ "corrupt", "corrupt=0.001" },
	{ "rate", "rate=2000,queue=64" },			/* 2 Gbit/s, 64 frames of queue, tail drop */
};

/* One case; also what the client asks the server for. */
struct mcase {
	uint32_t op;
	uint32_t size;
	uint32_t depth;
	uint32_t messages;
	uint32_t expect_retry;		/* every QP must end in RETRY_EXC_ERR */
	uint32_t end;			/* client -> server: no more cases */
};

/* What the peer needs to reach one QP. */
struct qp_info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t tx;			/* its slots: what the peer READs */
	uint64_t rx;			/* ... and where the peer WRITEs, SENDs and adds */
	uint8_t gid[16];
};

/* The client's "done" and the server's answer. */
struct verdict {
	int32_t ok;
	uint32_t pad;
	uint64_t posted[NQP];
};

struct opts {
	const char *pattern[MAX_PATTERNS];
	unsigned int nb_patterns;
	struct mcase cases[MAX_CASES];
	unsigned int nb_cases;
	uint32_t messages;
	double duration;
	uint64_t seed;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint32_t link_down_ms;
	double max_resent;		/* frames resent per frame lost a case may take (0: any) */
	int expect_retry;
	int announce;
	const char *server_port;
	const char *client;
};

/* One device's side: its buffers (per QP: SLOTS tx slots, then SLOTS rx slots) and a case's QPs. */
struct end {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_cq *rcq;
	struct rnic_mr *mr;
	uint8_t *buf;
	union rnic_gid gid;
	enum rnic_mtu mtu;
	uint16_t port_id;
	struct rnic_qp *qp[NQP];
	struct qp_info peer[NQP];
	uint64_t posted[NQP];
	uint64_t done[NQP];		/* send completions (requester) */
	uint64_t received[NQP];		/* receive completions (responder) */
	int failed[NQP];		/* the QP's first error completion came */
};

static struct opts opt;
static struct end A, B;			/* loopback: A requests, B responds; two processes: A only */
static int oob_fd = -1;
static const char *cur_pattern;
static uint64_t cur_seed;		/* the next case's fault seed */
static uint64_t case_seed;		/* this case's */

/* ------------------------------------------------------------------------------------------------------ */
/* Data                                                                                                     */

static uint8_t *
tx_slot(const struct end *e, uint32_t q, uint64_t m)
{
	return e->buf + ((uint64_t)q * 2 * SLOTS + m % SLOTS) * SLOT_BYTES;
}

static uint8_t *
rx_slot(const struct end *e, uint32_t q, uint64_t m)
{
	return e->buf + ((uint64_t)q * 2 * SLOTS + SLOTS + m % SLOTS) * SLOT_BYTES;
}

/* The bytes of message m of QP q: an xorshift stream seeded by both, so no two messages look alike. */
static uint64_t
pattern_word(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

static void
fill(uint8_t *p, uint32_t len, uint32_t q, uint64_t m)
{
	uint64_t x = (m << 8 | q) * 0x9e3779b97f4a7c15ull + 1;

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = pattern_word(&x);

		memcpy(p + i, &v, RTE_MIN(8u, len - i));
	}
}

static int
matches(const uint8_t *p, uint32_t len, uint32_t q, uint64_t m)
{
	uint64_t x = (m << 8 | q) * 0x9e3779b97f4a7c15ull + 1;

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = pattern_word(&x);

		if (memcmp(p + i, &v, RTE_MIN(8u, len - i)) != 0)
			return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Ends and QPs                                                                                             */

static int
end_open(struct end *e, struct rnic_device *dev)
{
	const size_t bytes = (size_t)NQP * 2 * SLOTS * SLOT_BYTES;
	struct rnic_port_attr port = { 0 };

	e->port_id = dev->port_id;
	e->ctx = rnic_open_device(dev);
	if (e->ctx == NULL)
		return -1;
	e->pd = rnic_alloc_pd(e->ctx);
	e->cq = rnic_create_cq(e->ctx, NQP * (MAX_DEPTH + SLOTS) + 64, NULL, NULL, 0);
	e->rcq = rnic_create_cq(e->ctx, NQP * (SLOTS + 1) + 64, NULL, NULL, 0);
	e->buf = aligned_alloc(4096, bytes);
	if (e->pd == NULL || e->cq == NULL || e->rcq == NULL || e->buf == NULL)
		return -1;
	memset(e->buf, 0, bytes);
	e->mr = rnic_reg_mr(e->pd, e->buf, bytes, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			    RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);
	if (e->mr == NULL || rnic_query_gid(e->ctx, 1, 0, &e->gid) != 0)
		return -1;
	/* Frames sent before the link is up are lost (a veth comes up): wait for it. */
	for (int i = 0; i < 1000; i++) {
		if (rnic_query_port(e->ctx, 1, &port) == 0 && port.state == RNIC_PORT_ACTIVE)
			break;
		usleep(10000);
	}
	e->mtu = port.active_mtu;
	return port.state == RNIC_PORT_ACTIVE ? 0 : -1;
}

static void
end_close(struct end *e)
{
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
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* A case's QPs, fresh, and the QP's info for the peer. */
static int
qps_create(struct end *e, struct qp_info *mine)
{
	for (uint32_t q = 0; q < NQP; q++) {
		struct rnic_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->rcq, .qp_type = RNIC_QPT_RC,
			.cap = { .max_send_wr = MAX_DEPTH + 1, .max_recv_wr = SLOTS + 1, .max_send_sge = 1,
				 .max_recv_sge = 1 } };

		e->qp[q] = rnic_create_qp(e->pd, &ia);
		if (e->qp[q] == NULL)
			return -1;
		e->posted[q] = e->done[q] = e->received[q] = 0;
		e->failed[q] = 0;
		mine[q] = (struct qp_info){ .qpn = e->qp[q]->qp_num, .rkey = e->mr->rkey,
					    .tx = (uintptr_t)tx_slot(e, q, 0), .rx = (uintptr_t)rx_slot(e, q, 0) };
		memcpy(mine[q].gid, e->gid.raw, 16);
	}
	return 0;
}

static int
qps_connect(struct end *e)
{
	for (uint32_t q = 0; q < NQP; q++) {
		const struct test_path path = { .mtu = e->mtu, .psn = FIRST_PSN + q, .timeout = opt.timeout,
						.retry_cnt = opt.retry_cnt, .rnr_retry = 7, .rd_atomic = MAX_DEPTH };
		union rnic_gid gid;

		memcpy(gid.raw, e->peer[q].gid, 16);
		if (test_connect(e->qp[q], e->peer[q].qpn, &gid, &path) != 0)
			return -1;
	}
	return 0;
}

static void
qps_destroy(struct end *e)
{
	struct rnic_wc wc[16];

	for (uint32_t q = 0; q < NQP; q++) {
		if (e->qp[q] != NULL)
			rnic_destroy_qp(e->qp[q]);
		e->qp[q] = NULL;
	}
	/* Flushed receives are no later case's business. */
	while (rnic_poll_cq(e->cq, 16, wc) > 0 || rnic_poll_cq(e->rcq, 16, wc) > 0)
		;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The responder's side                                                                                     */

static int
post_recv(struct end *e, uint32_t q, uint64_t r)
{
	struct rnic_sge sge = { (uintptr_t)rx_slot(e, q, r), SLOT_BYTES, e->mr->lkey };
	struct rnic_recv_wr wr = { .wr_id = (uint64_t)q << 32 | r, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(e->qp[q], &wr, &bad);
}

/* Before the case: READ sources filled, targets zeroed, receives posted for SEND. */
static int
target_prepare(struct end *e, const struct mcase *c)
{
	for (uint32_t q = 0; q < NQP; q++) {
		for (uint64_t s = 0; s < SLOTS; s++) {
			memset(rx_slot(e, q, s), 0, c->size);
			if (c->op == OP_READ)
				fill(tx_slot(e, q, s), c->size, q, READ_TAG | s);
			if (c->op == OP_SEND && post_recv(e, q, s) != 0)
				return -1;
		}
	}
	return 0;
}

/* Receive completions of SENDs: each message once, in order, its bytes right; its receive posted again. */
static int
serve_receives(struct end *e, const struct mcase *c)
{
	struct rnic_wc wc[32];
	int n = rnic_poll_cq(e->rcq, 32, wc);

	for (int i = 0; i < n; i++) {
		uint32_t q = (uint32_t)(wc[i].wr_id >> 32);
		uint64_t r = wc[i].wr_id & 0xffffffff;

		if (wc[i].status != RNIC_WC_SUCCESS || q >= NQP)
			return fprintf(stderr, "receive %llx: %s\n", (unsigned long long)wc[i].wr_id,
				       rnic_wc_status_str(wc[i].status)), -1;
		if (r != e->received[q] || wc[i].byte_len != c->size || !matches(rx_slot(e, q, r), c->size, q, r)) {
			fprintf(stderr, "QP %u receive %llu: wrong (expected receive %llu, %u bytes, got %u)\n", q,
				(unsigned long long)r, (unsigned long long)e->received[q], c->size, wc[i].byte_len);
			return -1;
		}
		e->received[q]++;
		if (post_recv(e, q, r + SLOTS) != 0)
			return -1;
	}
	return n < 0 ? -1 : 0;
}

/* After the case (count[q] messages per QP): the WRITE target holds the last SLOTS messages, each FETCH_ADD
 * counter was added to exactly count times, every SEND arrived (waiting for the last ones a while). */
static int
target_check(struct end *e, const struct mcase *c, const uint64_t *count)
{
	double deadline = test_now_s() + CASE_TIMEOUT_S;

	for (uint32_t q = 0; q < NQP; q++) {
		uint64_t counter;

		for (uint64_t m = count[q] > SLOTS ? count[q] - SLOTS : 0; c->op == OP_WRITE && m < count[q]; m++)
			if (!matches(rx_slot(e, q, m), c->size, q, m))
				return fprintf(stderr, "QP %u message %llu: written data differs\n", q,
					       (unsigned long long)m), -1;
		memcpy(&counter, rx_slot(e, q, 0), 8);
		if (c->op == OP_FETCH_ADD && counter != count[q])
			return fprintf(stderr, "QP %u: counter %llu after %llu FETCH_ADDs\n", q,
				       (unsigned long long)counter, (unsigned long long)count[q]), -1;
		while (c->op == OP_SEND && e->received[q] < count[q]) {
			if (serve_receives(e, c) != 0 || test_now_s() > deadline)
				return fprintf(stderr, "QP %u: %llu of %llu SENDs arrived\n", q,
					       (unsigned long long)e->received[q], (unsigned long long)count[q]), -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The requester's side                                                                                     */

static int
post_msg(struct end *e, const struct mcase *c, uint32_t q)
{
	uint64_t m = e->posted[q];
	const struct qp_info *p = &e->peer[q];
	struct rnic_sge sge = { (uintptr_t)tx_slot(e, q, m), c->size, e->mr->lkey };
	struct rnic_send_wr wr = { .wr_id = (uint64_t)q << 32 | m, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;
	uint64_t off = (m % SLOTS) * SLOT_BYTES;

	switch (c->op) {
	case OP_WRITE:
	case OP_SEND:
		fill(tx_slot(e, q, m), c->size, q, m);
		wr.opcode = c->op == OP_WRITE ? RNIC_WR_RDMA_WRITE : RNIC_WR_SEND;
		wr.wr.rdma.remote_addr = p->rx + off;
		wr.wr.rdma.rkey = p->rkey;
		break;
	case OP_READ:
		sge.addr = (uintptr_t)rx_slot(e, q, m);
		memset(rx_slot(e, q, m), 0, c->size);
		wr.opcode = RNIC_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = p->tx + off;
		wr.wr.rdma.rkey = p->rkey;
		break;
	default:
		sge.addr = (uintptr_t)rx_slot(e, q, m);
		wr.opcode = RNIC_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = p->rx;	/* one counter per QP */
		wr.wr.atomic.rkey = p->rkey;
		wr.wr.atomic.compare_add = 1;
		break;
	}
	e->posted[q]++;
	return rnic_post_send(e->qp[q], &wr, &bad);
}

/* An error completion: with --expect-retry-exceeded, the QP's first one must be RETRY_EXC_ERR and the rest
 * flushes; otherwise any is a failure. */
static int
on_error(struct end *e, const struct mcase *c, uint32_t q, const struct rnic_wc *wc)
{
	enum rnic_wc_status want = e->failed[q] ? RNIC_WC_WR_FLUSH_ERR : RNIC_WC_RETRY_EXC_ERR;

	if (!c->expect_retry || wc->status != want) {
		fprintf(stderr, "QP %u message %llu: %s\n", q, (unsigned long long)(wc->wr_id & 0xffffffff),
			rnic_wc_status_str(wc->status));
		return -1;
	}
	e->failed[q] = 1;
	e->done[q]++;
	return 0;
}

/* A send completion: the QP's next message (so each exactly once, in order), and its data. target: the
 * responder's end when it is in this process (a WRITE's bytes are there once it completes). */
static int
on_completion(struct end *e, const struct mcase *c, const struct rnic_wc *wc, const struct end *target)
{
	uint32_t q = (uint32_t)(wc->wr_id >> 32);
	uint64_t m = wc->wr_id & 0xffffffff, result;
	int ok = 1;

	if (q >= NQP)
		return fprintf(stderr, "a completion of no QP: wr_id %llx\n", (unsigned long long)wc->wr_id), -1;
	if (wc->status != RNIC_WC_SUCCESS)
		return on_error(e, c, q, wc);
	if (m != e->done[q] || e->failed[q])
		return fprintf(stderr, "QP %u: message %llu completed, expected %llu\n", q, (unsigned long long)m,
			       (unsigned long long)e->done[q]), -1;
	if (c->op == OP_READ)
		ok = matches(rx_slot(e, q, m), c->size, q, READ_TAG | (m % SLOTS));
	else if (c->op == OP_WRITE && target != NULL)
		ok = matches(rx_slot(target, q, m), c->size, q, m);
	else if (c->op == OP_FETCH_ADD)
		ok = (memcpy(&result, rx_slot(e, q, m), 8), result == m);
	if (!ok)
		return fprintf(stderr, "QP %u message %llu: %s data differs\n", q, (unsigned long long)m,
			       op_names[c->op]), -1;
	e->done[q]++;
	return 0;
}

/* Whether the case is over: every message completed, or with --expect-retry-exceeded every QP failed and
 * every WR it had came back. */
static int
all_done(const struct end *e, const struct mcase *c)
{
	for (uint32_t q = 0; q < NQP; q++) {
		if (c->expect_retry ? !e->failed[q] || e->done[q] < e->posted[q] : e->done[q] < c->messages)
			return 0;
	}
	return 1;
}

static int
traffic_flows(const struct end *e)
{
	for (uint32_t q = 0; q < NQP; q++)
		if (e->done[q] == 0)
			return 0;
	return 1;
}

/* Post up to the depth on each QP that still has messages to send (all of them until it fails, when the
 * link is to stay down). */
static int
refill(struct end *e, const struct mcase *c)
{
	for (uint32_t q = 0; q < NQP; q++) {
		while (e->posted[q] - e->done[q] < c->depth && !e->failed[q] &&
		       (c->expect_retry || e->posted[q] < c->messages))
			if (post_msg(e, c, q) != 0)
				return fprintf(stderr, "QP %u: post_send failed\n", q), -1;
	}
	return 0;
}

/* What a QP went through, for a failed case: as requester and as responder. */
static void
dump_qp(const char *who, const struct end *e, uint32_t q)
{
	struct rnic_qp_counters k = { 0 };

	if (e->qp[q] == NULL || rnic_query_qp_counters(e->qp[q], &k) != 0)
		return;
	fprintf(stderr, "%s QP %u (QPN %u, state %d): posted %llu done %llu received %llu | requester: sent %llu "
		"retransmits %llu timeouts %llu NAKs seq %llu inv %llu access %llu rnr %llu | responder: requests %llu "
		"duplicates %llu out of sequence %llu ACKs %llu NAKs seq %llu inv %llu rnr %llu\n", who, q,
		e->qp[q]->qp_num, (int)e->qp[q]->state, (unsigned long long)e->posted[q],
		(unsigned long long)e->done[q], (unsigned long long)e->received[q], (unsigned long long)k.packets_sent,
		(unsigned long long)k.retransmits, (unsigned long long)k.timeouts,
		(unsigned long long)k.seq_naks_received, (unsigned long long)k.inv_req_naks_received,
		(unsigned long long)k.access_naks_received, (unsigned long long)k.rnr_naks_received,
		(unsigned long long)k.requests_received, (unsigned long long)k.duplicates,
		(unsigned long long)k.out_of_sequence, (unsigned long long)k.acks_sent,
		(unsigned long long)k.seq_naks_sent, (unsigned long long)k.inv_req_naks_sent,
		(unsigned long long)k.rnr_naks_sent);
}

static void
dump_state(const char *who, const struct end *e)
{
	for (uint32_t q = 0; q < NQP; q++)
		dump_qp(who, e, q);
}

/* Run the case on the requester's side; target: the responder's end in this process, or NULL. */
static int
run_requester(struct end *e, const struct mcase *c, struct end *target)
{
	double deadline = test_now_s() + CASE_TIMEOUT_S;
	int link_cut = opt.link_down_ms == 0 && !opt.announce;

	while (!all_done(e, c)) {
		struct rnic_wc wc[32];
		int n;

		if (refill(e, c) != 0)
			return -1;
		n = rnic_poll_cq(e->cq, 32, wc);
		for (int i = 0; i < n; i++)
			if (on_completion(e, c, &wc[i], target) != 0)
				return -1;
		if (n < 0 || (target != NULL && c->op == OP_SEND && serve_receives(target, c) != 0))
			return -1;
		if (!link_cut && traffic_flows(e)) {
			link_cut = 1;
			if (opt.announce)
				printf("traffic flowing\n"), fflush(stdout);
			if (target != NULL && opt.link_down_ms != 0 &&
			    (rnic_fault_link_down(e->port_id, opt.link_down_ms) != 0 ||
			     rnic_fault_link_down(target->port_id, opt.link_down_ms) != 0))
				return fprintf(stderr, "--link-down needs the fault layer (--fault)\n"), -1;
		}
		if (test_now_s() > deadline)
			return fprintf(stderr, "%s %u B depth %u: timed out\n", op_names[c->op], c->size, c->depth), -1;
	}
	return 0;
}

/* Nothing more completes: no send completion at the requester, no receive at the responder (in this
 * process). */
static int
quiet(struct end *e, struct end *target)
{
	double until = test_now_s() + QUIET_MS / 1000.0;
	struct rnic_wc wc;

	while (test_now_s() < until) {
		if (rnic_poll_cq(e->cq, 1, &wc) != 0 || (target != NULL && rnic_poll_cq(target->rcq, 1, &wc) != 0)) {
			fprintf(stderr, "a completion after the last one: wr_id %llx, %s\n",
				(unsigned long long)wc.wr_id, rnic_wc_status_str(wc.status));
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Reports                                                                                                  */

struct tally {
	uint64_t frames_sent;		/* both devices (loopback) or this one */
	uint64_t frames_resent;		/* of them, requests and responses sent again */
	struct rnic_fault_counts faults;
	struct rnic_qp_counters qp;	/* the requester's and (loopback) responder's QPs, summed */
};

static void
tally_add_qps(struct tally *t, const struct end *e)
{
	for (uint32_t q = 0; q < NQP; q++) {
		struct rnic_qp_counters k;

		if (e->qp[q] == NULL || rnic_query_qp_counters(e->qp[q], &k) != 0)
			continue;
		t->qp.packets_sent += k.packets_sent;
		t->qp.retransmits += k.retransmits;
		t->qp.timeouts += k.timeouts;
		t->qp.seq_naks_received += k.seq_naks_received;
		t->qp.duplicates += k.duplicates;
		t->qp.out_of_sequence += k.out_of_sequence;
	}
}

/* The frames a device sent again: data frames (kept or gathered again), READ and atomic requests, READ
 * responses and atomic ACKs (the counters doc/engine.md's resend figures add up). */
static uint64_t
resent_frames(struct rnic_context *ctx)
{
	static const char *const names[] = { "resent_kept", "resent_gathered", "resent_requests", "resent_responses" };
	uint64_t sum = 0;

	for (size_t i = 0; i < RTE_DIM(names); i++) {
		uint64_t v = test_counter(ctx, names[i]);

		sum += v == UINT64_MAX ? 0 : v;
	}
	return sum;
}

static void
tally_take(struct tally *t, const struct end *e, const struct end *target)
{
	struct rnic_fault_counts f;

	memset(t, 0, sizeof(*t));
	for (const struct end *x = e; x != NULL; x = x == e ? target : NULL) {
		uint64_t *to = (uint64_t *)(void *)&t->faults;
		const uint64_t *from = (const uint64_t *)(const void *)&f;

		t->frames_sent += test_counter(x->ctx, "tx_packets");
		t->frames_resent += resent_frames(x->ctx);
		rnic_fault_get_counts(x->port_id, &f);
		for (size_t k = 0; k < sizeof(f) / sizeof(uint64_t); k++)
			to[k] += from[k];
		tally_add_qps(t, x);
	}
}

/* Request packets a message takes when nothing is lost: its MTUs (WRITE, SEND), or one (READ, atomic). */
static uint64_t
packets_per_message(const struct mcase *c, enum rnic_mtu mtu)
{
	uint32_t pmtu = 128u << mtu;

	return c->op == OP_WRITE || c->op == OP_SEND ? (c->size + pmtu - 1) / pmtu : 1;
}

/* Fewer losses say little about what one costs. */
#define MIN_LOST_JUDGED 20

/* Whether the case resent within --max-resent-per-lost; says why not. */
static int
resent_within_budget(const struct tally *before, const struct tally *after)
{
	uint64_t lost = after->faults.dropped - before->faults.dropped;
	uint64_t resent = after->frames_resent - before->frames_resent;

	if (opt.max_resent == 0 || lost < MIN_LOST_JUDGED || (double)resent <= opt.max_resent * (double)lost)
		return 1;
	fprintf(stderr, "%llu frames resent for %llu lost: %.2f per frame lost, more than %.2f\n",
		(unsigned long long)resent, (unsigned long long)lost, (double)resent / (double)lost, opt.max_resent);
	return 0;
}

static void
report(const struct mcase *c, const struct end *e, const struct tally *before, const struct tally *after,
       double seconds, int ok)
{
	uint64_t messages = 0;

	for (uint32_t q = 0; q < NQP; q++)
		messages += e->done[q];
	printf("{\"pattern\": \"%s\", \"seed\": %llu, \"op\": \"%s\", \"size\": %u, \"depth\": %u, \"qps\": %d, \"messages\": %llu, "
	       "\"ok\": %s, \"seconds\": %.4f, \"goodput_gbps\": %.3f, \"frames_sent\": %llu, \"frames_resent\": %llu, \"lost\": %llu, "
	       "\"duplicated\": %llu, \"reordered\": %llu, \"corrupted\": %llu, \"retransmits\": %llu, "
	       "\"timeouts\": %llu, \"seq_naks\": %llu, \"request_packets\": %llu, \"min_request_packets\": %llu}\n",
	       cur_pattern, (unsigned long long)case_seed, op_names[c->op], c->size, c->depth, NQP, (unsigned long long)messages,
	       ok ? "true" : "false", seconds, (double)messages * c->size * 8 / seconds / 1e9,
	       (unsigned long long)(after->frames_sent - before->frames_sent),
	       (unsigned long long)(after->frames_resent - before->frames_resent),
	       (unsigned long long)(after->faults.dropped - before->faults.dropped),
	       (unsigned long long)(after->faults.duplicated - before->faults.duplicated),
	       (unsigned long long)(after->faults.reordered - before->faults.reordered),
	       (unsigned long long)(after->faults.corrupted - before->faults.corrupted),
	       (unsigned long long)after->qp.retransmits, (unsigned long long)after->qp.timeouts,
	       (unsigned long long)after->qp.seq_naks_received, (unsigned long long)after->qp.packets_sent,
	       (unsigned long long)(messages * packets_per_message(c, e->mtu)));
	fflush(stdout);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Loopback: both ends here                                                                                 */

/* The pattern's faults on both ports, with a seed of the case's own. */
static int
apply_pattern(void)
{
	char text[256];
	struct rnic_fault_spec spec;
	const char *base = NULL;

	if (cur_pattern == NULL || strcmp(cur_pattern, "engine") == 0)
		return 0;	/* the engine's own --fault */
	for (unsigned int i = 0; i < RTE_DIM(patterns); i++)
		if (strcmp(patterns[i].name, cur_pattern) == 0)
			base = patterns[i].spec;
	case_seed = cur_seed++;
	snprintf(text, sizeof(text), "%s,seed=%llu", base, (unsigned long long)case_seed);
	if (base == NULL || rnic_fault_parse(text, &spec) != 0)
		return -1;
	return rnic_fault_update(A.port_id, &spec) != 0 || rnic_fault_update(B.port_id, &spec) != 0 ? -1 : 0;
}

static int
run_loopback_case(const struct mcase *c)
{
	struct qp_info ia[NQP], ib[NQP];
	struct tally before, after;
	double t0, t1;
	int ok;

	ok = qps_create(&A, ia) == 0 && qps_create(&B, ib) == 0;
	if (ok) {
		memcpy(A.peer, ib, sizeof(ib));
		memcpy(B.peer, ia, sizeof(ia));
		/* Receives can be posted once the QPs left RESET. */
		ok = apply_pattern() == 0 && qps_connect(&A) == 0 && qps_connect(&B) == 0 &&
		     target_prepare(&B, c) == 0;
	}
	tally_take(&before, &A, &B);
	t0 = test_now_s();
	ok = ok && run_requester(&A, c, &B) == 0;
	t1 = test_now_s();
	if (!ok) {
		dump_state("requester", &A);
		dump_state("responder", &B);
	}
	if (ok && !c->expect_retry)
		ok = target_check(&B, c, A.done) == 0 && quiet(&A, &B) == 0;
	tally_take(&after, &A, &B);
	ok = ok && resent_within_budget(&before, &after);
	report(c, &A, &before, &after, t1 - t0, ok);
	/* The link back up for the next case. */
	if (opt.link_down_ms != 0)
		ok = ok && rnic_fault_link_down(A.port_id, 0) == 0 && rnic_fault_link_down(B.port_id, 0) == 0;
	qps_destroy(&A);
	qps_destroy(&B);
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Two processes: the client runs the cases, the server is their target                                     */

static int
send_all(const void *p, size_t len)
{
	return write(oob_fd, p, len) == (ssize_t)len ? 0 : -1;
}

/* All LEN bytes, through signals and short reads; -1 with errno (0: the peer closed). */
static int
recv_all(void *p, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = recv(oob_fd, (char *)p + got, len - got, MSG_WAITALL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

/* The client's half of a case: ask, exchange QPs, wait for the server's "ready", run, say done, hear
 * whether the target found everything right. */
static int
run_client_case(const struct mcase *c)
{
	struct qp_info mine[NQP];
	struct verdict v = { 0 }, answer;
	struct tally before, after;
	char ready;
	double t0, t1;
	int ok;

	if (oob_fd < 0)
		return fprintf(stderr, "no server\n"), -1;
	ok = send_all(c, sizeof(*c)) == 0 && qps_create(&A, mine) == 0 &&
	     oob_exchange(oob_fd, mine, A.peer, sizeof(mine)) == 0 && qps_connect(&A) == 0 &&
	     recv_all(&ready, 1) == 0;
	tally_take(&before, &A, NULL);
	t0 = test_now_s();
	ok = ok && run_requester(&A, c, NULL) == 0;
	t1 = test_now_s();
	if (!ok)
		dump_state("client", &A);
	ok = ok && (c->expect_retry || quiet(&A, NULL) == 0);
	tally_take(&after, &A, NULL);
	v.ok = ok;
	memcpy(v.posted, A.done, sizeof(v.posted));
	if (send_all(&v, sizeof(v)) != 0 || recv_all(&answer, sizeof(answer)) != 0) {
		int err = errno;

		close(oob_fd);
		oob_fd = -1;	/* no more cases */
		qps_destroy(&A);
		return fprintf(stderr, "the server went away (%s)\n", err ? strerror(err) : "closed"), -1;
	}
	if (ok && !answer.ok)
		fprintf(stderr, "the server found the target wrong\n");
	ok = ok && answer.ok;
	report(c, &A, &before, &after, t1 - t0, ok);
	qps_destroy(&A);
	return ok ? 0 : -1;
}

/* Serve SEND receives until the client says it is done (its verdict, without waiting). 1: not yet. */
static int
client_done(struct verdict *v)
{
	ssize_t n = recv(oob_fd, v, sizeof(*v), MSG_DONTWAIT | MSG_PEEK);

	if (n == (ssize_t)sizeof(*v))
		return recv_all(v, sizeof(*v));
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ? -1 : 1;
}

static int
serve_case(const struct mcase *c)
{
	struct qp_info mine[NQP];
	struct verdict v;
	int ok, got;

	ok = qps_create(&A, mine) == 0 && oob_exchange(oob_fd, mine, A.peer, sizeof(mine)) == 0 &&
	     qps_connect(&A) == 0 && target_prepare(&A, c) == 0 && send_all("R", 1) == 0;
	/* The engine's stages may be this thread's (--stages devices on one lcore): run them meanwhile. */
	while (ok && (got = client_done(&v)) == 1) {
		rnic_engine_progress();
		ok = c->op != OP_SEND || serve_receives(&A, c) == 0;
	}
	if (!ok || got < 0)
		return fprintf(stderr, "server: the case broke off\n"), -1;
	if (!v.ok)
		dump_state("server", &A);
	/* With the link cut for good, the client's messages were not all delivered: nothing to check. */
	v.ok = v.ok && (c->expect_retry || (target_check(&A, c, v.posted) == 0 && quiet(&A, &A) == 0));
	ok = send_all(&v, sizeof(v)) == 0;
	qps_destroy(&A);
	return ok ? 0 : -1;
}

static int
run_server(void)
{
	struct mcase c;
	int ret = 0;

	oob_fd = oob_connect(NULL, opt.server_port);
	if (oob_fd < 0)
		return fprintf(stderr, "server: no client\n"), -1;
	while (ret == 0 && recv_all(&c, sizeof(c)) == 0 && !c.end)
		ret = c.op < OP_N && c.size <= SLOT_BYTES && c.depth <= MAX_DEPTH ? serve_case(&c) : -1;
	close(oob_fd);
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The cases as cmocka tests                                                                                */

static void
test_case(void **state)
{
	const struct mcase *c = *state;
	int ret = opt.client != NULL ? run_client_case(c) : run_loopback_case(c);

	if (ret != 0)
		fail_msg("%s: %s %u B depth %u failed", cur_pattern != NULL ? cur_pattern : "-", op_names[c->op],
			 c->size, c->depth);
}

/* --duration: the cases in turn until the time is up, all of them however many fail; then the tally. */
static void
test_soak(void **state)
{
	double end = test_now_s() + opt.duration;
	unsigned int rounds = 0, cases = 0, failed = 0;

	(void)state;
	for (; test_now_s() < end && (opt.client == NULL || oob_fd >= 0); rounds++) {
		for (unsigned int i = 0; i < opt.nb_cases && test_now_s() < end; i++, cases++) {
			const struct mcase *c = &opt.cases[i];

			if ((opt.client != NULL ? run_client_case(c) : run_loopback_case(c)) != 0)
				failed++;
		}
	}
	printf("{\"soak\": \"%s\", \"rounds\": %u, \"cases\": %u, \"failed\": %u}\n",
	       cur_pattern != NULL ? cur_pattern : "-", rounds, cases, failed);
	if (failed != 0)
		fail_msg("%u of %u cases failed", failed, cases);
}

static int
run_cases(const char *group)
{
	static struct CMUnitTest tests[MAX_CASES];
	static char names[MAX_CASES][48];
	unsigned int n = 0;

	if (opt.duration > 0) {
		tests[n++] = (struct CMUnitTest){ .name = "soak", .test_func = test_soak };
	} else {
		for (; n < opt.nb_cases; n++) {
			const struct mcase *c = &opt.cases[n];

			snprintf(names[n], sizeof(names[n]), "%s-%u-depth%u", op_names[c->op], c->size, c->depth);
			tests[n] = (struct CMUnitTest){ .name = names[n], .test_func = test_case,
							.initial_state = (void *)(uintptr_t)c };
		}
	}
	return _cmocka_run_group_tests(group, tests, n, NULL, NULL);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Options                                                                                                  */

static int
usage(const char *why, const char *what)
{
	fprintf(stderr, "fault_matrix: %s: '%s' (the file's header comment lists the options)\n", why, what);
	return -1;
}

/* "OP:SIZE:DEPTH" */
static int
parse_case(const char *text, struct mcase *c)
{
	char op[16];
	unsigned int size, depth;
	int used = 0;

	if (sscanf(text, "%15[a-z_]:%u:%u%n", op, &size, &depth, &used) != 3 || text[used] != '\0')
		return usage("--case: OP:SIZE:DEPTH", text);
	for (c->op = 0; c->op < OP_N && strcmp(op, op_names[c->op]) != 0; c->op++)
		;
	if (c->op == OP_N || size < 1 || size > SLOT_BYTES || depth < 1 || depth > MAX_DEPTH ||
	    (c->op == OP_FETCH_ADD && size != 8))
		return usage("--case: an operation, 1 .. 65536 bytes (atomics: 8), depth 1 .. 16", text);
	c->size = size;
	c->depth = depth;
	return 0;
}

/* Without --case: the matrix (an atomic is 8 bytes, so FETCH_ADD has one size). READ last: a READ that
 * fails leaves the responder's port a backlog of responses the next cases would wait behind. */
static void
default_cases(void)
{
	static const uint32_t sizes[] = { 64, 65536 }, depths[] = { 1, 16 };
	static const enum op order[] = { OP_WRITE, OP_SEND, OP_FETCH_ADD, OP_READ };

	for (unsigned int i = 0; i < RTE_DIM(order); i++)
		for (unsigned int s = 0, op = order[i]; s < (op == OP_FETCH_ADD ? 1 : 2); s++)
			for (unsigned int d = 0; d < 2; d++)
				opt.cases[opt.nb_cases++] = (struct mcase){ .op = op, .depth = depths[d],
					.size = op == OP_FETCH_ADD ? 8 : sizes[s] };
}

static int
parse_pattern(const char *name)
{
	if (strcmp(name, "all") == 0) {
		for (unsigned int i = 0; i < RTE_DIM(patterns); i++)
			opt.pattern[opt.nb_patterns++] = patterns[i].name;
		return 0;
	}
	for (unsigned int i = 0; i < RTE_DIM(patterns); i++) {
		if (strcmp(name, patterns[i].name) == 0 && opt.nb_patterns < MAX_PATTERNS) {
			opt.pattern[opt.nb_patterns++] = patterns[i].name;
			return 0;
		}
	}
	return usage("--pattern: none, uniform, burst, ack-only, reorder, duplicate, corrupt, rate or all", name);
}

static int
parse_number(const char *name, const char *v, unsigned long max, unsigned long *out)
{
	char *end;

	*out = strtoul(v, &end, 10);
	if (end == v || *end != '\0' || v[0] == '-' || *out > max)
		return usage(name, v);
	return 0;
}

static int
parse_one(const char *name, const char *v)
{
	unsigned long n = 0;

	if (strcmp(name, "--pattern") == 0)
		return parse_pattern(v);
	if (strcmp(name, "--case") == 0)
		return opt.nb_cases < MAX_CASES ? parse_case(v, &opt.cases[opt.nb_cases++]) : usage("too many", v);
	if (strcmp(name, "--duration") == 0)
		return (opt.duration = atof(v)) > 0 ? 0 : usage("--duration: seconds", v);
	if (strcmp(name, "--label") == 0)
		return cur_pattern = v, 0;
	if (strcmp(name, "--server") == 0)
		return opt.server_port = v, 0;
	if (strcmp(name, "--client") == 0)
		return opt.client = v, 0;
	if (strcmp(name, "--messages") == 0)
		return parse_number(name, v, 1u << 30, &n) || n == 0 ? -1 : (opt.messages = (uint32_t)n, 0);
	if (strcmp(name, "--seed") == 0)
		return parse_number(name, v, ULONG_MAX, &n) ? -1 : (opt.seed = n, 0);
	if (strcmp(name, "--timeout") == 0)
		return parse_number(name, v, 31, &n) || n == 0 ? -1 : (opt.timeout = (uint8_t)n, 0);
	if (strcmp(name, "--retry-cnt") == 0)
		return parse_number(name, v, 7, &n) ? -1 : (opt.retry_cnt = (uint8_t)n, 0);
	if (strcmp(name, "--max-resent-per-lost") == 0)
		return (opt.max_resent = atof(v)) > 0 ? 0 : usage("--max-resent-per-lost: a ratio above 0", v);
	if (strcmp(name, "--link-down") == 0)
		return parse_number(name, v, 3600000, &n) || n == 0 ? -1 : (opt.link_down_ms = (uint32_t)n, 0);
	return usage("unknown option", name);
}

/* The options before the first "--"; returns the index of that "--", or -1. */
static int
parse_options(int argc, char **argv)
{
	int i;

	opt = (struct opts){ .seed = 1, .timeout = 12, .retry_cnt = 7 };
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--expect-retry-exceeded") == 0)
			opt.expect_retry = 1;
		else if (strcmp(argv[i], "--announce") == 0)
			opt.announce = 1;
		else if (i + 1 >= argc || parse_one(argv[i], argv[i + 1]) != 0)
			return i + 1 >= argc ? usage("missing value", argv[i]) : -1;
		else
			i++;
	}
	if (i == argc)
		return usage("no EAL arguments", "--");
	if (opt.nb_cases == 0)
		default_cases();
	for (unsigned int k = 0; k < opt.nb_cases; k++) {
		opt.cases[k].messages = opt.messages != 0 ? opt.messages : opt.cases[k].depth == 1 ? 8 : 48;
		opt.cases[k].expect_retry = (uint32_t)opt.expect_retry;
	}
	if (opt.expect_retry && opt.link_down_ms == 0 && !opt.announce)
		return usage("--expect-retry-exceeded needs the link down", "--link-down or --announce");
	return i;
}

/* EAL arguments, then "--" and the engine's; in loopback a fault layer on both ports for --pattern and
 * --link-down to drive. */
static int
engine_args(int argc, char **argv, int at, char **out)
{
	int n = 0, has_engine = 0, has_fault = 0;

	out[n++] = argv[0];
	for (int i = at + 1; i < argc; i++) {
		has_engine |= strcmp(argv[i], "--") == 0;
		has_fault |= has_engine && strcmp(argv[i], "--fault") == 0;
		out[n++] = argv[i];
	}
	if (opt.server_port == NULL && opt.client == NULL && !has_fault) {
		if (!has_engine)
			out[n++] = "--";
		out[n++] = "--fault";
		out[n++] = "seed=1";
	}
	out[n] = NULL;
	return n;
}

static int
open_ends(void)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	int ret = -1;

	if (list != NULL && list[0] != NULL)
		ret = end_open(&A, list[0]);
	if (ret == 0 && opt.server_port == NULL && opt.client == NULL)
		ret = list[1] != NULL ? end_open(&B, list[1]) : usage("loopback needs two devices", "--port");
	rnic_free_device_list(list);
	return ret;
}

/* The device's counters over the whole run, those not 0 (the veth test checks that duplicates and bad
 * ICRCs arrived). */
static void
device_summary(const char *who, const struct end *e)
{
	struct rnic_counter c[128];
	int n;

	if (e->ctx == NULL)
		return;
	n = rnic_query_device_counters(e->ctx, c, (int)RTE_DIM(c));
	printf("{\"device\": \"%s\"", who);
	for (int i = 0; i < n && i < (int)RTE_DIM(c); i++)
		if (c[i].value != 0)
			printf(", \"%s\": %llu", c[i].name, (unsigned long long)c[i].value);
	printf("}\n");
}

int
main(int argc, char **argv)
{
	char **eargv = calloc((size_t)argc + 8, sizeof(char *));
	int at = parse_options(argc, argv), eargc, failed = 0;
	struct mcase end = { .end = 1 };

	if (at < 0 || eargv == NULL)
		return 2;
	eargc = engine_args(argc, argv, at, eargv);
	if (rnic_engine_init(eargc, eargv) < 0 || rnic_engine_start() != 0 || open_ends() != 0) {
		fprintf(stderr, "fault_matrix: the engine or its devices did not start\n");
		return 2;
	}
	if (opt.server_port != NULL) {
		failed = run_server() != 0;
	} else if (opt.client != NULL) {
		oob_fd = oob_connect_to(opt.client);
		if (oob_fd < 0)
			fprintf(stderr, "fault_matrix: cannot reach the server at %s\n", opt.client);
		failed = oob_fd < 0 || run_cases("fault-matrix-client") != 0;
		if (oob_fd >= 0 && send_all(&end, sizeof(end)) == 0)
			close(oob_fd);
	} else {
		cur_seed = opt.seed;
		for (unsigned int p = 0; p < RTE_MAX(opt.nb_patterns, 1u); p++) {
			cur_pattern = opt.nb_patterns > 0 ? opt.pattern[p] : "engine";
			failed |= run_cases(cur_pattern) != 0;
		}
	}
	device_summary(opt.server_port != NULL ? "server" : opt.client != NULL ? "client" : "requester", &A);
	device_summary("responder", &B);
	end_close(&A);
	end_close(&B);
	rnic_engine_stop();
	rnic_engine_fini();
	free(eargv);
	return failed;
}
