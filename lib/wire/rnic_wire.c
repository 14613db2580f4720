/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 opcode table, packet builder and parser.
 */
#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "rnic_wire.h"

#define PL RNIC_HDR_PAYLOAD
#define OP(t, o) [RNIC_TRANSPORT_ ## t | RNIC_OP_ ## o]
/* Bytes from the BTH to the payload, derived from the header flags so each fact is stated once. */
#define HDR_LEN(h) (RNIC_BTH_LEN + \
	((h) & RNIC_HDR_DETH ? RNIC_DETH_LEN : 0) + ((h) & RNIC_HDR_RETH ? RNIC_RETH_LEN : 0) + \
	((h) & RNIC_HDR_ATOMICETH ? RNIC_ATOMICETH_LEN : 0) + ((h) & RNIC_HDR_AETH ? RNIC_AETH_LEN : 0) + \
	((h) & RNIC_HDR_ATOMICACKETH ? RNIC_ATOMICACKETH_LEN : 0) + \
	((h) & RNIC_HDR_IMMDT ? RNIC_IMMDT_LEN : 0) + ((h) & RNIC_HDR_IETH ? RNIC_IETH_LEN : 0) + \
	((h) & RNIC_HDR_CNP ? RNIC_CNP_RSVD_LEN : 0))
#define REQ(name, hdrs, pos) { name, hdrs, RNIC_POS_ ## pos, 1, HDR_LEN(hdrs) }
#define RSP(name, hdrs, pos) { name, hdrs, RNIC_POS_ ## pos, 0, HDR_LEN(hdrs) }

const struct rnic_opcode_info rnic_opcode_table[256] = {
	OP(RC, SEND_FIRST) = REQ("RC SEND_FIRST", PL, FIRST),
	OP(RC, SEND_MIDDLE) = REQ("RC SEND_MIDDLE", PL, MIDDLE),
	OP(RC, SEND_LAST) = REQ("RC SEND_LAST", PL, LAST),
	OP(RC, SEND_LAST_WITH_IMMEDIATE) = REQ("RC SEND_LAST_WITH_IMMEDIATE", RNIC_HDR_IMMDT | PL, LAST),
	OP(RC, SEND_ONLY) = REQ("RC SEND_ONLY", PL, ONLY),
	OP(RC, SEND_ONLY_WITH_IMMEDIATE) = REQ("RC SEND_ONLY_WITH_IMMEDIATE", RNIC_HDR_IMMDT | PL, ONLY),
	OP(RC, RDMA_WRITE_FIRST) = REQ("RC RDMA_WRITE_FIRST", RNIC_HDR_RETH | PL, FIRST),
	OP(RC, RDMA_WRITE_MIDDLE) = REQ("RC RDMA_WRITE_MIDDLE", PL, MIDDLE),
	OP(RC, RDMA_WRITE_LAST) = REQ("RC RDMA_WRITE_LAST", PL, LAST),
	OP(RC, RDMA_WRITE_LAST_WITH_IMMEDIATE) =
		REQ("RC RDMA_WRITE_LAST_WITH_IMMEDIATE", RNIC_HDR_IMMDT | PL, LAST),
	OP(RC, RDMA_WRITE_ONLY) = REQ("RC RDMA_WRITE_ONLY", RNIC_HDR_RETH | PL, ONLY),
	OP(RC, RDMA_WRITE_ONLY_WITH_IMMEDIATE) =
		REQ("RC RDMA_WRITE_ONLY_WITH_IMMEDIATE", RNIC_HDR_RETH | RNIC_HDR_IMMDT | PL, ONLY),
	OP(RC, RDMA_READ_REQUEST) = REQ("RC RDMA_READ_REQUEST", RNIC_HDR_RETH, NONE),
	OP(RC, RDMA_READ_RESPONSE_FIRST) = RSP("RC RDMA_READ_RESPONSE_FIRST", RNIC_HDR_AETH | PL, FIRST),
	OP(RC, RDMA_READ_RESPONSE_MIDDLE) = RSP("RC RDMA_READ_RESPONSE_MIDDLE", PL, MIDDLE),
	OP(RC, RDMA_READ_RESPONSE_LAST) = RSP("RC RDMA_READ_RESPONSE_LAST", RNIC_HDR_AETH | PL, LAST),
	OP(RC, RDMA_READ_RESPONSE_ONLY) = RSP("RC RDMA_READ_RESPONSE_ONLY", RNIC_HDR_AETH | PL, ONLY),
	OP(RC, ACKNOWLEDGE) = RSP("RC ACKNOWLEDGE", RNIC_HDR_AETH, NONE),
	OP(RC, ATOMIC_ACKNOWLEDGE) = RSP("RC ATOMIC_ACKNOWLEDGE", RNIC_HDR_AETH | RNIC_HDR_ATOMICACKETH, NONE),
	OP(RC, COMPARE_SWAP) = REQ("RC COMPARE_SWAP", RNIC_HDR_ATOMICETH, NONE),
	OP(RC, FETCH_ADD) = REQ("RC FETCH_ADD", RNIC_HDR_ATOMICETH, NONE),
	OP(RC, SEND_LAST_WITH_INVALIDATE) = REQ("RC SEND_LAST_WITH_INVALIDATE", RNIC_HDR_IETH | PL, LAST),
	OP(RC, SEND_ONLY_WITH_INVALIDATE) = REQ("RC SEND_ONLY_WITH_INVALIDATE", RNIC_HDR_IETH | PL, ONLY),

	OP(UC, SEND_FIRST) = REQ("UC SEND_FIRST", PL, FIRST),
	OP(UC, SEND_MIDDLE) = REQ("UC SEND_MIDDLE", PL, MIDDLE),
	OP(UC, SEND_LAST) = REQ("UC SEND_LAST", PL, LAST),
	OP(UC, SEND_LAST_WITH_IMMEDIATE) = REQ("UC SEND_LAST_WITH_IMMEDIATE", RNIC_HDR_IMMDT | PL, LAST),
	OP(UC, SEND_ONLY) = REQ("UC SEND_ONLY", PL, ONLY),
	OP(UC, SEND_ONLY_WITH_IMMEDIATE) = REQ("UC SEND_ONLY_WITH_IMMEDIATE", RNIC_HDR_IMMDT | PL, ONLY),
	OP(UC, RDMA_WRITE_FIRST) = REQ("UC RDMA_WRITE_FIRST", RNIC_HDR_RETH | PL, FIRST),
	OP(UC, RDMA_WRITE_MIDDLE) = REQ("UC RDMA_WRITE_MIDDLE", PL, MIDDLE),
	OP(UC, RDMA_WRITE_LAST) = REQ("UC RDMA_WRITE_LAST", PL, LAST),
	OP(UC, RDMA_WRITE_LAST_WITH_IMMEDIATE) =
		REQ("UC RDMA_WRITE_LAST_WITH_IMMEDIATE", RNIC_HDR_IMMDT | PL, LAST),
	OP(UC, RDMA_WRITE_ONLY) = REQ("UC RDMA_WRITE_ONLY", RNIC_HDR_RETH | PL, ONLY),
	OP(UC, RDMA_WRITE_ONLY_WITH_IMMEDIATE) =
		REQ("UC RDMA_WRITE_ONLY_WITH_IMMEDIATE", RNIC_HDR_RETH | RNIC_HDR_IMMDT | PL, ONLY),

	OP(UD, SEND_ONLY) = REQ("UD SEND_ONLY", RNIC_HDR_DETH | PL, ONLY),
	OP(UD, SEND_ONLY_WITH_IMMEDIATE) =
		REQ("UD SEND_ONLY_WITH_IMMEDIATE", RNIC_HDR_DETH | RNIC_HDR_IMMDT | PL, ONLY),

	[RNIC_OP_CNP] = REQ("CNP", RNIC_HDR_CNP, NONE),
};

int
rnic_opcode_allowed(uint8_t opcode, enum rnic_qp_type qp_type)
{
	if (rnic_opcode_table[opcode].name == NULL)
		return 0;
	switch (qp_type) {
	case RNIC_QPT_RC:
		return (opcode & 0xe0) == RNIC_TRANSPORT_RC;
	case RNIC_QPT_UC:
		return (opcode & 0xe0) == RNIC_TRANSPORT_UC;
	case RNIC_QPT_UD:
		return (opcode & 0xe0) == RNIC_TRANSPORT_UD;
	}
	return 0;
}

const char *
rnic_drop_reason_str(enum rnic_drop_reason reason)
{
	static const char *const names[RNIC_DROP_REASON_MAX] = {
		[RNIC_DROP_NONE] = "none",
		[RNIC_DROP_TRUNCATED] = "truncated",
		[RNIC_DROP_NOT_IP] = "not_ip",
		[RNIC_DROP_BAD_IP_VERSION] = "bad_ip_version",
		[RNIC_DROP_BAD_IP_HEADER] = "bad_ip_header",
		[RNIC_DROP_BAD_IP_CSUM] = "bad_ip_csum",
		[RNIC_DROP_IP_FRAGMENT] = "ip_fragment",
		[RNIC_DROP_NOT_UDP] = "not_udp",
		[RNIC_DROP_WRONG_UDP_PORT] = "wrong_udp_port",
		[RNIC_DROP_BAD_UDP_LENGTH] = "bad_udp_length",
		[RNIC_DROP_BAD_VERSION] = "bad_version",
		[RNIC_DROP_UNKNOWN_OPCODE] = "unknown_opcode",
		[RNIC_DROP_OPCODE_TRANSPORT] = "opcode_transport",
		[RNIC_DROP_BAD_PAD] = "bad_pad",
		[RNIC_DROP_BAD_LENGTH] = "bad_length",
		[RNIC_DROP_BAD_ICRC] = "bad_icrc",
		[RNIC_DROP_BAD_ADDR] = "bad_addr",
	};

	if ((unsigned int)reason >= RNIC_DROP_REASON_MAX)
		return "unknown";
	return names[reason];
}

/* ------------------------------------------------------------------------------------------------------ */
/* Builder                                                                                                  */

static uint32_t
l3_len(const struct rnic_pkt_desc *d)
{
	return d->ip_version == 6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr);
}

static uint32_t
l2_len(const struct rnic_pkt_desc *d)
{
	return RTE_ETHER_HDR_LEN + (d->has_vlan ? sizeof(struct rte_vlan_hdr) : 0);
}

static uint32_t
pad_len(uint32_t payload_len)
{
	return (4 - (payload_len & 3)) & 3;
}

uint32_t
rnic_pkt_frame_len(const struct rnic_pkt_desc *d)
{
	return l2_len(d) + l3_len(d) + sizeof(struct rte_udp_hdr) + rnic_opcode_table[d->opcode].hdr_len +
	       d->payload_len + pad_len(d->payload_len) + RNIC_ICRC_LEN;
}

static uint8_t *
put_be16(uint8_t *p, uint16_t v)
{
	uint16_t be = rte_cpu_to_be_16(v);

	memcpy(p, &be, sizeof(be));
	return p + sizeof(be);
}

static uint8_t *
put_be32(uint8_t *p, uint32_t v)
{
	uint32_t be = rte_cpu_to_be_32(v);

	memcpy(p, &be, sizeof(be));
	return p + sizeof(be);
}

static uint8_t *
put_be64(uint8_t *p, uint64_t v)
{
	uint64_t be = rte_cpu_to_be_64(v);

	memcpy(p, &be, sizeof(be));
	return p + sizeof(be);
}

static uint8_t *
build_l2(const struct rnic_pkt_desc *d, uint8_t *p)
{
	uint16_t ether_type = d->ip_version == 6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4;

	memcpy(p, &d->dst_mac, RTE_ETHER_ADDR_LEN);
	memcpy(p + RTE_ETHER_ADDR_LEN, &d->src_mac, RTE_ETHER_ADDR_LEN);
	p += 2 * RTE_ETHER_ADDR_LEN;
	if (d->has_vlan) {
		p = put_be16(p, RTE_ETHER_TYPE_VLAN);
		p = put_be16(p, d->vlan_tci);
	}
	return put_be16(p, ether_type);
}

static uint8_t *
build_l3(const struct rnic_pkt_desc *d, uint8_t *p, uint16_t udp_len)
{
	if (d->ip_version == 6) {
		struct rte_ipv6_hdr ip = {
			.vtc_flow = rte_cpu_to_be_32(6u << 28 | (uint32_t)d->traffic_class << 20 |
						     (d->flow_label & 0xfffff)),
			.payload_len = rte_cpu_to_be_16(udp_len),
			.proto = IPPROTO_UDP,
			.hop_limits = d->hop_limit,
		};

		memcpy(ip.src_addr, d->sgid.raw, 16);
		memcpy(ip.dst_addr, d->dgid.raw, 16);
		memcpy(p, &ip, sizeof(ip));
		return p + sizeof(ip);
	}
	struct rte_ipv4_hdr ip = {
		.version_ihl = RTE_IPV4_VHL_DEF,
		.type_of_service = d->traffic_class,
		.total_length = rte_cpu_to_be_16(sizeof(ip) + udp_len),
		.packet_id = rte_cpu_to_be_16(d->ip_id),
		.fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG),
		.time_to_live = d->hop_limit,
		.next_proto_id = IPPROTO_UDP,
	};
	uint32_t src, dst, sum;

	memcpy(&ip.src_addr, &d->sgid.raw[12], 4);
	memcpy(&ip.dst_addr, &d->dgid.raw[12], 4);
	/* The header checksum from the field values in registers: rte_ipv4_cksum reads the header back as
	 * 16-bit words right after it was stored byte by byte, and store forwarding fails on most of those
	 * loads (it was 70 % of building a frame). */
	src = rte_be_to_cpu_32(ip.src_addr);
	dst = rte_be_to_cpu_32(ip.dst_addr);
	sum = (uint32_t)RTE_IPV4_VHL_DEF << 8 | d->traffic_class;
	sum += (uint32_t)sizeof(ip) + udp_len + d->ip_id + RTE_IPV4_HDR_DF_FLAG;
	sum += (uint32_t)d->hop_limit << 8 | IPPROTO_UDP;
	sum += (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip.hdr_checksum = rte_cpu_to_be_16((uint16_t)~sum);
	memcpy(p, &ip, sizeof(ip));
	return p + sizeof(ip);
}

static uint8_t *
build_bth(const struct rnic_pkt_desc *d, uint8_t *p)
{
	*p++ = d->opcode;
	*p++ = (uint8_t)((d->se & 1) << 7 | (d->mig & 1) << 6 | pad_len(d->payload_len) << 4 | (d->tver & 0xf));
	p = put_be16(p, d->pkey);
	p = put_be32(p, (uint32_t)(d->fecn & 1) << 31 | (uint32_t)(d->becn & 1) << 30 | (d->dqpn & 0xffffff));
	return put_be32(p, (uint32_t)(d->ack_req & 1) << 31 | (d->psn & RNIC_PSN_MASK));
}

static uint8_t *
build_ext(const struct rnic_pkt_desc *d, uint16_t hdrs, uint8_t *p)
{
	if (hdrs & RNIC_HDR_DETH) {
		p = put_be32(p, d->deth.qkey);
		p = put_be32(p, d->deth.src_qp & 0xffffff);
	}
	if (hdrs & RNIC_HDR_RETH) {
		p = put_be64(p, d->reth.va);
		p = put_be32(p, d->reth.rkey);
		p = put_be32(p, d->reth.dma_len);
	}
	if (hdrs & RNIC_HDR_ATOMICETH) {
		p = put_be64(p, d->atomiceth.va);
		p = put_be32(p, d->atomiceth.rkey);
		p = put_be64(p, d->atomiceth.swap_add);
		p = put_be64(p, d->atomiceth.compare);
	}
	if (hdrs & RNIC_HDR_AETH)
		p = put_be32(p, (uint32_t)d->aeth.syndrome << 24 | (d->aeth.msn & 0xffffff));
	if (hdrs & RNIC_HDR_ATOMICACKETH)
		p = put_be64(p, d->atomic_ack_orig);
	if (hdrs & RNIC_HDR_IMMDT)
		p = put_be32(p, d->imm);
	if (hdrs & RNIC_HDR_IETH)
		p = put_be32(p, d->ieth_rkey);
	if (hdrs & RNIC_HDR_CNP) {
		memset(p, 0, RNIC_CNP_RSVD_LEN);
		p += RNIC_CNP_RSVD_LEN;
	}
	return p;
}

int
rnic_pkt_build(const struct rnic_pkt_desc *d, uint8_t *buf, uint32_t buflen)
{
	const struct rnic_opcode_info *info = &rnic_opcode_table[d->opcode];
	uint32_t len, pad, udp_len, icrc;
	uint8_t *p;

	if (info->name == NULL || (d->ip_version != 4 && d->ip_version != 6) ||
	    (!(info->hdrs & RNIC_HDR_PAYLOAD) && d->payload_len != 0) ||
	    (d->payload_len != 0 && d->payload == NULL))
		return -EINVAL;
	len = rnic_pkt_frame_len(d);
	if (len > buflen)
		return -ENOSPC;
	pad = pad_len(d->payload_len);
	udp_len = (uint32_t)sizeof(struct rte_udp_hdr) + info->hdr_len + d->payload_len + pad + RNIC_ICRC_LEN;
	if (udp_len > UINT16_MAX - sizeof(struct rte_ipv4_hdr))
		return -EINVAL;

	p = build_l2(d, buf);
	p = build_l3(d, p, (uint16_t)udp_len);
	p = put_be16(p, d->udp_sport);
	p = put_be16(p, d->udp_dport != 0 ? d->udp_dport : RNIC_ROCEV2_UDP_PORT);
	p = put_be16(p, (uint16_t)udp_len);
	p = put_be16(p, 0);	/* RoCEv2 allows a zero UDP checksum; the ICRC protects the packet */
	p = build_bth(d, p);
	p = build_ext(d, info->hdrs, p);
	/* The requester gathers the payload straight into the frame: nothing to copy then. */
	if (d->payload_len != 0 && d->payload != p)
		memcpy(p, d->payload, d->payload_len);
	p += d->payload_len;
	memset(p, 0, pad);
	icrc = rte_cpu_to_le_32(rnic_icrc_compute(buf, l2_len(d), len));
	memcpy(p + pad, &icrc, sizeof(icrc));
	return (int)len;
}

int
rnic_pkt_build_mbuf(const struct rnic_pkt_desc *d, struct rte_mbuf *m)
{
	uint32_t len = rnic_pkt_frame_len(d);
	uint8_t *buf;
	int ret;

	if (len > rte_pktmbuf_tailroom(rte_pktmbuf_lastseg(m)))
		return -ENOSPC;
	buf = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	ret = rnic_pkt_build(d, buf, len);
	if (ret < 0)
		rte_pktmbuf_trim(m, (uint16_t)len);
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Parser                                                                                                   */

static uint16_t
get_be16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return rte_be_to_cpu_16(v);
}

static uint32_t
get_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return rte_be_to_cpu_32(v);
}

static uint64_t
get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return rte_be_to_cpu_64(v);
}

/* Ethernet and 802.1Q: returns the offset of the L3 header, or 0 with *why set. */
static uint32_t
parse_l2(const uint8_t *f, uint32_t len, struct rnic_pkt_desc *d, enum rnic_drop_reason *why)
{
	uint32_t off = 2 * RTE_ETHER_ADDR_LEN;
	uint16_t type;

	if (len < RTE_ETHER_HDR_LEN) {
		*why = RNIC_DROP_TRUNCATED;
		return 0;
	}
	memcpy(&d->dst_mac, f, RTE_ETHER_ADDR_LEN);
	memcpy(&d->src_mac, f + RTE_ETHER_ADDR_LEN, RTE_ETHER_ADDR_LEN);
	type = get_be16(f + off);
	off += 2;
	d->has_vlan = type == RTE_ETHER_TYPE_VLAN;
	if (d->has_vlan) {
		if (len < off + sizeof(struct rte_vlan_hdr)) {
			*why = RNIC_DROP_TRUNCATED;
			return 0;
		}
		d->vlan_tci = get_be16(f + off);
		type = get_be16(f + off + 2);
		off += sizeof(struct rte_vlan_hdr);
	}
	if (type == RTE_ETHER_TYPE_IPV4)
		d->ip_version = 4;
	else if (type == RTE_ETHER_TYPE_IPV6)
		d->ip_version = 6;
	else {
		*why = RNIC_DROP_NOT_IP;
		return 0;
	}
	return off;
}

/*
 * Whether an IPv4 header of ihl bytes (20 .. 60, a multiple of 4) sums to all ones, its checksum included.
 * Its 32-bit words are added as integers: since 2^16 = 1 modulo 0xffff, the one's-complement sum of the
 * 16-bit words is 0xffff exactly when that integer sum is a nonzero multiple of 0xffff (RFC 1071's
 * independence of byte order: 0xffff reads the same both ways). rte_raw_cksum adds 16-bit words one at a
 * time and folds: 58 instructions for a 20-byte header.
 */
static int
ipv4_sum_ok(const uint8_t *ip, uint32_t ihl)
{
	uint32_t w[15];
	uint64_t sum;

	memcpy(w, ip, 20);
	sum = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	for (uint32_t i = 5; i < ihl / 4; i++) {
		memcpy(&w[i], ip + 4 * i, sizeof(w[i]));
		sum += w[i];
	}
	return sum != 0 && sum % 0xffff == 0;
}

/* The IP headers are read in place (DPDK's header structs are packed): a copy to the stack read back a field
 * at a time costs a failed store-to-load forward per field, a quarter of the parse. */
static enum rnic_drop_reason
parse_ipv4(const uint8_t *ip, uint32_t avail, struct rnic_pkt_desc *d, uint32_t *hdr_len, uint32_t *ip_end)
{
	const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)ip;
	uint32_t ihl, total;

	if (avail < sizeof(*h))
		return RNIC_DROP_TRUNCATED;
	if ((h->version_ihl >> 4) != 4)
		return RNIC_DROP_BAD_IP_VERSION;
	ihl = (uint32_t)(h->version_ihl & 0xf) * 4;
	total = rte_be_to_cpu_16(h->total_length);
	if (ihl < sizeof(*h) || total < ihl)
		return RNIC_DROP_BAD_IP_HEADER;
	if (total > avail || avail < ihl)
		return RNIC_DROP_TRUNCATED;
	if (!ipv4_sum_ok(ip, ihl))
		return RNIC_DROP_BAD_IP_CSUM;
	if (rte_be_to_cpu_16(h->fragment_offset) & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
		return RNIC_DROP_IP_FRAGMENT;
	if (h->next_proto_id != IPPROTO_UDP)
		return RNIC_DROP_NOT_UDP;
	memset(&d->sgid, 0, sizeof(d->sgid));
	memset(&d->dgid, 0, sizeof(d->dgid));
	d->sgid.raw[10] = d->sgid.raw[11] = 0xff;
	d->dgid.raw[10] = d->dgid.raw[11] = 0xff;
	memcpy(&d->sgid.raw[12], &h->src_addr, 4);
	memcpy(&d->dgid.raw[12], &h->dst_addr, 4);
	d->traffic_class = h->type_of_service;
	d->hop_limit = h->time_to_live;
	d->ip_id = rte_be_to_cpu_16(h->packet_id);
	d->flow_label = 0;
	*hdr_len = ihl;
	*ip_end = total;
	return RNIC_DROP_NONE;
}

static enum rnic_drop_reason
parse_ipv6(const uint8_t *ip, uint32_t avail, struct rnic_pkt_desc *d, uint32_t *hdr_len, uint32_t *ip_end)
{
	const struct rte_ipv6_hdr *h = (const struct rte_ipv6_hdr *)ip;
	uint32_t vtc;

	if (avail < sizeof(*h))
		return RNIC_DROP_TRUNCATED;
	vtc = rte_be_to_cpu_32(h->vtc_flow);
	if ((vtc >> 28) != 6)
		return RNIC_DROP_BAD_IP_VERSION;
	if (sizeof(*h) + rte_be_to_cpu_16(h->payload_len) > avail)
		return RNIC_DROP_TRUNCATED;
	/* Extension headers (fragments included) never precede a RoCEv2 UDP header. */
	if (h->proto != IPPROTO_UDP)
		return h->proto == IPPROTO_FRAGMENT ? RNIC_DROP_IP_FRAGMENT : RNIC_DROP_NOT_UDP;
	memcpy(d->sgid.raw, h->src_addr, 16);
	memcpy(d->dgid.raw, h->dst_addr, 16);
	d->traffic_class = (uint8_t)(vtc >> 20);
	d->flow_label = vtc & 0xfffff;
	d->hop_limit = h->hop_limits;
	d->ip_id = 0;
	*hdr_len = sizeof(*h);
	*ip_end = sizeof(*h) + rte_be_to_cpu_16(h->payload_len);
	return RNIC_DROP_NONE;
}

static void
parse_ext(const uint8_t *p, uint16_t hdrs, struct rnic_pkt_desc *d)
{
	if (hdrs & RNIC_HDR_DETH) {
		d->deth.qkey = get_be32(p);
		d->deth.src_qp = get_be32(p + 4) & 0xffffff;
		p += RNIC_DETH_LEN;
	}
	if (hdrs & RNIC_HDR_RETH) {
		d->reth.va = get_be64(p);
		d->reth.rkey = get_be32(p + 8);
		d->reth.dma_len = get_be32(p + 12);
		p += RNIC_RETH_LEN;
	}
	if (hdrs & RNIC_HDR_ATOMICETH) {
		d->atomiceth.va = get_be64(p);
		d->atomiceth.rkey = get_be32(p + 8);
		d->atomiceth.swap_add = get_be64(p + 12);
		d->atomiceth.compare = get_be64(p + 20);
		p += RNIC_ATOMICETH_LEN;
	}
	if (hdrs & RNIC_HDR_AETH) {
		uint32_t aeth = get_be32(p);

		d->aeth.syndrome = (uint8_t)(aeth >> 24);
		d->aeth.msn = aeth & 0xffffff;
		p += RNIC_AETH_LEN;
	}
	if (hdrs & RNIC_HDR_ATOMICACKETH) {
		d->atomic_ack_orig = get_be64(p);
		p += RNIC_ATOMICACKETH_LEN;
	}
	if (hdrs & RNIC_HDR_IMMDT) {
		d->imm = get_be32(p);
		p += RNIC_IMMDT_LEN;
	}
	if (hdrs & RNIC_HDR_IETH)
		d->ieth_rkey = get_be32(p);
}

/* Whether the opcode belongs to a transport softrnic implements (RC, UC, UD, CNP). */
static int
transport_known(uint8_t opcode)
{
	uint8_t t = opcode & 0xe0;

	return t == RNIC_TRANSPORT_RC || t == RNIC_TRANSPORT_UC || t == RNIC_TRANSPORT_UD ||
	       t == RNIC_TRANSPORT_CNP;
}

/*
 * BTH, extension headers and payload bounds: bth points at the BTH, tail_len counts the bytes from the BTH
 * to the end of the IP datagram (ICRC included).
 */
static enum rnic_drop_reason
parse_transport(const uint8_t *bth, uint32_t tail_len, struct rnic_pkt_desc *d)
{
	const struct rnic_opcode_info *info;
	uint32_t after_hdrs;

	if (tail_len < RNIC_BTH_LEN + RNIC_ICRC_LEN)
		return RNIC_DROP_TRUNCATED;
	d->opcode = bth[0];
	d->se = bth[1] >> 7;
	d->mig = (bth[1] >> 6) & 1;
	d->pad = (bth[1] >> 4) & 3;
	d->tver = bth[1] & 0xf;
	d->pkey = get_be16(bth + 2);
	d->fecn = bth[4] >> 7;
	d->becn = (bth[4] >> 6) & 1;
	d->dqpn = get_be32(bth + 4) & 0xffffff;
	d->ack_req = bth[8] >> 7;
	d->psn = get_be32(bth + 8) & RNIC_PSN_MASK;
	if (d->tver != 0)
		return RNIC_DROP_BAD_VERSION;
	info = &rnic_opcode_table[d->opcode];
	if (info->name == NULL)
		return transport_known(d->opcode) ? RNIC_DROP_UNKNOWN_OPCODE : RNIC_DROP_OPCODE_TRANSPORT;
	if (tail_len < (uint32_t)info->hdr_len + RNIC_ICRC_LEN)
		return RNIC_DROP_TRUNCATED;
	parse_ext(bth + RNIC_BTH_LEN, info->hdrs, d);

	after_hdrs = tail_len - info->hdr_len - RNIC_ICRC_LEN;
	if (!(info->hdrs & RNIC_HDR_PAYLOAD)) {
		if (d->pad != 0)
			return RNIC_DROP_BAD_PAD;
		if (after_hdrs != 0)
			return RNIC_DROP_BAD_LENGTH;
	} else if (d->pad > after_hdrs) {
		return RNIC_DROP_BAD_PAD;
	}
	d->payload_len = after_hdrs - d->pad;
	return RNIC_DROP_NONE;
}

/*
 * Everything up to the transport headers, which must lie in the first hdr_avail bytes; frame_len is the
 * whole frame's length. Leaves the offsets of the L3 header, the BTH and the datagram's end.
 */
static enum rnic_drop_reason
parse_headers(const uint8_t *f, uint32_t hdr_avail, uint32_t frame_len, struct rnic_pkt_desc *d,
	      uint32_t *l3_off, uint32_t *bth_off, uint32_t *ip_end)
{
	enum rnic_drop_reason why = RNIC_DROP_NONE;
	uint32_t ip_hdr_len, udp_len, udp_off;
	const uint8_t *udp;

	*l3_off = parse_l2(f, hdr_avail, d, &why);
	if (*l3_off == 0)
		return why;
	/* The IP header must lie in the bytes we may read as a flat header (the first segment). */
	if (*l3_off + (d->ip_version == 6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr)) >
	    hdr_avail || (d->ip_version == 4 && *l3_off + (f[*l3_off] & 0xfu) * 4 > hdr_avail))
		return RNIC_DROP_TRUNCATED;
	if (d->ip_version == 4)
		why = parse_ipv4(f + *l3_off, frame_len - *l3_off, d, &ip_hdr_len, ip_end);
	else
		why = parse_ipv6(f + *l3_off, frame_len - *l3_off, d, &ip_hdr_len, ip_end);
	if (why != RNIC_DROP_NONE)
		return why;
	*ip_end += *l3_off;
	udp_off = *l3_off + ip_hdr_len;
	if (udp_off + sizeof(struct rte_udp_hdr) > *ip_end)
		return RNIC_DROP_TRUNCATED;
	if (udp_off + sizeof(struct rte_udp_hdr) + RNIC_BTH_LEN > hdr_avail)
		return RNIC_DROP_TRUNCATED;
	udp = f + udp_off;
	d->udp_sport = get_be16(udp);
	d->udp_dport = get_be16(udp + 2);
	udp_len = get_be16(udp + 4);
	if (d->udp_dport != RNIC_ROCEV2_UDP_PORT)
		return RNIC_DROP_WRONG_UDP_PORT;
	if (udp_off + udp_len != *ip_end || udp_len < sizeof(struct rte_udp_hdr))
		return RNIC_DROP_BAD_UDP_LENGTH;
	*bth_off = udp_off + sizeof(struct rte_udp_hdr);
	return RNIC_DROP_NONE;
}

enum rnic_drop_reason
rnic_pkt_parse(const uint8_t *frame, uint32_t len, struct rnic_pkt_desc *d, int check_icrc)
{
	uint32_t l3_off = 0, bth_off = 0, ip_end = 0, icrc;
	enum rnic_drop_reason why;

	why = parse_headers(frame, len, len, d, &l3_off, &bth_off, &ip_end);
	if (why == RNIC_DROP_NONE)
		why = parse_transport(frame + bth_off, ip_end - bth_off, d);
	if (why != RNIC_DROP_NONE)
		return why;
	d->payload_off = bth_off + rnic_opcode_table[d->opcode].hdr_len;
	d->payload = frame + d->payload_off;
	if (check_icrc) {
		memcpy(&icrc, frame + ip_end - RNIC_ICRC_LEN, sizeof(icrc));
		if (rte_le_to_cpu_32(icrc) != rnic_icrc_compute(frame, l3_off, ip_end))
			return RNIC_DROP_BAD_ICRC;
	}
	return RNIC_DROP_NONE;
}

enum rnic_drop_reason
rnic_pkt_parse_mbuf(const struct rte_mbuf *m, struct rnic_pkt_desc *d, int check_icrc)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t l3_off = 0, bth_off = 0, ip_end = 0, icrc, hdr_avail;
	enum rnic_drop_reason why;

	if (m->nb_segs == 1)
		return rnic_pkt_parse(f, m->data_len, d, check_icrc);
	/* Chained: the headers must be in the first segment (every builder and PMD here puts them there). */
	hdr_avail = m->data_len;
	why = parse_headers(f, hdr_avail, m->pkt_len, d, &l3_off, &bth_off, &ip_end);
	if (why == RNIC_DROP_NONE && bth_off + rnic_opcode_table[f[bth_off]].hdr_len > hdr_avail)
		why = RNIC_DROP_TRUNCATED;
	if (why == RNIC_DROP_NONE)
		why = parse_transport(f + bth_off, ip_end - bth_off, d);
	if (why != RNIC_DROP_NONE)
		return why;
	d->payload_off = bth_off + rnic_opcode_table[d->opcode].hdr_len;
	d->payload = NULL;
	if (check_icrc) {
		const void *wire_icrc = rte_pktmbuf_read(m, ip_end - RNIC_ICRC_LEN, sizeof(icrc), &icrc);

		if (wire_icrc == NULL)
			return RNIC_DROP_TRUNCATED;
		memcpy(&icrc, wire_icrc, sizeof(icrc));
		if (rte_le_to_cpu_32(icrc) != rnic_icrc_compute_mbuf(m, l3_off, ip_end))
			return RNIC_DROP_BAD_ICRC;
	}
	return RNIC_DROP_NONE;
}
