/* SPDX-License-Identifier: BSD-3-Clause
 * RC over a lossy link: both ports drop, reorder, duplicate and corrupt frames (--fault), and every work
 * request must still complete exactly once and successfully, with every byte right and exact atomics.
 * Run as: test_soak <EAL args with a worker lcore> -- --fault SPEC [--soak-rounds N]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <rte_byteorder.h>

#include "rnic.h"
#include "test_env.h"
#include "rnic_fault.h"
#include "rnic_pipeline.h"
#include "rnic_priv.h"

#define NQP 4
#define AREA (256u << 10)	/* per QP: WRITE target, READ source, SEND target */
#define BUF (NQP * 4 * AREA + 4096)

static int g_argc;
static char **g_argv;
static unsigned int rounds = 200;

struct side {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *scq, *rcq;
	uint8_t *buf;
	struct rnic_mr *mr;
	union rnic_gid gid;
	struct rnic_qp *qp[NQP];
};

static struct side A, B;

static void
open_side(struct side *s, struct rnic_device *dev)
{
	s->ctx = rnic_open_device(dev);
	s->pd = rnic_alloc_pd(s->ctx);
	s->scq = rnic_create_cq(s->ctx, 4096, NULL, NULL, 0);
	s->rcq = rnic_create_cq(s->ctx, 4096, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, BUF);
	memset(s->buf, 0, BUF);
	s->mr = rnic_reg_mr(s->pd, s->buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			    RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);
	rnic_query_gid(s->ctx, 1, 0, &s->gid);
	for (int i = 0; i < NQP; i++) {
		struct rnic_qp_init_attr ia = { .send_cq = s->scq, .recv_cq = s->rcq, .qp_type = RNIC_QPT_RC,
			.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 } };

		s->qp[i] = rnic_create_qp(s->pd, &ia);
	}
}

static int
setup(void **state)
{
	struct rnic_device **list;

	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	open_side(&A, list[0]);
	open_side(&B, list[1]);
	rnic_free_device_list(list);
	/* PSNs start near the 24-bit end so they wrap during the run; a 4 ms loss timer; RNR retries unlimited. */
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0xfffff0, .timeout = 10, .retry_cnt = 7, .rnr_retry = 7 };

	for (int i = 0; i < NQP; i++) {
		assert_int_equal(test_connect(A.qp[i], B.qp[i]->qp_num, &B.gid, &path), 0);
		assert_int_equal(test_connect(B.qp[i], A.qp[i]->qp_num, &A.gid, &path), 0);
	}
	return rnic_engine_start();
}

static void
close_side(struct side *s)
{
	for (int i = 0; i < NQP; i++)
		rnic_destroy_qp(s->qp[i]);
	rnic_destroy_cq(s->scq);
	rnic_destroy_cq(s->rcq);
	rnic_dereg_mr(s->mr);
	free(s->buf);
	rnic_dealloc_pd(s->pd);
	rnic_close_device(s->ctx);
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	close_side(&A);
	close_side(&B);
	return rnic_engine_fini();
}

/* Exactly n successful completions with these wr_ids (each once), within a bounded time. */
static void
expect_completions(struct rnic_cq *cq, unsigned int n, uint64_t first_id)
{
	uint8_t seen[64] = { 0 };
	struct rnic_wc wc;
	time_t deadline = time(NULL) + 30;
	unsigned int got = 0;

	while (got < n) {
		int r = rnic_poll_cq(cq, 1, &wc);

		assert_true(r >= 0);
		if (r == 0) {
			if (time(NULL) > deadline) {
				for (int i = 0; i < NQP; i++) {
					struct rnic_req_ctx *r = &rnic_qp_priv(A.qp[i])->req;
					struct rnic_resp_ctx *q = &rnic_qp_priv(B.qp[i])->resp;

					fprintf(stderr, "state of QP pair %d: una %x npsn %x cur %u head %u tail %u dl %lu rnr %lu retry %u "
						"state %d | resp epsn %x nak %u rd %u/%u\n", i, r->una, r->npsn, r->cur,
						r->infl_head, r->infl_tail, (unsigned long)r->deadline,
						(unsigned long)r->rnr_until, r->retry_left, A.qp[i]->state, q->epsn, q->nak_sent,
						q->rd_head, q->rd_tail);
				}
				fail_msg("timed out: %u of %u completions", got, n);
			}
			continue;
		}
		if (wc.status != RNIC_WC_SUCCESS)
			fail_msg("wr %llu: %s", (unsigned long long)wc.wr_id, rnic_wc_status_str(wc.status));
		assert_true(wc.wr_id >= first_id && wc.wr_id < first_id + n);
		assert_int_equal(seen[wc.wr_id - first_id]++, 0);	/* exactly once */
		got++;
	}
}

static void
post(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t id, uint8_t *local, uint32_t len, uint32_t lkey,
     uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct rnic_sge sge = { (uintptr_t)local, len, lkey };
	struct rnic_send_wr wr = { .wr_id = id, .opcode = op, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;

	if (op == RNIC_WR_ATOMIC_FETCH_AND_ADD || op == RNIC_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = compare_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

static void
test_soak(void **state)
{
	uint64_t adds = 0;
	struct rnic_fault_counts fa, fb;

	(void)state;
	for (unsigned int round = 0; round < rounds; round++) {
		/* Per QP: WRITE a pattern, READ it back, SEND it, FETCH_ADD a shared counter, and CMP_SWAP the QP's
		 * own word from round to round + 1 (executed twice, the second compare would fail and return
		 * round + 1). */
		for (int i = 0; i < NQP; i++) {
			uint32_t len = 1 + (round * 7919 + (unsigned int)i * 104729) % (64u << 10);
			uint8_t *src = A.buf + (uint32_t)i * 4 * AREA, *back = src + AREA;
			uint8_t *dst = B.buf + (uint32_t)i * 4 * AREA, *rcv = dst + 2 * AREA;
			struct rnic_sge rs = { (uintptr_t)rcv, AREA, B.mr->lkey };
			struct rnic_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;

			for (uint32_t k = 0; k < len; k++)
				src[k] = (uint8_t)(round * 31 + k * 7 + (uint32_t)i);
			assert_int_equal(rnic_post_recv(B.qp[i], &rwr, &rbad), 0);
			uint64_t *fetched = (uint64_t *)(void *)(A.buf + BUF - 64 + 8 * (uint32_t)i);
			uint64_t *swapped = (uint64_t *)(void *)(A.buf + BUF - 128 + 8 * (uint32_t)i);

			post(A.qp[i], RNIC_WR_RDMA_WRITE, 0, src, len, A.mr->lkey, (uintptr_t)dst, B.mr->rkey, 0, 0);
			post(A.qp[i], RNIC_WR_RDMA_READ, 1, back, len, A.mr->lkey, (uintptr_t)dst, B.mr->rkey, 0, 0);
			post(A.qp[i], RNIC_WR_SEND, 2, src, len, A.mr->lkey, 0, 0, 0, 0);
			post(A.qp[i], RNIC_WR_ATOMIC_FETCH_AND_ADD, 3, (uint8_t *)fetched, 8, A.mr->lkey,
			     (uintptr_t)(B.buf + BUF - 64), B.mr->rkey, (uint64_t)i + 1, 0);
			post(A.qp[i], RNIC_WR_ATOMIC_CMP_AND_SWP, 4, (uint8_t *)swapped, 8, A.mr->lkey,
			     (uintptr_t)(B.buf + BUF - 128 + 8 * (uint32_t)i), B.mr->rkey, round, (uint64_t)round + 1);
			expect_completions(A.scq, 5, 0);
			expect_completions(B.rcq, 1, 1);
			if (memcmp(dst, src, len) != 0 || memcmp(back, src, len) != 0 || memcmp(rcv, src, len) != 0)
				fail_msg("round %u QP %d: data differs (%u bytes)", round, i, len);
			/* The atomics' results: the values before this execution, and only this one. */
			if (*fetched != adds || *swapped != round)
				fail_msg("round %u QP %d: FETCH_ADD returned %llu (expected %llu), CMP_SWAP %llu (expected %u)",
					 round, i, (unsigned long long)*fetched, (unsigned long long)adds,
					 (unsigned long long)*swapped, round);
			adds += (uint64_t)i + 1;
		}
	}
	/* Atomics executed exactly once each, whatever was duplicated or resent. */
	assert_int_equal(*(uint64_t *)(void *)(B.buf + BUF - 64), adds);
	for (int i = 0; i < NQP; i++)
		assert_int_equal(*(uint64_t *)(void *)(B.buf + BUF - 128 + 8 * (uint32_t)i), rounds);
	/* The faults really happened, and recovery really ran. */
	rnic_fault_get_counts(rnic_engine_device(0)->port_id, &fa);
	rnic_fault_get_counts(rnic_engine_device(1)->port_id, &fb);
	printf("faults A: frames %lu dropped %lu reordered %lu duplicated %lu corrupted %lu\n",
	       (unsigned long)fa.frames, (unsigned long)fa.dropped, (unsigned long)fa.reordered,
	       (unsigned long)fa.duplicated, (unsigned long)fa.corrupted);
	printf("faults B: frames %lu dropped %lu reordered %lu duplicated %lu corrupted %lu\n",
	       (unsigned long)fb.frames, (unsigned long)fb.dropped, (unsigned long)fb.reordered,
	       (unsigned long)fb.duplicated, (unsigned long)fb.corrupted);
	assert_true(fa.dropped > 0 && fb.dropped > 0 && fa.duplicated + fb.duplicated > 0 &&
		    fa.reordered + fb.reordered > 0 && fa.corrupted + fb.corrupted > 0);
	/* Corrupted frames were caught (mostly by the ICRC) and dropped, not delivered. */
	uint64_t bad_icrc = test_counter(A.ctx, "rx_drop_bad_icrc") + test_counter(B.ctx, "rx_drop_bad_icrc");

	printf("dropped for a bad ICRC: %lu\n", (unsigned long)bad_icrc);
	assert_true(bad_icrc > 0 && bad_icrc <= fa.corrupted + fb.corrupted);
	uint64_t retrans = 0, dups = 0, timeouts = 0, naks = 0, gaps = 0, sent = 0, received = 0, acks = 0;

	/* Per QP, both sides: what the requesters resent and the responders saw twice or out of order. */
	for (int i = 0; i < NQP; i++) {
		const struct side *side[2] = { &A, &B };

		for (int k = 0; k < 2; k++) {
			struct rnic_qp_counters c;

			assert_int_equal(rnic_query_qp_counters(side[k]->qp[i], &c), 0);
			retrans += c.retransmits;
			dups += c.duplicates;
			timeouts += c.timeouts;
			naks += c.seq_naks_received;
			gaps += c.out_of_sequence;
			sent += c.packets_sent;
			received += c.requests_received;
			acks += c.acks_sent;
		}
	}
	printf("recovery: retransmits %lu duplicates %lu timeouts %lu seq NAKs %lu out of sequence %lu\n",
	       (unsigned long)retrans, (unsigned long)dups, (unsigned long)timeouts, (unsigned long)naks,
	       (unsigned long)gaps);
	assert_true(naks > 0 && gaps > 0 && sent > received && acks > 0);
	/* Resends came from the retransmit buffer. */
	printf("resent: %lu kept, %lu gathered again\n", (unsigned long)test_counter(A.ctx, "resent_kept"),
	       (unsigned long)test_counter(A.ctx, "resent_gathered"));
	assert_true(test_counter(A.ctx, "resent_kept") > 0 && test_counter(A.ctx, "resent_kept") != UINT64_MAX);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};

	/* --soak-rounds N (after the engine arguments) */
	if (argc > 2 && strcmp(argv[argc - 2], "--soak-rounds") == 0) {
		rounds = (unsigned int)strtoul(argv[argc - 1], NULL, 10);
		argc -= 2;
	}
	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("soak", tests, setup, teardown);
}
