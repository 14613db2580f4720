/* SPDX-License-Identifier: BSD-3-Clause
 * The declared stages and their topology (rnic_stage.h): the checks that refuse a stage no lcore polls, a ring
 * nothing writes or reads, and stages that share state apart; the ring flags a placement needs (a ring two
 * lcores write is multi-producer); and a device's pipelines built and its stages handed to the runtime.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ring.h>

#include "rnic_pipeline.h"
#include "rnic_stage.h"
#include "test_env.h"

static int g_argc;
static char **g_argv;

/* The engine's stages over nb_shards shards, every instance of stage st on lcore[st] + its shard. */
static void
place(struct rnic_topology *t, uint16_t nb_shards, const uint32_t lcore[RNIC_STAGE_MAX])
{
	rnic_topology_init(t, nb_shards);
	for (unsigned int st = 0; st < RNIC_STAGE_MAX; st++)
		for (unsigned int k = 0; k < rnic_topology_instances(t, st) && k < RNIC_MAX_SHARDS; k++)
			t->lcore[st][k] = lcore[st] + k;
}

static const uint32_t split[RNIC_STAGE_MAX] = {
	[RNIC_STAGE_DOORBELL] = 1, [RNIC_STAGE_REQUESTER] = 2, [RNIC_STAGE_PARSER] = 3,
	[RNIC_STAGE_RESPONDER] = 4, [RNIC_STAGE_COMPLETER] = 2,
};

/* The engine's maps check, and their rings are single-producer, single-consumer but where control threads
 * give lists back. */
static void
test_engine_maps(void **state)
{
	static const uint32_t one[RNIC_STAGE_MAX] = { 1, 1, 1, 1, 1 };
	struct rnic_topology t;

	(void)state;
	for (uint16_t shards = 1; shards <= 2; shards++) {
		place(&t, shards, shards == 1 ? one : split);
		t.lcore[RNIC_STAGE_PARSER][1] = t.lcore[RNIC_STAGE_PARSER][0];	/* the map's one parser lcore */
		assert_int_equal(rnic_topology_check(&t), 0);
		for (uint16_t k = 0; k < shards; k++) {
			for (unsigned int e = 0; e < RNIC_EDGE_MAX; e++)
				assert_int_equal(rnic_topology_ring_flags(&t, (enum rnic_edge_id)e, k),
						 e == RNIC_EDGE_RTX_RECLAIM ? RING_F_SC_DEQ :
						 RING_F_SP_ENQ | RING_F_SC_DEQ);
		}
	}
}

/* Each shard's parser on its own lcore ("shards"): any parser may hand a frame to any shard, so the frame
 * rings are multi-producer; the rest stay single. */
static void
test_parser_per_shard(void **state)
{
	static const uint32_t shards[RNIC_STAGE_MAX] = { 1, 1, 1, 1, 1 };
	struct rnic_topology t;

	(void)state;
	place(&t, 2, shards);	/* shard k's stages on lcore 1 + k, the doorbell on 1 */
	assert_int_equal(rnic_topology_instances(&t, RNIC_STAGE_PARSER), 2);
	assert_int_equal(rnic_topology_check(&t), 0);
	for (uint16_t k = 0; k < 2; k++) {
		for (unsigned int e = 0; e < RNIC_EDGE_MAX; e++)
			assert_int_equal(rnic_topology_ring_flags(&t, (enum rnic_edge_id)e, k),
					 e == RNIC_EDGE_REQUEST || e == RNIC_EDGE_RESPONSE ||
					 e == RNIC_EDGE_RTX_RECLAIM ? RING_F_SC_DEQ : RING_F_SP_ENQ | RING_F_SC_DEQ);
	}
	t.lcore[RNIC_STAGE_PARSER][1] = RNIC_TOPO_NO_LCORE;	/* shard 1's RX queues unread */
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
}

/* Every stage instance needs an lcore; the completer shares the requester's QP contexts, so its lcore. */
static void
test_placement_checked(void **state)
{
	struct rnic_topology t;

	(void)state;
	place(&t, 2, split);
	t.lcore[RNIC_STAGE_RESPONDER][1] = RNIC_TOPO_NO_LCORE;
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
	place(&t, 2, split);
	t.lcore[RNIC_STAGE_COMPLETER][1] = 9;
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
	place(&t, 0, split);
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
	place(&t, RNIC_MAX_SHARDS + 1, split);
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
}

static unsigned int
idle_poll(void *pipeline, unsigned int budget)
{
	(void)pipeline;
	(void)budget;
	return 0;
}

/* A table of the engine's edges: a writes the slot and flush rings, b reads them and writes the frame rings,
 * c reads those and the reclaim ring. */
static void
toy_table(struct rnic_stage_desc s[3])
{
	const struct rnic_stage_desc toy = {
		.poll = idle_poll, .scope = RNIC_STAGE_PER_SHARD, .with = RNIC_STAGE_ALONE,
	};

	for (int i = 0; i < 3; i++)
		s[i] = toy;
	s[0].name = "a";
	s[0].writes = RNIC_EDGE(RNIC_EDGE_SLOT) | RNIC_EDGE(RNIC_EDGE_FLUSH);
	s[1].name = "b";
	s[1].reads = RNIC_EDGE(RNIC_EDGE_SLOT) | RNIC_EDGE(RNIC_EDGE_FLUSH);
	s[1].writes = RNIC_EDGE(RNIC_EDGE_REQUEST) | RNIC_EDGE(RNIC_EDGE_RESPONSE);
	s[2].name = "c";
	s[2].reads = RNIC_EDGE(RNIC_EDGE_REQUEST) | RNIC_EDGE(RNIC_EDGE_RESPONSE) | RNIC_EDGE(RNIC_EDGE_RTX_RECLAIM);
}

static void
toy_topology(struct rnic_topology *t, const struct rnic_stage_desc *s)
{
	rnic_topology_init(t, 1);
	t->stages = s;
	t->nb_stages = 3;
	t->lcore[0][0] = 1;
	t->lcore[1][0] = 2;
	t->lcore[2][0] = 3;
}

/* A ring that two stages write is multi-producer when they run on two lcores, single-producer on one; the
 * same for readers. */
static void
test_ring_flags_follow_placement(void **state)
{
	struct rnic_stage_desc s[3];
	struct rnic_topology t;

	(void)state;
	toy_table(s);
	s[2].writes = RNIC_EDGE(RNIC_EDGE_SLOT);	/* a second producer of the slot ring */
	s[2].reads |= RNIC_EDGE(RNIC_EDGE_FLUSH);	/* a second consumer of the flush ring */
	toy_topology(&t, s);
	assert_int_equal(rnic_topology_check(&t), 0);
	assert_int_equal(rnic_topology_ring_flags(&t, RNIC_EDGE_SLOT, 0), RING_F_SC_DEQ);
	assert_int_equal(rnic_topology_ring_flags(&t, RNIC_EDGE_FLUSH, 0), RING_F_SP_ENQ);
	assert_int_equal(rnic_topology_ring_flags(&t, RNIC_EDGE_REQUEST, 0), RING_F_SP_ENQ | RING_F_SC_DEQ);
	t.lcore[2][0] = t.lcore[0][0];	/* c beside a: one producer lcore again */
	assert_int_equal(rnic_topology_ring_flags(&t, RNIC_EDGE_SLOT, 0), RING_F_SP_ENQ | RING_F_SC_DEQ);
	t.lcore[2][0] = t.lcore[1][0];	/* c beside b: one consumer lcore for the flush ring */
	assert_int_equal(rnic_topology_ring_flags(&t, RNIC_EDGE_FLUSH, 0), RING_F_SP_ENQ | RING_F_SC_DEQ);
}

/* A ring nothing writes, or nothing reads, is refused. */
static void
test_edges_checked(void **state)
{
	struct rnic_stage_desc s[3];
	struct rnic_topology t;

	(void)state;
	toy_table(s);
	toy_topology(&t, s);
	assert_int_equal(rnic_topology_check(&t), 0);
	s[1].reads &= ~RNIC_EDGE(RNIC_EDGE_FLUSH);	/* the flush ring read by no one */
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
	toy_table(s);
	s[1].writes &= ~RNIC_EDGE(RNIC_EDGE_RESPONSE);	/* the response ring written by no one */
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
	toy_table(s);
	s[2].reads &= ~RNIC_EDGE(RNIC_EDGE_RTX_RECLAIM);	/* control threads write it, no stage reads it */
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
	toy_table(s);
	s[2].with = 0;		/* shares a's state but runs elsewhere */
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
	s[2].with = 7;		/* no such stage */
	assert_int_equal(rnic_topology_check(&t), -EINVAL);
}

struct added {
	unsigned int lcore;
	struct rnic_stage stage;
};

static struct added added[RNIC_STAGE_MAX * RNIC_MAX_SHARDS];
static unsigned int nb_added;

static int
record_stage(unsigned int lcore_id, const struct rnic_stage *stage)
{
	added[nb_added++] = (struct added){ .lcore = lcore_id, .stage = *stage };
	return 0;
}

/* A device built from a two-shard topology: a pipeline per shard whose rings have the topology's flags, and
 * every stage instance handed to the runtime on its lcore with its pipeline, in poll order (what the port
 * received parsed and handled before the requester sends more). */
static void
test_build_and_start(void **state)
{
	struct rnic_context *ctx = test_env_open(g_argc, g_argv);
	struct rnic_device *dev = ctx != NULL ? rnic_ctx_dev(ctx) : NULL;
	struct rte_mempool *pool;
	static const enum rnic_stage_id polled[RNIC_STAGE_MAX] = {
		RNIC_STAGE_PARSER, RNIC_STAGE_COMPLETER, RNIC_STAGE_RESPONDER, RNIC_STAGE_DOORBELL,
		RNIC_STAGE_REQUESTER,
	};
	struct rnic_topology t;
	unsigned int i = 0;

	(void)state;
	assert_non_null(dev);
	pool = rte_pktmbuf_pool_create("stage_test", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(pool);
	assert_int_equal(dev->nb_shards, 0);
	place(&t, 2, split);
	t.lcore[RNIC_STAGE_REQUESTER][0] = RNIC_TOPO_NO_LCORE;
	assert_int_equal(rnic_topology_build(dev, pool, &t), -EINVAL);	/* nothing built */
	assert_int_equal(dev->nb_shards, 0);
	place(&t, 2, split);
	assert_int_equal(rnic_topology_build(dev, pool, &t), 0);
	assert_int_equal(dev->nb_shards, 2);
	for (uint16_t k = 0; k < 2; k++) {
		assert_int_equal(dev->pipeline[k]->slot_ring->prod.sync_type, RTE_RING_SYNC_ST);
		assert_int_equal(dev->pipeline[k]->request_ring->cons.sync_type, RTE_RING_SYNC_ST);
		assert_int_equal(dev->pipeline[k]->rtx_reclaim->prod.sync_type, RTE_RING_SYNC_MT);
	}
	assert_int_equal(rnic_topology_start(dev, &t, record_stage), 0);
	assert_int_equal(nb_added, 1 + 2 + 2 + 2 + 2);	/* the doorbell once, the rest per shard */
	for (unsigned int j = 0; j < RNIC_STAGE_MAX; j++) {
		unsigned int st = polled[j];

		for (unsigned int k = 0; k < rnic_topology_instances(&t, st); k++, i++) {
			assert_string_equal(added[i].stage.name, rnic_stages[st].name);
			assert_ptr_equal(added[i].stage.poll, rnic_stages[st].poll);
			assert_int_equal(added[i].lcore, split[st] + k);
			/* The device-wide stages work from shard 0's pipeline. */
			assert_ptr_equal(added[i].stage.arg, dev->pipeline[k]);
		}
	}
	assert_int_equal(test_env_close(ctx), 0);	/* the device frees its pipelines */
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_maps),
		cmocka_unit_test(test_parser_per_shard),
		cmocka_unit_test(test_placement_checked),
		cmocka_unit_test(test_ring_flags_follow_placement),
		cmocka_unit_test(test_edges_checked),
		cmocka_unit_test(test_build_and_start),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("stage", tests, NULL, NULL);
}
