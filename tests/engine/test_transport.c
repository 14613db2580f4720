/* SPDX-License-Identifier: BSD-3-Clause
 * The requester's receive side against a scripted peer, frame by frame: the ACK, NAK, timer and READ
 * response cases of seed 003 §8.4 (tests 16-33), checked against IBA 9.7.
 *
 * Device A's stages run on the test's own thread (the engine has no worker lcore, so the test builds A's
 * pipeline and polls its stages); the test plays the peer on the other port of the loopback pair: it reads
 * what A sends and answers with frames it builds.
 * Run as: test_transport <EAL args with one lcore>
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "rnic.h"
#include "rnic_pipeline.h"
#include "rnic_requester.h"
#include "rnic_priv.h"
#include "rnic_wire.h"
#include "psn.h"
#include "test_env.h"
#include "test_pipeline.h"

#define PEER_QPN 0x123
#define RADDR 0x10000000ull	/* the peer's memory: never touched, the test makes up the answers */
#define RKEY 0x77
#define BUF (64 * 1024)
#define MAX_FRAMES 64
#define SLOW_NS 2000000000ull	/* bound of every wait */

static int g_argc;
static char **g_argv;
static struct rnic_context *ctx;
static struct rnic_pipeline *pipe_a;
static struct rte_mempool *pool;
static uint16_t peer_port;
static union rnic_gid peer_gid;
static struct rnic_pd *pd;
static struct rnic_cq *cq;
static struct rnic_mr *mr;
static uint8_t *buf;
static struct rnic_pkt_desc route;	/* the peer's L2-L4 towards A, from A's first request */
static int have_route;

/* What the peer saw of one of A's frames. */
struct frame {
	uint8_t op;			/* without the transport bits */
	uint32_t psn;
	uint8_t ack_req;
	uint64_t va;
	uint32_t dma_len;
	uint32_t payload_len;
	uint8_t syndrome;		/* ACK, NAK and READ responses */
	uint32_t msn;
};

static int
setup(void **state)
{
	struct rnic_device **list;
	struct rnic_context *peer;

	(void)state;
	ctx = test_env_open(g_argc, g_argv);
	if (ctx == NULL)
		return -1;
	list = rnic_get_device_list(NULL);
	peer_port = list[1]->port_id;
	peer = rnic_open_device(list[1]);
	rnic_free_device_list(list);
	if (peer == NULL || rnic_query_gid(peer, 1, 0, &peer_gid) != 0 || rnic_close_device(peer) != 0)
		return -1;
	/* A pipeline for A that no lcore runs: the test polls its stages. */
	pool = rte_pktmbuf_pool_create("transport_test", 1023, 64, 0, RTE_PKTMBUF_HEADROOM + 8192, SOCKET_ID_ANY);
	pipe_a = pool != NULL ? test_pipeline_attach(ctx, pool) : NULL;
	if (pipe_a == NULL)
		return -1;
	buf = aligned_alloc(4096, BUF);
	pd = rnic_alloc_pd(ctx);
	cq = rnic_create_cq(ctx, 256, NULL, NULL, 0);
	mr = pd != NULL && buf != NULL ? rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE) : NULL;
	return cq != NULL && mr != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	rnic_dereg_mr(mr);
	rnic_destroy_cq(cq);
	rnic_dealloc_pd(pd);
	free(buf);
	/* The engine frees A's pipeline with the device; the pool goes with the EAL. */
	return test_env_close(ctx);
}

static void
pump(void)
{
	test_pipeline_pump(pipe_a);
}

/* The frames A has sent since the last call (at most max), in order, A's stages not run. */
static int
peer_receive(struct frame *f, int max)
{
	struct rte_mbuf *m[MAX_FRAMES];
	int got = 0;

	for (uint16_t q = 0; q < 2; q++) {
		uint16_t n = rte_eth_rx_burst(peer_port, q, m, MAX_FRAMES);

		for (uint16_t i = 0; i < n; i++) {
			struct rnic_pkt_desc d;

			memset(&d, 0, sizeof(d));
			assert_int_equal(rnic_pkt_parse_mbuf(m[i], &d, 1), RNIC_DROP_NONE);
			assert_int_equal(d.dqpn, PEER_QPN);
			if (!have_route) {
				memset(&route, 0, sizeof(route));
				route.src_mac = d.dst_mac;
				route.dst_mac = d.src_mac;
				route.ip_version = d.ip_version;
				route.sgid = d.dgid;
				route.dgid = d.sgid;
				route.hop_limit = 64;
				route.udp_sport = d.udp_sport;
				route.pkey = RNIC_DEFAULT_PKEY;	/* the responder takes only its partition's */
				have_route = 1;
			}
			if (got < max)
				f[got++] = (struct frame){
					.op = d.opcode & 0x1f, .psn = d.psn, .ack_req = d.ack_req, .va = d.reth.va,
					.dma_len = d.reth.dma_len, .payload_len = d.payload_len,
					.syndrome = d.aeth.syndrome, .msn = d.aeth.msn,
				};
			rte_pktmbuf_free(m[i]);
		}
	}
	return got;
}

/* The frames A has sent since the last call (at most max), in order, A's stages run first. */
static int
peer_take(struct frame *f, int max)
{
	pump();
	return peer_receive(f, max);
}

/* Expect exactly these request PSNs (and opcodes, when ops is not NULL) from A, nothing more. */
static void
expect_frames(int n, const uint32_t *psn, const uint8_t *ops)
{
	struct frame f[MAX_FRAMES];
	int got = peer_take(f, MAX_FRAMES);

	assert_int_equal(got, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(f[i].psn, psn[i]);
		if (ops != NULL)
			assert_int_equal(f[i].op, ops[i]);
	}
}

/* Collect what A sends (one pump at least) until n frames came or a second passed: every one must be PSN
 * psn. */
static int
take_only(uint32_t psn, int n)
{
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz();
	struct frame f[MAX_FRAMES];
	int got = 0;

	do {
		int k = peer_take(f, MAX_FRAMES);

		for (int i = 0; i < k; i++)
			assert_int_equal(f[i].psn, psn);
		got += k;
	} while (got < n && rte_get_tsc_cycles() < end);
	return got;
}

/* The peer answers A's QP: an ACK/NAK (payload NULL), or a READ response with payload; A's stages not run. */
static void
peer_queue(struct rnic_qp *qp, uint8_t op, uint32_t psn, uint8_t syndrome, const uint8_t *payload, uint32_t len)
{
	struct rnic_pkt_desc d = route;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	assert_true(have_route);
	assert_non_null(m);
	d.opcode = (uint8_t)(RNIC_TRANSPORT_RC | op);
	d.dqpn = qp->qp_num;
	d.psn = psn & 0xffffff;
	d.aeth.syndrome = syndrome;
	d.payload = payload;
	d.payload_len = len;
	assert_true(rnic_pkt_build_mbuf(&d, m) >= 0);
	assert_int_equal(rte_eth_tx_burst(peer_port, 0, &m, 1), 1);
}

/* ... and A's stages run. */
static void
peer_send(struct rnic_qp *qp, uint8_t op, uint32_t psn, uint8_t syndrome, const uint8_t *payload, uint32_t len)
{
	peer_queue(qp, op, psn, syndrome, payload, len);
	pump();
}

static void
peer_ack(struct rnic_qp *qp, uint32_t psn, uint8_t syndrome)
{
	peer_send(qp, RNIC_OP_ACKNOWLEDGE, psn, syndrome, NULL, 0);
}

/* A READ response of len bytes of the pattern byte c. */
static void
peer_read_response(struct rnic_qp *qp, uint8_t op, uint32_t psn, uint8_t c, uint32_t len)
{
	static uint8_t data[4096];

	memset(data, c, len);
	peer_send(qp, op, psn, RNIC_AETH_ACK, data, len);
}

/* The three responses (First, Middle, Last) to a 3000-byte READ at PMTU 1024, from psn on. */
static void
peer_answer_read3000(struct rnic_qp *qp, uint32_t psn, uint8_t first, uint8_t middle, uint8_t last)
{
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, psn, first, 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, psn + 1, middle, 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, psn + 2, last, 952);
}

/* The 3000 bytes of peer_answer_read3000 landed at buf + 4096, each response's byte where it belongs, and
 * nothing past them. */
static void
expect_read3000_at_4096(uint8_t first, uint8_t middle, uint8_t last)
{
	assert_int_equal(buf[4096], first);
	assert_int_equal(buf[4096 + 1024], middle);
	assert_int_equal(buf[4096 + 2999], last);
	assert_int_equal(buf[4096 + 3000], 0);
}

/* An RC QP of A in RTS towards the peer, its PSNs starting at psn, rd_atomic READs and atomics each way
 * (0: 16). */
static struct rnic_qp *
new_qp_full(uint32_t psn, enum rnic_mtu mtu, uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry,
	    uint8_t rd_atomic)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 16, .max_send_sge = 4, .max_recv_sge = 4 },
	};
	const struct test_path path = { .mtu = mtu, .psn = psn, .timeout = timeout, .retry_cnt = retry_cnt,
					.rnr_retry = rnr_retry, .rd_atomic = rd_atomic };
	struct rnic_qp *qp = rnic_create_qp(pd, &ia);

	assert_non_null(qp);
	assert_int_equal(test_connect(qp, PEER_QPN, &peer_gid, &path), 0);
	return qp;
}

static struct rnic_qp *
new_qp_rnr(uint32_t psn, enum rnic_mtu mtu, uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry)
{
	return new_qp_full(psn, mtu, timeout, retry_cnt, rnr_retry, 0);
}

/* ... with no limit on RNR retries (rnr_retry 7). */
static struct rnic_qp *
new_qp(uint32_t psn, enum rnic_mtu mtu, uint8_t timeout, uint8_t retry_cnt)
{
	return new_qp_rnr(psn, mtu, timeout, retry_cnt, 7);
}

/* Post one signaled WQE (wr_id id) over the SGEs {off[i], len[i]} of the buffer. */
static void
post_sges(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t id, int nb, const uint32_t *off,
	  const uint32_t *len, uint32_t lkey)
{
	struct rnic_sge sge[4];
	struct rnic_send_wr wr = {
		.wr_id = id, .sg_list = sge, .num_sge = nb, .opcode = op, .send_flags = RNIC_SEND_SIGNALED,
	}, *bad;

	for (int i = 0; i < nb; i++)
		sge[i] = (struct rnic_sge){ .addr = (uintptr_t)(buf + off[i]), .length = len[i], .lkey = lkey };
	wr.wr.rdma.remote_addr = RADDR;
	wr.wr.rdma.rkey = RKEY;
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

static void
post(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t id, uint32_t off, uint32_t len)
{
	post_sges(qp, op, id, 1, &off, &len, mr->lkey);
}

/* Expect exactly n completions now, with these wr_ids and statuses. */
static void
expect_wc(int n, const uint64_t *id, const enum rnic_wc_status *st)
{
	struct rnic_wc wc[16];
	int got;

	pump();
	got = rnic_poll_cq(cq, 16, wc);
	assert_int_equal(got, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].wr_id, id[i]);
		assert_int_equal(wc[i].status, st[i]);
	}
}

static void
expect_ok(int n, uint64_t first_id)
{
	uint64_t id[16];
	enum rnic_wc_status st[16];

	for (int i = 0; i < n; i++) {
		id[i] = first_id + (uint64_t)i;
		st[i] = RNIC_WC_SUCCESS;
	}
	expect_wc(n, id, st);
}

/* Pump until A sends something (bounded): the TSC of the first frame seen and the frames. */
static int
wait_frames(struct frame *f, uint64_t *when)
{
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000000000.0 * SLOW_NS;
	int n;

	while ((n = peer_take(f, MAX_FRAMES)) == 0)
		assert_true(rte_get_tsc_cycles() < end);
	*when = rte_get_tsc_cycles();
	return n;
}

static void
post_sends(struct rnic_qp *qp, int n)
{
	for (int i = 0; i < n; i++)
		post(qp, RNIC_WR_SEND, (uint64_t)i, 64u * (uint32_t)i, 64);
}

/* Destroy the test's QP: every mbuf comes back (frames kept for resending included), nothing is left but
 * the spares A's stages keep for the frames they build. */
static void
done(struct rnic_qp *qp)
{
	struct frame f[MAX_FRAMES];

	assert_int_equal(rnic_destroy_qp(qp), 0);
	peer_take(f, MAX_FRAMES);
	assert_int_equal(rte_mempool_in_use_count(pool), pipe_a->req_tx.nb_spare + pipe_a->resp_tx.nb_spare);
	memset(buf, 0, BUF);
}

static const uint8_t SEND_ONLY = RNIC_OP_SEND_ONLY;

/* Tests 16-18: stale and future ACKs are ignored; an ACK releases exactly the PSNs up to it (coalesced). */
static void
test_ack_ranges(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[5] = { 10, 11, 12, 13, 14 };
	const uint8_t ops[5] = { SEND_ONLY, SEND_ONLY, SEND_ONLY, SEND_ONLY, SEND_ONLY };
	struct rnic_qp_counters c;

	(void)state;
	post_sends(qp, 5);
	expect_frames(5, psn, ops);
	peer_ack(qp, 9, RNIC_AETH_ACK);		/* RPSN < UPSN */
	expect_wc(0, NULL, NULL);
	peer_ack(qp, 15, RNIC_AETH_ACK);	/* RPSN >= NPSN */
	expect_wc(0, NULL, NULL);
	peer_ack(qp, 10, RNIC_AETH_ACK);	/* RPSN == UPSN: one */
	expect_ok(1, 0);
	peer_ack(qp, 13, RNIC_AETH_ACK);	/* 11-13 at once */
	expect_ok(3, 1);
	peer_ack(qp, 14, RNIC_AETH_ACK);
	expect_ok(1, 4);
	expect_frames(0, NULL, NULL);		/* nothing was resent */
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.packets_sent, 5);
	assert_int_equal(c.retransmits, 0);
	done(qp);
}

/* Test 19: an ACK past an unanswered READ releases what is before the READ and asks for the READ's data
 * again, alone: the SEND behind it went through (the ACK says so), and completes with the READ. */
static void
test_ack_past_read(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[3] = { 10, 11, 14 }, again[1] = { 11 };
	const uint8_t ops[3] = { SEND_ONLY, RNIC_OP_RDMA_READ_REQUEST, SEND_ONLY };

	(void)state;
	post(qp, RNIC_WR_SEND, 0, 0, 64);
	post(qp, RNIC_WR_RDMA_READ, 1, 4096, 3000);	/* responses 11-13 */
	post(qp, RNIC_WR_SEND, 2, 128, 64);
	expect_frames(3, psn, ops);
	peer_ack(qp, 14, RNIC_AETH_ACK);
	expect_ok(1, 0);
	expect_frames(1, again, ops + 1);
	peer_answer_read3000(qp, 11, 'a', 'b', 'c');
	expect_ok(2, 1);
	expect_frames(0, NULL, NULL);
	expect_read3000_at_4096('a', 'b', 'c');
	done(qp);
}

/* Tests 20-21: a sequence NAK releases the PSNs before it and resends from it (go-back-N). */
static void
test_seq_nak(void **state)
{
	const uint32_t psn[5] = { 20, 21, 22, 23, 24 };
	struct rnic_qp_counters c;
	struct rnic_qp *qp;
	uint64_t kept;

	(void)state;
	/* RPSN == UPSN: 20-24 again, nothing completes. */
	qp = new_qp(20, RNIC_MTU_1024, 20, 7);
	post_sends(qp, 5);
	expect_frames(5, psn, NULL);
	kept = test_counter(ctx, "resent_kept");
	peer_ack(qp, 20, RNIC_AETH_NAK_PSN_SEQ);
	expect_wc(0, NULL, NULL);
	expect_frames(5, psn, NULL);
	assert_int_equal(test_counter(ctx, "resent_kept") - kept, 5);	/* from the retransmit buffer, not gathered */
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.seq_naks_received, 1);
	assert_int_equal(c.retransmits, 1);
	assert_int_equal(c.packets_sent, 10);
	peer_ack(qp, 24, RNIC_AETH_ACK);
	expect_ok(5, 0);
	done(qp);

	/* RPSN 22: 20 and 21 complete (implicitly acknowledged), 22-24 again. */
	qp = new_qp(20, RNIC_MTU_1024, 20, 7);
	post_sends(qp, 5);
	expect_frames(5, psn, NULL);
	peer_ack(qp, 22, RNIC_AETH_NAK_PSN_SEQ);
	expect_ok(2, 0);
	expect_frames(3, psn + 2, NULL);
	peer_ack(qp, 24, RNIC_AETH_ACK);
	expect_ok(3, 2);
	done(qp);
}

/* Test 22: a sequence NAK past an unanswered READ: what is before the READ completes, the READ is asked
 * again alone (the NAK says the SEND behind it arrived), and the SEND completes with it. */
static void
test_seq_nak_past_read(void **state)
{
	struct rnic_qp *qp = new_qp(20, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[3] = { 20, 21, 22 };
	const uint8_t ops[3] = { SEND_ONLY, RNIC_OP_RDMA_READ_REQUEST, SEND_ONLY };

	(void)state;
	post(qp, RNIC_WR_SEND, 0, 0, 64);
	post(qp, RNIC_WR_RDMA_READ, 1, 4096, 512);
	post(qp, RNIC_WR_SEND, 2, 128, 64);
	expect_frames(3, psn, ops);
	peer_ack(qp, 23, RNIC_AETH_NAK_PSN_SEQ);
	expect_ok(1, 0);
	expect_frames(1, psn + 1, ops + 1);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 21, 'r', 512);
	expect_ok(2, 1);
	expect_frames(0, NULL, NULL);
	done(qp);
}

/* Test 23: an RNR NAK: nothing is resent before the RNR timer of the NAK has run out, then the packet at
 * UPSN. Timer field 14: 1.28 ms (IBA table 45). */
static void
test_rnr_nak(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[2] = { 10, 11 };
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;
	uint64_t nak_at, seen_at;

	(void)state;
	post_sends(qp, 2);
	expect_frames(2, psn, NULL);
	nak_at = rte_get_tsc_cycles();
	peer_ack(qp, 10, RNIC_AETH_RNR(14));
	expect_wc(0, NULL, NULL);
	assert_int_equal(wait_frames(f, &seen_at), 2);
	assert_int_equal(f[0].psn, 10);
	assert_int_equal(f[1].psn, 11);
	assert_true(seen_at - nak_at >= rte_get_tsc_hz() / 1000000 * 1280);
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.rnr_naks_received, 1);
	assert_int_equal(c.timeouts, 0);
	peer_ack(qp, 11, RNIC_AETH_ACK);
	expect_ok(2, 0);
	done(qp);
}

/* RNR exhaustion: rnr_retry 2 allows two RNR NAKs (each waited out, then the packet resent); the third
 * fails the WQE with RNR_RETRY_EXC_ERR, flushes the one behind it and sends nothing more. */
static void
test_rnr_exhausted(void **state)
{
	struct rnic_qp *qp = new_qp_rnr(10, RNIC_MTU_1024, 20, 7, 2);
	const uint32_t psn[2] = { 10, 11 };
	const uint64_t id[2] = { 0, 1 };
	const enum rnic_wc_status st[2] = { RNIC_WC_RNR_RETRY_EXC_ERR, RNIC_WC_WR_FLUSH_ERR };
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;
	uint64_t seen_at;

	(void)state;
	post_sends(qp, 2);
	expect_frames(2, psn, NULL);
	for (int i = 0; i < 2; i++) {
		peer_ack(qp, 10, RNIC_AETH_RNR(1));	/* 10 us */
		expect_wc(0, NULL, NULL);
		assert_int_equal(wait_frames(f, &seen_at), 2);
		assert_int_equal(f[0].psn, 10);
	}
	peer_ack(qp, 10, RNIC_AETH_RNR(1));
	expect_wc(2, id, st);
	expect_frames(0, NULL, NULL);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.rnr_naks_received, 3);
	done(qp);
}

/* Test 24: a remote operational error NAK: the PSNs before it complete, the NAKed WQE completes in error,
 * the rest are flushed, nothing is resent and the QP is in error. */
static void
test_error_nak(void **state)
{
	struct rnic_qp *qp = new_qp(30, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[5] = { 30, 31, 32, 33, 34 };
	const uint64_t id[5] = { 0, 1, 2, 3, 4 };
	const enum rnic_wc_status st[5] = { RNIC_WC_SUCCESS, RNIC_WC_SUCCESS, RNIC_WC_REM_OP_ERR,
					    RNIC_WC_WR_FLUSH_ERR, RNIC_WC_WR_FLUSH_ERR };
	struct rnic_qp_counters c;

	(void)state;
	post_sends(qp, 5);
	expect_frames(5, psn, NULL);
	peer_ack(qp, 32, RNIC_AETH_NAK_REMOTE_OP);
	expect_wc(5, id, st);
	expect_frames(0, NULL, NULL);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.remote_op_naks_received, 1);
	assert_int_equal(c.inv_req_naks_received + c.access_naks_received, 0);
	done(qp);
}

/* Test 25: the loss timer (timeout 8: 1.05 ms) expires no sooner than its time after the last progress, a
 * retry is spent, and what goes again is the packet at UPSN (the early probes before it send only that
 * one too); progress refills the retries. */
static void
test_loss_timer(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 8, 7);
	const uint32_t psn[3] = { 10, 11, 12 };
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;
	uint64_t sent_at, end = rte_get_tsc_cycles() + rte_get_tsc_hz() * 2;

	(void)state;
	post_sends(qp, 3);
	expect_frames(3, psn, NULL);
	sent_at = rte_get_tsc_cycles();
	peer_ack(qp, 10, RNIC_AETH_ACK);	/* progress: the timer restarts from here */
	expect_ok(1, 0);
	do {
		int n = peer_take(f, MAX_FRAMES);

		for (int i = 0; i < n; i++)
			assert_int_equal(f[i].psn, 11);
		assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
		assert_true(rte_get_tsc_cycles() < end);
	} while (c.timeouts == 0);
	assert_true(rte_get_tsc_cycles() - sent_at >= rte_get_tsc_hz() / 1000000 * 1048);
	assert_int_equal(c.timeouts, 1);
	assert_int_equal(rnic_qp_priv(qp)->req.retry_left, 6);
	peer_ack(qp, 12, RNIC_AETH_ACK);
	expect_ok(2, 1);
	/* Progress refilled the retry count. */
	assert_int_equal(rnic_qp_priv(qp)->req.retry_left, 7);
	done(qp);
}

/*
 * After a go-back-N (here: the rewind a timeout or a NAK makes, before anything is sent again) an ACK may
 * cover packets that went out before it: IBA 9.7.5.2 lets an ACK acknowledge any PSN sent. The requester
 * takes it, completes what it covers and sends again only what it does not: the first SEND's last packet
 * and the second SEND, not the two packets the ACK covered.
 */
static void
test_ack_past_go_back_n(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 14, 7);
	const uint32_t psn[4] = { 10, 11, 12, 13 }, again[2] = { 12, 13 };
	const uint8_t ops[2] = { RNIC_OP_SEND_LAST, RNIC_OP_SEND_ONLY };

	(void)state;
	post(qp, RNIC_WR_SEND, 0, 0, 3000);
	post(qp, RNIC_WR_SEND, 1, 4096, 64);
	expect_frames(4, psn, NULL);
	assert_int_equal(rnic_requester_rewind(pipe_a, qp, 10), 0);
	peer_ack(qp, 11, RNIC_AETH_ACK);	/* covers PSNs 10 and 11, sent before the rewind */
	expect_frames(2, again, ops);
	expect_wc(0, NULL, NULL);
	peer_ack(qp, 13, RNIC_AETH_ACK);
	expect_ok(2, 0);
	/* An ACK past everything sent is still refused. */
	peer_ack(qp, 20, RNIC_AETH_ACK);
	assert_int_equal(rnic_qp_priv(qp)->req.una, 14);
	done(qp);
}

/* Test 26: the loss timer with no retry left: the oldest WQE fails with RETRY_EXC_ERR, the rest are
 * flushed, the QP is in error and sends nothing more. */
static void
test_retry_exhausted(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 8, 0);
	const uint32_t psn[2] = { 10, 11 };
	const uint64_t id[2] = { 0, 1 };
	const enum rnic_wc_status st[2] = { RNIC_WC_RETRY_EXC_ERR, RNIC_WC_WR_FLUSH_ERR };
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz() * 2;

	(void)state;
	post_sends(qp, 2);
	expect_frames(2, psn, NULL);
	while (qp->state != RNIC_QPS_ERR) {
		assert_true(rte_get_tsc_cycles() < end);
		take_only(10, 0);	/* the early probes before the timer: UPSN only */
	}
	expect_wc(2, id, st);
	expect_frames(0, NULL, NULL);
	done(qp);
}

/* Test 27: a READ Response Only at UPSN lands in the READ's buffer and completes it. */
static void
test_read_only_response(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[1] = { 10 };
	const uint8_t ops[1] = { RNIC_OP_RDMA_READ_REQUEST };

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 100, 512);
	expect_frames(1, psn, ops);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 10, 'o', 512);
	expect_ok(1, 0);
	assert_int_equal(buf[99], 0);
	assert_int_equal(buf[100], 'o');
	assert_int_equal(buf[611], 'o');
	assert_int_equal(buf[612], 0);
	done(qp);
}

/* Test 28: READ responses First then Last (the Middle lost): the Last is placed where it belongs and the
 * Middle alone asked again at once (IBA 9.7.5.2.6: a READ request for it, at its PSN); its answer (a Last,
 * as a responder may say for a part asked alone) completes the READ. */
static void
test_read_response_gap(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 0, 3000);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].dma_len, 3000);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, 'f', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 12, 'l', 952);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_RDMA_READ_REQUEST);
	assert_int_equal(f[0].psn, 11);
	assert_int_equal(f[0].va, RADDR + 1024);
	assert_int_equal(f[0].dma_len, 1024);
	expect_wc(0, NULL, NULL);
	assert_int_equal(buf[1024], 0);			/* the Middle is missing */
	assert_int_equal(buf[2048], 'l');		/* the Last is in */
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.retransmits, 1);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 11, 'm', 1024);
	expect_ok(1, 0);
	assert_int_equal(buf[1023], 'f');
	assert_int_equal(buf[1024], 'm');
	assert_int_equal(buf[2047], 'm');
	assert_int_equal(buf[2999], 'l');
	assert_int_equal(buf[3000], 0);
	expect_frames(0, NULL, NULL);
	done(qp);
}

/* Test 29 with data already in: the second READ's First response arrives (and is placed) while the first
 * READ is unanswered, so A asks for the first READ again, alone: the second's responses keep coming and
 * are placed where they belong (one already placed is not placed twice), the SEND behind them is not sent
 * again. */
static void
test_second_read_partly_answered_first(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct frame f[MAX_FRAMES];

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 0, 2000);	/* 10-11 */
	post(qp, RNIC_WR_RDMA_READ, 1, 4096, 3000);	/* 12-14 */
	post(qp, RNIC_WR_SEND, 2, 8192, 64);		/* 15 */
	assert_int_equal(peer_take(f, MAX_FRAMES), 3);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 12, 'b', 1024);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].psn, 10);
	assert_int_equal(f[0].va, RADDR);
	assert_int_equal(f[0].dma_len, 2000);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, 'x', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 11, 'y', 976);
	expect_ok(1, 0);
	peer_answer_read3000(qp, 12, 'z', 'c', 'd');	/* the First again: already placed, dropped */
	expect_ok(1, 1);
	peer_ack(qp, 15, RNIC_AETH_ACK);
	expect_ok(1, 2);
	expect_read3000_at_4096('b', 'c', 'd');
	expect_frames(0, NULL, NULL);
	done(qp);
}

/* Test 29: two READs outstanding and the second's response comes first: the first READ's responses were
 * lost, and it alone is asked again (the second's data is in). Both complete once the first is answered. */
static void
test_second_read_answered_first(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[2] = { 10, 12 };
	const uint8_t ops[2] = { RNIC_OP_RDMA_READ_REQUEST, RNIC_OP_RDMA_READ_REQUEST };
	struct frame f[MAX_FRAMES];

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 0, 2000);	/* 10-11 */
	post(qp, RNIC_WR_RDMA_READ, 1, 4096, 512);	/* 12 */
	expect_frames(2, psn, ops);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 12, 's', 512);
	expect_wc(0, NULL, NULL);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_RDMA_READ_REQUEST);
	assert_int_equal(f[0].psn, 10);
	assert_int_equal(f[0].dma_len, 2000);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, 'x', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 11, 'y', 976);
	expect_ok(2, 0);
	assert_int_equal(buf[0], 'x');
	assert_int_equal(buf[1999], 'y');
	assert_int_equal(buf[4096], 's');
	assert_int_equal(buf[4096 + 511], 's');
	expect_frames(0, NULL, NULL);
	done(qp);
}

/*
 * max_rd_atomic 2: a READ whose data came while an earlier READ is unanswered still counts until it completes
 * (retires), so the third READ waits: the responder keeps two resources, and a duplicate of either READ must
 * still find its own (counted off when its data came, the third READ went out while the first was asked
 * again: three READs' worth of requests for two resources).
 */
static void
test_read_depth_until_retired(void **state)
{
	struct rnic_qp *qp = new_qp_full(10, RNIC_MTU_1024, 20, 7, 7, 2);
	const uint32_t psn[2] = { 10, 12 };
	const uint8_t ops[2] = { RNIC_OP_RDMA_READ_REQUEST, RNIC_OP_RDMA_READ_REQUEST };

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 0, 2000);	/* 10-11 */
	post(qp, RNIC_WR_RDMA_READ, 1, 4096, 512);	/* 12 */
	post(qp, RNIC_WR_RDMA_READ, 2, 8192, 512);	/* 13, once the two complete */
	expect_frames(2, psn, ops);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 12, 's', 512);
	expect_frames(1, psn, ops);			/* the first asked again, not the third */
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, 'x', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 11, 'y', 976);
	expect_ok(2, 0);
	expect_frames(1, (const uint32_t[]){ 13 }, ops);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 13, 't', 512);
	expect_ok(1, 2);
	done(qp);
}

/* The four responses (First, Middle, Middle, Last) to a 4 KB READ at PMTU 1024, from psn on, but those at
 * skip and skip2 (none: -1). */
static void
peer_answer_read4k(struct rnic_qp *qp, uint32_t psn, int skip, int skip2)
{
	static const uint8_t op[4] = { RNIC_OP_RDMA_READ_RESPONSE_FIRST, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE,
				       RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, RNIC_OP_RDMA_READ_RESPONSE_LAST };

	for (int i = 0; i < 4; i++)
		if (i != skip && i != skip2)
			peer_read_response(qp, op[i], psn + (uint32_t)i, 'r', 1024);
}

/* Answer READ psn (4 KB: 4 responses) but for responses skip and skip2 (none: -1), which it then asks for
 * again, from skip on; answer those, and the READ (wr_id id) completes. */
static void
peer_answer_read4k_lost(struct rnic_qp *qp, uint32_t psn, int skip, int skip2, uint64_t id)
{
	peer_answer_read4k(qp, psn, skip, skip2);
	expect_frames(1, (const uint32_t[]){ psn + (uint32_t)skip }, NULL);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, psn + (uint32_t)skip, 'r', 1024);
	if (skip2 >= 0)
		peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, psn + (uint32_t)skip2, 'r', 1024);
	expect_ok(1, id);
}

/*
 * The READ window: 4 KB READs (4 responses each) go out as posted while responses are lost one at a time (a
 * lossy path). Two lost in a row (an overflowing queue) halve it, from the 32 PSNs outstanding to 16, and it
 * grows one PSN per window answered: the next READ goes only when its 4 PSNs fit (after READ 5: 12
 * outstanding, window 17). A run lost by a READ sent before the cut is of the same overflow and cuts nothing
 * more (window 17: 12 + 4 fit; 8 would hold READ 10 back). Without it the responses of every posted READ
 * (max_rd_atomic) came at once, overran a rate limit's queue, and so did the responses asked again.
 */
static void
test_read_window(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct frame f[MAX_FRAMES];

	(void)state;
	for (int i = 0; i < 8; i++)
		post(qp, RNIC_WR_RDMA_READ, (uint64_t)i, 4096u * (uint32_t)i, 4096);	/* PSNs 10 + 4i */
	assert_int_equal(peer_take(f, MAX_FRAMES), 8);
	peer_answer_read4k_lost(qp, 10, 1, -1, 0);		/* one lost: no cut */
	post(qp, RNIC_WR_RDMA_READ, 8, 0, 4096);
	expect_frames(1, (const uint32_t[]){ 42 }, NULL);
	peer_answer_read4k_lost(qp, 14, 1, 2, 1);		/* two in a row: window 16 */
	for (int i = 9; i < 13; i++)
		post(qp, RNIC_WR_RDMA_READ, (uint64_t)i, 4096u * (uint32_t)i, 4096);
	for (int i = 2; i < 5; i++) {
		peer_answer_read4k(qp, 10 + 4u * (uint32_t)i, -1, -1);
		expect_ok(1, (uint64_t)i);
		expect_frames(0, NULL, NULL);			/* 24, 20, 16 outstanding */
	}
	peer_answer_read4k(qp, 30, -1, -1);
	expect_ok(1, 5);
	expect_frames(1, (const uint32_t[]){ 46 }, NULL);	/* 12 + 4 <= 17 */
	peer_answer_read4k_lost(qp, 34, 1, 2, 6);		/* READ 6 went before the cut */
	expect_frames(1, (const uint32_t[]){ 50 }, NULL);	/* 12 + 4 <= 17 */
	peer_answer_read4k(qp, 38, -1, -1);
	peer_answer_read4k(qp, 42, -1, -1);
	expect_ok(2, 7);
	expect_frames(2, (const uint32_t[]){ 54, 58 }, NULL);
	for (int i = 9; i < 13; i++) {
		peer_answer_read4k(qp, 46 + 4u * (uint32_t)(i - 9), -1, -1);
		expect_ok(1, (uint64_t)i);
	}
	done(qp);
}

/* Test 30: a READ's first response acknowledges the SEND before it, which completes at once. */
static void
test_read_response_acks_before(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[2] = { 10, 11 };

	(void)state;
	post(qp, RNIC_WR_SEND, 0, 0, 64);
	post(qp, RNIC_WR_RDMA_READ, 1, 4096, 2000);
	expect_frames(2, psn, NULL);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 11, 'p', 1024);
	expect_ok(1, 0);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 12, 'q', 976);
	expect_ok(1, 1);
	assert_int_equal(buf[4096], 'p');
	assert_int_equal(buf[4096 + 1999], 'q');
	done(qp);
}

/*
 * The window and AckReq (test arguments: a 16 KB window, 16 PSNs at the 1 KB path MTU, an AckReq every 4
 * packets): a 24-packet WRITE goes out 16 packets at first, asking for an ACK on every fourth, and the rest
 * as ACKs move the window (a message longer than the window asked only on its last packet: its first
 * window waited for the loss timer, every time).
 */
static void
test_window_and_ack_requests(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;

	(void)state;
	post(qp, RNIC_WR_RDMA_WRITE, 0, 0, 24 * 1024);		/* PSNs 10-33 */
	assert_int_equal(peer_take(f, MAX_FRAMES), 16);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(f[i].psn, 10 + i);
		assert_int_equal(f[i].ack_req, i % 4 == 3);
	}
	peer_ack(qp, 17, RNIC_AETH_ACK);
	assert_int_equal(peer_take(f, MAX_FRAMES), 8);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(f[i].psn, 26 + i);
		assert_int_equal(f[i].ack_req, i == 3 || i == 7);	/* the fourth, and the last */
	}
	expect_wc(0, NULL, NULL);
	peer_ack(qp, 33, RNIC_AETH_ACK);
	expect_ok(1, 0);
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.timeouts + c.retransmits, 0);
	done(qp);

	/* READs' responses do not count against the window (max_rd_atomic bounds them): three 8-response
	 * READs go out at once, and a WRITE behind them too. */
	qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	for (int i = 0; i < 3; i++)
		post(qp, RNIC_WR_RDMA_READ, (uint64_t)i, 8192u * (uint32_t)i, 8192);
	post(qp, RNIC_WR_RDMA_WRITE, 3, 32768, 2048);
	expect_frames(5, (const uint32_t[]){ 10, 18, 26, 34, 35 }, (const uint8_t[]){ RNIC_OP_RDMA_READ_REQUEST,
		      RNIC_OP_RDMA_READ_REQUEST, RNIC_OP_RDMA_READ_REQUEST, RNIC_OP_RDMA_WRITE_FIRST,
		      RNIC_OP_RDMA_WRITE_LAST });
	done(qp);

	/* Small messages count by their bytes: 40 SENDs of 64 B (about 5 KB of frames) go at once, not the
	 * window's 16 full packets. */
	qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	post_sends(qp, 40);
	assert_int_equal(peer_take(f, MAX_FRAMES), 40);
	peer_ack(qp, 49, RNIC_AETH_ACK);
	expect_ok(16, 0);
	expect_ok(16, 16);
	expect_ok(8, 32);
	done(qp);
}

/*
 * A QP that hears nothing (timeout 12: 16.8 ms) sends only the packet at UPSN again, asking for an ACK
 * (early probes first, then the loss timer), and nothing more until a response makes progress: a peer that
 * was only slow costs those packets (here its ACK says all three arrived), not the window (all three went
 * again, with every packet in flight).
 */
static void
test_loss_probe(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 12, 7);
	const uint32_t psn[3] = { 10, 11, 12 };

	(void)state;
	post_sends(qp, 3);
	expect_frames(3, psn, NULL);
	assert_int_equal(take_only(10, 2), 2);
	peer_ack(qp, 12, RNIC_AETH_ACK);
	expect_ok(3, 0);
	expect_frames(0, NULL, NULL);
	done(qp);

	/* A real loss: the probe's ACK makes progress, and the rest goes again at once. */
	qp = new_qp(10, RNIC_MTU_1024, 12, 7);
	post_sends(qp, 3);
	expect_frames(3, psn, NULL);
	assert_int_equal(take_only(10, 1), 1);
	peer_ack(qp, 10, RNIC_AETH_ACK);
	expect_ok(1, 0);
	expect_frames(2, psn + 1, NULL);
	peer_ack(qp, 12, RNIC_AETH_ACK);
	expect_ok(2, 1);
	done(qp);
}

/*
 * The early probe: a QP that hears nothing sends the packet at UPSN again after a few round trips of the
 * path or a 64th of the loss timer, not after the timer (with rnic-perf's and perftest's 67 ms, a lost ACK
 * or NAK stalled a QP for the whole 67 ms), and spends no retry; the probe's answer makes progress.
 */
static void
test_early_probe(void **state)
{
	/* Timeout 18: a loss timer of about 1.07 s, so that a machine too loaded to run the stages for tens of
	 * ms does not let the loss timer come first; the probe must still come well before it. */
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 18, 7);
	const uint32_t psn[3] = { 10, 11, 12 };
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;
	uint64_t sent_at, seen_at;

	(void)state;
	post_sends(qp, 3);
	expect_frames(3, psn, NULL);
	sent_at = rte_get_tsc_cycles();
	assert_int_equal(wait_frames(f, &seen_at), 1);
	assert_int_equal(f[0].psn, 10);
	assert_true(seen_at - sent_at < rte_get_tsc_hz() / 1000 * 500);	/* half the loss timer */
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.timeouts, 0);
	assert_int_equal(rnic_qp_priv(qp)->req.retry_left, 7);
	assert_true(test_counter(ctx, "probes") > 0);
	peer_ack(qp, 12, RNIC_AETH_ACK);
	expect_ok(3, 0);
	done(qp);
}

/*
 * The machine takes the lcore away (here: the test's thread, which runs A's stages, sleeps) for longer than
 * the loss timer, while the peer's ACK waits in the port's queue: the timers leave the time away out
 * (rnic_requester_clock), so the ACK is read before any timer runs out, and nothing is sent again. Their
 * clock was the TSC's: the requester's first pass back expired the loss timer before the completer saw the
 * ACK, spent a retry and went back (on a loaded machine, QPs whose peer had answered long before ran out
 * of retries so). A peer that answers nothing still times out while the lcore runs.
 */
static void
test_lcore_away(void **state)
{
	/* Timeout 16: a loss timer of 268 ms, and an early probe after a 64th of it, past the millisecond a
	 * gap counts before it is time away (RNIC_AWAY_US). */
	struct rnic_qp *qp = new_qp(20, RNIC_MTU_1024, 16, 7);
	const uint32_t psn[1] = { 20 };
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;
	uint64_t end;

	(void)state;
	post_sends(qp, 1);
	expect_frames(1, psn, NULL);
	rte_delay_us_sleep(400 * 1000);		/* away: one and a half loss timers long */
	peer_ack(qp, 20, RNIC_AETH_ACK);
	assert_int_equal(peer_receive(f, MAX_FRAMES), 0);	/* nothing sent again */
	expect_ok(1, 0);
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.timeouts, 0);
	assert_int_equal(c.retransmits, 0);
	/* The lcore running, an unanswered request times out within a few loss timers. */
	post_sends(qp, 1);
	end = rte_get_tsc_cycles() + 2 * rte_get_tsc_hz();
	do {
		pump();
		peer_receive(f, MAX_FRAMES);	/* the request, its early probes */
		assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	} while (c.timeouts == 0 && rte_get_tsc_cycles() < end);
	assert_int_equal(c.timeouts, 1);
	peer_receive(f, MAX_FRAMES);
	peer_ack(qp, 21, RNIC_AETH_ACK);
	expect_ok(1, 0);
	done(qp);
}

/*
 * A READ's round trip times the path too: answered 0.8 ms after they went, sixteen READs make the smoothed
 * round trip most of 0.8 ms, and a READ left unanswered is asked again after four of them, not after a 64th
 * of the 67 ms loss timer (1 ms; READs were not timed: behind a rate limit's queue holding 1 ms of
 * responses, every READ was asked again while its responses were on their way, and the answers overran the
 * queue again). A READ asked again meanwhile (the test's thread held up) is let be.
 */
static void
test_read_round_trip(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 14, 7);
	struct frame f[MAX_FRAMES];
	uint64_t sent_at, seen_at;
	int n;

	(void)state;
	for (uint32_t i = 0; i <= 16; i++) {
		post(qp, RNIC_WR_RDMA_READ, i, 0, 512);
		n = peer_take(f, MAX_FRAMES);
		assert_true(n >= 1);
		assert_int_equal(f[n - 1].psn, 10 + i);
		if (i == 16)
			break;
		rte_delay_us_block(800);
		peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 10 + i, 'r', 512);
		expect_ok(1, i);
	}
	sent_at = rte_get_tsc_cycles();
	assert_int_equal(wait_frames(f, &seen_at), 1);
	assert_int_equal(f[0].psn, 26);
	assert_true(seen_at - sent_at >= rte_get_tsc_hz() / 1000 * 2);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 26, 'r', 512);
	expect_ok(1, 16);
	done(qp);
}

/* Tests 31-32: READ responses scattered over the WQE's entries: one 8 KB entry filled by two 4 KB responses
 * (4 KB MTU), and 1 KB responses spanning entries of 1000 and 2000 bytes. */
static void
test_read_scatter(void **state)
{
	const uint32_t off[2] = { 0, 8192 }, len[2] = { 1000, 2000 };
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_4096, 20, 7);
	struct frame f[MAX_FRAMES];

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 0, 8192);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, '1', 4096);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 11, '2', 4096);
	expect_ok(1, 0);
	assert_int_equal(buf[4095], '1');
	assert_int_equal(buf[4096], '2');
	assert_int_equal(buf[8191], '2');
	assert_int_equal(buf[8192], 0);
	done(qp);

	qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	post_sges(qp, RNIC_WR_RDMA_READ, 0, 2, off, len, mr->lkey);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	peer_answer_read3000(qp, 10, 'a', 'b', 'c');
	expect_ok(1, 0);
	assert_int_equal(buf[999], 'a');
	assert_int_equal(buf[1000], 0);			/* past the first entry */
	assert_int_equal(buf[8192], 'a');		/* bytes 1000-1023 of the first response */
	assert_int_equal(buf[8192 + 23], 'a');
	assert_int_equal(buf[8192 + 24], 'b');
	assert_int_equal(buf[8192 + 1999], 'c');
	assert_int_equal(buf[8192 + 2000], 0);
	done(qp);
}

/* READs into one SGE whose pages follow each other (the completer copies their responses to the address the
 * requester translated when the READ started): across a page boundary, and over three pages (each response
 * translated). */
static void
test_read_one_run(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct frame f[MAX_FRAMES];

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 4096 - 1000, 3000);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	peer_answer_read3000(qp, 10, 'a', 'b', 'c');
	expect_ok(1, 0);
	assert_int_equal(buf[4096 - 1001], 0);
	assert_int_equal(buf[4096 - 1000], 'a');
	assert_int_equal(buf[4096 + 23], 'a');
	assert_int_equal(buf[4096 + 24], 'b');
	assert_int_equal(buf[4096 + 1048], 'c');
	assert_int_equal(buf[4096 + 1999], 'c');
	assert_int_equal(buf[4096 + 2000], 0);
	done(qp);

	qp = new_qp(10, RNIC_MTU_4096, 20, 7);
	post(qp, RNIC_WR_RDMA_READ, 0, 100, 8192);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, '1', 4096);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 11, '2', 4096);
	expect_ok(1, 0);
	assert_int_equal(buf[99], 0);
	assert_int_equal(buf[100], '1');
	assert_int_equal(buf[4195], '1');
	assert_int_equal(buf[4196], '2');
	assert_int_equal(buf[8291], '2');
	assert_int_equal(buf[8292], 0);
	done(qp);
}

/*
 * The completer pushes a burst's completions together, by the end of the burst (rnic_cq_defer_slot): one pass of
 * the parser and the completer over READ responses with the ACK of a WRITE between them leaves every
 * completion visible, in the order of the WQEs; with a NAK for the last READ, its error comes after the
 * successes before it.
 */
static void
test_read_burst_completions(void **state)
{
	static const uint8_t data[64];
	struct frame f[MAX_FRAMES];
	struct rnic_wc wc[16];

	(void)state;
	for (int nak = 0; nak < 2; nak++) {
		struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);

		for (uint32_t i = 0; i < 8; i++)
			post(qp, i == 3 ? RNIC_WR_RDMA_WRITE : RNIC_WR_RDMA_READ, i, 64 * i, 64);
		assert_int_equal(peer_take(f, MAX_FRAMES), 8);
		for (uint32_t i = 0; i < 8; i++) {
			if (i == 7 && nak)
				peer_queue(qp, RNIC_OP_ACKNOWLEDGE, 10 + i, RNIC_AETH_NAK_REMOTE_ACCESS, NULL, 0);
			else if (i == 3)
				peer_queue(qp, RNIC_OP_ACKNOWLEDGE, 10 + i, RNIC_AETH_ACK, NULL, 0);
			else
				peer_queue(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 10 + i, RNIC_AETH_ACK, data, 64);
		}
		assert_int_equal(rnic_stage_parser(pipe_a, 64), 8);
		assert_int_equal(rnic_stage_completer(pipe_a, 64), 8);
		assert_int_equal(rnic_poll_cq(cq, 16, wc), 8);	/* nothing run in between */
		for (uint32_t i = 0; i < 8; i++) {
			assert_int_equal(wc[i].wr_id, i);
			assert_int_equal(wc[i].status, i == 7 && nak ? RNIC_WC_REM_ACCESS_ERR : RNIC_WC_SUCCESS);
		}
		assert_int_equal(qp->state, nak ? RNIC_QPS_ERR : RNIC_QPS_RTS);
		done(qp);
	}
}

/*
 * The progress of a run of READ responses in a burst is made once, at its end: the retry counts refilled
 * (spent here by hand) and the loss timer set for the READ still out, whose answer is lost: the QP asks
 * for it again, and completes it when it comes.
 */
static void
test_read_burst_progress(void **state)
{
	static const uint8_t data[64];
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 12, 7);
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;
	struct frame f[MAX_FRAMES];

	(void)state;
	for (uint32_t i = 0; i < 3; i++)
		post(qp, RNIC_WR_RDMA_READ, i, 64 * i, 64);
	assert_int_equal(peer_take(f, MAX_FRAMES), 3);
	r->retry_left = 0;
	peer_queue(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 10, RNIC_AETH_ACK, data, 64);
	peer_queue(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 11, RNIC_AETH_ACK, data, 64);
	assert_int_equal(rnic_stage_parser(pipe_a, 64), 2);
	assert_int_equal(rnic_stage_completer(pipe_a, 64), 2);
	assert_null(pipe_a->progress_qp);
	assert_int_equal(r->retry_left, 7);
	assert_int_equal(r->una, 12);
	assert_int_not_equal(r->deadline, 0);
	expect_ok(2, 0);
	assert_int_equal(take_only(12, 1), 1);	/* READ 2 asked for again */
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 12, 'x', 64);
	expect_ok(1, 2);
	assert_int_equal(buf[128], 'x');
	done(qp);
}

/*
 * A READ's local key: a bad one, or a region without local write, fails the READ before it is sent (a local
 * protection error); a region deregistered while the READ is out takes none of the responses that come after
 * (the one before it landed): the READ fails with a local protection error and the QP with it.
 */
static void
test_read_local_keys(void **state)
{
	const uint32_t off = 4096, len = 3000;
	const uint64_t id[2] = { 0, 1 };
	const enum rnic_wc_status st[2] = { RNIC_WC_LOC_PROT_ERR, RNIC_WC_WR_FLUSH_ERR };
	struct rnic_mr *read_only = rnic_reg_mr(pd, buf, BUF, 0);
	struct rnic_mr *target = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE);
	struct rnic_qp *qp;
	struct frame f[MAX_FRAMES];

	(void)state;
	assert_non_null(read_only);
	assert_non_null(target);
	for (int k = 0; k < 2; k++) {
		qp = new_qp(10, RNIC_MTU_1024, 20, 7);
		post_sges(qp, RNIC_WR_RDMA_READ, 0, 1, &off, &len, k == 0 ? mr->lkey ^ 0x100 : read_only->lkey);
		post(qp, RNIC_WR_RDMA_READ, 1, off, len);
		expect_frames(0, NULL, NULL);
		expect_wc(2, id, st);
		assert_int_equal(qp->state, RNIC_QPS_ERR);
		done(qp);
	}

	qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	post_sges(qp, RNIC_WR_RDMA_READ, 0, 1, &off, &len, target->lkey);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, 'f', 1024);
	assert_int_equal(rnic_dereg_mr(target), 0);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, 11, 'm', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, 12, 'l', 952);
	expect_wc(1, id, st);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	assert_int_equal(buf[4096 + 1023], 'f');
	assert_int_equal(buf[4096 + 1024], 0);
	assert_int_equal(buf[4096 + 2999], 0);
	done(qp);
	assert_int_equal(rnic_dereg_mr(read_only), 0);
}

/* Test 33 (and 7): a WQE with a bad L_Key behind an outstanding SEND sends nothing; it completes in error
 * only after the SEND is acknowledged and completes; then the QP is in error and later WQEs are flushed. */
static void
test_bad_wqe_behind_outstanding(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[1] = { 10 }, off = 0, len = 64;
	const uint64_t id[3] = { 0, 1, 2 };
	const enum rnic_wc_status st[3] = { RNIC_WC_SUCCESS, RNIC_WC_LOC_PROT_ERR, RNIC_WC_WR_FLUSH_ERR };

	(void)state;
	post(qp, RNIC_WR_SEND, 0, 0, 64);
	post_sges(qp, RNIC_WR_SEND, 1, 1, &off, &len, mr->lkey ^ 0x100);
	post(qp, RNIC_WR_SEND, 2, 0, 64);
	expect_frames(1, psn, NULL);
	expect_wc(0, NULL, NULL);
	assert_int_equal(qp->state, RNIC_QPS_RTS);
	peer_ack(qp, 10, RNIC_AETH_ACK);
	expect_wc(3, id, st);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	expect_frames(0, NULL, NULL);
	done(qp);
}

/* The peer sends WRITE Only requests at these PSNs to A's QP in one burst (remote address: the buffer). */
static void
peer_writes(struct rnic_qp *qp, struct rnic_mr *target, const uint32_t *psn, int n)
{
	static const uint8_t data[64];
	struct rte_mbuf *m[8];

	assert_true(have_route && n <= 8);
	for (int i = 0; i < n; i++) {
		struct rnic_pkt_desc d = route;

		d.opcode = RNIC_TRANSPORT_RC | RNIC_OP_RDMA_WRITE_ONLY;
		d.dqpn = qp->qp_num;
		d.psn = psn[i];
		d.ack_req = 1;
		d.reth.va = (uintptr_t)buf + 64u * (uint32_t)i;
		d.reth.rkey = target->rkey;
		d.reth.dma_len = sizeof(data);
		d.payload = data;
		d.payload_len = sizeof(data);
		m[i] = rte_pktmbuf_alloc(pool);
		assert_non_null(m[i]);
		assert_true(rnic_pkt_build_mbuf(&d, m[i]) >= 0);
	}
	assert_int_equal(rte_eth_tx_burst(peer_port, 0, m, (uint16_t)n), n);
}

/* A request the peer sends A's QP (ack_req set): a WRITE/READ with its RETH, or a SEND; WRITE and SEND carry
 * len bytes of payload (zeros). */
struct request {
	uint8_t op;
	uint32_t psn;
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
	uint32_t len;
	uint8_t no_ack_req;		/* AckReq clear */
};

/* The peer sends these requests in one burst, A's stages not run. */
static void
peer_send_requests(struct rnic_qp *qp, const struct request *r, int n)
{
	static const uint8_t zeros[4096];
	struct rte_mbuf *m[8];

	assert_true(have_route && n <= 8);
	for (int i = 0; i < n; i++) {
		struct rnic_pkt_desc d = route;

		assert_true(r[i].len <= sizeof(zeros));
		m[i] = rte_pktmbuf_alloc(pool);
		assert_non_null(m[i]);
		d.opcode = (uint8_t)(RNIC_TRANSPORT_RC | r[i].op);
		d.dqpn = qp->qp_num;
		d.psn = r[i].psn & 0xffffff;
		d.ack_req = !r[i].no_ack_req;
		d.reth.va = r[i].va;
		d.reth.rkey = r[i].rkey;
		d.reth.dma_len = r[i].dma_len;
		d.payload = r[i].len != 0 ? zeros : NULL;
		d.payload_len = r[i].len;
		assert_true(rnic_pkt_build_mbuf(&d, m[i]) >= 0);
	}
	assert_int_equal(rte_eth_tx_burst(peer_port, 0, m, (uint16_t)n), n);
}

/* The peer sends these requests in one burst: A's responder takes them in one turn. */
static void
peer_requests(struct rnic_qp *qp, const struct request *r, int n)
{
	peer_send_requests(qp, r, n);
	pump();
}

static void
peer_request(struct rnic_qp *qp, uint8_t op, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t dma_len,
	     uint32_t len)
{
	const struct request r = { op, psn, va, rkey, dma_len, len, 0 };

	peer_requests(qp, &r, 1);
}

/* Expect exactly these responses from A: opcode, PSN and (but for a READ Response Middle, which has no
 * AETH) an ACK syndrome and the MSN of each. */
static void
expect_responses(int n, const uint8_t *op, const uint32_t *psn, const uint32_t *msn)
{
	struct frame f[MAX_FRAMES];

	assert_int_equal(peer_take(f, MAX_FRAMES), n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(f[i].op, op[i]);
		assert_int_equal(f[i].psn, psn[i]);
		if (op[i] == RNIC_OP_RDMA_READ_RESPONSE_MIDDLE)
			continue;	/* no AETH */
		assert_int_equal(f[i].syndrome, RNIC_AETH_ACK);
		if (msn != NULL)
			assert_int_equal(f[i].msn, msn[i]);
	}
}

/* The responder ACKs at least every 64 requests even when none asks (the requester of a long message may ask
 * only on its last packet): a 64-packet WRITE without a single AckReq gets one ACK, for its last packet. */
static void
test_responder_acks_unasked(void **state)
{
	struct rnic_mr *target = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct request r[8];
	struct frame f[MAX_FRAMES];

	(void)state;
	assert_non_null(target);
	for (int burst = 0; burst < 8; burst++) {
		for (int i = 0; i < 8; i++) {
			uint32_t k = (uint32_t)(burst * 8 + i);

			r[i] = (struct request){ k == 0 ? RNIC_OP_RDMA_WRITE_FIRST : k == 63 ?
						 RNIC_OP_RDMA_WRITE_LAST : RNIC_OP_RDMA_WRITE_MIDDLE,
						 10 + k, (uintptr_t)buf, target->rkey, 64 * 1024, 1024, 1 };
		}
		peer_requests(qp, r, 8);
		assert_int_equal(peer_take(f, MAX_FRAMES), burst == 7);
	}
	assert_int_equal(f[0].op, RNIC_OP_ACKNOWLEDGE);
	assert_int_equal(f[0].syndrome, RNIC_AETH_ACK);
	assert_int_equal(f[0].psn, 73);
	done(qp);
	assert_int_equal(rnic_dereg_mr(target), 0);
}

/*
 * Zero-length WRITE and READ touch no memory: rkey 0 and any VA are taken without an R_Key or bounds check
 * (IBA 9.7.4.1). The WRITE is ACKed, the READ answered by one READ Response Only without payload and
 * nothing else, and the QP stays ready (it was NAKed with a remote access error and failed).
 */
static void
test_responder_zero_length(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;

	(void)state;
	peer_request(qp, RNIC_OP_RDMA_WRITE_ONLY, 10, 0xdead0000, 0, 0, 0);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_ACKNOWLEDGE);
	assert_int_equal(f[0].syndrome, RNIC_AETH_ACK);
	assert_int_equal(f[0].psn, 10);
	peer_request(qp, RNIC_OP_RDMA_READ_REQUEST, 11, 0xbeef0000, 0, 0, 0);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_RDMA_READ_RESPONSE_ONLY);
	assert_int_equal(f[0].psn, 11);
	assert_int_equal(f[0].payload_len, 0);
	assert_int_equal(f[0].syndrome, RNIC_AETH_ACK);
	/* Past the two, the next PSN is expected: a SEND with no receive posted gets an RNR NAK at 12. */
	peer_request(qp, RNIC_OP_SEND_ONLY, 12, 0, 0, 0, 16);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].psn, 12);
	assert_true(RNIC_AETH_IS_RNR(f[0].syndrome));
	assert_int_equal(qp->state, RNIC_QPS_RTS);
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.access_naks_sent + c.inv_req_naks_sent, 0);
	done(qp);
}

#define R_FIRST RNIC_OP_RDMA_READ_RESPONSE_FIRST
#define R_MIDDLE RNIC_OP_RDMA_READ_RESPONSE_MIDDLE
#define R_LAST RNIC_OP_RDMA_READ_RESPONSE_LAST
#define R_ONLY RNIC_OP_RDMA_READ_RESPONSE_ONLY
#define READ_REQ RNIC_OP_RDMA_READ_REQUEST

/*
 * A READ's responses come from the address the responder translated when it took the request, while no region
 * is deregistered: a duplicate of it after its region was deregistered sends none of that memory, but a
 * remote access NAK (and the QP fails).
 */
static void
test_responder_read_deregistered(void **state)
{
	struct rnic_mr *src = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint8_t ops[3] = { RNIC_OP_RDMA_READ_RESPONSE_FIRST, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE,
				 RNIC_OP_RDMA_READ_RESPONSE_LAST };
	const uint32_t psn[3] = { 10, 11, 12 }, msn[3] = { 1, 1, 1 };
	struct frame f[MAX_FRAMES];
	uint32_t rkey;

	(void)state;
	assert_non_null(src);
	rkey = src->rkey;
	peer_request(qp, RNIC_OP_RDMA_READ_REQUEST, 10, (uintptr_t)buf, rkey, 3000, 0);
	expect_responses(3, ops, psn, msn);
	assert_int_equal(rnic_dereg_mr(src), 0);
	peer_request(qp, RNIC_OP_RDMA_READ_REQUEST, 11, (uintptr_t)buf + 1024, rkey, 3000 - 1024, 0);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_ACKNOWLEDGE);
	assert_int_equal(f[0].syndrome, RNIC_AETH_NAK_REMOTE_ACCESS);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	done(qp);
}

/*
 * Duplicate READs (IBA 9.7.5.1.6) at a responder with max_dest_rd_atomic 2: each is answered again by the
 * resource of its original, from the PSN it names, and takes no resource of its own. A duplicate of a READ
 * still queued does not add a job (the READ behind it once found the resources full: an invalid request NAK,
 * the QP in error); one of part of a READ gets exactly that part; one that is not part of its original, or
 * older than the resources kept, is dropped. Every response carries the MSN as of its READ, also when asked
 * again after later requests. One asking for a part alone gets that part, and only it.
 */
static void
test_responder_duplicate_reads(void **state)
{
	struct rnic_mr *src = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);
	struct rnic_qp *qp = new_qp_full(10, RNIC_MTU_1024, 20, 7, 7, 2);
	const uint64_t va = (uintptr_t)buf;
	const struct request first[3] = {
		{ READ_REQ, 10, va, src->rkey, 3000, 0, 0 },	/* responses 10-12 */
		{ READ_REQ, 10, va, src->rkey, 3000, 0, 0 },	/* its duplicate, while it is queued */
		{ READ_REQ, 13, va + 4096, src->rkey, 100, 0, 0 },
	};
	const uint8_t ops[4] = { R_FIRST, R_MIDDLE, R_LAST, R_ONLY };
	const uint32_t psn[4] = { 10, 11, 12, 13 }, msn[4] = { 1, 1, 1, 2 };
	struct rnic_qp_counters c;

	(void)state;
	assert_non_null(src);
	peer_requests(qp, first, 3);
	expect_responses(4, ops, psn, msn);
	/* The rest of the first READ from its second response (the first arrived). */
	peer_request(qp, READ_REQ, 11, va + 1024, src->rkey, 3000 - 1024, 0);
	expect_responses(2, ops + 1, psn + 1, msn + 1);
	/* Its second response alone (lost, and the third arrived): that one, nothing after it. */
	peer_request(qp, READ_REQ, 11, va + 1024, src->rkey, 1024, 0);
	expect_responses(1, ops + 1, psn + 1, msn + 1);
	peer_request(qp, READ_REQ, 13, va + 4096, src->rkey, 100, 0);
	expect_responses(1, ops + 3, psn + 3, msn + 3);
	/* Not a part of its original: another address, an end between responses, another key. */
	peer_request(qp, READ_REQ, 11, va + 1000, src->rkey, 2000, 0);
	peer_request(qp, READ_REQ, 11, va + 1024, src->rkey, 1000, 0);
	peer_request(qp, READ_REQ, 10, va, src->rkey ^ 0x100, 3000, 0);
	expect_responses(0, NULL, NULL, NULL);
	/* A third READ takes the first one's resource: that one is no longer answered, the second still is,
	 * with its own MSN. */
	peer_request(qp, READ_REQ, 14, va, src->rkey, 64, 0);
	expect_responses(1, ops + 3, (const uint32_t[]){ 14 }, (const uint32_t[]){ 3 });
	peer_request(qp, READ_REQ, 10, va, src->rkey, 3000, 0);
	expect_responses(0, NULL, NULL, NULL);
	peer_request(qp, READ_REQ, 13, va + 4096, src->rkey, 100, 0);
	expect_responses(1, ops + 3, psn + 3, msn + 3);
	assert_int_equal(qp->state, RNIC_QPS_RTS);
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.inv_req_naks_sent + c.access_naks_sent + c.seq_naks_sent, 0);
	assert_int_equal(c.duplicates, 9);
	done(qp);
	assert_int_equal(rnic_dereg_mr(src), 0);
}

/*
 * The responder answers its QPs' READs in turn. One QP's requester keeps 16 READs of 16 KB queued (a new one
 * as each is answered, as a requester posting again at each completion does); another QP's single READ,
 * which arrived behind them, is answered after a turn of the first QP's responses, not after all of them:
 * served one QP until it had nothing left, the second READ was never answered while the first QP kept
 * posting, and its requester ran out of retries (RETRY_EXC_ERR, issue 16's soak).
 */
static void
test_responder_reads_in_turn(void **state)
{
	struct rnic_mr *src = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);
	struct rnic_qp *busy = new_qp(100, RNIC_MTU_1024, 20, 7), *other = new_qp(5000, RNIC_MTU_1024, 20, 7);
	const uint64_t va = (uintptr_t)buf;
	struct frame f[MAX_FRAMES];
	struct request r[8];
	uint32_t next = 100;		/* the PSN of busy's next READ: 16 responses each */
	int busy_responses = 0, answered = 0;

	(void)state;
	assert_non_null(src);
	for (int burst = 0; burst < 2; burst++) {
		for (int i = 0; i < 8; i++, next += 16)
			r[i] = (struct request){ READ_REQ, next, va, src->rkey, 16384, 0, 0 };
		peer_send_requests(busy, r, 8);
	}
	peer_send_requests(other, &(const struct request){ READ_REQ, 5000, va, src->rkey, 1024, 0, 0 }, 1);
	for (int step = 0; step < 64 && !answered; step++) {
		int n;

		test_pipeline_step(pipe_a, 16);
		n = peer_receive(f, MAX_FRAMES);
		for (int i = 0; i < n; i++) {
			if (f[i].psn == 5000) {
				assert_int_equal(f[i].op, R_ONLY);
				answered = 1;
				continue;
			}
			busy_responses++;
			if (f[i].op == R_LAST) {
				r[0] = (struct request){ READ_REQ, next, va, src->rkey, 16384, 0, 0 };
				peer_send_requests(busy, r, 1);
				next += 16;
			}
		}
	}
	assert_true(answered);
	assert_in_range(busy_responses, 1, 64);
	/* Busy's READs still queued are answered (nothing more is asked). */
	for (int step = 0; step < 64 && peer_take(f, MAX_FRAMES) != 0; step++)
		;
	assert_int_equal(busy->state, RNIC_QPS_RTS);
	assert_int_equal(other->state, RNIC_QPS_RTS);
	assert_int_equal(rnic_destroy_qp(other), 0);
	done(busy);
	assert_int_equal(rnic_dereg_mr(src), 0);
}

/* The MSN of a READ's responses is the MSN as of the READ: a WRITE and a READ behind it, taken while its
 * responses wait to go out, do not count (IBA 9.7.5.1). */
static void
test_responder_read_msn(void **state)
{
	struct rnic_mr *mem = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ |
					  RNIC_ACCESS_REMOTE_WRITE);
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint64_t va = (uintptr_t)buf;
	const struct request burst[3] = {
		{ READ_REQ, 10, va, mem->rkey, 2048, 0, 0 },			/* 10-11, MSN 1 */
		{ RNIC_OP_RDMA_WRITE_ONLY, 12, va + 8192, mem->rkey, 64, 64, 0 },	/* MSN 2 */
		{ READ_REQ, 13, va, mem->rkey, 64, 0, 0 },				/* MSN 3 */
	};
	const uint8_t ops[3] = { R_FIRST, R_LAST, R_ONLY };

	(void)state;
	assert_non_null(mem);
	peer_requests(qp, burst, 3);
	/* The WRITE's ACK is covered by the second READ's response. */
	expect_responses(3, ops, (const uint32_t[]){ 10, 11, 13 }, (const uint32_t[]){ 1, 1, 3 });
	done(qp);
	assert_int_equal(rnic_dereg_mr(mem), 0);
}

/*
 * max_dest_rd_atomic raised in SQD -> SQD (1 -> 4): the responder resources grow with it, so four READs
 * outstanding are all answered, once each, in order (they were sized at INIT -> RTR only, while the check
 * took the new value: the READs overwrote each other and the responder answered the wrong ones, a storm).
 * A READ accepted before the change is still answered again for its duplicate after it. Lowered back to 1,
 * a second READ outstanding is one too many.
 */
static void
test_responder_resources_resize(void **state)
{
	struct rnic_mr *src = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);
	struct rnic_qp *qp = new_qp_full(10, RNIC_MTU_1024, 20, 7, 7, 1);
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_SQD };
	const uint64_t va = (uintptr_t)buf;
	const struct request four[4] = {
		{ READ_REQ, 11, va, src->rkey, 100, 0, 0 }, { READ_REQ, 12, va, src->rkey, 100, 0, 0 },
		{ READ_REQ, 13, va, src->rkey, 100, 0, 0 }, { READ_REQ, 14, va, src->rkey, 100, 0, 0 },
	};
	const uint8_t only[4] = { R_ONLY, R_ONLY, R_ONLY, R_ONLY };
	struct rnic_qp_counters c;
	struct frame f[MAX_FRAMES];

	(void)state;
	assert_non_null(src);
	peer_request(qp, READ_REQ, 10, va, src->rkey, 100, 0);
	expect_responses(1, only, (const uint32_t[]){ 10 }, NULL);
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE), 0);
	a.max_dest_rd_atomic = 4;
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_MAX_DEST_RD_ATOMIC), 0);
	peer_request(qp, READ_REQ, 10, va, src->rkey, 100, 0);	/* kept across the change */
	expect_responses(1, only, (const uint32_t[]){ 10 }, NULL);
	a.qp_state = RNIC_QPS_RTS;
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE), 0);
	peer_requests(qp, four, 4);
	expect_responses(4, only, (const uint32_t[]){ 11, 12, 13, 14 }, (const uint32_t[]){ 2, 3, 4, 5 });
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.inv_req_naks_sent, 0);
	/* Back to one: the second of two READs outstanding is an invalid request. */
	a.qp_state = RNIC_QPS_SQD;
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE), 0);
	a.max_dest_rd_atomic = 1;
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_MAX_DEST_RD_ATOMIC), 0);
	peer_requests(qp, (const struct request[]){ { READ_REQ, 15, va, src->rkey, 4096, 0, 0 },
						    { READ_REQ, 19, va, src->rkey, 100, 0, 0 } }, 2);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_ACKNOWLEDGE);
	assert_int_equal(f[0].syndrome, RNIC_AETH_NAK_INVALID_REQUEST);
	assert_int_equal(f[0].psn, 19);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	done(qp);
	assert_int_equal(rnic_dereg_mr(src), 0);
}

/*
 * An error NAK naming a WQE that is only partly sent: here a 3-packet WRITE that a go-back-N has just rewound
 * (its packets go out again; the NAK of the first transmission's second packet arrives before they do). The
 * WQE completes with the NAK's error, the one behind it is flushed and nothing more is sent (the NAK was
 * ignored: the requester resent until its retries ran out, RETRY_EXC_ERR).
 */
static void
test_nak_partly_sent(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t psn[4] = { 10, 11, 12, 13 };
	const uint64_t id[2] = { 0, 1 };
	const enum rnic_wc_status st[2] = { RNIC_WC_REM_ACCESS_ERR, RNIC_WC_WR_FLUSH_ERR };
	struct rnic_pkt_desc d = route;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	(void)state;
	post(qp, RNIC_WR_RDMA_WRITE, 0, 0, 3000);
	post(qp, RNIC_WR_SEND, 1, 4096, 64);
	expect_frames(4, psn, NULL);
	assert_int_equal(rnic_requester_rewind(pipe_a, qp, 10), 0);
	/* The NAK reaches the completer before the requester runs again. */
	assert_non_null(m);
	d.opcode = RNIC_TRANSPORT_RC | RNIC_OP_ACKNOWLEDGE;
	d.dqpn = qp->qp_num;
	d.psn = 11;
	d.aeth.syndrome = RNIC_AETH_NAK_REMOTE_ACCESS;
	assert_true(rnic_pkt_build_mbuf(&d, m) >= 0);
	assert_int_equal(rte_eth_tx_burst(peer_port, 0, &m, 1), 1);
	for (int i = 0; i < 4; i++) {
		rnic_stage_parser(pipe_a, 64);
		rnic_stage_completer(pipe_a, 64);
	}
	expect_wc(2, id, st);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	expect_frames(0, NULL, NULL);
	done(qp);
}

/* The responder coalesces: a burst of requests gets one ACK, for the last, sent by the end of the burst;
 * a gap gets one sequence NAK that no ACK of an earlier PSN replaces. */
static void
test_responder_coalesces_acks(void **state)
{
	struct rnic_mr *target = rnic_reg_mr(pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	const uint32_t burst[5] = { 10, 11, 12, 13, 14 }, gap[3] = { 15, 17, 18 };
	struct frame f[MAX_FRAMES];
	struct rnic_qp_counters c;

	(void)state;
	assert_non_null(target);
	peer_writes(qp, target, burst, 5);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_ACKNOWLEDGE);
	assert_int_equal(f[0].psn, 14);
	peer_writes(qp, target, gap, 3);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	assert_int_equal(f[0].op, RNIC_OP_ACKNOWLEDGE);
	assert_int_equal(f[0].psn, 16);		/* the NAK for the missing 16: it acknowledges 15 too */
	assert_int_equal(rnic_query_qp_counters(qp, &c), 0);
	assert_int_equal(c.requests_received, 6);
	assert_int_equal(c.acks_sent, 1);
	assert_int_equal(c.seq_naks_sent, 1);
	assert_int_equal(c.out_of_sequence, 2);
	done(qp);
	assert_int_equal(rnic_dereg_mr(target), 0);
}

/* QP qp to ERR (nothing is outstanding: no completion), to RESET, and connected again from psn. */
static void
reconnect(struct rnic_qp *qp, uint32_t psn)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_ERR };
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = psn, .timeout = 20, .retry_cnt = 7,
					.rnr_retry = 7 };

	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE), 0);
	expect_wc(0, NULL, NULL);
	a.qp_state = RNIC_QPS_RESET;
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE), 0);
	assert_int_equal(test_connect(qp, PEER_QPN, &peer_gid, &path), 0);
}

/*
 * A reset QP connected again (rnic-perf's size sweep: one connection per size, each from
 * perf_connection_psn) gets responses of an earlier connection late (held back in the network: the
 * originals of responses A asked for again). A response is tied to its request by its PSN alone (IBA
 * 9.7.5.2), so the engine takes a Middle whose PSN is among the outstanding ones: each connection must
 * start far from the recent ones' PSNs, or such a response lands in the new READ's memory. The 4 KB size's
 * connection (the sweep's 12th) READs 4 KB; each of the 8 connections after it READs 16 KB, and the
 * earlier READ's two Middles come again after its first response: neither may be placed.
 */
static void
test_stale_responses_of_earlier_connection(void **state)
{
	const uint32_t base = 0x86d233, first = 11;
	uint32_t psn = perf_connection_psn(base, first);
	/* Timeout 24 (69 s): the early probe waits at least a 64th of it (1 s), so a machine too loaded to run
	 * the test's steps for tens of ms does not make A ask a READ again while the test answers it. */
	struct rnic_qp *qp = new_qp(psn, RNIC_MTU_1024, 24, 7);
	struct frame f[MAX_FRAMES];

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 0, 4096);
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, psn, 'a', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, psn + 1, 'b', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, psn + 2, 'c', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_LAST, psn + 3, 'd', 1024);
	expect_ok(1, 0);
	for (uint32_t k = 1; k <= 8; k++) {
		uint32_t now = perf_connection_psn(base, first + k);
		uint64_t unexpected = RNIC_STATS(pipe_a, COMPLETER)->unexpected_responses;

		reconnect(qp, now);
		memset(buf, 0, BUF);
		post(qp, RNIC_WR_RDMA_READ, k, 0, 16384);
		assert_int_equal(peer_take(f, MAX_FRAMES), 1);
		assert_int_equal(f[0].psn, now);
		peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, now, 'n', 1024);
		peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, psn + 1, 'b', 1024);	/* late */
		peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, psn + 2, 'c', 1024);
		for (uint32_t i = 1; i < 16; i++)
			peer_read_response(qp, i == 15 ? RNIC_OP_RDMA_READ_RESPONSE_LAST :
					   RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, now + i, 'n', 1024);
		expect_ok(1, k);
		for (uint32_t off = 0; off < 16384; off += 512)
			assert_int_equal(buf[off], 'n');
		assert_int_equal(RNIC_STATS(pipe_a, COMPLETER)->unexpected_responses, unexpected + 2);
		expect_frames(0, NULL, NULL);		/* nothing asked again */
	}
	done(qp);
}

/* A First or Only past the data a READ has (a response of another READ whose PSN falls inside this one's:
 * an earlier connection's, test above) is dropped, not placed, and asks for nothing; the READ's own
 * responses fill it. */
static void
test_read_start_response_inside(void **state)
{
	struct rnic_qp *qp = new_qp(10, RNIC_MTU_1024, 20, 7);
	struct frame f[MAX_FRAMES];

	(void)state;
	post(qp, RNIC_WR_RDMA_READ, 0, 0, 8192);	/* 10-17 */
	assert_int_equal(peer_take(f, MAX_FRAMES), 1);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 10, 'n', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_ONLY, 13, 'x', 1024);
	peer_read_response(qp, RNIC_OP_RDMA_READ_RESPONSE_FIRST, 14, 'y', 1024);
	expect_frames(0, NULL, NULL);
	for (uint32_t i = 1; i < 8; i++)
		peer_read_response(qp, i == 7 ? RNIC_OP_RDMA_READ_RESPONSE_LAST :
				   RNIC_OP_RDMA_READ_RESPONSE_MIDDLE, 10 + i, 'n', 1024);
	expect_ok(1, 0);
	for (uint32_t off = 0; off < 8192; off += 512)
		assert_int_equal(buf[off], 'n');
	expect_frames(0, NULL, NULL);
	done(qp);
}

/* The requester's pass did not come back: nothing else can run on its lcore, so the test cannot go on. */
static void
pass_stuck(int sig)
{
	static const char msg[] = "test_transport: the requester's pass did not return\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

/* Passes of A's requester (64 units of work each), each of which must return: a pass that does not is caught
 * by the alarm, as nothing else can. */
static void
requester_passes(int n)
{
	signal(SIGALRM, pass_stuck);
	alarm(5);
	for (int i = 0; i < n; i++)
		rnic_stage_requester(pipe_a, 64);
	alarm(0);
}

/* Frames in A's TX queue until it takes no more (the loopback pair's ring full: a peer that does not read);
 * they come from frames, which the peer's drain gives back. */
static unsigned int
fill_port(struct rte_mempool *frames)
{
	struct rnic_device *dev = rnic_ctx_dev(ctx);
	unsigned int n = 0;
	struct rte_mbuf *m;

	while ((m = rte_pktmbuf_alloc(frames)) != NULL) {
		if (rte_eth_tx_burst(dev->port_id, pipe_a->req_tx.queue, &m, 1) == 0) {
			rte_pktmbuf_free(m);
			return n;
		}
		n++;
	}
	fail_msg("the port took every one of %u frames", n);
	return n;
}

/* Free what waits on the peer's RX queues (A's stages not run). */
static unsigned int
peer_drain(void)
{
	struct rte_mbuf *m[MAX_FRAMES];
	unsigned int n = 0;

	for (uint16_t q = 0; q < 2; q++)
		for (uint16_t k; (k = rte_eth_rx_burst(peer_port, q, m, MAX_FRAMES)) != 0; n += k)
			rte_pktmbuf_free_bulk(m, k);
	return n;
}

#define BLOCKED_QPS 6
#define BLOCKED_DEPTH 64
#define BLOCKED_PSN_GAP 1000

/* BLOCKED_QPS QPs of A, QP i's PSNs from 10 + i x BLOCKED_PSN_GAP, each with BLOCKED_DEPTH SENDs of 64 B
 * posted (the last signaled, wr_id i): more frames than A's TX buffer holds back (RNIC_TX_BUF) or its spare
 * mbufs, within the window. */
static void
blocked_qps_post(struct rnic_qp **qp)
{
	for (int i = 0; i < BLOCKED_QPS; i++) {
		qp[i] = new_qp(10 + (uint32_t)i * BLOCKED_PSN_GAP, RNIC_MTU_1024, 20, 7);
		for (int k = 0; k < BLOCKED_DEPTH; k++) {
			struct rnic_sge sge = { (uintptr_t)buf + 64u * (uint32_t)k, 64, mr->lkey };
			struct rnic_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
						   .opcode = RNIC_WR_SEND,
						   .send_flags = k == BLOCKED_DEPTH - 1 ? RNIC_SEND_SIGNALED : 0 },
					    *bad;

			assert_int_equal(rnic_post_send(qp[i], &wr, &bad), 0);
		}
	}
	assert_true(rnic_stage_doorbell(pipe_a, 64) == BLOCKED_QPS);
}

/* Once nothing blocks A: every frame of blocked_qps_post's comes, each QP's in PSN order, and the ACKs
 * complete them all. */
static void
blocked_qps_finish(struct rnic_qp **qp)
{
	uint64_t end = rte_get_tsc_cycles() + 2 * rte_get_tsc_hz();
	uint32_t next[BLOCKED_QPS];
	struct frame f[2 * MAX_FRAMES];
	unsigned int got = 0;
	uint64_t id[BLOCKED_QPS];
	enum rnic_wc_status st[BLOCKED_QPS];

	for (int i = 0; i < BLOCKED_QPS; i++)
		next[i] = 10 + (uint32_t)i * BLOCKED_PSN_GAP;
	while (got < BLOCKED_QPS * BLOCKED_DEPTH && rte_get_tsc_cycles() < end) {
		pump();
		/* peer_receive reads up to MAX_FRAMES from each of the two queues a call */
		for (int k; (k = peer_receive(f, RTE_DIM(f))) != 0; got += (unsigned int)k)
			for (int j = 0; j < k; j++) {
				uint32_t i = (f[j].psn - 10) / BLOCKED_PSN_GAP;

				assert_true(i < BLOCKED_QPS);
				assert_int_equal(f[j].psn, next[i]);
				next[i]++;
			}
	}
	assert_int_equal(got, BLOCKED_QPS * BLOCKED_DEPTH);
	for (int i = 0; i < BLOCKED_QPS; i++) {
		peer_ack(qp[i], next[i] - 1, RNIC_AETH_ACK);
		id[i] = (uint64_t)i;
		st[i] = RNIC_WC_SUCCESS;
	}
	expect_wc(BLOCKED_QPS, id, st);
	for (int i = 0; i < BLOCKED_QPS; i++)
		done(qp[i]);
}

/*
 * A port that takes no more frames (its TX queue full: the loopback pair's ring of 4095 while the peer's
 * parser does not read) ends the requester's pass. Every active QP found the port full, sent nothing and
 * did not go idle, so the pass visited them again and again and never returned: where the peer's parser
 * shares the lcore (rnic-perf's 64 B WRITE over 64 QPs with the map "one" and a ring per queue, or
 * doorbell=1,parser=1,requester=1+2,...), nothing drained the port and every send stayed outstanding.
 */
static void
test_port_full(void **state)
{
	static struct rte_mempool *frames;
	struct rnic_qp *qp[BLOCKED_QPS];
	unsigned int filled;

	(void)state;
	if (frames == NULL)
		frames = rte_pktmbuf_pool_create("port_full", 8191, 0, 0, 128, SOCKET_ID_ANY);
	assert_non_null(frames);
	blocked_qps_post(qp);
	filled = fill_port(frames);
	assert_true(filled > 0);
	requester_passes(2 * BLOCKED_QPS * BLOCKED_DEPTH / 64);
	assert_int_equal(pipe_a->req_tx.count, RNIC_TX_BUF);	/* held back, not lost */
	assert_int_equal(peer_drain(), filled);
	blocked_qps_finish(qp);
}

/*
 * The same with the pool empty (its mbufs in the port's queues and kept for resending: 8192 frames in
 * flight while the peer's parser was starved): every visit built nothing, and the pass never returned; on
 * the lcore of the QPs' completer too, which would have freed the kept frames as the ACKs came.
 */
static void
test_pool_empty(void **state)
{
	struct rnic_qp *qp[BLOCKED_QPS];
	struct rte_mbuf *held[1024];
	unsigned int n = 0;

	(void)state;
	blocked_qps_post(qp);
	while (n < RTE_DIM(held) && (held[n] = rte_pktmbuf_alloc(pool)) != NULL)
		n++;
	assert_true(n < RTE_DIM(held));
	requester_passes(2 * BLOCKED_QPS * BLOCKED_DEPTH / 64);
	assert_true(RNIC_STATS(pipe_a, REQUESTER)->no_mbuf > 0);
	rte_pktmbuf_free_bulk(held, n);
	blocked_qps_finish(qp);
}

/*
 * A parser call takes from both of its shard's RX queues (up to its budget), not one queue a call: with a
 * ring per queue in the loopback pair, a one-way flow's requests were read every other call (64 B WRITE
 * over 64 QPs, map one: a quarter of the rate). Frames that are not RoCE: read, counted and dropped.
 */
static void
test_parser_reads_both_queues(void **state)
{
	uint64_t before = RNIC_STATS(pipe_a, PARSER)->rx_packets;

	(void)state;
	for (uint16_t q = 0; q < 2; q++)
		for (int i = 0; i < 2; i++) {
			struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

			assert_non_null(m);
			assert_non_null(rte_pktmbuf_append(m, 60));
			memset(rte_pktmbuf_mtod(m, void *), 0, 60);
			assert_int_equal(rte_eth_tx_burst(peer_port, q, &m, 1), 1);
		}
	assert_int_equal(rnic_stage_parser(pipe_a, 64), 4);
	assert_int_equal(RNIC_STATS(pipe_a, PARSER)->rx_packets - before, 4);
	assert_int_equal(rnic_stage_parser(pipe_a, 64), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ack_ranges),
		cmocka_unit_test(test_ack_past_read),
		cmocka_unit_test(test_seq_nak),
		cmocka_unit_test(test_seq_nak_past_read),
		cmocka_unit_test(test_rnr_nak),
		cmocka_unit_test(test_rnr_exhausted),
		cmocka_unit_test(test_error_nak),
		cmocka_unit_test(test_loss_timer),
		cmocka_unit_test(test_retry_exhausted),
		cmocka_unit_test(test_ack_past_go_back_n),
		cmocka_unit_test(test_read_only_response),
		cmocka_unit_test(test_read_response_gap),
		cmocka_unit_test(test_second_read_answered_first),
		cmocka_unit_test(test_second_read_partly_answered_first),
		cmocka_unit_test(test_read_depth_until_retired),
		cmocka_unit_test(test_read_window),
		cmocka_unit_test(test_read_response_acks_before),
		cmocka_unit_test(test_read_scatter),
		cmocka_unit_test(test_read_one_run),
		cmocka_unit_test(test_read_burst_completions),
		cmocka_unit_test(test_read_burst_progress),
		cmocka_unit_test(test_read_local_keys),
		cmocka_unit_test(test_bad_wqe_behind_outstanding),
		cmocka_unit_test(test_responder_coalesces_acks),
		cmocka_unit_test(test_responder_zero_length),
		cmocka_unit_test(test_responder_duplicate_reads),
		cmocka_unit_test(test_responder_read_deregistered),
		cmocka_unit_test(test_responder_read_msn),
		cmocka_unit_test(test_responder_reads_in_turn),
		cmocka_unit_test(test_responder_resources_resize),
		cmocka_unit_test(test_nak_partly_sent),
		cmocka_unit_test(test_window_and_ack_requests),
		cmocka_unit_test(test_loss_probe),
		cmocka_unit_test(test_early_probe),
		cmocka_unit_test(test_lcore_away),
		cmocka_unit_test(test_read_round_trip),
		cmocka_unit_test(test_responder_acks_unasked),
		cmocka_unit_test(test_read_start_response_inside),
		cmocka_unit_test(test_stale_responses_of_earlier_connection),
		cmocka_unit_test(test_port_full),
		cmocka_unit_test(test_pool_empty),
		cmocka_unit_test(test_parser_reads_both_queues),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("transport", tests, setup, teardown);
}
