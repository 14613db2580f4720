/* SPDX-License-Identifier: BSD-3-Clause
 * What the runtime and the engine hand down to the modules below them (doc/architecture.md): the devices the
 * runtime created, whether its lcores run and the RCU state they report to, and the engine's control-path
 * entry points. The runtime and the engine set them; the verbs objects read them without calling up.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

#include "rnic_priv.h"

#define QUIESCE_TIMEOUT_MS 1000

struct rnic_engine_state rnic_engine_state;

static struct {
	int nb;
	struct rnic_device *device[RNIC_MAX_DEVICES];
} devices;

static struct rnic_engine_hooks hooks;

int
rnic_engine_device_add(struct rnic_device *dev)
{
	if (devices.nb == RNIC_MAX_DEVICES)
		return -ENOSPC;
	devices.device[devices.nb++] = dev;
	return 0;
}

void
rnic_engine_devices_clear(void)
{
	memset(&devices, 0, sizeof(devices));
}

int
rnic_engine_device_count(void)
{
	return devices.nb;
}

struct rnic_device *
rnic_engine_device(int index)
{
	if (index < 0 || index >= devices.nb)
		return NULL;
	return devices.device[index];
}

struct rnic_device *
rnic_engine_device_by_gid(const union rnic_gid *gid)
{
	for (int i = 0; i < devices.nb; i++) {
		struct rnic_device *d = devices.device[i];

		for (int g = 0; g < d->gid_count; g++)
			if (memcmp(d->gid[g].raw, gid->raw, sizeof(gid->raw)) == 0)
				return d;
	}
	return NULL;
}

int
rnic_engine_running(void)
{
	return rnic_engine_state.running;
}

/* The releases whose grace period has passed (rnic_engine_retire). */
static void
reclaim(void)
{
	if (rnic_engine_state.dq != NULL)
		rte_rcu_qsbr_dq_reclaim(rnic_engine_state.dq, UINT32_MAX, NULL, NULL, NULL);
}

int
rnic_engine_quiesce(void)
{
	struct rte_rcu_qsbr *qsbr = rnic_engine_state.qsbr;
	uint64_t token, deadline;

	if (qsbr == NULL || !rnic_engine_state.running) {
		reclaim();
		return 0;
	}
	token = rte_rcu_qsbr_start(qsbr);
	deadline = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * QUIESCE_TIMEOUT_MS;
	while (rte_rcu_qsbr_check(qsbr, token, false) == 0) {
		if (rte_get_timer_cycles() > deadline)
			return -ETIMEDOUT;
		rte_pause();
	}
	reclaim();
	return 0;
}

void
rnic_engine_release_deferred(void *p, void *e, unsigned int n)
{
	const struct rnic_deferred_release *r = e;

	RTE_SET_USED(p);
	for (unsigned int i = 0; i < n; i++)
		r[i].release(r[i].arg);
}

int
rnic_engine_retire(void (*release)(void *arg), void *arg)
{
	struct rnic_deferred_release r = { .release = release, .arg = arg };

	if (rnic_engine_quiesce() == 0) {
		release(arg);
		return 0;
	}
	if (rnic_engine_state.dq == NULL || rte_rcu_qsbr_dq_enqueue(rnic_engine_state.dq, &r) != 0)
		return -ENOSPC;
	return 1;
}

int
rnic_engine_users_gone(const uint32_t *users)
{
	if (__atomic_load_n(users, __ATOMIC_ACQUIRE) == 0)
		return 1;
	rnic_engine_quiesce();	/* runs the deferred releases once every lcore passed a quiescent point */
	return __atomic_load_n(users, __ATOMIC_ACQUIRE) == 0;
}

void
rnic_engine_hooks_register(const struct rnic_engine_hooks *h)
{
	hooks = *h;
}

void
rnic_engine_release_qp(struct rnic_qp *qp)
{
	if (hooks.release_qp != NULL)
		hooks.release_qp(qp);
}

void
rnic_engine_route_prepare(const struct rnic_device *dev, const union rnic_gid *dgid)
{
	if (hooks.route_prepare != NULL)
		hooks.route_prepare(dev, dgid);
}
