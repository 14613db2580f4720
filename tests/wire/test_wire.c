/* SPDX-License-Identifier: BSD-3-Clause
 * Wire formats: the opcode table, builder/parser round trips of every opcode, every drop reason, the ICRC
 * against real frames (Linux rxe and a ConnectX-4 Lx), and chained mbufs.
 * Run as: test_wire <oracles dir> <EAL args>.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "rnic_wire.h"
#include "pcap_file.h"

static const char *oracles_dir;
static struct rte_mempool *pool;

static const uint8_t payload_bytes[9300] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };

/* A descriptor whose every field holds a distinctive value, for the given opcode and IP version. */
static void
fill_desc(struct rnic_pkt_desc *d, uint8_t opcode, uint8_t ip_version, int vlan, uint32_t payload_len)
{
	memset(d, 0, sizeof(*d));
	d->dst_mac = (struct rte_ether_addr){ { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 } };
	d->src_mac = (struct rte_ether_addr){ { 0x02, 0x66, 0x77, 0x88, 0x99, 0xaa } };
	d->has_vlan = (uint8_t)vlan;
	d->vlan_tci = vlan ? 0x2064 : 0;
	d->ip_version = ip_version;
	if (ip_version == 4) {
		const uint8_t s[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 1 };
		const uint8_t t[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 2 };

		memcpy(d->sgid.raw, s, 16);
		memcpy(d->dgid.raw, t, 16);
		d->ip_id = 0x1234;
	} else {
		for (int i = 0; i < 16; i++) {
			d->sgid.raw[i] = (uint8_t)(0xfd + i);
			d->dgid.raw[i] = (uint8_t)(0xfd + 2 * i);
		}
		d->flow_label = 0xabcde;
	}
	d->traffic_class = 0x8a;
	d->hop_limit = 63;
	d->udp_sport = 0xc123;
	d->udp_dport = RNIC_ROCEV2_UDP_PORT;
	d->opcode = opcode;
	d->se = 1;
	d->mig = 1;
	d->pkey = 0xffff;
	d->fecn = 0;
	d->becn = 1;
	d->dqpn = 0xabcdef;
	d->ack_req = 1;
	d->psn = 0xfedcba;
	d->reth.va = 0x0123456789abcdefULL;
	d->reth.rkey = 0x11223344;
	d->reth.dma_len = 0x10000;
	d->aeth.syndrome = 0x1f;
	d->aeth.msn = 0x654321;
	d->atomiceth.va = 0x7766554433221100ULL;
	d->atomiceth.rkey = 0x55667788;
	d->atomiceth.swap_add = 0x1111222233334444ULL;
	d->atomiceth.compare = 0x5555666677778888ULL;
	d->atomic_ack_orig = 0x99990000aaaabbbbULL;
	d->imm = 0xdeadbeef;
	d->ieth_rkey = 0x0badcafe;
	d->deth.qkey = 0x80010000;
	d->deth.src_qp = 0x123456;
	d->payload = payload_bytes;
	d->payload_len = payload_len;
}

static void
assert_desc_equal(const struct rnic_pkt_desc *a, const struct rnic_pkt_desc *b)
{
	uint16_t hdrs = rnic_opcode_info(a->opcode)->hdrs;

	assert_memory_equal(&a->dst_mac, &b->dst_mac, RTE_ETHER_ADDR_LEN);
	assert_memory_equal(&a->src_mac, &b->src_mac, RTE_ETHER_ADDR_LEN);
	assert_int_equal(a->has_vlan, b->has_vlan);
	if (a->has_vlan)
		assert_int_equal(a->vlan_tci, b->vlan_tci);
	assert_int_equal(a->ip_version, b->ip_version);
	assert_memory_equal(a->sgid.raw, b->sgid.raw, 16);
	assert_memory_equal(a->dgid.raw, b->dgid.raw, 16);
	assert_int_equal(a->traffic_class, b->traffic_class);
	assert_int_equal(a->hop_limit, b->hop_limit);
	if (a->ip_version == 6)
		assert_int_equal(a->flow_label, b->flow_label);
	else
		assert_int_equal(a->ip_id, b->ip_id);
	assert_int_equal(a->udp_sport, b->udp_sport);
	assert_int_equal(b->udp_dport, RNIC_ROCEV2_UDP_PORT);
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->se, b->se);
	assert_int_equal(a->mig, b->mig);
	assert_int_equal(b->pad, (4 - (a->payload_len & 3)) & 3);
	assert_int_equal(a->pkey, b->pkey);
	assert_int_equal(a->fecn, b->fecn);
	assert_int_equal(a->becn, b->becn);
	assert_int_equal(a->dqpn, b->dqpn);
	assert_int_equal(a->ack_req, b->ack_req);
	assert_int_equal(a->psn, b->psn);
	if (hdrs & RNIC_HDR_RETH) {
		assert_int_equal(a->reth.va, b->reth.va);
		assert_int_equal(a->reth.rkey, b->reth.rkey);
		assert_int_equal(a->reth.dma_len, b->reth.dma_len);
	}
	if (hdrs & RNIC_HDR_AETH) {
		assert_int_equal(a->aeth.syndrome, b->aeth.syndrome);
		assert_int_equal(a->aeth.msn, b->aeth.msn);
	}
	if (hdrs & RNIC_HDR_ATOMICETH) {
		assert_int_equal(a->atomiceth.va, b->atomiceth.va);
		assert_int_equal(a->atomiceth.rkey, b->atomiceth.rkey);
		assert_int_equal(a->atomiceth.swap_add, b->atomiceth.swap_add);
		assert_int_equal(a->atomiceth.compare, b->atomiceth.compare);
	}
	if (hdrs & RNIC_HDR_ATOMICACKETH)
		assert_int_equal(a->atomic_ack_orig, b->atomic_ack_orig);
	if (hdrs & RNIC_HDR_IMMDT)
		assert_int_equal(a->imm, b->imm);
	if (hdrs & RNIC_HDR_IETH)
		assert_int_equal(a->ieth_rkey, b->ieth_rkey);
	if (hdrs & RNIC_HDR_DETH) {
		assert_int_equal(a->deth.qkey, b->deth.qkey);
		assert_int_equal(a->deth.src_qp, b->deth.src_qp);
	}
	assert_int_equal(a->payload_len, b->payload_len);
	if (a->payload_len != 0)
		assert_memory_equal(a->payload, b->payload, a->payload_len);
}

static void
test_opcode_table(void **state)
{
	unsigned int known = 0, per_transport[8] = { 0 };

	(void)state;
	for (unsigned int op = 0; op < 256; op++) {
		const struct rnic_opcode_info *info = rnic_opcode_info((uint8_t)op);

		if (info->name == NULL) {
			assert_false(rnic_opcode_allowed((uint8_t)op, RNIC_QPT_RC));
			continue;
		}
		known++;
		per_transport[op >> 5]++;
		/* Multi-packet positions carry payload; single-packet control opcodes carry none. */
		assert_int_equal(!!(info->hdrs & RNIC_HDR_PAYLOAD), info->position != RNIC_POS_NONE);
		/* Only the first or only packet of a WRITE carries the RETH. */
		if ((info->hdrs & RNIC_HDR_RETH) && (info->hdrs & RNIC_HDR_PAYLOAD))
			assert_true(info->position == RNIC_POS_FIRST || info->position == RNIC_POS_ONLY);
		/* Immediate and invalidate only on the last or only packet. */
		if (info->hdrs & (RNIC_HDR_IMMDT | RNIC_HDR_IETH))
			assert_true(info->position == RNIC_POS_LAST || info->position == RNIC_POS_ONLY);
		assert_int_equal(info->hdr_len >= RNIC_BTH_LEN, 1);
	}
	/* IBA 1.4: 23 RC opcodes, 12 UC, 2 UD; plus the RoCEv2 CNP. */
	assert_int_equal(per_transport[0], 23);
	assert_int_equal(per_transport[1], 12);
	assert_int_equal(per_transport[3], 2);
	assert_int_equal(per_transport[4], 1);
	assert_int_equal(known, 38);

	assert_int_equal(rnic_opcode_info(0x0b)->hdr_len, 12 + 16 + 4);	/* RC WRITE_ONLY_WITH_IMM */
	assert_int_equal(rnic_opcode_info(0x12)->hdr_len, 12 + 4 + 8);	/* atomic ACK */
	assert_int_equal(rnic_opcode_info(0x13)->hdr_len, 12 + 28);	/* CmpSwap */
	assert_int_equal(rnic_opcode_info(0x65)->hdr_len, 12 + 8 + 4);	/* UD SEND_ONLY_WITH_IMM */
	assert_int_equal(rnic_opcode_info(0x0c)->is_request, 1);
	assert_int_equal(rnic_opcode_info(0x10)->is_request, 0);

	assert_true(rnic_opcode_allowed(0x0c, RNIC_QPT_RC));	/* READ */
	assert_false(rnic_opcode_allowed(0x2c, RNIC_QPT_UC));	/* no READ on UC */
	assert_true(rnic_opcode_allowed(0x2a, RNIC_QPT_UC));	/* UC WRITE_ONLY */
	assert_false(rnic_opcode_allowed(0x0a, RNIC_QPT_UC));	/* an RC opcode on UC */
	assert_true(rnic_opcode_allowed(0x64, RNIC_QPT_UD));
	assert_false(rnic_opcode_allowed(0x6a, RNIC_QPT_UD));	/* no WRITE on UD */
	assert_false(rnic_opcode_allowed(0x17, RNIC_QPT_UD));
}

static void
roundtrip(uint8_t opcode, uint8_t ipv, int vlan, uint32_t len)
{
	static uint8_t frame[8192];
	struct rnic_pkt_desc in, out;
	int n;

	fill_desc(&in, opcode, ipv, vlan, len);
	n = rnic_pkt_build(&in, frame, sizeof(frame));
	assert_int_equal(n, (int)rnic_pkt_frame_len(&in));
	assert_int_equal((n - (vlan ? 18 : 14)) % 4, 0);	/* IP datagram: 4-byte multiple thanks to the pad */
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(rnic_pkt_parse(frame, (uint32_t)n, &out, 1), RNIC_DROP_NONE);
	assert_desc_equal(&in, &out);
	assert_ptr_equal(out.payload, frame + out.payload_off);
}

static void
test_roundtrip_every_opcode(void **state)
{
	static const uint32_t lengths[] = { 0, 1, 2, 3, 4, 5, 6, 7, 255, 1024, 4095, 4096 };
	unsigned int frames = 0;

	(void)state;
	for (unsigned int op = 0; op < 256; op++) {
		const struct rnic_opcode_info *info = rnic_opcode_info((uint8_t)op);

		if (info->name == NULL)
			continue;
		for (uint8_t ipv = 4; ipv <= 6; ipv += 2)
			for (int vlan = 0; vlan <= 1; vlan++) {
				if (!(info->hdrs & RNIC_HDR_PAYLOAD)) {
					roundtrip((uint8_t)op, ipv, vlan, 0);
					frames++;
					continue;
				}
				for (unsigned int i = 0; i < RTE_DIM(lengths); i++, frames++)
					roundtrip((uint8_t)op, ipv, vlan, lengths[i]);
			}
	}
	assert_true(frames > 38 * 4);
}

static void
test_build_errors(void **state)
{
	uint8_t frame[256];
	struct rnic_pkt_desc d;

	(void)state;
	fill_desc(&d, 0x11, 4, 0, 4);	/* an ACK cannot carry a payload */
	assert_int_equal(rnic_pkt_build(&d, frame, sizeof(frame)), -EINVAL);
	fill_desc(&d, 0x15, 4, 0, 0);	/* reserved opcode */
	assert_int_equal(rnic_pkt_build(&d, frame, sizeof(frame)), -EINVAL);
	fill_desc(&d, 0x04, 5, 0, 0);	/* no IPv5 */
	assert_int_equal(rnic_pkt_build(&d, frame, sizeof(frame)), -EINVAL);
	fill_desc(&d, 0x04, 4, 0, 200);
	assert_int_equal(rnic_pkt_build(&d, frame, 100), -ENOSPC);
	d.payload = NULL;
	assert_int_equal(rnic_pkt_build(&d, frame, sizeof(frame)), -EINVAL);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Drop reasons: each case damages one thing and repairs everything else (IP checksum, ICRC), so the      */
/* drop can only be for the reason under test.                                                           */

struct damaged {
	uint8_t f[512];
	uint32_t len;
	uint32_t l3;		/* offset of the IP header */
};

static void
make_frame(struct damaged *x, uint8_t opcode, uint8_t ipv, uint32_t payload_len)
{
	struct rnic_pkt_desc d;
	int n;

	fill_desc(&d, opcode, ipv, 0, payload_len);
	n = rnic_pkt_build(&d, x->f, sizeof(x->f));
	assert_true(n > 0);
	x->len = (uint32_t)n;
	x->l3 = RTE_ETHER_HDR_LEN;
}

static void
repair(struct damaged *x)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(x->f + x->l3);
	uint32_t icrc;

	if ((x->f[x->l3] >> 4) == 4 && (x->f[x->l3] & 0xf) >= 5) {
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	icrc = rte_cpu_to_le_32(rnic_icrc_compute(x->f, x->l3, x->len));
	memcpy(x->f + x->len - 4, &icrc, 4);
}

static enum rnic_drop_reason
parse_damaged(const struct damaged *x)
{
	struct rnic_pkt_desc d;

	return rnic_pkt_parse(x->f, x->len, &d, 1);
}

static void
set_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
test_drop_truncated(void **state)
{
	struct damaged x;
	struct rnic_pkt_desc d;

	(void)state;
	make_frame(&x, 0x04, 4, 64);
	assert_int_equal(rnic_pkt_parse(x.f, 10, &d, 1), RNIC_DROP_TRUNCATED);	/* inside Ethernet */
	assert_int_equal(rnic_pkt_parse(x.f, 30, &d, 1), RNIC_DROP_TRUNCATED);	/* inside IPv4 */
	assert_int_equal(rnic_pkt_parse(x.f, x.len - 1, &d, 1), RNIC_DROP_TRUNCATED);	/* IP total > frame */
	make_frame(&x, 0x04, 6, 64);
	assert_int_equal(rnic_pkt_parse(x.f, 50, &d, 1), RNIC_DROP_TRUNCATED);	/* inside IPv6 */
	/* Consistent lengths, but too short for the RETH the opcode announces. */
	make_frame(&x, 0x11, 4, 0);			/* ACK: BTH + AETH */
	x.f[x.l3 + 28] = 0x0a;				/* now RDMA WRITE ONLY: needs a RETH */
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_TRUNCATED);
}

static void
test_drop_not_ip(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	set_be16(x.f + 12, 0x0806);	/* ARP */
	assert_int_equal(parse_damaged(&x), RNIC_DROP_NOT_IP);
}

static void
test_drop_bad_ip_version(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	set_be16(x.f + 12, 0x86dd);	/* says IPv6, carries IPv4: padded to IPv6 header size */
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_IP_VERSION);
	make_frame(&x, 0x04, 4, 8);
	x.f[x.l3] = 0x55;		/* version 5 after an IPv4 EtherType */
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_IP_VERSION);
}

static void
test_drop_bad_ip_header(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	x.f[x.l3] = 0x44;		/* IHL 4: shorter than an IPv4 header */
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_IP_HEADER);
	make_frame(&x, 0x04, 4, 8);
	set_be16(x.f + x.l3 + 2, 12);	/* total length below the header length */
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_IP_HEADER);
}

static void
test_drop_bad_ip_csum(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	x.f[x.l3 + 8] ^= 1;		/* TTL: masked out of the ICRC, so only the IP checksum catches it */
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_IP_CSUM);
}

/* Lengthen x's IPv4 header by opt_len bytes of options (NOPs), checksum and ICRC repaired. */
static void
add_ipv4_options(struct damaged *x, uint32_t opt_len)
{
	uint8_t *ip = x->f + x->l3;
	uint32_t ihl = (ip[0] & 0xfu) * 4;

	memmove(ip + ihl + opt_len, ip + ihl, x->len - x->l3 - ihl);
	memset(ip + ihl, 1, opt_len);
	ip[0] = (uint8_t)(0x40 | (ihl + opt_len) / 4);
	set_be16(ip + 2, (uint16_t)((ip[2] << 8 | ip[3]) + opt_len));
	x->len += opt_len;
	repair(x);
}

/* The header checksum with and without options, addresses whose sum carries many times: accepted when
 * right, and a flip of any bit the checks before it do not read (all but version, IHL and total length)
 * is caught as a bad checksum. */
static void
test_ip_csum_every_bit(void **state)
{
	static const uint32_t opt_lens[] = { 0, 4, 40 };
	struct rnic_pkt_desc d;
	struct damaged x;

	(void)state;
	for (size_t k = 0; k < RTE_DIM(opt_lens); k++) {
		make_frame(&x, 0x04, 4, 8);
		memset(x.f + x.l3 + 12, 0xff, 7);	/* source and most of the destination: carries */
		add_ipv4_options(&x, opt_lens[k]);
		assert_int_equal(parse_damaged(&x), RNIC_DROP_NONE);
		for (uint32_t i = 1; i < 20 + opt_lens[k]; i++) {
			if (i == 2 || i == 3)
				continue;
			for (uint32_t bit = 0; bit < 8; bit++) {
				x.f[x.l3 + i] ^= (uint8_t)(1u << bit);
				assert_int_equal(rnic_pkt_parse(x.f, x.len, &d, 0), RNIC_DROP_BAD_IP_CSUM);
				x.f[x.l3 + i] ^= (uint8_t)(1u << bit);
			}
		}
		assert_int_equal(parse_damaged(&x), RNIC_DROP_NONE);
	}
}

static void
test_drop_ip_fragment(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	set_be16(x.f + x.l3 + 6, RTE_IPV4_HDR_MF_FLAG);
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_IP_FRAGMENT);
	make_frame(&x, 0x04, 6, 8);
	x.f[x.l3 + 6] = 44;		/* IPv6 fragment header */
	assert_int_equal(parse_damaged(&x), RNIC_DROP_IP_FRAGMENT);
}

static void
test_drop_not_udp(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	x.f[x.l3 + 9] = 6;		/* TCP */
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_NOT_UDP);
	make_frame(&x, 0x04, 6, 8);
	x.f[x.l3 + 6] = 6;
	assert_int_equal(parse_damaged(&x), RNIC_DROP_NOT_UDP);
}

static void
test_drop_wrong_udp_port(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	set_be16(x.f + x.l3 + 20 + 2, 4792);
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_WRONG_UDP_PORT);
}

static void
test_drop_bad_udp_length(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	set_be16(x.f + x.l3 + 20 + 4, (uint16_t)(x.len - x.l3 - 20 - 4));
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_UDP_LENGTH);
}

static void
test_drop_bad_version(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 4, 8);
	x.f[x.l3 + 28 + 1] |= 1;	/* TVer 1 */
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_VERSION);
}

static void
test_drop_unknown_opcode(void **state)
{
	static const uint8_t reserved[] = { 0x15, 0x18, 0x1f, 0x2c, 0x2f, 0x60, 0x66, 0x80, 0x9f };
	struct damaged x;

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(reserved); i++) {
		make_frame(&x, 0x11, 4, 0);
		x.f[x.l3 + 28] = reserved[i];
		repair(&x);
		assert_int_equal(parse_damaged(&x), RNIC_DROP_UNKNOWN_OPCODE);
	}
}

static void
test_drop_opcode_transport(void **state)
{
	static const uint8_t foreign[] = { 0x40, 0x4a, 0x5f, 0xa0, 0xb4, 0xc0, 0xff };	/* RD, XRC, vendor */
	struct damaged x;

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(foreign); i++) {
		make_frame(&x, 0x11, 4, 0);
		x.f[x.l3 + 28] = foreign[i];
		repair(&x);
		assert_int_equal(parse_damaged(&x), RNIC_DROP_OPCODE_TRANSPORT);
	}
}

static void
test_drop_bad_pad(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x11, 4, 0);	/* ACK: no payload, so no pad */
	x.f[x.l3 + 28 + 1] |= 1 << 4;
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_PAD);
	make_frame(&x, 0x04, 4, 0);	/* SEND with no payload cannot pad 3 bytes */
	x.f[x.l3 + 28 + 1] |= 3 << 4;
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_PAD);
}

static void
test_drop_bad_length(void **state)
{
	struct damaged x;

	(void)state;
	/* An ACK with 4 bytes of payload: every length field agrees, but ACKs carry none. */
	make_frame(&x, 0x04, 4, 8);	/* SEND ONLY with 8 payload bytes */
	x.f[x.l3 + 28] = 0x11;		/* BTH(12) + 8 = an ACK's BTH(12) + AETH(4) + 4 extra bytes */
	x.f[x.l3 + 28 + 1] &= 0xcf;
	repair(&x);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_LENGTH);
}

static void
test_drop_bad_icrc(void **state)
{
	struct damaged x;

	(void)state;
	make_frame(&x, 0x04, 6, 64);
	x.f[x.len - 10] ^= 0x01;	/* one payload bit */
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_ICRC);
	/* The same frame with the ICRC check off parses: only the ICRC saw it. */
	struct rnic_pkt_desc d;

	assert_int_equal(rnic_pkt_parse(x.f, x.len, &d, 0), RNIC_DROP_NONE);
	make_frame(&x, 0x04, 4, 64);
	x.f[x.len - 1] ^= 0x80;		/* the ICRC itself */
	assert_int_equal(parse_damaged(&x), RNIC_DROP_BAD_ICRC);
	/* Masked fields may change in flight without touching the ICRC (IPv4 TTL, repaired checksum). */
	make_frame(&x, 0x04, 4, 64);
	x.f[x.l3 + 8] = 3;
	x.f[x.l3 + 1] = 0x03;		/* ECN CE */
	x.f[x.l3 + 28 + 4] = 0x80;	/* FECN */
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(x.f + x.l3);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	assert_int_equal(parse_damaged(&x), RNIC_DROP_NONE);
}

/* PSN arithmetic wraps at 2^24 (IBA 9.7.1): distances are signed across the wrap, sums stay 24-bit. */
static void
test_psn_arithmetic(void **state)
{
	(void)state;
	assert_int_equal(rnic_psn_diff(5, 3), 2);
	assert_int_equal(rnic_psn_diff(3, 5), -2);
	assert_int_equal(rnic_psn_diff(0, RNIC_PSN_MASK), 1);
	assert_int_equal(rnic_psn_diff(RNIC_PSN_MASK, 0), -1);
	assert_int_equal(rnic_psn_diff(0x7fffff, 0), 0x7fffff);
	assert_int_equal(rnic_psn_diff(0x800000, 0), -0x800000);
	assert_int_equal(rnic_psn_add(RNIC_PSN_MASK, 2), 1);
	assert_int_equal(rnic_psn_add(10, 0x1000000), 10);
	assert_int_equal(rnic_psn_prev(0), RNIC_PSN_MASK);
	assert_int_equal(rnic_psn_prev(7), 6);
}

/* The AETH syndrome classes (IBA 9.7.5.1, table 43). */
static void
test_aeth_syndromes(void **state)
{
	(void)state;
	assert_true(RNIC_AETH_IS_ACK(RNIC_AETH_ACK));
	assert_false(RNIC_AETH_IS_RNR(RNIC_AETH_ACK));
	assert_true(RNIC_AETH_IS_RNR(RNIC_AETH_RNR(14)));
	assert_int_equal(RNIC_AETH_VALUE(RNIC_AETH_RNR(14)), 14);
	assert_int_equal(RNIC_AETH_RNR(0x3f), RNIC_AETH_RNR(0x1f));
	for (unsigned int s = RNIC_AETH_NAK_PSN_SEQ; s <= RNIC_AETH_NAK_REMOTE_OP; s++)
		assert_true(!RNIC_AETH_IS_ACK(s) && !RNIC_AETH_IS_RNR(s) && (s >> 5) == 3);
	assert_int_equal(RNIC_AETH_VALUE(RNIC_AETH_NAK_REMOTE_ACCESS), 2);
}

static void
test_drop_reason_names(void **state)
{
	(void)state;
	for (int r = 0; r < RNIC_DROP_REASON_MAX; r++) {
		assert_non_null(rnic_drop_reason_str(r));
		assert_string_not_equal(rnic_drop_reason_str(r), "unknown");
	}
	assert_string_equal(rnic_drop_reason_str(RNIC_DROP_BAD_ICRC), "bad_icrc");
	assert_string_equal(rnic_drop_reason_str(RNIC_DROP_REASON_MAX), "unknown");
}

/* ------------------------------------------------------------------------------------------------------ */
/* Real frames                                                                                              */

static int
is_rocev2(const uint8_t *f, uint32_t len)
{
	uint32_t l3 = 14, l4;

	if (len < 14 + 20 + 8)
		return 0;
	if (f[12] == 0x08 && f[13] == 0x00 && f[l3 + 9] == 17)
		l4 = l3 + (f[l3] & 0xfu) * 4;
	else if (f[12] == 0x86 && f[13] == 0xdd && len > 14 + 48 && f[l3 + 6] == 17)
		l4 = l3 + 40;
	else
		return 0;
	return f[l4 + 2] == 0x12 && f[l4 + 3] == 0xb7;
}

/* Expected opcode counts, read from the oracle's summary: its tshark section lists "count opcode name". */
static void
golden_counts(unsigned int counts[256])
{
	char path[512], line[256];
	int in_section = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/softroce-golden.txt", oracles_dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned int count, op;

		if (strncmp(line, "tshark", 6) == 0)
			in_section = 1;
		else if (in_section && sscanf(line, " %u %u", &count, &op) == 2 && op < 256)
			counts[op] += count;
	}
	fclose(f);
}

static void
test_golden_softroce_frames(void **state)
{
	unsigned int expect[256] = { 0 }, got[256] = { 0 }, roce = 0, flipped = 0;
	struct rnic_frames pf;
	char err[PCAP_ERRBUF_SIZE];
	char path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/softroce-golden.pcap", oracles_dir);
	assert_int_equal(rnic_frames_read(path, &pf, err), 0);
	golden_counts(expect);
	for (uint32_t i = 0; i < pf.count; i++) {
		struct rnic_pkt_desc d;
		enum rnic_drop_reason why = rnic_pkt_parse(pf.data[i], pf.len[i], &d, 1);

		if (!is_rocev2(pf.data[i], pf.len[i])) {
			assert_int_not_equal(why, RNIC_DROP_NONE);	/* TCP, ARP... are not RoCE */
			continue;
		}
		roce++;
		if (why != RNIC_DROP_NONE)
			fail_msg("golden frame %u: dropped as %s", i + 1, rnic_drop_reason_str(why));
		got[d.opcode]++;
		/* One flipped payload bit must turn every frame with a payload into a bad-ICRC drop. */
		if (d.payload_len != 0) {
			pf.data[i][d.payload_off] ^= 0x40;
			assert_int_equal(rnic_pkt_parse(pf.data[i], pf.len[i], &d, 1), RNIC_DROP_BAD_ICRC);
			flipped++;
		}
	}
	assert_int_equal(roce, 164);
	assert_true(flipped > 50);
	for (unsigned int op = 0; op < 256; op++)
		if (expect[op] != got[op])
			fail_msg("opcode %u: the summary counts %u frames, softrnic decoded %u", op, expect[op],
				 got[op]);
	rnic_frames_free(&pf);
}

static void
test_connectx_cnp_frame(void **state)
{
	struct rnic_frames pf;
	char err[PCAP_ERRBUF_SIZE];
	struct rnic_pkt_desc d;
	char path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/connectx4lx_cnp.pcap", oracles_dir);
	assert_int_equal(rnic_frames_read(path, &pf, err), 0);
	assert_int_equal(pf.count, 1);
	assert_int_equal(rnic_pkt_parse(pf.data[0], pf.len[0], &d, 1), RNIC_DROP_NONE);
	assert_int_equal(d.opcode, RNIC_OP_CNP);
	assert_int_equal(d.ip_version, 4);
	assert_int_equal(d.udp_sport, 0);
	assert_int_equal(d.payload_len, 0);
	assert_int_equal(d.sgid.raw[12], 10);
	assert_int_equal(d.sgid.raw[14], 17);
	pf.data[0][pf.len[0] - 5] ^= 1;		/* last reserved byte */
	assert_int_equal(rnic_pkt_parse(pf.data[0], pf.len[0], &d, 1), RNIC_DROP_BAD_ICRC);
	rnic_frames_free(&pf);
}

/* The CNP softrnic sends (rnic_cnp_fill) is the ConnectX's, byte for byte, ICRC included, given the same
 * addresses, ports, IP ID and the traffic class of CNPs (DSCP 48, ECT(0)). */
static void
test_cnp_as_connectx(void **state)
{
	struct rnic_pkt_desc cx, d;
	struct rnic_frames pf;
	char err[PCAP_ERRBUF_SIZE];
	uint8_t frame[128];
	char path[512];
	int len;

	(void)state;
	snprintf(path, sizeof(path), "%s/connectx4lx_cnp.pcap", oracles_dir);
	assert_int_equal(rnic_frames_read(path, &pf, err), 0);
	assert_int_equal(rnic_pkt_parse(pf.data[0], pf.len[0], &cx, 1), RNIC_DROP_NONE);
	memset(&d, 0, sizeof(d));
	d.dst_mac = cx.dst_mac;
	d.src_mac = cx.src_mac;
	d.ip_version = cx.ip_version;
	d.sgid = cx.sgid;
	d.dgid = cx.dgid;
	d.hop_limit = cx.hop_limit;
	d.ip_id = cx.ip_id;
	d.udp_sport = cx.udp_sport;
	rnic_cnp_fill(&d, 48 << 2 | RNIC_ECN_ECT0, cx.dqpn);
	len = rnic_pkt_build(&d, frame, sizeof(frame));
	assert_int_equal(len, (int)pf.len[0]);
	assert_memory_equal(frame, pf.data[0], (size_t)len);
	rnic_frames_free(&pf);
}

/* ------------------------------------------------------------------------------------------------------ */
/* mbufs                                                                                                    */

static void
test_mbuf_build_and_chained_parse(void **state)
{
	struct rnic_pkt_desc in, out;
	struct rte_mbuf *m, *seg[3];
	uint32_t len, cut[3];

	(void)state;
	fill_desc(&in, 0x0a, 6, 1, 3001);	/* WRITE ONLY, IPv6, VLAN, pad 3 */
	m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	assert_int_equal(rnic_pkt_build_mbuf(&in, m), (int)rnic_pkt_frame_len(&in));
	assert_int_equal(rnic_pkt_parse_mbuf(m, &out, 1), RNIC_DROP_NONE);
	assert_desc_equal(&in, &out);
	len = m->pkt_len;

	/* The same frame as three segments: headers + 100 bytes, 2000 bytes, the rest (with pad and ICRC). */
	cut[0] = 18 + 40 + 8 + 28 + 100;
	cut[1] = 2000;
	cut[2] = len - cut[0] - cut[1];
	for (int i = 0, off = 0; i < 3; off += (int)cut[i], i++) {
		seg[i] = rte_pktmbuf_alloc(pool);
		assert_non_null(seg[i]);
		memcpy(rte_pktmbuf_append(seg[i], (uint16_t)cut[i]), rte_pktmbuf_mtod_offset(m, uint8_t *, off),
		       cut[i]);
		if (i > 0)
			assert_int_equal(rte_pktmbuf_chain(seg[0], seg[i]), 0);
	}
	memset(&out, 0, sizeof(out));
	assert_int_equal(rnic_pkt_parse_mbuf(seg[0], &out, 1), RNIC_DROP_NONE);
	assert_int_equal(out.payload_len, 3001);
	assert_null(out.payload);
	assert_int_equal(out.reth.rkey, in.reth.rkey);
	/* A flipped byte in the middle segment is caught across segments. */
	rte_pktmbuf_mtod(seg[1], uint8_t *)[1000] ^= 0x10;
	assert_int_equal(rnic_pkt_parse_mbuf(seg[0], &out, 1), RNIC_DROP_BAD_ICRC);
	/* Headers that do not fit the first segment are refused, not read past it. */
	rte_pktmbuf_free(seg[0]);
	seg[0] = rte_pktmbuf_alloc(pool);
	seg[1] = rte_pktmbuf_alloc(pool);
	memcpy(rte_pktmbuf_append(seg[0], 40), rte_pktmbuf_mtod(m, uint8_t *), 40);
	memcpy(rte_pktmbuf_append(seg[1], (uint16_t)(len - 40)), rte_pktmbuf_mtod_offset(m, uint8_t *, 40),
	       len - 40);
	assert_int_equal(rte_pktmbuf_chain(seg[0], seg[1]), 0);
	assert_int_equal(rnic_pkt_parse_mbuf(seg[0], &out, 1), RNIC_DROP_TRUNCATED);
	rte_pktmbuf_free(seg[0]);

	/* No room: the mbuf is left as it was. */
	rte_pktmbuf_reset(m);
	fill_desc(&in, 0x04, 4, 0, 9300);	/* more than the 9216-byte data room */
	assert_int_equal(rnic_pkt_build_mbuf(&in, m), -ENOSPC);
	assert_int_equal(m->pkt_len, 0);
	rte_pktmbuf_free(m);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_roundtrip_every_opcode),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_drop_truncated),
		cmocka_unit_test(test_drop_not_ip),
		cmocka_unit_test(test_drop_bad_ip_version),
		cmocka_unit_test(test_drop_bad_ip_header),
		cmocka_unit_test(test_drop_bad_ip_csum),
		cmocka_unit_test(test_ip_csum_every_bit),
		cmocka_unit_test(test_drop_ip_fragment),
		cmocka_unit_test(test_drop_not_udp),
		cmocka_unit_test(test_drop_wrong_udp_port),
		cmocka_unit_test(test_drop_bad_udp_length),
		cmocka_unit_test(test_drop_bad_version),
		cmocka_unit_test(test_drop_unknown_opcode),
		cmocka_unit_test(test_drop_opcode_transport),
		cmocka_unit_test(test_drop_bad_pad),
		cmocka_unit_test(test_drop_bad_length),
		cmocka_unit_test(test_drop_bad_icrc),
		cmocka_unit_test(test_drop_reason_names),
		cmocka_unit_test(test_psn_arithmetic),
		cmocka_unit_test(test_aeth_syndromes),
		cmocka_unit_test(test_golden_softroce_frames),
		cmocka_unit_test(test_connectx_cnp_frame),
		cmocka_unit_test(test_cnp_as_connectx),
		cmocka_unit_test(test_mbuf_build_and_chained_parse),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: test_wire ORACLES_DIR [EAL args]\n");
		return 2;
	}
	oracles_dir = argv[1];
	argv[1] = argv[0];
	if (rte_eal_init(argc - 1, argv + 1) < 0)
		return 2;
	pool = rte_pktmbuf_pool_create("wire_test", 64, 0, 0, 9216 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
	if (pool == NULL)
		return 2;
	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
