/* SPDX-License-Identifier: BSD-3-Clause
 * The common start and end of engine tests: the engine up with the test's arguments, the first device
 * opened.
 */
#ifndef TEST_ENV_H
#define TEST_ENV_H

#include "rnic.h"

static inline struct rnic_context *
test_env_open(int argc, char **argv)
{
	struct rnic_device **list;
	struct rnic_context *ctx;

	if (rnic_engine_init(argc, argv) < 0)
		return NULL;
	list = rnic_get_device_list(NULL);
	ctx = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	rnic_free_device_list(list);
	return ctx;
}

static inline int
test_env_close(struct rnic_context *ctx)
{
	rnic_close_device(ctx);
	return rnic_engine_fini();
}

#endif /* TEST_ENV_H */
