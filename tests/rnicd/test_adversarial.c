/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd under hostile tenants (issue 15, doc/rnicd.md "Threat model"). The test starts rnicd with a canary
 * pattern in its memory (RNICD_TEST_CANARY) and a victim tenant (uid 0): one process with a context on each
 * device, doing rounds of verified RC WRITE 64 KB, SEND and READ 64 KB, with a secret buffer of its own
 * canary pattern. Beside it, hostile tenants (other uids, setuid in the child) attack:
 *
 *   wqe-rewrite      rewrite its own inline WRITE WQEs in its SQ while the engine sends them (finding 1)
 *   doorbell-flood   keep its doorbell queue full, and 8 QPs of 128 WRITEs of 64 KB each (finding 2)
 *   spoof            a QP aimed at the victim's QPN with the victim's rkey, sweeping the PSNs (finding 3)
 *   quota            4 processes of one tenant: contexts, QPs, MRs and connections until refused (finding 4)
 *   scribble         rewrite its CQ's consumer index, error flag and arm word, its QP's indexes (finding 5)
 *   keys             register and deregister one buffer over and over; every stale rkey must fail (finding 6)
 *   regmr            write-sealed and read-only memfds, a read-only region, regions gone (finding 7)
 *   garbage          random bytes into every ring and doorbell queue of its own, random doorbells
 *
 *   test_adversarial RNICD all|ATTACK...
 *
 * Each run measures the victim twice for PHASE seconds: beside as many busy-looping processes as there are
 * attackers (the comparison), then beside the attackers. Checks: the victim's data verifies in both; its
 * rate beside the attackers is at least half its rate beside the busy loops (printed); no attacker ever
 * finds either canary in its memory or in what it received; the daemon never dies, logs a bounded number
 * of lines, and exits 0 on SIGTERM; and what each attack must see (quota sums, refused keys, ...).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "rnic_cq.h"
#include "rnic_dbq.h"
#include "rnic_qp.h"
#include "rnic_wqe.h"

#define WINDOWS 8			/* the victim's measurement: windows of WINDOW_S, busy loops and */
#define WINDOW_S 0.5			/* attackers taking turns (even windows: busy loops) */
#define STALL_S 10.0			/* a victim's completion later than this: it was starved */
#define DAEMON_CANARY 0x3f8c51e2a7d90b64ull
#define VICTIM_CANARY 0xc0ffee5eedba5e11ull
#define CANARY_BYTES (256u << 10)
#define MAX_LOG_LINES 400		/* the daemon's log over a whole run (every attack logs once or not at all) */
#define UID_ENGINE 4242			/* the tenant that loads the engine (rewrite, flood, spoof, scribble, garbage) */
#define UID_CONTROL 4243		/* keys, regmr */
#define UID_QUOTA 4244			/* quota: its own tenant, with small quotas */
#define QUOTA_PROCS 4
#define QUOTA_CONN 12
#define QUOTA_CTX 6
#define QUOTA_QP 10
#define QUOTA_MR 5

enum attack {
	A_REWRITE, A_FLOOD, A_SPOOF, A_QUOTA, A_SCRIBBLE, A_KEYS, A_REGMR, A_GARBAGE, A_MAX
};

static const char *const attack_names[A_MAX] = {
	"wqe-rewrite", "doorbell-flood", "spoof", "quota", "scribble", "keys", "regmr", "garbage",
};

/*
 * What the parent and its children share: the window (-1 before the first, WINDOWS after the last), and
 * the victim's rounds done in each. Busy loops run in even windows, attackers in odd ones, and wait in the
 * others, so that the comparison and the attack alternate under the same load of the machine.
 */
struct shared {
	volatile int window;
	volatile uint32_t rounds[WINDOWS + 2];	/* by window + 1 */
	volatile uint32_t victim_psn;	/* the PSN the victim's target QP expects next, about (for the spoofer) */
};

static char log_path[64];
static double deadline;			/* in a child: when it must end at the latest */
static struct shared *sh;
static int my_turn = -1;		/* a busy loop: 0; an attacker: 1 (window parity); the victim: -1 */

static int
over(void)
{
	return sh->window >= WINDOWS || now_s() > deadline;
}

/* Whether an attacker or busy loop goes on: it waits while the windows are the others'. */
static int
running(void)
{
	while (!over() && (sh->window < 0 || (sh->window & 1) != my_turn))
		usleep(1000);
	return !over();
}

/* ------------------------------------------------------------------------------------------------------ */
/* Canaries                                                                                                 */

static void
fill_pattern(uint8_t *p, size_t len, uint64_t pattern)
{
	for (size_t i = 0; i + sizeof(pattern) <= len; i += sizeof(pattern))
		memcpy(p + i, &pattern, sizeof(pattern));
}

/* Whether memory holds either canary, at any byte offset. */
static int
has_canary(const uint8_t *p, size_t len)
{
	static const uint64_t canaries[] = { DAEMON_CANARY, VICTIM_CANARY };

	for (unsigned int i = 0; i < RTE_DIM(canaries); i++)
		if (memmem(p, len, &canaries[i], sizeof(canaries[i])) != NULL)
			return 1;
	return 0;
}

static void
check_no_canary(const char *what, const void *p, size_t len)
{
	CHECK(!has_canary(p, len), "%s holds a canary: another tenant's or the daemon's memory leaked", what);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Helpers of the tenants' processes                                                                        */

/* The next completion within `seconds`: 1 and *wc, or 0. */
static int
wait_wc_for(struct rnic_cq *cq, struct rnic_wc *wc, double seconds)
{
	double until = now_s() + seconds;
	int n;

	while ((n = rnic_poll_cq(cq, 1, wc)) == 0) {
		if (now_s() > until)
			return 0;
		/* The victim spins, as its busy loop or attacker does on its CPU (pin_tenants): a yield would
		 * hand that CPU over for a whole time slice, and its rate would measure the kernel's scheduler. */
		if (my_turn != -1)
			sched_yield();
	}
	CHECK(n == 1, "poll_cq: %d", n);
	return 1;
}

static void
drain_cq(struct rnic_cq *cq)
{
	struct rnic_wc wc[32];

	while (rnic_poll_cq(cq, 32, wc) > 0)
		;
}

/* A child of the test: it ends with the process that made it (a failed test leaves nothing running). */
static void
die_with_parent(void)
{
	CHECK(prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "prctl: %s", strerror(errno));
}

/* Become a tenant of its own: another uid, then a client of the daemon. */
static void
become(uid_t uid)
{
	CHECK(setgid(uid) == 0 && setuid(uid) == 0, "setuid %u: %s", (unsigned int)uid, strerror(errno));
	die_with_parent();	/* after setuid, which clears it */
	client_init();
}

static void
ready(int fd)
{
	CHECK(write(fd, "r", 1) == 1, "ready");
	close(fd);
}

static void
post_flags(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
	   uint32_t rkey, int flags)
{
	struct rnic_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct rnic_send_wr wr = { .wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = flags,
				   .wr.rdma = { .remote_addr = raddr, .rkey = rkey } };
	struct rnic_send_wr *bad;

	(void)rnic_post_send(qp, &wr, &bad);	/* a full SQ or a QP in error: the attacker goes on */
}

/* Two ends of one tenant, x on rnic0 and y on rnic1, their QPs connected along path. */
static void
hostile_pair(struct end *x, struct end *y, const struct path *path)
{
	struct info ix, iy;

	end_open(x, 0);
	end_open(y, 1);
	ix = end_info(x, x->qp);
	iy = end_info(y, y->qp);
	CHECK(connect_path(x->qp, &iy, path) == 0 && connect_path(y->qp, &ix, path) == 0, "connect");
}

/* Both QPs of a pair back to RESET and connected again (after an error), their CQs emptied. */
static void
reset_pair(struct end *x, struct end *y, const struct path *path)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RESET };
	struct info ix = end_info(x, x->qp), iy = end_info(y, y->qp);

	rnic_modify_qp(x->qp, &a, RNIC_QP_STATE);
	rnic_modify_qp(y->qp, &a, RNIC_QP_STATE);
	drain_cq(x->cq);
	drain_cq(y->cq);
	connect_path(x->qp, &iy, path);
	connect_path(y->qp, &ix, path);
}

static const struct path mtu1024 = { .mtu = RNIC_MTU_1024, .timeout = 14, .retry_cnt = 7 };

/* ------------------------------------------------------------------------------------------------------ */
/* The victim                                                                                               */

/* What the spoofer is given, as if it had guessed it: the victim's target QP and two of its regions. */
struct victim_info {
	struct info target;		/* b: QPN, GID, its buffer's rkey and address */
	uint64_t secret_addr;
	uint32_t secret_rkey;
};

/* A completion of op within STALL_S: 1, or 0 when starved. Any other outcome fails the victim. */
static int
victim_wait(struct rnic_cq *cq, enum rnic_wc_opcode op)
{
	struct rnic_wc wc;

	if (!wait_wc_for(cq, &wc, STALL_S))
		return 0;
	CHECK(wc.status == RNIC_WC_SUCCESS && wc.opcode == op, "victim: completion %s, opcode %d (want %d)",
	      rnic_wc_status_str(wc.status), wc.opcode, op);
	return 1;
}

/* One round: WRITE a's pattern to b, SEND the round number, b checks; READ b's pattern back, a checks. */
static int
victim_round(struct end *a, struct end *b, const struct info *ib, uint32_t r)
{
	uint64_t v = r, got;

	fill(a->buf, MSG, 2 * r + 1);
	post(a->qp, RNIC_WR_RDMA_WRITE, (uintptr_t)a->buf, MSG, a->mr->lkey, ib->addr + MSG, ib->rkey);
	if (!victim_wait(a->cq, RNIC_WC_RDMA_WRITE))
		return 0;
	memcpy(a->buf + SEND_OFF, &v, sizeof(v));
	post(a->qp, RNIC_WR_SEND, (uintptr_t)a->buf + SEND_OFF, sizeof(v), a->mr->lkey, 0, 0);
	if (!victim_wait(a->cq, RNIC_WC_SEND) || !victim_wait(b->cq, RNIC_WC_RECV))
		return 0;
	memcpy(&got, b->buf + RECV_OFF, sizeof(got));
	CHECK(got == v, "victim: round %u: SEND carried %llu", r, (unsigned long long)got);
	post_recv(b);
	CHECK(matches(b->buf + MSG, MSG, 2 * r + 1), "victim: round %u: the WRITE's data differs", r);
	fill(b->buf, MSG, 2 * r + 2);
	post(a->qp, RNIC_WR_RDMA_READ, (uintptr_t)a->buf + MSG, MSG, a->mr->lkey, ib->addr, ib->rkey);
	if (!victim_wait(a->cq, RNIC_WC_RDMA_READ))
		return 0;
	CHECK(matches(a->buf + MSG, MSG, 2 * r + 2), "victim: round %u: the READ's data differs", r);
	return 1;
}

/* Halfway: the victim's tenant still gets new objects, whatever the other tenants hold. */
static void
victim_new_objects(struct end *a)
{
	struct rnic_cq *cq = rnic_create_cq(a->ctx, 16, NULL, NULL, 0);
	struct rnic_qp *qp = cq != NULL ? new_qp_depth(a, cq, 16) : NULL;
	struct rnic_mr *mr = rnic_reg_mr(a->pd, a->buf, 4096, RNIC_ACCESS_LOCAL_WRITE);

	CHECK(cq != NULL && qp != NULL && mr != NULL, "victim: a new CQ, QP or MR was refused: %s", strerror(errno));
	CHECK(rnic_destroy_qp(qp) == 0 && rnic_destroy_cq(cq) == 0 && rnic_dereg_mr(mr) == 0, "victim: destroy");
}

/* Rounds until the last window ends, each counted in its window; b's connection details go to info_fd (for
 * the spoofer, and to say it is ready). Exits 0, or 2 when starved (no completion for STALL_S). */
static void __attribute__((noreturn))
victim(int info_fd)
{
	struct end a = { 0 }, b = { 0 };
	struct victim_info vi;
	struct info ia, ib;
	struct rnic_mr *secret_mr;
	uint8_t *secret;
	uint32_t round = 0;
	int extra = 0;

	client_init();
	end_open(&a, 0);
	end_open(&b, 1);
	secret = rnic_alloc_buf(CANARY_BYTES);
	CHECK(secret != NULL, "rnic_alloc_buf");
	fill_pattern(secret, CANARY_BYTES, VICTIM_CANARY);
	secret_mr = rnic_reg_mr(b.pd, secret, CANARY_BYTES, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
				RNIC_ACCESS_REMOTE_READ);
	CHECK(secret_mr != NULL, "victim: reg_mr: %s", strerror(errno));
	ia = end_info(&a, a.qp);
	ib = end_info(&b, b.qp);
	connect_qp(a.qp, &ib);
	connect_qp(b.qp, &ia);
	post_recv(&b);
	vi = (struct victim_info){ .target = ib, .secret_addr = (uintptr_t)secret, .secret_rkey = secret_mr->rkey };
	CHECK(write(info_fd, &vi, sizeof(vi)) == sizeof(vi), "victim: info");
	while (!over()) {
		if (!victim_round(&a, &b, &ib, round++))
			_exit(2);
		/* WRITE 64 KB: 64 PSNs at MTU 1024, SEND: 1, READ 64 KB: 64. As if the attacker guessed well. */
		sh->victim_psn = (round * 129) & 0xffffff;
		sh->rounds[RTE_MIN(sh->window, WINDOWS) + 1]++;
		/* In an attackers' window: the victim's tenant still gets new objects. */
		if (!extra && sh->window == WINDOWS - 1) {
			victim_new_objects(&a);
			extra = 1;
		}
	}
	for (uint32_t i = 0; i < CANARY_BYTES; i += 8)
		CHECK(memcmp(secret + i, &(uint64_t){ VICTIM_CANARY }, 8) == 0,
		      "victim: another tenant wrote into its secret buffer (at byte %u)", i);
	_exit(0);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 1. WQE rewrite, back and forth while the engine sends the WQE: a WRITE of 64 KB from a buffer made
 *    "inline, length 0" (the engine parses it again for each visit of 16 packets); or the last of a chain
 *    of inline WRITEs (MTU 256: one of 1 packet, then 2 packets each, so that a visit ends inside the last)
 *    made longer, larger, of no known opcode, or random                                                     */

#define REWRITE_CHAIN 9

/* The WQE just posted on the QP's SQ, in this process's mapping of the block the engine reads. */
static uint8_t *
last_wqe(struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);

	return rnic_wq_slot(&q->sq, q->sq.idx->head - 1);
}

static void
rewrite_wqe(uint8_t *w, uint32_t variant)
{
	struct rnic_wqe_next *next = (struct rnic_wqe_next *)w;
	uint32_t *inl = (uint32_t *)(w + sizeof(struct rnic_wqe_next) + sizeof(struct rnic_wqe_raddr));
	uint32_t flags = rte_be_to_cpu_32(next->flags);

	switch (variant % 5) {
	case 0:			/* "inline, length 0" */
		next->flags = rte_cpu_to_be_32(flags | RNIC_WQE_F_INLINE);
		*inl = 0;
		break;
	case 1:			/* inline, far longer than the WQE */
		next->flags = rte_cpu_to_be_32(flags | RNIC_WQE_F_INLINE);
		*inl = rte_cpu_to_be_32(0xfffff);
		break;
	case 2:			/* the WQE's own size: the largest */
		next->flags = rte_cpu_to_be_32(flags | 0x3fu << RNIC_WQE_F_SIZE_SHIFT);
		break;
	case 3:			/* an opcode that does not exist: the WQE no longer parses */
		next->flags = rte_cpu_to_be_32((flags & 0x00ffffffu) | 0x7fu << RNIC_WQE_F_OPCODE_SHIFT);
		break;
	default:
		for (unsigned int i = 0; i < 64; i++)
			w[i] = (uint8_t)rand();
		break;
	}
}

/* Post the chain; returns the last WQE's address and its size in bytes. */
static uint8_t *
post_chain(struct end *x, struct end *y, uint32_t *len)
{
	struct rnic_sge sge[REWRITE_CHAIN];
	struct rnic_send_wr wr[REWRITE_CHAIN], *bad;

	for (int i = 0; i < REWRITE_CHAIN; i++) {
		sge[i] = (struct rnic_sge){ .addr = (uintptr_t)x->buf + 512 * i, .length = i == 0 ? 100 : 512,
					    .lkey = x->mr->lkey };
		wr[i] = (struct rnic_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1, .opcode = RNIC_WR_RDMA_WRITE,
			.send_flags = RNIC_SEND_INLINE | RNIC_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)y->buf + MSG + 512 * i, .rkey = y->mr->rkey },
			.next = i + 1 < REWRITE_CHAIN ? &wr[i + 1] : NULL,
		};
	}
	*len = rnic_send_wqe_size(1, 0, 0, 0, 1, 512);
	return rnic_post_send(x->qp, wr, &bad) == 0 ? last_wqe(x->qp) : NULL;
}

/* Post a WRITE of 64 KB from x's buffer; returns its WQE and its size in bytes. */
static uint8_t *
post_big(struct end *x, struct end *y, uint32_t *len)
{
	struct rnic_sge sge = { .addr = (uintptr_t)x->buf, .length = MSG, .lkey = x->mr->lkey };
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_RDMA_WRITE,
				   .send_flags = RNIC_SEND_SIGNALED,
				   .wr.rdma = { .remote_addr = (uintptr_t)y->buf + MSG, .rkey = y->mr->rkey } };
	struct rnic_send_wr *bad;

	*len = rnic_send_wqe_size(1, 0, 0, 1, 0, 0);
	return rnic_post_send(x->qp, &wr, &bad) == 0 ? last_wqe(x->qp) : NULL;
}

static void
attack_rewrite(int ready_fd)
{
	static const struct path mtu256 = { .mtu = RNIC_MTU_256, .timeout = 10, .retry_cnt = 3 };
	static const uint8_t zero[4096];
	struct end x = { 0 }, y = { 0 };
	uint8_t orig[1024], bad[1024];
	uint32_t n = 0, len;

	hostile_pair(&x, &y, &mtu256);
	fill(x.buf, MSG, 1);
	ready(ready_fd);
	while (running()) {
		int big = n % 4 != 3, failed;
		uint32_t wqes = big ? 1 : REWRITE_CHAIN;
		struct rnic_wc wc;
		uint8_t *w;

		memset(y.buf + MSG, 0, MSG);
		w = big ? post_big(&x, &y, &len) : post_chain(&x, &y, &len);
		failed = w == NULL;
		if (w != NULL) {
			memcpy(orig, w, len);
			memcpy(bad, w, len);
			if (big)	/* inline, no bytes */
				rewrite_wqe(bad, 0);
			else
				rewrite_wqe(bad, n / 4);
			/* Back and forth, so that one parse sees one version and the next the other. */
			for (int k = 0; k < 4000; k++)
				memcpy(w, k & 1 ? orig : bad, len);
		}
		n++;
		for (uint32_t i = 0; !failed && i < wqes; i++)
			failed = !wait_wc_for(x.cq, &wc, 1.0) || wc.status != RNIC_WC_SUCCESS;
		if (failed)
			reset_pair(&x, &y, &mtu256);
		check_no_canary("wqe-rewrite: the target buffer", y.buf, BUF_BYTES);
		/* A WRITE of the buffer, or of nothing (a WQE parsed as inline of no bytes): never other bytes. */
		if (big && !failed)
			for (uint32_t i = 0; i < MSG; i += sizeof(zero))
				CHECK(memcmp(y.buf + MSG + i, x.buf + i, sizeof(zero)) == 0 ||
				      memcmp(y.buf + MSG + i, zero, sizeof(zero)) == 0,
				      "wqe-rewrite: the engine sent bytes that were not in the WQE's buffer (at %u)", i);
	}
	check_no_canary("wqe-rewrite: its own buffer", x.buf, BUF_BYTES);
	printf("wqe-rewrite: %u WQEs rewritten while sent\n", n);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 2. Doorbell flood: 8 QPs of 128 WRITEs of 64 KB kept full, and the doorbell queue kept full of doorbells
 *    of them, of QPs that are not there, and of a QP that may not send (INIT)                             */

#define FLOOD_QPS 8
#define FLOOD_DEPTH 128

static void
attack_flood(int ready_fd)
{
	struct end x = { 0 }, y = { 0 };
	struct rnic_qp *qx[FLOOD_QPS], *qy[FLOOD_QPS], *init_qp;
	struct rnic_qp_attr init = { .qp_state = RNIC_QPS_INIT, .port_num = 1 };
	struct rnic_cq *cx, *cy;
	struct rnic_dbq *dbq;
	uint32_t left[FLOOD_QPS];
	uint64_t pushed = 0, writes = 0;

	end_open(&x, 0);
	end_open(&y, 1);
	cx = rnic_create_cq(x.ctx, FLOOD_QPS * FLOOD_DEPTH * 2, NULL, NULL, 0);
	cy = rnic_create_cq(y.ctx, FLOOD_QPS * FLOOD_DEPTH * 2, NULL, NULL, 0);
	CHECK(cx != NULL && cy != NULL, "flood: CQs: %s", strerror(errno));
	for (int i = 0; i < FLOOD_QPS; i++) {
		struct info ix, iy;

		qx[i] = new_qp_depth(&x, cx, FLOOD_DEPTH);
		qy[i] = new_qp_depth(&y, cy, FLOOD_DEPTH);
		CHECK(qx[i] != NULL && qy[i] != NULL, "flood: QPs: %s", strerror(errno));
		ix = end_info(&x, qx[i]);
		iy = end_info(&y, qy[i]);
		connect_qp(qx[i], &iy);
		connect_qp(qy[i], &ix);
		left[i] = FLOOD_DEPTH;
	}
	init_qp = new_qp_depth(&x, cx, 16);
	CHECK(init_qp != NULL && rnic_modify_qp(init_qp, &init, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
						 RNIC_QP_ACCESS_FLAGS) == 0, "flood: a QP in INIT");
	dbq = rnic_context_priv(x.ctx)->dbq;
	ready(ready_fd);
	while (running()) {
		struct rnic_wc wc[64];
		int n;

		for (int i = 0; i < FLOOD_QPS; i++)
			for (; left[i] > 0; left[i]--, writes++)
				post_flags(qx[i], RNIC_WR_RDMA_WRITE, (uintptr_t)x.buf, MSG, x.mr->lkey,
					   (uintptr_t)y.buf + MSG, y.mr->rkey, RNIC_SEND_SIGNALED);
		n = rnic_poll_cq(cx, 64, wc);
		for (int k = 0; k < n; k++)
			for (int i = 0; i < FLOOD_QPS; i++)
				left[i] += wc[k].qp_num == qx[i]->qp_num;
		/* Doorbells of its own QPs and of QPs that are not there, as fast as the queue takes them. */
		for (int k = 0; k < 256; k++) {
			uint32_t qpn = k % 4 == 0 ? init_qp->qp_num : k % 2 ? qx[k % FLOOD_QPS]->qp_num :
				       (uint32_t)rand() & 0xffffff;

			pushed += rnic_dbq_push(dbq, rnic_doorbell_make(0, 0, RNIC_WQE_OP_RDMA_WRITE, qpn, 0)) == 0;
		}
	}
	printf("doorbell-flood: %llu WRITEs of 64 KB posted, %llu doorbells pushed\n", (unsigned long long)writes,
	       (unsigned long long)pushed);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 3. Spoof: a QP of another tenant aimed at the victim's QPN and rkeys, 512 PSNs at a time around the one
 *    the victim's QP expects (a blind sweep of all 2^24 takes 17 s, issue 15)                              */

#define SWEEP 512

static void
attack_spoof(int ready_fd, int info_fd)
{
	struct end x = { 0 };
	struct rnic_qp *qp;
	struct victim_info vi;
	struct pollfd p = { .fd = info_fd, .events = POLLIN };
	uint32_t sweeps = 0;

	end_open(&x, 0);
	qp = new_qp_depth(&x, x.cq, SWEEP);
	CHECK(qp != NULL, "spoof: QP: %s", strerror(errno));
	memset(x.buf, 0xee, 64);
	ready(ready_fd);
	CHECK(poll(&p, 1, (int)(STALL_S * 1000)) == 1 && read(info_fd, &vi, sizeof(vi)) == sizeof(vi),
	      "spoof: no details of the victim");
	while (running()) {
		/* No ACK comes back (the victim's QP answers its own peer): the QP fails fast, and starts again
		 * around where the victim is now. */
		const struct path path = { .mtu = RNIC_MTU_1024, .psn = (sh->victim_psn - 32) & 0xffffff, .timeout = 6,
					   .retry_cnt = 0 };
		struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RESET };
		struct rnic_wc wc;

		rnic_modify_qp(qp, &a, RNIC_QP_STATE);
		drain_cq(x.cq);
		if (connect_path(qp, &vi.target, &path) != 0)
			continue;
		/* Every other WRITE into the victim's working buffer, the others into its secret one. */
		for (uint32_t k = 0; k < SWEEP; k++)
			post_flags(qp, RNIC_WR_RDMA_WRITE, (uintptr_t)x.buf, 64, x.mr->lkey,
				   k % 2 ? vi.target.addr + 64 * (k % 2048) : vi.secret_addr + 64 * (k % 4096),
				   k % 2 ? vi.target.rkey : vi.secret_rkey, k + 1 == SWEEP ? RNIC_SEND_SIGNALED : 0);
		wait_wc_for(x.cq, &wc, 0.2);
		sweeps++;
	}
	check_no_canary("spoof: its buffer", x.buf, BUF_BYTES);
	printf("spoof: %u PSNs of the victim's QP %u swept with its rkeys\n", sweeps * SWEEP, vi.target.qpn);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 4. Quota: QUOTA_PROCS processes of one tenant take contexts, QPs, MRs and connections until refused     */

struct quota_take {
	uint32_t ctx, qp, mr, conn;
};

/* A connection that the daemon serves (the tenant's connection quota not reached). */
static int
served_connection(void)
{
	struct rnicd_req req = { 0 };
	struct rnicd_rep *rep = malloc(sizeof(*rep));
	int s = raw_connect(), ok;

	ok = s >= 0 && rep != NULL && rnicd_call(s, &req, RNICD_LIST, -1, rep, NULL) == 0;
	free(rep);
	if (!ok && s >= 0)
		close(s);
	return ok ? s : -1;
}

/* One process: every context, QP and MR it can get; once every process has, bare connections; what it got
 * to `out`. */
static void __attribute__((noreturn))
quota_process(int go_fd, int done_fd, int out_fd)
{
	struct rnic_device **list;
	struct quota_take got = { 0 };
	uint8_t *buf;
	char c;

	die_with_parent();
	CHECK(read(go_fd, &c, 1) == 1, "quota: go");
	list = rnic_get_device_list(NULL);
	buf = rnic_alloc_buf(4096);
	CHECK(list != NULL && buf != NULL, "quota: devices, buffer");
	for (int i = 0; i < 2 * QUOTA_CTX; i++) {
		struct rnic_context *ctx = rnic_open_device(list[i % 2]);
		struct rnic_pd *pd = ctx != NULL ? rnic_alloc_pd(ctx) : NULL;
		struct rnic_cq *cq = pd != NULL ? rnic_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
		struct end e = { .ctx = ctx, .pd = pd, .cq = cq };

		if (ctx == NULL) {
			CHECK(errno == EDQUOT || errno == ECONNRESET || errno == EPIPE, "quota: open_device: %s",
			      strerror(errno));
			break;
		}
		got.ctx++;
		CHECK(cq != NULL, "quota: a PD or CQ within the quota was refused: %s", strerror(errno));
		while (new_qp_depth(&e, cq, 4) != NULL)
			got.qp++;
		CHECK(errno == EDQUOT, "quota: create_qp: %s", strerror(errno));
		while (rnic_reg_mr(pd, buf, 4096, RNIC_ACCESS_LOCAL_WRITE) != NULL)
			got.mr++;
		CHECK(errno == EDQUOT, "quota: reg_mr: %s", strerror(errno));
	}
	CHECK(write(done_fd, "d", 1) == 1 && read(go_fd, &c, 1) == 1, "quota: barrier");
	while (got.conn < QUOTA_CONN && served_connection() >= 0)
		got.conn++;
	CHECK(write(out_fd, &got, sizeof(got)) == sizeof(got), "quota: result");
	while (running())
		usleep(20000);		/* holds everything until the phase ends */
	_exit(0);
}

static void
attack_quota(int ready_fd)
{
	int go[2], done[2], out[2];
	pid_t kids[QUOTA_PROCS];
	struct quota_take sum = { 0 };
	char c;

	CHECK(pipe(go) == 0 && pipe(done) == 0 && pipe(out) == 0, "pipe");
	for (int i = 0; i < QUOTA_PROCS; i++) {
		kids[i] = fork();
		CHECK(kids[i] >= 0, "fork");
		if (kids[i] == 0)
			quota_process(go[0], done[1], out[1]);
	}
	ready(ready_fd);
	/* Contexts, QPs and MRs first, all processes at once; then connections (a context refused holds a
	 * connection for a moment: it would take one of another process's). */
	CHECK(write(go[1], "gggg", QUOTA_PROCS) == QUOTA_PROCS, "go");
	for (int i = 0; i < QUOTA_PROCS; i++)
		CHECK(read(done[0], &c, 1) == 1, "quota: a process failed");
	CHECK(write(go[1], "gggg", QUOTA_PROCS) == QUOTA_PROCS, "go");
	for (int i = 0; i < QUOTA_PROCS; i++) {
		struct quota_take t;

		CHECK(read(out[0], &t, sizeof(t)) == sizeof(t), "quota: a process failed");
		sum.ctx += t.ctx;
		sum.qp += t.qp;
		sum.mr += t.mr;
		sum.conn += t.conn;
	}
	for (int i = 0; i < QUOTA_PROCS; i++) {
		int st = wait_child(kids[i], 120);

		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "quota: process %d failed (%#x)", i, st);
	}
	/* Whatever the processes and connections, the tenant got exactly its quotas. */
	CHECK(sum.ctx == QUOTA_CTX && sum.qp == QUOTA_QP && sum.mr == QUOTA_MR && sum.ctx + sum.conn == QUOTA_CONN,
	      "quota: %d processes got %u contexts (quota %d), %u QPs (%d), %u MRs (%d), %u more connections "
	      "(%d in all)", QUOTA_PROCS, sum.ctx, QUOTA_CTX, sum.qp, QUOTA_QP, sum.mr, QUOTA_MR, sum.conn,
	      QUOTA_CONN);
	printf("quota: %d processes of one tenant got %u contexts, %u QPs, %u MRs, %u connections: its quotas\n",
	       QUOTA_PROCS, sum.ctx, sum.qp, sum.mr, sum.ctx + sum.conn);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 5. Scribble: the CQ looks full and not in error, the QP's words garbled, while WRITEs complete         */

static void
scribble(struct end *e)
{
	struct rnic_cq_priv *cq = rnic_cq_priv(e->cq);
	struct rnic_qp_priv *q = rnic_qp_priv(e->qp);

	/* Every CQE finds the CQ full, and the error flag it set cleared again. */
	__atomic_store_n(&cq->dbrec[0], __atomic_load_n(&cq->hif->prod, __ATOMIC_RELAXED) - (1u << cq->log_nent),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&cq->hif->error, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->hif->arm, (uint32_t)rand(), __ATOMIC_RELAXED);
	__atomic_store_n(&q->sq.idx->doorbell_pending, (uint32_t)rand() & 1, __ATOMIC_RELAXED);
	__atomic_store_n(&q->rq.idx->tail, (uint32_t)rand(), __ATOMIC_RELAXED);
	__atomic_store_n(q->post_state, (enum rnic_qp_state)(rand() % 8), __ATOMIC_RELAXED);
}

static void
attack_scribble(int ready_fd)
{
	struct end x = { 0 }, y = { 0 };
	uint32_t n = 0;

	hostile_pair(&x, &y, &mtu1024);
	ready(ready_fd);
	while (running()) {
		for (int k = 0; k < 16; k++)
			post_flags(x.qp, RNIC_WR_RDMA_WRITE, (uintptr_t)x.buf, 64, x.mr->lkey, (uintptr_t)y.buf + MSG,
				   y.mr->rkey, RNIC_SEND_SIGNALED);
		for (int k = 0; k < 1000; k++) {
			scribble(&x);
			scribble(&y);
		}
		if (++n % 8 == 0)
			reset_pair(&x, &y, &mtu1024);
	}
	printf("scribble: %u rounds of garbled CQ and QP words\n", n);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 6. Keys: one buffer registered and deregistered again and again; no rkey comes back                    */

#define KEY_CYCLES 2000
#define KEY_CYCLES_MIN 300	/* past 256: the 8-bit key of an index reused last-freed-first came back there */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A WRITE from x to y's target with a stale rkey: it must fail as a remote access error and write nothing. */
static void
stale_key_refused(struct end *x, struct end *y, const uint8_t *target, uint32_t rkey)
{
	struct rnic_wc wc;

	post(x->qp, RNIC_WR_RDMA_WRITE, (uintptr_t)x->buf, 64, x->mr->lkey, (uintptr_t)target, rkey);
	CHECK(wait_wc_for(x->cq, &wc, STALL_S) && wc.status == RNIC_WC_REM_ACCESS_ERR,
	      "keys: a WRITE with the stale rkey %#x did not fail with REM_ACCESS_ERR", rkey);
	reset_pair(x, y, &mtu1024);
	for (int i = 0; i < 4096; i++)
		CHECK(target[i] == 0x5a, "keys: a stale rkey wrote into the buffer");
}

static void
attack_keys(int ready_fd)
{
	static uint32_t keys[KEY_CYCLES], sorted[KEY_CYCLES];
	struct end x = { 0 }, y = { 0 };
	uint8_t *target;
	uint32_t n = 0, tried = 0;

	hostile_pair(&x, &y, &mtu1024);
	target = rnic_alloc_buf(4096);
	CHECK(target != NULL, "keys: buffer");
	memset(target, 0x5a, 4096);
	ready(ready_fd);
	/* The attack windows can end before KEY_CYCLES_MIN registrations on a loaded machine: the rest then. */
	for (; n < KEY_CYCLES && (running() || (n < KEY_CYCLES_MIN && now_s() < deadline)); n++) {
		struct rnic_mr *mr = rnic_reg_mr(y.pd, target, 4096, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);

		CHECK(mr != NULL, "keys: reg_mr %u: %s", n, strerror(errno));
		keys[n] = mr->rkey;
		/* On the wire while the new region is there: the keys of 128 and 256 registrations ago (an
		 * 8-bit key of an index reused last-freed-first came back after 256). */
		for (uint32_t back = 128; n % 128 == 0 && back <= 256 && back <= n; back += 128, tried++)
			stale_key_refused(&x, &y, target, keys[n - back]);
		CHECK(rnic_dereg_mr(mr) == 0, "keys: dereg_mr");
	}
	memcpy(sorted, keys, n * sizeof(keys[0]));
	qsort(sorted, n, sizeof(sorted[0]), cmp_u32);
	for (uint32_t i = 1; i < n; i++)
		CHECK(sorted[i] != sorted[i - 1], "keys: rkey %#x came back within %u registrations", sorted[i], n);
	CHECK(n > 256, "keys: only %u registrations", n);
	printf("keys: %u registrations of one buffer, every rkey new; %u stale rkeys refused on the wire\n", n,
	       tried);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 7. reg_mr of memory without the rights, and remote WRITEs into regions read-only or gone               */

/* REG_MR of [0, 4096) of fd on a raw session; returns the reply's status. */
static int
raw_reg_mr(int s, uint32_t pd, int fd, int access)
{
	struct rnicd_req req = { .u.reg_mr = { .pd = pd, .access = access, .va = 0x10000000, .length = 4096 } };
	struct rnicd_rep rep;

	return rnicd_call(s, &req, RNICD_REG_MR, fd, &rep, NULL);
}

/* The daemon maps a buffer only with the rights the client has on it itself. */
static void
regmr_refusals(void)
{
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	int s = raw_connect(), fd, ro, ret;
	char path[64];
	uint32_t pd;

	CHECK(s >= 0, "regmr: connect");
	CHECK(rnicd_call(s, &req, RNICD_OPEN, -1, &rep, NULL) == 0 && rnicd_call(s, &req, RNICD_ALLOC_PD, -1, &rep,
									    NULL) == 0, "regmr: open");
	pd = rep.u.obj.handle;
	fd = memfd_create("sealed-ro", MFD_ALLOW_SEALING);
	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0 &&
	      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) == 0, "regmr: memfd");
	ret = raw_reg_mr(s, pd, fd, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	CHECK(ret == EPERM, "regmr: a write-sealed memfd for remote writes: %s (want EPERM)", strerror(ret));
	ret = raw_reg_mr(s, pd, fd, RNIC_ACCESS_REMOTE_READ);
	CHECK(ret == 0, "regmr: a write-sealed memfd, read only: %s", strerror(ret));
	close(fd);
	fd = memfd_create("rdonly", MFD_ALLOW_SEALING);
	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0, "regmr: memfd");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY);
	CHECK(ro >= 0, "regmr: %s", path);
	ret = raw_reg_mr(s, pd, ro, RNIC_ACCESS_LOCAL_WRITE);
	CHECK(ret == EACCES, "regmr: a read-only descriptor for local writes: %s (want EACCES)", strerror(ret));
	ret = raw_reg_mr(s, pd, ro, 0);
	CHECK(ret == 0, "regmr: a read-only descriptor, read only: %s", strerror(ret));
	close(ro);
	close(fd);
	close(s);
}

/* A WRITE from x to [addr, +64) with rkey: its completion status (the pair reset after a failure). */
static enum rnic_wc_status
write_status(struct end *x, struct end *y, uint64_t addr, uint32_t rkey)
{
	struct rnic_wc wc;

	post(x->qp, RNIC_WR_RDMA_WRITE, (uintptr_t)x->buf, 64, x->mr->lkey, addr, rkey);
	CHECK(wait_wc_for(x->cq, &wc, STALL_S), "regmr: no completion");
	if (wc.status != RNIC_WC_SUCCESS)
		reset_pair(x, y, &mtu1024);
	return wc.status;
}

/* The killed process's end: it registers its buffer and connects to the attacker's QP, then waits. */
static void __attribute__((noreturn))
doomed_client(int in, int out, const struct path *path)
{
	struct end v = { 0 };
	struct info iv, peer;

	die_with_parent();
	end_open(&v, 1);
	iv = end_info(&v, v.qp);
	CHECK(write(out, &iv, sizeof(iv)) == sizeof(iv) && read(in, &peer, sizeof(peer)) == sizeof(peer),
	      "regmr: exchange");
	CHECK(connect_path(v.qp, &peer, path) == 0 && write(out, "c", 1) == 1, "regmr: connect");
	for (;;)
		pause();
}

/* A process of the tenant whose region the attacker WRITEs into is killed: the WRITEs after fail (its QP
 * and region are gone), and the daemon lives. */
static void
crashed_client(void)
{
	static const struct path quick = { .mtu = RNIC_MTU_1024, .timeout = 8, .retry_cnt = 1 };
	int to_child[2], from_child[2], tries = 0;
	struct end x = { 0 };
	struct info ic, ix;
	struct rnic_wc wc;
	pid_t c;
	char byte;

	CHECK(pipe(to_child) == 0 && pipe(from_child) == 0, "pipe");
	end_open(&x, 0);
	c = fork();
	CHECK(c >= 0, "fork");
	if (c == 0)
		doomed_client(to_child[0], from_child[1], &quick);
	ix = end_info(&x, x.qp);
	CHECK(read(from_child[0], &ic, sizeof(ic)) == sizeof(ic) && write(to_child[1], &ix, sizeof(ix)) == sizeof(ix) &&
	      connect_path(x.qp, &ic, &quick) == 0 && read(from_child[0], &byte, 1) == 1, "regmr: connect");
	post(x.qp, RNIC_WR_RDMA_WRITE, (uintptr_t)x.buf, 64, x.mr->lkey, ic.addr + MSG, ic.rkey);
	CHECK(wait_wc_for(x.cq, &wc, STALL_S) && wc.status == RNIC_WC_SUCCESS, "regmr: a WRITE before the kill");
	kill(c, SIGKILL);
	wait_child(c, STALL_S);
	/* Until the daemon has seen the connection close, the region is still there. */
	do {
		usleep(20000);
		post(x.qp, RNIC_WR_RDMA_WRITE, (uintptr_t)x.buf, 64, x.mr->lkey, ic.addr + MSG, ic.rkey);
		CHECK(wait_wc_for(x.cq, &wc, STALL_S), "regmr: no completion after the kill");
	} while (wc.status == RNIC_WC_SUCCESS && ++tries < 250);
	CHECK(wc.status == RNIC_WC_REM_ACCESS_ERR || wc.status == RNIC_WC_RETRY_EXC_ERR,
	      "regmr: a WRITE to a killed client's region: %s", rnic_wc_status_str(wc.status));
	end_close(&x);
}

static void
attack_regmr(int ready_fd)
{
	struct end x = { 0 }, y = { 0 };
	uint8_t *ro = rnic_alloc_buf(4096), *gone = rnic_alloc_buf(4096), *unmapped = rnic_alloc_buf(4096);
	struct rnic_mr *ro_mr, *gone_mr, *unmapped_mr;
	uint32_t gone_key, rounds = 0;

	CHECK(ro != NULL && gone != NULL && unmapped != NULL, "regmr: buffers");
	regmr_refusals();
	crashed_client();
	hostile_pair(&x, &y, &mtu1024);
	memset(ro, 0x77, 4096);
	ro_mr = rnic_reg_mr(y.pd, ro, 4096, RNIC_ACCESS_REMOTE_READ);
	gone_mr = rnic_reg_mr(y.pd, gone, 4096, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	unmapped_mr = rnic_reg_mr(y.pd, unmapped, 4096, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	CHECK(ro_mr != NULL && gone_mr != NULL && unmapped_mr != NULL, "regmr: reg_mr: %s", strerror(errno));
	gone_key = gone_mr->rkey;
	CHECK(rnic_dereg_mr(gone_mr) == 0, "regmr: dereg");
	/* The client lets go of its own mapping: the daemon's stays until the region is deregistered. */
	rnic_free_buf(unmapped);
	ready(ready_fd);
	while (running()) {
		CHECK(write_status(&x, &y, (uintptr_t)ro, ro_mr->rkey) == RNIC_WC_REM_ACCESS_ERR,
		      "regmr: a remote WRITE into a read-only region did not fail with REM_ACCESS_ERR");
		CHECK(write_status(&x, &y, (uintptr_t)gone, gone_key) == RNIC_WC_REM_ACCESS_ERR,
		      "regmr: a remote WRITE into a deregistered region did not fail with REM_ACCESS_ERR");
		CHECK(write_status(&x, &y, (uintptr_t)unmapped, unmapped_mr->rkey) == RNIC_WC_SUCCESS,
		      "regmr: a remote WRITE into a region its client unmapped failed");
		rounds++;
		usleep(50000);
	}
	for (int i = 0; i < 4096; i++)
		CHECK(ro[i] == 0x77, "regmr: a read-only region was written");
	printf("regmr: write-sealed and read-only memfds refused for writing; WRITEs into a killed client's region "
	       "failed; %u rounds of remote WRITEs into a read-only region and a deregistered one (REM_ACCESS_ERR) "
	       "and one its client unmapped\n", rounds);
}

/* ------------------------------------------------------------------------------------------------------ */
/* 8. Garbage: random bytes into its SQs, RQs, queue indexes, CQ block and doorbell queue                  */

static void
random_bytes(void *p, size_t len)
{
	uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)rand();
}

static void
garble_queue(struct rnic_wq *wq, int sq)
{
	random_bytes(rnic_wq_slot(wq, (uint32_t)rand()), wq->stride);
	if (rand() % 4 == 0)
		__atomic_store_n(&wq->idx->head, (uint32_t)rand(), __ATOMIC_RELEASE);
	if (sq && rand() % 4 == 0)
		__atomic_store_n(&wq->idx->doorbell_pending, (uint32_t)rand(), __ATOMIC_RELEASE);
}

static void
garble(struct end *e)
{
	struct rnic_qp_priv *q = rnic_qp_priv(e->qp);
	struct rnic_cq_priv *cq = rnic_cq_priv(e->cq);
	struct rnic_dbq *dbq = rnic_context_priv(e->ctx)->dbq;

	garble_queue(&q->sq, 1);
	garble_queue(&q->rq, 0);
	random_bytes(&cq->cqes[(uint32_t)rand() & ((1u << cq->log_nent) - 1)], sizeof(cq->cqes[0]));
	random_bytes(cq->hif, sizeof(*cq->hif));
	/* Doorbells of any kind, and the queue's own words. */
	dbq->slot[(uint32_t)rand() & (dbq->size - 1)] = (uint64_t)rand() << 32 | (uint32_t)rand();
	if (rand() % 8 == 0) {
		__atomic_store_n(&dbq->prod_tail, (uint32_t)rand(), __ATOMIC_RELEASE);
	} else {
		uint64_t db = rnic_doorbell_make((uint32_t)rand() & 0xffff, rand() & 1, (uint8_t)rand(), e->qp->qp_num,
						 (uint8_t)rand());
		uint32_t t = __atomic_load_n(&dbq->prod_tail, __ATOMIC_ACQUIRE);

		dbq->slot[t & (dbq->size - 1)] = db;
		__atomic_store_n(&dbq->prod_tail, t + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(q->post_state, (enum rnic_qp_state)rand(), __ATOMIC_RELAXED);
}

static void
attack_garbage(int ready_fd)
{
	struct end x = { 0 }, y = { 0 };
	uint64_t n = 0;

	/* Its library is never used on these queues again: they hold garbage. */
	hostile_pair(&x, &y, &mtu1024);
	ready(ready_fd);
	while (running()) {
		garble(&x);
		garble(&y);
		if (++n % 20000 == 0) {
			struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RESET };
			struct info ix = end_info(&x, x.qp), iy = end_info(&y, y.qp);

			/* Back to RTS, so that the engine reads the queues again. */
			rnic_modify_qp(x.qp, &a, RNIC_QP_STATE);
			rnic_modify_qp(y.qp, &a, RNIC_QP_STATE);
			connect_path(x.qp, &iy, &mtu1024);
			connect_path(y.qp, &ix, &mtu1024);
		}
	}
	check_no_canary("garbage: its buffer", x.buf, BUF_BYTES);
	check_no_canary("garbage: its peer's buffer", y.buf, BUF_BYTES);
	check_no_canary("garbage: its CQ", rnic_cq_priv(x.cq)->cqes, rnic_cq_hif_size(1u << rnic_cq_priv(x.cq)->
											    log_nent));
	printf("garbage: %llu rounds of random words into its queues, CQs and doorbell queues\n",
	       (unsigned long long)n);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The phases                                                                                               */

static uid_t
uid_of(enum attack a)
{
	return a == A_QUOTA ? UID_QUOTA : a == A_KEYS || a == A_REGMR ? UID_CONTROL : UID_ENGINE;
}

/* An attacker's process: another tenant's, ready on ready_fd once set up, attacking in its windows. */
static pid_t
spawn_attacker(enum attack a, int ready_fd, int info_fd)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid != 0)
		return pid;
	is_parent = 0;
	my_turn = 1;
	srand((unsigned int)getpid());
	become(uid_of(a));
	switch (a) {
	case A_REWRITE: attack_rewrite(ready_fd); break;
	case A_FLOOD: attack_flood(ready_fd); break;
	case A_SPOOF: attack_spoof(ready_fd, info_fd); break;
	case A_QUOTA: attack_quota(ready_fd); break;
	case A_SCRIBBLE: attack_scribble(ready_fd); break;
	case A_KEYS: attack_keys(ready_fd); break;
	case A_REGMR: attack_regmr(ready_fd); break;
	default: attack_garbage(ready_fd); break;
	}
	_exit(0);
}

static pid_t
spawn_hog(void)
{
	pid_t pid = fork();
	volatile uint64_t spin = 0;

	CHECK(pid >= 0, "fork");
	if (pid != 0)
		return pid;
	is_parent = 0;
	die_with_parent();
	my_turn = 0;
	while (running())
		for (int i = 0; i < 100000; i++)
			spin++;
	_exit(0);
}

/*
 * Every tenant's process (the victim, the attackers, the busy loops) and the test on CPU 0, the CPU of the
 * daemon's main lcore, which sleeps in poll(); the engine's worker lcore keeps CPU 1 (-l 0,1). As a daemon
 * is deployed (its worker cores for itself: doc/rnicd.md, Performance), and so that the victim shares its
 * CPU with a busy loop in one window and with an attacker in the other, the same way. Left to the kernel
 * on 2 CPUs, the tenants took turns on the engine's CPU as the scheduler placed them, and the ratio
 * measured that placement (0.40 to 1.27 between runs of one build).
 */
static void
pin_tenants(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "sched_setaffinity: %s", strerror(errno));
}

/* The victim's rates (rounds per second) beside the busy loops and beside the attackers, in alternating
 * windows; every process must end well, and the daemon live. */
static void
run_windows(const int *attacks, int nb, double *rate_hogs, double *rate_attack)
{
	int rdy[2], info[2], st;
	pid_t procs[2 * A_MAX], v;
	struct victim_info vi;
	uint32_t rounds[2] = { 0, 0 };
	char c;

	CHECK(pipe(rdy) == 0 && pipe(info) == 0, "pipe");
	pin_tenants();	/* the children inherit it */
	sh->window = -1;
	/* Attackers first: their doorbell queues come before the victim's in the daemon's list. */
	for (int i = 0; i < nb; i++) {
		procs[i] = spawn_attacker((enum attack)attacks[i], rdy[1], info[0]);
		procs[nb + i] = spawn_hog();
	}
	close(rdy[1]);
	for (int i = 0; i < nb; i++)
		CHECK(read(rdy[0], &c, 1) == 1, "an attacker did not get ready");
	close(rdy[0]);
	v = fork();
	CHECK(v >= 0, "fork");
	if (v == 0) {
		is_parent = 0;
		die_with_parent();
		victim(info[1]);
	}
	/* The spoofer reads the victim's details from the pipe; the parent only learns that it is ready. */
	if (!memchr(attacks, A_SPOOF, 0))
		for (int i = 0; i < nb; i++)
			if (attacks[i] == A_SPOOF)
				goto spoofer;
	CHECK(read(info[0], &vi, sizeof(vi)) == sizeof(vi), "the victim did not start");
spoofer:
	for (int w = 0; w <= WINDOWS; w++) {
		uint32_t before = w > 0 ? sh->rounds[w] : 0;

		if (w > 0)
			CHECK(waitpid(v, &st, WNOHANG) == 0, "the victim ended in window %d (status %#x)", w - 1, st);
		sh->window = w;
		if (w < WINDOWS)
			usleep((useconds_t)(WINDOW_S * 1e6));
		(void)before;
	}
	st = wait_child(v, 3 * STALL_S);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the victim %s (status %#x)",
	      WIFEXITED(st) && WEXITSTATUS(st) == 2 ? "was starved" : "failed", st);
	for (int i = 0; i < 2 * nb; i++) {
		st = wait_child(procs[i], 120);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s failed (status %#x)", i < nb ? "attack" : "busy loop",
		      i < nb ? attack_names[attacks[i]] : "", st);
	}
	close(info[0]);
	close(info[1]);
	CHECK(waitpid(daemon_pid, &st, WNOHANG) == 0, "rnicd died (status %#x)", st);
	for (int w = 0; w < WINDOWS; w++)
		rounds[w & 1] += sh->rounds[w + 1];
	*rate_hogs = rounds[0] / (WINDOWS / 2 * WINDOW_S);
	*rate_attack = rounds[1] / (WINDOWS / 2 * WINDOW_S);
}

static void
write_config(const char *path)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL, "config");
	fprintf(f, "# the quota attacker's tenant\n"
		"tenant uid=%d max-conn %d max-ctx %d max-qp %d max-mr %d max-cq 16 max-pd 16 max-mem 67108864\n",
		UID_QUOTA, QUOTA_CONN, QUOTA_CTX, QUOTA_QP, QUOTA_MR);
	fclose(f);
}

static void
run(const char *rnicd, const int *attacks, int nb)
{
	char config[64], hex[32], tel[16384];
	double hogs, beside;
	int lines;

	snprintf(config, sizeof(config), "/tmp/rnicd-adv-%d.conf", (int)getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/rnicd-adv-%d.log", (int)getpid());
	write_config(config);
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)DAEMON_CANARY);
	setenv("RNICD_TEST_CANARY", hex, 1);
	daemon_log = log_path;
	start_daemon(rnicd, config);
	unlink(config);
	open_to_all_users();
	run_windows(attacks, nb, &hogs, &beside);
	printf("victim: %.1f rounds/s beside %d busy loops, %.1f beside the attackers (alternating windows of "
	       "%.1f s): ratio %.2f\n", hogs, nb, beside, WINDOW_S, beside / hogs);
	CHECK(beside >= 0.5 * hogs, "the victim's rate beside the attackers fell below half: %.2f", beside / hogs);
	lines = count_lines(log_path, "");
	CHECK(lines < MAX_LOG_LINES, "the daemon logged %d lines (attackers may not flood its log)", lines);
	telemetry("/rnicd/tenants", tel, sizeof(tel));
	printf("telemetry /rnicd/tenants: %s\n", tel);
	stop_daemon();
	printf("rnicd: alive throughout, %d lines logged, exit 0 on SIGTERM\n", lines);
	unlink(log_path);
}

int
main(int argc, char **argv)
{
	int attacks[A_MAX], nb = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 3) {
		fprintf(stderr, "usage: test_adversarial RNICD all|ATTACK...\n  attacks:");
		for (int a = 0; a < A_MAX; a++)
			fprintf(stderr, " %s", attack_names[a]);
		fputc('\n', stderr);
		return 2;
	}
	CHECK(getuid() == 0, "the attackers are other users: run as root");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED, "mmap");
	deadline = now_s() + 200;	/* every child ends by then, whatever happens */
	for (int i = 2; i < argc; i++) {
		int found = 0;

		for (int a = 0; a < A_MAX; a++) {
			if ((strcmp(argv[i], "all") == 0 || strcmp(argv[i], attack_names[a]) == 0) && nb < A_MAX) {
				attacks[nb++] = a;
				found = 1;
			}
		}
		CHECK(found, "unknown attack %s", argv[i]);
	}
	run(argv[1], attacks, nb);
	return 0;
}
