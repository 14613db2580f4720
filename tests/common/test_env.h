/* SPDX-License-Identifier: BSD-3-Clause
 * The common start and end of engine tests: the engine up with the test's arguments, the first device
 * opened.
 */
#ifndef TEST_ENV_H
#define TEST_ENV_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>

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

/* The engine up with the test's arguments and a context on each of its first two devices (the loopback
 * pair); 0 or -1. */
static inline int
test_env_open_pair(int argc, char **argv, struct rnic_context **a, struct rnic_context **b)
{
	struct rnic_device **list;

	if (rnic_engine_init(argc, argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	*a = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	*b = *a != NULL && list[1] != NULL ? rnic_open_device(list[1]) : NULL;
	rnic_free_device_list(list);
	return *b != NULL ? 0 : -1;
}

static inline int
test_env_close(struct rnic_context *ctx)
{
	rnic_close_device(ctx);
	return rnic_engine_fini();
}

/* One side of the engine tests' traffic: a context on a device, its PD, a CQ, a registered buffer, the GID. */
struct test_side {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	uint8_t *buf;
	struct rnic_mr *mr;
	union rnic_gid gid;
};

/* Open a side of `bytes` of buffer registered with `access`, its CQ of 4096 entries. 0 or -1. */
static inline int
test_side_open(struct test_side *s, struct rnic_device *dev, size_t bytes, int access)
{
	s->ctx = rnic_open_device(dev);
	if (s->ctx == NULL)
		return -1;
	s->pd = rnic_alloc_pd(s->ctx);
	s->cq = rnic_create_cq(s->ctx, 4096, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, bytes);
	s->mr = s->pd != NULL && s->buf != NULL ? rnic_reg_mr(s->pd, s->buf, bytes, access) : NULL;
	return s->cq != NULL && s->mr != NULL && rnic_query_gid(s->ctx, 1, 0, &s->gid) == 0 ? 0 : -1;
}

static inline void
test_side_close(struct test_side *s)
{
	rnic_dereg_mr(s->mr);
	free(s->buf);
	rnic_destroy_cq(s->cq);
	rnic_dealloc_pd(s->pd);
	rnic_close_device(s->ctx);
}

/* The engine up with the test's arguments, a side on each of its first two devices (the loopback pair), each
 * of `bytes` registered with `access`, and the engine started. 0 or -1. */
static inline int
test_sides_start(int argc, char **argv, struct test_side *a, struct test_side *b, size_t bytes, int access)
{
	struct rnic_device **list;
	int ret;

	if (rnic_engine_init(argc, argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	ret = list != NULL && list[0] != NULL && list[1] != NULL && test_side_open(a, list[0], bytes, access) == 0 &&
	      test_side_open(b, list[1], bytes, access) == 0 ? 0 : -1;
	rnic_free_device_list(list);
	return ret == 0 ? rnic_engine_start() : -1;
}

/* The engine stopped, both sides closed, the engine down: rnic_engine_fini's result. */
static inline int
test_sides_stop(struct test_side *a, struct test_side *b)
{
	rnic_engine_stop();
	test_side_close(a);
	test_side_close(b);
	return rnic_engine_fini();
}

/* How a test connects a QP: path MTU, the first PSN both ways, loss timer exponent, timeout and RNR
 * retries, READs and atomics outstanding each way (0: 16), the address vector's traffic class. */
struct test_path {
	enum rnic_mtu mtu;
	uint32_t psn;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t rd_atomic;
	uint8_t traffic_class;
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
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *peer_gid, .traffic_class = path->traffic_class } },
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

/* Seconds on the monotonic clock, for a test's deadlines. */
static inline double
test_now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The time the engine's worker lcore (every stage on it: -l 0,1) of process pid (0: this one) has run on a CPU,
 * in ns (its /proc/PID/task/TID/schedstat), or 0 when it cannot be read: rates per second of it hold on a
 * loaded machine, which takes the lcore away. */
static inline uint64_t
test_engine_cpu_ns(pid_t pid)
{
	char proc[32], path[320];
	unsigned long long ns = 0;
	struct dirent *e;
	DIR *d;

	if (pid == 0)
		snprintf(proc, sizeof(proc), "/proc/self/task");
	else
		snprintf(proc, sizeof(proc), "/proc/%d/task", (int)pid);
	d = opendir(proc);
	while (d != NULL && (e = readdir(d)) != NULL) {
		char comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s/comm", proc, e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = 0;
		fclose(f);
		if (strcmp(comm, "rte-worker-1\n") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/schedstat", proc, e->d_name);
		f = fopen(path, "r");
		if (f == NULL || fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		if (f != NULL)
			fclose(f);
		break;
	}
	if (d != NULL)
		closedir(d);
	return ns;
}

#endif /* TEST_ENV_H */
