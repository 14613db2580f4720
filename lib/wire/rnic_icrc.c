/* SPDX-License-Identifier: BSD-3-Clause
 * RoCEv2 invariant CRC (IBA annex A17.8): CRC-32 (Ethernet polynomial, reflected, as zlib) over 64 bits of
 * ones standing in for the InfiniBand LRH, the IP/UDP/BTH headers with their variant fields masked to ones,
 * and the rest of the packet up to the ICRC.
 *
 * ISA-L's crc32_gzip_refl does the CRC (PCLMULQDQ folding, dispatched at run time). Unlike DPDK 22.11's
 * rte_net_crc_calc it continues a CRC across calls, so the masked headers are a small copy and the payload
 * is checksummed where it lies, across mbuf segments too (doc/crc.md has the measurements).
 */
#include <string.h>

#include <isa-l/crc.h>
#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "rnic_wire.h"

/* The longest header run that is masked: IPv6 (40) + UDP (8) + BTH (12). */
#define MASKED_HDR_MAX (sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr) + RNIC_BTH_LEN)

/* CRC-32 state after the 8 bytes of 0xff that replace the LRH (zlib.crc32(b"\xff" * 8)). */
#define ICRC_SEED 0x2144df1cu

/* Frames whose bytes after the masked headers are at most this many are checksummed in one call, copied
 * behind the masked headers: a CRC call costs about as much as copying 100 bytes, and a 64-byte message's
 * frames (ACKs, requests) have fewer than that. */
#define ICRC_ONE_CALL_MAX 192

/*
 * Copy IP + UDP + BTH (hdr points at the IP header) with the variant fields set to ones, and return the
 * length copied; 0 if the IP version is neither 4 nor 6.
 */
static uint32_t
mask_headers(const uint8_t *hdr, uint8_t *out)
{
	uint32_t ip_len;

	if ((hdr[0] >> 4) == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)out;

		ip_len = (uint32_t)(hdr[0] & 0xf) * 4;
		memcpy(out, hdr, ip_len + sizeof(struct rte_udp_hdr) + RNIC_BTH_LEN);
		ip->type_of_service = 0xff;
		ip->time_to_live = 0xff;
		ip->hdr_checksum = 0xffff;
	} else if ((hdr[0] >> 4) == 6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)out;

		ip_len = sizeof(*ip);
		memcpy(out, hdr, ip_len + sizeof(struct rte_udp_hdr) + RNIC_BTH_LEN);
		/* version stays; traffic class and flow label become ones */
		ip->vtc_flow = rte_cpu_to_be_32(0x6fffffff);
		ip->hop_limits = 0xff;
	} else {
		return 0;
	}
	((struct rte_udp_hdr *)(out + ip_len))->dgram_cksum = 0xffff;
	out[ip_len + sizeof(struct rte_udp_hdr) + 4] = 0xff;	/* BTH resv8a (FECN, BECN, reserved) */
	return ip_len + sizeof(struct rte_udp_hdr) + RNIC_BTH_LEN;
}

uint32_t
rnic_icrc_compute(const uint8_t *frame, uint32_t l3_off, uint32_t len)
{
	/* IPv4 options may lengthen the IP header by 40 bytes */
	uint8_t masked[MASKED_HDR_MAX + 40 + ICRC_ONE_CALL_MAX];
	uint32_t hdr_len, rest;

	hdr_len = mask_headers(frame + l3_off, masked);
	rest = len - RNIC_ICRC_LEN - l3_off - hdr_len;
	if (rest <= ICRC_ONE_CALL_MAX) {
		memcpy(masked + hdr_len, frame + l3_off + hdr_len, rest);
		return crc32_gzip_refl(ICRC_SEED, masked, hdr_len + rest);
	}
	return crc32_gzip_refl(crc32_gzip_refl(ICRC_SEED, masked, hdr_len), frame + l3_off + hdr_len, rest);
}

uint32_t
rnic_icrc_compute_mbuf(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len)
{
	uint8_t masked[MASKED_HDR_MAX + 40];
	uint32_t hdr_len, crc, skip, remaining;

	/* The parser calls this only once it knows the headers sit in the first segment. */
	hdr_len = mask_headers(rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off), masked);
	crc = crc32_gzip_refl(ICRC_SEED, masked, hdr_len);
	skip = l3_off + hdr_len;
	remaining = len - RNIC_ICRC_LEN - skip;
	for (const struct rte_mbuf *seg = m; seg != NULL && remaining != 0; seg = seg->next) {
		uint32_t n;

		if (skip >= seg->data_len) {
			skip -= seg->data_len;
			continue;
		}
		n = RTE_MIN((uint32_t)seg->data_len - skip, remaining);
		crc = crc32_gzip_refl(crc, rte_pktmbuf_mtod_offset(seg, const uint8_t *, skip), n);
		remaining -= n;
		skip = 0;
	}
	return crc;
}
