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

#endif /* RNIC_APP_PSN_H */
