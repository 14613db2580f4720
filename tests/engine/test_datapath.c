/* SPDX-License-Identifier: BSD-3-Clause
 * The data path end to end: two softrnic devices in one process on the net_ring pair, every operation of
 * RC, UC and UD with the data verified byte for byte, and the error cases on the right side.
 * Run as: test_datapath <EAL args with a worker lcore> [-- engine args]
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <rte_byteorder.h>
#include <rte_common.h>

#include "rnic.h"
#include "test_env.h"

#define BUF_SIZE (2u << 20)
#define MAX_SGE 30

static int g_argc;
static char **g_argv;

/* The two sides of every connection. */
static struct test_side A, B;

static void
open_side(struct test_side *s, struct rnic_device *dev)
{
	assert_int_equal(test_side_open(s, dev, BUF_SIZE, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
					RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC), 0);
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
	return rnic_engine_start();
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	test_side_close(&A);
	test_side_close(&B);
	return rnic_engine_fini();
}

static struct rnic_qp *
make_qp(struct test_side *s, enum rnic_qp_type type)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = type,
		.cap = { .max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
			 .max_inline_data = 256 },
	};
	struct rnic_qp *qp = rnic_create_qp(s->pd, &ia);

	assert_non_null(qp);
	return qp;
}

/* Bring qp to RTS towards the peer QPN at gid (PSNs start at 0x100, loss timer 67 ms). */
static void
connect_qp(struct rnic_qp *qp, uint32_t peer_qpn, const union rnic_gid *peer_gid, enum rnic_mtu mtu,
	   uint8_t rnr_retry)
{
	const struct test_path path = { .mtu = mtu, .psn = 0x100, .timeout = 14, .retry_cnt = 7, .rnr_retry = rnr_retry };

	assert_int_equal(test_connect(qp, peer_qpn, peer_gid, &path), 0);
}

struct pair {
	struct rnic_qp *a, *b;
};

static struct pair
make_pair(enum rnic_qp_type type, enum rnic_mtu mtu)
{
	struct pair p = { make_qp(&A, type), make_qp(&B, type) };

	connect_qp(p.a, p.b->qp_num, &B.gid, mtu, 0);
	connect_qp(p.b, p.a->qp_num, &A.gid, mtu, 0);
	return p;
}

static void
destroy_pair(struct pair p)
{
	assert_int_equal(rnic_destroy_qp(p.a), 0);
	assert_int_equal(rnic_destroy_qp(p.b), 0);
}

/* Wait (bounded) for n completions on cq. */
static void
wait_wc(struct rnic_cq *cq, int n, struct rnic_wc *wc)
{
	struct timespec t0, t;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		int r = rnic_poll_cq(cq, n - got, wc + got);

		assert_true(r >= 0);
		got += r;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			fail_msg("timed out: %d of %d completions", got, n);
	}
}

static void
expect_no_wc(struct rnic_cq *cq)
{
	struct rnic_wc wc;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	assert_int_equal(rnic_poll_cq(cq, 1, &wc), 0);
}

static void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static uint32_t
mtu_bytes(enum rnic_mtu mtu)
{
	return 128u << mtu;
}

static void
post_send1(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t wr_id, struct rnic_sge *sge, int nsge,
	   uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct rnic_send_wr wr = { .wr_id = wr_id, .opcode = op, .sg_list = sge, .num_sge = nsge,
				   .send_flags = RNIC_SEND_SIGNALED | flags }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.imm_data = rte_cpu_to_be_32(0x1234abcd);
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

static void
post_recv1(struct rnic_qp *qp, uint64_t wr_id, struct rnic_sge *sge, int nsge)
{
	struct rnic_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = nsge }, *bad;

	assert_int_equal(rnic_post_recv(qp, &wr, &bad), 0);
}

static uint32_t
sizes_of(enum rnic_mtu mtu, unsigned int i)
{
	uint32_t m = mtu_bytes(mtu);
	const uint32_t sizes[] = { 0, 1, m - 1, m, m + 1, 3 * m + 7, 1u << 20 };

	return sizes[i];
}
#define NB_SIZES 7

static void
test_rc_write(void **state)
{
	(void)state;
	for (enum rnic_mtu mtu = RNIC_MTU_256; mtu <= RNIC_MTU_4096; mtu++) {
	struct pair p = make_pair(RNIC_QPT_RC, mtu);
	struct rnic_wc wc;

	for (unsigned int i = 0; i < NB_SIZES; i++) {
		uint32_t len = sizes_of(mtu, i);
		struct rnic_sge sge = { (uintptr_t)A.buf, len, A.mr->lkey };

		fill(A.buf, len, i);
		memset(B.buf, 0xee, len + 16);
		post_send1(p.a, RNIC_WR_RDMA_WRITE, 100 + i, &sge, 1, (uintptr_t)B.buf + 8, B.mr->rkey, 0);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		assert_int_equal(wc.opcode, RNIC_WC_RDMA_WRITE);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_memory_equal(B.buf + 8, A.buf, len);
		assert_int_equal(B.buf[7], 0xee);		/* nothing before ... */
		assert_int_equal(B.buf[8 + len], 0xee);	/* ... or after */
	}
	expect_no_wc(B.cq);	/* a plain WRITE consumes no receive */
	destroy_pair(p);
	}
}

static void
test_rc_send(void **state)
{
	static const enum rnic_wr_opcode ops[] = { RNIC_WR_SEND, RNIC_WR_SEND_WITH_IMM, RNIC_WR_SEND_WITH_INV };
	struct pair p = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	struct rnic_wc wc;

	(void)state;
	for (unsigned int o = 0; o < RTE_DIM(ops); o++) {
		for (unsigned int i = 0; i < NB_SIZES; i++) {
			uint32_t len = sizes_of(RNIC_MTU_1024, i);
			struct rnic_sge src = { (uintptr_t)A.buf, len, A.mr->lkey };
			struct rnic_sge dst = { (uintptr_t)B.buf, len + 100, B.mr->lkey };
			struct rnic_send_wr wr = { .wr_id = 7, .opcode = ops[o], .sg_list = &src, .num_sge = 1,
						   .send_flags = RNIC_SEND_SIGNALED | RNIC_SEND_SOLICITED }, *bad;

			fill(A.buf, len, i + o);
			memset(B.buf, 0, len + 100);
			post_recv1(p.b, 200 + i, &dst, 1);
			if (ops[o] == RNIC_WR_SEND_WITH_INV)
				wr.invalidate_rkey = 0xc0ffee00 + i;
			else
				wr.imm_data = rte_cpu_to_be_32(0xc0ffee00 + i);
			assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
			wait_wc(A.cq, 1, &wc);
			assert_int_equal(wc.status, RNIC_WC_SUCCESS);
			assert_int_equal(wc.opcode, RNIC_WC_SEND);
			wait_wc(B.cq, 1, &wc);
			assert_int_equal(wc.status, RNIC_WC_SUCCESS);
			assert_int_equal(wc.opcode, RNIC_WC_RECV);
			assert_int_equal(wc.wr_id, 200 + i);
			assert_int_equal(wc.byte_len, len);
			assert_int_equal(wc.qp_num, p.b->qp_num);
			if (ops[o] == RNIC_WR_SEND_WITH_IMM) {
				assert_int_equal(wc.wc_flags & RNIC_WC_WITH_IMM, RNIC_WC_WITH_IMM);
				assert_int_equal(wc.imm_data, rte_cpu_to_be_32(0xc0ffee00 + i));
			} else if (ops[o] == RNIC_WR_SEND_WITH_INV) {
				assert_int_equal(wc.wc_flags & RNIC_WC_WITH_INV, RNIC_WC_WITH_INV);
				assert_int_equal(wc.invalidated_rkey, 0xc0ffee00 + i);
			} else {
				assert_int_equal(wc.wc_flags & (RNIC_WC_WITH_IMM | RNIC_WC_WITH_INV), 0);
			}
			assert_memory_equal(B.buf, A.buf, len);
			assert_int_equal(B.buf[len], 0);
		}
	}
	destroy_pair(p);
}

static void
test_rc_read(void **state)
{
	(void)state;
	for (enum rnic_mtu mtu = RNIC_MTU_256; mtu <= RNIC_MTU_4096; mtu++) {
	struct pair p = make_pair(RNIC_QPT_RC, mtu);
	struct rnic_wc wc;

	for (unsigned int i = 0; i < NB_SIZES; i++) {
		uint32_t len = sizes_of(mtu, i);
		struct rnic_sge sge = { (uintptr_t)A.buf + 4, len, A.mr->lkey };

		fill(B.buf, len, 50 + i);
		memset(A.buf, 0xee, len + 16);
		post_send1(p.a, RNIC_WR_RDMA_READ, 300 + i, &sge, 1, (uintptr_t)B.buf, B.mr->rkey, 0);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		assert_int_equal(wc.opcode, RNIC_WC_RDMA_READ);
		assert_int_equal(wc.byte_len, len);
		assert_memory_equal(A.buf + 4, B.buf, len);
		assert_int_equal(A.buf[3], 0xee);
		assert_int_equal(A.buf[4 + len], 0xee);
	}
	expect_no_wc(B.cq);
	destroy_pair(p);
	}
}

/* Zero-length WRITE and READ with rkey 0 and a VA that is nowhere: no R_Key or bounds check (IBA 9.7.4.1),
 * both complete successfully and the pair goes on. */
static void
test_rc_zero_length_no_key(void **state)
{
	struct pair p = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	struct rnic_sge sge = { (uintptr_t)A.buf, 64, A.mr->lkey };
	struct rnic_wc wc[3];

	(void)state;
	post_send1(p.a, RNIC_WR_RDMA_WRITE, 1, NULL, 0, 0xdead0000, 0, 0);
	post_send1(p.a, RNIC_WR_RDMA_READ, 2, NULL, 0, 0xbeef0000, 0, 0);
	fill(A.buf, 64, 9);
	post_send1(p.a, RNIC_WR_RDMA_WRITE, 3, &sge, 1, (uintptr_t)B.buf, B.mr->rkey, 0);
	wait_wc(A.cq, 3, wc);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, i + 1);
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
	}
	assert_int_equal(wc[1].byte_len, 0);
	assert_memory_equal(B.buf, A.buf, 64);
	assert_int_equal(p.b->state, RNIC_QPS_RTS);
	expect_no_wc(B.cq);
	destroy_pair(p);
}

/*
 * The device's full READ depth (128 outstanding each way; the responder's resources are sized by
 * max_dest_rd_atomic at RTR): 640 READs, with a fetch-and-add after every ninth, posted as the window
 * allows, so the responder's ring wraps many times with READ jobs and queued atomic answers mixed. Every
 * completion in order, every byte and every atomic result right.
 */
static void
test_rc_deep_reads(void **state)
{
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0x200, .timeout = 14, .retry_cnt = 7,
					.rd_atomic = 128 };
	struct rnic_device_attr dattr;
	struct pair p = { make_qp(&A, RNIC_QPT_RC), make_qp(&B, RNIC_QPT_RC) };
	uint64_t *counter = (uint64_t *)(void *)(B.buf + (1u << 20));
	const int total = 640;
	int posted = 0, done = 0, adds = 0;
	struct rnic_wc wc[64];

	(void)state;
	assert_int_equal(rnic_query_device(A.ctx, &dattr), 0);
	assert_int_equal(dattr.max_qp_rd_atom, 128);
	assert_int_equal(test_connect(p.a, p.b->qp_num, &B.gid, &path), 0);
	assert_int_equal(test_connect(p.b, p.a->qp_num, &A.gid, &path), 0);
	fill(B.buf, 64 * 1024, 9);
	*counter = 0;
	memset(A.buf, 0, 64 * 1024 + 8 * 128);
	while (done < total) {
		while (posted < total && posted - done < 128) {
			int add = posted % 9 == 8;
			struct rnic_sge sge = { (uintptr_t)A.buf + (add ? 64 * 1024 + 8 * (uint32_t)(adds % 128) :
								     100u * (uint32_t)posted % (64 * 1024 - 100)),
						add ? 8 : 100, A.mr->lkey };
			struct rnic_send_wr wr = { .wr_id = (uint64_t)posted, .sg_list = &sge, .num_sge = 1,
						   .opcode = add ? RNIC_WR_ATOMIC_FETCH_AND_ADD : RNIC_WR_RDMA_READ,
						   .send_flags = RNIC_SEND_SIGNALED }, *bad;

			if (add) {
				wr.wr.atomic.remote_addr = (uintptr_t)counter;
				wr.wr.atomic.rkey = B.mr->rkey;
				wr.wr.atomic.compare_add = 1;
				adds++;
			} else {
				wr.wr.rdma.remote_addr = (uintptr_t)B.buf + 100u * (uint32_t)posted % (64 * 1024 - 100);
				wr.wr.rdma.rkey = B.mr->rkey;
			}
			assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
			posted++;
		}
		int n = 0;

		wait_wc(A.cq, 1, wc);
		n = 1 + rnic_poll_cq(A.cq, 63, wc + 1);
		for (int i = 0; i < n; i++, done++) {
			assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, (uint64_t)done);
			if (done % 9 == 8) {
				uint64_t orig;

				memcpy(&orig, A.buf + 64 * 1024 + 8 * (uint32_t)((done / 9) % 128), 8);
				assert_int_equal(orig, (uint64_t)(done / 9));	/* the n-th add found n */
			} else {
				uint32_t off = 100u * (uint32_t)done % (64 * 1024 - 100);

				assert_memory_equal(A.buf + off, B.buf + off, 100);
			}
		}
	}
	assert_int_equal(*counter, (uint64_t)adds);
	destroy_pair(p);
}

/*
 * One READ in flight at a time (max_rd_atomic 1), and a fenced WRITE behind each READ that sends what the
 * READ placed: each READ waits for the one before it and each WRITE for its READ, so every response must wake
 * the requester, and a WRITE that did not wait would send the buffer before the READ filled it.
 */
static void
test_rc_read_depth_and_fence(void **state)
{
	const struct test_path path = { .mtu = RNIC_MTU_1024, .psn = 0x300, .timeout = 14, .retry_cnt = 7,
					.rd_atomic = 1 };
	struct pair p = { make_qp(&A, RNIC_QPT_RC), make_qp(&B, RNIC_QPT_RC) };
	const uint32_t rounds = 16, len = 3000, dst = 1u << 20;
	struct rnic_wc wc[64];
	uint32_t done = 0;

	(void)state;
	assert_int_equal(test_connect(p.a, p.b->qp_num, &B.gid, &path), 0);
	assert_int_equal(test_connect(p.b, p.a->qp_num, &A.gid, &path), 0);
	fill(B.buf, rounds * 4096, 5);
	memset(B.buf + dst, 0, rounds * 4096);
	memset(A.buf, 0, rounds * 4096);
	for (uint32_t i = 0; i < rounds; i++) {
		struct rnic_sge sge = { (uintptr_t)A.buf + 4096 * i, len, A.mr->lkey };

		post_send1(p.a, RNIC_WR_RDMA_READ, 2 * i, &sge, 1, (uintptr_t)B.buf + 4096 * i, B.mr->rkey, 0);
		post_send1(p.a, RNIC_WR_RDMA_WRITE, 2 * i + 1, &sge, 1, (uintptr_t)B.buf + dst + 4096 * i,
			   B.mr->rkey, RNIC_SEND_FENCE);
	}
	while (done < 2 * rounds) {
		int n;

		wait_wc(A.cq, 1, wc);
		n = 1 + rnic_poll_cq(A.cq, 63, wc + 1);
		for (int i = 0; i < n; i++, done++) {
			assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, (uint64_t)done);
		}
	}
	for (uint32_t i = 0; i < rounds; i++) {
		assert_memory_equal(A.buf + 4096 * i, B.buf + 4096 * i, len);
		assert_memory_equal(B.buf + dst + 4096 * i, B.buf + 4096 * i, len);
	}
	destroy_pair(p);
}

static void
test_rc_atomics(void **state)
{
	struct pair p = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	uint64_t *target = (uint64_t *)(void *)(B.buf + 64), *result = (uint64_t *)(void *)A.buf;
	struct rnic_sge sge = { (uintptr_t)result, 8, A.mr->lkey };
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .send_flags = RNIC_SEND_SIGNALED }, *bad;
	struct rnic_wc wc;

	(void)state;
	*target = 1000;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = B.mr->rkey;
	for (int i = 0; i < 10; i++) {
		wr.opcode = RNIC_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.compare_add = 5;
		assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		assert_int_equal(wc.opcode, RNIC_WC_FETCH_ADD);
		assert_int_equal(*result, 1000 + 5 * (uint64_t)i);
	}
	assert_int_equal(*target, 1050);
	wr.opcode = RNIC_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1049;	/* wrong: no swap */
	wr.wr.atomic.swap = 7;
	assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.opcode, RNIC_WC_COMP_SWAP);
	assert_int_equal(*result, 1050);
	assert_int_equal(*target, 1050);
	wr.wr.atomic.compare_add = 1050;	/* right: swapped */
	assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	assert_int_equal(*result, 1050);
	assert_int_equal(*target, 7);
	destroy_pair(p);
}

/* SGE lists of 1, 2 and the maximum entries, gathered by the requester and scattered by the responder;
 * inline sends; three WQEs chained behind one doorbell. */
static void
test_sge_lists_inline_chains(void **state)
{
	static const int counts[] = { 1, 2, MAX_SGE };
	struct pair p = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	struct rnic_sge src[MAX_SGE], dst[MAX_SGE];
	struct rnic_wc wc[4];

	(void)state;
	for (unsigned int c = 0; c < RTE_DIM(counts); c++) {
		uint32_t total = 0;

		/* Pieces of uneven lengths at scattered offsets; the receiver's list is cut differently. */
		for (int i = 0; i < counts[c]; i++) {
			uint32_t len = 100 + 37 * (uint32_t)i;

			src[i] = (struct rnic_sge){ (uintptr_t)A.buf + 8192 * (uint32_t)i + 3, len, A.mr->lkey };
			fill(A.buf + 8192 * i + 3, len, (uint32_t)(c * 100 + i));
			total += len;
		}
		for (int i = 0; i < counts[c]; i++)
			dst[i] = (struct rnic_sge){ (uintptr_t)B.buf + 8192 * (uint32_t)i + 5,
						    total / (uint32_t)counts[c] + 1, B.mr->lkey };
		post_recv1(p.b, 1, dst, counts[c]);
		post_send1(p.a, RNIC_WR_SEND, 2, src, counts[c], 0, 0, 0);
		wait_wc(A.cq, 1, wc);
		wait_wc(B.cq, 1, wc);
		assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
		assert_int_equal(wc[0].byte_len, total);
		/* Compare the gathered stream with the scattered one. */
		uint8_t *sent = malloc(total), *got = malloc(total);
		uint32_t off = 0;

		for (int i = 0; i < counts[c]; i++) {
			memcpy(sent + off, (void *)(uintptr_t)src[i].addr, src[i].length);
			off += src[i].length;
		}
		off = 0;
		for (int i = 0; i < counts[c] && off < total; i++) {
			uint32_t n = RTE_MIN(dst[i].length, total - off);

			memcpy(got + off, (void *)(uintptr_t)dst[i].addr, n);
			off += n;
		}
		assert_memory_equal(sent, got, total);
		free(sent);
		free(got);

		/* RDMA WRITE gathers the same list into one remote range. */
		post_send1(p.a, RNIC_WR_RDMA_WRITE, 3, src, counts[c], (uintptr_t)B.buf + 300000, B.mr->rkey, 0);
		wait_wc(A.cq, 1, wc);
		assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
		off = 0;
		for (int i = 0; i < counts[c]; i++) {
			assert_memory_equal(B.buf + 300000 + off, (void *)(uintptr_t)src[i].addr, src[i].length);
			off += src[i].length;
		}
	}

	/* Inline: the data is copied at post time, so the source may change right after. */
	char msg[200];
	struct rnic_sge in = { (uintptr_t)msg, sizeof(msg), 0 };
	struct rnic_sge rcv = { (uintptr_t)B.buf, 4096, B.mr->lkey };

	fill((uint8_t *)msg, sizeof(msg), 9);
	post_recv1(p.b, 4, &rcv, 1);
	post_send1(p.a, RNIC_WR_SEND, 5, &in, 1, 0, 0, RNIC_SEND_INLINE);
	char copy[200];

	memcpy(copy, msg, sizeof(msg));
	memset(msg, 0, sizeof(msg));
	wait_wc(B.cq, 1, wc);
	assert_int_equal(wc[0].byte_len, sizeof(copy));
	assert_memory_equal(B.buf, copy, sizeof(copy));
	wait_wc(A.cq, 1, wc);

	/* A chain of three WRs, one doorbell: all three done, in order. */
	struct rnic_sge s1 = { (uintptr_t)A.buf, 64, A.mr->lkey };
	struct rnic_send_wr chain[3], *bad;

	memset(chain, 0, sizeof(chain));
	for (int i = 0; i < 3; i++) {
		chain[i].wr_id = 10 + (uint64_t)i;
		chain[i].opcode = RNIC_WR_RDMA_WRITE;
		chain[i].sg_list = &s1;
		chain[i].num_sge = 1;
		chain[i].send_flags = RNIC_SEND_SIGNALED;
		chain[i].wr.rdma.remote_addr = (uintptr_t)B.buf + 500000 + 64 * (uint64_t)i;
		chain[i].wr.rdma.rkey = B.mr->rkey;
		chain[i].next = i < 2 ? &chain[i + 1] : NULL;
	}
	fill(A.buf, 64, 77);
	assert_int_equal(rnic_post_send(p.a, chain, &bad), 0);
	wait_wc(A.cq, 3, wc);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 10 + (uint64_t)i);
		assert_memory_equal(B.buf + 500000 + 64 * i, A.buf, 64);
	}
	destroy_pair(p);
}

static void
test_uc(void **state)
{
	struct pair p = make_pair(RNIC_QPT_UC, RNIC_MTU_512);
	struct rnic_wc wc;

	(void)state;
	for (unsigned int i = 0; i < NB_SIZES; i++) {
		uint32_t len = sizes_of(RNIC_MTU_512, i);
		struct rnic_sge src = { (uintptr_t)A.buf, len, A.mr->lkey };
		struct rnic_sge dst = { (uintptr_t)B.buf, len, B.mr->lkey };

		/* SEND, alternately with an immediate */
		int imm = i & 1;

		fill(A.buf, len, 200 + i);
		post_recv1(p.b, 1, &dst, 1);
		post_send1(p.a, imm ? RNIC_WR_SEND_WITH_IMM : RNIC_WR_SEND, 2, &src, 1, 0, 0, 0);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		wait_wc(B.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		assert_int_equal(wc.byte_len, len);
		assert_int_equal(!!(wc.wc_flags & RNIC_WC_WITH_IMM), imm);
		if (imm)
			assert_int_equal(wc.imm_data, rte_cpu_to_be_32(0x1234abcd));
		assert_memory_equal(B.buf, A.buf, len);
		/* plain WRITE: the data lands, no receive is consumed. A UC WRITE completes once sent, before
		 * the responder has placed it, and memory the engine is writing cannot be polled reliably (a
		 * vectorised memcmp may report equal mid-write); a zero-length SEND behind it is the fence:
		 * the responder takes a QP's packets in order, so its receive completes after the WRITE
		 * landed, and it is the only completion: the WRITE took no receive. */
		fill(A.buf, len, 250 + i);
		post_recv1(p.b, 7, NULL, 0);
		post_send1(p.a, RNIC_WR_RDMA_WRITE, 6, &src, 1, (uintptr_t)B.buf + 8192, B.mr->rkey, 0);
		post_send1(p.a, RNIC_WR_SEND, 8, NULL, 0, 0, 0, 0);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 6);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.wr_id, 8);
		wait_wc(B.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 7);
		assert_int_equal(wc.byte_len, 0);
		expect_no_wc(B.cq);
		assert_memory_equal(B.buf + 8192, A.buf, len);
		/* WRITE with immediate: the data lands, and a receive completes with the length */
		fill(A.buf, len, 300 + i);
		post_recv1(p.b, 3, NULL, 0);
		post_send1(p.a, RNIC_WR_RDMA_WRITE_WITH_IMM, 4, &src, 1, (uintptr_t)B.buf + (2u << 20) - len - 8,
			   B.mr->rkey, 0);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.opcode, RNIC_WC_RDMA_WRITE);
		wait_wc(B.cq, 1, &wc);
		assert_int_equal(wc.opcode, RNIC_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(wc.byte_len, len);
		assert_memory_equal(B.buf + (2u << 20) - len - 8, A.buf, len);
	}
	/* READ is not a UC operation: it completes with the "unsupported opcode" error. */
	struct rnic_sge sge = { (uintptr_t)A.buf, 8, A.mr->lkey };

	post_send1(p.a, RNIC_WR_RDMA_READ, 5, &sge, 1, (uintptr_t)B.buf, B.mr->rkey, 0);
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.status, RNIC_WC_LOC_QP_OP_ERR);
	assert_int_equal(wc.wr_id, 5);
	destroy_pair(p);
}

static void
test_ud(void **state)
{
	struct pair p = { make_qp(&A, RNIC_QPT_UD), make_qp(&B, RNIC_QPT_UD) };
	struct rnic_ah_attr av = { .is_global = 1, .port_num = 1, .grh = { .dgid = B.gid, .hop_limit = 64 } };
	struct rnic_ah *ah;
	struct rnic_wc wc;
	uint32_t lens[] = { 0, 1, 1023, 1024 };

	(void)state;
	connect_qp(p.a, 0, &B.gid, RNIC_MTU_1024, 0);
	connect_qp(p.b, 0, &A.gid, RNIC_MTU_1024, 0);
	ah = rnic_create_ah(A.pd, &av);
	assert_non_null(ah);
	for (unsigned int i = 0; i < RTE_DIM(lens); i++) {
		struct rnic_sge src = { (uintptr_t)A.buf, lens[i], A.mr->lkey };
		struct rnic_sge dst = { (uintptr_t)B.buf, 40 + 4096, B.mr->lkey };
		struct rnic_send_wr wr = { .wr_id = 9, .opcode = i & 1 ? RNIC_WR_SEND_WITH_IMM : RNIC_WR_SEND,
					   .sg_list = &src, .num_sge = 1, .send_flags = RNIC_SEND_SIGNALED }, *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = p.b->qp_num;
		wr.wr.ud.remote_qkey = 0x11111111;
		wr.imm_data = rte_cpu_to_be_32(42);
		fill(A.buf, lens[i], 400 + i);
		memset(B.buf, 0xaa, 40 + lens[i] + 1);
		post_recv1(p.b, 10 + i, &dst, 1);
		assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
		wait_wc(A.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		wait_wc(B.cq, 1, &wc);
		assert_int_equal(wc.status, RNIC_WC_SUCCESS);
		/* libibverbs' convention: 40 bytes of GRH space first, counted in byte_len */
		assert_int_equal(wc.byte_len, 40 + lens[i]);
		assert_int_equal(wc.src_qp, p.a->qp_num);
		assert_int_equal(wc.wc_flags & RNIC_WC_GRH, RNIC_WC_GRH);
		assert_int_equal(!!(wc.wc_flags & RNIC_WC_WITH_IMM), i & 1);
		/* IPv6: the GRH space holds the IPv6 header; IPv4: the IPv4 header sits in its last 20 bytes */
		if (A.gid.raw[10] == 0xff && A.gid.raw[11] == 0xff)
			assert_int_equal(B.buf[20] >> 4, 4);
		else
			assert_int_equal(B.buf[0] >> 4, 6);
		assert_memory_equal(B.buf + 40, A.buf, lens[i]);
		assert_int_equal(B.buf[40 + lens[i]], 0xaa);
	}
	/* A wrong Q_Key is dropped at the receiver; one larger than the MTU is a local length error. */
	struct rnic_sge src = { (uintptr_t)A.buf, 16, A.mr->lkey };
	struct rnic_sge dst = { (uintptr_t)B.buf, 4096, B.mr->lkey };
	struct rnic_send_wr wr = { .wr_id = 20, .opcode = RNIC_WR_SEND, .sg_list = &src, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = p.b->qp_num;
	wr.wr.ud.remote_qkey = 0x22222222;
	post_recv1(p.b, 21, &dst, 1);
	assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);	/* UD: the sender cannot know */
	expect_no_wc(B.cq);
	src.length = 4097;	/* the port MTU is 4096 */
	wr.wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.status, RNIC_WC_LOC_LEN_ERR);
	assert_int_equal(rnic_destroy_ah(ah), 0);
	destroy_pair(p);
}

/* Post one signaled SEND of the first len bytes of the side's buffer: UD to the peer QP through ah. */
static void
post_send_to(struct rnic_qp *qp, struct test_side *s, uint64_t wr_id, uint32_t len, struct rnic_ah *ah,
	     uint32_t peer_qpn)
{
	struct rnic_sge src = { (uintptr_t)s->buf, len, s->mr->lkey };
	struct rnic_send_wr wr = { .wr_id = wr_id, .opcode = RNIC_WR_SEND, .sg_list = &src, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = peer_qpn;
	wr.wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

/*
 * A UD or UC send error (UD: a message over the MTU; UC: a READ, which UC does not carry) moves the QP to
 * SQE, not ERR (IBA 10.3.1): the WQE behind it and one posted in SQE complete flushed, the receive queue is
 * not flushed and still takes the peer's SEND, and modify_qp takes the QP back to RTS, where it sends again.
 */
static void
test_send_error_sqe(void **state)
{
	(void)state;
	for (int uc = 0; uc < 2; uc++) {
		enum rnic_qp_type type = uc ? RNIC_QPT_UC : RNIC_QPT_UD;
		struct pair p = uc ? make_pair(type, RNIC_MTU_1024) :
				(struct pair){ make_qp(&A, type), make_qp(&B, type) };
		struct rnic_ah_attr av = { .is_global = 1, .port_num = 1, .grh = { .dgid = A.gid, .hop_limit = 64 } };
		struct rnic_ah *to_a = NULL, *to_b = NULL;
		struct rnic_sge dst = { (uintptr_t)A.buf + 8192, 4096 + 40, A.mr->lkey };
		struct rnic_sge rd = { (uintptr_t)A.buf, 8, A.mr->lkey };
		struct rnic_qp_attr rts = { .qp_state = RNIC_QPS_RTS };
		struct rnic_wc wc[2];

		if (!uc) {
			connect_qp(p.a, 0, &B.gid, RNIC_MTU_1024, 0);
			connect_qp(p.b, 0, &A.gid, RNIC_MTU_1024, 0);
			to_a = rnic_create_ah(B.pd, &av);
			av.grh.dgid = B.gid;
			to_b = rnic_create_ah(A.pd, &av);
			assert_true(to_a != NULL && to_b != NULL);
		}
		post_recv1(p.a, 50, &dst, 1);
		if (uc)
			post_send1(p.a, RNIC_WR_RDMA_READ, 51, &rd, 1, (uintptr_t)B.buf, B.mr->rkey, 0);
		else
			post_send_to(p.a, &A, 51, 4097, to_b, p.b->qp_num);	/* the port MTU is 4096 */
		post_send_to(p.a, &A, 52, 16, to_b, p.b->qp_num);
		wait_wc(A.cq, 2, wc);
		assert_int_equal(wc[0].wr_id, 51);
		assert_int_equal(wc[0].status, uc ? RNIC_WC_LOC_QP_OP_ERR : RNIC_WC_LOC_LEN_ERR);
		assert_int_equal(wc[1].wr_id, 52);
		assert_int_equal(wc[1].status, RNIC_WC_WR_FLUSH_ERR);
		assert_int_equal(p.a->state, RNIC_QPS_SQE);
		expect_no_wc(A.cq);		/* the receive is still posted */
		post_send_to(p.a, &A, 53, 16, to_b, p.b->qp_num);
		wait_wc(A.cq, 1, wc);
		assert_int_equal(wc[0].wr_id, 53);
		assert_int_equal(wc[0].status, RNIC_WC_WR_FLUSH_ERR);
		/* The receive side works in SQE. */
		fill(B.buf, 100, 60 + uc);
		post_send_to(p.b, &B, 54, 100, to_a, p.a->qp_num);
		wait_wc(B.cq, 1, wc);
		assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
		wait_wc(A.cq, 1, wc);
		assert_int_equal(wc[0].wr_id, 50);
		assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
		assert_memory_equal(A.buf + 8192 + (uc ? 0 : 40), B.buf, 100);
		/* Back to RTS (IBA 10.3.1: SQE -> RTS): the QP sends again. */
		assert_int_equal(rnic_modify_qp(p.a, &rts, RNIC_QP_STATE), 0);
		assert_int_equal(p.a->state, RNIC_QPS_RTS);
		dst = (struct rnic_sge){ (uintptr_t)B.buf + 8192, 4096 + 40, B.mr->lkey };
		post_recv1(p.b, 55, &dst, 1);
		fill(A.buf, 64, 70 + uc);
		post_send_to(p.a, &A, 56, 64, to_b, p.b->qp_num);
		wait_wc(A.cq, 1, wc);
		assert_int_equal(wc[0].wr_id, 56);
		assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
		wait_wc(B.cq, 1, wc);
		assert_int_equal(wc[0].wr_id, 55);
		assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
		assert_memory_equal(B.buf + 8192 + (uc ? 0 : 40), A.buf, 64);
		destroy_pair(p);
		if (!uc) {
			assert_int_equal(rnic_destroy_ah(to_a), 0);
			assert_int_equal(rnic_destroy_ah(to_b), 0);
		}
	}
}

/* Run one RC operation that must fail: the requester's status, nothing written at the target. */
static void
expect_remote_error(enum rnic_wr_opcode op, struct rnic_mr *target_mr, uint64_t raddr, uint32_t len,
		    enum rnic_wc_status expect, int post_receive)
{
	struct pair p = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	struct rnic_sge sge = { (uintptr_t)A.buf, len, A.mr->lkey };
	struct rnic_send_wr wr = { .wr_id = 1, .opcode = op, .sg_list = &sge, .num_sge = 1,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;
	struct rnic_sge rsge = { (uintptr_t)B.buf, 16, B.mr->lkey };
	struct rnic_wc wc[4];

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = target_mr->rkey;
	if (op == RNIC_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = target_mr->rkey;
		wr.wr.atomic.compare_add = 1;
	}
	fill(A.buf, len, 1);
	memset(B.buf, 0x5a, 1 << 16);
	if (post_receive)
		post_recv1(p.b, 77, &rsge, 1);
	assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);
	wr.wr_id = 2;
	assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);	/* behind it: flushed */
	wait_wc(A.cq, 2, wc);
	assert_int_equal(wc[0].wr_id, 1);
	if (wc[0].status != expect)
		fail_msg("status %s, expected %s", rnic_wc_status_str(wc[0].status), rnic_wc_status_str(expect));
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, RNIC_WC_WR_FLUSH_ERR);
	assert_int_equal(p.a->state, RNIC_QPS_ERR);
	/* Both sides counted the NAK under its code. */
	struct rnic_qp_counters ca, cb;

	assert_int_equal(rnic_query_qp_counters(p.a, &ca), 0);
	assert_int_equal(rnic_query_qp_counters(p.b, &cb), 0);
	assert_int_equal(ca.access_naks_received, expect == RNIC_WC_REM_ACCESS_ERR);
	assert_int_equal(cb.access_naks_sent, expect == RNIC_WC_REM_ACCESS_ERR);
	assert_int_equal(ca.inv_req_naks_received, expect == RNIC_WC_REM_INV_REQ_ERR);
	assert_int_equal(cb.inv_req_naks_sent, expect == RNIC_WC_REM_INV_REQ_ERR);
	assert_int_equal(ca.rnr_naks_received, expect == RNIC_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(ca.remote_op_naks_received + ca.seq_naks_received, 0);
	for (int i = 0; i < 1 << 16; i++)
		if (B.buf[i] != 0x5a)
			fail_msg("byte %d of the target was written", i);
	if (post_receive) {
		/* The responder's side: its receive completes in error (too small) */
		wait_wc(B.cq, 1, wc);
		assert_int_not_equal(wc[0].status, RNIC_WC_SUCCESS);
	}
	expect_no_wc(B.cq);
	/* A responder that NAKed an access or invalid request is in error, and says so asynchronously. */
	if (expect == RNIC_WC_REM_ACCESS_ERR || expect == RNIC_WC_REM_INV_REQ_ERR) {
		struct rnic_async_event ev;

		assert_int_equal(p.b->state, RNIC_QPS_ERR);
		assert_int_equal(rnic_get_async_event(B.ctx, &ev), 0);	/* raised before the NAK left */
		assert_ptr_equal(ev.element.qp, p.b);
		assert_int_equal(ev.event_type, expect == RNIC_WC_REM_ACCESS_ERR ? RNIC_EVENT_QP_ACCESS_ERR :
				 RNIC_EVENT_QP_REQ_ERR);
		rnic_ack_async_event(&ev);
	}
	destroy_pair(p);
}

static void
test_rc_errors(void **state)
{
	struct rnic_mr *local_only = rnic_reg_mr(B.pd, B.buf, 65536, RNIC_ACCESS_LOCAL_WRITE);
	struct rnic_mr *no_read = rnic_reg_mr(B.pd, B.buf, 65536, RNIC_ACCESS_LOCAL_WRITE |
					       RNIC_ACCESS_REMOTE_WRITE);
	struct rnic_mr wrong = *B.mr;

	(void)state;
	wrong.rkey ^= 0x80;	/* a key byte that was never handed out */
	expect_remote_error(RNIC_WR_RDMA_WRITE, &wrong, (uintptr_t)B.buf, 64, RNIC_WC_REM_ACCESS_ERR, 0);
	expect_remote_error(RNIC_WR_RDMA_WRITE, B.mr, (uintptr_t)B.buf + BUF_SIZE - 32, 64,
			    RNIC_WC_REM_ACCESS_ERR, 0);	/* out of bounds */
	expect_remote_error(RNIC_WR_RDMA_WRITE, local_only, (uintptr_t)B.buf, 64, RNIC_WC_REM_ACCESS_ERR, 0);
	expect_remote_error(RNIC_WR_RDMA_READ, no_read, (uintptr_t)B.buf, 64, RNIC_WC_REM_ACCESS_ERR, 0);
	expect_remote_error(RNIC_WR_ATOMIC_FETCH_AND_ADD, B.mr, (uintptr_t)B.buf + 4, 8, RNIC_WC_REM_INV_REQ_ERR,
			    0);	/* misaligned */
	/* An empty receive queue: RNR NAK; with rnr_retry 0 the requester gives up at once. */
	expect_remote_error(RNIC_WR_SEND, B.mr, 0, 64, RNIC_WC_RNR_RETRY_EXC_ERR, 0);
	/* A receive buffer too small: a local length error there, an invalid request NAK here. */
	expect_remote_error(RNIC_WR_SEND, B.mr, 0, 64, RNIC_WC_REM_INV_REQ_ERR, 1);
	rnic_dereg_mr(local_only);
	rnic_dereg_mr(no_read);

	/* A bad local key fails before anything is sent. */
	struct pair p = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	struct rnic_sge sge = { (uintptr_t)A.buf, 64, A.mr->lkey ^ 0x40 };
	struct rnic_wc wc;

	memset(B.buf, 0x5a, 64);
	post_send1(p.a, RNIC_WR_RDMA_WRITE, 3, &sge, 1, (uintptr_t)B.buf, B.mr->rkey, 0);
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.status, RNIC_WC_LOC_PROT_ERR);
	assert_int_equal(B.buf[0], 0x5a);
	/* A QP not ready to send refuses the WR at post time. */
	struct rnic_qp *idle = make_qp(&A, RNIC_QPT_RC);
	struct rnic_send_wr wr = { .opcode = RNIC_WR_SEND, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(rnic_post_send(idle, &wr, &bad), EINVAL);
	assert_int_equal(rnic_destroy_qp(idle), 0);
	destroy_pair(p);
}

static void
test_unsignaled_and_solicited(void **state)
{
	struct pair p = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	struct rnic_sge src = { (uintptr_t)A.buf, 256, A.mr->lkey };
	struct rnic_sge dst = { (uintptr_t)B.buf, 4096, B.mr->lkey };
	struct rnic_send_wr wr = { .opcode = RNIC_WR_RDMA_WRITE, .sg_list = &src, .num_sge = 1 }, *bad;
	struct rnic_comp_channel *ch = rnic_create_comp_channel(B.ctx);
	struct rnic_cq *rcq = rnic_create_cq(B.ctx, 64, (void *)0xb0, ch, 0);
	struct rnic_wc wc;
	struct rnic_cq *ev_cq;
	void *ev_ctx;

	(void)state;
	/* Unsignaled WRITEs complete silently; the signaled one after them reports (and retires them). */
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf;
	wr.wr.rdma.rkey = B.mr->rkey;
	for (int i = 0; i < 200; i++) {
		wr.wr_id = (uint64_t)i;
		wr.send_flags = i == 199 ? RNIC_SEND_SIGNALED : 0;
		assert_int_equal(rnic_post_send(p.a, &wr, &bad), 0);	/* 200 > 0: slots are retired */
	}
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.wr_id, 199);
	expect_no_wc(A.cq);
	destroy_pair(p);

	/* Solicited events: a CQ armed for solicited completions wakes on a SEND with the SE bit only. */
	struct rnic_qp *qa = make_qp(&A, RNIC_QPT_RC);
	struct rnic_qp_init_attr ia = { .send_cq = B.cq, .recv_cq = rcq, .qp_type = RNIC_QPT_RC,
					.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
						 .max_recv_sge = 1 } };
	struct rnic_qp *qb = rnic_create_qp(B.pd, &ia);

	connect_qp(qa, qb->qp_num, &B.gid, RNIC_MTU_1024, 0);
	connect_qp(qb, qa->qp_num, &A.gid, RNIC_MTU_1024, 0);
	post_recv1(qb, 1, &dst, 1);
	post_recv1(qb, 2, &dst, 1);
	assert_int_equal(rnic_req_notify_cq(rcq, 1), 0);
	post_send1(qa, RNIC_WR_SEND, 3, &src, 1, 0, 0, 0);	/* not solicited */
	wait_wc(A.cq, 1, &wc);
	wait_wc(rcq, 1, &wc);
	assert_int_equal(wc.wr_id, 1);
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	assert_int_equal(rnic_get_cq_event(ch, &ev_cq, &ev_ctx), -1);	/* no event */
	post_send1(qa, RNIC_WR_SEND, 4, &src, 1, 0, 0, RNIC_SEND_SOLICITED);
	wait_wc(A.cq, 1, &wc);
	wait_wc(rcq, 1, &wc);
	for (int i = 0; i < 1000 && rnic_get_cq_event(ch, &ev_cq, &ev_ctx) != 0; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	assert_ptr_equal(ev_cq, rcq);
	assert_ptr_equal(ev_ctx, (void *)0xb0);
	rnic_ack_cq_events(rcq, 1);
	assert_int_equal(rnic_destroy_qp(qa), 0);
	assert_int_equal(rnic_destroy_qp(qb), 0);
	assert_int_equal(rnic_destroy_cq(rcq), 0);
	assert_int_equal(rnic_destroy_comp_channel(ch), 0);
}

/* Many QPs at once (over every shard when the stages have several lcores), each with its own data; skew: a
 * QP of A's made first, so that A's QPN of every pair is one above B's. */
static void
many_qps(int skew)
{
	enum { NQP = 24, LEN = 20000 };
	struct rnic_qp *extra = skew ? make_qp(&A, RNIC_QPT_RC) : NULL;
	struct pair p[NQP];
	struct rnic_wc wc[2 * NQP];

	for (int i = 0; i < NQP; i++)
		p[i] = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	fill(A.buf, NQP * LEN, 600);
	memset(B.buf, 0, 2 * NQP * LEN);
	for (int i = 0; i < NQP; i++) {
		struct rnic_sge dst = { (uintptr_t)B.buf + (NQP + i) * LEN, LEN, B.mr->lkey };
		struct rnic_sge src = { (uintptr_t)A.buf + i * LEN, LEN, A.mr->lkey };

		post_recv1(p[i].b, (uint64_t)i, &dst, 1);
		post_send1(p[i].a, RNIC_WR_RDMA_WRITE, (uint64_t)i, &src, 1, (uintptr_t)B.buf + i * LEN, B.mr->rkey, 0);
		post_send1(p[i].a, RNIC_WR_SEND, 100 + (uint64_t)i, &src, 1, 0, 0, 0);
	}
	wait_wc(A.cq, 2 * NQP, wc);
	for (int i = 0; i < 2 * NQP; i++)
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
	wait_wc(B.cq, NQP, wc);
	for (int i = 0; i < NQP; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		assert_int_equal(wc[i].byte_len, LEN);
	}
	assert_memory_equal(B.buf, A.buf, NQP * LEN);			/* the WRITEs */
	assert_memory_equal(B.buf + NQP * LEN, A.buf, NQP * LEN);	/* the SENDs */
	for (int i = 0; i < NQP; i++)
		destroy_pair(p[i]);
	if (extra != NULL)
		assert_int_equal(rnic_destroy_qp(extra), 0);
}

static void
test_many_qps(void **state)
{
	(void)state;
	many_qps(0);
}

/*
 * Every pair's QPNs shifted by one against test_many_qps's: with two shards, the loopback pair delivers TX
 * queue i on RX queue i, so a frame arrives on the RX queue of the sender's shard; in one of the two tests
 * that is the owner's, in the other the other shard's, whose parser hands it to the owner's ring.
 */
static void
test_many_qps_cross_shard(void **state)
{
	(void)state;
	many_qps(1);
}

/*
 * rnic-perf's 64 B WRITE over 64 QPs, 128 each at once: 8192 frames, more than the port's TX queue (the
 * loopback pair's ring holds 4095) takes before the peer's parser reads it. The requester's pass then found
 * the port full at every active QP, none of them idle, and visited them again and again without returning:
 * where the peer's parser shares the lcore (the map "one"), nothing drained the port, every send stayed
 * outstanding and the test's wait runs out.
 */
static void
test_port_full_many_qps(void **state)
{
	enum { NQP = 64, DEPTH = 128, LEN = 64 };
	struct pair p[NQP];
	struct rnic_wc wc[NQP];

	(void)state;
	for (int i = 0; i < NQP; i++)
		p[i] = make_pair(RNIC_QPT_RC, RNIC_MTU_1024);
	fill(A.buf, NQP * DEPTH * LEN, 700);
	memset(B.buf, 0, NQP * DEPTH * LEN);
	for (int i = 0; i < NQP; i++) {
		for (int k = 0; k < DEPTH; k++) {
			uint32_t off = (uint32_t)(i * DEPTH + k) * LEN;
			struct rnic_sge src = { (uintptr_t)A.buf + off, LEN, A.mr->lkey };
			struct rnic_send_wr wr = { .wr_id = (uint64_t)i, .opcode = RNIC_WR_RDMA_WRITE, .sg_list = &src,
						   .num_sge = 1, .send_flags = k == DEPTH - 1 ? RNIC_SEND_SIGNALED : 0 },
					    *bad;

			wr.wr.rdma.remote_addr = (uintptr_t)B.buf + off;
			wr.wr.rdma.rkey = B.mr->rkey;
			assert_int_equal(rnic_post_send(p[i].a, &wr, &bad), 0);
		}
	}
	wait_wc(A.cq, NQP, wc);
	for (int i = 0; i < NQP; i++)
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
	assert_memory_equal(B.buf, A.buf, NQP * DEPTH * LEN);
	for (int i = 0; i < NQP; i++)
		destroy_pair(p[i]);
}

/* Retry exhaustion: a peer that never answers (no such QP) -> RETRY_EXC_ERR after retry_cnt timeouts. */
static void
test_retry_exhaustion(void **state)
{
	struct rnic_qp *qp = make_qp(&A, RNIC_QPT_RC);
	struct rnic_sge sge = { (uintptr_t)A.buf, 64, A.mr->lkey };
	struct rnic_wc wc[2];

	(void)state;
	/* Nobody has QPN 0xabcde: 1 + retry_cnt (7) sends, 67 ms apart (timeout 14), then the error. */
	connect_qp(qp, 0xabcde, &B.gid, RNIC_MTU_1024, 0);
	post_send1(qp, RNIC_WR_RDMA_WRITE, 1, &sge, 1, (uintptr_t)B.buf, B.mr->rkey, 0);
	post_send1(qp, RNIC_WR_SEND, 2, &sge, 1, 0, 0, 0);
	wait_wc(A.cq, 2, wc);
	assert_int_equal(wc[0].status, RNIC_WC_RETRY_EXC_ERR);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].status, RNIC_WC_WR_FLUSH_ERR);
	assert_int_equal(qp->state, RNIC_QPS_ERR);
	assert_int_equal(rnic_destroy_qp(qp), 0);
}

/* RNR retry: a SEND before the receive is posted is NAKed RNR, retried after the RNR timer, and lands. */
static void
test_rnr_retry(void **state)
{
	struct pair p = { make_qp(&A, RNIC_QPT_RC), make_qp(&B, RNIC_QPT_RC) };
	struct rnic_sge src = { (uintptr_t)A.buf, 100, A.mr->lkey };
	struct rnic_sge dst = { (uintptr_t)B.buf, 100, B.mr->lkey };
	struct rnic_wc wc;
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	(void)state;
	connect_qp(p.a, p.b->qp_num, &B.gid, RNIC_MTU_1024, 7);	/* rnr_retry 7: no limit */
	connect_qp(p.b, p.a->qp_num, &A.gid, RNIC_MTU_1024, 7);
	fill(A.buf, 100, 5);
	post_send1(p.a, RNIC_WR_SEND, 1, &src, 1, 0, 0, 0);
	nanosleep(&ts, NULL);		/* several RNR NAKs meanwhile */
	expect_no_wc(A.cq);
	post_recv1(p.b, 2, &dst, 1);
	wait_wc(A.cq, 1, &wc);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	wait_wc(B.cq, 1, &wc);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	assert_memory_equal(B.buf, A.buf, 100);
	destroy_pair(p);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_write),
		cmocka_unit_test(test_rc_send),
		cmocka_unit_test(test_rc_read),
		cmocka_unit_test(test_rc_zero_length_no_key),
		cmocka_unit_test(test_rc_atomics),
		cmocka_unit_test(test_rc_deep_reads),
		cmocka_unit_test(test_rc_read_depth_and_fence),
		cmocka_unit_test(test_sge_lists_inline_chains),
		cmocka_unit_test(test_uc),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_send_error_sqe),
		cmocka_unit_test(test_rc_errors),
		cmocka_unit_test(test_unsignaled_and_solicited),
		cmocka_unit_test(test_many_qps),
		cmocka_unit_test(test_many_qps_cross_shard),
		cmocka_unit_test(test_port_full_many_qps),
		cmocka_unit_test(test_retry_exhaustion),
		cmocka_unit_test(test_rnr_retry),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("datapath", tests, setup, teardown);
}
