/* SPDX-License-Identifier: BSD-3-Clause
 * The limit on log lines a tenant or a remote peer can cause (RNIC_LOG_LIMITED in rnic_priv.h).
 */
#include <time.h>

#include "rnic_priv.h"

/* The library's log type (RNIC_LOG): here, below every module that logs. */
RTE_LOG_REGISTER_DEFAULT(rnic_logtype, INFO);

uint64_t rnic_log_suppressed;

/*
 * Any lcore or thread may hit one call site: the counts are atomics, and the one that moves the site into a
 * new second restarts its count (a line or two more than the burst may pass in the race: bounded all the
 * same). The coarse monotonic clock is read from the vDSO, no system call, and needs no EAL (an rnicd client
 * logs too).
 */
int
rnic_log_limit_pass(struct rnic_log_limit *l, uint32_t *suppressed)
{
	struct timespec ts;
	uint64_t now, seen;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec + 1;
	seen = __atomic_load_n(&l->second, __ATOMIC_ACQUIRE);
	*suppressed = 0;
	if (seen != now && __atomic_compare_exchange_n(&l->second, &seen, now, 0, __ATOMIC_ACQ_REL,
						       __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&l->lines, 0, __ATOMIC_RELEASE);
		*suppressed = __atomic_exchange_n(&l->suppressed, 0, __ATOMIC_ACQ_REL);
	}
	if (__atomic_fetch_add(&l->lines, 1, __ATOMIC_ACQ_REL) < RNIC_LOG_BURST)
		return 1;
	/* Suppressed (the race above lost): what this call took over is handed back with it. */
	__atomic_fetch_add(&l->suppressed, 1 + *suppressed, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rnic_log_suppressed, 1, __ATOMIC_RELAXED);
	*suppressed = 0;
	return 0;
}
