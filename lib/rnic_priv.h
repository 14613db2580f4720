/* SPDX-License-Identifier: BSD-3-Clause
 * softrnic internals shared by the library's modules: the device, its context and PD, logging.
 * Module-specific state lives in each module's own header (rnic_mr.h, rnic_cq.h, rnic_qp.h, rnic_wqe.h).
 */
#ifndef RNIC_PRIV_H
#define RNIC_PRIV_H

#include <stdint.h>
#include <pthread.h>

#include <rte_ether.h>
#include <rte_log.h>
#include <rte_ring.h>

#include "rnic.h"
#include "rnic_evq.h"
#include "rnic_provider.h"

extern int rnic_logtype;
#define RNIC_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rnic_logtype, "softrnic: " fmt "\n", ##__VA_ARGS__)

/*
 * Lines a tenant or a remote peer can cause (a CQ it overran, a queue it wrote nonsense into, a peer with no
 * route) go through a limit per call site: RNIC_LOG_BURST lines a second, and the first line of a later
 * second says how many were suppressed before it; the events themselves are counted (device counters). A
 * flood of them costs the lcores a counter increment, not a write to the log.
 */
#define RNIC_LOG_BURST 5

struct rnic_log_limit {
	uint64_t second;		/* the second the lines were counted in (monotonic, + 1: 0 is none) */
	uint32_t lines;			/* lines of that second */
	uint32_t suppressed;		/* lines suppressed since the last one logged */
};

/* Lines suppressed by every limit since the engine started (engine-wide; the device counters show it). */
extern uint64_t rnic_log_suppressed;

/* Whether the call site may log now; *suppressed: lines it suppressed before, to say so (0: none). */
int rnic_log_limit_pass(struct rnic_log_limit *limit, uint32_t *suppressed);

#define RNIC_LOG_LIMITED(level, fmt, ...) do { \
	static struct rnic_log_limit rnic_log_limit_; \
	uint32_t rnic_log_suppressed_; \
	if (rnic_log_limit_pass(&rnic_log_limit_, &rnic_log_suppressed_)) { \
		if (rnic_log_suppressed_ != 0) \
			RNIC_LOG(level, "%u lines like the next one suppressed", rnic_log_suppressed_); \
		RNIC_LOG(level, fmt, ##__VA_ARGS__); \
	} \
} while (0)

#define RNIC_DEV_NAME_MAX 32
#define RNIC_GID_TBL_LEN 4
#define RNIC_MAX_DEVICES 8
#define RNIC_MAX_SHARDS 8	/* lcores per stage: QPs are spread over them by QPN */
#define RNIC_MAX_MSG_SIZE (1u << 31)	/* max_msg_sz: the longest message, and DMA length, IBA allows */

/*
 * Congestion control (doc/congestion.md): DCQCN's notification point (CE-marked packets answered with CNPs)
 * and reaction point (a QP's rate cut on CNPs and recovered by timer and byte counter), with mlx5's parameter
 * names, units and defaults (--cc). Rates are in Mbit/s, times in microseconds.
 */
struct rnic_cc_params {
	/* --cc, and rnic_set_cc while the engine runs: the data path reads these two as they are now */
	uint32_t rp_enable;		/* DCQCN acts on the CNPs its QPs receive (--cc none: counted only) */
	uint32_t np_enable;		/* CE-marked packets are answered with CNPs */
	uint32_t np_cnp_dscp;		/* the DSCP of the CNPs sent */
	uint32_t np_min_time_between_cnps;	/* us: at most one CNP per QP (and direction) this often */
	uint32_t rp_time_reset;		/* us between the rate increase timer's events */
	uint32_t rp_byte_reset;		/* 64-byte units sent between the byte counter's events */
	uint32_t rp_threshold;		/* F: events of either kind before additive increase */
	uint32_t rp_ai_rate;		/* Mbit/s: additive increase */
	uint32_t rp_hai_rate;		/* Mbit/s: hyper increase */
	uint32_t rp_gd;			/* a cut takes rate x alpha / 2^rp_gd (alpha in 1/1024) */
	uint32_t rp_min_dec_fac;	/* %: a cut keeps at least this share of the rate */
	uint32_t rp_min_rate;		/* Mbit/s */
	uint32_t rp_max_rate;		/* Mbit/s; 0: the port's link speed */
	uint32_t rp_dce_tcp_g;		/* alpha's weight: alpha = alpha x g / 1024 (+ 1 - g / 1024 on a CNP) */
	uint32_t rp_dce_tcp_rtt;	/* us: alpha's update period */
	uint32_t rp_rate_reduce_monitor_period;	/* us: at most one cut this often */
	uint32_t rp_initial_alpha_value;	/* alpha of a QP's first CNP, in 1/1024 */
};

/* mlx5's defaults (doc/congestion.md has the sources). */
#define RNIC_CC_DEFAULTS { \
	.rp_enable = 1, .np_enable = 1, .np_cnp_dscp = 48, .np_min_time_between_cnps = 4, \
	.rp_time_reset = 300, .rp_byte_reset = 32767, .rp_threshold = 1, .rp_ai_rate = 5, .rp_hai_rate = 50, \
	.rp_gd = 11, .rp_min_dec_fac = 50, .rp_min_rate = 1, .rp_max_rate = 0, .rp_dce_tcp_g = 1019, \
	.rp_dce_tcp_rtt = 1, .rp_rate_reduce_monitor_period = 4, .rp_initial_alpha_value = 1023, \
}

struct rnic_mr_table;
struct rnic_cq_table;
struct rnic_qp_table;
struct rnic_pipeline;
struct rnic_dbq_reader;
struct rnic_dbq;

/* Table sizes and per-object limits of one device; rnic_query_device reports them. */
struct rnic_limits {
	uint32_t max_pd;
	uint32_t max_mr;
	uint64_t max_mr_size;
	uint32_t max_mtt_entries;	/* pages over all MRs of the device */
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_inline_data;
	uint32_t max_qp_rd_atom;
	uint32_t max_ah;
	uint32_t window;		/* bytes an RC QP may have sent and not had acknowledged (--window):
					 * a QP's PSN window is this over its path MTU */
};

/*
 * One softrnic device: the tables a hardware RNIC keeps in its on-card memory, and the port it sends on.
 * Created by rnic_engine_init, one per ethdev port.
 */
struct rnic_device {
	char name[RNIC_DEV_NAME_MAX];
	const struct rnic_provider_ops *ops;	/* who carries out its verbs (rnic_provider.h) */
	uint16_t port_id;
	/* Has the port send the frames its TX queue still holds, for a port that may keep some until its next
	 * burst (rnic_port_tx_needs_kick); NULL for a port that sends all it takes. Set by the runtime, which
	 * owns the ports; called by the engine's stages on idle passes only (rnic_tx_kick). */
	void (*tx_kick)(uint16_t port_id, uint16_t queue, struct rte_mempool *mp);
	int socket_id;
	uint64_t guid;			/* network byte order, derived from the MAC */
	struct rte_ether_addr mac;
	union rnic_gid gid[RNIC_GID_TBL_LEN];
	int gid_count;
	enum rnic_mtu active_mtu;
	struct rnic_limits lim;
	struct rnic_cc_params cc;	/* congestion control (--cc) */

	/* Control-path lock: verbs that create or destroy objects take it; the data path never does. */
	pthread_mutex_t lock;
	uint32_t open_contexts;
	uint32_t pd_count;
	uint32_t ah_count;
	uint32_t next_pdn;
	uint32_t srq_count;		/* SRQs of the device, up to lim.max_qp */
	uint32_t next_srqn;		/* SRQ numbers (never 0: a CQE's srqn says "from an SRQ") */

	struct rnic_mr_table *mr_table;
	struct rnic_cq_table *cq_table;
	struct rnic_qp_table *qp_table;
	/* The engine's stages for this device: one pipeline per shard; QP n belongs to shard n % nb_shards. */
	struct rnic_pipeline *pipeline[RNIC_MAX_SHARDS];
	uint16_t nb_shards;
	/* Its port has one queue pair per shard, which the shard's requester and responder (on one lcore) share;
	 * else two (rnic_device_port_queue). */
	uint8_t shared_tx_queue;
	uint8_t loopback;		/* its port's peer is in this process: frames carry our TX stamps */
	struct rnic_neigh *neigh;	/* ARP/ND cache and rings (rnic_neigh.h), with shard 0's pipeline */

	/* 64-bit SQ doorbells (rnic_wqe.h), multi-producer (post_send callers), single consumer (engine). */
	struct rte_ring *doorbell_ring;
	uint32_t doorbell_ring_size;
	/* rnicd clients' doorbell queues (rnic_dbq.h), polled by the doorbell stage after the ring: entries
	 * published with a release store of q, removed by clearing q then rnic_engine_quiesce. */
	struct rnic_dbq_reader *client_dbq;
	uint32_t nb_client_dbq;		/* entries in use or used: the doorbell stage looks at these */

	/* Events any producer of a CQ may see (atomics, off the data path's lines): CQs that overran and went
	 * to error, completions they did not take. */
	uint64_t cq_errors __rte_cache_aligned;
	uint64_t cqes_lost;
};

#define RNIC_MAX_CLIENT_DBQ 256

/*
 * Tenants (rnicd's, doc/rnicd.md): the engine shares its doorbell stage and its requesters fairly between
 * them (doc/engine.md, "Fair service") and counts each one's use. Tenant 0 is the process itself (every
 * QP of an application's own engine); rnicd numbers its tenants from 1.
 */
#define RNIC_MAX_TENANTS 256
#define RNIC_SHARE_MAX 64		/* a tenant's share: 1 .. RNIC_SHARE_MAX (rnic_device_tenant_share) */

struct rnic_tenant_stats {
	uint64_t doorbells;		/* taken from its doorbell queues */
	uint64_t doorbells_dropped;	/* naming no QP of the client that rang */
	uint64_t packets;		/* request packets its QPs sent */
	uint64_t bytes;			/* their payload bytes */
	uint64_t psns;			/* PSNs charged to its share (a READ: one per response packet) */
	uint64_t deferred;		/* visits of its QPs put off: it had used its share of the round */
	uint64_t cap_waits;		/* visits of its QPs its cap stopped (they waited for its tokens) */
	uint64_t cap_held_ns;		/* time its QPs waited for its cap's tokens (summed over shards) */
	uint64_t cap_messages;		/* messages (WQEs' requests) its cap counted */
};

/* A tenant's counters summed over the device's pipelines. */
void rnic_device_tenant_stats(const struct rnic_device *dev, uint32_t tenant, struct rnic_tenant_stats *out);
/* A tenant's share of the requesters while tenants compete (doc/engine.md, "Fair service"): 1 (the default)
 * .. RNIC_SHARE_MAX (64); tenants with work get the requesters' bytes in the ratio of their shares. Taken
 * at each tenant's next scheduler round; shards that do not exist yet are not set. 0 or -EINVAL. */
int rnic_device_tenant_share(struct rnic_device *dev, uint32_t tenant, uint32_t share);
/* A tenant's cap over its QPs of the device (doc/congestion.md, "Tenants' caps"): bits a second of its
 * frames on the wire (headers included, as a QP's rate_limit) and messages (WQEs' requests) a second; 0: no
 * cap of that kind. Each shard holds an even part of it. Taken at the tenant's next scheduler round; shards
 * that do not exist yet are not set. 0 or -EINVAL (a rate outside the limits below). */
int rnic_device_tenant_cap(struct rnic_device *dev, uint32_t tenant, uint64_t bits_per_s, uint64_t msgs_per_s);
#define RNIC_CAP_MIN_BPS 1000000ull		/* 1 Mbit/s: below it the bucket's count of a cycle's bytes is coarse */
#define RNIC_CAP_MAX_BPS 1000000000000ull	/* 1 Tbit/s */
#define RNIC_CAP_MAX_MPS 100000000ull		/* 100 M messages/s */

/* rnicd: let the engine poll a client's doorbell queue (daemon mapping, its size) / stop. 0 or -errno.
 * owner: the client (its doorbells may name only its QPs); tenant: whose share its doorbells take. */
int rnic_device_attach_dbq(struct rnic_device *dev, struct rnic_dbq *q, uint32_t size, uint32_t owner,
			   uint32_t tenant);
void rnic_device_detach_dbq(struct rnic_device *dev, struct rnic_dbq *q);

/*
 * Where a context's host-interface memory comes from (WQE buffers, wr_ids, CQE rings, doorbell records):
 * DPDK memory for an application's own context; shared memory for a context rnicd opened for a client.
 * alloc returns zeroed memory or NULL.
 */
struct rnic_hostmem_ops {
	void *(*alloc)(void *arg, size_t size);
	void (*free)(void *arg, void *ptr);
};

struct rnic_client;
struct rnic_dbq;

/* rnic_context as the library keeps it. */
struct rnic_context_priv {
	struct rnic_context pub;
	struct rnic_device *dev;
	/* Pending async events (struct rnic_async_event); its fd is pub.async_fd. */
	struct rnic_evq async;
	/* rnicd's context for one client: host memory in the client's shared region, the client's id, its
	 * tenant (the QPs it creates are served within that tenant's share) and the GID indexes they may send
	 * from (bit per index; 0: any). */
	const struct rnic_hostmem_ops *hostmem;
	void *hostmem_arg;
	uint32_t owner;
	uint32_t tenant;
	uint32_t sgid_mask;
	/* A client's context (the process talks to rnicd): the connection and the doorbell queue. */
	struct rnic_client *client;
	struct rnic_dbq *dbq;
	/* PDs, CQs and completion channels the context holds (MRs, QPs and AHs hold a PD): while any is
	 * left, rnic_close_device refuses (EBUSY), as libibverbs' providers do. */
	uint32_t nb_objects;
};

static inline struct rnic_context_priv *
rnic_context_priv(struct rnic_context *ctx)
{
	return (struct rnic_context_priv *)ctx;
}

static inline struct rnic_device *
rnic_ctx_dev(struct rnic_context *ctx)
{
	return rnic_context_priv(ctx)->dev;
}

/* An object of the context was created / destroyed (rnic_context_priv.nb_objects). */
static inline void
rnic_ctx_hold(struct rnic_context *ctx)
{
	__atomic_fetch_add(&rnic_context_priv(ctx)->nb_objects, 1, __ATOMIC_RELAXED);
}

static inline void
rnic_ctx_release(struct rnic_context *ctx)
{
	__atomic_fetch_sub(&rnic_context_priv(ctx)->nb_objects, 1, __ATOMIC_RELAXED);
}

/* The provider that carries out the context's verbs. */
static inline const struct rnic_provider_ops *
rnic_ctx_ops(struct rnic_context *ctx)
{
	return rnic_ctx_dev(ctx)->ops;
}

/* Zeroed host-interface memory for an object of the context, and its release. */
void *rnic_hostmem_alloc(struct rnic_context *ctx, size_t size);
void rnic_hostmem_free(struct rnic_context *ctx, void *ptr);

struct rnic_pd_priv {
	struct rnic_pd pub;
	uint32_t pdn;			/* protection domain number checked by the MPT */
	uint32_t refcnt;		/* MRs, QPs and AHs that use this PD */
};

static inline struct rnic_pd_priv *
rnic_pd_priv(struct rnic_pd *pd)
{
	return (struct rnic_pd_priv *)pd;
}

/* rnic_ah as the library keeps it: the resolved address vector. */
struct rnic_ah_priv {
	struct rnic_ah pub;
	struct rnic_ah_attr attr;
};

/* What the engine arguments set for one device (rnic_engine_args.c parses them, rnic_devices.c creates it). */
struct rnic_device_conf {
	char name[RNIC_DEV_NAME_MAX];
	uint16_t port_id;
	union rnic_gid gid[RNIC_GID_TBL_LEN];	/* the port's IP addresses as RoCEv2 GIDs (IPv4-mapped) */
	int gid_count;			/* 1 .. RNIC_GID_TBL_LEN */
	enum rnic_mtu mtu;
	uint8_t shared_tx_queue;	/* one queue pair per shard (struct rnic_device) */
	uint32_t doorbell_ring_size;
	struct rnic_limits lim;
	struct rnic_cc_params cc;
};

/* The port queues a device's shards use: two per shard (shard k's requester transmits on 2k, its responder on
 * 2k + 1), or with shared_tx_queue one (k, both). is_responder: 0 or 1. */
static inline uint16_t
rnic_device_port_queue(const struct rnic_device *dev, uint16_t shard, unsigned int is_responder)
{
	return dev->shared_tx_queue ? shard : (uint16_t)(2 * shard + is_responder);
}

/* Create a device on an already started port; returns 0 or a negative errno. */
int rnic_device_create(const struct rnic_device_conf *conf, struct rnic_device **out);
/* Free the device's tables; -EBUSY while a context is open. */
int rnic_device_destroy(struct rnic_device *dev);

/* The devices the engine created, for rnic_get_device_list (rnic_engine_state.c: the runtime adds them,
 * and clears the list when it releases them). */
int rnic_engine_device_add(struct rnic_device *dev);
void rnic_engine_devices_clear(void);
int rnic_engine_device_count(void);
struct rnic_device *rnic_engine_device(int index);
/* The device of this process that has the GID, or NULL. */
struct rnic_device *rnic_engine_device_by_gid(const union rnic_gid *gid);

/*
 * A pipeline stage: poll() does up to budget units of work and returns how many it did (0 = idle). The
 * engine's lcores call the stages mapped to them in a loop between rnic_engine_start and rnic_engine_stop.
 */
struct rnic_stage {
	const char *name;
	unsigned int (*poll)(void *arg, unsigned int budget);
	void *arg;
};

/*
 * Wait until every running engine lcore has finished the loop iteration it was in (RCU quiescent state),
 * so nothing it read before the call is still in use. Returns 0 at once when the engine is stopped;
 * -ETIMEDOUT if an lcore does not pass a quiescent point within a second.
 */
int rnic_engine_quiesce(void);

/*
 * Run release(arg) once no engine lcore can still use what the caller unpublished before the call: at once
 * when rnic_engine_quiesce succeeds, else later, when every lcore has passed a quiescent point (deferred
 * reclamation, rte_rcu_qsbr_dq: reclaimed by the next rnic_engine_quiesce, retire or engine stop), never
 * while one may still read it. 0: released; 1: deferred; -ENOSPC: the deferred queue is full, nothing is
 * released (the caller's object is leaked, not freed under a reader).
 */
int rnic_engine_retire(void (*release)(void *arg), void *arg);

/*
 * Whether a count of users (a CQ's, an SRQ's QPs; a PD's objects) is 0 once the releases rnic_engine_retire
 * deferred have run: a destroy_qp that returned 0 while an lcore was slow to quiesce still holds its CQs,
 * SRQ and PD until then, and the application, told the QP is gone, destroys them next (one more quiesce,
 * at most a second, before such a destroy is refused with EBUSY).
 */
int rnic_engine_users_gone(const uint32_t *users);
/* An entry of the deferred queue, and the queue's free function (rte_rcu_qsbr_free_resource_t), for the
 * runtime that creates it. */
struct rnic_deferred_release {
	void (*release)(void *arg);
	void *arg;
};
void rnic_engine_release_deferred(void *p, void *e, unsigned int n);

/* What the runtime sets for rnic_engine_quiesce, rnic_engine_retire and rnic_engine_running
 * (rnic_engine_state.c): the RCU state its lcores report to and the queue of releases waiting for them (NULL
 * before rnic_engine_init), and whether they run. */
struct rte_rcu_qsbr;
struct rte_rcu_qsbr_dq;
struct rnic_engine_state {
	struct rte_rcu_qsbr *qsbr;
	struct rte_rcu_qsbr_dq *dq;
	volatile int running;
};
extern struct rnic_engine_state rnic_engine_state;

/* The engine's control-path entry points, which the modules below it (the QP) reach through these: the
 * engine registers them when it creates a pipeline; without a pipeline they do nothing. */
struct rnic_engine_hooks {
	void (*release_qp)(struct rnic_qp *qp);
	void (*route_prepare)(const struct rnic_device *dev, const union rnic_gid *dgid);
};
void rnic_engine_hooks_register(const struct rnic_engine_hooks *hooks);
/* Control path, after rnic_engine_quiesce: the QP is reset or destroyed; the frames its requester keeps for
 * resending go back to its pipeline (freed there, on the requester's lcore). */
void rnic_engine_release_qp(struct rnic_qp *qp);
/* Start resolving a destination's MAC now, so that the first frame to it need not wait (control path: a
 * QP's move to RTR, an address handle). Does not block. */
void rnic_engine_route_prepare(const struct rnic_device *dev, const union rnic_gid *dgid);

#define RNIC_MAX_STAGES_PER_LCORE 16
/* An engine lcore's polling: cycles of loops that found work and of loops that did not, and the names of its
 * stages (up to *nb, at most RNIC_MAX_STAGES_PER_LCORE; *nb is set to how many). -ENOENT if the lcore runs
 * no stage. */
int rnic_engine_lcore_load(unsigned int lcore_id, uint64_t *busy, uint64_t *idle, const char **names,
			   unsigned int *nb);
/* The device counters' mlx5 names (rnic_hw_counters.c): how many (at most RNIC_HW_COUNTERS_MAX), and the i-th one's name and value made of
 * the device's own counters base[0 .. nb_base). */
#define RNIC_HW_COUNTERS_MAX 32
unsigned int rnic_hw_counter_count(void);
void rnic_hw_counter(unsigned int i, const struct rnic_counter *base, unsigned int nb_base,
		     struct rnic_counter *out);
/* Telemetry commands under /rnic (rnic_telemetry.c). */
void rnic_telemetry_register(void);
/* Whether the engine's lcores are running (between rnic_engine_start and rnic_engine_stop). */
int rnic_engine_running(void);


/* Map a stage to an lcore of the EAL (the main lcore's run in rnic_engine_progress); only while the engine
 * is stopped. Returns 0 or a negative errno. */
int rnic_engine_add_stage(unsigned int lcore_id, const struct rnic_stage *stage);

/*
 * Queue an async event for the context that owns the object and wake its async_fd. Safe from any thread,
 * including engine lcores (lock-free ring + eventfd write). Returns 0 or -ENOSPC when the context's event ring
 * is full (the event is then counted as lost and logged).
 */
int rnic_async_event_raise(struct rnic_context *ctx, enum rnic_event_type type, void *element);

/* Reference counting on PDs so that a PD in use cannot be deallocated (EBUSY, as IBA requires). */
void rnic_pd_get(struct rnic_pd *pd);
void rnic_pd_put(struct rnic_pd *pd);

#endif /* RNIC_PRIV_H */
