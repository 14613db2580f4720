/* SPDX-License-Identifier: BSD-3-Clause
 * A device pipeline that no engine lcore runs (the engine started with one lcore): the test or fuzz harness
 * builds it and polls its stages itself, frame by frame.
 */
#ifndef TEST_PIPELINE_H
#define TEST_PIPELINE_H

#include "rnic_doorbell.h"
#include "rnic_parser.h"
#include "rnic_pipeline.h"
#include "rnic_requester.h"
#include "rnic_responder.h"
#include "rnic_priv.h"

/* Give the context's device one pipeline whose frames come from pool. NULL on failure. */
static inline struct rnic_pipeline *
test_pipeline_attach(struct rnic_context *ctx, struct rte_mempool *pool)
{
	struct rnic_device *dev = rnic_ctx_dev(ctx);

	if (dev->nb_shards != 0 || rnic_pipeline_create(dev, pool, 0, NULL, &dev->pipeline[0]) != 0)
		return NULL;
	dev->nb_shards = 1;	/* the engine frees it with the device */
	return dev->pipeline[0];
}

/* Run every stage once, each doing at most budget units of work. Returns the work the stages did (0: they
 * had nothing to do). */
static inline unsigned int
test_pipeline_step(struct rnic_pipeline *p, unsigned int budget)
{
	return rnic_stage_doorbell(p, budget) + rnic_stage_requester(p, budget) + rnic_stage_parser(p, budget) +
	       rnic_stage_completer(p, budget) + rnic_stage_responder(p, budget);
}

/* Run every stage a few rounds: what was posted or received is handled, what the device sends is sent.
 * Returns the work the stages did (0: they had nothing to do). */
static inline unsigned int
test_pipeline_pump(struct rnic_pipeline *p)
{
	unsigned int work = 0;

	for (int i = 0; i < 4; i++)
		work += test_pipeline_step(p, 64);
	return work;
}

#endif /* TEST_PIPELINE_H */
