/* SPDX-License-Identifier: BSD-3-Clause
 * The engine's pipeline for one device: the stages of the seed's RDMA engine (seed 003 §1.1) as poll
 * functions linked by rte_rings. This header holds a shard's pipeline state and the helpers every stage uses
 * (TX buffering, routing, control frames, completions); the stage graph is declared in rnic_stage.h and each
 * stage's own interface is in rnic_doorbell.h, rnic_parser.h, rnic_responder.h and rnic_requester.h.
 *
 *   doorbell ring -> [doorbell] -> slot ring -> [requester: WQE scheduling + parse, DataPack gather,
 *                                                transmit control, request packet generation] -> port TX
 *   port RX -> [parser: header parser] -> request ring  -> [responder: execution engine, RQ WQE manager,
 *                                                           write address table, response generation] -> TX
 *                                      -> response ring -> [completer: requester receive control, CQEs]
 *
 * The requester and the completer share a QP's requester context, so they run on the same lcore; the
 * responder owns the responder context. With several lcores per stage the device has one pipeline per
 * shard and QP n belongs to shard n % nb_shards: the doorbell stage (one per device) and each shard's parser
 * (its shard's RX queues) route to the owning shard's rings. Every QP's state thus has exactly one owner and
 * no lock.
 */
#ifndef RNIC_PIPELINE_H
#define RNIC_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "rnic_mr.h"
#include "rnic_priv.h"
#include "rnic_qp.h"
#include "rnic_latency.h"
#include "rnic_sched.h"
#include "rnic_stage.h"
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
/* A gap longer than this between two of the requester's passes: the machine took the lcore away (a pass takes
 * microseconds, a scheduler's time slice milliseconds). The requester's and DCQCN's timers do not run in the
 * rest of it. */
#define RNIC_AWAY_US 1000
#define RNIC_MIN_PROBE_US 50		/* the shortest wait before an early probe (the timer wheel's ticks: 16 us) */
#define RNIC_RTT_GIVE_UP 14		/* a packet timed whose ACK has not come in a 67 ms loss timer's time is lost */
#define RNIC_RTX_SHARE 4		/* a pipeline keeps at most 1/(4 x shards) of its pool's mbufs for resending */

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
	void (*kick)(uint16_t port_id, uint16_t queue, struct rte_mempool *mp);	/* the device's tx_kick */
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
	X(pkey_violations, "requests whose P_Key is not in the P_Key table (its one entry, 0xffff)") \
	X(no_mbuf, "frames not built: the mbuf pool was empty") \
	X(cnp_received, "congestion notifications (CNPs) received") \
	X(cnp_handled, "CNPs a QP's rate control acted on (reaction point)") \
	X(cnp_ignored, "CNPs for no QP of this device, from elsewhere, or with --cc rp_enable=0") \
	X(ecn_marked, "RoCE frames received with CE (congestion experienced) set") \
	X(cnp_sent, "CNPs sent for CE-marked frames (notification point)") \
	X(rate_cuts, "rate decreases of DCQCN") \
	X(pacer_waits, "QP visits ended by the pacer (rate_limit or DCQCN's rate)") \
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
} __rte_cache_aligned;		/* each stage's set on lines of its own: each stage's lcore writes its own */

/*
 * One tenant's use of a pipeline (doc/engine.md, "Fair service"). While two tenants or more have QPs with
 * work, a tenant may send RNIC_TENANT_CREDIT PSNs per scheduler round (times its share), however many QPs
 * it has; a tenant that overdraws (a READ is charged its responses) pays it back in the next rounds. Its
 * QPs are served in slot order from where it ran out the round before. Its virtual time (bytes it sent,
 * each weighing RNIC_SHARE_SCALE / share) may run at most RNIC_SHARE_SLACK ahead of the slowest tenant's:
 * so tenants with work divide the requester in the ratio of their shares.
 */
struct rnic_req_tenant {
	uint32_t round;			/* the scheduler round credit is for */
	int32_t credit;			/* PSNs it may still send in that round */
	uint32_t share;			/* its weight (rnic_device_tenant_share; 0: 1), set by the control path */
	uint32_t vcost;			/* RNIC_SHARE_SCALE / share, taken at its first visit of a round */
	uint32_t window;		/* RNIC_TENANT_WINDOW x share */
	uint64_t vtime;			/* bytes it was charged x vcost (wraps: compared by difference) */
	uint32_t resume;		/* its first slot to serve after its turn ended (0: any) */
	uint32_t top;			/* the highest slot of its QPs visited in the round before */
	uint32_t top_now;		/* ... and in this round */
	uint32_t inflight;		/* PSNs its RC QPs have sent and not had acknowledged (rnic_tenant_sync) */
	uint32_t released;		/* of those, PSNs of QPs reset or destroyed (the control path's, atomic) */
	uint64_t packets;
	uint64_t bytes;
	uint64_t psns;
	uint64_t deferred;
	/* Its cap (rnic_pacer.h): what the control path set for the device (bits and messages a second, 0:
	 * none; cap_gen counts the settings), and this shard's buckets at its part of it. */
	uint64_t cap_bps;
	uint64_t cap_mps;
	uint32_t cap_gen;
	uint32_t cap_gen_seen;		/* the setting the buckets hold */
	uint8_t capped;			/* a bucket is on: its QPs ask them before each packet */
	struct rnic_pacer cap_bytes;	/* frames' bytes (off: bpc 0) */
	struct rnic_pacer cap_msgs;	/* messages x RNIC_CAP_MSG_UNITS (off: bpc 0); released counts messages */
	uint32_t parked_head;		/* its QPs waiting for its tokens: first and last slot + 1 (0: none), */
	uint32_t parked_tail;		/* linked through rnic_pipeline.cap_link */
	uint64_t cap_due;		/* when its wake is filed for on the pacer's wheel (0: it is not) */
	uint64_t cap_since;		/* when its QPs began to wait for its debt to be paid (0: they do not) */
	uint64_t cap_waits;		/* QP visits its cap stopped */
	uint64_t cap_held_cycles;	/* time its QPs waited for its debt to be paid */
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
#define RNIC_SHARE_SCALE 4096		/* virtual time per byte of a tenant of share 1 (a multiple of 64) */
/* How far a tenant's virtual time may run ahead of the slowest tenant's: two visits' bytes of share 1. */
#define RNIC_SHARE_SLACK (2ull * 16384 * RNIC_SHARE_SCALE)
/* How far behind it a tenant may fall, waiting for ACKs or with nothing to send: 4 MB of share 1. */
#define RNIC_SHARE_LAG ((uint64_t)(4u << 20) * RNIC_SHARE_SCALE)
#define RNIC_TENANT_HDR_BYTES 64	/* a request packet's headers, as a tenant is charged them */
#define RNIC_CAP_UNPARKED UINT32_MAX	/* rnic_pipeline.cap_link: the QP waits in no tenant's queue */
#define RNIC_CAP_RECHECK_US 1000	/* a tenant with QPs waiting for its tokens is woken at least this often */

/* DCQCN's parameters (struct rnic_cc_params) in the data path's units: TSC cycles, kbit/s. */
struct rnic_cc_conf {
	uint8_t cnp_tclass;		/* DSCP np_cnp_dscp, ECN ECT(0): what a ConnectX sends */
	uint64_t cnp_gap;		/* np_min_time_between_cnps */
	uint64_t time_reset;		/* rp_time_reset */
	uint64_t alpha_period;		/* rp_dce_tcp_rtt */
	uint64_t away_gap;		/* RNIC_AWAY_US */
	uint64_t cut_period;		/* rp_rate_reduce_monitor_period */
	uint32_t byte_reset;		/* bytes */
	uint32_t threshold;
	uint32_t ai;			/* kbit/s */
	uint32_t hai;
	uint32_t min_rate;
	uint32_t line_rate;		/* rp_max_rate, or the port's link speed */
	uint8_t cap_paced;		/* rp_max_rate is below the port's speed: a QP back at it stays paced */
	uint32_t gd;
	uint32_t min_dec_fac;
	uint32_t g;
	uint32_t initial_alpha;
};

/*
 * A shard's pipeline, in parts by owner: what the pipeline's creation sets and every stage only reads, then
 * one part per stage's lcore, each on cache lines of its own (with the per-stage counters and latency
 * histograms), so that no stage's writes take a line another lcore reads (doc/engine.md, "Pipeline
 * layout"). The parts are anonymous, so a field is named the same wherever it lives.
 */
struct rnic_pipeline {
	/* Set by rnic_pipeline_create, read by the stages. */
	struct rnic_device *dev;
	uint16_t shard;			/* this pipeline's shard; its TX queues: rnic_device_port_queue */
	struct rte_mempool *pool;
	struct rte_ring *slot_ring;	/* doorbell -> requester: QP slots with new WQEs */
	struct rte_ring *request_ring;	/* parser -> responder: request frames */
	struct rte_ring *response_ring;	/* parser -> completer: response frames */
	struct rte_ring *flush_ring;	/* requester -> responder: QP slots in error whose RQ to flush */
	struct rte_ring *rtx_reclaim;	/* control threads -> requester: kept-frame lists of QPs reset or destroyed */
	struct rte_ring *neigh_tx;	/* shard 0: ARP/ND frames its responder sends (rnic_neigh.h) */
	uint64_t neigh_wait_cycles;	/* RNIC_NEIGH_WAIT_MS and RNIC_NEIGH_RECHECK_US in TSC cycles */
	uint64_t neigh_recheck_cycles;
	uint64_t min_probe_cycles;	/* RNIC_MIN_PROBE_US */
	uint64_t shared_horizon;	/* RNIC_TENANT_HORIZON_MS in TSC cycles */
	uint64_t cap_recheck_cycles;	/* RNIC_CAP_RECHECK_US */
	uint64_t loss_timeout_cycles[32];	/* TSC cycles of the loss timer per QP timeout attribute */
	struct rnic_cc_conf cc;		/* congestion control (rnic_dcqcn.c) */
	uint32_t *read_fifo;		/* the responder's READ FIFO (below), room for every QP slot twice */
	uint32_t read_fifo_mask;
	uint32_t rtx_size;
	struct rnic_rtx_elem *rtx;	/* the retransmit buffer's elements, [1..rtx_size] (requester) */

	/* The doorbell stage's (shard 0's pipeline serves the device): dbq_next is the client queue its next
	 * turn starts at. */
	struct {
		uint32_t dbq_next;
		uint32_t dbq_turn;
		struct rnic_db_tenant db_tenant[RNIC_MAX_TENANTS];
	} __rte_cache_aligned;

	/* The parser's (each shard's reads the shard's RX queues: rnic_device_port_queue). */
	struct {
		uint16_t rx_queue;	/* the parser's next RX queue of the shard, 0 or 1 */
		uint16_t foreign_polls;	/* polls left that look at every shard's rings (rnic_parser.c) */
	} __rte_cache_aligned;

	/* The requester's and the completer's (one lcore). */
	struct {
		struct rnic_sched sched;	/* QPs with work (the patent's QP scheduler) */
		struct rnic_mr_cache req_cache;	/* the requester side's translation cache */
		struct rnic_tx_buffer req_tx;
		struct rnic_timer_wheel timers;	/* loss and RNR timers */
		struct rnic_timer_wheel pace_timers;	/* QPs waiting for their pacer's tokens (rnic_pacer.c) */
		uint8_t pacing;		/* a QP of the shard was ever paced: its wheel is looked at */
		/* The engine's own time for the requester's timers and DCQCN: the time the lcore was away, the
		 * gaps between two passes beyond RNIC_AWAY_US (TSC cycles), and the last pass
		 * (rnic_requester_clock). */
		uint64_t away_cycles;
		uint64_t last_pass_tsc;
		/* The path's round trip: from an AckReq packet's departure to the progress its ACK made, one
		 * QP's packet at a time, smoothed (7/8 old, 1/8 new; TSC cycles, 0: no sample yet). It sets when
		 * a QP that hears nothing sends an early probe. */
		uint64_t srtt;
		uint64_t rtt_tsc;	/* the packet being timed: when it left (0: none), its QP slot and PSN */
		uint32_t rtt_slot;
		uint32_t rtt_psn;
		uint64_t req_clock;	/* latency stamps: when the current WQE started */
		/* The completer's: the QP whose progress its in-order READ responses put off to the end of
		 * their run in the burst (rnic_completer.c), NULL for none. */
		struct rnic_qp *progress_qp;
		struct rnic_qp *wqe_qp;	/* the send WQE start_wqe parsed last (this QP's, this index), */
		uint32_t wqe_index;	/* for send_packet in the same visit of the QP */
		struct rnic_send_wqe wqe;
		uint32_t rtx_free;	/* first free retransmit element (0: none left) */
		/* Fair service between tenants: tenant_round is the round tenants_now counts; tenants with QPs
		 * visited in it and in the round before. */
		uint32_t tenant_round;
		uint32_t tenants_now;
		uint32_t tenants_last;
		uint64_t shared_until;	/* TSC until which the tenants' windows hold (0: one tenant so far) */
		uint32_t visit_bytes;	/* payload bytes sent in the current QP visit */
		uint16_t req_pass;	/* requester passes (stage calls) begun: a QP on a lossy path gets one
					 * visit in each (rnic_requester.c) */
		/* The tenants' virtual times: the least of those visited in the round before (vfloor) and in
		 * this one so far (vmin). */
		uint64_t vfloor;
		uint64_t vmin;
		struct rnic_req_tenant *visit_cap;	/* the QP visit's tenant if it has a cap, else NULL */
		uint32_t *cap_link;	/* per QP slot: the next slot + 1 in its tenant's queue of QPs waiting for
					 * the tenant's tokens (0: the last), RNIC_CAP_UNPARKED if in none */
		struct rnic_req_tenant req_tenant[RNIC_MAX_TENANTS];
	} __rte_cache_aligned;

	/* The responder's. */
	struct {
		struct rnic_mr_cache resp_cache;	/* the responder side's translation cache */
		struct rnic_tx_buffer resp_tx;
		uint32_t read_head;	/* QPs with READ responses or atomic answers to send, in turn */
		uint32_t read_tail;	/* (read_fifo): room for every QP slot twice, so never short */
		uint32_t read_turn;	/* responses the QP at read_head has sent in its turn */
		uint32_t nb_acks;	/* QPs with a coalesced ACK/NAK to send at the end of the burst */
		uint32_t ack_list[RNIC_BURST];
	} __rte_cache_aligned;

	struct rnic_pipeline_stats stats[RNIC_STAGE_MAX];	/* each on lines of its own */
	struct {
		struct rnic_latency_hist queued;
		struct rnic_latency_hist busy;
	} __rte_cache_aligned lat[RNIC_LAT_MAX];	/* rnic_latency.h: each written by its stage's lcore */
};

/* The parts' first fields start cache lines: a check that the layout above keeps its owners apart. */
#define RNIC_PIPELINE_LINE_START(field) \
	_Static_assert(offsetof(struct rnic_pipeline, field) % RTE_CACHE_LINE_SIZE == 0, \
		       "struct rnic_pipeline: " #field " does not start a cache line")
RNIC_PIPELINE_LINE_START(dbq_next);
RNIC_PIPELINE_LINE_START(rx_queue);
RNIC_PIPELINE_LINE_START(sched);
RNIC_PIPELINE_LINE_START(resp_cache);
RNIC_PIPELINE_LINE_START(stats);
RNIC_PIPELINE_LINE_START(lat);
_Static_assert(offsetof(struct rnic_pipeline, rx_queue) / RTE_CACHE_LINE_SIZE !=
	       offsetof(struct rnic_pipeline, read_head) / RTE_CACHE_LINE_SIZE,
	       "the parser's rx_queue shares a line with the responder's READ FIFO");
_Static_assert(sizeof(struct rnic_pipeline_stats) % RTE_CACHE_LINE_SIZE == 0,
	       "one stage's counters share a line with the next stage's");
_Static_assert(sizeof(((struct rnic_pipeline *)0)->lat[0]) % RTE_CACHE_LINE_SIZE == 0,
	       "one stage's latency histograms share a line with the next stage's");

/* The counters of one stage of the pipeline (the requester's for the completer too: they share an lcore). */
#define RNIC_STATS(p, stage) (&(p)->stats[RNIC_STAGE_##stage])

/* Shard `shard`'s pipeline of the device, its rings made with ring_flags (rnic_topology_ring_flags, by
 * enum rnic_edge_id; NULL: one thread polls every stage, so single-producer and single-consumer but where
 * control threads enqueue). rnic_topology_build makes an engine's. */
int rnic_pipeline_create(struct rnic_device *dev, struct rte_mempool *pool, uint16_t shard,
			 const unsigned int ring_flags[RNIC_EDGE_MAX], struct rnic_pipeline **out);

/* The pipeline (shard) that owns the QP with this number. */
static inline struct rnic_pipeline *
rnic_shard_of(const struct rnic_device *dev, uint32_t qpn)
{
	return dev->pipeline[qpn % dev->nb_shards];
}
void rnic_pipeline_free(struct rnic_pipeline *p);
/* The engine's control-path entry points (rnic_engine_hooks in rnic_priv.h, registered by
 * rnic_pipeline_create): a reset or destroyed QP's kept frames back to its pipeline; a destination's MAC
 * resolved ahead of its first frame. */
void rnic_pipeline_release_qp(struct rnic_qp *qp);
void rnic_route_prepare(const struct rnic_device *dev, const union rnic_gid *dgid);
/* The MAC of a destination: 0, -EAGAIN while ARP/ND resolves it, -EHOSTUNREACH (rnic_neigh_lookup). Lock-free;
 * a miss asks the neighbour thread. */
int rnic_route_lookup(const struct rnic_device *dev, const union rnic_gid *dgid, uint8_t mac[6]);

/* Free the mbufs a ring of mbuf pointers holds (NULL: none). */
void rnic_ring_free_mbufs(struct rte_ring *r);

/* ------------------------------------------------------------------------------------------------------ */
/* Helpers shared by the stages                                                                            */

static inline uint32_t
rnic_mtu_bytes(enum rnic_mtu mtu)
{
	return 128u << mtu;
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
	struct rnic_qp *prev = NULL;

	for (unsigned int i = 0; i < n; i++)
		rnic_prefetch_mbuf_desc(pkts[i]);
	for (unsigned int i = 0; i < n; i++) {
		const struct rnic_pkt_desc *d = rnic_mbuf_desc(pkts[i]);
		struct rnic_qp *qp = d != NULL ? rnic_qp_lookup(dev, d->dqpn) : NULL;

		if (qp != NULL && qp != prev)	/* a run of one QP's frames: its lines asked for once */
			rnic_qp_prefetch(qp);
		prev = qp;
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


/* rnic_query_device_counters for a device (telemetry has no context). */
int rnic_device_counters(const struct rnic_device *dev, struct rnic_counter *counters, int n);

#endif /* RNIC_PIPELINE_H */
