/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target for the request and response handling behind the parser: the responder (PSN checks,
 * duplicates, WRITE/SEND/READ/atomic execution, key checks, RNR, NAKs) and the completer (ACKs, NAKs, READ
 * responses), driven with sequences of well-formed frames whose fields the fuzzer chooses.
 *
 * An input is a list of records [length: 2 bytes, big-endian][frame]. Each frame that parses is steered
 * at one of the device's QPs (RC, UC, UD; by its destination QPN), its PSN optionally set to the one the
 * QP expects, its R_Key optionally replaced by a live one and its addresses those of the QPs' peer (unless
 * a bit says to keep its own), so that the fuzzer gets past the first checks;
 * it is then rebuilt with a correct ICRC and received by device A, whose stages run on this thread.
 * Beyond crashes, hangs and sanitizer reports it checks that nothing is written outside the registered
 * buffer's bounds and nothing through a key of another protection domain.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "rnic.h"
#include "rnic_pipeline.h"
#include "rnic_priv.h"
#include "rnic_wire.h"
#include "test_pipeline.h"

#define BUF 65536
#define GUARD 4096
#define PEER_QPN 0x123
#define NB_QP 3
#define RECV_DEPTH 32

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rnic_context *ctx;
static struct rnic_pipeline *pipe_a;
static struct rte_mempool *pool;
static uint16_t peer_port;
static union rnic_gid peer_gid, own_gid;
static struct rnic_pd *pd, *other_pd;
static struct rnic_cq *cq;
static struct rnic_mr *mr, *other_mr;
static uint8_t *area;		/* guard | registered buffer | guard */
static uint8_t *other;		/* registered in another PD: never written */
static struct rnic_qp *qp[NB_QP];

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_responder: %s\n", what);
	abort();
}

static void
post_recvs(struct rnic_qp *q, int n)
{
	for (int i = 0; i < n; i++) {
		struct rnic_sge sge = { .addr = (uintptr_t)(area + GUARD + 4096u * (unsigned int)(i % 8)),
					.length = 4096, .lkey = mr->lkey };
		struct rnic_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (rnic_post_recv(q, &wr, &bad) != 0)
			return;
	}
}

/* Take a QP (again) through INIT, RTR, RTS towards the made-up peer; its receive queue filled. */
static void
connect_qp(struct rnic_qp *q)
{
	int ud = q->qp_type == RNIC_QPT_UD, rc = q->qp_type == RNIC_QPT_RC;
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_RESET,
	};

	if (rnic_modify_qp(q, &a, RNIC_QP_STATE) != 0)
		fail("reset");
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
		.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
	};
	if (rnic_modify_qp(q, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
			   (ud ? RNIC_QP_QKEY : RNIC_QP_ACCESS_FLAGS)) != 0)
		fail("init");
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_RTR, .path_mtu = RNIC_MTU_1024, .dest_qp_num = PEER_QPN, .rq_psn = 0,
		.max_dest_rd_atomic = 16, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = peer_gid } },
	};
	if (rnic_modify_qp(q, &a, RNIC_QP_STATE |
			   (ud ? 0 : RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN) |
			   (rc ? RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER : 0)) != 0)
		fail("rtr");
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_RTS, .sq_psn = 0, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.max_rd_atomic = 16,
	};
	if (rnic_modify_qp(q, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN |
			   (rc ? RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC : 0)) != 0)
		fail("rts");
	post_recvs(q, RECV_DEPTH);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char *eal[] = { "fuzz", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l", "0",
			       "--log-level=1", NULL };
	struct rnic_device **list;
	struct rnic_context *peer;
	enum rnic_qp_type types[NB_QP] = { RNIC_QPT_RC, RNIC_QPT_UC, RNIC_QPT_UD };

	(void)argc;
	(void)argv;
	if (rnic_engine_init(9, eal) < 0)
		fail("engine init");
	list = rnic_get_device_list(NULL);
	ctx = rnic_open_device(list[0]);
	peer = rnic_open_device(list[1]);
	peer_port = list[1]->port_id;
	rnic_free_device_list(list);
	if (ctx == NULL || peer == NULL || rnic_query_gid(peer, 1, 0, &peer_gid) != 0 ||
	    rnic_query_gid(ctx, 1, 0, &own_gid) != 0)
		fail("devices");
	rnic_close_device(peer);
	/* A's pipeline, polled here (no worker lcore). */
	pool = rte_pktmbuf_pool_create("fuzz", 2047, 64, 0, RTE_PKTMBUF_HEADROOM + 9216, SOCKET_ID_ANY);
	pipe_a = pool != NULL ? test_pipeline_attach(ctx, pool) : NULL;
	if (pipe_a == NULL)
		fail("pipeline");
	area = aligned_alloc(4096, BUF + 2 * GUARD);
	other = aligned_alloc(4096, 4096);
	memset(area, 0xa5, BUF + 2 * GUARD);
	memset(other, 0x5a, 4096);
	pd = rnic_alloc_pd(ctx);
	other_pd = rnic_alloc_pd(ctx);
	cq = rnic_create_cq(ctx, 4096, NULL, NULL, 0);
	mr = rnic_reg_mr(pd, area + GUARD, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			 RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);
	other_mr = rnic_reg_mr(other_pd, other, 4096, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			       RNIC_ACCESS_REMOTE_ATOMIC);
	if (cq == NULL || mr == NULL || other_mr == NULL)
		fail("objects");
	for (int i = 0; i < NB_QP; i++) {
		struct rnic_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = types[i],
			.cap = { .max_send_wr = 64, .max_recv_wr = RECV_DEPTH, .max_send_sge = 4, .max_recv_sge = 4 },
		};

		qp[i] = rnic_create_qp(pd, &ia);
		if (qp[i] == NULL)
			fail("qp");
		connect_qp(qp[i]);
	}
	return 0;
}

static void
pump(void)
{
	struct rte_mbuf *m[64];
	struct rnic_wc wc[64];

	test_pipeline_pump(pipe_a);
	/* What A answered goes nowhere; its completions are drained. */
	for (uint16_t q = 0; q < 2; q++) {
		uint16_t n = rte_eth_rx_burst(peer_port, q, m, 64);

		rte_pktmbuf_free_bulk(m, n);
	}
	while (rnic_poll_cq(cq, 64, wc) > 0)
		;
}

/* Keep the RC QP's requester busy (a WRITE, a READ, an atomic in flight) so responses have work to match. */
static void
post_requests(void)
{
	static const enum rnic_wr_opcode ops[3] = { RNIC_WR_RDMA_WRITE, RNIC_WR_RDMA_READ, RNIC_WR_ATOMIC_FETCH_AND_ADD };
	static const uint32_t len[3] = { 2000, 3000, 8 };

	for (int i = 0; i < 3; i++) {
		struct rnic_sge sge = { .addr = (uintptr_t)(area + GUARD + 8192u * (unsigned int)i), .length = len[i],
					.lkey = mr->lkey };
		struct rnic_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = ops[i],
					   .send_flags = RNIC_SEND_SIGNALED }, *bad;

		if (ops[i] == RNIC_WR_ATOMIC_FETCH_AND_ADD) {
			wr.wr.atomic.remote_addr = 0x10000;
			wr.wr.atomic.rkey = 0x99;
			wr.wr.atomic.compare_add = 1;
		} else {
			wr.wr.rdma.remote_addr = 0x10000;
			wr.wr.rdma.rkey = 0x99;
		}
		if (rnic_post_send(qp[0], &wr, &bad) != 0)
			return;		/* the send queue is full: what is in flight is enough */
	}
}

/* Steer a parsed frame at one of A's QPs with fields that get it past the first checks, per the bits. */
static void
steer(struct rnic_pkt_desc *d, uint8_t bits)
{
	struct rnic_qp *q = qp[d->dqpn % NB_QP];
	struct rnic_qp_priv *p = rnic_qp_priv(q);

	d->dqpn = q->qp_num;
	if (bits & 1)
		d->psn = rnic_opcode_info(d->opcode)->is_request ? p->resp.epsn : p->req.una;
	if (bits & 2) {
		d->reth.rkey = d->atomiceth.rkey = (bits & 4) ? other_mr->rkey : mr->rkey;
		d->reth.va = (uintptr_t)area + (d->reth.va % (BUF + 2 * GUARD));
		d->atomiceth.va = ((uintptr_t)area + (d->atomiceth.va % (BUF + 2 * GUARD))) & ~7ull;
	}
	if (bits & 8)
		d->deth.qkey = 0x11111111;
	if (!(bits & 16)) {
		/* From the QPs' peer to A (a connected QP takes nothing else): the frame's own addresses only
		 * when the bit says so, for the address check. */
		d->ip_version = 4;
		d->sgid = peer_gid;
		d->dgid = own_gid;
		d->pkey = RNIC_DEFAULT_PKEY;	/* and of its partition: the responder drops any other */
	}
}

/* Nothing outside the buffer's bounds or behind another PD's key may have been written. */
static void
check_guards(void)
{
	for (unsigned int i = 0; i < GUARD; i++)
		if (area[i] != 0xa5 || area[GUARD + BUF + i] != 0xa5)
			fail("a write outside the registered buffer");
	for (unsigned int i = 0; i < 4096; i++)
		if (other[i] != 0x5a)
			fail("a write through another protection domain's key");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	post_requests();
	pump();
	while (off + 3 <= size) {
		uint32_t len = (uint32_t)data[off] << 8 | data[off + 1];
		uint8_t bits = data[off + 2];
		struct rnic_pkt_desc d;
		struct rte_mbuf *m;

		off += 3;
		if (len > size - off)
			len = (uint32_t)(size - off);
		if (rnic_pkt_parse(data + off, len, &d, 0) == RNIC_DROP_NONE) {
			steer(&d, bits);
			m = rte_pktmbuf_alloc(pool);
			if (m == NULL)
				fail("mbuf pool leak");
			if (rnic_pkt_build_mbuf(&d, m) < 0 || rte_eth_tx_burst(peer_port, 0, &m, 1) != 1)
				rte_pktmbuf_free(m);
		}
		off += len;
		pump();
	}
	pump();
	check_guards();
	/* A QP the input broke is made whole again for the next input; receive queues are refilled. */
	for (int i = 0; i < NB_QP; i++) {
		struct rnic_qp_priv *p = rnic_qp_priv(qp[i]);

		if (qp[i]->state != RNIC_QPS_RTS)
			connect_qp(qp[i]);
		else
			post_recvs(qp[i], (int)(RECV_DEPTH - (p->rq.idx->head - p->resp.rq_done)));
	}
	return 0;
}
