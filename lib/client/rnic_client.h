/* SPDX-License-Identifier: BSD-3-Clause
 * Client mode: the verbs of a process that uses the engine of rnicd (doc/rnicd.md). The environment
 * variable RNIC_DAEMON=/path/to/socket, seen by rnic_engine_init, selects it; the process then has no EAL,
 * and its control verbs become requests to the daemon while posting and polling work on the shared memory.
 */
#ifndef RNIC_CLIENT_H
#define RNIC_CLIENT_H

#include <sys/types.h>

#include "rnic_priv.h"
#include "rnicd_proto.h"

/* A sealed memfd of len bytes (it cannot shrink or grow: safe for another process to map) mapped shared
 * here; its descriptor in *fd. NULL with errno on failure. */
void *rnic_shm_create(const char *name, size_t len, int *fd);

/* Whether rnic_engine_init chose client mode. */
int rnic_client_mode(void);
/* Connect to the daemon at path and learn its devices; returns 0 or a negative errno. */
int rnic_client_init(const char *path);
void rnic_client_fini(void);
/* The provider of a client process: rnicd's devices, whose ops send the control verbs to the daemon. */
extern const struct rnic_provider rnic_client_provider;

/* One request and its reply over a connected socket; fd_out (or -1) travels with the request, *fd_in (if
 * not NULL) receives the descriptor of the reply (or -1). Returns the reply's status (0 or a positive errno). */
int rnicd_call(int sock, struct rnicd_req *req, uint32_t cmd, int fd_out, struct rnicd_rep *rep, int *fd_in);
/* One message and at most one descriptor: send (0 or -errno) / receive (bytes, -errno; *truncated is set
 * when the message was longer than len). */
int rnicd_send_msg(int sock, const void *buf, size_t len, int fd);
ssize_t rnicd_recv_msg(int sock, void *buf, size_t len, int *fd, int *truncated);

#endif /* RNIC_CLIENT_H */
