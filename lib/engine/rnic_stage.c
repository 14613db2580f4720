/* SPDX-License-Identifier: BSD-3-Clause
 * The engine's stage table and edges, and the topology that places them, builds their rings and checks them
 * (rnic_stage.h).
 */
#include <errno.h>
#include <string.h>

#include <rte_ring.h>

#include "rnic_doorbell.h"
#include "rnic_parser.h"
#include "rnic_pipeline.h"
#include "rnic_requester.h"
#include "rnic_responder.h"
#include "rnic_stage.h"

const struct rnic_edge_desc rnic_edges[RNIC_EDGE_MAX] = {
	[RNIC_EDGE_SLOT] = { "slot", sizeof(uint32_t), offsetof(struct rnic_pipeline, slot_ring), 0, 0 },
	[RNIC_EDGE_REQUEST] = { "req", sizeof(struct rte_mbuf *), offsetof(struct rnic_pipeline, request_ring), 1, 0 },
	[RNIC_EDGE_RESPONSE] = { "rsp", sizeof(struct rte_mbuf *), offsetof(struct rnic_pipeline, response_ring),
				 1, 0 },
	[RNIC_EDGE_FLUSH] = { "flush", sizeof(uint32_t), offsetof(struct rnic_pipeline, flush_ring), 0, 0 },
	/* The control path gives a reset or destroyed QP's kept frames back (rnic_pipeline_release_qp). */
	[RNIC_EDGE_RTX_RECLAIM] = { "rtx", sizeof(uint32_t), offsetof(struct rnic_pipeline, rtx_reclaim), 0, 1 },
};

/*
 * The stages' ranks order an lcore's poll loop so that a frame goes through as much of the pipeline as it can
 * in one pass, and the requester builds its frames last, with what came back already taken into account: a
 * NAK or an ACK the port received is parsed and handled by the completer before the requester sends more
 * (polled first, it sent another budget of frames behind a loss before the NAK was even parsed: all of them
 * sent again by the go-back-N), and a doorbell rung meanwhile is seen in the same pass.
 */
const struct rnic_stage_desc rnic_stages[RNIC_STAGE_MAX] = {
	[RNIC_STAGE_DOORBELL] = {
		.name = "doorbell", .poll = rnic_stage_doorbell, .scope = RNIC_STAGE_PER_DEVICE,
		.counters = RNIC_STAGE_DOORBELL, .lat = RNIC_LAT_REQUESTER,
		.writes = RNIC_EDGE(RNIC_EDGE_SLOT), .with = RNIC_STAGE_ALONE, .rank = 3,
	},
	[RNIC_STAGE_REQUESTER] = {
		.name = "requester", .poll = rnic_stage_requester, .scope = RNIC_STAGE_PER_SHARD,
		.counters = RNIC_STAGE_REQUESTER, .lat = RNIC_LAT_REQUESTER,
		.reads = RNIC_EDGE(RNIC_EDGE_SLOT) | RNIC_EDGE(RNIC_EDGE_RTX_RECLAIM),
		.writes = RNIC_EDGE(RNIC_EDGE_FLUSH), .with = RNIC_STAGE_ALONE, .rank = 4,
	},
	[RNIC_STAGE_PARSER] = {
		.name = "parser", .poll = rnic_stage_parser, .scope = RNIC_STAGE_PER_SHARD,
		.counters = RNIC_STAGE_PARSER, .lat = RNIC_LAT_PARSER,
		.writes = RNIC_EDGE(RNIC_EDGE_REQUEST) | RNIC_EDGE(RNIC_EDGE_RESPONSE), .with = RNIC_STAGE_ALONE,
		.rank = 0, .routes = 1,
	},
	[RNIC_STAGE_RESPONDER] = {
		.name = "responder", .poll = rnic_stage_responder, .scope = RNIC_STAGE_PER_SHARD,
		.counters = RNIC_STAGE_RESPONDER, .lat = RNIC_LAT_RESPONDER,
		.reads = RNIC_EDGE(RNIC_EDGE_REQUEST) | RNIC_EDGE(RNIC_EDGE_FLUSH), .with = RNIC_STAGE_ALONE,
		.rank = 2,
	},
	/* The completer works on the requester's QP contexts (una, in-flight WQEs, timers): same lcore. */
	[RNIC_STAGE_COMPLETER] = {
		.name = "completer", .poll = rnic_stage_completer, .scope = RNIC_STAGE_PER_SHARD,
		.counters = RNIC_STAGE_COMPLETER, .lat = RNIC_LAT_COMPLETER,
		.reads = RNIC_EDGE(RNIC_EDGE_RESPONSE), .with = RNIC_STAGE_REQUESTER, .rank = 1,
	},
};

void
rnic_topology_init(struct rnic_topology *t, uint16_t nb_shards)
{
	memset(t, 0, sizeof(*t));
	t->stages = rnic_stages;
	t->nb_stages = RNIC_STAGE_MAX;
	t->nb_shards = nb_shards;
	for (unsigned int s = 0; s < RNIC_TOPO_MAX_STAGES; s++)
		for (unsigned int k = 0; k < RNIC_MAX_SHARDS; k++)
			t->lcore[s][k] = RNIC_TOPO_NO_LCORE;
}

unsigned int
rnic_topology_instances(const struct rnic_topology *t, unsigned int st)
{
	return t->stages[st].scope == RNIC_STAGE_PER_DEVICE ? 1 : t->nb_shards;
}

/* Add lcore lc to the n distinct ones in seen[]; returns the new count. */
static unsigned int
add_distinct(uint32_t *seen, unsigned int n, uint32_t lc)
{
	for (unsigned int i = 0; i < n; i++)
		if (seen[i] == lc)
			return n;
	seen[n] = lc;
	return n + 1;
}

/* The lcores of the stage instances that write (or read) edge e of shard `shard`, distinct: how many. A
 * routing stage's every instance writes it. */
static unsigned int
edge_lcores(const struct rnic_topology *t, enum rnic_edge_id e, uint16_t shard, int writers)
{
	uint32_t seen[RNIC_TOPO_MAX_STAGES * RNIC_MAX_SHARDS];
	unsigned int n = 0;

	for (unsigned int s = 0; s < t->nb_stages; s++) {
		const struct rnic_stage_desc *d = &t->stages[s];

		if (((writers ? d->writes : d->reads) & RNIC_EDGE(e)) == 0)
			continue;
		if (d->scope == RNIC_STAGE_PER_DEVICE)
			n = add_distinct(seen, n, t->lcore[s][0]);
		else if (writers && d->routes)
			for (uint16_t k = 0; k < t->nb_shards; k++)
				n = add_distinct(seen, n, t->lcore[s][k]);
		else
			n = add_distinct(seen, n, t->lcore[s][shard]);
	}
	return n;
}

unsigned int
rnic_topology_ring_flags(const struct rnic_topology *t, enum rnic_edge_id e, uint16_t shard)
{
	unsigned int flags = 0;

	if (!rnic_edges[e].control_producers && edge_lcores(t, e, shard, 1) <= 1)
		flags |= RING_F_SP_ENQ;
	if (edge_lcores(t, e, shard, 0) <= 1)
		flags |= RING_F_SC_DEQ;
	return flags;
}

/* Every instance of every stage on an lcore (a stage without one would never be polled), stages that share
 * state on one lcore. */
static int
check_placement(const struct rnic_topology *t)
{
	for (unsigned int s = 0; s < t->nb_stages; s++) {
		const struct rnic_stage_desc *d = &t->stages[s];

		for (unsigned int k = 0; k < rnic_topology_instances(t, s); k++) {
			if (t->lcore[s][k] >= RTE_MAX_LCORE) {
				RNIC_LOG(ERR, "stage %s: instance %u has no lcore: nothing would poll it", d->name, k);
				return -EINVAL;
			}
			if (d->with == RNIC_STAGE_ALONE)
				continue;
			if (d->with < 0 || (unsigned int)d->with >= t->nb_stages ||
			    t->stages[d->with].scope != d->scope || t->lcore[d->with][k] != t->lcore[s][k]) {
				RNIC_LOG(ERR, "stage %s: instance %u must run on the lcore of its %s", d->name, k,
					 d->with >= 0 && (unsigned int)d->with < t->nb_stages ?
					 t->stages[d->with].name : "(no such stage)");
				return -EINVAL;
			}
		}
	}
	return 0;
}

int
rnic_topology_check(const struct rnic_topology *t)
{
	if (t->nb_stages > RNIC_TOPO_MAX_STAGES || t->nb_shards == 0 || t->nb_shards > RNIC_MAX_SHARDS) {
		RNIC_LOG(ERR, "topology: %u stages over %u shards (at most %u over 1 to %u)", t->nb_stages,
			 t->nb_shards, RNIC_TOPO_MAX_STAGES, RNIC_MAX_SHARDS);
		return -EINVAL;
	}
	if (check_placement(t) != 0)
		return -EINVAL;
	/* Every ring the pipeline has is written and read, or frames would pile up in it, or a stage wait on
	 * it forever. */
	for (unsigned int e = 0; e < RNIC_EDGE_MAX; e++) {
		if (!rnic_edges[e].control_producers && edge_lcores(t, e, 0, 1) == 0) {
			RNIC_LOG(ERR, "topology: no stage writes the %s ring", rnic_edges[e].name);
			return -EINVAL;
		}
		if (edge_lcores(t, e, 0, 0) == 0) {
			RNIC_LOG(ERR, "topology: no stage reads the %s ring", rnic_edges[e].name);
			return -EINVAL;
		}
	}
	return 0;
}

int
rnic_topology_build(struct rnic_device *dev, struct rte_mempool *pool, const struct rnic_topology *t)
{
	int ret = rnic_topology_check(t);

	if (ret != 0)
		return ret;
	/* The pipelines size their retransmit buffers by the shard count: set it first. */
	dev->nb_shards = t->nb_shards;
	for (uint16_t k = 0; k < t->nb_shards; k++) {
		unsigned int flags[RNIC_EDGE_MAX];

		for (unsigned int e = 0; e < RNIC_EDGE_MAX; e++)
			flags[e] = rnic_topology_ring_flags(t, (enum rnic_edge_id)e, k);
		ret = rnic_pipeline_create(dev, pool, k, flags, &dev->pipeline[k]);
		if (ret == 0)
			continue;
		while (k-- > 0) {
			rnic_pipeline_free(dev->pipeline[k]);
			dev->pipeline[k] = NULL;
		}
		dev->nb_shards = 0;
		return ret;
	}
	return 0;
}

/* The indexes of t's stages by rank, the table's order among equal ranks. */
static void
poll_order(const struct rnic_topology *t, unsigned int order[RNIC_TOPO_MAX_STAGES])
{
	unsigned int n = 0;

	for (unsigned int rank = 0; rank <= UINT8_MAX; rank++)
		for (unsigned int s = 0; s < t->nb_stages; s++)
			if (t->stages[s].rank == rank)
				order[n++] = s;
}

int
rnic_topology_start(struct rnic_device *dev, const struct rnic_topology *t,
		    int (*add)(unsigned int lcore_id, const struct rnic_stage *stage))
{
	unsigned int order[RNIC_TOPO_MAX_STAGES];

	poll_order(t, order);
	for (unsigned int i = 0; i < t->nb_stages; i++) {
		unsigned int s = order[i];

		for (unsigned int k = 0; k < rnic_topology_instances(t, s); k++) {
			const struct rnic_stage stage = {
				.name = t->stages[s].name,
				.poll = t->stages[s].poll,
				.arg = dev->pipeline[t->stages[s].scope == RNIC_STAGE_PER_DEVICE ? 0 : k],
			};
			int ret = add(t->lcore[s][k], &stage);

			if (ret != 0)
				return ret;
		}
	}
	return 0;
}
