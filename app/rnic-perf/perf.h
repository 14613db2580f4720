/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf: what the benchmark's parts share (options, the two ends of a test, results).
 */
#ifndef RNIC_PERF_H
#define RNIC_PERF_H

#include <stdint.h>

#include "rnic.h"

#define PERF_MAX_QP 65536
#define PERF_MAX_QP_REMOTE 1024	/* --server/--client: the counts of one control message */
#define PERF_MAX_SIZE (8u << 20)
#define PERF_AREA_BYTES (256ull << 20)	/* per end and direction: slots = depth per QP within this */

enum perf_op { OP_WRITE, OP_READ, OP_SEND, OP_FETCH_ADD, OP_CMP_SWAP, OP_N };
enum perf_mode { MODE_BW, MODE_LAT };

extern const char *const perf_op_names[OP_N];

struct perf_opts {
	enum perf_op op;
	enum perf_mode mode;
	uint32_t size;
	int sweep;			/* -a: sizes 2 .. 2^23 */
	uint64_t iters;
	double duration;		/* -D seconds (0: run iters) */
	uint32_t nb_qp;
	enum rnic_mtu mtu;
	int mtu_given;			/* else the port's active MTU */
	enum rnic_qp_type conn;
	uint32_t tx_depth;
	uint32_t inline_size;
	int report_gbits;
	int verify;
	int json;
	const char *server_port;	/* --server PORT */
	const char *client;		/* --client HOST:PORT */
	char **stages_arg;		/* the engine's --stages value, when rnic-perf chooses it */
};

/* What the peer needs to reach one QP. */
struct perf_qp_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t pad;
	uint64_t rx_addr;		/* where the peer writes/sends to */
	uint64_t tx_addr;		/* where the peer reads from */
	uint8_t gid[16];
};

/* One end of the test: a device context with its QPs and two buffer areas. */
struct perf_end {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;		/* send completions */
	struct rnic_cq *rcq;		/* receive completions */
	struct rnic_mr *mr;
	struct rnic_ah *ah;		/* UD: the peer */
	uint8_t *area;			/* tx area, then rx area, each slots_per_qp x nb_qp x slot bytes */
	uint64_t area_bytes;
	uint64_t slot;			/* bytes per slot (the message size, 8-aligned, at least 64) */
	uint32_t slots_per_qp;
	uint32_t nb_qp;
	struct rnic_qp *qp[PERF_MAX_QP];
	struct perf_qp_info peer[PERF_MAX_QP];
	uint64_t posted[PERF_MAX_QP];	/* messages posted per QP */
	uint64_t done[PERF_MAX_QP];	/* completed per QP */
	uint64_t received[PERF_MAX_QP];	/* receives completed per QP (SEND) */
	uint64_t next_msg[PERF_MAX_QP];	/* the message number a QP's next receive should hold (--verify) */
};

struct perf_result {
	uint32_t size;
	uint64_t iters;
	double seconds;
	double bw_avg_MBps;
	double bw_peak_MBps;
	double msg_rate_Mpps;
	int verified;			/* 1 when --verify checked every message */
	uint64_t lost;			/* UC/UD SEND: messages sent and not received */
	/* latency, microseconds */
	double lat_min, lat_p50, lat_avg, lat_p99, lat_p999, lat_max, lat_stdev;
	struct rnic_stage_latency stages[8];
	int nb_stages;
};

static inline uint8_t *
perf_tx_slot(const struct perf_end *e, uint32_t qp, uint64_t msg)
{
	return e->area + ((uint64_t)qp * e->slots_per_qp + msg % e->slots_per_qp) * e->slot;
}

static inline uint8_t *
perf_rx_slot(const struct perf_end *e, uint32_t qp, uint64_t msg)
{
	return perf_tx_slot(e, qp, msg) + e->area_bytes / 2;
}

/* The data of message msg of QP qp: what --verify expects byte for byte. */
void perf_fill(uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg);
int perf_check(const uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg);

/* report.c */
void perf_print_header(const struct perf_opts *o);
void perf_print_result(const struct perf_opts *o, const struct perf_result *r);

#endif /* RNIC_PERF_H */
