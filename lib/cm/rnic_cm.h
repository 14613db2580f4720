/* SPDX-License-Identifier: BSD-3-Clause
 * The connection manager's state (doc/cm.md): one per process, made when the first event channel is and
 * released with the last one. Per device: the CM's context (what an id's `verbs` is), a default PD and QP1.
 * Per rnic_cm_id: one state machine that is librdmacm's and ib_cm's together (IBA 12.9's states of a
 * connection, with the address and route steps before them), its connection's parameters and the MAD it
 * may have to send again.
 *
 * One mutex (rnic_cm.lock) covers everything: the application's calls (rnic_cm_api.c) and the CM's thread
 * (rnic_cm.c), which polls every device's QP1 and runs the timers every millisecond. Events go to an
 * id's channel: a list under that lock, and an eventfd readable exactly while the list is not empty, so
 * that destroying an id can take its events out (as Linux's ucma_cleanup_ctx_events does).
 */
#ifndef RNIC_CM_H
#define RNIC_CM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "rnic_cm_msg.h"
#include "rnic_evq.h"
#include "rnic_gsi.h"
#include "rnic_priv.h"

#define RNIC_CM_RESPONSE_TIMEOUT 20	/* Linux's CMA_CM_RESPONSE_TIMEOUT: 4.096 us x 2^20, 4.3 s */
#define RNIC_CM_MAX_RETRIES 15		/* CMA_MAX_CM_RETRIES */
#define RNIC_CM_PACKET_LIFETIME 16	/* CMA_IBOE_PACKET_LIFETIME: a RoCE path's, 268 ms */
#define RNIC_CM_HOP_LIMIT 64
#define RNIC_CM_EVENTS 256		/* events a channel holds */
#define RNIC_CM_CA_ACK_DELAY 15		/* the devices' local_ca_ack_delay (rnic_device.c), REP's target ACK delay */
#define RNIC_CM_MAX_BACKLOG 1024	/* a listener's backlog without one given (Linux's net.rdma_ucm.max_backlog) */
#define RNIC_CM_PORT_FIRST 32768	/* ephemeral ports (Linux's ip_local_port_range) */
#define RNIC_CM_PORT_LAST 60999

/* The CMA header at the start of a REQ's private data (Linux's struct cma_hdr): how rdma_cm carries the IP
 * addresses and ports of the connection. */
#define RNIC_CMA_VERSION 0x00
#define RNIC_CMA_HDR_LEN 36
#define RNIC_CM_REQ_USER_PRIVATE (RNIC_CM_REQ_PRIVATE - RNIC_CMA_HDR_LEN)	/* 56 */

/* The CM's counters, as X(name, what). */
#define RNIC_CM_COUNTERS(X) \
	X(req_sent, "REQs sent (first tries)") \
	X(mra_sent, "MRAs sent: a REQ came again before the application accepted") \
	X(rej_sent, "REJs sent") \
	X(rep_sent, "REPs sent (first tries)") \
	X(rtu_sent, "RTUs sent") \
	X(dreq_sent, "DREQs sent (first tries)") \
	X(drep_sent, "DREPs sent") \
	X(received, "CM messages received") \
	X(retransmits, "CM messages sent again after their timeout") \
	X(timeouts, "messages that ran out of retries: the connection or disconnection failed") \
	X(duplicates, "duplicate REQs, REPs and DREQs answered again or ignored") \
	X(backlog_drops, "REQs dropped unanswered: their listener's backlog of requests not yet taken was full " \
	  "(the peer sends them again)") \
	X(no_listener, "REQs for a service nobody listens on, rejected (reason 8, invalid service ID)") \
	X(unmatched, "messages for no connection of this CM (dropped; a DREQ is answered)") \
	X(malformed, "CM MADs of an unknown attribute, or a REQ that is not RC or not from rdma_cm: dropped " \
	  "or rejected") \
	X(events_lost, "events not delivered: the channel's queue was full")

struct rnic_cm_stats {
#define RNIC_X(name, what) uint64_t name;
	RNIC_CM_COUNTERS(RNIC_X)
#undef RNIC_X
};

struct rnic_cm_dev {
	struct rnic_device *device;
	struct rnic_context *ctx;	/* ids' verbs on this device */
	struct rnic_pd *pd;		/* rnic_cm_create_qp without a PD */
	struct rnic_gsi *gsi;
	union rnic_gid gid;
	struct rnic_cm_stats stats;
};

enum rnic_cm_state {
	RNIC_CM_IDLE,			/* new, or its connection over */
	RNIC_CM_ADDR_BOUND,
	RNIC_CM_ADDR_QUERY,		/* the destination's MAC being resolved */
	RNIC_CM_ADDR_RESOLVED,
	RNIC_CM_ROUTE_RESOLVED,
	RNIC_CM_LISTEN,
	RNIC_CM_REQ_SENT,		/* active side */
	RNIC_CM_MRA_REQ_RCVD,
	RNIC_CM_REQ_RCVD,		/* passive side, before rnic_cm_accept */
	RNIC_CM_MRA_REQ_SENT,
	RNIC_CM_REP_SENT,
	RNIC_CM_ESTABLISHED,
	RNIC_CM_DREQ_SENT,
	RNIC_CM_DREQ_RCVD,
	RNIC_CM_TIMEWAIT,
};

/* An event as queued: the public event and the private data it points to once taken. */
struct rnic_cm_event_entry {
	struct rnic_cm_event pub;
	TAILQ_ENTRY(rnic_cm_event_entry) next;	/* in its channel's events until taken */
	uint8_t private_data[RNIC_CM_PRIVATE_MAX];
};

struct rnic_cm_channel {
	struct rnic_cm_event_channel pub;	/* pub.fd: an eventfd, 0 exactly while events is empty */
	TAILQ_ENTRY(rnic_cm_channel) next;	/* in rnic_cm.channel_list */
	TAILQ_HEAD(, rnic_cm_event_entry) events;	/* not yet taken, oldest first */
	uint32_t nb_events;
	void (*notify)(void *arg, int readable);	/* as the eventfd is signalled (rnicd's clients' fds) */
	void *notify_arg;
	struct rnic_evq_waiters waiters;	/* gets waiting on the fd: a destroyed channel is freed after the last */
};

struct rnic_cm_id_priv {
	struct rnic_cm_id pub;
	TAILQ_ENTRY(rnic_cm_id_priv) next;
	enum rnic_cm_state state;
	struct rnic_cm_dev *dev;	/* NULL until bound to a device */
	uint32_t refs;			/* the application's (until destroyed), one per event queued or held */
	uint8_t destroyed;
	uint32_t backlog;		/* listener: connection requests it may still be given before it takes one */
	uint8_t own_cqs;		/* rnic_cm_create_qp made the CQs */
	/* Options (rnic_cm_set_option). */
	uint8_t tos;
	uint8_t ack_timeout;		/* 0: from the path */
	uint8_t response_timeout;	/* the CM response timeouts of our REQ */
	uint8_t max_retries;
	uint8_t packet_lifetime;
	uint64_t addr_deadline;		/* ADDR_QUERY: ms, monotonic */
	/* The connection. */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint64_t remote_ca_guid;
	uint64_t tid;			/* the REQ's (REP and RTU carry it), then the DREQ's */
	struct rnic_gsi_addr peer;	/* the far port's GID and its CM's QP */
	uint32_t remote_qpn;
	uint32_t remote_psn;		/* the peer's message's starting PSN: the first we send */
	uint32_t local_psn;		/* ours (in our REQ or REP): the first we expect to receive */
	uint8_t path_mtu;
	uint8_t responder_resources;	/* ours: the READs and atomics the peer may have outstanding at us */
	uint8_t initiator_depth;	/* ours: those we may have outstanding at the peer */
	uint8_t retry_count;
	uint8_t rnr_retry_count;	/* what our QP uses: the count the peer asked for */
	uint8_t local_ack_timeout;	/* the QP's */
	uint8_t peer_response_timeout;	/* the peer's CM response timeout (its REQ's local one) */
	uint8_t peer_max_retries;
	struct rnic_cm_msg req;		/* passive: the REQ being answered */
	/* The message that waits for an answer and is sent again until it comes. */
	uint8_t mad[RNIC_MAD_SIZE];
	uint8_t mad_pending;
	uint32_t retries_left;
	uint64_t timeout_ms;
	uint64_t deadline_ms;
	uint64_t timewait_end_ms;
};

static inline struct rnic_cm_id_priv *
rnic_cm_id_priv(struct rnic_cm_id *id)
{
	return (struct rnic_cm_id_priv *)id;
}

struct rnic_cm {
	pthread_mutex_t lock;
	uint32_t channels;		/* open: the CM runs while one is */
	TAILQ_HEAD(, rnic_cm_channel) channel_list;
	int running;
	volatile int stop;
	pthread_t thread;
	struct rnic_cm_dev dev[RNIC_MAX_DEVICES];
	unsigned int nb_dev;
	TAILQ_HEAD(, rnic_cm_id_priv) ids;
	uint32_t next_comm_id;
	uint64_t next_tid;
};

extern struct rnic_cm rnic_cm;

/* The CM up (QP1 on every device, the thread) / down once nothing uses it. Under the lock. */
int rnic_cm_start(void);
void rnic_cm_stop_if_unused(void);

/* ms on the monotonic clock. */
uint64_t rnic_cm_now_ms(void);
/* 4.096 us x 2^t in ms, as Linux's cm_convert_to_ms. */
uint64_t rnic_cm_time_ms(uint8_t t);
/* A QP's local ACK timeout for a path's packet life time and a CA's ACK delay (exponents), as Linux's
 * cm_ack_timeout: the larger of the delay and life time + 1, one more when the other is within half of it. */
uint8_t rnic_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_lifetime);

/* Queue an event on the id's channel (it holds a reference on the id, and on listen_id). 0, or -ENOSPC when
 * the channel's queue is full (the event is lost, counted). */
int rnic_cm_event(struct rnic_cm_id_priv *id, enum rnic_cm_event_type type, int status,
		   struct rnic_cm_id_priv *listen_id, const struct rnic_conn_param *conn);
/* Take an event out of its channel (taken, or dropped with its id); the fd stops polling readable with the
 * channel's last event. The caller owns the entry and the references it holds. */
void rnic_cm_channel_remove(struct rnic_cm_channel *ch, struct rnic_cm_event_entry *e);
/* Put an event at the end of a channel's queue; the fd polls readable. */
void rnic_cm_channel_add(struct rnic_cm_channel *ch, struct rnic_cm_event_entry *e);
/* Drop a reference; the id is freed with its last. */
void rnic_cm_id_put(struct rnic_cm_id_priv *id);

/* Send a message of the id's connection; with a timeout, kept and sent again until answered or retries run
 * out (then the id's timeout handling). */
void rnic_cm_send(struct rnic_cm_id_priv *id, struct rnic_cm_msg *msg);
void rnic_cm_send_timed(struct rnic_cm_id_priv *id, struct rnic_cm_msg *msg, uint64_t timeout_ms,
			uint32_t retries);
/* A REJ of the id's connection (about: the message rejected). */
void rnic_cm_send_rej(struct rnic_cm_id_priv *id, uint16_t reason, uint8_t about, const void *pd, uint8_t len);
/* A DREQ (timed) / DREP of the id's connection. */
void rnic_cm_send_dreq(struct rnic_cm_id_priv *id);
void rnic_cm_send_drep(struct rnic_cm_id_priv *id);

/* The QP of the id through INIT (again, with the access its responder resources allow), RTR and RTS with its
 * connection's parameters, as rdma_cm does before REP (passive) or RTU (active). 0 or an errno. */
int rnic_cm_qp_connect(struct rnic_cm_id_priv *id);
/* The id's QP to ERR (disconnect). */
void rnic_cm_qp_error(struct rnic_cm_id_priv *id);
/* TIMEWAIT, ending after twice the packet life time with the id's TIMEWAIT_EXIT event. */
void rnic_cm_enter_timewait(struct rnic_cm_id_priv *id);

/* MADs of the CM class from a device's QP1 (rnic_gsi_handler). */
void rnic_cm_recv(void *arg, struct rnic_gsi *gsi, const uint8_t *mad, const struct rnic_gsi_addr *from);

/* The CM device that has this GID / the address as a GID and the reverse. */
struct rnic_cm_dev *rnic_cm_dev_by_gid(const union rnic_gid *gid);
int rnic_cm_addr_to_gid(const struct sockaddr *addr, union rnic_gid *gid);
void rnic_cm_gid_to_addr(const union rnic_gid *gid, uint16_t port_be, struct sockaddr_storage *out);
uint16_t rnic_cm_addr_port(const struct sockaddr *addr);	/* network byte order */
socklen_t rnic_cm_addr_len(const struct sockaddr *addr);

/* For rnicd, which serves the CM to its clients (app/rnicd/cm.c, doc/cm.md "Through rnicd"). */
/* Have notify(arg, 1) called with each event queued on the channel, notify(arg, 0) when its last is taken or
 * dropped: as its eventfd is written and read back (under the CM's lock: it must not block). */
void rnic_cm_channel_set_notify(struct rnic_cm_event_channel *channel, void (*notify)(void *arg, int readable),
				void *arg);
/* The channel's oldest event, taken, or EAGAIN, whatever the channel's fd says (it never waits). To be
 * acknowledged with rnic_cm_ack_cm_event. */
int rnic_cm_take_event(struct rnic_cm_event_channel *channel, struct rnic_cm_event **event);
/* The index of the engine's device the id is bound to, -1 for none yet. */
int rnic_cm_id_dev_index(struct rnic_cm_id *id);

#endif /* RNIC_CM_H */
