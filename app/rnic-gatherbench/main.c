/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-gatherbench: the two ways the DataPack stage can put a payload into a frame, measured in one run.
 *   copy      the payload copied into the frame's mbuf behind the headers, ICRC over one buffer (what the
 *             requester does)
 *   extbuf    zero copy: a header mbuf, the payload attached as an external buffer
 *             (rte_pktmbuf_attach_extbuf over the registered memory), a tail mbuf for pad and ICRC, and the
 *             ICRC computed over the chain
 * Prints one JSON line per (method, payload size): cycles per frame and the ratio to copy.
 *   rnic-gatherbench [EAL args]      e.g. rnic-gatherbench --no-huge -m 256 --no-pci --no-shconf -l 0
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>

#include "rnic_version.h"
#include "rnic_wire.h"

#define ITERATIONS 100000
#define MAX_PAYLOAD 4096

static uint8_t payload[MAX_PAYLOAD] __rte_cache_aligned;

static void
no_free(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;	/* registered memory belongs to the application */
}

static void
fill_desc(struct rnic_pkt_desc *d, uint32_t len)
{
	memset(d, 0, sizeof(*d));
	d->ip_version = 4;
	d->sgid.raw[10] = d->sgid.raw[11] = d->dgid.raw[10] = d->dgid.raw[11] = 0xff;
	d->hop_limit = 64;
	d->opcode = RNIC_TRANSPORT_RC | RNIC_OP_RDMA_WRITE_MIDDLE;
	d->pkey = 0xffff;
	d->dqpn = 0x12;
	d->payload_len = len;
}

/* Gather by copy: the requester's way. */
static uint64_t
frame_by_copy(struct rte_mempool *mp, uint32_t len)
{
	struct rnic_pkt_desc d;
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint32_t frame_len;
	uint8_t *frame, *dst;
	uint64_t sum;

	fill_desc(&d, len);
	frame_len = rnic_pkt_frame_len(&d);
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)frame_len);
	dst = frame + frame_len - RNIC_ICRC_LEN - ((4 - (len & 3)) & 3) - len;
	memcpy(dst, payload, len);
	d.payload = dst;
	rnic_pkt_build(&d, frame, frame_len);
	sum = frame[frame_len - 1];
	rte_pktmbuf_free(m);
	return sum;
}

/* Zero copy: headers, the payload attached in place, pad + ICRC in a tail segment. */
static uint64_t
frame_by_extbuf(struct rte_mempool *mp, struct rte_mbuf_ext_shared_info *shinfo, uint32_t len)
{
	struct rnic_pkt_desc d;
	struct rte_mbuf *hdr = rte_pktmbuf_alloc(mp), *data = rte_pktmbuf_alloc(mp), *tail = rte_pktmbuf_alloc(mp);
	uint32_t frame_len, hdr_len, pad = (4 - (len & 3)) & 3, icrc;
	uint8_t *frame;
	uint64_t sum;

	fill_desc(&d, len);
	frame_len = rnic_pkt_frame_len(&d);
	hdr_len = frame_len - len - pad - RNIC_ICRC_LEN;
	/* The builder writes the whole frame; here only its header bytes are kept (the same work as a
	 * headers-only builder would do, the payload bytes aside). */
	frame = (uint8_t *)rte_pktmbuf_append(hdr, (uint16_t)hdr_len);
	d.payload = payload;
	d.payload_len = 0;
	rnic_pkt_build(&d, frame, hdr_len + RNIC_ICRC_LEN);
	rte_mbuf_ext_refcnt_update(shinfo, 1);
	rte_pktmbuf_attach_extbuf(data, payload, (rte_iova_t)(uintptr_t)payload, (uint16_t)len, shinfo);
	data->data_len = (uint16_t)len;
	data->pkt_len = len;
	memset(rte_pktmbuf_append(tail, (uint16_t)(pad + RNIC_ICRC_LEN)), 0, pad + RNIC_ICRC_LEN);
	rte_pktmbuf_chain(hdr, data);
	rte_pktmbuf_chain(hdr, tail);
	icrc = rnic_icrc_compute_mbuf(hdr, RTE_ETHER_HDR_LEN, frame_len);
	memcpy(rte_pktmbuf_mtod_offset(tail, uint8_t *, pad), &icrc, sizeof(icrc));
	sum = icrc;
	rte_pktmbuf_free(hdr);
	return sum;
}

int
main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 256, 1024, 4096 };
	struct rte_mbuf_ext_shared_info shinfo = { .free_cb = no_free };
	struct rte_mempool *mp;
	volatile uint64_t sink = 0;

	if (rnic_version_asked(argc, argv)) {
		rnic_print_version("rnic-gatherbench");
		return 0;
	}
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "rnic-gatherbench: EAL initialisation failed\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create("gather", 1023, 64, 0, RTE_PKTMBUF_HEADROOM + MAX_PAYLOAD + 256,
				     SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "rnic-gatherbench: no mbuf pool\n");
		return 1;
	}
	rte_mbuf_ext_refcnt_set(&shinfo, 1);
	for (uint32_t i = 0; i < MAX_PAYLOAD; i++)
		payload[i] = (uint8_t)i;
	for (unsigned int s = 0; s < RTE_DIM(sizes); s++) {
		uint64_t t0 = rte_rdtsc_precise(), copy, ext;

		for (int i = 0; i < ITERATIONS; i++)
			sink += frame_by_copy(mp, sizes[s]);
		copy = rte_rdtsc_precise() - t0;
		t0 = rte_rdtsc_precise();
		for (int i = 0; i < ITERATIONS; i++)
			sink += frame_by_extbuf(mp, &shinfo, sizes[s]);
		ext = rte_rdtsc_precise() - t0;
		printf("{\"method\": \"copy\", \"payload\": %u, \"cycles_per_frame\": %.1f, \"vs_copy\": 1.00}\n",
		       sizes[s], (double)copy / ITERATIONS);
		printf("{\"method\": \"extbuf\", \"payload\": %u, \"cycles_per_frame\": %.1f, \"vs_copy\": %.2f}\n",
		       sizes[s], (double)ext / ITERATIONS, (double)ext / (double)copy);
	}
	(void)sink;
	rte_eal_cleanup();
	return 0;
}
