/* SPDX-License-Identifier: BSD-3-Clause
 * Header parser stage (seed 003 HeaderParser, table 5.2): receive a burst from the port, validate every
 * frame (lengths, versions, opcode, pad, ICRC), count drops by reason, and classify: requests go to the
 * responder, responses (ACK/NAK, READ responses, atomic ACKs) to the completer.
 */
#include <rte_ethdev.h>

#include "rnic_pipeline.h"
#include "rnic_port.h"

unsigned int
rnic_stage_parser(void *arg, unsigned int budget)
{
	struct rnic_pipeline *p = arg;
	struct rte_mbuf *pkts[RNIC_BURST], *req[RNIC_BURST], *rsp[RNIC_BURST];
	unsigned int nreq = 0, nrsp = 0, done;
	uint16_t n;

	/* Take no more frames than the next stages can queue: a busy responder holds frames back in the
	 * port (and the port's peer holds them in its TX buffer) instead of losing them here. */
	budget = RTE_MIN(RTE_MIN(budget, (unsigned int)RNIC_BURST),
			 RTE_MIN(rte_ring_free_count(p->request_ring), rte_ring_free_count(p->response_ring)));
	/* The port's RX queues in turn, one per call. */
	n = rte_eth_rx_burst(p->dev->port_id, p->rx_queue, pkts, (uint16_t)budget);
	p->rx_queue = (uint16_t)((p->rx_queue + 1) % RNIC_PORT_RXQ);
	for (uint16_t i = 0; i < n; i++) {
		struct rnic_pkt_desc d;
		enum rnic_drop_reason why = rnic_pkt_parse_mbuf(pkts[i], &d, 1);

		p->stats.rx_packets++;
		p->stats.rx_bytes += pkts[i]->pkt_len;
		if (why != RNIC_DROP_NONE) {
			p->stats.rx_drops[why]++;
			rte_pktmbuf_free(pkts[i]);
		} else if (d.opcode == RNIC_OP_CNP) {
			/* Congestion notifications are counted; rate control does not act on them yet. */
			p->stats.cnp_received++;
			rte_pktmbuf_free(pkts[i]);
		} else if (rnic_opcode_info(d.opcode)->is_request) {
			req[nreq++] = pkts[i];
		} else {
			rsp[nrsp++] = pkts[i];
		}
	}
	done = rte_ring_sp_enqueue_burst_elem(p->request_ring, req, sizeof(req[0]), nreq, NULL);
	for (unsigned int i = done; i < nreq; i++)
		rte_pktmbuf_free(req[i]);
	p->stats.ring_full += nreq - done;
	done = rte_ring_sp_enqueue_burst_elem(p->response_ring, rsp, sizeof(rsp[0]), nrsp, NULL);
	for (unsigned int i = done; i < nrsp; i++)
		rte_pktmbuf_free(rsp[i]);
	p->stats.ring_full += nrsp - done;
	return n;
}
