/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd: softrnic as a shared service (doc/rnicd.md). One process owns the ports and the engine; each
 * client connection is a session with its own context, objects, quotas and shared memory.
 */
#ifndef RNICD_H
#define RNICD_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include <rte_log.h>

#include "rnic.h"
#include "rnic_priv.h"
#include "rnicd_proto.h"

extern int rnicd_logtype;
#define RNICD_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rnicd_logtype, "rnicd: " fmt "\n", ##__VA_ARGS__)

/* Per-client limits (config file / command line). */
struct rnicd_quota {
	uint32_t max_pd;
	uint32_t max_cq;
	uint32_t max_qp;
	uint32_t max_mr;
	uint64_t max_bytes;		/* host-interface blocks + registered buffers */
	uint32_t dbq_size;		/* doorbells a client's queue holds */
};

enum rnicd_obj_kind { OBJ_FREE, OBJ_PD, OBJ_MR, OBJ_CQ, OBJ_QP, OBJ_KINDS };

struct rnicd_obj {
	uint8_t kind;
	void *ptr;			/* struct rnic_pd / rnic_mr / rnic_cq / rnic_qp */
	void *map;			/* MR: the daemon's mapping of the client's buffer */
	size_t map_len;
};

/* A memfd block the daemon shares with a client (host interface of a CQ or QP, the doorbell queue). */
struct rnicd_block {
	struct rnicd_block *next;
	void *addr;
	size_t len;
	int fd;
};

struct rnicd_session {
	struct rnicd_session *next;
	int sock;
	uint32_t id;
	pid_t pid;			/* the peer (SO_PEERCRED), for the operator */
	struct rnic_context *ctx;	/* after RNICD_OPEN */
	int dev_index;
	struct rnic_dbq *dbq;
	struct rnicd_block *blocks;
	struct rnicd_obj *obj;		/* handle = id << 16 | (index + 1) */
	uint32_t nb_obj;
	uint32_t count[OBJ_KINDS];
	uint64_t bytes;
	uint8_t over_quota;		/* the last host-memory allocation hit max_bytes */
	uint8_t quota_logged;		/* a refusal for max_bytes was logged (once per session) */
};

struct rnicd {
	struct rnicd_quota quota;
	pthread_mutex_t lock;		/* sessions and stats: the control loop vs telemetry */
	struct rnicd_session *sessions;
	uint32_t next_id;
	struct rnicd_stats stats;
};

extern struct rnicd rnicd;

/* A connection was accepted: a new session (NULL if out of memory). */
struct rnicd_session *rnicd_session_new(int sock);
/* Read and answer one request; returns -1 when the connection is closed or broken (then end it). */
int rnicd_session_serve(struct rnicd_session *s);
/* The connection is gone: every object of the client is destroyed and its memory unmapped. */
void rnicd_session_end(struct rnicd_session *s);

/* Telemetry commands under /rnicd. */
void rnicd_telemetry_register(void);

#endif /* RNICD_H */
