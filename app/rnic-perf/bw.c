/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's bandwidth test: every sending end keeps tx-depth messages in flight on each QP, posting again
 * as completions come (-Q: one in cq_mod signaled; -l: lists of sends per post), while the receiving ends
 * post their receives again. One thread drives every end of this process: both ends of a loopback run, one
 * end between two processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "perf.h"
#include "post.h"

#define PEAK_WINDOW_S 0.05

/*
 * --cc-ab, --op-ab and --qp-ab: a setting switched in turns within one -D run (DCQCN on and off; --op-ab's op
 * and -o's; every QP and --qp-ab's first ones), each turn's message rate kept. The two settings compared
 * within one run share the process, its lcores and their placement, which this machine's runs do not
 * (doc/performance.md, "Ratios within one run"). A turn's rate is the first end's, from the completion that
 * leaves none of the messages posted before the turn in flight (on every QP) to the turn's last completion:
 * the messages of the other setting still in flight at a switch count for neither turn.
 */
struct turns {
	double start;			/* of the turn */
	uint32_t n;			/* turns ended: even ones B (DCQCN on, --op-ab's op, every QP), odd ones A */
	uint32_t unsettled;		/* QPs with a message of the turn before still in flight */
	double from_t, last_t;		/* the turn's measured span: its first and last completions */
	uint64_t from_done, last_done;	/* the first end's completions then */
	double measured;		/* the spans' seconds */
	uint64_t posted;		/* the first end's messages posted when the turn began */
	uint64_t sends;			/* SENDs posted in the turns ended (--op-ab) */
	double mpps[PERF_MAX_TURNS];	/* 0: no span (the turn before was still in flight at its end) */
	uint64_t first[PERF_MAX_QP];	/* each QP's first message of the turn */
};

/* The state of one run over every end. */
struct bw_run {
	struct perf_end *const *ends;
	int n;
	const struct perf_opts *o;
	uint32_t size;
	int stopping;			/* -D's time is up (or interrupted): no new messages */
	double start;
	struct perf_result *res;	/* one per end */
	uint64_t window_done[2];
	double window_start;
	struct perf_test t;		/* the test; its op --op-ab's turn's */
	uint32_t posting;		/* QPs 0 .. posting - 1 post: every QP, or --qp-ab's first ones */
	uint32_t turn_qps;		/* the turn's posting (--qp-ab: a wider one once the turn settles) */
	struct turns *turns;		/* --cc-ab, --op-ab, --qp-ab, else NULL */
};

/* The most messages QP q may still post: the run's share, or when it stops posting (the run's end, a --qp-ab
 * turn it has no part in) one closing signaled send when its last one was not signaled (that send's
 * completion then covers every send before it). */
static uint64_t
post_limit(const struct bw_run *b, const struct perf_end *e, uint32_t q)
{
	if (!b->stopping && q < b->posting)
		return b->o->t.duration > 0 ? UINT64_MAX : b->o->t.iters;
	return e->posted[q] + !e->tail_signaled[q];
}

/* The messages QP q may have in flight: -t's, and --qp-ab's depth for its first QPs in their own turns. */
static uint32_t
qp_room(const struct bw_run *b, const struct perf_end *e, uint32_t q)
{
	return b->turn_qps < e->nb_qp ? perf_qp_slots(e, q) : e->slots_per_qp;
}

/* Post on QP q whole lists while it has room for one (and its limit allows). */
static int
fill_qp(const struct bw_run *b, struct perf_end *e, uint32_t q)
{
	const struct perf_test *t = &b->t;
	uint64_t limit = post_limit(b, e, q);

	while (e->posted[q] + e->post_list - e->done[q] <= qp_room(b, e, q) && e->posted[q] < limit) {
		uint64_t msg = e->posted[q];
		uint32_t n = (uint32_t)RTE_MIN((uint64_t)e->post_list, limit - msg);

		for (uint32_t i = 0; t->verify && i < n; i++) {
			if (t->op == OP_WRITE)
				perf_fill(perf_tx_slot(e, q, msg + i), b->size, q, msg + i);
			else if (t->op == OP_SEND)
				perf_fill_send(perf_tx_slot(e, q, msg + i), b->size, q, msg + i);
		}
		if (perf_post_sends(e, t, q, msg, n, b->size, limit) != 0)
			return -1;
	}
	return 0;
}

/* --verify of message msg of QP q at its completion: what can be checked from here. */
static int
check_message(const struct bw_run *b, struct perf_end *e, uint32_t q, uint64_t msg)
{
	const struct perf_test *t = &b->o->t;
	uint64_t orig;
	int ok = 1;

	switch (t->op) {
	case OP_WRITE:
		/* RC completes once the data is placed; UC once it is sent: that is checked at the end. */
		if (e->peer_end != NULL && t->conn == RNIC_QPT_RC)
			ok = perf_check(perf_rx_slot(e->peer_end, q, msg), b->size, q, msg) == 0;
		break;
	case OP_READ:
		ok = perf_check(perf_rx_slot(e, q, msg), b->size, q, msg % perf_qp_slots(e, q)) == 0;
		memset(perf_rx_slot(e, q, msg), 0, b->size);	/* the next READ into it must write it again */
		break;
	case OP_FETCH_ADD:
	case OP_CMP_SWAP:
		/* RC executes a QP's atomics in order: the n-th found the counter at n. */
		memcpy(&orig, perf_rx_slot(e, q, msg), 8);
		ok = orig == msg;
		break;
	default:
		break;
	}
	return ok ? 0 : perf_fail("%s: QP %u message %llu: data differs", e->name, q, (unsigned long long)msg);
}

/* A send completion: every message of its QP up to the one it names is done; post again. */
static int
complete(struct bw_run *b, struct perf_end *e, const struct rnic_wc *wc)
{
	uint32_t q = perf_wr_qp(wc->wr_id);
	uint64_t from = q < e->nb_qp ? e->done[q] : 0, covered;

	if (wc->status != RNIC_WC_SUCCESS)
		return perf_fail("%s: QP %u message %llu: %s", e->name, q, (unsigned long long)perf_wr_msg(wc->wr_id),
				 rnic_wc_status_str(wc->status));
	covered = perf_account_send(e, wc);
	if (covered == 0)
		return perf_fail("%s: a completion for no message posted (wr_id %#llx)", e->name,
				 (unsigned long long)wc->wr_id);
	if (b->turns != NULL && e == b->ends[0] && from < b->turns->first[q] && from + covered >= b->turns->first[q])
		b->turns->unsettled--;
	for (uint64_t m = from; b->o->t.verify && m < from + covered; m++)
		if (check_message(b, e, q, m) != 0)
			return -1;
	return fill_qp(b, e, q);
}

/* One end's turn: its send completions, then its receives. The number of completions, or -1. */
static int
end_turn(struct bw_run *b, struct perf_end *e)
{
	struct rnic_wc wc[64];
	int n = 0;

	if (e->sends) {
		n = rnic_poll_cq(e->cq, 64, wc);
		if (n < 0)
			return perf_fail("rnic_poll_cq failed on %s: %d", e->name, n);
		for (int i = 0; i < n; i++)
			if (complete(b, e, &wc[i]) != 0)
				return -1;
	}
	if (e->receives) {
		uint64_t before = e->received_total;

		if (perf_serve_receives(e, &b->o->t, b->size) != 0)
			return -1;
		n += (int)(e->received_total - before);
	}
	return n;
}

static void
set_result(const struct bw_run *b, int i, double seconds, struct perf_result *r)
{
	const struct perf_end *e = b->ends[i];

	r->size = b->size;
	r->seconds = seconds;
	r->iters = e->completed;
	r->bw_avg_MBps = (double)e->completed * b->size / seconds / 1048576.0;
	r->bw_peak_MBps = b->o->no_peak || b->o->t.run_infinitely ? 0 : RTE_MAX(r->bw_peak_MBps, r->bw_avg_MBps);
	r->msg_rate_Mpps = (double)e->completed / seconds / 1e6;
}

/* The peak: the best of 50 ms windows. */
static void
peak_window(struct bw_run *b, double t)
{
	if (t - b->window_start < PEAK_WINDOW_S)
		return;
	for (int i = 0; i < b->n; i++) {
		double MBps = (double)(b->ends[i]->completed - b->window_done[i]) * b->size /
			      (t - b->window_start) / 1048576.0;

		b->res[i].bw_peak_MBps = RTE_MAX(b->res[i].bw_peak_MBps, MBps);
		b->window_done[i] = b->ends[i]->completed;
	}
	b->window_start = t;
}

/* Whether every sending end has every message completed that it will post. */
static int
finished(const struct bw_run *b)
{
	if (!b->stopping && b->o->t.duration > 0)
		return 0;
	for (int i = 0; i < b->n; i++) {
		const struct perf_end *e = b->ends[i];

		if (e->sends && (e->outstanding > 0 || (!b->stopping && e->completed < b->o->t.iters * e->nb_qp)))
			return 0;
	}
	return 1;
}

/* Post on every QP of the sending ends what it may: at the run's start, its end, and a turn's start. */
static int
fill_all(const struct bw_run *b)
{
	for (int i = 0; i < b->n; i++)
		for (uint32_t q = 0; b->ends[i]->sends && q < b->ends[i]->nb_qp; q++)
			if (fill_qp(b, b->ends[i], q) != 0)
				return -1;
	return 0;
}

/* The run's end (-D's time is up, or a signal): only the closing sends now, posted where there is room (the
 * others post theirs at their next completion). */
static int
stop(struct bw_run *b)
{
	b->stopping = 1;
	return fill_all(b);
}

/* --run_infinitely: a result for the last period, to the period callback; the counts start again. */
static int
period_report(struct bw_run *b, double t, perf_period_fn period, void *arg)
{
	struct perf_result r[2] = { 0 };

	for (int i = 0; i < b->n; i++) {
		set_result(b, i, t - b->start, &r[i]);
		b->ends[i]->completed = 0;
	}
	b->start = t;
	return period(arg, r, b->n);
}

static void
progress_line(const struct bw_run *b, double t, double *last)
{
	if (t - *last < 1.0 || b->o->t.run_infinitely || (b->o->t.duration <= 2 && t - b->start <= 2))
		return;
	fprintf(stderr, "rnic-perf: %.0f s, %llu messages, %.3f Gb/s\n", t - b->start,
		(unsigned long long)b->ends[0]->completed,
		(double)b->ends[0]->completed * b->size * 8 / (t - b->start) / 1e9);
	*last = t;
}

/* DCQCN on or off on the ends of this process and their peers. */
static int
cc_switch(const struct bw_run *b, int on)
{
	for (int i = 0; i < b->n; i++) {
		const struct perf_end *e = b->ends[i];

		if (rnic_set_cc(e->ctx, on, on) != 0 ||
		    (e->peer_end != NULL && rnic_set_cc(e->peer_end->ctx, on, on) != 0))
			return perf_fail("--cc-ab: rnic_set_cc failed on %s", e->name);
	}
	return 0;
}

/* Turn n's setting: B in even turns (DCQCN on; --op-ab's op; every QP), A in odd ones. */
static int
turn_setting(struct bw_run *b, uint32_t n)
{
	const struct perf_test *t = &b->o->t;

	if (t->cc_ab_ms != 0)
		return cc_switch(b, n % 2 == 0);
	if (t->op_ab_ms != 0)
		b->t.op = n % 2 == 0 ? t->op_ab : t->op;
	b->turn_qps = t->qp_ab_ms != 0 && n % 2 != 0 ? t->qp_ab_n : UINT32_MAX;
	b->posting = RTE_MIN(b->posting, b->turn_qps);
	return 0;
}

/*
 * --qp-ab's turn of every QP: the QPs beyond the first N post once the first N have none of their deeper
 * turn's messages in flight. Posting on them at the switch would leave that backlog a 1/Q share of the round
 * robin, many rounds of every QP. The turn's span starts after this posting. 1 when it posted.
 */
static int
turn_widen(struct bw_run *b)
{
	if (b->turns->unsettled != 0 || b->posting == b->turn_qps)
		return 0;
	b->posting = b->turn_qps;
	return fill_all(b) != 0 ? -1 : 1;
}

/* A turn's start: the SENDs the turn before posted (op, its op), and where this one's messages begin on each
 * QP of e. At the run's end, the last turn's SENDs. */
static void
turn_begin(struct turns *tr, const struct perf_end *e, enum perf_op op)
{
	uint64_t posted = e->completed + e->outstanding;

	if (op == OP_SEND)
		tr->sends += posted - tr->posted;
	tr->posted = posted;
	tr->unsettled = 0;
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		tr->first[q] = e->posted[q];
		tr->unsettled += e->done[q] < e->posted[q];
	}
	tr->from_t = tr->last_t = 0;
	tr->from_done = tr->last_done = e->completed;
}

/* Each loop: the turn's span once settled; when its time is up, its rate and the other setting. */
static int
turn_tick(struct bw_run *b, double now)
{
	struct turns *tr = b->turns;
	uint64_t done = b->ends[0]->completed;
	double span;
	int widened;

	if (tr == NULL || b->stopping || tr->n == PERF_MAX_TURNS)
		return 0;
	widened = turn_widen(b);
	if (widened != 0)
		return widened < 0 ? -1 : 0;
	if (tr->unsettled == 0 && done != tr->last_done) {
		if (tr->from_t == 0) {
			tr->from_t = now;
			tr->from_done = done;
		}
		tr->last_t = now;
		tr->last_done = done;
	}
	if (now - tr->start < perf_turn_ms(&b->o->t) / 1e3)
		return 0;
	span = tr->last_t - tr->from_t;
	tr->mpps[tr->n++] = span > 0 ? (double)(tr->last_done - tr->from_done) / span / 1e6 : 0;
	tr->measured += span;
	tr->start = now;
	turn_begin(tr, b->ends[0], b->t.op);
	/* --qp-ab's QPs that had no part or no room in the turn before post now */
	return turn_setting(b, tr->n) != 0 || fill_all(b) != 0 ? -1 : 0;
}

/* The turns in r: the first turn (the run's start) left out of the medians; each B turn's rate over the
 * mean of the A turns on both sides of it, so that a drift of the machine's speed cancels. */
static void
turns_result(const struct turns *tr, double seconds, struct perf_result *r)
{
	static double b_mpps[PERF_MAX_TURNS / 2], a_mpps[PERF_MAX_TURNS / 2], ratio[PERF_MAX_TURNS / 2];
	uint32_t n_b = 0, n_a = 0, n_ratio = 0;

	for (uint32_t i = 1; i < tr->n; i++) {
		if (tr->mpps[i] == 0)
			continue;
		if (i % 2 == 0)
			b_mpps[n_b++] = tr->mpps[i];
		else
			a_mpps[n_a++] = tr->mpps[i];
	}
	for (uint32_t i = 2; i + 1 < tr->n; i += 2)
		if (tr->mpps[i - 1] > 0 && tr->mpps[i] > 0 && tr->mpps[i + 1] > 0)
			ratio[n_ratio++] = tr->mpps[i] * 2 / (tr->mpps[i - 1] + tr->mpps[i + 1]);
	r->ab_turns = tr->n;
	r->ab_pairs = n_ratio;
	r->ab_measured = seconds > 0 ? tr->measured / seconds : 0;
	r->ab_b_Mpps = n_b > 0 ? perf_sort_median(b_mpps, n_b) : 0;
	r->ab_a_Mpps = n_a > 0 ? perf_sort_median(a_mpps, n_a) : 0;
	if (n_ratio == 0)
		return;
	r->ab_ratio = perf_sort_median(ratio, n_ratio);
	r->ab_ratio_min = ratio[0];
	r->ab_ratio_max = ratio[n_ratio - 1];
}

/* The polling loop until every sending end is done. */
static int
run_loop(struct bw_run *b, perf_period_fn period, void *arg)
{
	const struct perf_test *t = &b->o->t;
	double now = b->start, end_by = b->start + t->duration, last_line = b->start, last_work = b->start;

	while (!finished(b)) {
		int work = 0;

		now = perf_now_s();
		if (!b->stopping && ((t->duration > 0 && !t->run_infinitely && now >= end_by) || perf_interrupted) &&
		    stop(b) != 0)
			return -1;
		if (t->run_infinitely && now >= end_by && !b->stopping) {
			if (period_report(b, now, period, arg) != 0)
				return -1;
			end_by = now + t->duration;
		}
		for (int i = 0; i < b->n; i++) {
			int n = end_turn(b, b->ends[i]);

			if (n < 0)
				return -1;
			work += n;
		}
		peak_window(b, now);
		if (turn_tick(b, now) != 0)
			return -1;
		progress_line(b, now, &last_line);
		if (work > 0)
			last_work = now;
		else if (perf_interrupted && now - last_work > PERF_STOP_WAIT_S)
			return perf_fail("interrupted: no completion for %d s (%llu sends outstanding)",
					 PERF_STOP_WAIT_S, (unsigned long long)b->ends[0]->outstanding);
		else if (now - last_work > PERF_WAIT_S)
			return perf_fail("no completion for %d s (%llu sends outstanding)", PERF_WAIT_S,
					 (unsigned long long)b->ends[0]->outstanding);
		if (work == 0 && t->events && perf_wait_events(b->ends, b->n) != 0)
			return -1;
	}
	return 0;
}

/* The SENDs peer posted to this process's other end: all its messages, but only --op-ab's SEND turns'. */
static uint64_t
sends_of(const struct bw_run *b, const struct perf_end *peer)
{
	return b->o->t.op_ab_ms != 0 ? b->turns->sends : peer->completed;
}

/* perf_run_bw's run: b set up. */
static int
run_bw(struct bw_run *b, perf_period_fn period, void *arg)
{
	struct perf_end *const *ends = b->ends;
	const struct perf_opts *o = b->o;
	struct perf_result *res = b->res;
	uint32_t size = b->size;
	int n = b->n;
	double seconds;

	b->start = b->window_start = perf_now_s();
	if (b->turns != NULL)
		b->turns->start = b->start;
	if (fill_all(b) != 0 || run_loop(b, period, arg) != 0)
		return -1;
	seconds = perf_now_s() - b->start;
	for (int i = 0; i < n; i++)
		if (ends[i]->sends)
			set_result(b, i, seconds, &res[i]);
	if (b->turns != NULL)
		turn_begin(b->turns, ends[0], b->t.op);	/* the last turn's SENDs */
	for (int i = 0; b->turns != NULL && i < n; i++)
		if (ends[i]->sends)
			turns_result(b->turns, b->turns->start - b->start, &res[i]);
	for (int i = 0; i < n; i++) {
		struct perf_end *peer = ends[i]->peer_end;

		if (!ends[i]->receives || peer == NULL || !peer->sends)
			continue;
		if (perf_wait_received(ends[i], &o->t, size, sends_of(b, peer)) != 0)
			return -1;
		/* The loss is the sender's figure. */
		for (int j = 0; j < n; j++)
			if (ends[j] == peer)
				res[j].lost = sends_of(b, peer) - ends[i]->received_total;
	}
	if (perf_aborted(&o->t))
		return perf_fail("interrupted");
	return 0;
}

/*
 * One size. ends: the ends of this process with a part (e->sends, e->receives); res: a result per end. An
 * end that receives SENDs from the other end here gets all of them before this returns (UC and UD may lose
 * some: counted in the sender's result as lost). period: --run_infinitely's reports.
 */
int
perf_run_bw(struct perf_end *const *ends, int n, const struct perf_opts *o, uint32_t size,
	    struct perf_result *res, perf_period_fn period, void *arg)
{
	struct bw_run b = { .ends = ends, .n = n, .o = o, .size = size, .res = res, .t = o->t, .posting = UINT32_MAX,
			    .turn_qps = UINT32_MAX };
	int ret;

	memset(res, 0, sizeof(*res) * (size_t)n);
	if (perf_turn_ms(&o->t) != 0) {
		b.turns = calloc(1, sizeof(*b.turns));
		if (b.turns == NULL)
			return perf_fail("--cc-ab/--op-ab/--qp-ab: out of memory");
		if (turn_setting(&b, 0) != 0) {
			free(b.turns);
			return -1;
		}
	}
	ret = run_bw(&b, period, arg);
	free(b.turns);
	if (o->t.cc_ab_ms != 0 && cc_switch(&b, 1) != 0)	/* the run ends with DCQCN on, the engine's default */
		ret = -1;
	return ret;
}

/* Serve receives until want SENDs have arrived (RC), or until they stop coming (UC, UD: 0.2 s). */
int
perf_wait_received(struct perf_end *e, const struct perf_test *t, uint32_t size, uint64_t want)
{
	double t0 = perf_now_s(), last = t0;
	uint64_t seen = e->received_total;

	while (e->received_total < want) {
		double now = perf_now_s();

		if (perf_serve_receives(e, t, size) != 0)
			return -1;
		if (e->received_total != seen) {
			seen = e->received_total;
			last = now;
		}
		if (t->conn != RNIC_QPT_RC && now - last > 0.2)
			return 0;
		if (now - last > PERF_WAIT_S)
			return perf_fail("%s: %llu of %llu SENDs received, none for %d s", e->name,
					 (unsigned long long)e->received_total, (unsigned long long)want, PERF_WAIT_S);
	}
	return 0;
}
