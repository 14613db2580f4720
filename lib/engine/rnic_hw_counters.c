/* SPDX-License-Identifier: BSD-3-Clause
 * The device counters under the names RDMA dashboards read: the hardware counters of mlx5, as `rdma
 * statistic` and /sys/class/infiniband/.../hw_counters show them, each made of softrnic's own counters
 * (the table of names: doc/engine.md, "Observability"). rnic_query_device_counters lists them after
 * softrnic's names, which stay as they are.
 */
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "rnic_priv.h"

/* An mlx5 name and the softrnic counters (at most two) whose sum it is. */
struct rnic_hw_counter {
	const char *name;
	const char *from[2];
};

static const struct rnic_hw_counter hw_counters[] = {
	/* Responder (the receiving side of requests). out_of_sequence has the same name and meaning in both. */
	{ "duplicate_request", { "duplicates" } },
	{ "out_of_buffer", { "recv_wqe_missing" } },
	{ "resp_local_length_error", { "recv_length_errors" } },
	{ "resp_remote_access_errors", { "access_naks_sent" } },
	/* rx_write_requests, rx_read_requests, rx_atomic_requests: softrnic counts them under those names. */
	/* Requester. */
	{ "packet_seq_err", { "seq_naks_received" } },
	{ "implied_nak_seq_err", { "read_gaps" } },
	{ "local_ack_timeout_err", { "timeouts" } },
	{ "rnr_nak_retry_err", { "rnr_retries_exceeded" } },
	{ "req_remote_invalid_request", { "inv_req_naks_received" } },
	{ "req_remote_access_errors", { "access_naks_received" } },
	/* Congestion (DCQCN, doc/congestion.md): the notification point's CE-marked packets and CNPs, the
	 * reaction point's CNPs acted on and ignored. */
	{ "np_ecn_marked_roce_packets", { "ecn_marked" } },
	{ "np_cnp_sent", { "cnp_sent" } },
	{ "rp_cnp_handled", { "cnp_handled" } },
	{ "rp_cnp_ignored", { "cnp_ignored" } },
	/* Port: RoCE frames dropped for a bad ICRC. */
	{ "rx_icrc_encapsulated", { "rx_drop_bad_icrc" } },
};

unsigned int
rnic_hw_counter_count(void)
{
	RTE_BUILD_BUG_ON(RTE_DIM(hw_counters) > RNIC_HW_COUNTERS_MAX);
	return RTE_DIM(hw_counters);
}

void
rnic_hw_counter(unsigned int i, const struct rnic_counter *base, unsigned int nb_base, struct rnic_counter *out)
{
	const struct rnic_hw_counter *hw = &hw_counters[i];

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", hw->name);
	for (unsigned int k = 0; k < RTE_DIM(hw->from) && hw->from[k] != NULL; k++)
		for (unsigned int b = 0; b < nb_base; b++)
			if (strcmp(base[b].name, hw->from[k]) == 0)
				out->value += base[b].value;
}
