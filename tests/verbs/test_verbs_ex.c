/* SPDX-License-Identifier: BSD-3-Clause
 * libsoftrnic-verbs' extended verbs from a program's side (built against libibverbs, run through
 * softrnic-run on the embedded default, as test_verbs.c): the ibv_wr_* post API of a QP made by
 * ibv_create_qp_ex with send_ops_flags, the ibv_start_poll API of a CQ made by ibv_create_cq_ex, their
 * errors, and ibv_close_device on a context the program left objects on.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#define BUF_SIZE 16384
#define WAIT_S 10
#define QKEY 0x1234

static const uint64_t all_ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
				IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
				IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				IBV_QP_EX_WITH_SEND_WITH_INV;

/* One side: its own context (closed by ibv_close_device with whatever is left on it) */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cqx;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static struct ibv_device **devices;
static struct side sides[2];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
setup(void **state)
{
	int n;

	(void)state;
	devices = ibv_get_device_list(&n);
	return devices != NULL && n >= 2 ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	ibv_free_device_list(devices);
	return 0;
}

/* A side on device i: context, PD, an extended CQ, a QP of the type with the ibv_wr_* API, a registered buffer */
static void
open_side(struct side *s, int i, enum ibv_qp_type type)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_qp_init_attr_ex qa = { .qp_type = type, .cap = { .max_send_wr = 16, .max_recv_wr = 16,
					  .max_send_sge = 2, .max_recv_sge = 1, .max_inline_data = 64 },
					  .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					  .send_ops_flags = type == IBV_QPT_UD ? IBV_QP_EX_WITH_SEND : all_ops };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };

	memset(s, 0, sizeof(*s));
	s->ctx = ibv_open_device(devices[i]);
	assert_non_null(s->ctx);
	assert_int_equal(ibv_query_gid(s->ctx, 1, 0, &s->gid), 0);
	s->pd = ibv_alloc_pd(s->ctx);
	assert_non_null(s->pd);
	s->cqx = ibv_create_cq_ex(s->ctx, &ca);
	assert_non_null(s->cqx);
	qa.pd = s->pd;
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(s->cqx);
	s->qp = ibv_create_qp_ex(s->ctx, &qa);
	assert_non_null(s->qp);
	s->qpx = ibv_qp_to_qp_ex(s->qp);
	assert_non_null(s->qpx);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	assert_non_null(s->buf);
	memset(s->buf, 0, BUF_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(s->mr);
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       (type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)), 0);
}

/* INIT -> RTR -> RTS, connected to peer (RC) or not (UD) */
static void
ready_side(struct side *s, const struct side *peer, enum ibv_qp_type type)
{
	int rc = type == IBV_QPT_RC;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = peer->qp->qp_num,
				 .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
				 .ah_attr = { .is_global = 1, .port_num = 1,
					      .grh = { .dgid = peer->gid, .hop_limit = 64 } } };

	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | (rc ? IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)), 0);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
				  .max_rd_atomic = 4 };
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | (rc ? IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0)), 0);
}

static void
open_pair(enum ibv_qp_type type)
{
	open_side(&sides[0], 0, type);
	open_side(&sides[1], 1, type);
	ready_side(&sides[0], &sides[1], type);
	ready_side(&sides[1], &sides[0], type);
}

/* Closing the context releases everything on it (the test leaves it all there) */
static void
close_pair(void)
{
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ibv_close_device(sides[i].ctx), 0);
		free(sides[i].buf);
	}
}

/* One completion through the extended poll API, its fields read with the ibv_wc_read_* entries */
struct done {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm;
	unsigned int flags;
	uint32_t qp_num;
};

static struct done
next_done(struct side *s)
{
	struct ibv_poll_cq_attr attr = { 0 };
	double deadline = now_s() + WAIT_S;
	struct done d;
	int ret;

	while ((ret = ibv_start_poll(s->cqx, &attr)) == ENOENT && now_s() < deadline)
		;
	assert_int_equal(ret, 0);
	d = (struct done){ .wr_id = s->cqx->wr_id, .status = s->cqx->status, .opcode = ibv_wc_read_opcode(s->cqx),
			   .byte_len = ibv_wc_read_byte_len(s->cqx), .flags = ibv_wc_read_wc_flags(s->cqx),
			   .qp_num = ibv_wc_read_qp_num(s->cqx) };
	if (d.flags & IBV_WC_WITH_IMM)
		d.imm = be32toh(ibv_wc_read_imm_data(s->cqx));
	ibv_end_poll(s->cqx);
	assert_int_equal(d.status, IBV_WC_SUCCESS);
	return d;
}

/* n receives of length bytes each from offset on, wr_ids first..first + n - 1, in one list */
static void
post_recvs(struct side *s, uint64_t first, uint32_t offset, uint32_t length, int n)
{
	struct ibv_sge sge[4];
	struct ibv_recv_wr wr[4], *bad;

	assert_true(n > 0 && n <= 4);
	for (int i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)s->buf + offset + (uint32_t)i * length, .length = length,
					   .lkey = s->mr->lkey };
		wr[i] = (struct ibv_recv_wr){ .wr_id = first + (uint64_t)i, .next = i + 1 < n ? &wr[i + 1] : NULL,
					      .sg_list = &sge[i], .num_sge = 1 };
	}
	assert_int_equal(ibv_post_recv(s->qp, wr, &bad), 0);
}

/* RC: one batch of every opcode the API posts, each payload setter, every byte and result checked */
static void
test_wr_rc(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	uintptr_t ab, bb;
	struct ibv_sge two[2];
	char text[] = "inline payload", more[] = " and its second part";
	struct ibv_data_buf bufs[2] = { { text, sizeof(text) - 1 }, { more, sizeof(more) } };
	uint64_t counter = 40, swapped = 7;
	struct ibv_poll_cq_attr attr = { 0 };
	struct done d;

	(void)state;
	open_pair(IBV_QPT_RC);
	ab = (uintptr_t)a->buf;
	bb = (uintptr_t)b->buf;
	two[0] = (struct ibv_sge){ .addr = ab + 1000, .length = 100, .lkey = a->mr->lkey };
	two[1] = (struct ibv_sge){ .addr = ab + 2000, .length = 200, .lkey = a->mr->lkey };
	assert_int_equal(ibv_start_poll(a->cqx, &attr), ENOENT);	/* nothing yet */
	for (int i = 0; i < 4096; i++)
		a->buf[i] = (uint8_t)(i * 13 + 5);
	memcpy(b->buf + 8192, &counter, 8);
	memcpy(b->buf + 8200, &swapped, 8);
	for (int i = 0; i < 512; i++)
		b->buf[12288 + i] = (uint8_t)(i ^ 0xa5);
	post_recvs(b, 101, 4096, 512, 3);

	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 1;
	a->qpx->wr_flags = 0;	/* unsignaled */
	ibv_wr_rdma_write(a->qpx, b->mr->rkey, bb);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, ab, 1000);
	a->qpx->wr_id = 2;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(a->qpx, b->mr->rkey, bb + 6000, htobe32(0x1111));
	ibv_wr_set_sge_list(a->qpx, 2, two);
	a->qpx->wr_id = 3;
	ibv_wr_send(a->qpx);
	ibv_wr_set_inline_data(a->qpx, text, sizeof(text) - 1);
	a->qpx->wr_id = 4;
	ibv_wr_send_imm(a->qpx, htobe32(0x2222));
	ibv_wr_set_inline_data_list(a->qpx, 2, bufs);
	a->qpx->wr_id = 5;
	ibv_wr_rdma_read(a->qpx, b->mr->rkey, bb + 12288);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, ab + 8192, 512);
	a->qpx->wr_id = 6;
	ibv_wr_atomic_fetch_add(a->qpx, b->mr->rkey, bb + 8192, 2);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, ab + 9000, 8);
	a->qpx->wr_id = 7;
	ibv_wr_atomic_cmp_swp(a->qpx, b->mr->rkey, bb + 8200, 7, 99);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, ab + 9008, 8);
	assert_int_equal(ibv_wr_complete(a->qpx), 0);

	/* the sender: 2..7 in order (1 unsignaled), each with its opcode */
	for (uint64_t id = 2; id <= 7; id++) {
		static const enum ibv_wc_opcode op[] = { IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_SEND,
							 IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP };

		d = next_done(a);
		assert_int_equal(d.wr_id, id);
		assert_int_equal(d.opcode, op[id - 2]);
		assert_int_equal(d.qp_num, a->qp->qp_num);
	}
	/* the receiver: the WRITE's immediate, then the two SENDs */
	d = next_done(b);
	assert_int_equal(d.wr_id, 101);
	assert_int_equal(d.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(d.byte_len, 300);
	assert_true(d.flags & IBV_WC_WITH_IMM);
	assert_int_equal(d.imm, 0x1111);
	d = next_done(b);
	assert_int_equal(d.wr_id, 102);
	assert_int_equal(d.opcode, IBV_WC_RECV);
	assert_int_equal(d.byte_len, sizeof(text) - 1);
	assert_false(d.flags & IBV_WC_WITH_IMM);
	d = next_done(b);
	assert_int_equal(d.wr_id, 103);
	assert_int_equal(d.byte_len, sizeof(text) - 1 + sizeof(more));
	assert_int_equal(d.imm, 0x2222);
	assert_int_equal(ibv_start_poll(b->cqx, &attr), ENOENT);

	assert_memory_equal(b->buf, a->buf, 1000);
	assert_memory_equal(b->buf + 6000, a->buf + 1000, 100);
	assert_memory_equal(b->buf + 6100, a->buf + 2000, 200);
	assert_memory_equal(b->buf + 4608, text, sizeof(text) - 1);
	assert_memory_equal(b->buf + 5120, text, sizeof(text) - 1);
	assert_memory_equal(b->buf + 5120 + sizeof(text) - 1, more, sizeof(more));
	assert_memory_equal(a->buf + 8192, b->buf + 12288, 512);
	memcpy(&counter, a->buf + 9000, 8);
	assert_int_equal(counter, 40);	/* the original value */
	memcpy(&counter, b->buf + 8192, 8);
	assert_int_equal(counter, 42);
	memcpy(&swapped, a->buf + 9008, 8);
	assert_int_equal(swapped, 7);
	memcpy(&swapped, b->buf + 8200, 8);
	assert_int_equal(swapped, 99);
	close_pair();
}

/* A batch in error posts none of its work requests and says why; an aborted one neither */
static void
expect_batch_fails(struct side *a, void (*build)(struct side *a), int err)
{
	struct ibv_poll_cq_attr attr = { 0 };

	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 50;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(a->qpx, 0, 0);	/* a good one first: it goes with the batch */
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 8);
	build(a);
	assert_int_equal(ibv_wr_complete(a->qpx), err);
	assert_int_equal(ibv_start_poll(a->cqx, &attr), ENOENT);
}

static void
too_many_sges(struct side *a)
{
	struct ibv_sge sge[3] = { { .addr = (uintptr_t)a->buf, .length = 8, .lkey = a->mr->lkey } };

	sge[1] = sge[2] = sge[0];
	ibv_wr_send(a->qpx);
	ibv_wr_set_sge_list(a->qpx, 3, sge);	/* the QP takes 2 */
}

static void
inline_too_long(struct side *a)
{
	ibv_wr_send(a->qpx);
	ibv_wr_set_inline_data(a->qpx, a->buf, 4096);
}

static void
inline_read(struct side *a)
{
	ibv_wr_rdma_read(a->qpx, 0, 0);
	ibv_wr_set_inline_data(a->qpx, a->buf, 8);
}

static void
atomic_short_sge(struct side *a)
{
	ibv_wr_atomic_fetch_add(a->qpx, 0, 0, 1);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 4);
}

static void
atomic_no_sge(struct side *a)
{
	ibv_wr_atomic_cmp_swp(a->qpx, 0, 0, 1, 2);
}

static void
bind_mw(struct side *a)
{
	ibv_wr_bind_mw(a->qpx, NULL, 0, NULL);
}

static void
local_inv(struct side *a)
{
	ibv_wr_local_inv(a->qpx, 0);
}

static void
ud_addr_on_rc(struct side *a)
{
	ibv_wr_send(a->qpx);
	ibv_wr_set_ud_addr(a->qpx, NULL, 1, 1);
}

static void
queue_overflow(struct side *a)
{
	for (int i = 0; i < 64; i++) {	/* the SQ holds 16 */
		ibv_wr_send(a->qpx);
		ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 8);
	}
}

static void
test_wr_errors(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1, .max_recv_wr = 1,
					  .max_send_sge = 1, .max_recv_sge = 1 },
					  .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS };
	struct ibv_qp *plain;
	struct done d;

	(void)state;
	open_pair(IBV_QPT_RC);
	expect_batch_fails(a, too_many_sges, EINVAL);
	expect_batch_fails(a, inline_too_long, EINVAL);
	expect_batch_fails(a, inline_read, EINVAL);
	expect_batch_fails(a, atomic_short_sge, EINVAL);
	expect_batch_fails(a, atomic_no_sge, EINVAL);
	expect_batch_fails(a, bind_mw, EOPNOTSUPP);
	expect_batch_fails(a, local_inv, EOPNOTSUPP);
	expect_batch_fails(a, ud_addr_on_rc, EINVAL);
	expect_batch_fails(a, queue_overflow, ENOMEM);
	/* abort: nothing posted, and the QP posts again after it */
	ibv_wr_start(a->qpx);
	ibv_wr_rdma_write(a->qpx, b->mr->rkey, (uintptr_t)b->buf);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 8);
	ibv_wr_abort(a->qpx);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 60;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(a->qpx, b->mr->rkey, (uintptr_t)b->buf);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 8);
	assert_int_equal(ibv_wr_complete(a->qpx), 0);
	d = next_done(a);
	assert_int_equal(d.wr_id, 60);

	/* send_ops_flags softrnic does not post, and a QP made without them has no extended view */
	qa.pd = a->pd;
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(a->cqx);
	for (uint64_t op = IBV_QP_EX_WITH_LOCAL_INV; op <= IBV_QP_EX_WITH_ATOMIC_WRITE; op <<= 1) {
		if (op & all_ops)
			continue;
		qa.send_ops_flags = op;
		errno = 0;
		assert_null(ibv_create_qp_ex(a->ctx, &qa));
		assert_int_equal(errno, EOPNOTSUPP);
	}
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	plain = ibv_create_qp_ex(a->ctx, &qa);
	assert_non_null(plain);
	assert_null(ibv_qp_to_qp_ex(plain));
	/* a batch on a QP in RESET: refused whole */
	qa.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	plain = ibv_create_qp_ex(a->ctx, &qa);
	assert_non_null(plain);
	ibv_wr_start(ibv_qp_to_qp_ex(plain));
	ibv_wr_send(ibv_qp_to_qp_ex(plain));
	assert_int_equal(ibv_wr_complete(ibv_qp_to_qp_ex(plain)), EINVAL);
	close_pair();	/* with the two extra QPs on a's context */
}

/* UD: the address comes from ibv_wr_set_ud_addr (after the payload, as the API allows); without it the
 * batch fails */
static void
test_wr_ud(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = b->gid, .hop_limit = 64 } };
	struct ibv_poll_cq_attr attr = { 0 };
	struct ibv_ah *ah;
	struct done d;

	(void)state;
	open_pair(IBV_QPT_UD);
	ah_attr.grh.dgid = b->gid;
	ah = ibv_create_ah(a->pd, &ah_attr);
	assert_non_null(ah);
	for (int i = 0; i < 256; i++)
		a->buf[i] = (uint8_t)(255 - i);
	post_recvs(b, 7, 0, 40 + 256, 1);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 70;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a->qpx);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 256);
	ibv_wr_set_ud_addr(a->qpx, ah, b->qp->qp_num, QKEY);
	assert_int_equal(ibv_wr_complete(a->qpx), 0);
	d = next_done(b);
	assert_int_equal(d.byte_len, 40 + 256);
	assert_true(d.flags & IBV_WC_GRH);
	assert_memory_equal(b->buf + 40, a->buf, 256);
	assert_int_equal(ibv_start_poll(b->cqx, &attr), ENOENT);
	d = next_done(a);
	assert_int_equal(d.wr_id, 70);
	ibv_wr_start(a->qpx);
	ibv_wr_send(a->qpx);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, 16);
	assert_int_equal(ibv_wr_complete(a->qpx), EINVAL);	/* no address */
	close_pair();	/* with the AH left on a's PD */
}

/* ibv_create_cq_ex: the standard fields only; ibv_cq_ex_to_cq gives a CQ the inline ibv_poll_cq polls */
static void
test_cq_ex(void **state)
{
	struct ibv_context *ctx = ibv_open_device(devices[0]);
	struct ibv_cq_init_attr_ex ca = { .cqe = 8, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_poll_cq_attr bad_attr = { .comp_mask = 1 };
	struct ibv_cq_ex *cqx;
	struct ibv_wc wc;

	(void)state;
	assert_non_null(ctx);
	for (uint64_t f = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP; f <= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	     f <<= 1) {
		ca.wc_flags = f;
		errno = 0;
		assert_null(ibv_create_cq_ex(ctx, &ca));
		assert_int_equal(errno, EOPNOTSUPP);
	}
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	assert_null(ibv_create_cq_ex(ctx, &ca));
	ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	cqx = ibv_create_cq_ex(ctx, &ca);
	assert_non_null(cqx);
	assert_true(ibv_cq_ex_to_cq(cqx)->cqe >= 8);
	assert_int_equal(ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 1, &wc), 0);
	assert_int_equal(ibv_start_poll(cqx, &bad_attr), EINVAL);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* ibv_close_device with objects left releases them, as the kernel does (ib_send_bw's client leaves some):
 * QPs (one connected with a SEND in flight, one in error), CQs, one on a completion channel with an event
 * taken and not acknowledged, MRs, an AH and PDs. Before softrnic released them, the close failed (EBUSY). */
static void
test_close_with_objects(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64 } };
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
				       .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_cq *cq, *ev_cq;
	struct pollfd pfd;
	void *ev_ctx;

	(void)state;
	open_pair(IBV_QPT_RC);
	ch = ibv_create_comp_channel(a->ctx);
	assert_non_null(ch);
	cq = ibv_create_cq(a->ctx, 16, NULL, ch, 0);
	assert_non_null(cq);
	ah_attr.grh.dgid = b->gid;
	assert_non_null(ibv_create_ah(a->pd, &ah_attr));
	assert_non_null(ibv_alloc_pd(a->ctx));
	/* an event from a receive flushed on a QP in error, taken, not acknowledged */
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(a->pd, &qa);
	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &err, IBV_QP_STATE), 0);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	{
		struct ibv_recv_wr wr = { .wr_id = 1 }, *bad;

		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
	}
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, WAIT_S * 1000), 1);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, cq);
	/* a SEND in flight on the connected pair: to a QP with no receive posted (RNR NAKs, retried) */
	ibv_wr_start(b->qpx);
	b->qpx->wr_id = 1;
	b->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(b->qpx);
	ibv_wr_set_sge(b->qpx, b->mr->lkey, (uintptr_t)b->buf, 64);
	assert_int_equal(ibv_wr_complete(b->qpx), 0);
	close_pair();
}

/* ibv_modify_qp_rate_limit (an mlx5 extension perftest's --rate_limit_type HW uses): the QP's rate_limit
 * changes in RTS and reads back; a burst size, a typical packet size, a comp_mask, or a QP not in RTS are
 * refused (EINVAL). It was refused as unsupported. */
static void
test_rate_limit(void **state)
{
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = 100000 };
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr got;
	struct side *a = &sides[0];

	(void)state;
	open_pair(IBV_QPT_RC);
	assert_int_equal(ibv_modify_qp_rate_limit(a->qp, &rl), 0);
	assert_int_equal(ibv_query_qp(a->qp, &got, IBV_QP_RATE_LIMIT, &init), 0);
	assert_int_equal(got.rate_limit, 100000);
	assert_int_equal(got.qp_state, IBV_QPS_RTS);
	rl = (struct ibv_qp_rate_limit_attr){ .rate_limit = 100000, .max_burst_sz = 65536 };
	assert_int_equal(ibv_modify_qp_rate_limit(a->qp, &rl), EINVAL);
	rl = (struct ibv_qp_rate_limit_attr){ .rate_limit = 100000, .typical_pkt_sz = 4096 };
	assert_int_equal(ibv_modify_qp_rate_limit(a->qp, &rl), EINVAL);
	rl = (struct ibv_qp_rate_limit_attr){ .rate_limit = 100000, .comp_mask = 1 };
	assert_int_equal(ibv_modify_qp_rate_limit(a->qp, &rl), EINVAL);
	rl = (struct ibv_qp_rate_limit_attr){ .rate_limit = 0 };
	assert_int_equal(ibv_modify_qp_rate_limit(a->qp, &rl), 0);
	assert_int_equal(ibv_query_qp(a->qp, &got, IBV_QP_RATE_LIMIT, &init), 0);
	assert_int_equal(got.rate_limit, 0);
	close_pair();
	/* A QP in INIT: no RTS -> RTS to make. */
	open_side(a, 0, IBV_QPT_RC);
	rl.rate_limit = 100000;
	assert_int_equal(ibv_modify_qp_rate_limit(a->qp, &rl), EINVAL);
	assert_int_equal(ibv_close_device(a->ctx), 0);
	free(a->buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wr_rc),
		cmocka_unit_test(test_wr_errors),
		cmocka_unit_test(test_wr_ud),
		cmocka_unit_test(test_cq_ex),
		cmocka_unit_test(test_close_with_objects),
		cmocka_unit_test(test_rate_limit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
