/* SPDX-License-Identifier: BSD-3-Clause
 * Client mode: the verbs of a process that uses the engine of rnicd (doc/rnicd.md). The environment
 * variable RNIC_DAEMON=/path/to/socket, seen by rnic_engine_init, selects it; the process then has no EAL,
 * and its control verbs become requests to the daemon while posting and polling work on the shared memory.
 */
#ifndef RNIC_CLIENT_H
#define RNIC_CLIENT_H

#include "rnic_priv.h"
#include "rnicd_proto.h"

/* Whether rnic_engine_init chose client mode. */
int rnic_client_mode(void);
/* Connect to the daemon at path and learn its devices; returns 0 or a negative errno. */
int rnic_client_init(const char *path);
void rnic_client_fini(void);
/* The provider of a client process (registered as rnic_provider_find(1)): rnicd's devices, whose ops send
 * the control verbs to the daemon. */

#endif /* RNIC_CLIENT_H */
