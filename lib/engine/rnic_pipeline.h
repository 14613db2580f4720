/* SPDX-License-Identifier: BSD-3-Clause
 * The engine's pipeline for one device: the stages of the seed's RDMA engine (seed 003 §1.1) as poll
 * functions linked by rte_rings, their counters, and the stage -> lcore map.
 *
 *   doorbell ring -> [doorbell] -> qpn ring -> [requester: WQE scheduling + parse, DataPack gather,
 *                                               transmit control, request packet generation] -> port TX
 *   port RX -> [parser: header parser] -> request ring  -> [responder: execution engine, response
 *                                                            packet generation] -> port TX
 *                                      -> response ring -> [completer: requester receive control, CQ]
 *
 * The requester and the completer of a QP share its requester state, so they run on the same lcore; every
 * other pair of stages may run on different lcores. Each stage instance owns the QPs of its shard
 * (qpn % nb_shards), so no QP state is ever touched by two lcores.
 */
#ifndef RNIC_PIPELINE_H
#define RNIC_PIPELINE_H

#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "rnic_priv.h"
#include "rnic_wire.h"

#define RNIC_BURST 32

enum rnic_stage_id {
	RNIC_STAGE_DOORBELL,
	RNIC_STAGE_REQUESTER,
	RNIC_STAGE_PARSER,
	RNIC_STAGE_RESPONDER,
	RNIC_STAGE_COMPLETER,
	RNIC_STAGE_MAX
};

extern const char *const rnic_stage_names[RNIC_STAGE_MAX];

/* Per-device counters of the header parser (drops by reason) and of the port. */
struct rnic_parser_stats {
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t requests;
	uint64_t responses;
	uint64_t drops[RNIC_DROP_REASON_MAX];
	uint64_t ring_full;		/* parsed, but the next stage's ring was full */
};

/* Metadata the parser leaves in each mbuf it passes on (an mbuf dynfield). */
struct rnic_pkt_meta {
	uint16_t l3_off;
	uint16_t bth_off;
	uint32_t payload_off;
	uint32_t payload_len;
	uint8_t opcode;
	uint8_t ip_version;
};

extern int rnic_pkt_meta_offset;

static inline struct rnic_pkt_meta *
rnic_pkt_meta(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, rnic_pkt_meta_offset, struct rnic_pkt_meta *);
}

/* Register the mbuf dynfield (once per process, before any stage runs). */
int rnic_pkt_meta_register(void);

#endif /* RNIC_PIPELINE_H */
