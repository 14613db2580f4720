/* SPDX-License-Identifier: BSD-3-Clause
 * libsoftrnic-verbs from a program's side: this test is built against libibverbs (<infiniband/verbs.h>,
 * -libverbs) exactly as a stock program is, and runs with the interposer preloaded (meson: LD_PRELOAD) on
 * the embedded default (two devices joined by a net_ring pair). It checks the devices and their attributes
 * as verbs.h's inline functions read them, that every verb softrnic does not do fails with EOPNOTSUPP
 * rather than crash (the context's function pointers and the exported verbs), and RC and UD traffic
 * between the two devices through verbs.h's inline ibv_post_send / ibv_post_recv / ibv_poll_cq, and into a
 * shared receive queue through ibv_post_srq_recv, with its limit event.
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
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#define BUF_SIZE 8192
#define WAIT_S 10

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_srq *srq;		/* the QP's, when make_end is asked for one */
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static struct ibv_device **devices;
static int nb_devices;
static struct end ends[2];

static int
setup(void **state)
{
	(void)state;
	devices = ibv_get_device_list(&nb_devices);
	if (devices == NULL || nb_devices < 2)
		return -1;
	for (int i = 0; i < 2; i++) {
		ends[i].ctx = ibv_open_device(devices[i]);
		if (ends[i].ctx == NULL)
			return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++)
		if (ends[i].ctx != NULL && ibv_close_device(ends[i].ctx) != 0)
			return -1;
	ibv_free_device_list(devices);
	return 0;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The device list and what ibv_devinfo reads: ibv_query_device_ex and ibv_query_port are verbs.h inline
 * functions that go through the verbs_context, ibv_query_gid and ibv_query_gid_ex exported ones. */
static void
test_devices(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		struct ibv_device_attr_ex attr;
		struct ibv_port_attr port;
		struct ibv_gid_entry entry;
		union ibv_gid gid;
		double deadline = now_s() + WAIT_S;

		assert_non_null(strstr(ibv_get_device_name(devices[i]), "rnic"));
		assert_int_equal(devices[i]->transport_type, IBV_TRANSPORT_IB);
		assert_int_equal(ibv_query_device_ex(ends[i].ctx, NULL, &attr), 0);
		assert_int_equal(attr.orig_attr.phys_port_cnt, 1);
		assert_true(attr.orig_attr.max_qp > 0 && attr.orig_attr.max_qp_wr > 0 && attr.orig_attr.max_cqe > 0);
		assert_true(attr.orig_attr.max_mr_size > 0 && attr.orig_attr.max_sge > 0);
		assert_true(attr.orig_attr.node_guid == ibv_get_device_guid(devices[i]));
		do
			assert_int_equal(ibv_query_port(ends[i].ctx, 1, &port), 0);
		while (port.state != IBV_PORT_ACTIVE && now_s() < deadline);
		assert_int_equal(port.state, IBV_PORT_ACTIVE);
		assert_int_equal(port.link_layer, IBV_LINK_LAYER_ETHERNET);
		assert_true(port.active_mtu >= IBV_MTU_1024 && port.active_mtu <= port.max_mtu);
		assert_true(port.gid_tbl_len > 0 && port.max_msg_sz > 0);
		assert_int_not_equal(ibv_query_port(ends[i].ctx, 2, &port), 0);
		/* GID 0: the port's IPv4 address, IPv4-mapped (::ffff:a.b.c.d), a RoCE v2 GID */
		assert_int_equal(ibv_query_gid(ends[i].ctx, 1, 0, &gid), 0);
		assert_int_equal(gid.raw[10], 0xff);
		assert_int_equal(gid.raw[11], 0xff);
		for (int b = 0; b < 10; b++)
			assert_int_equal(gid.raw[b], 0);
		assert_int_equal(ibv_query_gid_ex(ends[i].ctx, 1, 0, &entry, 0), 0);
		assert_memory_equal(entry.gid.raw, gid.raw, 16);
		assert_int_equal(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
		assert_int_equal(ibv_query_gid_ex(ends[i].ctx, 1, 0, &entry, 1), EINVAL);
		ends[i].gid = gid;
	}
	assert_memory_not_equal(ends[0].gid.raw, ends[1].gid.raw, 16);
}

#define ASSERT_NULL_EOPNOTSUPP(call)                                                                       \
	do {                                                                                               \
		errno = 0;                                                                                 \
		assert_null(call);                                                                         \
		assert_int_equal(errno, EOPNOTSUPP);                                                       \
	} while (0)

/* Every verb softrnic does not do fails with EOPNOTSUPP: the inline ones through the context's function
 * pointers (none left NULL), the exported ones through the interposer's own (none left to libibverbs,
 * whose code would read provider state a softrnic context does not have). */
static void
test_unsupported(void **state)
{
	struct ibv_context *ctx = ends[0].ctx;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq_init_attr_ex cq_attr = { .cqe = 16 };
	/* send_ops_flags: the ibv_wr_* post API (a plain PD-only create is ibv_create_qp's, which works) */
	struct ibv_qp_init_attr_ex qp_attr = { .qp_type = IBV_QPT_RC,
					       .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					       .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE,
					       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
							.max_recv_sge = 1 } };
	/* an XRC SRQ (a basic one works: test_srq) */
	struct ibv_srq_init_attr_ex srq_attr = { .attr = { .max_wr = 16, .max_sge = 1 }, .srq_type = IBV_SRQT_XRC,
						 .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
							      IBV_SRQ_INIT_ATTR_CQ };
	struct ibv_xrcd_init_attr xrcd_attr = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
						.fd = -1 };
	struct ibv_td_init_attr td_attr = { 0 };
	struct ibv_alloc_dm_attr dm_attr = { .length = 64 };
	struct ibv_wq_init_attr wq_attr = { .wq_type = IBV_WQT_RQ, .max_wr = 16, .max_sge = 1, .pd = NULL,
					    .cq = NULL };
	struct ibv_values_ex values = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_counters_init_attr counters_attr = { 0 };
	struct ibv_modify_cq_attr modify_cq = { .attr_mask = IBV_CQ_ATTR_MODERATE };
	uint8_t buf[64];

	(void)state;
	assert_non_null(pd);
	assert_non_null(cq);
	qp_attr.pd = pd;
	qp_attr.send_cq = qp_attr.recv_cq = cq;
	wq_attr.pd = pd;
	wq_attr.cq = cq;
	ASSERT_NULL_EOPNOTSUPP(ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	ASSERT_NULL_EOPNOTSUPP(ibv_create_cq_ex(ctx, &cq_attr));
	ASSERT_NULL_EOPNOTSUPP(ibv_create_qp_ex(ctx, &qp_attr));
	srq_attr.pd = pd;
	srq_attr.cq = cq;
	ASSERT_NULL_EOPNOTSUPP(ibv_create_srq_ex(ctx, &srq_attr));
	ASSERT_NULL_EOPNOTSUPP(ibv_open_xrcd(ctx, &xrcd_attr));
	ASSERT_NULL_EOPNOTSUPP(ibv_alloc_td(ctx, &td_attr));
	ASSERT_NULL_EOPNOTSUPP(ibv_alloc_dm(ctx, &dm_attr));
	ASSERT_NULL_EOPNOTSUPP(ibv_create_wq(ctx, &wq_attr));
	ASSERT_NULL_EOPNOTSUPP(ibv_create_counters(ctx, &counters_attr));
	ASSERT_NULL_EOPNOTSUPP(ibv_alloc_null_mr(pd));
	ASSERT_NULL_EOPNOTSUPP(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE));
	ASSERT_NULL_EOPNOTSUPP(ibv_import_pd(ctx, 1));
	/* An IOVA other than the address (softrnic's MRs are addressed by virtual address) */
	ASSERT_NULL_EOPNOTSUPP(ibv_reg_mr_iova(pd, buf, sizeof(buf), 0x1000, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(ibv_query_rt_values_ex(ctx, &values), EOPNOTSUPP);
	assert_int_equal(ibv_resize_cq(cq, 32), EOPNOTSUPP);
	assert_int_equal(ibv_modify_cq(cq, &modify_cq), EOPNOTSUPP);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* A QP of the type (on a new SRQ of its PD when with_srq), its PD, CQ and registered buffer, in INIT. */
static void
make_end(struct end *e, enum ibv_qp_type type, int with_srq)
{
	struct ibv_qp_init_attr ia = { .qp_type = type, .cap = { .max_send_wr = 16, .max_recv_wr = 16,
				       .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	e->pd = ibv_alloc_pd(e->ctx);
	assert_non_null(e->pd);
	e->cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	assert_non_null(e->cq);
	ia.send_cq = ia.recv_cq = e->cq;
	if (with_srq) {
		/* Through verbs.h's ibv_create_srq_ex, which takes a basic SRQ of a PD to ibv_create_srq. */
		struct ibv_srq_init_attr_ex sa = { .attr = { .max_wr = 8, .max_sge = 1 }, .pd = e->pd,
						   .comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
						   .srq_type = IBV_SRQT_BASIC };

		e->srq = ibv_create_srq_ex(e->ctx, &sa);
		assert_non_null(e->srq);
		assert_true(sa.attr.max_wr >= 8);
		ia.srq = e->srq;
	}
	e->qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(e->qp);
	assert_true(ia.cap.max_send_wr >= 16);
	e->buf = aligned_alloc(4096, BUF_SIZE);
	assert_non_null(e->buf);
	memset(e->buf, 0, BUF_SIZE);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(e->mr);
	if (type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	assert_int_equal(ibv_modify_qp(e->qp, &a, mask), 0);
	assert_int_equal(e->qp->state, IBV_QPS_INIT);
}

static void
connect_end(struct end *e, const struct end *peer, enum ibv_qp_type type)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = peer->qp->qp_num,
				 .rq_psn = 7, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
				 .ah_attr = { .is_global = 1, .port_num = 1,
					      .grh = { .dgid = peer->gid, .hop_limit = 64, .sgid_index = 0 } } };
	int rtr = IBV_QP_STATE, rts = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (type == IBV_QPT_RC)
		rtr |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		       IBV_QP_MIN_RNR_TIMER;
	assert_int_equal(ibv_modify_qp(e->qp, &a, rtr), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (type == IBV_QPT_RC)
		rts |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	assert_int_equal(ibv_modify_qp(e->qp, &a, rts), 0);
	assert_int_equal(e->qp->state, IBV_QPS_RTS);
}

/* A QP of the type on each device, connected to each other; the second one's on an SRQ when b_srq. */
static void
make_pair(enum ibv_qp_type type, int b_srq)
{
	make_end(&ends[0], type, 0);
	make_end(&ends[1], type, b_srq);
	connect_end(&ends[0], &ends[1], type);
	connect_end(&ends[1], &ends[0], type);
}

static void
free_end(struct end *e)
{
	assert_int_equal(ibv_destroy_qp(e->qp), 0);
	if (e->srq != NULL)
		assert_int_equal(ibv_destroy_srq(e->srq), 0);
	e->srq = NULL;
	assert_int_equal(ibv_dereg_mr(e->mr), 0);
	assert_int_equal(ibv_destroy_cq(e->cq), 0);
	assert_int_equal(ibv_dealloc_pd(e->pd), 0);
	free(e->buf);
}

/* One completion from cq through verbs.h's inline ibv_poll_cq, in WAIT_S. */
static struct ibv_wc
poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	double deadline = now_s() + WAIT_S;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_s() < deadline)
		;
	assert_int_equal(n, 1);
	return wc;
}

static void
post_recv(struct end *e, uint32_t offset, uint32_t length, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + offset, .length = length, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(e->qp, &wr, &bad), 0);
}

/* RC: an RDMA WRITE and a SEND with immediate in one ibv_post_send list, every byte checked. */
static void
test_rc(void **state)
{
	struct end *a = &ends[0], *b = &ends[1];
	struct ibv_sge sge[2];
	struct ibv_send_wr wr[2], *bad;
	struct ibv_wc wc;

	(void)state;
	make_pair(IBV_QPT_RC, 0);
	for (int i = 0; i < BUF_SIZE; i++)
		a->buf[i] = (uint8_t)(i * 7 + 1);
	post_recv(b, 4096, 4096, 77);
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)a->buf, .length = 4096, .lkey = a->mr->lkey };
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)a->buf + 4096, .length = 1000, .lkey = a->mr->lkey };
	wr[0] = (struct ibv_send_wr){ .wr_id = 1, .next = &wr[1], .sg_list = &sge[0], .num_sge = 1,
				      .opcode = IBV_WR_RDMA_WRITE,
				      .wr.rdma = { .remote_addr = (uintptr_t)b->buf, .rkey = b->mr->rkey } };
	wr[1] = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &sge[1], .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
				      .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0xabcd) };
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	wc = poll_one(b->cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.byte_len, 1000);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xabcd);
	assert_int_equal(wc.qp_num, b->qp->qp_num);
	wc = poll_one(a->cq);	/* the WRITE was unsignalled: the SEND's completion only */
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_memory_equal(b->buf, a->buf, 4096);
	assert_memory_equal(b->buf + 4096, a->buf + 4096, 1000);
	free_end(a);
	free_end(b);
}

/* UD: a send naming an ibv_ah (which the interposer replaces by its rnic_ah), the GRH in front of the data. */
static void
test_ud(void **state)
{
	struct end *a = &ends[0], *b = &ends[1];
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1,
				       .grh = { .dgid = b->gid, .hop_limit = 64, .sgid_index = 0 } };
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	(void)state;
	make_pair(IBV_QPT_UD, 0);
	ah = ibv_create_ah(a->pd, &ah_attr);
	assert_non_null(ah);
	for (int i = 0; i < 512; i++)
		a->buf[i] = (uint8_t)(i ^ 0x5a);
	post_recv(b, 0, 40 + 512, 5);
	sge = (struct ibv_sge){ .addr = (uintptr_t)a->buf, .length = 512, .lkey = a->mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED,
				   .wr.ud = { .ah = ah, .remote_qpn = b->qp->qp_num, .remote_qkey = 0x11111111 } };
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	wc = poll_one(b->cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 40 + 512);
	assert_int_equal(wc.src_qp, a->qp->qp_num);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	assert_memory_equal(b->buf + 40, a->buf, 512);
	wc = poll_one(a->cq);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9);
	/* A UD send without an AH is refused with the work request named, not followed to a NULL AH */
	wr.wr.ud.ah = NULL;
	bad = NULL;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	free_end(a);
	free_end(b);
}

/*
 * An SRQ through the interposer: receives posted with verbs.h's inline ibv_post_srq_recv land the peer's
 * SENDs, each wr_id and byte right; the QP's own ibv_post_recv is refused; the armed limit comes as
 * IBV_EVENT_SRQ_LIMIT_REACHED naming the ibv_srq; destroying the SRQ under its QP is refused.
 */
static void
test_srq(void **state)
{
	struct end *a = &ends[0], *b = &ends[1];
	struct ibv_srq_attr attr = { .srq_limit = 2 };
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *rbad;
	struct ibv_async_event ev;
	struct pollfd pfd;
	struct ibv_wc wc;

	(void)state;
	make_pair(IBV_QPT_RC, 1);
	assert_ptr_equal(b->qp->srq, b->srq);
	assert_int_equal(ibv_post_recv(b->qp, &rwr, &rbad), EINVAL);
	for (uint32_t i = 0; i < 4; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)b->buf + 1024 * i, .length = 1024, .lkey = b->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 };

		assert_int_equal(ibv_post_srq_recv(b->srq, &wr, &rbad), 0);
	}
	assert_int_equal(ibv_modify_srq(b->srq, &attr, IBV_SRQ_LIMIT), 0);
	for (uint32_t i = 0; i < 3; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)a->buf + 1024 * i, .length = 100 + i, .lkey = a->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		memset(a->buf + 1024 * i, 'a' + (int)i, 100 + i);
		assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
		wc = poll_one(a->cq);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		wc = poll_one(b->cq);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.byte_len, 100 + i);
		assert_int_equal(wc.qp_num, b->qp->qp_num);
		assert_memory_equal(b->buf + 1024 * i, a->buf + 1024 * i, 100 + i);
	}
	/* One WQE left, fewer than the limit of 2. */
	pfd = (struct pollfd){ .fd = b->ctx->async_fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, WAIT_S * 1000), 1);
	assert_int_equal(ibv_get_async_event(b->ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, b->srq);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_query_srq(b->srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 0);
	assert_true(attr.max_wr >= 8);
	assert_int_equal(ibv_destroy_srq(b->srq), EBUSY);
	free_end(a);
	free_end(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_unsupported),
		cmocka_unit_test(test_rc),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_srq),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
