/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf: what the benchmark's parts share. options.c parses the command line (perftest's flags),
 * main.c brings the engine up and runs the sizes, end.c holds one end's verbs objects, post.h posts sends
 * (inline: the bandwidth loop's hot path), bw.c and lat.c are the tests, remote.c the exchange between a
 * server and a client, report.c and stages.c the output.
 */
#ifndef RNIC_PERF_H
#define RNIC_PERF_H

#include <signal.h>
#include <stdint.h>

#include "oob.h"
#include "rnic.h"

#define PERF_MAX_QP 65536
#define PERF_MAX_QP_REMOTE 1024	/* between two processes: the counts of one control message */
#define PERF_MAX_SIZE (8u << 20)
#define PERF_AREA_BYTES (256ull << 20)	/* per end, both directions: slots = depth per QP within this (and */
					/* as much again for --qp-ab's few QPs) */
#define PERF_MAX_POST_LIST 64
#define PERF_MAX_TURNS 4096		/* --cc-ab, --op-ab, --qp-ab: turns in one run */
#define PERF_WAIT_S 10			/* bound of every wait for the peer or a completion */
#define PERF_STOP_WAIT_S 1		/* ... once a signal asked the run to end */
#define PERF_EXIT_S 15			/* a signalled rnic-perf exits within this, whatever the engine does */
#define PERF_DEFAULT_PORT "18515"	/* perftest's */
#define PERF_MAX_STAGES 8
#define PERF_QKEY 0x11111111u		/* UD: every QP's */

enum perf_op { OP_WRITE, OP_READ, OP_SEND, OP_FETCH_ADD, OP_CMP_SWAP, OP_N };
enum perf_mode { MODE_BW, MODE_LAT };
enum perf_role { ROLE_LOOPBACK, ROLE_SERVER, ROLE_CLIENT };
/* perftest's --output: the whole report, or one figure per result */
enum perf_output { OUT_FULL, OUT_BANDWIDTH, OUT_MESSAGE_RATE, OUT_LATENCY };

extern const char *const perf_op_names[OP_N];

static inline int
perf_op_atomic(enum perf_op op)
{
	return op == OP_FETCH_ADD || op == OP_CMP_SWAP;
}

/* The test itself: what a client sends its server (plain values only: the same program reads them). */
struct perf_test {
	enum perf_op op;
	enum perf_mode mode;
	enum rnic_qp_type conn;
	enum rnic_mtu mtu;
	uint32_t size;
	uint32_t nb_qp;
	uint32_t tx_depth;
	uint32_t inline_size;
	uint32_t cq_mod;		/* -Q: one signaled send in cq_mod */
	uint32_t post_list;		/* -l: sends per rnic_post_send */
	uint32_t outs;			/* -o: READs/atomics outstanding per QP (0: the device's maximum) */
	uint32_t latency_gap_us;
	uint64_t iters;			/* per QP and size, as perftest's -n */
	double duration;		/* -D seconds (0: run iters) */
	uint8_t qp_timeout;		/* -u */
	uint8_t sweep;			/* -a: sizes 2 .. 2^23 */
	uint8_t duplex;			/* -b: both ends send */
	uint8_t run_infinitely;		/* a result every -D seconds until SIGINT/SIGTERM */
	uint8_t verify;
	uint8_t events;			/* -e: sleep on completion events */
	uint8_t tclass;			/* --tclass: the address vectors' traffic class (DSCP, ECN) */
	uint32_t rate_limit_kbps;	/* --rate_limit: every QP's rate_limit (0: none) */
	uint32_t cc_ab_ms;		/* --cc-ab: DCQCN on and off in turns of this many ms (0: no) */
	uint32_t op_ab_ms;		/* --op-ab: op_ab and op in turns of this many ms (0: no) */
	enum perf_op op_ab;
	/* --qp-ab: every QP (tx_depth in flight each) and the first qp_ab_n only (qp_ab_depth each) in turns of
	 * qp_ab_ms ms (0: no) */
	uint32_t qp_ab_ms, qp_ab_n, qp_ab_depth;
};

/* The turns' length, ms: --cc-ab's, --op-ab's or --qp-ab's (the options refuse two), 0 without turns. */
static inline uint32_t
perf_turn_ms(const struct perf_test *t)
{
	return t->cc_ab_ms + t->op_ab_ms + t->qp_ab_ms;
}

/* Whether the run posts op: -o's, or --op-ab's in its turns. */
static inline int
perf_test_uses(const struct perf_test *t, enum perf_op op)
{
	return t->op == op || (t->op_ab_ms != 0 && t->op_ab == op);
}

struct perf_opts {
	struct perf_test t;
	int size_given, iters_given, mtu_given, cq_mod_given, duration_given;
	/* where */
	enum perf_role role;
	int role_given;			/* --server or --loopback */
	const char *host;		/* client: the server's name */
	const char *port;		/* TCP port of the exchange (-p) */
	const char *dev_name;		/* -d (NULL: the first device) */
	uint32_t gid_index;		/* -x */
	/* what is printed */
	enum perf_output output;
	int report_gbits, report_both, no_peak, json, report_cycles, report_hist, report_unsorted;
	const char *out_json_file;	/* --out_json (+ --out_json_file) */
	const char *hist_out;		/* --hist-out: the stages' raw histograms */
	double limit_bw, limit_msgrate;	/* -w, -y: a result below fails the run */
	double rate_limit;		/* --rate_limit, in --rate_units (0: none) */
	char rate_units;		/* --rate_units: 'g' Gbit/s (default), 'M' MB/s (2^20 bytes) */
	uint32_t wait_destroy_s;
};

/* What the peer needs to reach one QP. */
struct perf_qp_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t pad;
	uint64_t rx_addr;		/* where the peer writes/sends to; atomics' results land here */
	uint64_t tx_addr;		/* where the peer reads from; the atomic counter of the QP is at its start */
	uint8_t gid[16];
};

/* One end of the test: a device context with its QPs and two buffer areas. */
struct perf_end {
	struct rnic_context *ctx;
	const char *name;		/* the device's */
	struct rnic_pd *pd;
	struct rnic_comp_channel *channel;	/* -e */
	struct rnic_cq *cq;		/* send completions */
	struct rnic_cq *rcq;		/* receive completions */
	struct rnic_mr *mr;
	struct rnic_ah *ah;		/* UD: the peer */
	struct perf_end *peer_end;	/* the peer when it is in this process (loopback), else NULL */
	uint8_t *area;			/* tx area, then rx area, each every QP's slots (perf_qp_slots) x slot bytes */
	uint64_t area_bytes;
	uint64_t slot;			/* bytes per slot (the message size, 8-aligned, at least 64) */
	uint32_t slots_per_qp;
	/* --qp-ab: the first few_qps QPs have few_slots slots each (their own turns' depth), the others
	 * slots_per_qp */
	uint32_t few_qps, few_slots;
	uint32_t nb_qp;
	uint32_t cq_mod;		/* the test's, at most slots_per_qp */
	uint32_t post_list;		/* the test's, at most slots_per_qp */
	uint8_t gid_index;
	uint8_t outs;			/* READs and atomics outstanding per QP */
	uint32_t connects;		/* how many times its QPs were connected (one a message size) */
	/* a bandwidth run */
	int sends, receives;		/* this end's part in it */
	int closing;			/* the run is over: only a closing signaled send per QP still */
	uint64_t outstanding;		/* sends posted and not completed, every QP */
	uint64_t completed;		/* sends completed, every QP */
	uint64_t received_total;	/* receives completed, every QP */
	uint64_t rq_out;		/* receives posted and not polled */
	struct rnic_qp *qp[PERF_MAX_QP];
	struct perf_qp_info self[PERF_MAX_QP];
	struct perf_qp_info peer[PERF_MAX_QP];
	uint64_t posted[PERF_MAX_QP];	/* messages posted per QP */
	uint64_t done[PERF_MAX_QP];	/* completed per QP */
	uint64_t received[PERF_MAX_QP];	/* receives completed per QP (SEND) */
	uint64_t next_msg[PERF_MAX_QP];	/* the message number a QP's next receive should hold (--verify) */
	uint8_t tail_signaled[PERF_MAX_QP];	/* the QP's last posted send is signaled */
};

/* One result line (plain values: a client sends its server its results). */
struct perf_result {
	uint32_t size;
	uint32_t verified;		/* 1 when --verify checked every message */
	uint64_t iters;
	double seconds;
	double bw_avg_MBps;		/* MB: 2^20 bytes, as perftest */
	double bw_peak_MBps;
	double msg_rate_Mpps;
	uint64_t lost;			/* UC/UD SEND: messages sent and not received */
	/* latency, in microseconds (or TSC cycles with -C) */
	double lat_min, lat_p50, lat_avg, lat_p99, lat_p999, lat_max, lat_stdev, tps;
	/* --cc-ab, --op-ab, --qp-ab: the turns taken, the medians of the message rates of B (DCQCN on; --op-ab's
	 * op; every QP) and A (DCQCN off; -o's op; --qp-ab's first QPs), and of each B turn's rate over the mean of
	 * the A turns either side of it (ab_pairs of them), with their range; the share of the turns' time their
	 * rates cover */
	uint32_t ab_turns, ab_pairs;
	double ab_b_Mpps, ab_a_Mpps, ab_ratio, ab_ratio_min, ab_ratio_max, ab_measured;
};

/* The per-stage latency of the ends in this process (rnic_query_device_stage_latency). */
struct perf_stage_set {
	int nb_dev;
	const char *dev[2];
	int nb_stages;
	struct rnic_stage_latency stage[2][PERF_MAX_STAGES];
};

extern volatile sig_atomic_t perf_interrupted;	/* SIGINTs and SIGTERMs received */

/* Whether a signal ends the run with a failure: the first one is --run_infinitely's normal end. */
static inline int
perf_aborted(const struct perf_test *t)
{
	return perf_interrupted > (t->run_infinitely ? 1 : 0);
}

/* QP qp's slots: as many as it may have messages in flight. */
static inline uint32_t
perf_qp_slots(const struct perf_end *e, uint32_t qp)
{
	return qp < e->few_qps ? e->few_slots : e->slots_per_qp;
}

/* The first slot of QP qp in an area: the few QPs' slots come first. */
static inline uint64_t
perf_qp_first_slot(const struct perf_end *e, uint32_t qp)
{
	if (qp < e->few_qps)
		return (uint64_t)qp * e->few_slots;
	return (uint64_t)qp * e->slots_per_qp + (uint64_t)e->few_qps * (e->few_slots - e->slots_per_qp);
}

static inline uint8_t *
perf_tx_slot(const struct perf_end *e, uint32_t qp, uint64_t msg)
{
	return e->area + (perf_qp_first_slot(e, qp) + msg % perf_qp_slots(e, qp)) * e->slot;
}

static inline uint8_t *
perf_rx_slot(const struct perf_end *e, uint32_t qp, uint64_t msg)
{
	return perf_tx_slot(e, qp, msg) + e->area_bytes / 2;
}

/* A work request's id: the QP in the top bits, the message (or receive slot) number below. */
static inline uint64_t
perf_wr_id(uint32_t qp, uint64_t msg)
{
	return ((uint64_t)qp << 40) | msg;
}

static inline uint32_t
perf_wr_qp(uint64_t wr_id)
{
	return (uint32_t)(wr_id >> 40);
}

static inline uint64_t
perf_wr_msg(uint64_t wr_id)
{
	return wr_id & ((1ull << 40) - 1);
}

/* pattern.c: the data of message msg of QP qp, what --verify expects byte for byte. */
void perf_fill(uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg);
int perf_check(const uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg);

/* options.c */
int perf_parse_args(int argc, char **argv, struct perf_opts *o);
uint32_t perf_next_size(const struct perf_test *t, uint32_t size);
uint32_t perf_max_size(const struct perf_test *t);
void perf_usage(const char *prog, void *stream);

/* main.c */
int perf_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double perf_now_s(void);
double perf_tsc_hz(void);

/* end.c */
int perf_end_open(struct perf_end *e, struct rnic_device *dev, const struct perf_opts *o);
void perf_end_close(struct perf_end *e);
int perf_end_info(struct perf_end *e);
int perf_end_connect_all(struct perf_end *e, const struct perf_opts *o);
int perf_end_quiesce(struct perf_end *e);
int perf_post_recv(struct perf_end *e, uint32_t q, uint64_t idx);
int perf_post_receives(struct perf_end *e);
int perf_poll_send(struct perf_end *e, int max, struct rnic_wc *wc);
int perf_poll_recv(struct perf_end *e, int max, struct rnic_wc *wc);
int perf_wait_events(struct perf_end *const *ends, int n);
int perf_wait_wc(struct perf_end *e, struct rnic_cq *cq, const struct perf_test *t, struct rnic_wc *wc);
void perf_prepare_target(struct perf_end *e, const struct perf_test *t, uint32_t size);
int perf_check_target(struct perf_end *e, const struct perf_test *t, uint32_t size, const uint64_t *count);
int perf_check_received(struct perf_end *e, const struct perf_test *t, uint32_t q, const uint8_t *data,
			uint32_t len, uint32_t size);
void perf_fill_send(uint8_t *p, uint32_t size, uint32_t q, uint64_t msg);
int perf_serve_receives(struct perf_end *e, const struct perf_test *t, uint32_t size);
uint32_t perf_recv_offset(const struct perf_test *t);

/* bw.c: the ends of this process that take part (e->sends, e->receives set), a result per end */
typedef int (*perf_period_fn)(void *arg, const struct perf_result *r, int n);
int perf_run_bw(struct perf_end *const *ends, int n, const struct perf_opts *o, uint32_t size,
		struct perf_result *res, perf_period_fn period, void *arg);
int perf_wait_received(struct perf_end *e, const struct perf_test *t, uint32_t size, uint64_t want);

/* lat.c: e the requester; peer its peer when in this process */
int perf_run_lat(struct perf_end *e, struct perf_end *peer, const struct perf_opts *o, uint32_t size,
		 struct perf_result *r);
int perf_serve_lat(struct perf_end *e, const struct perf_test *t, uint32_t size);

/* remote.c */
int perf_run_server(struct perf_opts *o);
int perf_run_client(const struct perf_opts *o);
void perf_remote_goodbye(const struct perf_opts *o, enum oob_goodbye_step step);

/* report.c */
int perf_out_json_open(const struct perf_opts *o);
int perf_out_json_close(void);
void perf_print_header(const struct perf_opts *o, const struct perf_end *e);
void perf_print_result(const struct perf_opts *o, const struct perf_result *r, const struct perf_stage_set *st);
void perf_print_both(const struct perf_opts *o, const struct perf_result *local, const struct perf_result *remote);
void perf_print_footer(const struct perf_opts *o);
void perf_print_samples(const struct perf_opts *o, const double *lat, uint64_t n);
void perf_sum_results(struct perf_result *sum, const struct perf_result *a, const struct perf_result *b);
int perf_check_limits(const struct perf_opts *o, const struct perf_result *r);
double perf_sort_median(double *v, uint64_t n);

/* stages.c */
void perf_stages_snapshot(struct perf_stage_set *s, struct perf_end *const *ends, int n);
void perf_stages_since(struct perf_stage_set *s, const struct perf_stage_set *before);
void perf_stages_add(struct perf_stage_set *sum, const struct perf_stage_set *s);
void perf_stages_print(const struct perf_opts *o, const struct perf_stage_set *s, const char *what);
void perf_stages_json(const struct perf_stage_set *s);
int perf_hist_open(const struct perf_opts *o);
void perf_hist_add(uint32_t size, const struct perf_stage_set *s);
int perf_hist_close(void);

#endif /* RNIC_PERF_H */
