/* SPDX-License-Identifier: BSD-3-Clause
 * DPDK telemetry under /rnic: what dpdk-telemetry.py (or any client of the telemetry socket) can read while
 * the engine runs.
 *   /rnic/stats   per device (param: one device's index): the device counters (rnic_query_device_counters)
 *                 and its rings' occupancy
 *   /rnic/stages  per stage: message count and p50/p99/p99.9 of the queued and busy latencies, in ns
 *   /rnic/lcores  per engine lcore: every one of its stages, busy and idle polling cycles, busy share
 *   /rnic/qps     one device's QPs, a page at a time (params DEV,START,COUNT): each QP's state and counters
 * All of it is read without locks from counters each written by one lcore. A reply holds at most 16 KB
 * (DPDK's telemetry drops what does not fit): hence one device per /rnic/stats call when there are many,
 * and pages of QPs.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_telemetry.h>

#include "rnic_pipeline.h"
#include "rnic_priv.h"

#define MAX_COUNTERS 128
/* QPs per /rnic/qps reply: a QP's entry is at most ~950 bytes of JSON (27 counters of up to 20 digits under
 * names up to 23 characters), so 16 of them and the page's own keys fit DPDK's 16 KB. */
#define QPS_PER_PAGE 16

static void
add_ring(struct rte_tel_data *d, const char *name, const struct rte_ring *r)
{
	rte_tel_data_add_dict_u64(d, name, r != NULL ? rte_ring_count(r) : 0);
}

static struct rte_tel_data *
device_stats(const struct rnic_device *dev)
{
	struct rnic_counter c[MAX_COUNTERS];
	struct rte_tel_data *d = rte_tel_data_alloc();
	int n = rnic_device_counters(dev, c, MAX_COUNTERS);

	if (d == NULL)
		return NULL;
	rte_tel_data_start_dict(d);
	for (int i = 0; i < n && i < MAX_COUNTERS; i++)
		rte_tel_data_add_dict_u64(d, c[i].name, c[i].value);
	add_ring(d, "doorbell_ring_used", dev->doorbell_ring);
	for (uint16_t k = 0; k < dev->nb_shards; k++) {
		char name[64];

		snprintf(name, sizeof(name), "shard%u_request_ring_used", k);
		add_ring(d, name, dev->pipeline[k]->request_ring);
		snprintf(name, sizeof(name), "shard%u_response_ring_used", k);
		add_ring(d, name, dev->pipeline[k]->response_ring);
		snprintf(name, sizeof(name), "shard%u_slot_ring_used", k);
		add_ring(d, name, dev->pipeline[k]->slot_ring);
		snprintf(name, sizeof(name), "shard%u_tx_buffered", k);
		rte_tel_data_add_dict_u64(d, name, dev->pipeline[k]->req_tx.count + dev->pipeline[k]->resp_tx.count);
	}
	return d;
}

/* Parameters: up to max unsigned numbers separated by commas; how many were given, or -1 if malformed. */
static int
tel_params(const char *params, unsigned long *v, int max)
{
	const char *p = params;
	char *end;
	int n = 0;

	if (params == NULL || *params == '\0')
		return 0;
	for (;;) {
		if (n == max || *p < '0' || *p > '9')
			return -1;
		v[n++] = strtoul(p, &end, 10);
		if (*end == '\0')
			return n;
		if (*end != ',')
			return -1;
		p = end + 1;
	}
}

static int
cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned long dev_index = 0;
	int n = tel_params(params, &dev_index, 1);

	(void)cmd;
	if (n < 0 || (n == 1 && rnic_engine_device((int)RTE_MIN(dev_index, (unsigned long)INT_MAX)) == NULL))
		return -1;
	rte_tel_data_start_dict(d);
	for (int i = 0; rnic_engine_device(i) != NULL; i++) {
		struct rte_tel_data *dev;

		if (n == 1 && (unsigned long)i != dev_index)
			continue;
		dev = device_stats(rnic_engine_device(i));
		if (dev != NULL)
			rte_tel_data_add_dict_container(d, rnic_engine_device(i)->name, dev, 0);
	}
	return 0;
}

static void
add_hist(struct rte_tel_data *d, const char *what, const struct rnic_latency_hist *h)
{
	static const struct {
		const char *name;
		double q;
	} q[] = { { "p50_ns", 0.5 }, { "p99_ns", 0.99 }, { "p999_ns", 0.999 } };
	char name[64];

	snprintf(name, sizeof(name), "%s_count", what);
	rte_tel_data_add_dict_u64(d, name, h->count);
	for (unsigned int i = 0; i < RTE_DIM(q); i++) {
		snprintf(name, sizeof(name), "%s_%s", what, q[i].name);
		rte_tel_data_add_dict_u64(d, name, (uint64_t)rnic_latency_quantile_ns(h, q[i].q));
	}
}

static int
cmd_stages(const char *cmd, const char *params, struct rte_tel_data *d)
{
	static struct rnic_stage_latency lat[RNIC_LAT_MAX];	/* 4 KB each: not on the stack */
	int n = rnic_query_stage_latency(lat, RNIC_LAT_MAX);

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (int s = 0; s < n; s++) {
		struct rte_tel_data *st = rte_tel_data_alloc();

		if (st == NULL)
			return -1;
		rte_tel_data_start_dict(st);
		add_hist(st, "queued", &lat[s].queued);
		add_hist(st, "busy", &lat[s].busy);
		rte_tel_data_add_dict_container(d, lat[s].stage, st, 0);
	}
	return 0;
}

static int
cmd_lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int lcore;

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	RTE_LCORE_FOREACH(lcore) {	/* the main lcore too: its stages run in rnic_engine_progress */
		const char *names[RNIC_MAX_STAGES_PER_LCORE];
		unsigned int nb = RTE_DIM(names);
		uint64_t busy, idle;
		struct rte_tel_data *l, *st;
		char key[32];

		if (rnic_engine_lcore_load(lcore, &busy, &idle, names, &nb) != 0)
			continue;
		l = rte_tel_data_alloc();
		st = rte_tel_data_alloc();
		if (l == NULL || st == NULL) {
			rte_tel_data_free(l);
			rte_tel_data_free(st);
			return -1;
		}
		rte_tel_data_start_array(st, RTE_TEL_STRING_VAL);
		for (unsigned int i = 0; i < nb; i++)
			rte_tel_data_add_array_string(st, names[i]);
		rte_tel_data_start_dict(l);
		rte_tel_data_add_dict_container(l, "stages", st, 0);
		rte_tel_data_add_dict_u64(l, "busy_cycles", busy);
		rte_tel_data_add_dict_u64(l, "idle_cycles", idle);
		rte_tel_data_add_dict_u64(l, "busy_percent", busy + idle != 0 ? busy * 100 / (busy + idle) : 0);
		snprintf(key, sizeof(key), "lcore%u", lcore);
		rte_tel_data_add_dict_container(d, key, l, 0);
	}
	return 0;
}

/* One QP's state and counters. */
static struct rte_tel_data *
qp_entry(struct rnic_qp *qp)
{
	const struct rnic_qp_priv *priv = rnic_qp_priv(qp);
	struct rnic_qp_counters c;
	struct rte_tel_data *q;

	if (rnic_query_qp_counters(qp, &c) != 0 || (q = rte_tel_data_alloc()) == NULL)
		return NULL;
	rte_tel_data_start_dict(q);
	rte_tel_data_add_dict_string(q, "state", rnic_qp_state_str(qp->state));
#define RNIC_TEL_QP(field) rte_tel_data_add_dict_u64(q, #field, c.field)
	RNIC_TEL_QP(packets_sent);
	RNIC_TEL_QP(retransmits);
	RNIC_TEL_QP(timeouts);
	RNIC_TEL_QP(seq_naks_received);
	RNIC_TEL_QP(rnr_naks_received);
	RNIC_TEL_QP(inv_req_naks_received);
	RNIC_TEL_QP(access_naks_received);
	RNIC_TEL_QP(remote_op_naks_received);
	RNIC_TEL_QP(requests_received);
	RNIC_TEL_QP(duplicates);
	RNIC_TEL_QP(out_of_sequence);
	RNIC_TEL_QP(acks_sent);
	RNIC_TEL_QP(seq_naks_sent);
	RNIC_TEL_QP(rnr_naks_sent);
	RNIC_TEL_QP(inv_req_naks_sent);
	RNIC_TEL_QP(access_naks_sent);
	RNIC_TEL_QP(remote_op_naks_sent);
	RNIC_TEL_QP(spoofed_requests);
	RNIC_TEL_QP(bad_addr_responses);
	RNIC_TEL_QP(bad_addr_requests);
#undef RNIC_TEL_QP
	/* Transport state as the engine's lcores last wrote it: where a stuck QP stands. */
	rte_tel_data_add_dict_u64(q, "sq_posted", __atomic_load_n(&priv->sq.idx->head, __ATOMIC_RELAXED));
	rte_tel_data_add_dict_u64(q, "sq_completed", priv->req.sq_done);
	rte_tel_data_add_dict_u64(q, "wqes_in_flight", priv->req.infl_tail - priv->req.infl_head);
	rte_tel_data_add_dict_u64(q, "next_psn", priv->req.npsn);
	rte_tel_data_add_dict_u64(q, "sent_psn", priv->req.sent_psn);
	rte_tel_data_add_dict_u64(q, "unacked_psn", priv->req.una);
	rte_tel_data_add_dict_u64(q, "loss_timer_armed", priv->req.deadline != 0);
	rte_tel_data_add_dict_u64(q, "expected_psn", priv->resp.epsn);
	return q;
}

/*
 * /rnic/qps,DEV,START,COUNT: device DEV's QPs (default 0) from QP table slot START (default 0), at most COUNT
 * of them (default and at most QPS_PER_PAGE). The reply: "device", "qps_total" (live QPs of the device),
 * "qps" (QP number -> state and counters) and "next", the START of the next page (-1 after the last QP).
 */
static int
cmd_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned long p[3] = { 0, 0, QPS_PER_PAGE };
	struct rte_tel_data *page;
	struct rnic_device *dev;
	uint32_t slot, total = 0, shown = 0;
	int64_t next = -1;

	(void)cmd;
	if (tel_params(params, p, 3) < 0 || p[0] > INT_MAX ||
	    (dev = rnic_engine_device((int)p[0])) == NULL || (page = rte_tel_data_alloc()) == NULL)
		return -1;
	p[2] = RTE_MIN(RTE_MAX(p[2], 1ul), (unsigned long)QPS_PER_PAGE);
	rte_tel_data_start_dict(page);
	for (slot = 0; slot < rnic_qp_table_slots(dev); slot++) {
		struct rnic_qp *qp = rnic_qp_by_slot(dev, slot);
		struct rte_tel_data *q;
		char key[32];

		if (qp == NULL)
			continue;
		total++;
		if (slot < p[1] || next >= 0)
			continue;
		if (shown == p[2]) {
			next = slot;
			continue;
		}
		q = qp_entry(qp);
		if (q == NULL)
			continue;
		snprintf(key, sizeof(key), "qp%u", qp->qp_num);
		rte_tel_data_add_dict_container(page, key, q, 0);
		shown++;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "device", dev->name);
	rte_tel_data_add_dict_u64(d, "qps_total", total);
	rte_tel_data_add_dict_int(d, "next", (int)next);
	rte_tel_data_add_dict_container(d, "qps", page, 0);
	return 0;
}

void
rnic_telemetry_register(void)
{
	static int done;

	/* Commands stay registered for the process's life: once is enough, and there is no unregister. */
	if (done)
		return;
	done = 1;
	rte_telemetry_register_cmd("/rnic/stats", cmd_stats, "softrnic device counters and ring occupancy. "
				   "Parameters: int device index (default: every device)");
	rte_telemetry_register_cmd("/rnic/stages", cmd_stages, "softrnic per-stage latency percentiles (ns)");
	rte_telemetry_register_cmd("/rnic/lcores", cmd_lcores, "softrnic engine lcores: busy and idle cycles");
	/* Help texts: at most 127 characters (DPDK refuses the command otherwise). */
	rte_telemetry_register_cmd("/rnic/qps", cmd_qps, "softrnic QPs of a device, a page at a time. "
				   "Parameters: int device, int start (the last page's next), int count");
}
