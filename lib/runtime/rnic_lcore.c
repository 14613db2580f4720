/* SPDX-License-Identifier: BSD-3-Clause
 * The lcore loop: each lcore polls its stages round-robin, reports a quiescent state to the engine's RCU
 * after every pass, and the main lcore's stages run under manual progress (rnic_engine_progress).
 */
#include <errno.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include "rnic_cq.h"
#include "rnic_provider.h"
#include "rnic_runtime.h"

int
rnic_rcu_create(void)
{
	size_t size = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	struct rte_rcu_qsbr_dq_parameters dq = {
		.name = "rnic_retire",
		.flags = 0,				/* multi-thread safe: control calls from any application thread */
		.size = RNIC_RETIRE_QUEUE_SIZE,
		.esize = sizeof(struct rnic_deferred_release),
		.trigger_reclaim_limit = 0,		/* every enqueue reclaims what is due */
		.max_reclaim_size = 64,
		.free_fn = rnic_engine_release_deferred,
	};

	rnic_engine_state.qsbr = rte_zmalloc("rnic_qsbr", size, RTE_CACHE_LINE_SIZE);
	if (rnic_engine_state.qsbr == NULL || rte_rcu_qsbr_init(rnic_engine_state.qsbr, RTE_MAX_LCORE) != 0) {
		RNIC_LOG(ERR, "cannot create the engine's RCU state");
		return -ENOMEM;
	}
	dq.v = rnic_engine_state.qsbr;
	rnic_engine_state.dq = rte_rcu_qsbr_dq_create(&dq);
	if (rnic_engine_state.dq == NULL) {
		RNIC_LOG(ERR, "cannot create the engine's deferred release queue: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

void
rnic_rcu_free(void)
{
	/* The lcores are stopped: every deferred release is due, and runs now. One that is not (an lcore that
	 * never came back) keeps the queue and the RCU state alive rather than free them under it. */
	if (rnic_engine_state.dq != NULL && rte_rcu_qsbr_dq_delete(rnic_engine_state.dq) != 0) {
		RNIC_LOG(ERR, "deferred releases still wait for an engine lcore: they and the RCU state are leaked");
		rnic_engine_state.dq = NULL;
		rnic_engine_state.qsbr = NULL;
		return;
	}
	rnic_engine_state.dq = NULL;
	rte_free(rnic_engine_state.qsbr);
	rnic_engine_state.qsbr = NULL;
}

int
rnic_engine_add_stage(unsigned int lcore_id, const struct rnic_stage *stage)
{
	struct rnic_lcore_stages *ls;

	if (!rnic_rt.initialized || rnic_engine_state.running)
		return -EBUSY;
	if (lcore_id >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore_id)) {
		RNIC_LOG(ERR, "stage %s: lcore %u is not an lcore of this EAL", stage->name, lcore_id);
		return -EINVAL;
	}
	ls = &rnic_rt.lcore[lcore_id];
	if (ls->count == RNIC_MAX_STAGES_PER_LCORE)
		return -ENOSPC;
	ls->stage[ls->count++] = *stage;
	if (lcore_id == rte_get_main_lcore())
		rnic_cq_set_progress(rnic_engine_progress);
	return 0;
}

/* One pass over an lcore's stages: the work they did; the pass's cycles count as busy or idle. */
static unsigned int
poll_stages(struct rnic_lcore_stages *ls, uint64_t *last)
{
	unsigned int work = 0;
	uint64_t now;

	for (unsigned int i = 0; i < ls->count; i++)
		work += ls->stage[i].poll(ls->stage[i].arg, RNIC_STAGE_BUDGET);
	now = rte_rdtsc();
	if (work != 0)
		ls->busy_cycles += now - *last;
	else
		ls->idle_cycles += now - *last;
	*last = now;
	return work;
}

/*
 * A worker lcore: poll its stages round-robin until the engine stops. With --idle-sleep it gives its core
 * back while nothing happens: after IDLE_LOOPS_BEFORE_SLEEP loops without work, each further idle loop
 * sleeps; the first loop that finds work polls flat out again. The price is up to one sleep of latency
 * for the first frame or doorbell after a quiet spell (timers fire up to that much late too).
 */
static int
lcore_loop(void *arg)
{
	struct rnic_lcore_stages *ls = arg;
	unsigned int self = rte_lcore_id();
	unsigned int idle_loops = 0;
	uint64_t last;

	rte_rcu_qsbr_thread_register(rnic_engine_state.qsbr, self);
	rte_rcu_qsbr_thread_online(rnic_engine_state.qsbr, self);
	last = rte_rdtsc();
	while (rnic_engine_state.running) {
		unsigned int work = poll_stages(ls, &last);

		rte_rcu_qsbr_quiescent(rnic_engine_state.qsbr, self);
		if (work != 0)
			idle_loops = 0;
		else if (rnic_rt.idle_sleep_us != 0 && ++idle_loops >= IDLE_LOOPS_BEFORE_SLEEP)
			rte_delay_us_sleep(rnic_rt.idle_sleep_us);
	}
	rte_rcu_qsbr_thread_offline(rnic_engine_state.qsbr, self);
	rte_rcu_qsbr_thread_unregister(rnic_engine_state.qsbr, self);
	return 0;
}

/*
 * The main lcore's stages run here, on the application's thread, each time it calls (manual progress): the
 * lcore is an RCU reader only while it runs them, so a control call it makes between two passes (dereg_mr,
 * destroy_qp) does not wait for itself.
 */
unsigned int
rnic_engine_progress(void)
{
	unsigned int self = rte_get_main_lcore(), work;
	struct rnic_lcore_stages *ls = &rnic_rt.lcore[self];
	uint64_t start;

	if (!rnic_engine_state.running || ls->count == 0 || rte_lcore_id() != self)
		return 0;
	rte_rcu_qsbr_thread_online(rnic_engine_state.qsbr, self);
	start = rte_rdtsc();
	work = poll_stages(ls, &start);
	rte_rcu_qsbr_thread_offline(rnic_engine_state.qsbr, self);
	return work;
}

int
rnic_engine_manual_progress(void)
{
	return rnic_rt.initialized && rnic_rt.lcore[rte_get_main_lcore()].count != 0;
}

int
rnic_engine_lcore_load(unsigned int lcore_id, uint64_t *busy, uint64_t *idle, const char **names, unsigned int *nb)
{
	const struct rnic_lcore_stages *ls;

	if (!rnic_rt.initialized || lcore_id >= RTE_MAX_LCORE || rnic_rt.lcore[lcore_id].count == 0)
		return -ENOENT;
	ls = &rnic_rt.lcore[lcore_id];
	*busy = __atomic_load_n(&ls->busy_cycles, __ATOMIC_RELAXED);
	*idle = __atomic_load_n(&ls->idle_cycles, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < ls->count && i < *nb; i++)
		names[i] = ls->stage[i].name;
	*nb = RTE_MIN(*nb, ls->count);
	return 0;
}

int
rnic_engine_start(void)
{
	unsigned int lcore_id, launched = 0;

	if (rnic_provider_remote())
		return 0;	/* rnicd's engine runs already */
	if (!rnic_rt.initialized || rnic_engine_state.running)
		return -EBUSY;
	/* The main lcore's stages (rnic_engine_progress) read RCU-protected state too. */
	if (rnic_rt.lcore[rte_get_main_lcore()].count != 0)
		rte_rcu_qsbr_thread_register(rnic_engine_state.qsbr, rte_get_main_lcore());
	rnic_engine_state.running = 1;
	rte_smp_wmb();
	RTE_LCORE_FOREACH_WORKER(lcore_id) {
		if (rnic_rt.lcore[lcore_id].count == 0)
			continue;
		if (rte_eal_remote_launch(lcore_loop, &rnic_rt.lcore[lcore_id], lcore_id) != 0) {
			RNIC_LOG(ERR, "lcore %u is busy: cannot start its stages", lcore_id);
			rnic_engine_stop();
			return -EBUSY;
		}
		launched++;
	}
	if (rnic_neigh_thread_start() != 0) {
		rnic_engine_stop();
		return -EAGAIN;
	}
	RNIC_LOG(DEBUG, "engine started on %u lcores", launched);
	return 0;
}

int
rnic_engine_stop(void)
{
	unsigned int lcore_id;

	if (rnic_provider_remote())
		return 0;
	if (!rnic_rt.initialized)
		return -EINVAL;
	rnic_neigh_thread_stop();
	rnic_engine_state.running = 0;
	rte_smp_wmb();
	RTE_LCORE_FOREACH_WORKER(lcore_id)
		if (rnic_rt.lcore[lcore_id].count != 0)
			rte_eal_wait_lcore(lcore_id);
	if (rnic_rt.lcore[rte_get_main_lcore()].count != 0)
		rte_rcu_qsbr_thread_unregister(rnic_engine_state.qsbr, rte_get_main_lcore());
	rnic_engine_quiesce();	/* no lcore reads now: the deferred releases run */
	return 0;
}
