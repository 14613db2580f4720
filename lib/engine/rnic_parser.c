/* SPDX-License-Identifier: BSD-3-Clause
 * Header parser stage (seed 003 HeaderParser, table 5.2): receive a burst from the port, validate every
 * frame (lengths, versions, opcode, pad, ICRC), count drops by reason, and classify: requests go to the
 * responder, responses (ACK/NAK, READ responses, atomic ACKs) to the completer.
 */
#include <rte_ethdev.h>

#include "rnic_neigh.h"
#include "rnic_parser.h"
#include "rnic_pipeline.h"

/* Polls after a frame for another shard during which the parser's budget looks at every shard's rings. */
#define PARSER_FOREIGN_POLLS 4096

/* Queue the frames for their shards' stage (another shard's: RSS, or the peer's shard, put it on this shard's
 * RX queue); what a full ring refuses is counted and freed. */
static void
route(struct rnic_pipeline *p, struct rte_mbuf **pkts, const uint32_t *qpn, unsigned int n, int requests)
{
	struct rnic_device *dev = p->dev;

	for (unsigned int i = 0; i < n; i++) {
		struct rnic_pipeline *s = rnic_shard_of(dev, qpn[i]);

		if (unlikely(s != p))
			p->foreign_polls = PARSER_FOREIGN_POLLS;

		if (rnic_edge_enqueue(requests ? s->request_ring : s->response_ring, &pkts[i], sizeof(pkts[i])) != 0) {
			RNIC_STATS(p, PARSER)->ring_full++;
			rte_pktmbuf_free(pkts[i]);
		}
	}
}

/*
 * The wire's share of a frame's latency (its TX stamp to now), then the RX stamp the next stage measures its
 * queue from. Only a frame from a device of this process (the loopback pair) carries a TX stamp of ours; a
 * PMD's RX mbuf holds whatever the field last held.
 */
static void
stamp_rx(struct rnic_pipeline *p, struct rte_mbuf *m, uint64_t now)
{
	uint64_t *tsc = rnic_mbuf_tsc(m);

	if (p->dev->loopback && *tsc != 0 && *tsc <= now && now - *tsc < rte_get_tsc_hz())
		rnic_lat_record(&p->lat[RNIC_LAT_WIRE].queued, now - *tsc, 1);
	*tsc = now;
}

/*
 * Frames come in cold: the sending lcore wrote the mbuf, the headers and (the last time the mbuf went round)
 * the descriptor, and a ring PMD hands over pointers without touching any of them. Every line a frame's parse
 * needs is fetched ahead: the mbufs and descriptors of the whole burst at once (rnic_prefetch_mbuf_desc),
 * the headers a few frames ahead (their address is in the mbuf).
 */
#define PARSER_PREFETCH_AHEAD 4

static inline void
prefetch_headers(struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

	rte_prefetch0(f);
	rte_prefetch0(f + RTE_CACHE_LINE_SIZE);
}

/*
 * A burst from the shard's RX queues (the numbers of its TX queues: the loopback pair delivers on them what
 * the peer's same shard sent), starting with the one the last call read second, the other for the rest of
 * the budget.
 * One queue a call halved what a parser took of each: with a ring per queue, the requests' queue of a
 * one-way flow was read every other call (rnic-perf's 64 B WRITE over 64 QPs, map one: 0.65 Mpps against
 * 2.5 with one ring behind both queues).
 */
static uint16_t
receive(struct rnic_pipeline *p, struct rte_mbuf **pkts, uint16_t budget)
{
	const struct rnic_device *dev = p->dev;
	uint16_t n = rte_eth_rx_burst(dev->port_id, rnic_device_port_queue(dev, p->shard, p->rx_queue), pkts,
				      budget);

	if (dev->shared_tx_queue)
		return n;
	p->rx_queue = (uint16_t)(p->rx_queue ^ 1);
	if (n < budget)
		n = (uint16_t)(n + rte_eth_rx_burst(dev->port_id, rnic_device_port_queue(dev, p->shard, p->rx_queue),
						    pkts + n, (uint16_t)(budget - n)));
	return n;
}

unsigned int
rnic_stage_parser(void *arg, unsigned int budget)
{
	struct rnic_pipeline *p = arg;
	struct rnic_device *dev = p->dev;
	struct rte_mbuf *pkts[RNIC_BURST], *req[RNIC_BURST], *rsp[RNIC_BURST];
	uint32_t req_qpn[RNIC_BURST], rsp_qpn[RNIC_BURST];
	uint64_t start;
	unsigned int nreq = 0, nrsp = 0;
	uint16_t n;

	/* Take no more frames than the next stages can queue: a busy responder holds frames back in the port
	 * (and the port's peer holds them in its TX buffer) instead of losing them here. While frames land on
	 * the QPs' own shard's queues only this shard's rings are looked at (another shard's lines stay with
	 * its lcore); for a while after one for another shard came, every shard's. */
	budget = RTE_MIN(budget, (unsigned int)RNIC_BURST);
	for (uint16_t k = 0; k < dev->nb_shards; k++) {
		const struct rnic_pipeline *s = dev->pipeline[k];

		if (s == p || p->foreign_polls != 0)
			budget = RTE_MIN(budget, RTE_MIN(rte_ring_free_count(s->request_ring),
							 rte_ring_free_count(s->response_ring)));
	}
	if (p->foreign_polls != 0)
		p->foreign_polls--;
	n = receive(p, pkts, (uint16_t)budget);
	if (n == 0)
		return 0;
	start = rte_rdtsc();
	for (uint16_t i = 0; i < n; i++)
		rnic_prefetch_mbuf_desc(pkts[i]);
	for (uint16_t i = 0; i < RTE_MIN(n, (uint16_t)PARSER_PREFETCH_AHEAD); i++)
		prefetch_headers(pkts[i]);
	for (uint16_t i = 0; i < n; i++) {
		struct rnic_pkt_desc scratch, *kept = rnic_mbuf_desc(pkts[i]), *d = kept != NULL ? kept : &scratch;
		enum rnic_drop_reason why;

		if (i + PARSER_PREFETCH_AHEAD < n)
			prefetch_headers(pkts[i + PARSER_PREFETCH_AHEAD]);
		why = rnic_pkt_parse_mbuf(pkts[i], d, 1);
		if (rnic_latency_on)
			stamp_rx(p, pkts[i], start);
		RNIC_STATS(p, PARSER)->rx_packets++;
		RNIC_STATS(p, PARSER)->rx_bytes += pkts[i]->pkt_len;
		if (unlikely(why != RNIC_DROP_NONE)) {
			/* Not RoCE: ARP and ICMPv6 go to the neighbour code's control thread (rnic_neigh.h). */
			if ((why == RNIC_DROP_NOT_IP || why == RNIC_DROP_NOT_UDP) && rnic_neigh_input(dev, pkts[i]) == 0)
				continue;
			RNIC_STATS(p, PARSER)->rx_drops[why]++;
			rte_pktmbuf_free(pkts[i]);
			continue;
		}
		if (unlikely(rnic_ecn_ce(d->traffic_class)))
			RNIC_STATS(p, PARSER)->ecn_marked++;	/* the QP's stage answers it (rnic_dcqcn.h) */
		/* A CNP goes to the completer: the reaction point is the QP's requester side. */
		if (rnic_opcode_info(d->opcode)->is_request && d->opcode != RNIC_OP_CNP) {
			req_qpn[nreq] = d->dqpn;
			req[nreq++] = pkts[i];
		} else {
			rsp_qpn[nrsp] = d->dqpn;
			rsp[nrsp++] = pkts[i];
		}
	}
	if (rnic_latency_on)
		rnic_lat_record(&p->lat[RNIC_LAT_PARSER].busy, (rte_rdtsc() - start) / n, n);
	route(p, req, req_qpn, nreq, 1);
	route(p, rsp, rsp_qpn, nrsp, 0);
	return n;
}
