/* SPDX-License-Identifier: BSD-3-Clause
 * The common start and end of engine tests: the engine up with the test's arguments, the first device
 * opened.
 */
#ifndef TEST_ENV_H
#define TEST_ENV_H

#include <stdint.h>
#include <string.h>

#include "rnic.h"

static inline struct rnic_context *
test_env_open(int argc, char **argv)
{
	struct rnic_device **list;
	struct rnic_context *ctx;

	if (rnic_engine_init(argc, argv) < 0)
		return NULL;
	list = rnic_get_device_list(NULL);
	ctx = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	rnic_free_device_list(list);
	return ctx;
}

static inline int
test_env_close(struct rnic_context *ctx)
{
	rnic_close_device(ctx);
	return rnic_engine_fini();
}

/* How a test connects a QP: path MTU, the first PSN both ways, loss timer exponent, timeout and RNR
 * retries, READs and atomics outstanding each way (0: 16). */
struct test_path {
	enum rnic_mtu mtu;
	uint32_t psn;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t rd_atomic;
};

/*
 * Take a fresh QP through INIT and RTR to RTS towards the peer QPN at peer_gid, with the attributes each
 * step needs for the QP's type (Q_Key 0x11111111 for UD). Returns 0 or the first failing step's error.
 */
static inline int
test_connect(struct rnic_qp *qp, uint32_t peer_qpn, const union rnic_gid *peer_gid, const struct test_path *path)
{
	int rc = qp->qp_type == RNIC_QPT_RC, ud = qp->qp_type == RNIC_QPT_UD, ret;
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
		.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
	};

	ret = rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
			     (ud ? RNIC_QP_QKEY : RNIC_QP_ACCESS_FLAGS));
	if (ret != 0)
		return ret;
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_RTR, .path_mtu = path->mtu, .dest_qp_num = peer_qpn, .rq_psn = path->psn,
		.max_dest_rd_atomic = path->rd_atomic != 0 ? path->rd_atomic : 16, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = *peer_gid } },
	};
	ret = rnic_modify_qp(qp, &a, RNIC_QP_STATE |
			     (ud ? 0 : RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN) |
			     (rc ? RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER : 0));
	if (ret != 0)
		return ret;
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_RTS, .sq_psn = path->psn, .timeout = path->timeout, .retry_cnt = path->retry_cnt,
		.rnr_retry = path->rnr_retry, .max_rd_atomic = path->rd_atomic != 0 ? path->rd_atomic : 16,
	};
	return rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN |
			      (rc ? RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC : 0));
}

/* A device counter by name (rnic_query_device_counters); UINT64_MAX when the device has no such counter. */
static inline uint64_t
test_counter(struct rnic_context *ctx, const char *name)
{
	struct rnic_counter c[128];
	int n = rnic_query_device_counters(ctx, c, 128);

	for (int i = 0; i < n && i < 128; i++)
		if (strcmp(c[i].name, name) == 0)
			return c[i].value;
	return UINT64_MAX;
}

#endif /* TEST_ENV_H */
