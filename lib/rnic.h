/* SPDX-License-Identifier: BSD-3-Clause
 * softrnic public API.
 *
 * The verbs are libibverbs' with an rnic_ prefix: every struct, field and enum value has the meaning (and,
 * for enums, the numeric value) of its ibv_ twin, so an ibverbs program ports by renaming. What ibverbs
 * leaves to the kernel (bringing up the device) is done by the engine lifecycle calls at the end.
 *
 * Error convention (as libibverbs): calls returning a pointer return NULL and set errno; calls returning int
 * return 0 or a positive errno value (rnic_poll_cq returns the number of completions or a negative value).
 */
#ifndef RNIC_H
#define RNIC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------------ */
/* Enums (numeric values equal libibverbs')                                                                */

enum rnic_node_type { RNIC_NODE_UNKNOWN = -1, RNIC_NODE_CA = 1 };

enum rnic_atomic_cap { RNIC_ATOMIC_NONE, RNIC_ATOMIC_HCA, RNIC_ATOMIC_GLOB };

enum rnic_mtu {
	RNIC_MTU_256 = 1,
	RNIC_MTU_512 = 2,
	RNIC_MTU_1024 = 3,
	RNIC_MTU_2048 = 4,
	RNIC_MTU_4096 = 5,
};

enum rnic_port_state {
	RNIC_PORT_NOP = 0,
	RNIC_PORT_DOWN = 1,
	RNIC_PORT_INIT = 2,
	RNIC_PORT_ARMED = 3,
	RNIC_PORT_ACTIVE = 4,
	RNIC_PORT_ACTIVE_DEFER = 5,
};

enum { RNIC_LINK_LAYER_UNSPECIFIED, RNIC_LINK_LAYER_INFINIBAND, RNIC_LINK_LAYER_ETHERNET };

enum rnic_access_flags {
	RNIC_ACCESS_LOCAL_WRITE = 1,
	RNIC_ACCESS_REMOTE_WRITE = (1 << 1),
	RNIC_ACCESS_REMOTE_READ = (1 << 2),
	RNIC_ACCESS_REMOTE_ATOMIC = (1 << 3),
	RNIC_ACCESS_MW_BIND = (1 << 4),
	RNIC_ACCESS_ZERO_BASED = (1 << 5),
};

enum rnic_wc_status {
	RNIC_WC_SUCCESS,
	RNIC_WC_LOC_LEN_ERR,
	RNIC_WC_LOC_QP_OP_ERR,
	RNIC_WC_LOC_EEC_OP_ERR,
	RNIC_WC_LOC_PROT_ERR,
	RNIC_WC_WR_FLUSH_ERR,
	RNIC_WC_MW_BIND_ERR,
	RNIC_WC_BAD_RESP_ERR,
	RNIC_WC_LOC_ACCESS_ERR,
	RNIC_WC_REM_INV_REQ_ERR,
	RNIC_WC_REM_ACCESS_ERR,
	RNIC_WC_REM_OP_ERR,
	RNIC_WC_RETRY_EXC_ERR,
	RNIC_WC_RNR_RETRY_EXC_ERR,
	RNIC_WC_LOC_RDD_VIOL_ERR,
	RNIC_WC_REM_INV_RD_REQ_ERR,
	RNIC_WC_REM_ABORT_ERR,
	RNIC_WC_INV_EECN_ERR,
	RNIC_WC_INV_EEC_STATE_ERR,
	RNIC_WC_FATAL_ERR,
	RNIC_WC_RESP_TIMEOUT_ERR,
	RNIC_WC_GENERAL_ERR,
};

/* Returns a static English description of a completion status ("remote access error"). */
const char *rnic_wc_status_str(enum rnic_wc_status status);

enum rnic_wc_opcode {
	RNIC_WC_SEND,
	RNIC_WC_RDMA_WRITE,
	RNIC_WC_RDMA_READ,
	RNIC_WC_COMP_SWAP,
	RNIC_WC_FETCH_ADD,
	RNIC_WC_BIND_MW,
	RNIC_WC_LOCAL_INV,
	/* Receive-side opcodes have bit 7 set, as in libibverbs. */
	RNIC_WC_RECV = 1 << 7,
	RNIC_WC_RECV_RDMA_WITH_IMM,
};

enum rnic_wc_flags {
	RNIC_WC_GRH = 1 << 0,
	RNIC_WC_WITH_IMM = 1 << 1,
	RNIC_WC_IP_CSUM_OK = 1 << 2,
	RNIC_WC_WITH_INV = 1 << 3,
};

enum rnic_qp_type {
	RNIC_QPT_RC = 2,
	RNIC_QPT_UC = 3,
	RNIC_QPT_UD = 4,
};

enum rnic_qp_state {
	RNIC_QPS_RESET,
	RNIC_QPS_INIT,
	RNIC_QPS_RTR,
	RNIC_QPS_RTS,
	RNIC_QPS_SQD,
	RNIC_QPS_SQE,
	RNIC_QPS_ERR,
	RNIC_QPS_UNKNOWN,
};

enum rnic_mig_state { RNIC_MIG_MIGRATED, RNIC_MIG_REARM, RNIC_MIG_ARMED };

enum rnic_qp_attr_mask {
	RNIC_QP_STATE = 1 << 0,
	RNIC_QP_CUR_STATE = 1 << 1,
	RNIC_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	RNIC_QP_ACCESS_FLAGS = 1 << 3,
	RNIC_QP_PKEY_INDEX = 1 << 4,
	RNIC_QP_PORT = 1 << 5,
	RNIC_QP_QKEY = 1 << 6,
	RNIC_QP_AV = 1 << 7,
	RNIC_QP_PATH_MTU = 1 << 8,
	RNIC_QP_TIMEOUT = 1 << 9,
	RNIC_QP_RETRY_CNT = 1 << 10,
	RNIC_QP_RNR_RETRY = 1 << 11,
	RNIC_QP_RQ_PSN = 1 << 12,
	RNIC_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	RNIC_QP_ALT_PATH = 1 << 14,
	RNIC_QP_MIN_RNR_TIMER = 1 << 15,
	RNIC_QP_SQ_PSN = 1 << 16,
	RNIC_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	RNIC_QP_PATH_MIG_STATE = 1 << 18,
	RNIC_QP_CAP = 1 << 19,
	RNIC_QP_DEST_QPN = 1 << 20,
	RNIC_QP_RATE_LIMIT = 1 << 25,	/* rate_limit, kbit/s (0: none) */
};

enum rnic_wr_opcode {
	RNIC_WR_RDMA_WRITE,
	RNIC_WR_RDMA_WRITE_WITH_IMM,
	RNIC_WR_SEND,
	RNIC_WR_SEND_WITH_IMM,
	RNIC_WR_RDMA_READ,
	RNIC_WR_ATOMIC_CMP_AND_SWP,
	RNIC_WR_ATOMIC_FETCH_AND_ADD,
	RNIC_WR_LOCAL_INV,
	RNIC_WR_BIND_MW,
	RNIC_WR_SEND_WITH_INV,
};

enum rnic_send_flags {
	RNIC_SEND_FENCE = 1 << 0,
	RNIC_SEND_SIGNALED = 1 << 1,
	RNIC_SEND_SOLICITED = 1 << 2,
	RNIC_SEND_INLINE = 1 << 3,
};

enum rnic_event_type {
	RNIC_EVENT_CQ_ERR,
	RNIC_EVENT_QP_FATAL,
	RNIC_EVENT_QP_REQ_ERR,
	RNIC_EVENT_QP_ACCESS_ERR,
	RNIC_EVENT_COMM_EST,
	RNIC_EVENT_SQ_DRAINED,
	RNIC_EVENT_PATH_MIG,
	RNIC_EVENT_PATH_MIG_ERR,
	RNIC_EVENT_DEVICE_FATAL,
	RNIC_EVENT_PORT_ACTIVE,
	RNIC_EVENT_PORT_ERR,
	RNIC_EVENT_LID_CHANGE,
	RNIC_EVENT_PKEY_CHANGE,
	RNIC_EVENT_SM_CHANGE,
	RNIC_EVENT_SRQ_ERR,
	RNIC_EVENT_SRQ_LIMIT_REACHED,
	RNIC_EVENT_QP_LAST_WQE_REACHED,
	RNIC_EVENT_CLIENT_REREGISTER,
	RNIC_EVENT_GID_CHANGE,
};

/* ------------------------------------------------------------------------------------------------------ */
/* Objects. Fields shown are the ones libibverbs exposes; each object carries private state behind them.   */

struct rnic_device;	/* opaque: one softrnic instance bound to one ethdev port */

union rnic_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;	/* network byte order */
		uint64_t interface_id;	/* network byte order */
	} global;
};

struct rnic_context {
	struct rnic_device *device;
	int async_fd;		/* readable when an async event is pending (eventfd) */
	int num_comp_vectors;
};

struct rnic_device_attr {
	char fw_ver[64];
	uint64_t node_guid;	/* network byte order */
	uint64_t sys_image_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	unsigned int device_cap_flags;
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;
	int max_ee_rd_atom;
	int max_res_rd_atom;
	int max_qp_init_rd_atom;
	int max_ee_init_rd_atom;
	enum rnic_atomic_cap atomic_cap;
	int max_ee;
	int max_rdd;
	int max_mw;
	int max_raw_ipv6_qp;
	int max_raw_ethy_qp;
	int max_mcast_grp;
	int max_mcast_qp_attach;
	int max_total_mcast_qp_attach;
	int max_ah;
	int max_fmr;
	int max_map_per_fmr;
	int max_srq;
	int max_srq_wr;
	int max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
	/* softrnic extension (not in ibv_device_attr): largest inline payload of a send WQE. */
	uint32_t max_inline_data;
};

struct rnic_port_attr {
	enum rnic_port_state state;
	enum rnic_mtu max_mtu;
	enum rnic_mtu active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
	uint16_t port_cap_flags2;
};

struct rnic_pd {
	struct rnic_context *context;
	uint32_t handle;
};

struct rnic_mr {
	struct rnic_context *context;
	struct rnic_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

struct rnic_comp_channel {
	struct rnic_context *context;
	int fd;			/* eventfd: readable when a completion event is pending */
	int refcnt;
};

struct rnic_cq {
	struct rnic_context *context;
	struct rnic_comp_channel *channel;
	void *cq_context;
	uint32_t handle;
	int cqe;		/* usable entries (>= the number asked for) */
	uint32_t comp_events_completed;
	uint32_t async_events_completed;
};

struct rnic_global_route {
	union rnic_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct rnic_ah_attr {
	struct rnic_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;	/* RoCE: must be 1 */
	uint8_t port_num;
};

struct rnic_ah {
	struct rnic_context *context;
	struct rnic_pd *pd;
	uint32_t handle;
};

struct rnic_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* A shared receive queue: receive WQEs taken by the QPs of its PD created on it (doc/qp.md, "Shared receive
 * queues"). */
struct rnic_srq {
	struct rnic_context *context;
	void *srq_context;
	struct rnic_pd *pd;
	uint32_t handle;
	uint32_t events_completed;
};

struct rnic_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;	/* armed: SRQ_LIMIT_REACHED once fewer WQEs than this are left (0: not armed) */
};

struct rnic_srq_init_attr {
	void *srq_context;
	struct rnic_srq_attr attr;
};

enum rnic_srq_attr_mask {
	RNIC_SRQ_MAX_WR = 1 << 0,	/* resizing: not supported (EOPNOTSUPP) */
	RNIC_SRQ_LIMIT = 1 << 1,
};

struct rnic_qp_init_attr {
	void *qp_context;
	struct rnic_cq *send_cq;
	struct rnic_cq *recv_cq;
	struct rnic_srq *srq;
	struct rnic_qp_cap cap;
	enum rnic_qp_type qp_type;
	int sq_sig_all;
};

struct rnic_qp_attr {
	enum rnic_qp_state qp_state;
	enum rnic_qp_state cur_qp_state;
	enum rnic_mtu path_mtu;
	enum rnic_mig_state path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct rnic_qp_cap cap;
	struct rnic_ah_attr ah_attr;
	struct rnic_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

struct rnic_qp {
	struct rnic_context *context;
	void *qp_context;
	struct rnic_pd *pd;
	struct rnic_cq *send_cq;
	struct rnic_cq *recv_cq;
	struct rnic_srq *srq;
	uint32_t handle;
	uint32_t qp_num;
	enum rnic_qp_state state;
	enum rnic_qp_type qp_type;
	uint32_t events_completed;
};

struct rnic_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct rnic_send_wr {
	uint64_t wr_id;
	struct rnic_send_wr *next;
	struct rnic_sge *sg_list;
	int num_sge;
	enum rnic_wr_opcode opcode;
	unsigned int send_flags;
	union {
		uint32_t imm_data;	/* network byte order, as ibv's __be32 */
		uint32_t invalidate_rkey;
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct rnic_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
};

struct rnic_recv_wr {
	uint64_t wr_id;
	struct rnic_recv_wr *next;
	struct rnic_sge *sg_list;
	int num_sge;
};

struct rnic_wc {
	uint64_t wr_id;
	enum rnic_wc_status status;
	enum rnic_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	union {
		uint32_t imm_data;	/* network byte order */
		uint32_t invalidated_rkey;
	};
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

struct rnic_async_event {
	union {
		struct rnic_cq *cq;
		struct rnic_qp *qp;
		struct rnic_srq *srq;
		int port_num;
	} element;
	enum rnic_event_type event_type;
};

/* ------------------------------------------------------------------------------------------------------ */
/* Verbs                                                                                                    */

struct rnic_device **rnic_get_device_list(int *num_devices);
void rnic_free_device_list(struct rnic_device **list);
const char *rnic_get_device_name(struct rnic_device *device);
uint64_t rnic_get_device_guid(struct rnic_device *device);	/* network byte order */

struct rnic_context *rnic_open_device(struct rnic_device *device);
int rnic_close_device(struct rnic_context *context);
int rnic_query_device(struct rnic_context *context, struct rnic_device_attr *attr);
int rnic_query_port(struct rnic_context *context, uint8_t port_num, struct rnic_port_attr *attr);
int rnic_query_gid(struct rnic_context *context, uint8_t port_num, int index, union rnic_gid *gid);
int rnic_get_async_event(struct rnic_context *context, struct rnic_async_event *event);
void rnic_ack_async_event(struct rnic_async_event *event);

struct rnic_pd *rnic_alloc_pd(struct rnic_context *context);
int rnic_dealloc_pd(struct rnic_pd *pd);

struct rnic_mr *rnic_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access);
int rnic_dereg_mr(struct rnic_mr *mr);

struct rnic_ah *rnic_create_ah(struct rnic_pd *pd, struct rnic_ah_attr *attr);
int rnic_destroy_ah(struct rnic_ah *ah);

struct rnic_comp_channel *rnic_create_comp_channel(struct rnic_context *context);
int rnic_destroy_comp_channel(struct rnic_comp_channel *channel);
struct rnic_cq *rnic_create_cq(struct rnic_context *context, int cqe, void *cq_context,
			       struct rnic_comp_channel *channel, int comp_vector);
int rnic_destroy_cq(struct rnic_cq *cq);
int rnic_poll_cq(struct rnic_cq *cq, int num_entries, struct rnic_wc *wc);
int rnic_req_notify_cq(struct rnic_cq *cq, int solicited_only);
int rnic_get_cq_event(struct rnic_comp_channel *channel, struct rnic_cq **cq, void **cq_context);
void rnic_ack_cq_events(struct rnic_cq *cq, unsigned int nevents);

struct rnic_qp *rnic_create_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *qp_init_attr);
int rnic_modify_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr, int attr_mask);
int rnic_query_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr, int attr_mask,
		  struct rnic_qp_init_attr *init_attr);
int rnic_destroy_qp(struct rnic_qp *qp);
int rnic_post_send(struct rnic_qp *qp, struct rnic_send_wr *wr, struct rnic_send_wr **bad_wr);
int rnic_post_recv(struct rnic_qp *qp, struct rnic_recv_wr *wr, struct rnic_recv_wr **bad_wr);

/* Shared receive queues. A QP created with rnic_qp_init_attr.srq takes its receive WQEs from it (its own
 * max_recv_wr and max_recv_sge are ignored; rnic_post_recv on it fails with EINVAL). */
struct rnic_srq *rnic_create_srq(struct rnic_pd *pd, struct rnic_srq_init_attr *srq_init_attr);
int rnic_modify_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr, int attr_mask);
int rnic_query_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr);
int rnic_destroy_srq(struct rnic_srq *srq);
int rnic_post_srq_recv(struct rnic_srq *srq, struct rnic_recv_wr *wr, struct rnic_recv_wr **bad_wr);

/*
 * Memory for buffers to register (softrnic extension): page-aligned, zeroed, backed by a sealed memfd, so
 * that rnicd can map it when the process is its client (RNIC_DAEMON set: doc/rnicd.md); a client can only
 * register memory from here. Works the same in-process. NULL with errno on failure.
 */
void *rnic_alloc_buf(size_t length);
void rnic_free_buf(void *buf);

/* ------------------------------------------------------------------------------------------------------ */
/* Counters (softrnic extension; the hardware counters an RNIC's driver exports)                            */

/* What the transport did for one QP since it was created. The requester's and the responder's counters are
 * each written by one engine lcore; a read while traffic runs sees each counter's recent value. */
struct rnic_qp_counters {
	/* requester */
	uint64_t packets_sent;		/* request packets, retransmissions included */
	uint64_t retransmits;		/* go-back-N restarts: timeouts, sequence NAKs, RNR NAKs, READ gaps */
	uint64_t timeouts;		/* loss timer expiries */
	uint64_t seq_naks_received;	/* NAKs by code (IBA 9.7.5.2.5): PSN sequence error */
	uint64_t rnr_naks_received;
	uint64_t inv_req_naks_received;	/* invalid request */
	uint64_t access_naks_received;	/* remote access error */
	uint64_t remote_op_naks_received;	/* remote operational error (and reserved codes) */
	/* responder */
	uint64_t requests_received;	/* request packets in sequence, executed */
	uint64_t duplicates;		/* duplicate requests answered again */
	uint64_t out_of_sequence;	/* requests past a PSN gap (dropped) */
	uint64_t acks_sent;
	uint64_t seq_naks_sent;
	uint64_t rnr_naks_sent;
	uint64_t inv_req_naks_sent;
	uint64_t access_naks_sent;
	uint64_t remote_op_naks_sent;
	/* source validation (softrnic extension): a connected QP and its peer are each other's */
	uint64_t spoofed_requests;	/* requester: packets not sent, its destination is a QP of this engine
					 * that is not connected to it (that QP would have taken them) */
	uint64_t bad_addr_responses;	/* completer: responses dropped, not from the peer's address to ours */
	uint64_t bad_addr_requests;	/* responder: requests dropped, not from the peer's address to ours */
};

int rnic_query_qp_counters(struct rnic_qp *qp, struct rnic_qp_counters *counters);

/* One named counter of a device (ports and pipeline stages, summed over the device's shards). */
struct rnic_counter {
	char name[48];
	uint64_t value;
};

/*
 * The device's counters: frames and bytes each way, drops by reason ("rx_drop_<reason>"), ACKs and NAKs,
 * retransmissions, timer events, the port's ARP/ND ("neigh_<name>": requests and replies sent and received,
 * resolution failures, cache entries, drops)... Fills up to n entries and returns how many the device has (call with
 * n = 0 to size the array), or a negative errno.
 */
int rnic_query_device_counters(struct rnic_context *context, struct rnic_counter *counters, int n);

/*
 * DCQCN on or off while the device runs (softrnic extension; mlx5's sysfs ecn/roce_rp/enable and
 * ecn/roce_np/enable): rp_enable, the reaction point (the device's QPs cut their rates on the CNPs they
 * receive); np_enable, the notification point (CE-marked frames are answered with CNPs). Each 0 or 1; the
 * engine's --cc sets them at start. A QP whose rate DCQCN cut recovers to the line rate as before when the
 * reaction point is switched off. 0, -EINVAL, or -ENOTSUP through rnicd (the device is the operator's, not a
 * tenant's).
 */
int rnic_set_cc(struct rnic_context *context, int rp_enable, int np_enable);

/*
 * Per-stage latency (softrnic extension): histograms of TSC cycles, taken at stage boundaries by the engine's
 * lcores. For each stage, "queued" is the time a message waited before the stage took it and "busy" the time
 * the stage spent on it:
 *   requester  queued: rnic_post_send -> the requester starts the WQE (doorbell ring, doorbell stage, slot
 *              ring, QP scheduler); busy: WQE start -> its last packet handed to the port's TX queue
 *   wire       queued: a frame handed to TX -> the peer's parser receives it (TX buffer, port, link; only
 *              measurable when both ends are in this process, e.g. the loopback pair)
 *   parser     busy: header parsing and ICRC check, per frame
 *   responder  queued: parsed -> the responder takes the request; busy: executing it and its response
 *   completer  queued: parsed -> the completer takes the response; busy: handling it, CQEs included
 * Histogram buckets are log-linear: 8 per power of two (a quantile is within 12.5%).
 */
#define RNIC_LAT_BUCKETS 256

struct rnic_latency_hist {
	uint64_t count;
	uint64_t bucket[RNIC_LAT_BUCKETS];
};

struct rnic_stage_latency {
	char stage[16];
	struct rnic_latency_hist queued;
	struct rnic_latency_hist busy;
};

/* The engine's per-stage histograms, summed over devices and shards: fills up to n entries, returns how many
 * stages there are, or a negative errno. Take one snapshot before and one after a run and subtract them
 * (rnic_latency_hist_sub) to get the run's own figures. */
int rnic_query_stage_latency(struct rnic_stage_latency *stages, int n);
/* The same for one device: the stages of the device the context is open on (a loopback run's two ends each
 * have their own requester, wire, parser, responder and completer). */
int rnic_query_device_stage_latency(struct rnic_context *context, struct rnic_stage_latency *stages, int n);
/* a -= b (a later snapshot minus an earlier one). */
void rnic_latency_hist_sub(struct rnic_latency_hist *a, const struct rnic_latency_hist *b);
/* The q-quantile (0 < q <= 1) of a histogram in nanoseconds, or 0 for an empty histogram. */
double rnic_latency_quantile_ns(const struct rnic_latency_hist *h, double q);
/* The durations bucket b of a histogram holds, [lo, hi) nanoseconds (for exporting the raw buckets). 0, or
 * -EINVAL for a bucket past RNIC_LAT_BUCKETS. */
int rnic_latency_bucket_ns(unsigned int bucket, double *lo_ns, double *hi_ns);

const char *rnic_qp_state_str(enum rnic_qp_state state);
const char *rnic_event_type_str(enum rnic_event_type event);

/* ------------------------------------------------------------------------------------------------------ */
/* Connection manager (softrnic extension): librdmacm's API with rdma_ renamed rnic_cm_ (doc/cm.md).        */
/* Structs, fields and enum values have the meaning and numeric values of their rdma_cma.h twins. The calls  */
/* return 0 or a positive errno value (librdmacm: -1 and errno), pointers NULL with errno set.              */

enum rnic_cm_event_type {
	RNIC_CM_EVENT_ADDR_RESOLVED,
	RNIC_CM_EVENT_ADDR_ERROR,
	RNIC_CM_EVENT_ROUTE_RESOLVED,
	RNIC_CM_EVENT_ROUTE_ERROR,
	RNIC_CM_EVENT_CONNECT_REQUEST,
	RNIC_CM_EVENT_CONNECT_RESPONSE,
	RNIC_CM_EVENT_CONNECT_ERROR,
	RNIC_CM_EVENT_UNREACHABLE,
	RNIC_CM_EVENT_REJECTED,
	RNIC_CM_EVENT_ESTABLISHED,
	RNIC_CM_EVENT_DISCONNECTED,
	RNIC_CM_EVENT_DEVICE_REMOVAL,
	RNIC_CM_EVENT_MULTICAST_JOIN,
	RNIC_CM_EVENT_MULTICAST_ERROR,
	RNIC_CM_EVENT_ADDR_CHANGE,
	RNIC_CM_EVENT_TIMEWAIT_EXIT,
};

enum rnic_port_space {
	RNIC_PS_IPOIB = 0x0002,
	RNIC_PS_TCP = 0x0106,		/* RC connections: the only one served */
	RNIC_PS_UDP = 0x0111,
	RNIC_PS_IB = 0x013F,
};

struct rnic_cm_event_channel {
	int fd;				/* readable while an event is pending */
};

struct rnic_ib_addr {
	union rnic_gid sgid;
	union rnic_gid dgid;
	uint16_t pkey;			/* network byte order */
};

struct rnic_cm_addr {
	struct sockaddr_storage src_addr;
	struct sockaddr_storage dst_addr;
	struct rnic_ib_addr ibaddr;
};

struct rnic_route {
	struct rnic_cm_addr addr;
	int num_paths;			/* 1 once the route is resolved */
};

struct rnic_cm_event;

struct rnic_cm_id {
	struct rnic_context *verbs;	/* the device's context (the CM's own), once bound to a device */
	struct rnic_cm_event_channel *channel;
	void *context;
	struct rnic_qp *qp;
	struct rnic_route route;
	enum rnic_port_space ps;
	uint8_t port_num;
	struct rnic_cm_event *event;
	struct rnic_comp_channel *send_cq_channel;
	struct rnic_cq *send_cq;
	struct rnic_comp_channel *recv_cq_channel;
	struct rnic_cq *recv_cq;
	struct rnic_srq *srq;
	struct rnic_pd *pd;
	enum rnic_qp_type qp_type;
};

struct rnic_conn_param {
	const void *private_data;
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;		/* ignored if QP created on the rdma_cm_id */
	uint8_t rnr_retry_count;
	uint8_t srq;			/* ignored if QP created on the rdma_cm_id */
	uint32_t qp_num;		/* ignored if QP created on the rdma_cm_id */
};

struct rnic_ud_param {
	const void *private_data;
	uint8_t private_data_len;
	struct rnic_ah_attr ah_attr;
	uint32_t qp_num;
	uint32_t qkey;
};

struct rnic_cm_event {
	struct rnic_cm_id *id;
	struct rnic_cm_id *listen_id;
	enum rnic_cm_event_type event;
	int status;			/* REJECTED: the REJ's reason; UNREACHABLE, ADDR_ERROR: -errno */
	union {
		struct rnic_conn_param conn;
		struct rnic_ud_param ud;
	} param;
};

/* rnic_cm_set_option levels and names: librdmacm's, then softrnic's own level for the CM's timers. */
enum {
	RNIC_OPTION_ID = 0,
	RNIC_OPTION_IB = 1,
	RNIC_OPTION_SOFTRNIC = 0x7372,
};
enum {
	RNIC_OPTION_ID_TOS = 0,		/* uint8_t: the traffic class of the connection */
	RNIC_OPTION_ID_REUSEADDR = 1,	/* int: accepted */
	RNIC_OPTION_ID_AFONLY = 2,	/* int: accepted */
	RNIC_OPTION_ID_ACK_TIMEOUT = 3,	/* uint8_t: the QP's local ACK timeout (5-bit exponent) */
};
enum {
	RNIC_OPTION_CM_RESPONSE_TIMEOUT = 0,	/* uint8_t: the CM response timeout asked of the peer and
						 * given to it (REQ fields, 4.096 us x 2^v; default 20) */
	RNIC_OPTION_CM_MAX_RETRIES = 1,		/* uint8_t: tries of a CM message after the first (<= 15; 15) */
	RNIC_OPTION_CM_PACKET_LIFETIME = 2,	/* uint8_t: the path's packet life time (exponent; 16) */
};

struct rnic_cm_event_channel *rnic_cm_create_event_channel(void);
void rnic_cm_destroy_event_channel(struct rnic_cm_event_channel *channel);
int rnic_cm_create_id(struct rnic_cm_event_channel *channel, struct rnic_cm_id **id, void *context,
		      enum rnic_port_space ps);
int rnic_cm_destroy_id(struct rnic_cm_id *id);
/* The id's events on another channel: those queued and not yet taken (with a listener's connection requests)
 * and those to come. */
int rnic_cm_migrate_id(struct rnic_cm_id *id, struct rnic_cm_event_channel *channel);
int rnic_cm_bind_addr(struct rnic_cm_id *id, struct sockaddr *addr);
int rnic_cm_resolve_addr(struct rnic_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
			 int timeout_ms);
int rnic_cm_resolve_route(struct rnic_cm_id *id, int timeout_ms);
int rnic_cm_create_qp(struct rnic_cm_id *id, struct rnic_pd *pd, struct rnic_qp_init_attr *qp_init_attr);
void rnic_cm_destroy_qp(struct rnic_cm_id *id);
/* softrnic extension: give an id a QP the caller made (RC, on the id's device, in RESET or INIT), as
 * rnic_cm_create_qp would have: moved to INIT with no remote access. NULL takes the id's QP back from it
 * (not destroyed). For layers that make their QPs themselves (libsoftrnic-verbs' rdma_create_qp). */
int rnic_cm_attach_qp(struct rnic_cm_id *id, struct rnic_qp *qp);
int rnic_cm_connect(struct rnic_cm_id *id, struct rnic_conn_param *conn_param);
int rnic_cm_listen(struct rnic_cm_id *id, int backlog);
int rnic_cm_accept(struct rnic_cm_id *id, struct rnic_conn_param *conn_param);
int rnic_cm_reject(struct rnic_cm_id *id, const void *private_data, uint8_t private_data_len);
int rnic_cm_disconnect(struct rnic_cm_id *id);
/* Blocks until an event is pending, unless channel->fd is non-blocking (then EAGAIN). */
int rnic_cm_get_cm_event(struct rnic_cm_event_channel *channel, struct rnic_cm_event **event);
int rnic_cm_ack_cm_event(struct rnic_cm_event *event);
int rnic_cm_set_option(struct rnic_cm_id *id, int level, int optname, void *optval, size_t optlen);
struct sockaddr *rnic_cm_get_local_addr(struct rnic_cm_id *id);
struct sockaddr *rnic_cm_get_peer_addr(struct rnic_cm_id *id);
uint16_t rnic_cm_get_src_port(struct rnic_cm_id *id);	/* network byte order, as librdmacm */
uint16_t rnic_cm_get_dst_port(struct rnic_cm_id *id);
const char *rnic_cm_event_str(enum rnic_cm_event_type event);
/* QP1's counters (rnic_counter name/value pairs, "gsi_*") and the CM's ("cm_*") of the context's device: fills
 * up to n, returns how many there are, or a negative errno (-ENODEV: no CM on the device yet). */
int rnic_cm_query_counters(struct rnic_context *context, struct rnic_counter *counters, int n);

/* ------------------------------------------------------------------------------------------------------ */
/* Engine lifecycle (what the kernel driver and firmware do for a hardware RNIC)                           */

/*
 * Initialise DPDK's EAL and the engine. argv holds EAL arguments, optionally followed by "--" and engine
 * arguments (rnic_engine_usage() lists them). Without port arguments the engine creates its embedded default:
 * two devices, rnic0 and rnic1, joined by a net_ring pair. Returns the number of argv entries consumed
 * (>= 0) or a negative errno; the error is also logged through rte_log.
 */
int rnic_engine_init(int argc, char **argv);
/* Launch the pipeline stages on their lcores; returns 0 or a negative errno. */
int rnic_engine_start(void);
/* Stop the stages and wait for their lcores; objects stay valid. Call it from the main lcore. */
int rnic_engine_stop(void);
/*
 * Manual progress (softrnic extension, as libfabric's FI_PROGRESS_MANUAL): a stage map may put stages on the
 * EAL main lcore, the application's own thread ("--stages devices" does on a machine with fewer worker
 * lcores than devices). They run only when that thread calls in: once per rnic_poll_cq it makes, or here.
 * An application that gives its lcore stages keeps calling one of the two while it expects traffic (its
 * QPs' timers and its ports' receive queues wait otherwise). Returns the work done (packets, doorbells); 0
 * from any other thread, or when the main lcore has no stage.
 */
unsigned int rnic_engine_progress(void);
/*
 * Whether the EAL main lcore carries stages: 1 when the application's thread must keep calling in (above)
 * while it expects traffic, 0 when the workers run every stage and the thread may sleep (block in a read,
 * poll() a socket) without stalling the engine. Set by rnic_engine_init's stage map.
 */
int rnic_engine_manual_progress(void);
/* Release devices, ports and EAL. Every context must be closed first (-EBUSY otherwise). */
int rnic_engine_fini(void);
/* Print the engine arguments to the given stream (a FILE *). */
void rnic_engine_usage(void *stream);

#ifdef __cplusplus
}
#endif

#endif /* RNIC_H */
