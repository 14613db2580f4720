/* SPDX-License-Identifier: BSD-3-Clause
 * DPDK telemetry under /rnic: what dpdk-telemetry.py (or any client of the telemetry socket) can read while
 * the engine runs.
 *   /rnic/stats   per device: the device counters (rnic_query_device_counters) and its rings' occupancy
 *   /rnic/stages  per stage: message count and p50/p99/p99.9 of the queued and busy latencies, in ns
 *   /rnic/lcores  per engine lcore: its stages, busy and idle polling cycles, busy share in percent
 *   /rnic/qps     per device, param = device index: each QP's state and counters
 * All of it is read without locks from counters each written by one lcore.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_telemetry.h>

#include "rnic_pipeline.h"
#include "rnic_priv.h"

#define MAX_COUNTERS 96

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

static int
cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (int i = 0; rnic_engine_device(i) != NULL; i++) {
		struct rte_tel_data *dev = device_stats(rnic_engine_device(i));

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
		const char *names[8];
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

static int
cmd_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rnic_device *dev = rnic_engine_device(params != NULL ? atoi(params) : 0);

	(void)cmd;
	if (dev == NULL)
		return -1;
	rte_tel_data_start_dict(d);
	for (uint32_t slot = 0; slot < rnic_qp_table_slots(dev); slot++) {
		struct rnic_qp *qp = rnic_qp_by_slot(dev, slot);
		struct rnic_qp_counters c;
		struct rte_tel_data *q;
		char key[32];

		if (qp == NULL || rnic_query_qp_counters(qp, &c) != 0 || (q = rte_tel_data_alloc()) == NULL)
			continue;
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
		const struct rnic_qp_priv *priv = rnic_qp_priv(qp);

		rte_tel_data_add_dict_u64(q, "sq_posted", __atomic_load_n(&priv->sq.idx->head, __ATOMIC_RELAXED));
		rte_tel_data_add_dict_u64(q, "sq_completed", priv->req.sq_done);
		rte_tel_data_add_dict_u64(q, "wqes_in_flight", priv->req.infl_tail - priv->req.infl_head);
		rte_tel_data_add_dict_u64(q, "next_psn", priv->req.npsn);
		rte_tel_data_add_dict_u64(q, "sent_psn", priv->req.sent_psn);
		rte_tel_data_add_dict_u64(q, "unacked_psn", priv->req.una);
		rte_tel_data_add_dict_u64(q, "loss_timer_armed", priv->req.deadline != 0);
		rte_tel_data_add_dict_u64(q, "expected_psn", priv->resp.epsn);
		snprintf(key, sizeof(key), "qp%u", qp->qp_num);
		rte_tel_data_add_dict_container(d, key, q, 0);
	}
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
	rte_telemetry_register_cmd("/rnic/stats", cmd_stats, "softrnic device counters and ring occupancy");
	rte_telemetry_register_cmd("/rnic/stages", cmd_stages, "softrnic per-stage latency percentiles (ns)");
	rte_telemetry_register_cmd("/rnic/lcores", cmd_lcores, "softrnic engine lcores: busy and idle cycles");
	rte_telemetry_register_cmd("/rnic/qps", cmd_qps, "softrnic QPs of a device and their counters. "
				   "Parameters: int device index");
}
