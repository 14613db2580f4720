/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues: mlx5-style rings of 64-byte CQEs (doc/cq.md, "CQE") shared between the engine,
 * which produces CQEs, and rnic_poll_cq (lib/qp/rnic_poll.c), which consumes them; the doorbell record,
 * arming and completion events (doc/cq.md, "Doorbell record", "Arming and events").
 */
#ifndef RNIC_CQ_H
#define RNIC_CQ_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_per_lcore.h>
#include <rte_ring.h>

#include "rnic_priv.h"

/* CQE opcodes (op_own[7:4]) */
enum rnic_cqe_opcode {
	RNIC_CQE_REQ = 0,
	RNIC_CQE_RESP_RDMA_WRITE_IMM = 1,
	RNIC_CQE_RESP_SEND = 2,
	RNIC_CQE_RESP_SEND_IMM = 3,
	RNIC_CQE_RESP_SEND_INV = 4,
	RNIC_CQE_REQ_ERR = 13,
	RNIC_CQE_RESP_ERR = 14,
	RNIC_CQE_INVALID = 15,
};

/* Error syndromes of error CQEs (mlx5 values). */
enum rnic_cqe_syndrome {
	RNIC_CQE_SYND_LOCAL_LENGTH = 0x01,
	RNIC_CQE_SYND_LOCAL_QP_OP = 0x02,
	RNIC_CQE_SYND_LOCAL_PROT = 0x04,
	RNIC_CQE_SYND_WR_FLUSH = 0x05,
	RNIC_CQE_SYND_MW_BIND = 0x06,
	RNIC_CQE_SYND_BAD_RESP = 0x10,
	RNIC_CQE_SYND_LOCAL_ACCESS = 0x11,
	RNIC_CQE_SYND_REMOTE_INVAL_REQ = 0x12,
	RNIC_CQE_SYND_REMOTE_ACCESS = 0x13,
	RNIC_CQE_SYND_REMOTE_OP = 0x14,
	RNIC_CQE_SYND_RETRY_EXC = 0x15,
	RNIC_CQE_SYND_RNR_RETRY_EXC = 0x16,
	RNIC_CQE_SYND_REMOTE_ABORT = 0x22,
};

#define RNIC_CQE_OWNER 0x01
#define RNIC_CQE_SE 0x02
#define RNIC_CQE_OP_OWN_INIT 0xf1	/* opcode INVALID, owner 1: hardware-owned on the first pass */
#define RNIC_CQE_GRH_SHIFT 28

/* The 64-byte CQE, mlx5 layout, all fields big-endian. */
struct rnic_cqe64 {
	uint64_t srq_wr_id;		/* 0x00: a receive from an SRQ: the WQE's wr_id (mlx5: LRO fields) */
	uint8_t rsvd0[4];
	uint32_t rss_hash_result;	/* 0x0c */
	uint8_t rss_hash_type;		/* 0x10 */
	uint8_t ml_path;		/* 0x11 */
	uint8_t rsvd1[2];
	uint16_t checksum;		/* 0x14 */
	uint16_t slid;			/* 0x16 */
	uint32_t flags_rqpn;		/* 0x18: [29:28] GRH present, [23:0] remote QPN (UD) */
	uint8_t hds_ip_ext;		/* 0x1c */
	uint8_t l4_hdr_type_etc;	/* 0x1d */
	uint16_t vlan_info;		/* 0x1e */
	uint32_t srqn_uidx;		/* 0x20: a receive from an SRQ: its number (else 0) */
	uint32_t imm_inval_pkey;	/* 0x24 */
	uint8_t rsvd2[4];
	uint32_t byte_cnt;		/* 0x2c */
	uint64_t timestamp;		/* 0x30; in an error CQE 0x36 is vendor_err_synd and 0x37 syndrome */
	uint32_t sop_drop_qpn;		/* 0x38: [31:24] send WQE opcode (requester), [23:0] QPN */
	uint16_t wqe_counter;		/* 0x3c */
	uint8_t signature;		/* 0x3e */
	uint8_t op_own;			/* 0x3f: [7:4] opcode, [3:2] format, [1] SE, [0] owner */
};

#define RNIC_ERR_CQE_VENDOR_SYND 0x36
#define RNIC_ERR_CQE_SYNDROME 0x37

/* The doorbell record words (big-endian), as mlx5. */
#define RNIC_CQ_DB_SET_CI 0
#define RNIC_CQ_DB_ARM 1
#define RNIC_CQ_ARM_NEXT 0
#define RNIC_CQ_ARM_SOLICITED (1u << 24)

/* The arm state the producer tests (the CQ context's notification state). */
#define RNIC_CQ_ARMED (1u << 31)
#define RNIC_CQ_ARMED_SOLICITED (1u << 30)

struct rnic_comp_channel_priv {
	struct rnic_comp_channel pub;
	struct rnic_evq events;		/* CQs with a pending completion event; its fd is pub.fd */
	uint32_t nb_cqs;		/* CQs bound to the channel */
};

/*
 * What the consumer and the producers of a CQ share besides the CQEs: it follows them in the CQ's
 * host-interface block (shared memory when the CQ belongs to an rnicd client, so the engine never takes an
 * address or a size from here).
 */
struct rnic_cq_hif {
	/* The consumer writes its line on every poll that returns entries: producers read it only when the
	 * consumer index they saw last says the CQ is full. */
	uint32_t dbrec[2];		/* doorbell record: consumer index; arm command */
	/* The producers' line, written once per CQE. */
	uint32_t prod __rte_cache_aligned;	/* CQEs reserved by producers (with a compare-and-swap) */
	/* Read by producers for every CQE and by the consumer on every poll that finds nothing; written
	 * seldom: the consumer arms, the producer that fires the event clears the arm, overflow sets error. */
	uint32_t arm __rte_cache_aligned;	/* 0, or RNIC_CQ_ARMED [| RNIC_CQ_ARMED_SOLICITED] | sn */
	uint32_t last_fired_sn;		/* sn + 1 of the last arm that fired an event (0: none yet) */
	uint8_t error;			/* overflowed: no CQE is written any more (for the consumer: the
					 * producers go by their own flag, rnic_cq_priv.failed) */
};

struct rnic_cq_priv {
	struct rnic_cq pub;
	uint32_t cqn;
	uint32_t log_nent;
	struct rnic_cqe64 *cqes;	/* the host-interface block: nent CQEs, then struct rnic_cq_hif */
	struct rnic_cq_hif *hif;
	uint32_t *dbrec;		/* hif->dbrec */

	/* producer side (the engine lcores whose QPs complete here) */
	uint32_t ci_seen;		/* the consumer index producers read last (a lower bound of the real one) */
	uint8_t failed;			/* overran: in error for good. Kept here, not in the block, whose error
					 * word an rnicd client can clear: the overrun is told once, whatever
					 * the block says */
	uint64_t events;		/* completion events delivered */
	uint64_t overflows;

	/* consumer side (the application) */
	uint32_t cons;
	uint32_t arm_sn;		/* incremented by rnic_get_cq_event, as mlx5_cq_event does */
	uint32_t last_arm;		/* the last arm command written, for the repeated-sn rule */
	uint32_t attached;		/* QPs using the CQ */
};

/* Bytes of the host-interface block of a CQ of nent entries; point a CQ's fields into one mapped at base. */
size_t rnic_cq_hif_size(uint32_t nent);
void rnic_cq_bind(struct rnic_cq_priv *cq, void *base, uint32_t nent);

static inline struct rnic_cq_priv *
rnic_cq_priv(struct rnic_cq *cq)
{
	return (struct rnic_cq_priv *)cq;
}

/* What the engine knows about one finished work request; rnic_cq_push encodes it into a CQE. */
struct rnic_cqe_desc {
	uint32_t qpn;
	uint16_t wqe_counter;		/* index of the WQE in its SQ or RQ; poll maps it back to wr_id */
	uint8_t is_send;		/* 1: requester (SQ) completion, 0: responder (RQ) completion */
	uint8_t wqe_opcode;		/* send completions: the WQE's opcode (RNIC_WQE_OP_*, rnic_wqe.h) */
	enum rnic_wc_status status;
	uint8_t vendor_err;
	uint8_t solicited;		/* receive completions: the request had the SE bit */
	uint8_t with_imm;		/* receive: SEND/WRITE with immediate */
	uint8_t with_inv;		/* receive: SEND with invalidate (imm_inval holds the rkey) */
	uint8_t is_rdma_write;		/* receive: the completion consumed a WQE for RDMA WRITE with immediate */
	uint8_t grh;			/* receive on UD: a GRH precedes the payload in the buffer */
	uint32_t byte_cnt;
	uint32_t imm_inval;		/* immediate (network byte order) or invalidated rkey */
	uint32_t src_qp;		/* UD: source QPN */
	uint32_t srqn;			/* receive from an SRQ: its number (0: the QP's RQ), and the WQE's */
	uint64_t wr_id;			/* wr_id, which the CQE carries (poll cannot map an SRQ slot back) */
};

/* Create/free the device's CQ table (called by the device module). */
int rnic_cq_table_create(struct rnic_device *dev);
void rnic_cq_table_free(struct rnic_device *dev);

/*
 * Write one CQE. Safe from several producers at once (the requester and responder lcores of QPs sharing
 * the CQ, the control path). Returns 0; -ENOSPC when the CQ is full: the CQ enters the error state,
 * RNIC_EVENT_CQ_ERR is raised once, and nothing is overwritten; -EIO when the CQ is already in error.
 */
int rnic_cq_push(struct rnic_cq *cq, const struct rnic_cqe_desc *desc);
/* n CQEs in order with one reservation (the same results as n rnic_cq_push calls). */
int rnic_cq_push_burst(struct rnic_cq *cq, const struct rnic_cqe_desc *desc, unsigned int n);

/*
 * CQEs the calling thread pushes later, with the ones it defers after them: up to RNIC_CQ_DEFER_MAX to one CQ
 * go with one reservation, one fence and one look at the arm word, where a push each costs all three. A
 * deferral to another CQ, the batch full, and every push of the thread (rnic_cq_push, rnic_cq_push_burst)
 * push what is deferred first, so a thread's CQEs reach each CQ in the order it produced them. The thread
 * makes them visible with rnic_cq_flush_deferred before it lets go (the engine's stages: at the end of
 * their burst).
 */
#define RNIC_CQ_DEFER_MAX 32
struct rnic_cq_deferred {
	struct rnic_cq *cq;
	unsigned int n;
	struct rnic_cqe_desc d[RNIC_CQ_DEFER_MAX];
};
RTE_DECLARE_PER_LCORE(struct rnic_cq_deferred, rnic_cq_deferred);

void rnic_cq_flush_deferred(void);

/* The entry of the next CQE the thread defers for cq: the caller fills every field (it held an older CQE). */
static inline struct rnic_cqe_desc *
rnic_cq_defer_slot(struct rnic_cq *cq)
{
	struct rnic_cq_deferred *b = &RTE_PER_LCORE(rnic_cq_deferred);

	if (b->n != 0 && (b->cq != cq || b->n == RNIC_CQ_DEFER_MAX))
		rnic_cq_flush_deferred();
	b->cq = cq;
	return &b->d[b->n++];
}

/* Entries the producer may still write before the CQ is full (by the consumer's doorbell record). */
uint32_t rnic_cq_free_slots(struct rnic_cq *cq);

/* The QPs attached to a CQ keep it alive: destroy_cq fails with EBUSY while the count is non-zero. */
void rnic_cq_attach(struct rnic_cq *cq);
void rnic_cq_detach(struct rnic_cq *cq);

/* mlx5 syndrome <-> completion status */
uint8_t rnic_cqe_syndrome(enum rnic_wc_status status);
enum rnic_wc_status rnic_cqe_status(uint8_t syndrome);

/*
 * Manual progress (doc/engine.md): the engine registers the function that runs the stages mapped to the
 * application's thread, and rnic_poll_cq calls it before it looks at the CQ; NULL unregisters. One hook for
 * the process, not one per CQ: the stages it runs serve every device, and the poll path reads one word.
 */
typedef unsigned int (*rnic_progress_fn)(void);
void rnic_cq_set_progress(rnic_progress_fn fn);
extern rnic_progress_fn rnic_cq_progress;	/* read through rnic_cq_run_progress */

/* Run the registered manual progress, if any (rnic_poll_cq, before it looks at the CQ). */
static inline void
rnic_cq_run_progress(void)
{
	rnic_progress_fn progress = __atomic_load_n(&rnic_cq_progress, __ATOMIC_RELAXED);

	if (unlikely(progress != NULL))
		progress();
}

/* The consumer's CQE at index n, or NULL while the producers have not written it yet (its opcode is
 * INVALID or its owner bit is the previous pass's: doc/cq.md, "Ownership"). */
static inline struct rnic_cqe64 *
rnic_cq_sw_cqe(struct rnic_cq_priv *cq, uint32_t n)
{
	struct rnic_cqe64 *cqe = &cq->cqes[n & ((1u << cq->log_nent) - 1)];
	uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);

	if ((op_own >> 4) == RNIC_CQE_INVALID || (op_own & RNIC_CQE_OWNER) != ((n >> cq->log_nent) & 1))
		return NULL;
	return cqe;
}

#endif /* RNIC_CQ_H */
