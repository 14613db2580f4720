/* SPDX-License-Identifier: BSD-3-Clause
 * The control protocol between rnicd and its clients (doc/rnicd.md): one request, one reply, each a single
 * SOCK_SEQPACKET message of fixed size per command; memory crosses as file descriptors (SCM_RIGHTS). Only
 * the control verbs travel here: posting, polling and doorbells go through the shared memory.
 *
 * Objects are named by handles from the client's own table in the daemon; nothing the client sends is used
 * as an address in the daemon.
 */
#ifndef RNICD_PROTO_H
#define RNICD_PROTO_H

#include <stdint.h>
#include <sys/types.h>

#include "rnic.h"
#include "rnic_priv.h"

#define RNICD_PROTO_VERSION 3
#define RNICD_MAX_COUNTERS 128	/* device counters one reply carries */
#define RNICD_MR_MAX_SEGS 16	/* memfds one registration may span */
#define RNICD_MAX_FDS RNICD_MR_MAX_SEGS	/* descriptors one message may carry */

enum rnicd_cmd {
	RNICD_LIST = 1,		/* the daemon's devices */
	RNICD_OPEN,		/* bind this connection to a device: it becomes a context (one per connection) */
	RNICD_QUERY_PORT,
	RNICD_ALLOC_PD,
	RNICD_DEALLOC_PD,
	RNICD_REG_MR,		/* + the memfd of the buffer */
	RNICD_DEREG_MR,
	RNICD_CREATE_CQ,	/* reply + the memfd of the CQ's host-interface block */
	RNICD_DESTROY_CQ,
	RNICD_CREATE_QP,	/* reply + the memfd of the QP's host-interface block */
	RNICD_MODIFY_QP,
	RNICD_QUERY_QP,
	RNICD_DESTROY_QP,
	RNICD_QUERY_QP_COUNTERS,
	RNICD_QUERY_DEVICE_COUNTERS,
	RNICD_STATS,		/* the daemon's counters (rnicd_stats) */
	RNICD_CREATE_SRQ,	/* reply + the memfd of the SRQ's host-interface block */
	RNICD_MODIFY_SRQ,
	RNICD_QUERY_SRQ,
	RNICD_DESTROY_SRQ,
	RNICD_CREATE_COMP_CHANNEL,	/* reply + the channel's event socket (rnicd_event): the client's end, the daemon's */
	RNICD_DESTROY_COMP_CHANNEL,
	/* The connection manager (doc/cm.md, "Through rnicd"): the daemon's CM, its channels and ids named by
	 * handles of the connection's own tables. Any connection may carry them (a client makes one for them). */
	RNICD_CM_CREATE_CHANNEL,	/* reply + the channel's fd: readable while the daemon queues an event */
	RNICD_CM_DESTROY_CHANNEL,
	RNICD_CM_CREATE_ID,
	RNICD_CM_DESTROY_ID,
	RNICD_CM_MIGRATE_ID,
	RNICD_CM_BIND,
	RNICD_CM_RESOLVE_ADDR,
	RNICD_CM_RESOLVE_ROUTE,
	RNICD_CM_LISTEN,
	RNICD_CM_ATTACH_QP,		/* a QP of another connection of the same process (its client id) */
	RNICD_CM_CONNECT,
	RNICD_CM_ACCEPT,
	RNICD_CM_REJECT,
	RNICD_CM_DISCONNECT,
	RNICD_CM_SET_OPTION,
	RNICD_CM_GET_EVENT,		/* the channel's oldest event, or EAGAIN */
	RNICD_CM_ACK_EVENT,
	RNICD_CMD_END,
};

struct rnicd_dev_info {
	char name[RNIC_DEV_NAME_MAX];
	uint64_t guid;
	struct rnic_limits lim;
	union rnic_gid gid[RNIC_GID_TBL_LEN];
	int32_t gid_count;
	uint32_t active_mtu;
};

/* What rnicd counts (RNICD_STATS, telemetry /rnicd/stats). */
struct rnicd_stats {
	uint64_t clients_connected;	/* connections open now */
	uint64_t clients_total;		/* client processes ever seen (pid and start time) */
	uint64_t clients_gone;		/* connections closed without a close_device (crash, kill, exit) */
	uint64_t qps_live, cqs_live, mrs_live, pds_live;
	uint64_t qps_freed, cqs_freed, mrs_freed, pds_freed;	/* by the daemon after a client went */
	uint64_t shared_bytes;		/* client memory mapped now (host interface and registered buffers) */
	uint64_t bad_requests;		/* malformed or refused messages */
	uint64_t connections_total;	/* connections ever accepted: a client process makes one to list the
					 * devices and one per device it opens */
	uint64_t quota_refusals;	/* connections, contexts, objects and memory refused by a tenant's quota */
	uint64_t tenants;		/* tenants with connections now */
	uint64_t srqs_live, srqs_freed;
	uint64_t cm_ids_live;		/* the clients' CM ids now */
	uint64_t cm_ids_freed;		/* by the daemon after a client went */
	uint64_t cm_requests_dropped;	/* connection requests refused: their listener's client had no room */
};

/* What a client sees of one of its CM ids (the daemon's rnic_cm_id): refreshed by each reply that names it
 * and each event. */
#define RNICD_CM_MAX_PRIVATE 196	/* private data a request carries (a REP's) */
#define RNICD_CM_EVENT_PRIVATE 224	/* private data an event carries (an RTU's, the most: IBA table 110) */
struct rnicd_cm_view {
	struct rnic_route route;
	int32_t dev_index;		/* the device it is bound to, -1: none yet */
	uint32_t port_num;
};

struct rnicd_req {
	uint32_t cmd;
	uint32_t version;
	union {
		struct { uint32_t index; } open;
		struct { uint32_t handle; } obj;	/* DEALLOC_PD, DEREG_MR, DESTROY_*, QUERY_QP(_COUNTERS),
							 * QUERY_SRQ */
		struct {
			uint32_t pd;
			int32_t access;
			uint64_t va;		/* the client's address of the region */
			uint64_t offset;	/* nb_seg 0: where it starts in the one memfd sent along */
			uint64_t length;
			/* nb_seg 1..RNICD_MR_MAX_SEGS: as many memfds sent along, in order; seg[i] are the pages
			 * [offset, offset + len) of the i-th (page-aligned), and back to back the segments cover
			 * the region's pages, from va rounded down to va + length rounded up, exactly (a region
			 * moved in place over several moves, doc/verbs.md) */
			uint32_t nb_seg;
			uint32_t pad;
			struct rnicd_mr_seg { uint64_t offset, len; } seg[RNICD_MR_MAX_SEGS];
		} reg_mr;
		struct {
			int32_t cqe;
			uint32_t channel;	/* 0, or the completion channel's handle its events go to */
		} create_cq;
		struct {
			uint32_t pd, send_cq, recv_cq;
			uint32_t srq;		/* 0: none */
			int32_t qp_type;
			int32_t sq_sig_all;
			struct rnic_qp_cap cap;
		} create_qp;
		struct {
			uint32_t handle;
			int32_t mask;
			struct rnic_qp_attr attr;
		} modify_qp;
		struct { int32_t n; } counters;
		struct {
			uint32_t pd;
			struct rnic_srq_attr attr;
		} create_srq;
		struct {
			uint32_t handle;
			int32_t mask;
			struct rnic_srq_attr attr;
		} modify_srq;
		struct {
			uint32_t id;		/* handles of the connection's CM tables */
			uint32_t channel;	/* CREATE_ID, MIGRATE_ID, GET_EVENT */
			int32_t arg;		/* BIND: none; RESOLVE_*: timeout (ms); LISTEN: backlog; CREATE_ID: the
						 * port space; ACCEPT: 1 with parameters; SET_OPTION: level */
			int32_t arg2;		/* SET_OPTION: name, ATTACH_QP: the client id of the QP's connection */
			uint32_t qp;		/* ATTACH_QP: the QP's handle there (0: detach) */
			uint32_t optlen;	/* SET_OPTION */
			uint64_t token;		/* ACK_EVENT */
			struct sockaddr_storage src, dst;	/* BIND (src), RESOLVE_ADDR (src: family 0 for none) */
			struct rnic_conn_param conn;	/* private_data unused: in private_data below */
			uint8_t private_data[RNICD_CM_MAX_PRIVATE];	/* CONNECT, ACCEPT, REJECT; SET_OPTION's value */
		} cm;
	} u;
};

struct rnicd_rep {
	int32_t status;			/* 0 or a positive errno */
	uint32_t pad;
	union {
		struct {
			uint32_t count;
			struct rnicd_dev_info dev[RNIC_MAX_DEVICES];
		} list;
		struct {
			uint32_t client_id;
			uint32_t dbq_size;	/* doorbells; the memfd sent along holds the queue */
			uint64_t dbq_bytes;	/* and a second descriptor, the client's end of the context's
						 * async event socket (rnicd_event) */
		} open;
		struct rnic_port_attr port;
		struct { uint32_t handle; } obj;
		struct { uint32_t handle, lkey, rkey; } reg_mr;
		struct { uint32_t handle, cqn, nent; uint64_t bytes; } create_cq;
		struct {
			uint32_t handle, qpn;
			struct rnic_qp_cap cap;
			uint32_t sq_cnt, sq_stride, rq_cnt, rq_stride;
			uint64_t bytes;
		} create_qp;
		struct { int32_t state; } modify_qp;
		struct {
			struct rnic_qp_attr attr;
			int32_t sq_sig_all;
		} query_qp;
		struct rnic_qp_counters qp_counters;
		struct {
			int32_t total;
			int32_t count;
			struct rnic_counter c[RNICD_MAX_COUNTERS];
		} counters;
		struct rnicd_stats stats;
		struct { uint32_t handle, srqn, cnt, stride; uint64_t bytes; } create_srq;
		struct rnic_srq_attr query_srq;
		struct {
			uint32_t handle;	/* CREATE_CHANNEL, CREATE_ID */
			uint32_t pad;
			struct rnicd_cm_view view;	/* of the id the request named */
		} cm;
		struct {
			uint64_t token;		/* ACK_EVENT names it */
			uint32_t id, listen_id;	/* handles; a CONNECT_REQUEST's id is new */
			int32_t event, status;
			struct rnic_conn_param conn;	/* private_data unused: in private_data below */
			uint8_t private_data[RNICD_CM_EVENT_PRIVATE];
			struct rnicd_cm_view view;	/* of the event's id */
		} cm_event;
	} u;
};

/*
 * An event the daemon forwards to a client, one SOCK_SEQPACKET message on a socket of its own (a socketpair
 * whose other end the client holds: the context's async_fd, or a completion channel's fd), so that the
 * program can poll() it as a libibverbs event fd. A completion event names the CQ's handle; an async event
 * its type and the handle of the QP or CQ it is about (0 for a port event, with the port).
 */
struct rnicd_event {
	uint32_t event_type;	/* an async event: enum rnic_event_type (a completion event: unused) */
	uint32_t handle;
	uint32_t port_num;
};

/* Bytes of a request's payload for each command (the daemon refuses any other length). */
static inline size_t
rnicd_req_size(uint32_t cmd)
{
	const struct rnicd_req *r = 0;
	size_t hdr = sizeof(r->cmd) + sizeof(r->version);

	switch (cmd) {
	case RNICD_OPEN: return hdr + sizeof(r->u.open);
	case RNICD_DEALLOC_PD: case RNICD_DEREG_MR: case RNICD_DESTROY_CQ: case RNICD_DESTROY_QP:
	case RNICD_QUERY_QP: case RNICD_QUERY_QP_COUNTERS: case RNICD_QUERY_SRQ: case RNICD_DESTROY_SRQ:
	case RNICD_DESTROY_COMP_CHANNEL:
		return hdr + sizeof(r->u.obj);
	case RNICD_REG_MR: return hdr + sizeof(r->u.reg_mr);
	case RNICD_CREATE_CQ: return hdr + sizeof(r->u.create_cq);
	case RNICD_CREATE_QP: return hdr + sizeof(r->u.create_qp);
	case RNICD_MODIFY_QP: return hdr + sizeof(r->u.modify_qp);
	case RNICD_QUERY_DEVICE_COUNTERS: return hdr + sizeof(r->u.counters);
	case RNICD_CREATE_SRQ: return hdr + sizeof(r->u.create_srq);
	case RNICD_MODIFY_SRQ: return hdr + sizeof(r->u.modify_srq);
	case RNICD_CM_CREATE_CHANNEL: return hdr;
	case RNICD_CM_DESTROY_CHANNEL ... RNICD_CM_ACK_EVENT: return hdr + sizeof(r->u.cm);
	default: return hdr;	/* LIST, QUERY_PORT, ALLOC_PD, STATS, CREATE_COMP_CHANNEL */
	}
}

/* Both sides of the protocol (rnicd_msg.c, rnic_client.c). */
/* A sealed memfd of len bytes (it cannot shrink or grow: safe for another process to map) mapped shared
 * here; its descriptor in *fd. NULL with errno on failure. */
void *rnic_shm_create(const char *name, size_t len, int *fd);

/* One request and its reply over a connected socket; fd_out (or -1) travels with the request, *fd_in (if
 * not NULL) receives the descriptor of the reply (or -1). Returns the reply's status (0 or a positive errno). */
int rnicd_call(int sock, struct rnicd_req *req, uint32_t cmd, int fd_out, struct rnicd_rep *rep, int *fd_in);
/* The same with nb_out descriptors sent along and the reply's first max_in in fds_in (-1 past the last). */
int rnicd_call_fds(int sock, struct rnicd_req *req, uint32_t cmd, const int *fds_out, int nb_out,
		   struct rnicd_rep *rep, int *fds_in, int max_in);
/* One message and at most one descriptor: send (0 or -errno) / receive (bytes, -errno; *truncated is set
 * when the message was longer than len). */
int rnicd_send_msg(int sock, const void *buf, size_t len, int fd);
ssize_t rnicd_recv_msg(int sock, void *buf, size_t len, int *fd, int *truncated);
/* The same with up to RNICD_MAX_FDS descriptors: sent / received into fds (at most max_fds kept, *nb_fds of
 * them; more set *truncated and are closed). */
int rnicd_send_msg_fds(int sock, const void *buf, size_t len, const int *fds, int nb_fds);
ssize_t rnicd_recv_msg_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nb_fds, int *truncated);

#endif /* RNICD_PROTO_H */
