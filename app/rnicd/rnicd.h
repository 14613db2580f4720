/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd: softrnic as a shared service (doc/rnicd.md). One process owns the ports and the engine; each
 * client connection is a session with its own context, objects, quotas and shared memory.
 */
#ifndef RNICD_H
#define RNICD_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <rte_log.h>

#include "rnic.h"
#include "rnic_daemon.h"

extern int rnicd_logtype;
#define RNICD_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rnicd_logtype, "rnicd: " fmt "\n", ##__VA_ARGS__)

/* Per-connection limits (config file / command line). */
struct rnicd_quota {
	uint32_t max_pd;
	uint32_t max_cq;
	uint32_t max_qp;
	uint32_t max_mr;
	uint64_t max_bytes;		/* host-interface blocks + registered buffers */
	uint32_t dbq_size;		/* doorbells a client's queue holds */
};

enum rnicd_obj_kind { OBJ_FREE, OBJ_PD, OBJ_MR, OBJ_CQ, OBJ_QP, OBJ_SRQ, OBJ_KINDS };

/* What a tenant's quotas count; an object kind counts as the resource of the same number, but an SRQ, which
 * counts as a QP (a receive queue: rnicd_obj_res). */
enum rnicd_res {
	RNICD_RES_CONN = OBJ_FREE,	/* connections */
	RNICD_RES_PD = OBJ_PD,
	RNICD_RES_MR = OBJ_MR,
	RNICD_RES_CQ = OBJ_CQ,
	RNICD_RES_QP = OBJ_QP,
	RNICD_RES_CTX = OBJ_QP + 1,	/* connections that opened a device */
	RNICD_RES_MEM,			/* bytes shared: host-interface blocks and registered buffers */
	RNICD_RES_CM_ID,		/* CM ids (cm.c) */
	RNICD_RES_KINDS
};

enum { RNICD_MATCH_UID, RNICD_MATCH_GID, RNICD_MATCH_CGROUP };

/* A tenant (tenant.c): the processes of one configured entry, or of one uid no entry names. */
struct rnicd_tenant {
	struct rnicd_tenant *next;
	char name[80];			/* "uid 1000", "gid 100", "cgroup /a/b": for logs and telemetry */
	uint8_t match;			/* RNICD_MATCH_*: what it is */
	uint8_t configured;		/* an entry of the configuration (else: one uid's) */
	uint32_t id;			/* uid or gid */
	char cgroup[256];
	uint32_t set;			/* limits of its entry (bit per resource, RNICD_SHARE_SET); the others:
					 * `tenant default`'s */
	uint64_t limit[RNICD_RES_KINDS];
	uint32_t share;			/* its share of the engine while tenants compete (with RNICD_SHARE_SET) */
	uint64_t used[RNICD_RES_KINDS];
	uint64_t refused[RNICD_RES_KINDS];
	uint32_t gids;			/* the GID indexes its QPs may send from (bit per index); 0: its entry's
					 * `tenant default`'s, and 0 there: every one */
	uint64_t gid_refused;		/* address vectors refused for another source GID */
	uint32_t cm_ports;		/* the ports its CM ids may bind and listen on: first << 16 | last; 0: its
					 * entry's `tenant default`'s */
	uint64_t cm_port_refused;	/* binds and listens refused for a port outside them */
	uint32_t engine_id;		/* while it has connections: its number in the engine; else 0 */
	uint64_t log_window;		/* lines about its connections: the window (s) and the lines in it */
	uint32_t log_lines;
	uint32_t log_left_out;
	struct rnic_tenant_stats engine_base;	/* the engine's counters of that number when it got it */
	struct rnic_tenant_stats engine_acc;	/* what it used under earlier numbers */
	struct {			/* its configuration before a SIGHUP read the files again */
		uint8_t configured;
		uint32_t set;
		uint64_t limit[RNICD_RES_KINDS];
		uint32_t gids;
		uint32_t share;
		uint32_t cm_ports;
	} saved;
};

#define RNICD_SHARE_SET (1u << RNICD_RES_KINDS)	/* rnicd_tenant.set: its entry gives a share */

/* A `tenant` line of the configuration (or --tenant): "default|uid=N|gid=N|cgroup=/path [max-RES N]...
 * [gids I[,I...]] [share N]".
 * where names the line for error messages. 0 or -EINVAL (after a message on stderr). */
int rnicd_tenant_config(const char *where, const char *spec);
/* SIGHUP: forget every tenant's configuration before the files are read again (what they use stays), and
 * put it back if they have an error. */
void rnicd_tenant_config_reset(void);
void rnicd_tenant_config_restore(void);
/* After the configuration was read: every connected tenant's share to the engine. */
void rnicd_tenant_shares_apply(void);
/* The tenant of a new connection, its connection counted; NULL with errno EDQUOT (over its quota), EUSERS
 * (no engine number free) or ENOMEM. cgroup receives the peer's cgroup. */
struct rnicd_tenant *rnicd_tenant_join(const struct ucred *cred, char *cgroup, size_t len);
/* A connection of the tenant ended (after every object of it was released). */
void rnicd_tenant_leave(struct rnicd_tenant *t);
/* Count n more of a resource against the tenant's quota: 0, or EDQUOT (counted; logged the first time for
 * this tenant and resource). */
int rnicd_tenant_charge(struct rnicd_tenant *t, enum rnicd_res r, uint64_t n, pid_t pid);
void rnicd_tenant_release(struct rnicd_tenant *t, enum rnicd_res r, uint64_t n);
/* Whether the tenant's QPs may send from GID index sgid_index (its `gids`): 0, or EPERM (counted; logged
 * the first time for this tenant). */
int rnicd_tenant_gid_check(struct rnicd_tenant *t, uint8_t sgid_index, pid_t pid);
/* Whether the tenant's CM ids may bind or listen on a port (host byte order): 0 (port 0, an
 * ephemeral one, is always), or EACCES (counted; logged the first time for this tenant). */
int rnicd_tenant_cm_port_check(struct rnicd_tenant *t, uint16_t port, pid_t pid);
/* The GID indexes the tenant's QPs may send from (bit per index; 0: any). */
uint32_t rnicd_tenant_gids(const struct rnicd_tenant *t);
/* Whether a line about one of the tenant's connections may be logged (a tenant can connect and go without
 * end: RNICD_TENANT_LOG_LINES lines a minute at most); *left_out: lines not logged since the last one. */
#define RNICD_TENANT_LOG_LINES 20
int rnicd_tenant_log_ok(struct rnicd_tenant *t, uint32_t *left_out);
/* The engine's counters of the tenant since the daemon started. */
void rnicd_tenant_engine_stats(const struct rnicd_tenant *t, struct rnic_tenant_stats *out);
const char *rnicd_res_name(enum rnicd_res r);
/* Tenants with connections now. */
unsigned int rnicd_tenant_count(void);
/* Telemetry /rnicd/tenants. */
struct rte_tel_data;
int rnicd_tenant_telemetry(const char *cmd, const char *params, struct rte_tel_data *d);
void rnicd_tenant_fini(void);
/* A number option or quota: 0, or -EINVAL after a message naming `name` (main.c's parser). */
int rnicd_parse_number(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out);

struct rnicd_obj {
	uint8_t kind;
	void *ptr;			/* struct rnic_pd / rnic_mr / rnic_cq / rnic_qp / rnic_srq */
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

/* A client's completion channel: the daemon's end of its event socket, and the CQs bound to it. */
#define RNICD_MAX_CHANNELS 8	/* per connection */
struct rnicd_channel {
	uint8_t used;
	int sock;
	uint32_t cqs;
};

struct rnicd_session {
	struct rnicd_session *next;
	int sock;
	uint32_t id;
	pid_t pid;			/* the peer (SO_PEERCRED), for the operator */
	uid_t uid;
	struct rnicd_tenant *tenant;	/* whose quotas and share it uses */
	char cgroup[128];		/* the peer's, when it connected */
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
	/* Events (events.c): the daemon's end of the async event socket (-1 before OPEN), the daemon's
	 * completion channel of the session's CQs that have a client's channel, the client's channels. */
	int async_sock;
	struct rnic_comp_channel *evch;
	struct rnicd_channel chan[RNICD_MAX_CHANNELS];
	uint64_t events_dropped;	/* the client's event socket was full */
	uint8_t events_logged;
	struct rnicd_cm *cm;		/* its CM channels and ids (cm.c), after its first CM request */
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

/* The client's handle of the session's object of this kind at ptr, or 0 (it has none there). */
uint32_t rnicd_session_handle_of(const struct rnicd_session *s, const void *ptr, enum rnicd_obj_kind kind);

/* A socketpair for events: the daemon's end non-blocking (a client that does not read must not stall it),
 * the client's as libibverbs' event fds are (blocking until the program says otherwise). 0 or an errno. */
int rnicd_event_socket(int *daemon_end, int *client_end);
/* Events (events.c). After OPEN: the async event socket, its client end in *client_end (0 or an errno). */
int rnicd_events_open(struct rnicd_session *s, int *client_end);
/* CREATE_COMP_CHANNEL / DESTROY_COMP_CHANNEL (EBUSY while a CQ is bound to it). */
int rnicd_events_create_channel(struct rnicd_session *s, struct rnicd_rep *rep, int *client_end, int *daemon_end);
int rnicd_events_destroy_channel(struct rnicd_session *s, uint32_t handle);
/* What a CQ bound to the client's channel handle (0: none) is created with: the daemon's channel and a CQ
 * context naming the client's channel. 0 or ENOENT. */
int rnicd_events_cq_channel(struct rnicd_session *s, uint32_t handle, struct rnic_comp_channel **evch,
			    void **cq_context);
/* A CQ made with rnicd_events_cq_channel's context was created (+1) / destroyed (-1). */
void rnicd_events_cq_bound(struct rnicd_session *s, const struct rnic_cq *cq, int delta);
/* Send the client every event pending for it; the fds poll() watches for them (at most 2). */
void rnicd_events_forward(struct rnicd_session *s);
int rnicd_events_fds(const struct rnicd_session *s, int *fds);
/* After the session's objects are gone: its channels and sockets. */
void rnicd_events_close(struct rnicd_session *s);

/* The connection manager (cm.c, doc/cm.md "Through rnicd"): the daemon's CM serving its clients' channels
 * and ids. */
struct rnicd_cm;
/* Whether a request is the CM's. */
static inline int
rnicd_cm_cmd(uint32_t cmd)
{
	return cmd >= RNICD_CM_CREATE_CHANNEL && cmd <= RNICD_CM_ACK_EVENT;
}
/* Serve a CM request (rnicd.lock held): 0 or an errno; *fd_out, a descriptor to send with the reply and
 * close (or -1). */
int rnicd_cm_serve(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep, int *fd_out);
/* The session goes: its ids destroyed (their peers told, as rnic_cm_destroy_id), its events and channels. */
void rnicd_cm_end(struct rnicd_session *s);
/* A client's QP is about to be destroyed: no CM id drives it any more. */
void rnicd_cm_qp_gone(struct rnic_qp *qp);
/* The QP of handle in the connection of client_id, if that connection is the same process's (pid and tenant)
 * as s; NULL otherwise: a QP of another process names nothing. */
struct rnic_qp *rnicd_session_qp(const struct rnicd_session *s, uint32_t client_id, uint32_t handle);

/* Telemetry commands under /rnicd. */
void rnicd_telemetry_register(void);

/* Tests only: with RNICD_TEST_CANARY=HEX (16 hex digits) in the environment, fill memory of the daemon (its
 * heap and DPDK's) with that 8-byte pattern, which no client may ever see (tests/rnicd/test_adversarial.c). */
void rnicd_canary_fill(void);

#endif /* RNICD_H */
