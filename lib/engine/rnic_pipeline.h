/* SPDX-License-Identifier: BSD-3-Clause
 * The engine's pipeline for one device: the stages of the seed's RDMA engine (seed 003 §1.1) as poll
 * functions linked by rte_rings.
 *
 *   doorbell ring -> [doorbell] -> slot ring -> [requester: WQE scheduling + parse, DataPack gather,
 *                                                transmit control, request packet generation] -> port TX
 *   port RX -> [parser: header parser] -> request ring  -> [responder: execution engine, RQ WQE manager,
 *                                                           write address table, response generation] -> TX
 *                                      -> response ring -> [completer: requester receive control, CQEs]
 *
 * The requester and the completer share a QP's requester context, so they run on the same lcore; the
 * responder owns the responder context. With several lcores per stage the device has one pipeline per
 * shard and QP n belongs to shard n % nb_shards: the doorbell and parser stages (one per device) route to
 * the shard's rings. Every QP's state thus has exactly one owner and no lock.
 */
#ifndef RNIC_PIPELINE_H
#define RNIC_PIPELINE_H

#include <stdint.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "rnic_mr.h"
#include "rnic_priv.h"
#include "rnic_qp.h"
#include "rnic_latency.h"
#include "rnic_sched.h"
#include "rnic_timer.h"
#include "rnic_wire.h"
#include "rnic_wqe.h"

#define RNIC_BURST 32
#define RNIC_TX_BUF 256		/* frames a stage may hold back while the port's TX queue is full */
/* Idle kicks of a port that may hold frames back (rnic_tx_kick): after a burst, at most this many, the first
 * after this long idle, then at doubling gaps up to the last (about 60 ms in all: a loss timer's length). */
#define RNIC_TX_IDLE_KICKS 64
#define RNIC_TX_KICK_FIRST_US 20
#define RNIC_TX_KICK_MAX_US 1000
#define RNIC_PIPE_RING_SIZE 4096
#define RNIC_MIN_PROBE_US 50		/* the shortest wait before an early probe (the timer wheel's ticks: 16 us) */
#define RNIC_RTT_GIVE_UP 14		/* a packet timed whose ACK has not come in a 67 ms loss timer's time is lost */
#define RNIC_RTX_SHARE 4		/* a pipeline keeps at most 1/(4 x shards) of its pool's mbufs for resending */

/* AETH syndromes (IBA 9.7.5.1) */
#define RNIC_AETH_ACK 0x1f		/* ACK, credits not used (invalid credit count) */
#define RNIC_AETH_RNR(timer) (0x20 | ((timer) & 0x1f))
#define RNIC_AETH_NAK_PSN_SEQ 0x60
#define RNIC_AETH_NAK_REMOTE_OP 0x63
#define RNIC_AETH_IS_ACK(s) (((s) >> 5) == 0)
#define RNIC_AETH_IS_RNR(s) (((s) >> 5) == 1)

enum rnic_stage_id {
	RNIC_STAGE_DOORBELL,
	RNIC_STAGE_REQUESTER,
	RNIC_STAGE_PARSER,
	RNIC_STAGE_RESPONDER,
	RNIC_STAGE_COMPLETER,
	RNIC_STAGE_MAX
};

extern const char *const rnic_stage_names[RNIC_STAGE_MAX];

/*
 * The retransmit buffer (the seed's MultiQueue, seed 003 §3.8): every RC SEND/WRITE packet sent is kept, by
 * reference (the mbuf's refcount, not a copy), in its QP's list, in PSN order, until acknowledged; go-back-N
 * sends the kept frames again. The elements come from one pool per pipeline: the global budget. A packet
 * sent while the pool is empty is not kept; its resend gathers it from the WQE again.
 * Element 0 is "none", so a zeroed QP context has an empty list.
 */
struct rnic_rtx_elem {
	struct rte_mbuf *m;
	uint32_t psn;
	uint32_t next;
	uint32_t len;			/* the frame's, as sent (the receiver of a loopback frame may trim it) */
};

/* Frames waiting to go out on one TX queue of the port; what the port does not take now stays here. It
 * also keeps its stage's spare mbufs: taken from the pool a burst at a time (one bulk get, the mbuf and first
 * data lines prefetched, each reset when it is used), since one allocated at a time is cold when the builder
 * writes it. */
struct rnic_tx_buffer {
	struct rnic_pipeline_stats *stats;	/* of the stage that sends on it */
	uint16_t port;
	uint16_t queue;
	uint16_t count;
	uint16_t nb_spare;
	uint16_t ip_id;			/* the IPv4 ID of the next frame built for it */
	/* Idle kicks (rnic_tx_idle) of a port that may hold frames back until its next burst
	 * (rnic_port_tx_needs_kick): how many each burst the port took allows (0: a port that needs none),
	 * how many are left, the gap to the next one (doubling) and when it is due. */
	uint8_t idle_kicks;
	uint8_t kicks_left;
	uint32_t kick_gap;
	uint64_t next_kick;
	struct rte_mbuf *spare[RNIC_BURST];
	struct rte_mbuf *pkts[RNIC_TX_BUF];
};

/* The pipeline's counters, as X(name, what): one set per stage, each written by its stage's lcore only. */
#define RNIC_PIPELINE_COUNTERS(X) \
	X(doorbells, "doorbells taken") \
	X(tx_packets, "frames the port took") \
	X(tx_bytes, "bytes the port took") \
	X(tx_dropped, "frames the port refused (TX buffer full)") \
	X(tx_kicks, "idle kicks of a TX queue the port may have left frames in (net_af_packet)") \
	X(rx_packets, "frames received") \
	X(rx_bytes, "bytes received") \
	X(ring_full, "frames parsed but the next stage's ring was full") \
	X(no_qp, "frames or doorbells for a QP that does not exist or is not ready") \
	X(acks_sent, "ACKs sent") \
	X(acks_coalesced, "ACKs saved by coalescing") \
	X(seq_naks_sent, "PSN sequence error NAKs sent") \
	X(rnr_naks_sent, "RNR NAKs sent") \
	X(inv_req_naks_sent, "invalid request NAKs sent") \
	X(access_naks_sent, "remote access error NAKs sent") \
	X(remote_op_naks_sent, "remote operational error NAKs sent") \
	X(duplicates, "duplicate requests answered again") \
	X(out_of_sequence, "requests past a PSN gap") \
	X(qkey_violations, "UD requests with a wrong Q_Key") \
	X(no_mbuf, "frames not built: the mbuf pool was empty") \
	X(cnp_received, "congestion notifications") \
	X(bad_requests, "invalid requests and opcode sequence errors") \
	X(access_errors, "requests refused by key, PD, rights or bounds checks") \
	X(unexpected_responses, "responses matching nothing in flight") \
	X(timeouts, "loss timer expiries") \
	X(retransmits, "go-back-N restarts (timeouts, sequence NAKs, RNR, READ gaps)") \
	X(rnr_naks_received, "RNR NAKs received") \
	X(seq_naks_received, "PSN sequence error NAKs received") \
	X(inv_req_naks_received, "invalid request NAKs received") \
	X(access_naks_received, "remote access error NAKs received") \
	X(remote_op_naks_received, "remote operational error NAKs received (and reserved codes)") \
	X(timer_expiries, "QPs the timer wheel handed back") \
	X(qp_visits, "QPs the requester's scheduler served") \
	X(qp_idle_visits, "QPs served that had nothing to send") \
	X(resent_kept, "packets resent from the retransmit buffer") \
	X(resent_gathered, "packets resent by gathering the WQE again (not kept: buffer full)") \
	X(rx_write_requests, "RDMA WRITE requests executed (messages)") \
	X(rx_read_requests, "RDMA READ requests executed (not counting duplicates)") \
	X(rx_atomic_requests, "atomic requests executed (not counting duplicates)") \
	X(recv_wqe_missing, "SENDs that found no receive WQE (RC: RNR NAK; UC, UD: dropped)") \
	X(recv_length_errors, "SENDs longer than their receive WQE (local length error)") \
	X(rnr_retries_exceeded, "WQEs failed after the last RNR retry") \
	X(read_gaps, "READ responses past a lost one (implied NAK: the rest asked again)") \
	X(bad_wqes, "send WQEs refused as malformed (opcode, size, SGEs, inline or message length): QP to error") \
	X(bad_queue_index, "work queue heads further ahead than the queue holds: QP to error") \
	X(spoofed_requests, "request packets not sent: their destination, a QP of this engine, is not " \
	  "connected to the sending QP") \
	X(no_route, "WQEs failed for want of the destination's MAC") \
	X(neigh_waits, "QP visits put off: the destination's MAC was being resolved") \
	X(flush_ring_full, "QPs in error whose receive queue the responder could not be told to flush") \
	X(resent_requests, "READ and atomic requests sent again") \
	X(probes, "early probes: the oldest unacknowledged packet sent again while nothing answered") \
	X(resent_responses, "READ responses and atomic ACKs sent again, for duplicate requests")

struct rnic_pipeline_stats {
#define RNIC_X(name, what) uint64_t name;
	RNIC_PIPELINE_COUNTERS(RNIC_X)
#undef RNIC_X
	uint64_t rx_drops[RNIC_DROP_REASON_MAX];	/* by rnic_drop_reason */
};

/*
 * One tenant's use of a pipeline (doc/engine.md, "Fair service"). While two tenants or more have QPs with
 * work, a tenant may send RNIC_TENANT_CREDIT PSNs per scheduler round, however many QPs it has; a tenant
 * that overdraws (a READ is charged its responses) pays it back in the next rounds. Its QPs are served in
 * slot order from where it ran out the round before.
 */
struct rnic_req_tenant {
	uint32_t round;			/* the scheduler round credit is for */
	int32_t credit;			/* PSNs it may still send in that round */
	uint32_t resume;		/* its first slot to serve after it ran out */
	uint32_t inflight;		/* PSNs its RC QPs have sent and not had acknowledged (rnic_tenant_sync) */
	uint32_t released;		/* of those, PSNs of QPs reset or destroyed (the control path's, atomic) */
	uint64_t packets;
	uint64_t bytes;
	uint64_t psns;
	uint64_t deferred;
};

/* One tenant's doorbells (the doorbell stage): at most RNIC_DBQ_SHARE from its queues per turn. */
struct rnic_db_tenant {
	uint32_t turn;			/* the doorbell stage's turn left counts */
	uint32_t left;
	uint64_t doorbells;
	uint64_t dropped;
};

#define RNIC_TENANT_CREDIT 16		/* PSNs per tenant per round: one QP's quantum */
#define RNIC_TENANT_WINDOW 64		/* PSNs a tenant may have in flight per shard while tenants share it */
#define RNIC_TENANT_HORIZON_MS 20	/* a shard is shared this long after its last round of two tenants */
#define RNIC_DBQ_SHARE 16		/* doorbells per tenant per turn of the doorbell stage */

struct rnic_pipeline {
	struct rnic_device *dev;
	uint16_t shard;			/* this pipeline's shard; its TX queues are 2 * shard and 2 * shard + 1 */
	struct rte_mempool *pool;
	struct rte_ring *slot_ring;	/* doorbell -> requester: QP slots with new WQEs */
	struct rte_ring *request_ring;	/* parser -> responder: request frames */
	struct rte_ring *response_ring;	/* parser -> completer: response frames */
	struct rte_ring *flush_ring;	/* requester -> responder: QP slots in error whose RQ to flush */
	struct rnic_sched sched;	/* the requester's QPs with work (the patent's QP scheduler) */
	struct rnic_mr_cache req_cache;	/* translation caches of the requester side and the responder side */
	struct rnic_mr_cache resp_cache;
	struct rnic_tx_buffer req_tx;
	struct rnic_tx_buffer resp_tx;
	struct rte_ring *neigh_tx;	/* shard 0: ARP/ND frames its responder sends (rnic_neigh.h) */
	uint64_t neigh_wait_cycles;	/* RNIC_NEIGH_WAIT_MS and RNIC_NEIGH_RECHECK_US in TSC cycles */
	uint64_t neigh_recheck_cycles;
	uint16_t rx_queue;		/* the parser's next RX queue */
	uint32_t read_head;		/* QPs with READ responses or atomic answers to send, oldest first */
	uint32_t read_tail;		/* (responder): room for every QP slot twice, so never short */
	uint32_t read_fifo_mask;
	uint32_t *read_fifo;
	uint32_t nb_acks;		/* QPs with a coalesced ACK/NAK to send at the end of the burst */
	uint32_t ack_list[RNIC_BURST];
	struct rnic_timer_wheel timers;	/* the requester's loss and RNR timers */
	uint64_t loss_timeout_cycles[32];	/* TSC cycles of the loss timer per QP timeout attribute */
	/* The path's round trip (requester): from an AckReq packet's departure to the progress its ACK made,
	 * one QP's packet at a time, smoothed (7/8 old, 1/8 new; TSC cycles, 0: no sample yet). It sets when
	 * a QP that hears nothing sends an early probe. */
	uint64_t srtt;
	uint64_t min_probe_cycles;	/* RNIC_MIN_PROBE_US */
	uint64_t rtt_tsc;		/* the packet being timed: when it left (0: none), its QP slot and PSN */
	uint32_t rtt_slot;
	uint32_t rtt_psn;
	uint64_t req_clock;		/* latency stamps: when the requester's current WQE started */
	struct rnic_qp *wqe_qp;		/* the send WQE start_wqe parsed last (this QP's, this index), */
	uint32_t wqe_index;		/* for send_packet in the same visit of the QP */
	struct rnic_send_wqe wqe;
	struct rnic_rtx_elem *rtx;	/* the retransmit buffer's elements, [1..rtx_size] */
	uint32_t rtx_size;
	uint32_t rtx_free;		/* first free element (0: none left) */
	struct rte_ring *rtx_reclaim;	/* lists of QPs reset or destroyed, for the requester to free */
	struct rnic_pipeline_stats stats[RNIC_STAGE_MAX];
	/* Fair service between tenants: the requester's (tenant_round: the round tenants_now counts; tenants
	 * with QPs visited in it and in the round before) and the doorbell stage's (dbq_next: the client
	 * queue its next turn starts at). */
	uint32_t tenant_round;
	uint32_t tenants_now;
	uint32_t tenants_last;
	uint64_t shared_until;		/* TSC until which the tenants' windows hold (0: one tenant so far) */
	uint64_t shared_horizon;	/* RNIC_TENANT_HORIZON_MS in TSC cycles */
	uint32_t visit_bytes;		/* payload bytes sent in the current QP visit */
	struct rnic_req_tenant req_tenant[RNIC_MAX_TENANTS];
	uint32_t dbq_next;
	uint32_t dbq_turn;
	struct rnic_db_tenant db_tenant[RNIC_MAX_TENANTS] __rte_cache_aligned;
	struct {
		struct rnic_latency_hist queued;
		struct rnic_latency_hist busy;
	} lat[RNIC_LAT_MAX];		/* rnic_latency.h: each written by its stage's lcore */
};

/* The counters of one stage of the pipeline (the requester's for the completer too: they share an lcore). */
#define RNIC_STATS(p, stage) (&(p)->stats[RNIC_STAGE_##stage])

int rnic_pipeline_create(struct rnic_device *dev, struct rte_mempool *pool, uint16_t shard,
			 struct rnic_pipeline **out);

/* The pipeline (shard) that owns the QP with this number. */
static inline struct rnic_pipeline *
rnic_shard_of(const struct rnic_device *dev, uint32_t qpn)
{
	return dev->pipeline[qpn % dev->nb_shards];
}
void rnic_pipeline_free(struct rnic_pipeline *p);

/* Free the mbufs a ring of mbuf pointers holds (NULL: none). */
void rnic_ring_free_mbufs(struct rte_ring *r);

/* The stages: each does up to budget units of work and returns how many it did. The doorbell and parser
 * stages serve the whole device (give them shard 0's pipeline); the others serve their shard. */
unsigned int rnic_stage_doorbell(void *pipeline, unsigned int budget);
unsigned int rnic_stage_requester(void *pipeline, unsigned int budget);
unsigned int rnic_stage_parser(void *pipeline, unsigned int budget);
unsigned int rnic_stage_responder(void *pipeline, unsigned int budget);
unsigned int rnic_stage_completer(void *pipeline, unsigned int budget);

/* ------------------------------------------------------------------------------------------------------ */
/* Helpers shared by the stages                                                                            */

/* PSNs are 24-bit serial numbers: the signed distance a - b. */
static inline int32_t
rnic_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t
rnic_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & 0xffffff;
}

static inline uint32_t
rnic_mtu_bytes(enum rnic_mtu mtu)
{
	return 128u << mtu;
}

/*
 * Keep the QP's tenant's count of PSNs in flight (struct rnic_req_tenant) up to date with the QP: on the
 * requester's lcore, after anything that sends, rewinds, acknowledges or fails. An RC QP in RTS counts what
 * it sent and did not have acknowledged, one in error nothing; in another state (RESET, SQD, ...) the count
 * waits, and the control path gives a reset or destroyed QP's PSNs back (rnic_pipeline_release_qp).
 */
static inline void
rnic_tenant_sync(struct rnic_pipeline *p, struct rnic_qp *qp)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	enum rnic_qp_state state = __atomic_load_n(&qp->state, __ATOMIC_RELAXED);
	uint32_t now;

	if (qp->qp_type != RNIC_QPT_RC || (state != RNIC_QPS_RTS && state != RNIC_QPS_ERR))
		return;
	now = state == RNIC_QPS_RTS ? (uint32_t)RTE_MAX(rnic_psn_diff(q->req.npsn, q->req.una), 0) : 0;
	p->req_tenant[q->tenant].inflight += now - q->req.tenant_psns;
	q->req.tenant_psns = now;
}

/* Queue a frame for TX, sending a burst when RNIC_BURST are waiting. Callers check rnic_tx_room first: a
 * frame that finds the buffer full is dropped (and counted). */
void rnic_tx_enqueue(struct rnic_tx_buffer *tx, struct rte_mbuf *m);
/* Hand what is buffered to the port; what it does not take stays buffered. */
void rnic_tx_flush(struct rnic_tx_buffer *tx);

void rnic_tx_kick(struct rnic_tx_buffer *tx, struct rte_mempool *pool);

/*
 * A pass of tx's stage that did no work: if the port may still hold frames of its last bursts
 * (tx->kicks_left), have it send them. Nothing on the busy path: one load and compare per idle pass.
 */
static inline void
rnic_tx_idle(struct rnic_tx_buffer *tx, struct rte_mempool *pool)
{
	if (unlikely(tx->kicks_left != 0))
		rnic_tx_kick(tx, pool);
}

/* An mbuf for a frame the stage of tx builds (from its spares), or NULL when the pool is empty. */
struct rte_mbuf *rnic_tx_alloc(struct rnic_tx_buffer *tx, struct rte_mempool *pool);

static inline unsigned int
rnic_tx_room(const struct rnic_tx_buffer *tx)
{
	return RNIC_TX_BUF - tx->count;
}

/*
 * The L2/L3/L4 fields of a frame from this device to the peer of QP qpn (QP dqpn there) for the stage of tx
 * (addresses, ports, hop limit, IP ID). 0; -EAGAIN while the peer's MAC is being resolved; -EHOSTUNREACH when
 * it cannot be (rnic_neigh.h). The MAC found is kept in dmac_cache.
 */
int rnic_fill_route(struct rnic_tx_buffer *tx, const struct rnic_device *dev, const struct rnic_ah_attr *av,
		    uint32_t qpn, uint32_t dqpn, uint8_t dmac_cache[6], uint8_t *dmac_known, struct rnic_pkt_desc *d);

/*
 * The DataPack copy: move len bytes between buf and message offset off of an SGE list (the seed's gather
 * and scatter), checking every piece's key, PD and rights on the way. to_sges: buf -> the list (scatter).
 * RNIC_MR_OUT_OF_BOUNDS when the list holds fewer bytes than asked.
 */
enum rnic_mr_status rnic_sge_copy(struct rnic_pipeline *p, struct rnic_mr_cache *cache,
				  const struct rnic_wqe_data *sge, uint32_t nb_sge, uint32_t pdn, uint32_t need,
				  uint32_t off, uint8_t *buf, uint32_t len, int to_sges);

/*
 * Where the parser leaves its descriptor of a frame for the responder or completer: the mbuf's private
 * area (the engine's pools have room for it), so a frame is parsed once. NULL for an mbuf of a pool
 * without that room (a test's own pool): its frame is parsed again.
 */
static inline struct rnic_pkt_desc *
rnic_mbuf_desc(struct rte_mbuf *m)
{
	return rte_pktmbuf_priv_size(m->pool) >= sizeof(struct rnic_pkt_desc) ? rte_mbuf_to_priv(m) : NULL;
}

/* The parser's descriptor of a frame it passed on, or the frame parsed again into scratch. */
static inline const struct rnic_pkt_desc *
rnic_frame_desc(struct rte_mbuf *m, struct rnic_pkt_desc *scratch)
{
	const struct rnic_pkt_desc *d = rnic_mbuf_desc(m);

	if (d != NULL)
		return d;
	rnic_pkt_parse_mbuf(m, scratch, 0);
	return scratch;
}

/*
 * Ask for the lines of a received frame's mbuf and of its descriptor: the lcore before wrote them (the
 * sender the mbuf, the parser the descriptor), and their addresses need no load, so a burst's can all be
 * asked for at once. For writing, as the parser fills the descriptor. A test pool's mbuf without a
 * descriptor area has its headroom prefetched instead, harmlessly.
 */
static inline void
rnic_prefetch_mbuf_desc(struct rte_mbuf *m)
{
	rte_prefetch0(m);
	rte_prefetch0(&m->cacheline1);
	for (size_t off = 0; off < sizeof(struct rnic_pkt_desc); off += RTE_CACHE_LINE_SIZE)
		rte_prefetch0_write((uint8_t *)rte_mbuf_to_priv(m) + off);
}

/*
 * Prefetch the contexts of the QPs a burst of parsed frames is for, before the first is handled, and the
 * first and last lines of each payload (a small message's whole payload, which the other lcore wrote: READ
 * responses reach the completer from the worker's responder; larger ones the hardware prefetcher follows).
 */
static inline void
rnic_prefetch_qps(struct rnic_device *dev, struct rte_mbuf **pkts, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		rnic_prefetch_mbuf_desc(pkts[i]);
	for (unsigned int i = 0; i < n; i++) {
		const struct rnic_pkt_desc *d = rnic_mbuf_desc(pkts[i]);
		struct rnic_qp *qp = d != NULL ? rnic_qp_lookup(dev, d->dqpn) : NULL;

		if (qp != NULL)
			rnic_qp_prefetch(qp);
		if (d != NULL && d->payload_len != 0) {
			rte_prefetch0(d->payload);
			rte_prefetch0(d->payload + d->payload_len - 1);
		}
	}
}

/*
 * Handle a burst of frames a stage took from its ring and free them, recording each frame's time queued
 * before the stage and busy in it (stage lat): one TSC read per frame, a frame's end being the next one's
 * start.
 */
static inline void
rnic_stage_frames(struct rnic_pipeline *p, enum rnic_lat_stage lat, struct rte_mbuf **pkts, unsigned int n,
		  void (*handle)(struct rnic_pipeline *, struct rte_mbuf *))
{
	uint64_t start = rnic_latency_on && n != 0 ? rte_rdtsc() : 0;

	for (unsigned int i = 0; i < n; i++) {
		if (rnic_latency_on)
			rnic_lat_record(&p->lat[lat].queued, start - *rnic_mbuf_tsc(pkts[i]), 1);
		handle(p, pkts[i]);
		rte_pktmbuf_free(pkts[i]);
		if (rnic_latency_on) {
			uint64_t end = rte_rdtsc();

			rnic_lat_record(&p->lat[lat].busy, end - start, 1);
			start = end;
		}
	}
}

/*
 * Whether a packet for a connected (RC, UC) QP comes from its peer: from the GID of the QP's address vector to
 * the QP's own source GID (as Linux rxe's check_addr). Anything else is dropped before its PSN is looked at,
 * so a frame aimed at the QP's number from elsewhere changes nothing.
 */
static inline int
rnic_from_peer(const struct rnic_device *dev, const struct rnic_qp_priv *q, const struct rnic_pkt_desc *d)
{
	const struct rnic_global_route *grh = &q->attr.ah_attr.grh;

	return memcmp(d->sgid.raw, grh->dgid.raw, sizeof(grh->dgid.raw)) == 0 &&
	       memcmp(d->dgid.raw, dev->gid[grh->sgid_index].raw, sizeof(grh->dgid.raw)) == 0;
}

/* Build a frame with no payload (ACK, NAK, READ request, atomics) and queue it. 0 or -ENOMEM. */
int rnic_send_control(struct rnic_pipeline *p, struct rnic_tx_buffer *tx, struct rnic_pkt_desc *d);

/* Complete a WQE (CQE into the QP's CQ); returns 0 or the CQ's error. */
int rnic_complete(struct rnic_qp *qp, int is_send, uint32_t index, uint8_t wqe_opcode, enum rnic_wc_status st,
		  uint32_t byte_len);

/*
 * Move a QP to the error state from the data path (a completion in error says why). Each side flushes its
 * own queue on its own lcore: the caller flushes its side, the other side when it next sees the state.
 */
void rnic_qp_fail(struct rnic_qp *qp);
/* Move a QP to an error state (ERR, or SQE for a UC/UD send error) from the data path. */
void rnic_qp_enter(struct rnic_qp *qp, enum rnic_qp_state state);

/* Requester lcore: the QP is in error; flush its SQ here and have the responder flush its RQ. */
void rnic_requester_fail(struct rnic_pipeline *p, struct rnic_qp *qp);

/* The requester's una moved forward: refill the retry counts, restart or stop the loss timer. */
void rnic_requester_progress(struct rnic_pipeline *p, struct rnic_qp *qp);

/* Go back N: resend from this PSN (and every WQE after it), counted as a retransmission. 0, or -1 if the PSN
 * is not outstanding. */
int rnic_requester_rewind(struct rnic_pipeline *p, struct rnic_qp *qp, uint32_t psn);

/* Ask again at once for in-flight READ e's responses from its first missing one, or for atomic e's answer,
 * without going back over the WQEs after it (completer, on the requester's lcore): once per gap. */
void rnic_requester_reask(struct rnic_pipeline *p, struct rnic_qp *qp, struct rnic_inflight *e);

/*
 * READ e lost two responses in a row or more (completer): its responder sends faster than the path takes them
 * (a rate limit's queue, a switch buffer, which drop runs of frames; a path that loses frames one at a time
 * rarely loses two in a row). The READ window halves, down from what was outstanding (a window never filled
 * says nothing), once per round trip: the READs that went out before the last cut lost theirs to the same
 * overflow. Without it, 16 outstanding 64 KB READs on each QP (max_rd_atomic) overran a 64-frame queue
 * every round, the responses asked again overran it as well, and QPs ended with the retry budget spent
 * (IBA leaves the rate of READ responses to the requester: it asks for them).
 */
void rnic_requester_read_overflow(struct rnic_req_ctx *r, const struct rnic_inflight *e);

/* READ e has all its responses: its PSNs leave the READ window, which grows (completer). */
void rnic_requester_read_answered(struct rnic_req_ctx *r, const struct rnic_inflight *e, uint32_t pmtu);

/* An ACK covered PSNs past where go-back-N resends from (they went out before it): the responder has
 * them, so the requester resumes after them. */
void rnic_requester_skip_acked(struct rnic_pipeline *p, struct rnic_qp *qp);

/* rnic_query_device_counters for a device (telemetry has no context). */
int rnic_device_counters(const struct rnic_device *dev, struct rnic_counter *counters, int n);

/* Free a QP's list of kept frames from element head on (requester lcore). */
void rnic_rtx_free_list(struct rnic_pipeline *p, uint32_t head);

/* Expired loss and RNR timers of the pipeline's QPs (requester lcore). */
void rnic_requester_timers(struct rnic_pipeline *p);

/* The QP's loss deadline or RNR wait was set or cleared: give the timer wheel the earliest of them. */
void rnic_requester_watch(struct rnic_pipeline *p, struct rnic_qp_priv *q);

/* PSNs of an in-flight WQE: its packets (SEND/WRITE, READ responses) or 1 (atomic, or no payload). */
uint32_t rnic_wqe_span(const struct rnic_inflight *e, uint32_t pmtu);

/* Complete, in order, the in-flight send WQEs that are done (requester lcore). */
void rnic_requester_retire(struct rnic_pipeline *p, struct rnic_qp *qp);

#endif /* RNIC_PIPELINE_H */
