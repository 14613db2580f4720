/* SPDX-License-Identifier: BSD-3-Clause
 * The registered verbs providers and the one the process uses (rnic_provider.h).
 */
#include <stddef.h>

#include "rnic_provider.h"

static const struct rnic_provider *registered[2];	/* [remote] */
static const struct rnic_provider *active;

void
rnic_provider_register(const struct rnic_provider *provider)
{
	registered[provider->remote != 0] = provider;
}

const struct rnic_provider *
rnic_provider_find(int remote)
{
	return registered[remote != 0];
}

const struct rnic_provider *
rnic_provider_get(void)
{
	return __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

void
rnic_provider_set(const struct rnic_provider *provider)
{
	__atomic_store_n(&active, provider, __ATOMIC_RELEASE);
}

int
rnic_provider_remote(void)
{
	const struct rnic_provider *p = rnic_provider_get();

	return p != NULL && p->remote;
}
