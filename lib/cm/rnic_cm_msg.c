/* SPDX-License-Identifier: BSD-3-Clause
 * The CM messages' codec (rnic_cm_msg.h): one table of fields per message, each field where IBA's table puts
 * it (its byte in the message, the bit it starts at counted from the byte's most significant bit, its width)
 * and where it lives in struct rnic_cm_msg.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_common.h>

#include "rnic_cm_msg.h"
#include "rnic_gsi.h"

struct cm_field {
	uint16_t byte;		/* in the message, after the MAD header */
	uint8_t bit;		/* from the byte's most significant bit */
	uint16_t width;		/* bits; a multiple of 8 starting on a byte for a byte string */
	uint16_t off;		/* in struct rnic_cm_msg */
	uint8_t size;		/* of that member: 1, 2, 4, 8; 0 for a byte string */
};

#define F(byte, bit, width, member) \
	{ byte, bit, width, offsetof(struct rnic_cm_msg, member), sizeof(((struct rnic_cm_msg *)0)->member) }
#define S(byte, bytes, member) { byte, 0, (bytes) * 8, offsetof(struct rnic_cm_msg, member), 0 }

/* Table 106. The alternate path (bytes 96-139) stays zero: no automatic path migration. */
static const struct cm_field req_fields[] = {
	F(0, 0, 32, local_comm_id), F(8, 0, 64, service_id), F(16, 0, 64, local_ca_guid),
	F(28, 0, 32, local_qkey), F(32, 0, 24, local_qpn), F(35, 0, 8, responder_resources),
	F(36, 0, 24, local_eecn), F(39, 0, 8, initiator_depth), F(40, 0, 24, remote_eecn),
	F(43, 0, 5, remote_cm_response_timeout), F(43, 5, 2, transport_type), F(43, 7, 1, flow_control),
	F(44, 0, 24, starting_psn), F(47, 0, 5, local_cm_response_timeout), F(47, 5, 3, retry_count),
	F(48, 0, 16, pkey), F(50, 0, 4, path_mtu), F(50, 4, 1, rdc_exists), F(50, 5, 3, rnr_retry_count),
	F(51, 0, 4, max_cm_retries), F(51, 4, 1, srq), F(51, 5, 3, extended_transport),
	F(52, 0, 16, primary_local_lid), F(54, 0, 16, primary_remote_lid),
	S(56, 16, primary_local_gid), S(72, 16, primary_remote_gid),
	F(88, 0, 20, flow_label), F(91, 2, 6, packet_rate), F(92, 0, 8, traffic_class), F(93, 0, 8, hop_limit),
	F(94, 0, 4, sl), F(94, 4, 1, subnet_local), F(95, 0, 5, local_ack_timeout),
	S(140, RNIC_CM_REQ_PRIVATE, private_data),
};

/* Table 107. */
static const struct cm_field mra_fields[] = {
	F(0, 0, 32, local_comm_id), F(4, 0, 32, remote_comm_id), F(8, 0, 2, message),
	F(9, 0, 5, service_timeout), S(10, RNIC_CM_MRA_PRIVATE, private_data),
};

/* Table 108. */
static const struct cm_field rej_fields[] = {
	F(0, 0, 32, local_comm_id), F(4, 0, 32, remote_comm_id), F(8, 0, 2, message), F(9, 0, 7, ari_length),
	F(10, 0, 16, reason), S(12, RNIC_CM_ARI_MAX, ari), S(84, RNIC_CM_REJ_PRIVATE, private_data),
};

/* Table 110. */
static const struct cm_field rep_fields[] = {
	F(0, 0, 32, local_comm_id), F(4, 0, 32, remote_comm_id), F(8, 0, 32, local_qkey), F(12, 0, 24, local_qpn),
	F(16, 0, 24, local_eecn), F(20, 0, 24, starting_psn), F(24, 0, 8, responder_resources),
	F(25, 0, 8, initiator_depth), F(26, 0, 5, target_ack_delay), F(26, 5, 2, failover_accepted),
	F(26, 7, 1, flow_control), F(27, 0, 3, rnr_retry_count), F(27, 3, 1, srq), F(28, 0, 64, local_ca_guid),
	S(36, RNIC_CM_REP_PRIVATE, private_data),
};

/* Tables 111 and 113 (RTU, DREP). */
static const struct cm_field rtu_fields[] = {
	F(0, 0, 32, local_comm_id), F(4, 0, 32, remote_comm_id), S(8, RNIC_CM_RTU_PRIVATE, private_data),
};

/* Table 112. */
static const struct cm_field dreq_fields[] = {
	F(0, 0, 32, local_comm_id), F(4, 0, 32, remote_comm_id), F(8, 0, 24, remote_qpn),
	S(12, RNIC_CM_DREQ_PRIVATE, private_data),
};

struct cm_layout {
	uint16_t attr_id;
	const char *name;
	const struct cm_field *fields;
	unsigned int nb_fields;
	unsigned int private_len;
};

#define L(id, name, f, len) { id, name, f, RTE_DIM(f), len }
static const struct cm_layout layouts[] = {
	L(RNIC_CM_REQ, "ConnectRequest", req_fields, RNIC_CM_REQ_PRIVATE),
	L(RNIC_CM_MRA, "MsgRcptAck", mra_fields, RNIC_CM_MRA_PRIVATE),
	L(RNIC_CM_REJ, "ConnectReject", rej_fields, RNIC_CM_REJ_PRIVATE),
	L(RNIC_CM_REP, "ConnectReply", rep_fields, RNIC_CM_REP_PRIVATE),
	L(RNIC_CM_RTU, "ReadyToUse", rtu_fields, RNIC_CM_RTU_PRIVATE),
	L(RNIC_CM_DREQ, "DisconnectRequest", dreq_fields, RNIC_CM_DREQ_PRIVATE),
	L(RNIC_CM_DREP, "DisconnectReply", rtu_fields, RNIC_CM_DREP_PRIVATE),
};

static const struct cm_layout *
layout_of(uint16_t attr_id)
{
	for (unsigned int i = 0; i < RTE_DIM(layouts); i++)
		if (layouts[i].attr_id == attr_id)
			return &layouts[i];
	return NULL;
}

unsigned int
rnic_cm_private_len(uint16_t attr_id)
{
	const struct cm_layout *l = layout_of(attr_id);

	return l != NULL ? l->private_len : 0;
}

const char *
rnic_cm_attr_name(uint16_t attr_id)
{
	const struct cm_layout *l = layout_of(attr_id);

	return l != NULL ? l->name : "unknown";
}

static uint64_t
member_get(const struct rnic_cm_msg *msg, const struct cm_field *f)
{
	const uint8_t *p = (const uint8_t *)msg + f->off;

	switch (f->size) {
	case 1: return *p;
	case 2: return *(const uint16_t *)(const void *)p;
	case 4: return *(const uint32_t *)(const void *)p;
	default: return *(const uint64_t *)(const void *)p;
	}
}

static void
member_set(struct rnic_cm_msg *msg, const struct cm_field *f, uint64_t v)
{
	uint8_t *p = (uint8_t *)msg + f->off;

	switch (f->size) {
	case 1: *p = (uint8_t)v; break;
	case 2: *(uint16_t *)(void *)p = (uint16_t)v; break;
	case 4: *(uint32_t *)(void *)p = (uint32_t)v; break;
	default: *(uint64_t *)(void *)p = v; break;
	}
}

/* The field's bits, most significant first, at bit (byte * 8 + bit) of the message. */
static void
bits_put(uint8_t *data, const struct cm_field *f, uint64_t v)
{
	unsigned int pos = f->byte * 8u + f->bit;

	for (unsigned int i = 0; i < f->width; i++, pos++) {
		uint8_t mask = (uint8_t)(0x80u >> (pos % 8));

		if ((v >> (f->width - 1 - i)) & 1)
			data[pos / 8] |= mask;
		else
			data[pos / 8] &= (uint8_t)~mask;
	}
}

static uint64_t
bits_get(const uint8_t *data, const struct cm_field *f)
{
	unsigned int pos = f->byte * 8u + f->bit;
	uint64_t v = 0;

	for (unsigned int i = 0; i < f->width; i++, pos++)
		v = (v << 1) | ((data[pos / 8] >> (7 - pos % 8)) & 1);
	return v;
}

int
rnic_cm_encode(const struct rnic_cm_msg *msg, uint8_t *mad)
{
	const struct cm_layout *l = layout_of(msg->attr_id);
	struct rnic_mad_hdr *h = (void *)mad;
	uint8_t *data = mad + RNIC_MAD_HDR_LEN;

	if (l == NULL)
		return -EINVAL;
	memset(mad, 0, RNIC_MAD_SIZE);
	h->base_version = RNIC_MAD_BASE_VERSION;
	h->mgmt_class = RNIC_CM_CLASS;
	h->class_version = RNIC_CM_CLASS_VERSION;
	h->method = RNIC_MAD_METHOD_SEND;
	h->tid = rte_cpu_to_be_64(msg->tid);
	h->attr_id = rte_cpu_to_be_16(msg->attr_id);
	for (unsigned int i = 0; i < l->nb_fields; i++) {
		const struct cm_field *f = &l->fields[i];

		if (f->size == 0)
			memcpy(data + f->byte, (const uint8_t *)msg + f->off, f->width / 8u);
		else
			bits_put(data, f, member_get(msg, f));
	}
	return 0;
}

int
rnic_cm_decode(const uint8_t *mad, struct rnic_cm_msg *msg)
{
	const struct rnic_mad_hdr *h = (const void *)mad;
	const struct cm_layout *l = layout_of(rte_be_to_cpu_16(h->attr_id));
	const uint8_t *data = mad + RNIC_MAD_HDR_LEN;

	if (l == NULL)
		return -EINVAL;
	memset(msg, 0, sizeof(*msg));
	msg->attr_id = l->attr_id;
	msg->tid = rte_be_to_cpu_64(h->tid);
	for (unsigned int i = 0; i < l->nb_fields; i++) {
		const struct cm_field *f = &l->fields[i];

		if (f->size == 0)
			memcpy((uint8_t *)msg + f->off, data + f->byte, f->width / 8u);
		else
			member_set(msg, f, bits_get(data, f));
	}
	return 0;
}
