/* SPDX-License-Identifier: BSD-3-Clause
 * The Communication Manager's messages (IBA 12.6, class 0x07 version 2, method Send): their fields decoded,
 * and the codec between them and 256-byte MADs. The layouts are IBA's tables 106-113 (the same as Linux's
 * include/rdma/ibta_vol1_c12.h); bits are numbered from a byte's most significant bit, as IBA does.
 */
#ifndef RNIC_CM_MSG_H
#define RNIC_CM_MSG_H

#include <stdint.h>

#include "rnic.h"

#define RNIC_CM_CLASS 0x07
#define RNIC_CM_CLASS_VERSION 2

/* Attribute IDs (IBA 12.6.1, Table 104). */
enum rnic_cm_attr {
	RNIC_CM_REQ = 0x0010,
	RNIC_CM_MRA = 0x0011,
	RNIC_CM_REJ = 0x0012,
	RNIC_CM_REP = 0x0013,
	RNIC_CM_RTU = 0x0014,
	RNIC_CM_DREQ = 0x0015,
	RNIC_CM_DREP = 0x0016,
};

/* What an MRA or a REJ is about (the "message MRAed/rejected" field). */
enum rnic_cm_msg_about { RNIC_CM_ABOUT_REQ = 0, RNIC_CM_ABOUT_REP = 1, RNIC_CM_ABOUT_OTHER = 2 };

/* REJ reasons softrnic sends (IBA 12.6.7.2, Table 109). */
enum rnic_cm_rej_reason {
	RNIC_CM_REJ_NO_QP = 1,
	RNIC_CM_REJ_NO_RESOURCES = 3,
	RNIC_CM_REJ_TIMEOUT = 4,
	RNIC_CM_REJ_INVALID_COMM_ID = 6,
	RNIC_CM_REJ_INVALID_SERVICE_ID = 8,
	RNIC_CM_REJ_STALE_CONN = 10,
	RNIC_CM_REJ_INVALID_MTU = 26,
	RNIC_CM_REJ_CONSUMER_DEFINED = 28,
};

/* Transport service types of a REQ. */
#define RNIC_CM_TRANSPORT_RC 0
#define RNIC_CM_TRANSPORT_UC 1

#define RNIC_CM_REQ_PRIVATE 92	/* private data bytes each message carries */
#define RNIC_CM_MRA_PRIVATE 222
#define RNIC_CM_REJ_PRIVATE 148
#define RNIC_CM_REP_PRIVATE 196
#define RNIC_CM_RTU_PRIVATE 224
#define RNIC_CM_DREQ_PRIVATE 220
#define RNIC_CM_DREP_PRIVATE 224
#define RNIC_CM_PRIVATE_MAX 224
#define RNIC_CM_ARI_MAX 72

/*
 * Every field of the seven messages: a message uses those its table has, the others are ignored when it is
 * encoded and zero when it is decoded. Numbers in host order; GIDs as on the wire; private_data holds
 * rnic_cm_private_len(attr_id) bytes.
 */
struct rnic_cm_msg {
	uint16_t attr_id;
	uint64_t tid;
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint32_t local_eecn;
	uint32_t remote_eecn;
	uint32_t remote_qpn;		/* DREQ: the receiver's QP */
	uint32_t starting_psn;
	uint32_t flow_label;
	uint16_t pkey;
	uint16_t primary_local_lid;
	uint16_t primary_remote_lid;
	uint16_t reason;		/* REJ */
	union rnic_gid primary_local_gid;
	union rnic_gid primary_remote_gid;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t remote_cm_response_timeout;
	uint8_t transport_type;
	uint8_t flow_control;
	uint8_t local_cm_response_timeout;
	uint8_t retry_count;
	uint8_t path_mtu;
	uint8_t rdc_exists;
	uint8_t rnr_retry_count;
	uint8_t max_cm_retries;
	uint8_t srq;
	uint8_t extended_transport;
	uint8_t packet_rate;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;
	uint8_t subnet_local;
	uint8_t local_ack_timeout;
	uint8_t target_ack_delay;	/* REP */
	uint8_t failover_accepted;
	uint8_t message;		/* MRA: message MRAed; REJ: message rejected (enum rnic_cm_msg_about) */
	uint8_t service_timeout;	/* MRA */
	uint8_t ari_length;		/* REJ */
	uint8_t ari[RNIC_CM_ARI_MAX];
	uint8_t private_data[RNIC_CM_PRIVATE_MAX];
};

/* The private data bytes a message of this attribute carries; 0 for an attribute that is not one of the
 * seven. */
unsigned int rnic_cm_private_len(uint16_t attr_id);

/* msg as a MAD (RNIC_MAD_SIZE bytes: the header, class 0x07 version 2 method Send, and the message). 0, or
 * -EINVAL for an attribute that is not one of the seven. */
int rnic_cm_encode(const struct rnic_cm_msg *msg, uint8_t *mad);

/* A MAD of the CM class as msg. 0, or -EINVAL for an attribute that is not one of the seven. */
int rnic_cm_decode(const uint8_t *mad, struct rnic_cm_msg *msg);

/* "ConnectRequest", ... (as Wireshark names them); "unknown" for another attribute. */
const char *rnic_cm_attr_name(uint16_t attr_id);

#endif /* RNIC_CM_MSG_H */
