/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 wire formats: Ethernet (+802.1Q), IPv4/IPv6, UDP 4791, and the IBA transport headers of RC, UC and
 * UD (BTH, RETH, AETH, AtomicETH, AtomicAckETH, ImmDt, IETH, DETH), the opcode table, the ICRC (IBA annex
 * A17), a packet builder (descriptor -> frame) and a parser (frame -> descriptor or a drop reason).
 *
 * All multi-byte fields of the descriptor are in host byte order, except addresses (MACs, IPs/GIDs) which
 * are kept as their wire bytes.
 */
#ifndef RNIC_WIRE_H
#define RNIC_WIRE_H

#include <stdint.h>
#include <string.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include "rnic.h"

#define RNIC_ROCEV2_UDP_PORT 4791
#define RNIC_ICRC_LEN 4
#define RNIC_BTH_LEN 12
#define RNIC_RETH_LEN 16
#define RNIC_AETH_LEN 4
#define RNIC_ATOMICETH_LEN 28
#define RNIC_ATOMICACKETH_LEN 8
#define RNIC_IMMDT_LEN 4
#define RNIC_IETH_LEN 4
#define RNIC_DETH_LEN 8
#define RNIC_CNP_RSVD_LEN 16
#define RNIC_DEFAULT_PKEY 0xffff	/* the P_Key table's one entry: the default partition, full member */

/* Whether a GID is an IPv4 address (IPv4-mapped, ::ffff:a.b.c.d: RoCEv2 over IPv4). */
static inline int
rnic_gid_is_ipv4(const union rnic_gid *g)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

/* Whether a packet's P_Key matches the table's entry (IBA 10.9.3): the same partition (the low 15 bits) and
 * not both limited members; the entry is a full member, so either membership of the default partition. */
static inline int
rnic_pkey_match(uint16_t pkey)
{
	return (pkey & 0x7fff) == (RNIC_DEFAULT_PKEY & 0x7fff);
}

/* ECN, the low two bits of the IPv4 TOS / IPv6 traffic class (RFC 3168): a switch marks CE on an ECN-capable
 * (ECT) packet instead of dropping it; DCQCN answers CE with a CNP (doc/congestion.md). */
#define RNIC_ECN_MASK 3
#define RNIC_ECN_NOT_ECT 0
#define RNIC_ECN_ECT1 1
#define RNIC_ECN_ECT0 2
#define RNIC_ECN_CE 3

static inline int
rnic_ecn_ce(uint8_t traffic_class)
{
	return (traffic_class & RNIC_ECN_MASK) == RNIC_ECN_CE;
}

/* The traffic class a sender puts on the wire for an address vector's: its DSCP and ECN bits, but CE, which
 * only the network sets (RFC 3168 5.), leaves as ECT(0). */
static inline uint8_t
rnic_tclass_out(uint8_t traffic_class)
{
	return rnic_ecn_ce(traffic_class) ? (uint8_t)(traffic_class ^ 1) : traffic_class;
}

/* PSNs are 24-bit serial numbers that wrap (IBA 9.7.1): every PSN sum and comparison goes through these. */
#define RNIC_PSN_MASK 0xffffffu

/* The signed distance a - b of two PSNs (negative: a is before b). */
static inline int32_t
rnic_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t
rnic_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & RNIC_PSN_MASK;
}

/* The PSN before psn: what an ACK "up to psn - 1" or a NAK at psn acknowledges (IBA 9.7.5.1). */
static inline uint32_t
rnic_psn_prev(uint32_t psn)
{
	return rnic_psn_add(psn, RNIC_PSN_MASK);
}

/* AETH syndromes (IBA 9.7.5.1, table 43): the top two bits of the 3-bit code say ACK (0), RNR NAK (1) or NAK
 * (3); the low five bits are the credit count, the RNR timer or the NAK code. */
#define RNIC_AETH_ACK 0x1f		/* ACK, credits not used (invalid credit count) */
#define RNIC_AETH_RNR(timer) (0x20 | ((timer) & 0x1f))
#define RNIC_AETH_NAK_PSN_SEQ 0x60
#define RNIC_AETH_NAK_INVALID_REQUEST 0x61
#define RNIC_AETH_NAK_REMOTE_ACCESS 0x62
#define RNIC_AETH_NAK_REMOTE_OP 0x63
#define RNIC_AETH_IS_ACK(s) (((s) >> 5) == 0)
#define RNIC_AETH_IS_RNR(s) (((s) >> 5) == 1)
#define RNIC_AETH_VALUE(s) ((s) & 0x1f)	/* the credits, the RNR timer or the NAK code */

/* Transport of an opcode: its top three bits (IBA 9.2). */
enum rnic_transport {
	RNIC_TRANSPORT_RC = 0x00,
	RNIC_TRANSPORT_UC = 0x20,
	RNIC_TRANSPORT_RD = 0x40,
	RNIC_TRANSPORT_UD = 0x60,
	RNIC_TRANSPORT_CNP = 0x80,
};

/* BTH opcodes (IBA 1.4 table 38, RoCEv2 annex A17 for CNP). */
enum rnic_opcode {
	RNIC_OP_SEND_FIRST = 0x00,
	RNIC_OP_SEND_MIDDLE = 0x01,
	RNIC_OP_SEND_LAST = 0x02,
	RNIC_OP_SEND_LAST_WITH_IMMEDIATE = 0x03,
	RNIC_OP_SEND_ONLY = 0x04,
	RNIC_OP_SEND_ONLY_WITH_IMMEDIATE = 0x05,
	RNIC_OP_RDMA_WRITE_FIRST = 0x06,
	RNIC_OP_RDMA_WRITE_MIDDLE = 0x07,
	RNIC_OP_RDMA_WRITE_LAST = 0x08,
	RNIC_OP_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
	RNIC_OP_RDMA_WRITE_ONLY = 0x0a,
	RNIC_OP_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
	RNIC_OP_RDMA_READ_REQUEST = 0x0c,
	RNIC_OP_RDMA_READ_RESPONSE_FIRST = 0x0d,
	RNIC_OP_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
	RNIC_OP_RDMA_READ_RESPONSE_LAST = 0x0f,
	RNIC_OP_RDMA_READ_RESPONSE_ONLY = 0x10,
	RNIC_OP_ACKNOWLEDGE = 0x11,
	RNIC_OP_ATOMIC_ACKNOWLEDGE = 0x12,
	RNIC_OP_COMPARE_SWAP = 0x13,
	RNIC_OP_FETCH_ADD = 0x14,
	RNIC_OP_SEND_LAST_WITH_INVALIDATE = 0x16,
	RNIC_OP_SEND_ONLY_WITH_INVALIDATE = 0x17,
	RNIC_OP_CNP = 0x81,	/* full opcode, transport bits included */
};

/* Full opcode = transport | operation, e.g. RNIC_TRANSPORT_UC | RNIC_OP_SEND_ONLY. */
static inline uint8_t
rnic_opcode(enum rnic_transport t, enum rnic_opcode op)
{
	return (uint8_t)(t | op);
}

/* Headers that follow the BTH, in wire order. */
enum rnic_hdr_flag {
	RNIC_HDR_RETH = 1 << 0,
	RNIC_HDR_AETH = 1 << 1,
	RNIC_HDR_ATOMICETH = 1 << 2,
	RNIC_HDR_ATOMICACKETH = 1 << 3,
	RNIC_HDR_IMMDT = 1 << 4,
	RNIC_HDR_IETH = 1 << 5,
	RNIC_HDR_DETH = 1 << 6,
	RNIC_HDR_CNP = 1 << 7,		/* 16 reserved bytes of a CNP */
	RNIC_HDR_PAYLOAD = 1 << 8,	/* the opcode carries a payload (possibly of zero length) */
};

enum rnic_op_position {
	RNIC_POS_NONE = 0,	/* not part of a multi-packet message (ACK, READ request, atomics, CNP) */
	RNIC_POS_FIRST,
	RNIC_POS_MIDDLE,
	RNIC_POS_LAST,
	RNIC_POS_ONLY,
};

struct rnic_opcode_info {
	const char *name;	/* "RC SEND_FIRST"; NULL: opcode unknown to softrnic */
	uint16_t hdrs;		/* enum rnic_hdr_flag */
	uint8_t position;	/* enum rnic_op_position */
	uint8_t is_request;	/* 1: requester -> responder; 0: response (ACK, READ response, atomic ACK) */
	uint8_t hdr_len;	/* bytes from the start of the BTH to the payload */
};

extern const struct rnic_opcode_info rnic_opcode_table[256];

static inline const struct rnic_opcode_info *
rnic_opcode_info(uint8_t opcode)
{
	return &rnic_opcode_table[opcode];
}

/* Whether a QP of this type may send or receive this opcode (RC: all but CNP; UC: SEND/WRITE; UD: SEND). */
int rnic_opcode_allowed(uint8_t opcode, enum rnic_qp_type qp_type);

/* Why the parser rejected a frame; every value is counted by the header parser stage. */
enum rnic_drop_reason {
	RNIC_DROP_NONE = 0,
	RNIC_DROP_TRUNCATED,		/* shorter than the headers it announces */
	RNIC_DROP_NOT_IP,		/* EtherType neither IPv4 nor IPv6 (after an optional 802.1Q tag) */
	RNIC_DROP_BAD_IP_VERSION,	/* version field disagrees with the EtherType */
	RNIC_DROP_BAD_IP_HEADER,	/* IPv4 IHL/total length or IPv6 payload length inconsistent */
	RNIC_DROP_BAD_IP_CSUM,		/* IPv4 header checksum */
	RNIC_DROP_IP_FRAGMENT,		/* RoCEv2 frames are never fragmented */
	RNIC_DROP_NOT_UDP,
	RNIC_DROP_WRONG_UDP_PORT,	/* destination port is not 4791 */
	RNIC_DROP_BAD_UDP_LENGTH,
	RNIC_DROP_BAD_VERSION,		/* BTH TVer != 0 */
	RNIC_DROP_UNKNOWN_OPCODE,
	RNIC_DROP_OPCODE_TRANSPORT,	/* a transport softrnic does not implement (RD, XRC, reserved) */
	RNIC_DROP_BAD_PAD,		/* pad count on an opcode without payload, or pad longer than payload */
	RNIC_DROP_BAD_LENGTH,		/* payload on an opcode that carries none, or atomic/ACK of wrong size */
	RNIC_DROP_BAD_ICRC,
	RNIC_DROP_BAD_ADDR,		/* not the parser's: a connected QP's packet not from its peer's address to
					 * its own (the responder's and completer's address check) */
	RNIC_DROP_REASON_MAX
};

/* Static name of a drop reason ("bad_icrc"), for counters and logs. */
const char *rnic_drop_reason_str(enum rnic_drop_reason reason);

/* One RoCEv2 packet, decoded. */
struct rnic_pkt_desc {
	/* L2 */
	struct rte_ether_addr dst_mac;
	struct rte_ether_addr src_mac;
	uint8_t has_vlan;
	uint16_t vlan_tci;
	/* L3: addresses as GIDs; IPv4 addresses are IPv4-mapped (::ffff:a.b.c.d) */
	uint8_t ip_version;		/* 4 or 6 */
	union rnic_gid sgid;
	union rnic_gid dgid;
	uint8_t traffic_class;		/* IPv4 TOS / IPv6 traffic class (DSCP << 2 | ECN) */
	uint8_t hop_limit;		/* IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label;		/* IPv6 only */
	uint16_t ip_id;			/* IPv4 only */
	/* L4 */
	uint16_t udp_sport;		/* per-QP entropy */
	uint16_t udp_dport;		/* builder: 0 means 4791 */
	/* BTH */
	uint8_t opcode;
	uint8_t se;
	uint8_t mig;
	uint8_t pad;			/* parser: pad count read; builder: ignored (computed from payload_len) */
	uint8_t tver;
	uint16_t pkey;
	uint8_t fecn;
	uint8_t becn;
	uint32_t dqpn;			/* 24 bits */
	uint8_t ack_req;
	uint32_t psn;			/* 24 bits */
	/* extension headers; which ones are valid follows from rnic_opcode_info(opcode)->hdrs */
	struct {
		uint64_t va;
		uint32_t rkey;
		uint32_t dma_len;
	} reth;
	struct {
		uint8_t syndrome;
		uint32_t msn;		/* 24 bits */
	} aeth;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add;
		uint64_t compare;
	} atomiceth;
	uint64_t atomic_ack_orig;	/* AtomicAckETH: original remote data */
	uint32_t imm;			/* ImmDt, as the 32 bits on the wire read big-endian */
	uint32_t ieth_rkey;
	struct {
		uint32_t qkey;
		uint32_t src_qp;	/* 24 bits */
	} deth;
	/* payload: builder reads payload_len bytes from payload; parser points payload into the frame */
	const uint8_t *payload;
	uint32_t payload_len;
	uint32_t payload_off;		/* parser: offset of the payload from the frame start */
};

/* The transport fields of a CNP (RoCEv2 annex A17.9.3) to QP dqpn, as a ConnectX sends it: BTH opcode 0x81,
 * BECN set, P_Key 0xffff, PSN 0, no AckReq, the 16 reserved bytes (the builder zeroes them); the traffic
 * class given (the sender's DSCP for CNPs, ECT(0)). The addresses and ports are the caller's. */
static inline void
rnic_cnp_fill(struct rnic_pkt_desc *d, uint8_t traffic_class, uint32_t dqpn)
{
	d->traffic_class = traffic_class;
	d->opcode = RNIC_OP_CNP;
	d->becn = 1;
	d->fecn = 0;
	d->se = 0;
	d->ack_req = 0;
	d->pkey = RNIC_DEFAULT_PKEY;
	d->dqpn = dqpn;
	d->psn = 0;
	d->payload_len = 0;
}

/* Length of the frame the builder makes for this descriptor (headers, payload, pad, ICRC). */
uint32_t rnic_pkt_frame_len(const struct rnic_pkt_desc *d);

/*
 * Build the frame into buf: headers in place, payload copied (unless it already lies where the frame's
 * payload goes: a gather straight into the frame), pad bytes (zero) and the pad count set, IPv4
 * checksum, UDP length (UDP checksum 0, as RoCEv2 allows), ICRC. Returns the frame length, or a negative
 * errno: -ENOSPC if buflen is too small, -EINVAL for an opcode the table does not know or a payload on an
 * opcode without one.
 */
int rnic_pkt_build(const struct rnic_pkt_desc *d, uint8_t *buf, uint32_t buflen);

/* The same into an mbuf (appended to its data); returns the frame length or a negative errno. */
int rnic_pkt_build_mbuf(const struct rnic_pkt_desc *d, struct rte_mbuf *m);

/*
 * Parse a frame. On success fills d (payload pointing into the frame) and returns RNIC_DROP_NONE; otherwise
 * returns why it is dropped (d is then partially filled). check_icrc = 0 skips the ICRC check, for frames whose
 * ICRC was already verified.
 */
enum rnic_drop_reason rnic_pkt_parse(const uint8_t *frame, uint32_t len, struct rnic_pkt_desc *d,
				     int check_icrc);

/* Parse an mbuf (single- or multi-segment). The payload pointer is valid only for a single-segment mbuf. */
enum rnic_drop_reason rnic_pkt_parse_mbuf(const struct rte_mbuf *m, struct rnic_pkt_desc *d, int check_icrc);

/*
 * ICRC of a frame whose IP header starts at l3_off and whose ICRC occupies the last 4 bytes of len: CRC-32 over
 * 64 bits of ones, the IP header with its variant fields masked to ones (IPv4 TOS, TTL, checksum; IPv6
 * traffic class, flow label, hop limit), UDP with its checksum masked, BTH with its reserved byte masked, and
 * the rest up to the ICRC. Returned as the value to store little-endian in the frame's last 4 bytes.
 */
uint32_t rnic_icrc_compute(const uint8_t *frame, uint32_t l3_off, uint32_t len);

/* The same over an mbuf chain (the IP, UDP and BTH headers must be in the first segment). */
uint32_t rnic_icrc_compute_mbuf(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len);

#endif /* RNIC_WIRE_H */
