/* SPDX-License-Identifier: BSD-3-Clause
 * Queue pairs: contexts, the IBA state machine, SQ/RQ buffers (WQE formats in rnic_wqe.h).
 */
#ifndef RNIC_QP_H
#define RNIC_QP_H

#include <stdint.h>

#include <rte_prefetch.h>
#include <rte_spinlock.h>

#include "rnic_priv.h"

struct rnic_dbq;
struct rnic_wqe_data;

/* A work queue's producer and consumer indexes, in the host memory the poster and the engine share. */
struct rnic_wq_idx {
	uint32_t head;			/* WQEs posted (free-running) */
	uint32_t tail;			/* WQEs retired by rnic_poll_cq */
	/* SQ: a doorbell of this QP waits for the doorbell stage, which will see every WQE posted until it
	 * takes it: posters ring no other. On a line of its own: the engine writes it, and head and tail
	 * are the posting thread's. */
	uint32_t doorbell_pending __rte_cache_aligned;
};

/*
 * One work queue (SQ or RQ): a ring of fixed-stride WQE slots and the wr_ids behind them. buf, wrid,
 * posted_tsc and idx point into the QP's host-interface block (rnic_qp_hif_layout), which is shared memory
 * when the QP belongs to an rnicd client; every process keeps its own pointers and geometry, so nothing in
 * the shared block is trusted as an address or a size.
 */
struct rnic_wq {
	uint8_t *buf;
	uint32_t wqe_cnt;		/* slots, a power of two */
	uint32_t stride;		/* bytes per slot, a power of two >= 64 */
	uint64_t *wrid;
	uint64_t *posted_tsc;		/* SQ: when each WQE was posted (the requester's queued latency) */
	struct rnic_wq_idx *idx;
};

/* Where each part of a QP's host-interface block lies (byte offsets), from the queues' geometry: rnicd and
 * its client compute the same layout from the four numbers the daemon reports. */
struct rnic_qp_hif_layout {
	size_t sq_buf, rq_buf, sq_wrid, rq_wrid, sq_tsc, sq_idx, rq_idx, state;
	size_t size;
};

void rnic_qp_hif_layout(uint32_t sq_cnt, uint32_t sq_stride, uint32_t rq_cnt, uint32_t rq_stride,
			struct rnic_qp_hif_layout *l);
/* Point a work queue's fields into a host-interface block mapped at base. */
void rnic_wq_bind(struct rnic_wq *wq, uint8_t *base, size_t buf, size_t wrid, size_t tsc, size_t idx,
		  uint32_t cnt, uint32_t stride);

#define RNIC_MAX_INFLIGHT 256		/* send WQEs started and not yet completed, per QP, at most */

/*
 * The acknowledgement policy of RC (doc/engine.md): a QP may have --window bytes of SEND/WRITE frames sent
 * and not acknowledged, and their PSNs at most window / 64 (READ responses do not count: their data never
 * goes back N); it asks for an ACK (AckReq) on a message's last packet and at least every quarter window of
 * full packets, RNIC_ACK_EVERY packets at most (as Linux rxe), so ACKs keep coming within a long message.
 * The responder ACKs at least every RNIC_ACK_EVERY requests even when none asks. READ responses have a
 * window of their own, in PSNs: from RNIC_MAX_READ_WINDOW (max_rd_atomic bounds them), halved when a READ
 * loses two or more responses in a row (once per round trip), one PSN more per window answered.
 */
#define RNIC_DEFAULT_WINDOW (256u << 10)
#define RNIC_MIN_WINDOW 4096u
#define RNIC_MAX_WINDOW (64u << 20)
#define RNIC_ACK_EVERY 64u
#define RNIC_MAX_READ_WINDOW (1u << 22)	/* PSNs: half of what IBA's 24-bit PSNs allow */

/* A send WQE the requester has started and not completed (the seed's WQE indicator table entry). */
struct rnic_inflight {
	uint32_t index;			/* SQ counter of the WQE */
	uint32_t first_psn;
	uint32_t last_psn;
	uint32_t length;
	uint32_t received;		/* READ: response bytes placed so far */
	uint8_t opcode;
	uint8_t signaled;
	uint8_t sent;			/* every packet of it is on the wire */
	uint8_t answered;		/* READ/atomic: the response has arrived */
	uint8_t status;			/* a WQE rejected before it started: its error, completed in turn */
	uint8_t sent_once;		/* READ/atomic: its request has been sent (resends are not timed) */
	uint8_t asked;			/* READ/atomic: asked again for what is missing at received */
	uint32_t ahead;			/* READ: responses placed past a missing one: bit i is the response
					 * at received + (i + 1) x PMTU */
	uint32_t asked_end;		/* READ: where what it asked for again ends (asked stays set while
					 * received is short of it: the hole's later responses are coming) */
	uint32_t dst_epoch;		/* READ: the MR table's epoch when dst was translated */
	uint8_t *dst;			/* READ: where its data lands, when that is one run of this process's
					 * memory, translated when it started: its responses are copied there
					 * while no region was deregistered since (else NULL: each translated) */
};

/*
 * A QP's pacer (lib/engine/rnic_pacer.c): a token bucket in front of the requester, on while a rate below
 * the line rate applies to the QP (its rate_limit, or DCQCN's current rate). Rates in kbit/s, as verbs'
 * rate_limit.
 */
struct rnic_pacer {
	uint32_t rate;			/* the rate it paces at (on: struct rnic_req_ctx's paced) */
	uint64_t bpc;			/* bytes per TSC cycle, << RNIC_PACER_SHIFT */
	uint64_t fill_cycles;		/* cycles an empty bucket takes to fill */
	int64_t burst;			/* what the bucket holds, in bytes << RNIC_PACER_SHIFT */
	int64_t tokens;			/* what the QP may send now (below 0: owed), the same unit: a fraction
					 * of a byte earned is kept, however often it is counted */
	uint64_t refill_tsc;		/* when tokens were last counted */
	uint64_t released;		/* bytes it let go (frames, as sent) */
};

/* A QP's DCQCN reaction point (lib/engine/rnic_dcqcn.c; SIGCOMM'15, with mlx5's parameters). */
struct rnic_dcqcn_rp {
	uint8_t active;			/* a CNP cut the rate and it is not back at the line rate */
	uint8_t cnp_in_period;		/* a CNP came in the current alpha period */
	uint16_t alpha;			/* in 1/1024 */
	uint8_t cut_due;		/* a CNP came within the monitor period: a cut at its end */
	uint32_t rc;			/* current rate, kbit/s */
	uint32_t rt;			/* target rate, kbit/s */
	uint32_t t_stage;		/* increase timer events since the last cut */
	uint32_t bc_stage;		/* byte counter events since the last cut */
	uint32_t bytes;			/* bytes sent since the last byte counter event */
	uint64_t alpha_tsc;		/* start of the current alpha period */
	uint64_t inc_tsc;		/* the last increase timer event (or cut) */
	uint64_t cut_tsc;		/* the last cut */
	uint64_t away;			/* the pipeline's away_cycles when its timers last moved */
};

/* Congestion control's share of the QP context, written on the requester's lcore: its pacer, its DCQCN
 * reaction point, and when the completer last sent a CNP for it. */
struct rnic_qp_cc {
	struct rnic_pacer pacer;
	struct rnic_dcqcn_rp rp;
	uint64_t cnp_tsc;		/* the last CNP sent for a CE-marked response (NP) */
};

/* Requester fields of the QP context (the seed's WQE scheduler, transmit control, receive control). */
struct rnic_req_ctx {
	uint32_t npsn;			/* PSN of the next request packet */
	uint32_t sent_psn;		/* the newest PSN sent: up to it, sending is resending, and an ACK up
					 * to it acknowledges packets that went out (before a go-back-N too) */
	uint32_t sq_next;		/* next SQ WQE to start */
	uint32_t sq_head_seen;		/* the SQ head as last read (WQEs up to it are posted) */
	uint32_t cur;			/* the in-flight WQE being sent (== infl_tail: start a new one) */
	uint32_t cur_off;		/* bytes of it sent so far */
	uint64_t cur_start;		/* TSC at which the newest WQE started (its busy latency) */
	uint32_t infl_head;		/* oldest WQE not completed */
	uint32_t infl_tail;		/* one past the newest WQE started */
	uint64_t deadline;		/* TSC at which the oldest unacknowledged packet is resent (0: none) */
	uint64_t probe_at;		/* TSC of the next early probe while nothing answers (0: none) */
	uint64_t rnr_until;		/* no sending before this TSC: after an RNR NAK, or while the
					 * destination's MAC is resolved (neigh_since) */
	uint64_t neigh_since;		/* TSC at which the QP began to wait for its destination's MAC */
	uint8_t retry_left;		/* timeouts left (retry_cnt), refilled on progress */
	uint8_t rnr_left;		/* RNR NAKs left (rnr_retry; 7 means no limit) */
	uint8_t halted;			/* a rejected WQE waits in flight: start no more */
	uint8_t blocked;		/* stopped for want of room (window, READ depth, fence, in-flight
					 * ring): a response wakes the QP, which else waits for a doorbell */
	uint8_t probing;		/* after a loss timeout: 1 = one packet may go (with AckReq), 2 = it
					 * went: nothing more until a response makes progress */
	uint8_t probes;			/* early probes sent since the last progress (each waits twice longer) */
	uint32_t una;			/* oldest PSN not acknowledged */
	uint32_t acked;			/* the newest PSN an ACK or response acknowledged (una stops at a READ
					 * or atomic still waiting for its data: una moves up to it then) */
	uint32_t window;		/* bytes of SEND/WRITE frames that may be sent and not acknowledged */
	uint32_t rtx_bytes;		/* bytes of the frames kept for resending: sent, not acknowledged */
	uint16_t rd_atomic;		/* READs and atomics outstanding (<= max_rd_atomic) */
	uint32_t rd_psns;		/* PSNs of the responses of READs started and not yet answered */
	uint32_t rd_window;		/* ... at most this many (but one READ may always go) */
	uint32_t rd_grow;		/* PSNs answered since the READ window last grew */
	uint32_t rd_cut;		/* the READ window halved when READs from this PSN on went out */
	uint8_t after_loss;		/* a go-back-N was made, and sent_psn has not passed loss_psn since:
					 * one visit a pass (rnic_requester.c) */
	uint16_t lossy_pass;		/* ... the requester pass of its last such visit (req_pass) */
	uint32_t loss_psn;
	uint32_t ask_psn;		/* the newest PSN sent asking for an ACK (AckReq) */
	uint8_t ack_every;		/* an AckReq at least every this many packets */
	uint8_t noack;			/* packets sent since the last AckReq */
	uint8_t dmac[6];
	uint8_t dmac_known;
	uint32_t rtx_head;		/* kept frames (rnic_pipeline.h: the retransmit buffer), oldest PSN first */
	uint32_t rtx_tail;
	uint32_t rtx_next;		/* going back: the next kept frame to send again */
	uint32_t peer_gen;		/* rnic_qp_peers_gen when the destination QP was last checked (0: never) */
	uint8_t peer_ok;		/* ... and whether it is connected to this QP */
	uint8_t paced;			/* its pacer is on (struct rnic_qp_cc): asked before every packet */
	uint32_t rate_limit;		/* the rate_limit attribute as the requester last saw it (0: none) */
	/* Kept across resets (zeroing stops here): a ring as long as the SQ, up to RNIC_MAX_INFLIGHT, since
	 * no more WQEs can be in flight than the SQ holds; so a QP of a short SQ is a small QP. */
	uint32_t infl_mask;		/* entries - 1 (a power of two) */
	uint32_t sq_done;		/* SQ WQEs completed or flushed (the RESET transition clears it) */
	struct rnic_inflight *infl;
	/* The engine's copy of each in-flight entry's WQE (rnic_req_wqe), slots of the SQ's stride: the SQ is
	 * the poster's memory, which it may rewrite while the engine sends, so a WQE is read from it once. */
	uint8_t *wqe_copy;
	uint32_t tenant_psns;		/* of its PSNs in flight, those counted in its tenant's (RC; the
					 * reset and destroy of the QP give them back: rnic_tenant_sync) */
};

/* The in-flight entry of WQE counter i (free-running). */
static inline struct rnic_inflight *
rnic_req_infl(const struct rnic_req_ctx *r, uint32_t i)
{
	return &r->infl[i & r->infl_mask];
}

#define RNIC_MAX_RD_ATOMIC 128		/* READs and atomics a QP may have outstanding (as rxe) */

/*
 * A responder resource (the seed's; IBA 9.7.5.1.6): one per READ or atomic request accepted, kept after it is
 * answered, so that a duplicate request is answered again from it (a READ re-read from memory from the PSN the
 * duplicate names, an atomic with the result of its one execution) and never takes a resource of its own.
 * Responses leave in PSN order, packet by packet as the port has room.
 */
struct rnic_resp_res {
	uint64_t va;			/* READ: address of the request's first byte */
	union {
		uint64_t orig;		/* atomic: the value before its execution */
		uint8_t *src;		/* READ: where va is in this process's memory, when the request
					 * is one run of it (rnic_mr_run; else NULL): its responses copy from
					 * there while no region was deregistered since src_epoch */
	};
	uint32_t src_epoch;
	uint32_t rkey;
	uint32_t len;			/* READ: the request's DMA length */
	uint32_t off;			/* READ: offset of the next response to send */
	uint32_t sent;			/* READ: offset up to which responses went out (a duplicate's are resent) */
	uint32_t hole_off;		/* READ: a part asked again (responses lost), sent before going on at */
	uint32_t hole_end;		/* off: [hole_off, hole_end) */
	uint32_t psn;			/* the request's (first) PSN */
	uint32_t msn;			/* the MSN as of this request: its responses carry it (IBA 9.7.5.1.2) */
	uint8_t atomic;
	uint8_t queued;			/* it has responses to send (the first time, or again for a duplicate) */
	uint8_t answered;		/* every response of it went out once */
};

/* Responder fields of the QP context (the seed's execution engine, RQ WQE manager, write address table). */
struct rnic_resp_ctx {
	uint32_t epsn;			/* expected PSN */
	uint32_t msn;			/* messages completed */
	uint8_t in_send;		/* between a SEND FIRST and its LAST */
	uint8_t in_write;		/* between a WRITE FIRST and its LAST */
	uint8_t nak_sent;		/* a sequence NAK is out for this gap */
	uint8_t resync;			/* UC: a packet was lost, drop until the next FIRST/ONLY */
	uint32_t recv_off;		/* bytes of the current SEND placed in its receive WQE */
	uint64_t write_va;		/* the write address table entry of the current WRITE */
	uint32_t write_rkey;
	uint32_t write_left;
	uint32_t write_len;		/* the RETH's DMA length (a WRITE with immediate completes with it) */
	uint32_t rd_head;		/* the oldest resource with responses to send (rd_tail: none); those
					 * before it have none */
	uint32_t rd_tail;		/* resources taken (free-running): rd[rd_tail - rd_kept .. rd_tail) */
	uint32_t rd_kept;		/* resources holding a request, up to rd_mask + 1 */
	uint8_t rd_queued;		/* the QP is in the pipeline's queue of QPs with responses to send */
	uint8_t ack_pending;		/* an ACK/NAK waits: for the end of the burst, or for READ responses */
	uint8_t ack_listed;		/* the QP is in the pipeline's list of ACKs to send */
	uint8_t ack_syndrome;
	uint32_t ack_psn;
	uint8_t dmac[6];
	uint8_t dmac_known;
	uint32_t rq_head_seen;		/* the RQ head last read: the poster's line is read again only when
					 * every receive WQE up to it is used */
	uint32_t recv_nb_sge;		/* the receive WQE of the current SEND, read once at its first
					 * packet: its scatter entries (in recv_sge) and their bytes */
	uint64_t recv_capacity;
	uint16_t unacked;		/* requests taken since the last ACK/NAK was queued */
	uint8_t srq_held;		/* a QP on an SRQ: it took the WQE below and has not completed it */
	uint8_t last_wqe_raised;	/* ... and the Last WQE Reached event of its error was raised */
	uint32_t srq_index;		/* the held WQE's counter in the SRQ, and its wr_id (the CQE carries it: */
	uint64_t srq_wr_id;		/* the SRQ's slot is free for a new post once taken) */
	uint64_t cnp_tsc;		/* the last CNP this side sent for a CE-marked request (NP) */
	/* Kept across resets (zeroing stops here): the responder resources, as many as max_dest_rd_atomic
	 * rounded up to a power of two, allocated when an RC QP enters RTR or max_dest_rd_atomic changes
	 * (SQD -> SQD); a WRITE/SEND QP needs one. */
	uint32_t rd_mask;
	struct rnic_resp_res *rd;	/* a ring: resource i is rd[i & rd_mask] */
	struct rnic_wqe_data *recv_sge;	/* max_recv_sge entries (at least one): the engine's copy */
	uint32_t rq_done;		/* RQ WQEs completed or flushed (the RESET transition clears it) */
};

/*
 * A QP's context, laid out by writer so that no line one lcore writes on every message is used by another:
 * first what the control path sets up and every side reads (attributes, the queues' geometry); then the
 * requester's share (written on its lcore, the completer's too), the responder's, and the posters' locks.
 */
struct rnic_qp_priv {
	struct rnic_qp pub;
	struct rnic_qp_cap cap;		/* what the QP was created with (after rounding up) */
	int sq_sig_all;
	struct rnic_qp_attr attr;	/* the attributes set so far (query_qp returns them) */
	uint32_t slot;
	uint32_t owner;			/* rnicd's client id (0: this process): its doorbells may name the QP */
	uint32_t tenant;		/* < RNIC_MAX_TENANTS: whose share of the requester the QP uses */
	uint32_t sgid_mask;		/* the GID indexes a UD WQE may send from (bit per index; 0: any) */
	struct rnic_dbq *dbq;		/* an rnicd client's QP, client side: the doorbell queue to the engine */
	void *hif;			/* the host-interface block (WQE buffers, wr_ids, indexes) */
	/* The QP's state as posters see it, in the block: the control path and the engine (a QP failing)
	 * write it, rnic_post_send / rnic_post_recv read it, in this process or in an rnicd client. */
	enum rnic_qp_state *post_state;
	struct rnic_wq sq;
	struct rnic_wq rq;
	/* The engine's share of the context; reset when the QP enters RTR / RTS. */
	struct rnic_req_ctx req __rte_cache_aligned;
	struct rnic_resp_ctx resp __rte_cache_aligned;
	/* Kept for the QP's life; the requester's fields are written by its lcore, the responder's by its. */
	struct rnic_qp_counters counters;
	/* The posters' locks (the data path never takes them), on a line of their own: taking one is a full
	 * barrier, which would wait for any line of it an engine lcore had written since. */
	struct {
		rte_spinlock_t sq;
		rte_spinlock_t rq;
	} post_lock __rte_cache_aligned;
	/* Reset when the QP enters RTS; used only while the QP is paced or hears of congestion, so it is not
	 * among the lines rnic_qp_prefetch brings ahead of every visit. */
	struct rnic_qp_cc cc __rte_cache_aligned;
};

static inline struct rnic_qp_priv *
rnic_qp_priv(struct rnic_qp *qp)
{
	return (struct rnic_qp_priv *)qp;
}

/* The engine's copy of the WQE of in-flight entry e (rnic_send_wqe_copy), made when the WQE started: its later
 * packets, resends, READ responses and atomic results all parse this copy, never the SQ again. */
static inline uint8_t *
rnic_req_wqe(const struct rnic_qp_priv *q, const struct rnic_inflight *e)
{
	return q->req.wqe_copy + (size_t)(e - q->req.infl) * q->sq.stride;
}

/*
 * Bumped (by the control path) whenever a QP of this process is connected, reconnected, reset or destroyed:
 * a requester sending to a QP of this engine checks that it is that QP's peer again when it changed
 * (rnic_requester.c, peer_check).
 */
extern uint32_t rnic_qp_peers_gen;

/* QP1, the device's general services QP (IBA 13.5.1; rxe's GSI QP): a UD QP numbered 1, outside max_qp, at
 * most one per device (EBUSY). Local provider only; the CM module owns it (lib/cm/rnic_gsi.c). NULL with
 * errno, as rnic_create_qp. */
struct rnic_qp *rnic_local_create_gsi_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia);

/* Create/free the device's QP table (called by the device module). */
int rnic_qp_table_create(struct rnic_device *dev);
void rnic_qp_table_free(struct rnic_device *dev);

/* The device's QP table: a QP's slot is its QPN's low bits (the scheduler's slot). */
struct rnic_qp_table {
	struct rnic_qp_priv **slot;	/* by QPN & slot_mask; a slot holds at most one QP */
	uint32_t nb_slots;		/* power of two */
	uint32_t slot_mask;
	uint32_t nb_qp;
	uint32_t *generation;		/* bumped when a slot is reused: QPNs are not reused at once */
};

/* The QP with this number, or NULL. Lock-free read: safe from the data path. */
static inline struct rnic_qp *
rnic_qp_lookup(struct rnic_device *dev, uint32_t qpn)
{
	const struct rnic_qp_table *t = dev->qp_table;
	struct rnic_qp_priv *qp = __atomic_load_n(&t->slot[qpn & t->slot_mask], __ATOMIC_ACQUIRE);

	return qp != NULL && qp->pub.qp_num == qpn ? &qp->pub : NULL;
}

/* Slots of the QP table (the scheduler's range) and the QP in a slot (NULL if none). */
uint32_t rnic_qp_table_slots(const struct rnic_device *dev);

static inline struct rnic_qp *
rnic_qp_by_slot(struct rnic_device *dev, uint32_t slot)
{
	struct rnic_qp_priv *qp = __atomic_load_n(&dev->qp_table->slot[slot], __ATOMIC_ACQUIRE);

	return qp != NULL ? &qp->pub : NULL;
}

/*
 * Bring a QP's context into the cache ahead of its turn: with thousands of QPs served round-robin each
 * one's context has gone cold since its last visit, and the stages that are about to use it would wait for
 * it line by line.
 */
static inline void
rnic_qp_prefetch(const struct rnic_qp *qp)
{
	for (size_t off = 0; off < offsetof(struct rnic_qp_priv, post_lock); off += RTE_CACHE_LINE_SIZE)
		rte_prefetch0((const uint8_t *)qp + off);
}

/*
 * Whether the WQE with counter index is posted on the queue: 1 or 0; or -1 when the head says more WQEs are
 * posted past done (the oldest not completed) than the queue holds, which no poster writes (it keeps head -
 * tail within the queue, and tail never passes done): the queue's memory holds nonsense, and the QP goes to
 * error. *seen caches the head last read and found sane: the poster writes the head's line, so it is read
 * again only when the WQEs up to *seen are used (a queue is found empty only after a fresh read, so a post
 * is never missed). Sequentially consistent: the SQ's doorbell flag is ordered against it
 * (rnic_qp_doorbell_taken).
 */
static inline int
rnic_wq_posted(const struct rnic_wq *wq, uint32_t *seen, uint32_t index, uint32_t done)
{
	uint32_t head;

	if ((int32_t)(*seen - index) > 0)
		return 1;
	head = __atomic_load_n(&wq->idx->head, __ATOMIC_SEQ_CST);
	if (head - done > wq->wqe_cnt)
		return -1;
	*seen = head;
	return (int32_t)(head - index) > 0;
}

/* wr_id of the WQE at this index of the QP's SQ / RQ (the CQ poll maps CQE wqe_counter to wr_id). */
uint64_t rnic_qp_sq_wrid(struct rnic_qp *qp, uint16_t wqe_counter);
uint64_t rnic_qp_rq_wrid(struct rnic_qp *qp, uint16_t wqe_counter);

/* Polling retired the WQE at this index and every one before it: their slots may be reused. */
void rnic_qp_sq_retire(struct rnic_qp *qp, uint16_t wqe_counter);
void rnic_qp_rq_retire(struct rnic_qp *qp, uint16_t wqe_counter);

/*
 * Complete every WQE not yet completed, SQ first then RQ, in order, with RNIC_WC_WR_FLUSH_ERR. Called for a
 * QP in the error state; it produces CQEs, so it runs where the QP's completions are produced (today the
 * control path: the engine's data path, when it runs, must call it on the lcore owning the QP).
 */
void rnic_qp_flush(struct rnic_qp *qp);

/*
 * A QP entered the error state: flush it now (engine stopped) or ring a doorbell for it, so the engine's
 * lcores flush its queues where its completions are produced (engine running).
 */
void rnic_qp_error_flush(struct rnic_qp *qp);

/* Ring an empty doorbell for the QP: its requester looks at it (and flushes it if it is in error). */
void rnic_qp_notify_engine(struct rnic_qp *qp);

/* The two halves of the flush, for the engine: the requester's lcore flushes the SQ, the responder's the RQ. */
void rnic_qp_flush_sq(struct rnic_qp *qp);
void rnic_qp_flush_rq(struct rnic_qp *qp);

/*
 * Hand a doorbell to the engine (the device's doorbell ring, or an rnicd client's doorbell queue), unless
 * one of the QP's is still waiting there: the doorbell stage sees every WQE posted before it takes that one
 * (rnic_qp_doorbell_taken), so one queued doorbell per QP is enough. The ring and the queues have room for
 * one per QP, so a full one only means the doorbell stage is behind for a moment.
 */
void rnic_qp_ring_doorbell(struct rnic_qp *qp, uint64_t db);

/* The doorbell stage took one of the QP's doorbells, before its requester looks at the SQ head: the next
 * post rings again. Sequentially consistent with the posters' head store and flag exchange, so a post
 * either finds the flag clear and rings, or published its head before this store and is seen. */
static inline void
rnic_qp_doorbell_taken(struct rnic_qp *qp)
{
	__atomic_store_n(&rnic_qp_priv(qp)->sq.idx->doorbell_pending, 0, __ATOMIC_SEQ_CST);
}

/* Insert a QP whose number was given by rnicd into a client-side device's table (rnic_qp_lookup finds it),
 * or remove it. */
void rnic_qp_table_publish(struct rnic_device *dev, struct rnic_qp *qp);
void rnic_qp_table_unpublish(struct rnic_device *dev, struct rnic_qp *qp);

/* Address of WQE slot n of a work queue. */
static inline uint8_t *
rnic_wq_slot(const struct rnic_wq *wq, uint32_t n)
{
	return wq->buf + (size_t)(n & (wq->wqe_cnt - 1)) * wq->stride;
}

/*
 * Release a poster lock with a release store. rte_spinlock_unlock's XCHG is a full barrier: it waits for the
 * WQE and head stores before it to reach the cache, and those lines are the engine lcore's (it read them
 * last), so every post would wait for two cross-lcore transfers. A release store is a whole unlock.
 */
static inline void
rnic_post_unlock(rte_spinlock_t *lock)
{
	__atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

/* The QP's state as a send post sees it: RTS or SQD (WQEs queued), SQE or ERR (they complete as flushed),
 * or RNIC_QPS_UNKNOWN for a state that takes no send post (RESET, INIT, RTR: EINVAL). */
enum rnic_qp_state rnic_sq_post_state(const struct rnic_qp *qp);

/* Post the n send WQEs written from SQ index first on (the poster's lock held): publish the SQ head, then
 * ring one doorbell for them, or flush them if state (rnic_sq_post_state) is an error state. */
void rnic_sq_publish(struct rnic_qp *qp, uint32_t first, uint32_t n, enum rnic_qp_state state);

/*
 * Move a QP to the error state from the data path (a completion in error says why). Each side flushes its
 * own queue on its own lcore: the caller flushes its side, the other side when it next sees the state.
 */
void rnic_qp_fail(struct rnic_qp *qp);
/* Move a QP to an error state (ERR, or SQE for a UC/UD send error) from the data path. */
void rnic_qp_enter(struct rnic_qp *qp, enum rnic_qp_state state);

#endif /* RNIC_QP_H */
