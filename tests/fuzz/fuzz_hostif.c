/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target for the engine's view of one tenant's shared memory: its QPs' host-interface blocks (SQ
 * and RQ WQEs, wr_ids, post times, producer and consumer indexes, the QP state word), its CQ's (CQEs,
 * doorbell record, producer index, arm word, error flag) and its doorbell queue (header and slots), all
 * written with arbitrary bytes while the tenant's own traffic (RC WRITE, READ, SEND, UC WRITE, UD SEND to
 * QPs on device B) runs, as an rnicd client could.
 *
 * The tenant is a context of device A with an rnicd client's owner id, its host-interface blocks on the
 * heap (as rnicd maps a client's memfd: AddressSanitizer sees every read past one) and its doorbell queue
 * attached to the device as rnicd attaches one. Beside it a victim (another context, another protection
 * domain) has its buffers on A and B filled with a canary, and so has a heap buffer the engine never hands
 * out. Beyond crashes, hangs and sanitizer reports the target checks that the canary never appears in a
 * frame either port receives, nor in the tenant's buffers. Both devices' stages run on the fuzzer's thread.
 *
 * An input is a list of records [kind][target][offset: 2 bytes][length][bytes]; the kinds are in enum op
 * below. The stages run where the input says, whole rounds (OP_PUMP) or a few packets at a time (OP_STEP),
 * and at its end until they have nothing left to do, so what it writes may land between any two packets.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_random.h>

#include "rnic.h"
#include "rnic_cq.h"
#include "rnic_dbq.h"
#include "rnic_pipeline.h"
#include "rnic_priv.h"
#include "rnic_qp.h"
#include "test_env.h"
#include "test_pipeline.h"

#define BUF 65536
#define NB_QP 3			/* RC, UC, UD */
#define DBQ_SIZE 64
#define OWNER 7			/* the tenant's client id */
#define QKEY 0x11111111
#define CANARY_BUF 16384
#define SETTLE_ROUNDS 1024	/* an input's traffic is a few thousand frames at most: 128 per device a round */
#define MBUFS_OUT 512		/* out of the pool between inputs: 4 TX buffers' spares and the cache (64) */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The record kinds (the first byte of a record, modulo OP_MAX). */
enum op {
	OP_QP_HIF,		/* write the bytes into QP target's host-interface block at offset */
	OP_CQ_HIF,		/* ... into the CQ's block */
	OP_DBQ,			/* ... into the doorbell queue (header and slots) */
	OP_DOORBELL,		/* publish the first 8 bytes as a doorbell in the queue, as a client's post would */
	OP_POST_SEND,		/* a well-formed work request on QP target (opcode, length from the bytes) */
	OP_POST_RECV,
	OP_PUMP,		/* run both devices' stages target + 1 times */
	OP_POLL,		/* poll the tenant's CQ */
	OP_STEP,		/* run each stage of both devices once, at most target % 32 + 1 packets or frames each */
	OP_MAX
};

static struct rnic_pipeline *pipe_a, *pipe_b;
static struct rte_mempool *pool;
static union rnic_gid gid_a, gid_b;

/* The tenant on A, its peer QPs on B (another context, the tenant's buffer there), the victim. */
static struct rnic_context *tenant, *peer, *victim;
static struct rnic_pd *tpd, *ppd, *vpd;
static struct rnic_cq *tcq, *pcq, *vcq;
static struct rnic_mr *tmr, *pmr, *vmr;
static struct rnic_qp *tqp[NB_QP], *pqp[NB_QP], *vqp;
static uint8_t *tbuf, *pbuf, *vbuf, *heap_canary;
static struct rnic_dbq *dbq;
static size_t qp_hif_size[NB_QP];
static uint64_t canary;			/* 8 random bytes, and their image under a multiplication: the */
static uint64_t canary_image;		/* fuzzer is never shown the bytes it must not find */
#define CANARY_MUL 0x9e3779b97f4a7c15ull
static volatile int canary_seen;

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_hostif: %s\n", what);
	abort();
}

/* The tenant's host-interface memory comes from the heap, as an rnicd client's comes from its memfd. */
static void *
heap_alloc(void *arg, size_t size)
{
	void *p = aligned_alloc(4096, RTE_ALIGN_CEIL(size, 4096));

	(void)arg;
	if (p != NULL)
		memset(p, 0, size);
	return p;
}

static void
heap_free(void *arg, void *p)
{
	(void)arg;
	free(p);
}

static const struct rnic_hostmem_ops heap_ops = { .alloc = heap_alloc, .free = heap_free };

/* Not instrumented for coverage: the comparisons would show the fuzzer what it is looking for (and cost
 * most of an input's time). */
__attribute__((no_sanitize("coverage"), noinline)) static int
has_canary(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len, *c;

	/* Where the canary's first byte is, then the whole word. */
	for (; (c = memchr(p, (uint8_t)canary, (size_t)(end - p))) != NULL && end - c >= 8; p = c + 1) {
		uint64_t w;

		memcpy(&w, c, sizeof(w));
		if (w * CANARY_MUL == canary_image)
			return 1;
	}
	return 0;
}

static void
fill_canary(uint8_t *p, size_t len)
{
	for (size_t i = 0; i + sizeof(canary) <= len; i += sizeof(canary))
		memcpy(p + i, &canary, sizeof(canary));
}

/* Every frame either port receives is looked at before the engine parses it. */
static uint16_t
scan_frames(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max, void *arg)
{
	(void)port;
	(void)queue;
	(void)max;
	(void)arg;
	for (uint16_t i = 0; i < n; i++)
		if (has_canary(rte_pktmbuf_mtod(pkts[i], const uint8_t *), rte_pktmbuf_data_len(pkts[i])))
			canary_seen = 1;
	return n;
}

static void
pump(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		test_pipeline_pump(pipe_a);
		test_pipeline_pump(pipe_b);
	}
}

/* Run both devices' stages until neither has anything left to do (a loss or RNR timer may still wake a QP
 * later), at most rounds times: every frame an input made is received (and scanned) before the input ends,
 * and none is left waiting in a port for the next input. */
static void
settle(int rounds)
{
	for (int i = 0; i < rounds; i++)
		if (test_pipeline_pump(pipe_a) + test_pipeline_pump(pipe_b) == 0)
			return;
}

static void
drain(struct rnic_cq *cq)
{
	struct rnic_wc wc[64];

	while (rnic_poll_cq(cq, 64, wc) > 0)
		;
}

static struct rnic_qp *
make_qp(struct rnic_pd *pd, struct rnic_cq *cq, enum rnic_qp_type type)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	struct rnic_qp *qp = rnic_create_qp(pd, &ia);

	if (qp == NULL)
		fail("create_qp");
	return qp;
}

static void
post_recv(struct rnic_qp *qp, uint8_t *base, uint32_t lkey, uint32_t slot)
{
	struct rnic_sge sge = { .addr = (uintptr_t)(base + 4096u * (slot % 8)), .length = 4096, .lkey = lkey };
	struct rnic_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	rnic_post_recv(qp, &wr, &bad);
}

static void
connect_qp(struct rnic_qp *qp, uint32_t peer_qpn, const union rnic_gid *gid)
{
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 1, .timeout = 1, .retry_cnt = 1, .rnr_retry = 1 };
	struct rnic_qp_attr reset = { .qp_state = RNIC_QPS_RESET };

	if (rnic_modify_qp(qp, &reset, RNIC_QP_STATE) != 0 || test_connect(qp, peer_qpn, gid, &path) != 0)
		fail("connect");
}

/* A fresh tenant: its CQ and QPs, the peers on B connected to them, receives posted. */
static void
tenant_up(void)
{
	static const enum rnic_qp_type types[NB_QP] = { RNIC_QPT_RC, RNIC_QPT_UC, RNIC_QPT_UD };
	struct rnic_qp_hif_layout l;

	tcq = rnic_create_cq(tenant, 64, NULL, NULL, 0);
	if (tcq == NULL)
		fail("create_cq");
	for (int i = 0; i < NB_QP; i++) {
		struct rnic_qp_priv *q;

		tqp[i] = make_qp(tpd, tcq, types[i]);
		q = rnic_qp_priv(tqp[i]);
		rnic_qp_hif_layout(q->sq.wqe_cnt, q->sq.stride, q->rq.wqe_cnt, q->rq.stride, &l);
		qp_hif_size[i] = l.size;
		connect_qp(tqp[i], pqp[i]->qp_num, &gid_b);
		connect_qp(pqp[i], tqp[i]->qp_num, &gid_a);
		for (uint32_t s = 0; s < 16; s++) {
			post_recv(tqp[i], tbuf + 32768, tmr->lkey, s);
			post_recv(pqp[i], pbuf, pmr->lkey, s);
		}
	}
}

static void
tenant_down(void)
{
	for (int i = 0; i < NB_QP; i++)
		if (rnic_destroy_qp(tqp[i]) != 0)
			fail("destroy_qp");
	/* A CQ in error stays so: the next input gets a new one. */
	if (rnic_destroy_cq(tcq) != 0)
		fail("destroy_cq");
	drain(pcq);
}

static void
open_all(void)
{
	struct rnic_device **list = rnic_get_device_list(NULL);

	tenant = rnic_open_device(list[0]);
	victim = rnic_open_device(list[0]);
	peer = rnic_open_device(list[1]);
	rnic_free_device_list(list);
	if (tenant == NULL || victim == NULL || peer == NULL || rnic_query_gid(tenant, 1, 0, &gid_a) != 0 ||
	    rnic_query_gid(peer, 1, 0, &gid_b) != 0)
		fail("devices");
	/* What rnicd sets for a client's context: its owner id, its memory. */
	rnic_context_priv(tenant)->owner = OWNER;
	rnic_context_priv(tenant)->hostmem = &heap_ops;
}

static struct rnic_mr *
reg(struct rnic_pd *pd, uint8_t *p, size_t len)
{
	struct rnic_mr *mr = rnic_reg_mr(pd, p, len, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
					 RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);

	if (mr == NULL)
		fail("reg_mr");
	return mr;
}

int
LLVMFuzzerInitialize(int *argc, char **argv[])
{
	static char *eal[] = { "fuzz", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l", "0",
			       "--log-level=1", NULL };
	struct rnic_qp *wqp;

	(void)argc;
	(void)argv;
	if (rnic_engine_init(9, eal) < 0)
		fail("engine init");
	open_all();
	pool = rte_pktmbuf_pool_create("fuzz_hostif", 4095, 64, 0, RTE_PKTMBUF_HEADROOM + 4096, SOCKET_ID_ANY);
	pipe_a = pool != NULL ? test_pipeline_attach(tenant, pool) : NULL;
	pipe_b = pipe_a != NULL ? test_pipeline_attach(peer, pool) : NULL;
	if (pipe_b == NULL)
		fail("pipelines");
	for (uint16_t q = 0; q < 2; q++)
		if (rte_eth_add_rx_callback(rnic_ctx_dev(tenant)->port_id, q, scan_frames, NULL) == NULL ||
		    rte_eth_add_rx_callback(rnic_ctx_dev(peer)->port_id, q, scan_frames, NULL) == NULL)
			fail("rx callbacks");
	canary = rte_rand() | 0x8080808080808080ull;	/* no byte of it is a buffer's fill */
	canary_image = canary * CANARY_MUL;
	tbuf = aligned_alloc(4096, BUF);
	pbuf = aligned_alloc(4096, BUF);
	vbuf = aligned_alloc(4096, CANARY_BUF);
	heap_canary = aligned_alloc(4096, CANARY_BUF);
	dbq = calloc(1, rnic_dbq_memsize(DBQ_SIZE));
	if (tbuf == NULL || pbuf == NULL || vbuf == NULL || heap_canary == NULL || dbq == NULL)
		fail("memory");
	fill_canary(vbuf, CANARY_BUF);
	fill_canary(heap_canary, CANARY_BUF);
	dbq->size = DBQ_SIZE;
	if (rnic_device_attach_dbq(rnic_ctx_dev(tenant), dbq, DBQ_SIZE, OWNER, 0) != 0)
		fail("attach dbq");
	tpd = rnic_alloc_pd(tenant);
	ppd = rnic_alloc_pd(peer);
	vpd = rnic_alloc_pd(victim);
	pcq = rnic_create_cq(peer, 1024, NULL, NULL, 0);
	vcq = rnic_create_cq(victim, 64, NULL, NULL, 0);
	if (tpd == NULL || ppd == NULL || vpd == NULL || pcq == NULL || vcq == NULL)
		fail("objects");
	tmr = reg(tpd, tbuf, BUF);
	pmr = reg(ppd, pbuf, BUF);
	vmr = reg(vpd, vbuf, CANARY_BUF);
	for (int i = 0; i < NB_QP; i++)
		pqp[i] = make_qp(ppd, pcq, i == 0 ? RNIC_QPT_RC : i == 1 ? RNIC_QPT_UC : RNIC_QPT_UD);
	/* The victim's RC QP and its peer on B (in the peer's context), connected, idle. */
	vqp = make_qp(vpd, vcq, RNIC_QPT_RC);
	wqp = make_qp(ppd, pcq, RNIC_QPT_RC);
	connect_qp(vqp, wqp->qp_num, &gid_b);
	connect_qp(wqp, vqp->qp_num, &gid_a);
	for (uint32_t s = 0; s < 16; s++)
		post_recv(vqp, vbuf, vmr->lkey, s);
	return 0;
}

/* A well-formed work request of the tenant's, its kind and size from the bytes. */
static void
post_send(int i, const uint8_t *b, uint32_t len)
{
	static const enum rnic_wr_opcode ops[] = {
		RNIC_WR_RDMA_WRITE, RNIC_WR_RDMA_READ, RNIC_WR_SEND, RNIC_WR_SEND_WITH_IMM,
		RNIC_WR_ATOMIC_FETCH_AND_ADD, RNIC_WR_ATOMIC_CMP_AND_SWP, RNIC_WR_RDMA_WRITE_WITH_IMM,
	};
	uint8_t k = len > 0 ? b[0] : 0, s = len > 1 ? b[1] : 0;
	enum rnic_wr_opcode op = i == 2 ? RNIC_WR_SEND : i == 1 ? RNIC_WR_RDMA_WRITE : ops[k % RTE_DIM(ops)];
	int atomic = op == RNIC_WR_ATOMIC_FETCH_AND_ADD || op == RNIC_WR_ATOMIC_CMP_AND_SWP;
	/* Up to 60 KB: messages of more packets than a visit of the QP sends (16). */
	uint32_t size = atomic ? 8 : i == 2 ? 64u * (s % 16u) : RTE_MIN(256u * s, BUF - 4096u * (k % 8) - 128);
	struct rnic_sge sge = { .addr = (uintptr_t)(tbuf + 4096u * (k % 8)), .length = size, .lkey = tmr->lkey };
	struct rnic_ah_attr av = { .is_global = 1, .port_num = 1, .grh = { .dgid = gid_b } };
	struct rnic_ah *ah = i == 2 ? rnic_create_ah(tpd, &av) : NULL;
	struct rnic_send_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1, .opcode = op,
				   .send_flags = RNIC_SEND_SIGNALED | ((k & 0x80) && !atomic && op != RNIC_WR_RDMA_READ &&
								       size <= 64 ? RNIC_SEND_INLINE : 0),
				   .wr = { .rdma = { .remote_addr = (uintptr_t)(pbuf + 8u * (s % 16)), .rkey = pmr->rkey } }, };
	struct rnic_send_wr *bad;

	if (atomic)
		wr.wr.atomic = (typeof(wr.wr.atomic)){ .remote_addr = (uintptr_t)(pbuf + 8u * (s % 16)), .rkey = pmr->rkey,
						       .compare_add = k };
	if (ah != NULL)
		wr.wr.ud = (typeof(wr.wr.ud)){ .ah = ah, .remote_qpn = pqp[2]->qp_num, .remote_qkey = QKEY };
	rnic_post_send(tqp[i], &wr, &bad);
	if (ah != NULL)
		rnic_destroy_ah(ah);
}

/* Write len bytes at off of a block of size bytes (wrapped into it, clipped at its end). */
static void
scribble(void *block, size_t size, uint32_t off, const uint8_t *b, uint32_t len)
{
	off %= (uint32_t)size;
	memcpy((uint8_t *)block + off, b, RTE_MIN((size_t)len, size - off));
}

/* A doorbell as a client's post publishes it: the slot at the producer index, then the index. */
static void
ring(const uint8_t *b, uint32_t len)
{
	uint32_t tail = __atomic_load_n(&dbq->prod_tail, __ATOMIC_RELAXED);
	uint64_t db = 0;

	memcpy(&db, b, RTE_MIN((size_t)len, sizeof(db)));
	dbq->slot[tail & (DBQ_SIZE - 1)] = db;
	__atomic_store_n(&dbq->prod_head, tail + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&dbq->prod_tail, tail + 1, __ATOMIC_RELEASE);
}

static void
run(uint8_t kind, uint8_t target, uint32_t off, const uint8_t *b, uint32_t len)
{
	struct rnic_wc wc[16];
	int i = target % NB_QP;

	switch ((enum op)(kind % OP_MAX)) {
	case OP_QP_HIF:
		scribble(rnic_qp_priv(tqp[i])->hif, qp_hif_size[i], off, b, len);
		break;
	case OP_CQ_HIF:
		scribble(rnic_cq_priv(tcq)->cqes, rnic_cq_hif_size(rnic_cq_priv(tcq)->pub.cqe + 1), off, b, len);
		break;
	case OP_DBQ:
		scribble(dbq, rnic_dbq_memsize(DBQ_SIZE), off, b, len);
		break;
	case OP_DOORBELL:
		ring(b, len);
		break;
	case OP_POST_SEND:
		post_send(i, b, len);
		break;
	case OP_POST_RECV:
		post_recv(tqp[i], tbuf + 32768, tmr->lkey, off);
		break;
	case OP_PUMP:
		pump(target % 8 + 1);
		break;
	case OP_STEP:
		test_pipeline_step(pipe_a, target % 32u + 1);
		test_pipeline_step(pipe_b, target % 32u + 1);
		break;
	case OP_POLL:
		rnic_poll_cq(tcq, 16, wc);
		break;
	default:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	/* A fresh tenant for every input, so that an input found failing fails again alone. */
	tenant_up();
	memset(tbuf, 0x11, BUF);
	memset(pbuf, 0x22, BUF);
	while (off + 5 <= size) {
		uint8_t kind = data[off], target = data[off + 1];
		uint32_t at = (uint32_t)data[off + 2] << 8 | data[off + 3], len = data[off + 4];

		off += 5;
		len = (uint32_t)RTE_MIN((size_t)len, size - off);
		run(kind, target, at, data + off, len);
		off += len;
	}
	settle(SETTLE_ROUNDS);
	if (canary_seen || has_canary(tbuf, BUF) || has_canary(pbuf, BUF))
		fail("the canary (the victim's or the engine's memory) reached a frame or the tenant's buffers");
	tenant_down();
	drain(vcq);
	/* The requester frees the frames the destroyed QPs kept for resending. What stays out of the pool then
	 * is the stages' spares and the pool's cache; a frame lost by an input would add up over the run. */
	settle(SETTLE_ROUNDS);
	if (rte_mempool_in_use_count(pool) > MBUFS_OUT)
		fail("mbufs leak");
	return 0;
}
