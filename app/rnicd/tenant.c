/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd's tenants (doc/rnicd.md, "Tenants and quotas"). A connection belongs to the tenant its peer's
 * credentials name (SO_PEERCRED: uid, gid, pid; the pid's cgroup): a configured entry (`tenant cgroup=PATH`,
 * `tenant uid=N`, `tenant gid=N`, in that order of precedence), else the tenant of its uid alone. A
 * tenant's quotas hold over all its connections and processes together; a refusal is counted, and logged
 * the first time for each tenant and resource. Each connected tenant has an engine number, under which the
 * engine serves its QPs and doorbells within its fair share and counts its use (rnic_tenant_stats).
 * Everything here runs under rnicd.lock.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_telemetry.h>

#include "rnicd.h"

static const char *const res_names[RNICD_RES_KINDS] = {
	[RNICD_RES_CONN] = "conn", [RNICD_RES_PD] = "pd", [RNICD_RES_MR] = "mr", [RNICD_RES_CQ] = "cq",
	[RNICD_RES_QP] = "qp", [RNICD_RES_CTX] = "ctx", [RNICD_RES_MEM] = "mem", [RNICD_RES_CM_ID] = "cm-ids",
};

/* What `tenant default` does not change: a tenant may take a quarter of a device's default QPs, CQs and
 * MRs, so no one tenant can take them all (doc/rnicd.md). */
#define COMPILED_LIMITS { \
	[RNICD_RES_CONN] = 64, [RNICD_RES_CTX] = 64, [RNICD_RES_PD] = 256, [RNICD_RES_MR] = 4096, \
	[RNICD_RES_CQ] = 1024, [RNICD_RES_QP] = 1024, [RNICD_RES_MEM] = 4ull << 30, [RNICD_RES_CM_ID] = 1024, \
}
static const uint64_t compiled_limits[RNICD_RES_KINDS] = COMPILED_LIMITS;
/* The ports a tenant's CM ids may bind and listen on without a `cm-ports` (below 1024: as privileged). */
#define COMPILED_CM_PORTS (1024u << 16 | 65535u)
static struct rnicd_tenant defaults = {
	.name = "default",
	.limit = COMPILED_LIMITS,
	.share = 1,
	.cm_ports = COMPILED_CM_PORTS,
};

static struct rnicd_tenant *tenants;	/* configured ones first, in file order; then those of a uid */
static uint8_t engine_id_used[RNIC_MAX_TENANTS];	/* 0 is the daemon's own */

const char *
rnicd_res_name(enum rnicd_res r)
{
	return res_names[r];
}

/* ------------------------------------------------------------------------------------------------------ */
/* Configuration                                                                                            */

static struct rnicd_tenant *
tenant_new(uint8_t match, uint32_t id, const char *cgroup)
{
	struct rnicd_tenant *t = calloc(1, sizeof(*t)), **pp;

	if (t == NULL)
		return NULL;
	t->match = match;
	t->id = id;
	if (match == RNICD_MATCH_CGROUP)
		snprintf(t->cgroup, sizeof(t->cgroup), "%s", cgroup);
	if (match == RNICD_MATCH_CGROUP)
		snprintf(t->name, sizeof(t->name), "cgroup %s", cgroup);
	else
		snprintf(t->name, sizeof(t->name), "%s %u", match == RNICD_MATCH_GID ? "gid" : "uid", id);
	for (pp = &tenants; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = t;
	return t;
}

/* The entry a `tenant` specification's first word names ("default", "uid=N", "gid=N", "cgroup=/path"). */
static struct rnicd_tenant *
config_entry(const char *where, const char *word)
{
	char label[160];
	uint64_t id;

	if (strcmp(word, "default") == 0)
		return &defaults;
	if (strncmp(word, "cgroup=", 7) == 0 && word[7] == '/' && strlen(word + 7) < sizeof(defaults.cgroup)) {
		for (struct rnicd_tenant *t = tenants; t != NULL; t = t->next)
			if (t->match == RNICD_MATCH_CGROUP && strcmp(t->cgroup, word + 7) == 0)
				return t;
		return tenant_new(RNICD_MATCH_CGROUP, 0, word + 7);
	}
	snprintf(label, sizeof(label), "tenant %.3s (%s)", word, where);
	if (strncmp(word, "uid=", 4) == 0 || strncmp(word, "gid=", 4) == 0) {
		uint8_t match = word[0] == 'u' ? RNICD_MATCH_UID : RNICD_MATCH_GID;

		if (rnicd_parse_number(label, word + 4, 0, UINT32_MAX - 1, &id) != 0)
			return NULL;

		for (struct rnicd_tenant *t = tenants; t != NULL; t = t->next)
			if (t->match == match && t->id == id)
				return t;
		return tenant_new(match, (uint32_t)id, NULL);
	}
	fprintf(stderr, "rnicd: %s: tenant '%s': expected default, uid=N, gid=N or cgroup=/path\n", where, word);
	return NULL;
}

/* "gids I[,I...]": the GID indexes (0 .. RNIC_GID_TBL_LEN - 1) a tenant's QPs may send from. */
static int
parse_gids(const char *where, struct rnicd_tenant *t, const char *value)
{
	char copy[64], *save = NULL, label[160];
	uint32_t gids = 0;

	if (value == NULL || snprintf(copy, sizeof(copy), "%s", value) >= (int)sizeof(copy)) {
		fprintf(stderr, "rnicd: %s: tenant %s: gids: expected GID indexes, as 1 or 1,2\n", where, t->name);
		return -EINVAL;
	}
	snprintf(label, sizeof(label), "tenant gids (%s)", where);
	for (char *i = strtok_r(copy, ",", &save); i != NULL; i = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (rnicd_parse_number(label, i, 0, RNIC_GID_TBL_LEN - 1, &v) != 0)
			return -EINVAL;
		gids |= 1u << v;
	}
	if (gids == 0) {
		fprintf(stderr, "rnicd: %s: tenant %s: gids: expected GID indexes, as 1 or 1,2\n", where, t->name);
		return -EINVAL;
	}
	t->gids = gids;
	return 0;
}

/* "cm-ports LO-HI": the ports (1-65535) a tenant's CM ids may bind and listen on. */
static int
parse_cm_ports(const char *where, struct rnicd_tenant *t, const char *value)
{
	unsigned int lo, hi;
	int end = 0;

	if (value == NULL || sscanf(value, "%u-%u%n", &lo, &hi, &end) != 2 || value[end] != '\0' || lo == 0 ||
	    lo > hi || hi > 65535) {
		fprintf(stderr, "rnicd: %s: tenant %s: cm-ports: expected a port range LO-HI within 1-65535, as "
			"20000-20099\n", where, t->name);
		return -EINVAL;
	}
	t->cm_ports = lo << 16 | hi;
	return 0;
}

int
rnicd_tenant_config(const char *where, const char *spec)
{
	char copy[512], *save = NULL, *word, *value;
	struct rnicd_tenant *t;

	if (snprintf(copy, sizeof(copy), "%s", spec) >= (int)sizeof(copy)) {
		fprintf(stderr, "rnicd: %s: tenant specification too long\n", where);
		return -EINVAL;
	}
	word = strtok_r(copy, " \t\r\n", &save);
	if (word == NULL) {
		fprintf(stderr, "rnicd: %s: tenant: expected default, uid=N, gid=N or cgroup=/path\n", where);
		return -EINVAL;
	}
	t = config_entry(where, word);
	if (t == NULL)
		return -EINVAL;
	t->configured = 1;
	while ((word = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
		enum rnicd_res r;
		char label[160];
		uint64_t v;

		value = strtok_r(NULL, " \t\r\n", &save);
		if (strcmp(word, "gids") == 0) {
			if (parse_gids(where, t, value) != 0)
				return -EINVAL;
			continue;
		}
		if (strcmp(word, "cm-ports") == 0) {
			if (parse_cm_ports(where, t, value) != 0)
				return -EINVAL;
			continue;
		}
		if (strcmp(word, "share") == 0 && value != NULL) {
			snprintf(label, sizeof(label), "tenant share (%s)", where);
			if (rnicd_parse_number(label, value, 1, RNIC_SHARE_MAX, &v) != 0)
				return -EINVAL;
			t->share = (uint32_t)v;
			t->set |= RNICD_SHARE_SET;
			continue;
		}
		for (r = 0; r < RNICD_RES_KINDS; r++)
			if (strncmp(word, "max-", 4) == 0 && strcmp(word + 4, res_names[r]) == 0)
				break;
		if (r == RNICD_RES_KINDS || value == NULL) {
			fprintf(stderr, "rnicd: %s: tenant %s: '%s'%s: expected max-conn, max-ctx, max-qp, max-cq, "
				"max-mr, max-pd, max-mem, max-cm-ids or share and a number, gids and GID indexes, or cm-ports and a "
				"range\n", where, t->name,
				word, value == NULL ? " without a value" : "");
			return -EINVAL;
		}
		snprintf(label, sizeof(label), "tenant %s (%s)", word, where);
		if (rnicd_parse_number(label, value, 0, r == RNICD_RES_MEM ? 1ull << 48 : 1u << 24, &v) != 0)
			return -EINVAL;
		t->limit[r] = v;
		t->set |= 1u << r;
	}
	return 0;
}

static void
config_save(struct rnicd_tenant *t)
{
	t->saved.configured = t->configured;
	t->saved.gids = t->gids;
	t->saved.cm_ports = t->cm_ports;
	t->saved.set = t->set;
	memcpy(t->saved.limit, t->limit, sizeof(t->limit));
	t->saved.share = t->share;
}

static void
config_load(struct rnicd_tenant *t)
{
	t->configured = t->saved.configured;
	t->gids = t->saved.gids;
	t->cm_ports = t->saved.cm_ports;
	t->set = t->saved.set;
	memcpy(t->limit, t->saved.limit, sizeof(t->limit));
	t->share = t->saved.share;
}

void
rnicd_tenant_config_reset(void)
{
	config_save(&defaults);
	memcpy(defaults.limit, compiled_limits, sizeof(defaults.limit));
	defaults.gids = 0;
	defaults.share = 1;
	defaults.cm_ports = COMPILED_CM_PORTS;
	for (struct rnicd_tenant *t = tenants; t != NULL; t = t->next) {
		config_save(t);
		t->configured = 0;
		t->gids = 0;
		t->cm_ports = 0;
		t->set = 0;
	}
}

void
rnicd_tenant_config_restore(void)
{
	config_load(&defaults);
	/* An entry the failed reading added has nothing saved: it goes back to being unconfigured. */
	for (struct rnicd_tenant *t = tenants; t != NULL; t = t->next)
		config_load(t);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Who a connection is                                                                                      */

/* The cgroup (v2 path; the first hierarchy's on a v1-only system) of a process, or "" if unknown. */
static void
peer_cgroup(pid_t pid, char *out, size_t len)
{
	char path[64], line[PATH_MAX + 64];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = pid > 0 ? fopen(path, "re") : NULL;
	if (f == NULL)
		return;		/* gone already: it belongs to no cgroup entry */
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = strchr(line, ':'), *q = p != NULL ? strchr(p + 1, ':') : NULL;

		if (q == NULL)
			continue;
		q[strcspn(q, "\n")] = '\0';
		if (out[0] == '\0' || strncmp(line, "0::", 3) == 0)
			snprintf(out, len, "%s", q + 1);
	}
	fclose(f);
}

/* Whether a cgroup is an entry's or below it. */
static size_t
cgroup_match(const char *entry, const char *cgroup)
{
	size_t n = strlen(entry);

	if (strncmp(entry, cgroup, n) != 0 || (cgroup[n] != '\0' && cgroup[n] != '/' && entry[n - 1] != '/'))
		return 0;
	return n;
}

static struct rnicd_tenant *
tenant_find(const struct ucred *cred, const char *cgroup)
{
	struct rnicd_tenant *best = NULL, *by_uid = NULL, *by_gid = NULL;
	size_t best_len = 0;

	for (struct rnicd_tenant *t = tenants; t != NULL; t = t->next) {
		size_t n = t->match == RNICD_MATCH_CGROUP && cgroup[0] != '\0' ? cgroup_match(t->cgroup, cgroup) : 0;

		if (n > best_len) {
			best = t;
			best_len = n;
		}
		if (t->match == RNICD_MATCH_UID && t->id == cred->uid && (by_uid == NULL || t->configured))
			by_uid = t;
		if (t->match == RNICD_MATCH_GID && t->configured && t->id == cred->gid)
			by_gid = t;
	}
	if (best != NULL)
		return best;
	if (by_uid != NULL && by_uid->configured)
		return by_uid;
	return by_gid != NULL ? by_gid : by_uid;
}

/* acc += now - base, counter by counter. */
static void
stats_add(struct rnic_tenant_stats *acc, const struct rnic_tenant_stats *now, const struct rnic_tenant_stats *base)
{
	acc->doorbells += now->doorbells - base->doorbells;
	acc->doorbells_dropped += now->doorbells_dropped - base->doorbells_dropped;
	acc->packets += now->packets - base->packets;
	acc->bytes += now->bytes - base->bytes;
	acc->psns += now->psns - base->psns;
	acc->deferred += now->deferred - base->deferred;
}

/* The engine's counters of a tenant number, over every device. */
static void
engine_stats(uint32_t id, struct rnic_tenant_stats *out)
{
	static const struct rnic_tenant_stats zero;
	struct rnic_tenant_stats dev;

	*out = zero;
	for (int i = 0; rnic_daemon_tenant_stats(i, id, &dev) == 0; i++)
		stats_add(out, &dev, &zero);
}

static uint64_t
limit_of(const struct rnicd_tenant *t, enum rnicd_res r)
{
	return t->set & (1u << r) ? t->limit[r] : defaults.limit[r];
}

static uint32_t
share_of(const struct rnicd_tenant *t)
{
	return t->set & RNICD_SHARE_SET ? t->share : defaults.share;
}

/* The tenant's share to the engine, on every device, under its engine number. */
static void
share_apply(const struct rnicd_tenant *t)
{
	for (int i = 0; rnic_daemon_tenant_share(i, t->engine_id, share_of(t)) != -ENODEV; i++)
		;
}

void
rnicd_tenant_shares_apply(void)
{
	for (const struct rnicd_tenant *t = tenants; t != NULL; t = t->next)
		if (t->engine_id != 0)
			share_apply(t);
}

/* The engine's number for a tenant with connections (its fair share, its counters). 0 if none is free. */
static uint32_t
engine_id_take(struct rnicd_tenant *t)
{
	for (uint32_t i = 1; i < RNIC_MAX_TENANTS; i++) {
		if (engine_id_used[i])
			continue;
		engine_id_used[i] = 1;
		t->engine_id = i;
		engine_stats(i, &t->engine_base);
		share_apply(t);
		return i;
	}
	return 0;
}

static void
engine_id_give(struct rnicd_tenant *t)
{
	struct rnic_tenant_stats now;

	engine_stats(t->engine_id, &now);
	stats_add(&t->engine_acc, &now, &t->engine_base);
	engine_id_used[t->engine_id] = 0;
	t->engine_id = 0;
}

struct rnicd_tenant *
rnicd_tenant_join(const struct ucred *cred, char *cgroup, size_t len)
{
	struct rnicd_tenant *t;

	peer_cgroup(cred->pid, cgroup, len);
	t = tenant_find(cred, cgroup);
	if (t == NULL)
		t = tenant_new(RNICD_MATCH_UID, cred->uid, NULL);
	if (t == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (rnicd_tenant_charge(t, RNICD_RES_CONN, 1, cred->pid) != 0) {
		errno = EDQUOT;
		return NULL;
	}
	if (t->engine_id == 0 && engine_id_take(t) == 0) {
		rnicd_tenant_release(t, RNICD_RES_CONN, 1);
		rnicd.stats.quota_refusals++;
		if (t->refused[RNICD_RES_CONN]++ == 0)
			RNICD_LOG(WARNING, "tenant %s: %d tenants are connected already: refusing its connections "
				  "(counted in /rnicd/tenants, not logged again)", t->name, RNIC_MAX_TENANTS - 1);
		errno = EUSERS;
		return NULL;
	}
	return t;
}

void
rnicd_tenant_leave(struct rnicd_tenant *t)
{
	rnicd_tenant_release(t, RNICD_RES_CONN, 1);
	if (t->used[RNICD_RES_CONN] == 0 && t->engine_id != 0)
		engine_id_give(t);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Quotas                                                                                                   */

int
rnicd_tenant_charge(struct rnicd_tenant *t, enum rnicd_res r, uint64_t n, pid_t pid)
{
	uint64_t limit = limit_of(t, r);

	if (t->used[r] <= limit && n <= limit - t->used[r]) {
		t->used[r] += n;
		return 0;
	}
	rnicd.stats.quota_refusals++;
	/* A tenant can ask for more without end: the first refusal of each kind is logged, all are counted. */
	if (t->refused[r]++ == 0)
		RNICD_LOG(WARNING, "tenant %s (pid %d): %s quota of %llu reached: refused (further refusals of "
			  "this kind are counted in /rnicd/tenants, not logged)", t->name, (int)pid, res_names[r],
			  (unsigned long long)limit);
	return EDQUOT;
}

void
rnicd_tenant_release(struct rnicd_tenant *t, enum rnicd_res r, uint64_t n)
{
	t->used[r] -= RTE_MIN(n, t->used[r]);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Observability and the end                                                                                */

uint32_t
rnicd_tenant_gids(const struct rnicd_tenant *t)
{
	return t->gids != 0 ? t->gids : defaults.gids;
}

int
rnicd_tenant_gid_check(struct rnicd_tenant *t, uint8_t sgid_index, pid_t pid)
{
	uint32_t gids = rnicd_tenant_gids(t);

	if (gids == 0 || (sgid_index < 32 && (gids & (1u << sgid_index))))
		return 0;
	if (t->gid_refused++ == 0)
		RNICD_LOG(WARNING, "tenant %s (pid %d): a QP from GID index %u, not one of its gids: EPERM "
			  "(later ones only counted)", t->name, (int)pid, sgid_index);
	return EPERM;
}

int
rnicd_tenant_cm_port_check(struct rnicd_tenant *t, uint16_t port, pid_t pid)
{
	uint32_t range = t->cm_ports != 0 ? t->cm_ports : defaults.cm_ports;

	if (port == 0 || (port >= range >> 16 && port <= (range & 0xffff)))
		return 0;
	if (t->cm_port_refused++ == 0)
		RNICD_LOG(WARNING, "tenant %s (pid %d): CM port %u, outside its cm-ports %u-%u: EACCES (later ones "
			  "only counted)", t->name, (int)pid, port, range >> 16, range & 0xffff);
	return EACCES;
}

int
rnicd_tenant_log_ok(struct rnicd_tenant *t, uint32_t *left_out)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((uint64_t)now.tv_sec >= t->log_window + 60) {
		t->log_window = (uint64_t)now.tv_sec;
		t->log_lines = 0;
	}
	if (t->log_lines >= RNICD_TENANT_LOG_LINES) {
		t->log_left_out++;
		return 0;
	}
	t->log_lines++;
	*left_out = t->log_left_out;
	t->log_left_out = 0;
	return 1;
}

void
rnicd_tenant_engine_stats(const struct rnicd_tenant *t, struct rnic_tenant_stats *out)
{
	struct rnic_tenant_stats now;

	*out = t->engine_acc;
	if (t->engine_id == 0)
		return;
	engine_stats(t->engine_id, &now);
	stats_add(out, &now, &t->engine_base);
}

static struct rte_tel_data *
tenant_dict(const struct rnicd_tenant *t)
{
	struct rte_tel_data *d = rte_tel_data_alloc();
	struct rnic_tenant_stats st;
	char name[32];

	if (d == NULL)
		return NULL;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "tenant", t->name);
	rte_tel_data_add_dict_u64(d, "engine_id", t->engine_id);
	rte_tel_data_add_dict_u64(d, "share", share_of(t));
	for (enum rnicd_res r = 0; r < RNICD_RES_KINDS; r++) {
		snprintf(name, sizeof(name), "%s_used", res_names[r]);
		rte_tel_data_add_dict_u64(d, name, t->used[r]);
		snprintf(name, sizeof(name), "%s_max", res_names[r]);
		rte_tel_data_add_dict_u64(d, name, limit_of(t, r));
		snprintf(name, sizeof(name), "%s_refused", res_names[r]);
		rte_tel_data_add_dict_u64(d, name, t->refused[r]);
	}
	rte_tel_data_add_dict_u64(d, "gids", rnicd_tenant_gids(t));	/* a mask; 0: every GID */
	rte_tel_data_add_dict_u64(d, "gid_refused", t->gid_refused);
	rte_tel_data_add_dict_u64(d, "cm_ports_first", (t->cm_ports != 0 ? t->cm_ports : defaults.cm_ports) >> 16);
	rte_tel_data_add_dict_u64(d, "cm_ports_last", (t->cm_ports != 0 ? t->cm_ports : defaults.cm_ports) & 0xffff);
	rte_tel_data_add_dict_u64(d, "cm_port_refused", t->cm_port_refused);
	rnicd_tenant_engine_stats(t, &st);
	rte_tel_data_add_dict_u64(d, "doorbells", st.doorbells);
	rte_tel_data_add_dict_u64(d, "doorbells_dropped", st.doorbells_dropped);
	rte_tel_data_add_dict_u64(d, "packets", st.packets);
	rte_tel_data_add_dict_u64(d, "bytes", st.bytes);
	rte_tel_data_add_dict_u64(d, "psns", st.psns);
	rte_tel_data_add_dict_u64(d, "deferred", st.deferred);
	return d;
}

int
rnicd_tenant_telemetry(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i = 0;

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&rnicd.lock);
	for (const struct rnicd_tenant *t = tenants; t != NULL; t = t->next, i++) {
		struct rte_tel_data *c = tenant_dict(t);
		char name[32];

		if (c == NULL)
			break;
		snprintf(name, sizeof(name), "tenant%u", i);
		rte_tel_data_add_dict_container(d, name, c, 0);
	}
	pthread_mutex_unlock(&rnicd.lock);
	return 0;
}

unsigned int
rnicd_tenant_count(void)
{
	unsigned int n = 0;

	for (const struct rnicd_tenant *t = tenants; t != NULL; t = t->next)
		n += t->used[RNICD_RES_CONN] != 0;
	return n;
}

void
rnicd_tenant_fini(void)
{
	while (tenants != NULL) {
		struct rnicd_tenant *t = tenants;

		tenants = t->next;
		free(t);
	}
}
