/* SPDX-License-Identifier: BSD-3-Clause
 * The stage map (--stages): which lcores run each stage, and the pipelines the devices get by it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rnic_runtime.h"
#include "rnic_stage.h"

/* The n-th worker lcore, or RTE_MAX_LCORE. */
static unsigned int
worker(unsigned int n)
{
	unsigned int lcore_id;

	RTE_LCORE_FOREACH_WORKER(lcore_id)
		if (n-- == 0)
			return lcore_id;
	return RTE_MAX_LCORE;
}

/* The engine lcores in the order the "devices" map hands them to devices: the workers, then the main lcore
 * (whose stages run when the application calls rnic_engine_progress). Returns how many. */
static unsigned int
engine_lcore_order(unsigned int order[RTE_MAX_LCORE])
{
	unsigned int n = 0, lcore_id;

	RTE_LCORE_FOREACH_WORKER(lcore_id)
		order[n++] = lcore_id;
	order[n++] = rte_get_main_lcore();
	return n;
}

/* Place shard k's stages, its parser included, on lcore l; the doorbell stage (one per device) on shard 0's. */
static void
place_shard(struct rnic_stage_map *m, unsigned int k, unsigned int l)
{
	for (int st = 0; st < RNIC_STAGE_MAX; st++) {
		if (st == RNIC_STAGE_DOORBELL && k != 0)
			continue;
		m->lcore[st][k] = l;
		m->nb[st] = k + 1;
	}
}

/* "shards": one shard per worker lcore, each running its stages to completion; "shards=L+L+...": on the
 * lcores named (the main lcore among them runs its shard as manual progress). */
static int
parse_shards(const char *map, struct rnic_stage_map *m)
{
	char buf[256], *save;
	unsigned int k = 0, l;

	if (map[6] == '\0') {
		while (k < RNIC_MAX_SHARDS && (l = worker(k)) < RTE_MAX_LCORE)
			place_shard(m, k++, l);
		return k != 0 ? 0 : -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", map + 7);
	for (char *item = strtok_r(buf, "+", &save); item != NULL; item = strtok_r(NULL, "+", &save)) {
		if (k == RNIC_MAX_SHARDS || rnic_parse_u32("stages", item, 0, RTE_MAX_LCORE - 1, &l) != 0)
			return -EINVAL;
		place_shard(m, k++, l);
	}
	return k != 0 ? 0 : -EINVAL;
}

/* Read a stage map: a preset, or stage=L[+L...] items. */
static int
parse_stage_map(const char *map, struct rnic_stage_map *m)
{
	static const struct {
		const char *name;
		uint8_t worker[RNIC_STAGE_MAX];	/* by enum rnic_stage_id */
	} presets[] = {
		{ "one", { 0, 0, 0, 0, 0 } },
		{ "two", { 0, 0, 1, 1, 0 } },
		{ "split", { 0, 1, 2, 3, 1 } },
	};
	char buf[256], *save;

	memset(m, 0, sizeof(*m));
	if (strcmp(map, "host") == 0) {
		/* The stages that meet the host interface (doorbells and WQEs, CQEs) on the application's
		 * lcore, where the posts and polls keep those lines; the wire's (parser, responder) on a worker. */
		const uint8_t host[RNIC_STAGE_MAX] = {
			[RNIC_STAGE_DOORBELL] = 1, [RNIC_STAGE_REQUESTER] = 1, [RNIC_STAGE_COMPLETER] = 1,
		};

		for (int st = 0; st < RNIC_STAGE_MAX; st++) {
			m->nb[st] = 1;
			m->lcore[st][0] = host[st] ? rte_get_main_lcore() : worker(0);
		}
		return 0;
	}
	if (strcmp(map, "devices") == 0 || strncmp(map, "devices=", 8) == 0) {
		m->per_device = 1;
		for (int st = 0; st < RNIC_STAGE_MAX; st++) {
			m->nb[st] = 1;
			m->lcore[st][0] = rte_get_main_lcore();	/* checked as a stand-in for every device's */
		}
		if (map[7] == '\0')
			return 0;
		snprintf(buf, sizeof(buf), "%s", map + 8);
		for (char *l = strtok_r(buf, "+", &save); l != NULL; l = strtok_r(NULL, "+", &save)) {
			unsigned int *lc = &m->device_lcore[m->nb_device_lcores];

			if (m->nb_device_lcores == RNIC_MAX_DEVICES ||
			    rnic_parse_u32("stages", l, 0, RTE_MAX_LCORE - 1, lc) != 0 || !rte_lcore_is_enabled(*lc))
				return -EINVAL;
			m->nb_device_lcores++;
		}
		return m->nb_device_lcores != 0 ? 0 : -EINVAL;
	}
	if (strcmp(map, "shards") == 0 || strncmp(map, "shards=", 7) == 0)
		return parse_shards(map, m);
	for (unsigned int i = 0; i < RTE_DIM(presets); i++) {
		if (strcmp(map, presets[i].name) != 0)
			continue;
		for (int st = 0; st < RNIC_STAGE_MAX; st++) {
			m->nb[st] = 1;
			m->lcore[st][0] = worker(presets[i].worker[st]);
		}
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", map);
	for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *lsave;
		int st;

		for (st = 0; eq != NULL && st < RNIC_STAGE_MAX; st++)
			if ((size_t)(eq - item) == strlen(rnic_stages[st].name) &&
			    strncmp(item, rnic_stages[st].name, (size_t)(eq - item)) == 0)
				break;
		if (eq == NULL || st == RNIC_STAGE_MAX || m->nb[st] != 0)
			return -EINVAL;
		for (char *l = strtok_r(eq + 1, "+", &lsave); l != NULL; l = strtok_r(NULL, "+", &lsave)) {
			if (m->nb[st] == RNIC_MAX_SHARDS ||
			    rnic_parse_u32("stages", l, 0, RTE_MAX_LCORE - 1, &m->lcore[st][m->nb[st]]) != 0)
				return -EINVAL;
			m->nb[st]++;
		}
	}
	return 0;
}

static int
check_stage_map(const char *map, struct rnic_stage_map *m)
{
	for (int st = 0; st < RNIC_STAGE_MAX; st++) {
		if (m->nb[st] == 0) {
			RNIC_LOG(ERR, "--stages %s: no lcore for stage %s", map, rnic_stages[st].name);
			return -EINVAL;
		}
		for (unsigned int k = 0; k < m->nb[st]; k++) {
			unsigned int l = m->lcore[st][k];

			if (l >= RTE_MAX_LCORE || !rte_lcore_is_enabled(l)) {
				RNIC_LOG(ERR, "--stages %s: stage %s needs lcores of this EAL (-l)", map,
					 rnic_stages[st].name);
				return -EINVAL;
			}
		}
	}
	if (m->nb[RNIC_STAGE_DOORBELL] != 1) {
		RNIC_LOG(ERR, "--stages %s: the doorbell stage serves a whole device: one lcore", map);
		return -EINVAL;
	}
	m->nb_shards = (uint16_t)m->nb[RNIC_STAGE_REQUESTER];
	if (m->nb[RNIC_STAGE_PARSER] != 1 && m->nb[RNIC_STAGE_PARSER] != m->nb_shards) {
		RNIC_LOG(ERR, "--stages %s: the parser needs one lcore, or one per shard", map);
		return -EINVAL;
	}
	/* One parser lcore: every shard's parser instance (its RX queues) on it. */
	for (; m->nb[RNIC_STAGE_PARSER] < m->nb_shards; m->nb[RNIC_STAGE_PARSER]++)
		m->lcore[RNIC_STAGE_PARSER][m->nb[RNIC_STAGE_PARSER]] = m->lcore[RNIC_STAGE_PARSER][0];
	if (m->nb[RNIC_STAGE_COMPLETER] != m->nb_shards || m->nb[RNIC_STAGE_RESPONDER] != m->nb_shards ||
	    memcmp(m->lcore[RNIC_STAGE_REQUESTER], m->lcore[RNIC_STAGE_COMPLETER],
		   sizeof(m->lcore[0][0]) * m->nb_shards) != 0) {
		RNIC_LOG(ERR, "--stages %s: one shard = a requester and its completer on one lcore, and a "
			 "responder: give the three stages as many lcores", map);
		return -EINVAL;
	}
	return 0;
}

/* The stage map of the arguments; no data path (nb_shards 0) without worker lcores, unless a map puts the
 * stages on the main lcore. */
int
rnic_stage_map_of(const struct rnic_engine_args *args, struct rnic_stage_map *m)
{
	const char *map = args->stages;

	memset(m, 0, sizeof(*m));
	if (rte_lcore_count() < 2 && map == NULL) {
		RNIC_LOG(INFO, "no worker lcore: control path only, the data path does not run");
		return 0;
	}
	if (map == NULL)
		map = rte_lcore_count() > 2 ? "two" : "one";
	if (parse_stage_map(map, m) != 0 || check_stage_map(map, m) != 0) {
		RNIC_LOG(ERR, "--stages %s: not a stage map (rnic_engine_usage)", map);
		return -EINVAL;
	}
	return 0;
}

/* Build each device's pipelines (one per shard) as the map places their stages, and hand the stages to the
 * lcores. */
int
rnic_stage_map_apply(const struct rnic_stage_map *m)
{
	unsigned int order[RTE_MAX_LCORE], nb_order = engine_lcore_order(order);
	int ret = 0;

	if (m->nb_shards == 0)
		return 0;	/* no data path: the control path only */
	if (m->nb_device_lcores != 0) {
		memcpy(order, m->device_lcore, sizeof(m->device_lcore[0]) * m->nb_device_lcores);
		nb_order = m->nb_device_lcores;
	}

	for (int i = 0; i < rnic_rt.nb_devices && ret == 0; i++) {
		struct rnic_topology t;

		rnic_topology_init(&t, m->nb_shards);
		for (int st = 0; st < RNIC_STAGE_MAX; st++)
			for (unsigned int k = 0; k < m->nb[st]; k++)
				t.lcore[st][k] = m->per_device ? order[(unsigned int)i % nb_order] : m->lcore[st][k];
		ret = rnic_topology_build(rnic_rt.device[i], rnic_rt.pool[i], &t);
		if (ret == 0)
			ret = rnic_topology_start(rnic_rt.device[i], &t, rnic_engine_add_stage);
	}
	return ret;
}
