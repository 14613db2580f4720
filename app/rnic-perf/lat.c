/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's latency test. WRITE and SEND: ping-pong, half the round trip (perftest's write_lat, send_lat);
 * READ and atomics: one posted, its completion awaited (read_lat, atomic_lat). Every exchange is timed with
 * the TSC and kept, for the percentiles, -H and -U.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "perf.h"
#include "post.h"

/* The byte a ping's last byte holds: the peer waits for it to change (WRITE). */
static uint8_t
marker(uint64_t it)
{
	return (uint8_t)(it % 250 + 1);
}

/* e sends message it (WRITE or SEND) to its peer; tag tells the two directions' data apart. */
static int
ping(struct perf_end *e, const struct perf_test *t, uint32_t tag, uint64_t it, uint32_t size)
{
	uint8_t *tx = perf_tx_slot(e, 0, it);

	if (t->verify)
		perf_fill(tx, size, tag, it);
	tx[size - 1] = marker(it);
	return perf_post_sends(e, t, 0, it, 1, size, it + 1);
}

/* Reap the completions of the ping-pong's own sends (their status only). */
static int
reap(struct perf_end *e)
{
	struct rnic_wc wc[16];
	int n = perf_poll_send(e, 16, wc);

	for (int i = 0; i < n; i++)
		if (wc[i].status != RNIC_WC_SUCCESS)
			return perf_fail("%s: %s", e->name, rnic_wc_status_str(wc[i].status));
	return n < 0 ? -1 : 0;
}

/* Wait until the last byte of a buffer the peer writes takes the value. A WRITE that never lands failed at
 * its sender (retries exhausted, ...): when the wait is over, that sender's completion in this process says
 * why. */
static int
wait_byte(struct perf_end *e, const volatile uint8_t *p, uint8_t value)
{
	double deadline = perf_now_s() + PERF_WAIT_S;

	while (*p != value) {
		rnic_engine_progress();
		if (perf_now_s() > deadline)
			return reap(e) != 0 || (e->peer_end != NULL && reap(e->peer_end) != 0) ? -1 :
			       perf_fail("%s: the peer's WRITE did not arrive in %d s", e->name, PERF_WAIT_S);
	}
	return 0;
}

/* The receiving side of a ping: wait for message it, check it (scratch: room for the expected data). */
static int
pong_wait(struct perf_end *e, const struct perf_test *t, uint32_t tag, uint64_t it, uint32_t size,
	  uint8_t *scratch)
{
	uint8_t *rx = perf_rx_slot(e, 0, it);
	struct rnic_wc wc;

	if (t->op == OP_WRITE && wait_byte(e, rx + size - 1, marker(it)) != 0)
		return -1;
	if (t->op == OP_SEND) {
		uint64_t idx;

		if (perf_wait_wc(e, e->rcq, t, &wc) != 0)
			return -1;
		idx = perf_wr_msg(wc.wr_id);
		if (perf_post_recv(e, 0, idx + e->slots_per_qp) != 0)
			return -1;
		rx = perf_rx_slot(e, 0, idx) + perf_recv_offset(t);
	}
	if (t->verify) {
		perf_fill(scratch, size, tag, it);
		scratch[size - 1] = marker(it);
		if (memcmp(rx, scratch, size) != 0)
			return perf_fail("%s: ping-pong %llu: data differs", e->name, (unsigned long long)it);
	}
	return reap(e);
}

/* --verify of a READ or atomic (message it): the data READ, or the counter the atomic found. */
static int
check_one(struct perf_end *e, const struct perf_test *t, uint64_t it, uint32_t size)
{
	uint64_t orig;

	if (!t->verify)
		return 0;
	if (t->op == OP_READ) {
		if (perf_check(perf_rx_slot(e, 0, it), size, 0, it % e->slots_per_qp) != 0)
			return perf_fail("%s: READ %llu: data differs", e->name, (unsigned long long)it);
		memset(perf_rx_slot(e, 0, it), 0, size);
		return 0;
	}
	memcpy(&orig, perf_rx_slot(e, 0, it), 8);
	return orig == it ? 0 : perf_fail("%s: atomic %llu found %llu", e->name, (unsigned long long)it,
					  (unsigned long long)orig);
}

/* One timed exchange; returns its TSC cycles (0 on failure: reported). */
static uint64_t
exchange(struct perf_end *e, struct perf_end *peer, const struct perf_test *t, uint64_t it, uint32_t size,
	 uint8_t *scratch)
{
	uint64_t t0 = rte_rdtsc();
	struct rnic_wc wc;
	int ret;

	if (t->op == OP_WRITE || t->op == OP_SEND) {
		ret = ping(e, t, 0, it, size);
		if (ret == 0 && peer != NULL)
			ret = pong_wait(peer, t, 0, it, size, scratch) || ping(peer, t, 1, it, size);
		if (ret == 0)
			ret = pong_wait(e, t, 1, it, size, scratch);
	} else {
		ret = perf_post_sends(e, t, 0, it, 1, size, it + 1) || perf_wait_wc(e, e->cq, t, &wc) ||
		      check_one(e, t, it, size);
	}
	return ret == 0 ? RTE_MAX(rte_rdtsc() - t0, (uint64_t)1) : 0;
}

/* The figures of n samples, sorted here (perftest's: the median is t_typical). */
static void
lat_stats(double *lat, uint64_t n, struct perf_result *r)
{
	double sum = 0, sq = 0;

	r->lat_p50 = perf_sort_median(lat, n);
	for (uint64_t i = 0; i < n; i++) {
		sum += lat[i];
		sq += lat[i] * lat[i];
	}
	r->iters = n;
	r->lat_min = lat[0];
	r->lat_max = lat[n - 1];
	r->lat_avg = sum / (double)n;
	r->lat_stdev = sqrt(RTE_MAX(sq / (double)n - r->lat_avg * r->lat_avg, 0.0));
	r->lat_p99 = lat[(uint64_t)((double)(n - 1) * 0.99)];
	r->lat_p999 = lat[(uint64_t)((double)(n - 1) * 0.999)];
}

/* Busy-wait --latency_gap microseconds between exchanges (outside the timed part). */
static void
gap(const struct perf_test *t)
{
	double until = perf_now_s() + t->latency_gap_us * 1e-6;

	while (t->latency_gap_us != 0 && perf_now_s() < until)
		rnic_engine_progress();
}

/* Room for the samples: -n of them, or growing with -D. */
static int
keep_sample(double **lat, uint64_t *cap, uint64_t n, double v)
{
	if (n == *cap) {
		double *more = realloc(*lat, sizeof(double) * *cap * 2);

		if (more == NULL)
			return perf_fail("out of memory for %llu latency samples", (unsigned long long)n);
		*lat = more;
		*cap *= 2;
	}
	(*lat)[n] = v;
	return 0;
}

/*
 * The latency loop of the requester's end; with the peer in this process (loopback) it also plays the peer's
 * part. A sample is half the round trip for WRITE and SEND (perftest's rtt factor), in microseconds or, with
 * -C, in TSC cycles.
 */
int
perf_run_lat(struct perf_end *e, struct perf_end *peer, const struct perf_opts *o, uint32_t size,
	     struct perf_result *r)
{
	const struct perf_test *t = &o->t;
	uint64_t cap = t->duration > 0 ? 1024 : t->iters, n = 0;
	double *lat = malloc(sizeof(double) * cap), start = perf_now_s();
	double per = (o->report_cycles ? 1 : perf_tsc_hz() / 1e6) * (t->op == OP_WRITE || t->op == OP_SEND ? 2 : 1);
	uint8_t *scratch = malloc(size);
	int ret = lat == NULL || scratch == NULL ? perf_fail("out of memory") : 0;

	while (ret == 0 && (t->duration > 0 ? perf_now_s() - start < t->duration : n < t->iters)) {
		uint64_t cycles = exchange(e, peer, t, n, size, scratch);

		ret = cycles == 0 ? -1 : keep_sample(&lat, &cap, n, (double)cycles / per);
		n++;
		if (perf_aborted(t))
			ret = perf_fail("interrupted");
		gap(t);
	}
	if (ret == 0) {
		r->size = size;
		r->seconds = perf_now_s() - start;
		r->tps = (double)n / r->seconds;
		if (o->report_unsorted)
			perf_print_samples(o, lat, n);
		lat_stats(lat, n, r);
		if (o->report_hist && !o->report_unsorted)
			perf_print_samples(o, lat, n);
	}
	free(lat);
	free(scratch);
	return ret;
}

/* The server's part of a latency run: answer each ping (WRITE, SEND; READ and atomics need nothing). */
int
perf_serve_lat(struct perf_end *e, const struct perf_test *t, uint32_t size)
{
	uint8_t *scratch = malloc(size);
	int ret = scratch == NULL ? perf_fail("out of memory") : 0;

	for (uint64_t n = 0; ret == 0 && n < t->iters && (t->op == OP_WRITE || t->op == OP_SEND); n++)
		ret = pong_wait(e, t, 0, n, size, scratch) || ping(e, t, 1, n, size);
	free(scratch);
	return ret;
}
