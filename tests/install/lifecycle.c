/* SPDX-License-Identifier: BSD-3-Clause
 * A program as a user writes it: only the installed <rnic.h>, built with `pkg-config softrnic`.
 * It creates every object, takes an RC QP to RTS, and destroys everything again; run under ASan it must
 * leave no leak. Exit code 0 on success, 1 with a message on the first failing verb.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rnic.h>

#define CHECK(cond, what) do { \
	if (!(cond)) { fprintf(stderr, "lifecycle: %s failed (errno %d: %s)\n", what, errno, strerror(errno)); \
		return 1; } } while (0)
#define CHECK_RC(rc, what) do { int r_ = (rc); \
	if (r_ != 0) { fprintf(stderr, "lifecycle: %s returned %d (%s)\n", what, r_, strerror(r_)); \
		return 1; } } while (0)

static int
to_rts(struct rnic_qp *qp, struct rnic_context *ctx)
{
	struct rnic_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = RNIC_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ;
	CHECK_RC(rnic_modify_qp(qp, &attr, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
				RNIC_QP_ACCESS_FLAGS), "modify_qp(INIT)");

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = RNIC_QPS_RTR;
	attr.path_mtu = RNIC_MTU_1024;
	attr.dest_qp_num = qp->qp_num;
	attr.rq_psn = 0x1234;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.port_num = 1;
	CHECK_RC(rnic_query_gid(ctx, 1, 0, &attr.ah_attr.grh.dgid), "query_gid");
	CHECK_RC(rnic_modify_qp(qp, &attr, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
				RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
				RNIC_QP_MIN_RNR_TIMER), "modify_qp(RTR)");

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = RNIC_QPS_RTS;
	attr.sq_psn = 0x1234;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	CHECK_RC(rnic_modify_qp(qp, &attr, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT |
				RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC),
		 "modify_qp(RTS)");
	CHECK(qp->state == RNIC_QPS_RTS, "QP state RTS");
	return 0;
}

int
main(int argc, char **argv)
{
	struct rnic_device **list;
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_mr *mr;
	struct rnic_comp_channel *channel;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
	struct rnic_qp_init_attr init;
	int n;
	size_t len = 1 << 20;
	void *buf;

	CHECK(rnic_engine_init(argc, argv) >= 0, "rnic_engine_init");
	list = rnic_get_device_list(&n);
	CHECK(list != NULL && n >= 1, "get_device_list");
	ctx = rnic_open_device(list[0]);
	CHECK(ctx != NULL, "open_device");
	pd = rnic_alloc_pd(ctx);
	CHECK(pd != NULL, "alloc_pd");
	buf = calloc(1, len);
	CHECK(buf != NULL, "calloc");
	mr = rnic_reg_mr(pd, buf, len, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			 RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);
	CHECK(mr != NULL, "reg_mr");
	channel = rnic_create_comp_channel(ctx);
	CHECK(channel != NULL, "create_comp_channel");
	cq = rnic_create_cq(ctx, 256, NULL, channel, 0);
	CHECK(cq != NULL, "create_cq");
	CHECK_RC(rnic_req_notify_cq(cq, 0), "req_notify_cq");

	memset(&init, 0, sizeof(init));
	init.send_cq = cq;
	init.recv_cq = cq;
	init.qp_type = RNIC_QPT_RC;
	init.cap.max_send_wr = 64;
	init.cap.max_recv_wr = 64;
	init.cap.max_send_sge = 4;
	init.cap.max_recv_sge = 4;
	init.cap.max_inline_data = 64;
	qp = rnic_create_qp(pd, &init);
	CHECK(qp != NULL, "create_qp");
	if (to_rts(qp, ctx) != 0)
		return 1;

	CHECK_RC(rnic_destroy_qp(qp), "destroy_qp");
	CHECK_RC(rnic_destroy_cq(cq), "destroy_cq");
	CHECK_RC(rnic_destroy_comp_channel(channel), "destroy_comp_channel");
	CHECK_RC(rnic_dereg_mr(mr), "dereg_mr");
	free(buf);
	CHECK_RC(rnic_dealloc_pd(pd), "dealloc_pd");
	CHECK_RC(rnic_close_device(ctx), "close_device");
	rnic_free_device_list(list);
	CHECK(rnic_engine_fini() == 0, "rnic_engine_fini");
	printf("lifecycle: ok\n");
	return 0;
}
