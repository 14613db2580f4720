/* SPDX-License-Identifier: BSD-3-Clause
 * The data plane as declared stages (in the shape of DPDK's graph nodes): each stage says what it is called,
 * what it polls, which counters it writes and which rings (edges) it reads and writes; a topology places the
 * stages' instances on lcores, and from it the rings are built (single- or multi-producer as the placement
 * needs) and checked (doc/engine.md, "Stages and topology").
 *
 *   host doorbells -> [doorbell] -slot-> [requester, completer] -flush-> [responder]
 *   port RX -> [parser] -request-> [responder] -> port TX
 *                       -response-> [completer]
 *   control threads -rtx_reclaim-> [requester]
 *
 * The doorbell stage serves the whole device (one instance, given shard 0's pipeline) and writes every
 * shard's ring; the others have one instance per shard. Each parser reads its shard's RX queues and routes
 * (writes any shard's rings: a frame RSS put on another shard's queue); the rest read and write their
 * shard's rings.
 */
#ifndef RNIC_STAGE_H
#define RNIC_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <rte_mempool.h>
#include <rte_ring.h>

#include "rnic_latency.h"
#include "rnic_priv.h"

/* The engine's stages (their counters: struct rnic_pipeline's stats[] by this index). */
enum rnic_stage_id {
	RNIC_STAGE_DOORBELL,
	RNIC_STAGE_REQUESTER,
	RNIC_STAGE_PARSER,
	RNIC_STAGE_RESPONDER,
	RNIC_STAGE_COMPLETER,
	RNIC_STAGE_MAX
};

/* The pipeline's rings: the edges of the stage graph. */
enum rnic_edge_id {
	RNIC_EDGE_SLOT,		/* QP slots with new WQEs */
	RNIC_EDGE_REQUEST,	/* request frames */
	RNIC_EDGE_RESPONSE,	/* response frames */
	RNIC_EDGE_FLUSH,	/* QP slots in error whose receive queue to flush */
	RNIC_EDGE_RTX_RECLAIM,	/* kept-frame lists of QPs reset or destroyed */
	RNIC_EDGE_MAX
};

#define RNIC_EDGE(e) (1u << (e))

struct rnic_edge_desc {
	const char *name;		/* the ring's name stem */
	uint32_t esize;			/* bytes per element */
	size_t field;			/* where struct rnic_pipeline keeps the ring */
	uint8_t mbufs;			/* it carries mbufs (freed with the pipeline) */
	uint8_t control_producers;	/* control threads enqueue too (always multi-producer) */
};

extern const struct rnic_edge_desc rnic_edges[RNIC_EDGE_MAX];

enum rnic_stage_scope {
	RNIC_STAGE_PER_SHARD,		/* one instance per shard, on the shard's rings */
	RNIC_STAGE_PER_DEVICE,		/* one instance (shard 0's pipeline), writing every shard's rings */
};

#define RNIC_STAGE_ALONE (-1)

struct rnic_stage_desc {
	const char *name;
	unsigned int (*poll)(void *pipeline, unsigned int budget);	/* budget units of work at most */
	enum rnic_stage_scope scope;
	unsigned int counters;		/* its index in the pipeline's stats[] */
	enum rnic_lat_stage lat;	/* its latency histograms */
	uint32_t reads;			/* RNIC_EDGE() bits */
	uint32_t writes;
	int with;			/* a stage whose state it shares: on the same lcore (else RNIC_STAGE_ALONE) */
	uint8_t rank;			/* its place in its lcore's poll loop: lower ranks first */
	uint8_t routes;			/* per shard, but writes every shard's rings */
};

/*
 * Enqueue one element on, or dequeue a burst from, a ring the topology built: single- or multi-producer
 * (-consumer) as the ring was made. The topology makes no RTS or HTS ring, so two paths where rte_ring's
 * flag-following calls inline four.
 */
static __rte_always_inline int
rnic_edge_enqueue(struct rte_ring *r, void *obj, unsigned int esize)
{
	return likely(r->prod.sync_type == RTE_RING_SYNC_ST) ? rte_ring_sp_enqueue_elem(r, obj, esize) :
							      rte_ring_mp_enqueue_elem(r, obj, esize);
}

static __rte_always_inline unsigned int
rnic_edge_dequeue_burst(struct rte_ring *r, void *obj_table, unsigned int esize, unsigned int n)
{
	return likely(r->cons.sync_type == RTE_RING_SYNC_ST) ?
	       rte_ring_sc_dequeue_burst_elem(r, obj_table, esize, n, NULL) :
	       rte_ring_mc_dequeue_burst_elem(r, obj_table, esize, n, NULL);
}

/* The engine's stage table, by enum rnic_stage_id. */
extern const struct rnic_stage_desc rnic_stages[RNIC_STAGE_MAX];

#define RNIC_TOPO_MAX_STAGES 8
#define RNIC_TOPO_NO_LCORE UINT32_MAX

/* Where each stage instance runs: a device's placement of a stage table. */
struct rnic_topology {
	const struct rnic_stage_desc *stages;
	unsigned int nb_stages;
	uint16_t nb_shards;
	uint32_t lcore[RNIC_TOPO_MAX_STAGES][RNIC_MAX_SHARDS];	/* per stage, per instance */
};

/* A topology of the engine's stages over nb_shards shards, no instance placed yet. */
void rnic_topology_init(struct rnic_topology *t, uint16_t nb_shards);

/* Stage st's instances (1 or nb_shards). */
unsigned int rnic_topology_instances(const struct rnic_topology *t, unsigned int st);

/*
 * Check a topology: every instance placed, every edge with a producer and a consumer, stages that share state
 * on one lcore. 0 or -EINVAL (the reason logged).
 */
int rnic_topology_check(const struct rnic_topology *t);

/* The rte_ring flags of edge e of shard `shard`: single-producer (single-consumer) when the stage instances
 * that write (read) it all run on one lcore. */
unsigned int rnic_topology_ring_flags(const struct rnic_topology *t, enum rnic_edge_id e, uint16_t shard);

/* Check the topology and build the device's pipelines (one per shard, its rings as the topology needs).
 * 0, -EINVAL or -ENOMEM (the pipelines made are freed). */
int rnic_topology_build(struct rnic_device *dev, struct rte_mempool *pool, const struct rnic_topology *t);

/* Hand every stage instance of a built device to the runtime (add: rnic_engine_add_stage), the stages by rank
 * (the table's order among equal ranks): each lcore polls its stages in the order they were added. 0 or
 * add's error. */
int rnic_topology_start(struct rnic_device *dev, const struct rnic_topology *t,
			int (*add)(unsigned int lcore_id, const struct rnic_stage *stage));

#endif /* RNIC_STAGE_H */
