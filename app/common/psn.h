/* SPDX-License-Identifier: BSD-3-Clause
 * The first PSN of a tool's QP: at random, as perftest's lrand48() & 0xffffff, but from the kernel's
 * generator, so that another process cannot work it out (a PSN is one of the few numbers a request from a
 * stranger would have to guess).
 */
#ifndef RNIC_APP_PSN_H
#define RNIC_APP_PSN_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

static inline uint32_t
random_psn(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)lrand48();	/* no getrandom: still not the pid */
	return v & 0xffffff;
}

/*
 * The PSN a QP's n-th connection starts from, when a tool resets its QPs and connects them again (rnic-perf,
 * once a message size): both ends work it out from the PSNs exchanged once. A QP reset does not recall what
 * is still on the way (a READ asked again late, its responses held up in the network), and a response whose
 * PSN falls among the new connection's outstanding ones is taken (IBA 9.7.5.2: the PSN is all that ties a
 * response to its request), so each connection must start far from every recent one's PSNs. A step of
 * 2^24 / phi (odd: no repeat for 2^24 connections) puts any two of 64 connections in a row at least 136 449
 * PSNs apart, any two of 8 at least 934 968 (a step near 2^24 / 4 would bring connection n + 4 back to 4
 * PSNs before connection n). perftest never resets its QPs; rdma_cm picks a new random PSN per connection.
 */
#define PERF_PSN_STEP 0x9e3779u

static inline uint32_t
perf_connection_psn(uint32_t psn, uint32_t connects)
{
	return (psn + connects * PERF_PSN_STEP) & 0xffffffu;
}

#endif /* RNIC_APP_PSN_H */
