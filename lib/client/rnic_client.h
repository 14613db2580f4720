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
/* A new connection to the daemon (for the CM's requests, rnic_client_cm.c): the socket or a negative errno. */
int rnic_client_connect(void);
/* What names a client's QP to the daemon: its connection's client id and its handle there (EINVAL: not a
 * QP of rnicd's). */
int rnic_client_qp_ref(const struct rnic_qp *qp, uint32_t *client_id, uint32_t *handle);
/* The provider of a client process (registered as rnic_provider_find(1)): rnicd's devices, whose ops send
 * the control verbs to the daemon. */

/*
 * The memory of a registration (rnic_client_shm.c): the memfds the daemon maps for it, back to back over the
 * region's pages (REG_MR's segments). Memory of rnic_alloc_buf; with moving in place on, any memory of the
 * program, moved onto shared memory in place (doc/verbs.md).
 */
struct shm_seg;
struct rnic_client_region {
	int nb;
	struct shm_seg *seg[RNICD_MR_MAX_SEGS];
	uint64_t offset[RNICD_MR_MAX_SEGS];	/* in its memfd, page-aligned */
	uint64_t len[RNICD_MR_MAX_SEGS];
	uint8_t created[RNICD_MR_MAX_SEGS];	/* moved for this registration */
};

/* Registrations of ordinary memory move it in place (the verbs interposer: its program's buffers are not
 * rnic_alloc_buf's) / refuse it (EINVAL: the default, for programs of the rnic_* API). */
void rnic_client_move_in_place(int on);
/* The segments of [addr, addr + length), moved in place first where needed, held until put. 0 or an errno:
 * EINVAL (not shared memory, moving off), EFAULT (a hole, unreadable pages, or read-only pages for a
 * writable region), EOPNOTSUPP (a shared mapping of something else), E2BIG (more than RNICD_MR_MAX_SEGS
 * segments); then nothing is held or moved. */
int rnic_client_region_get(void *addr, size_t length, int writable, struct rnic_client_region *r);
/* Let the segments go; undo (the daemon refused the registration): pages moved for it go back to private
 * memory. */
void rnic_client_region_put(struct rnic_client_region *r, int undo);
/* The memfd of the region's i-th segment. */
int rnic_client_region_fd(const struct rnic_client_region *r, int i);
/* A sealed memfd of len bytes (it cannot shrink or grow), not mapped; -1 with errno. */
int rnic_shm_fd(const char *name, size_t len);

#endif /* RNIC_CLIENT_H */
