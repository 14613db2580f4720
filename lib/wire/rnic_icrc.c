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
#include <rte_vect.h>
#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "rnic_wire.h"

/* The longest header run that is masked: IPv6 (40) + UDP (8) + BTH (12). */
#define MASKED_HDR_MAX (sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr) + RNIC_BTH_LEN)

/* CRC-32 state after the 8 bytes of 0xff that replace the LRH (zlib.crc32(b"\xff" * 8)). */
#define ICRC_SEED 0x2144df1cu

/*
 * Frames of common headers (IPv4 without options, IPv6) with at most this many bytes from the IP header to
 * the ICRC are checksummed in one call over a copy made 16 bytes at a time, the masked fields set by OR
 * (each masked field becomes all ones, whatever it held). Copying with full-width stores matters: the CRC
 * reads the copy right away, and a copy patched byte by byte makes most of those reads miss store
 * forwarding (a 138-byte frame: 91 -> 76 cycles, most frames of small messages).
 */
#define ICRC_VEC_MAX 256

typedef uint8_t icrc_vec __attribute__((vector_size(16)));

/* The variant fields of IP + UDP + BTH as ones, by offset from the IP header (IBA A17.8.3). */
static const uint8_t mask_ipv4[ICRC_VEC_MAX] = {
	[1] = 0xff, [8] = 0xff, [10] = 0xff, [11] = 0xff,	/* TOS, TTL, header checksum */
	[26] = 0xff, [27] = 0xff,				/* UDP checksum */
	[32] = 0xff,						/* BTH resv8a */
};
static const uint8_t mask_ipv6[ICRC_VEC_MAX] = {
	[0] = 0x0f, [1] = 0xff, [2] = 0xff, [3] = 0xff, [7] = 0xff,	/* traffic class, flow label, hops */
	[46] = 0xff, [47] = 0xff,				/* UDP checksum */
	[52] = 0xff,						/* BTH resv8a */
};

/* The ICRC of n (16 .. ICRC_VEC_MAX) bytes from the IP header, with these masks. */
static uint32_t
icrc_vec_compute(const uint8_t *hdr, uint32_t n, const uint8_t *mask)
{
	icrc_vec buf[ICRC_VEC_MAX / 16], x, m;
	uint32_t i;

	for (i = 0; i < n / 16; i++) {
		memcpy(&x, hdr + 16 * i, sizeof(x));
		memcpy(&m, mask + 16 * i, sizeof(m));
		buf[i] = x | m;
	}
	if (n % 16 != 0) {
		/* The last 16 bytes (n >= 16: never a byte past the frame), shifted down into place: byte k
		 * of the shuffle takes byte k + shift, and an index with the top bit set gives zero. */
		static const int8_t shift_down[32] = {
			0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
			-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		};
		__m128i sel = _mm_loadu_si128((const __m128i *)(const void *)(shift_down + 16 - n % 16));

		memcpy(&x, hdr + n - 16, sizeof(x));
		memcpy(&m, mask + 16 * i, sizeof(m));
		buf[i] = (icrc_vec)_mm_shuffle_epi8((__m128i)x, sel) | m;
	}
	return crc32_gzip_refl(ICRC_SEED, (const uint8_t *)buf, n);
}

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
	uint8_t masked[MASKED_HDR_MAX + 40];	/* IPv4 options may lengthen the IP header by 40 bytes */
	const uint8_t *hdr = frame + l3_off;
	uint32_t hdr_len, n = len - RNIC_ICRC_LEN - l3_off;

	if (n <= ICRC_VEC_MAX && hdr[0] == 0x45)
		return icrc_vec_compute(hdr, n, mask_ipv4);
	if (n <= ICRC_VEC_MAX && (hdr[0] >> 4) == 6)
		return icrc_vec_compute(hdr, n, mask_ipv6);
	hdr_len = mask_headers(hdr, masked);
	return crc32_gzip_refl(crc32_gzip_refl(ICRC_SEED, masked, hdr_len), hdr + hdr_len, n - hdr_len);
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
