/* SPDX-License-Identifier: BSD-3-Clause
 * A device's pipeline: its rings, scheduler and caches, and the helpers the stages share (TX buffering,
 * routing, control frames, completions).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "rnic_cq.h"
#include "rnic_dbq.h"
#include "rnic_dcqcn.h"
#include "rnic_neigh.h"
#include "rnic_pipeline.h"
#include "rnic_requester.h"

/* The ring of edge e for this shard's pipeline, in its field. */
static int
pipe_ring(struct rnic_pipeline *p, enum rnic_edge_id e, unsigned int flags)
{
	const struct rnic_edge_desc *d = &rnic_edges[e];
	struct rte_ring **ring = (struct rte_ring **)((uint8_t *)p + d->field);
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "rnic_%s%u_%.12s", d->name, p->shard, p->dev->name);
	*ring = rte_ring_create_elem(name, d->esize, RNIC_PIPE_RING_SIZE, p->dev->socket_id, flags);
	return *ring != NULL ? 0 : -ENOMEM;
}

static int
pipe_rings(struct rnic_pipeline *p, const unsigned int ring_flags[RNIC_EDGE_MAX])
{
	for (unsigned int e = 0; e < RNIC_EDGE_MAX; e++) {
		unsigned int flags = ring_flags != NULL ? ring_flags[e] :
				     rnic_edges[e].control_producers ? RING_F_SC_DEQ : RING_F_SP_ENQ | RING_F_SC_DEQ;

		if (pipe_ring(p, (enum rnic_edge_id)e, flags) != 0)
			return -ENOMEM;
	}
	return 0;
}

static int
rtx_init(struct rnic_pipeline *p)
{
	p->rtx_size = p->pool->size / (RNIC_RTX_SHARE * RTE_MAX(p->dev->nb_shards, (uint16_t)1));
	p->rtx = rte_zmalloc_socket("rnic_rtx", sizeof(p->rtx[0]) * (p->rtx_size + 1), RTE_CACHE_LINE_SIZE,
				    p->dev->socket_id);
	if (p->rtx == NULL)
		return -ENOMEM;
	for (uint32_t i = 1; i <= p->rtx_size; i++)
		p->rtx[i].next = i < p->rtx_size ? i + 1 : 0;
	p->rtx_free = 1;
	return 0;
}

/* Free a list of kept frames, from element head on (the requester's lcore, or the pipeline's end). */
void
rnic_rtx_free_list(struct rnic_pipeline *p, uint32_t head)
{
	while (head != 0) {
		struct rnic_rtx_elem *e = &p->rtx[head];
		uint32_t next = e->next;

		rte_pktmbuf_free(e->m);
		e->m = NULL;
		e->next = p->rtx_free;
		p->rtx_free = head;
		head = next;
	}
}

/* The PSNs a QP reset or destroyed had in flight leave its tenant's count (rnic_tenant_sync): the
 * requester takes them from `released` at the tenant's next round. */
static void
release_tenant_psns(struct rnic_pipeline *p, struct rnic_qp_priv *q)
{
	if (q->req.tenant_psns != 0)
		__atomic_fetch_add(&p->req_tenant[q->tenant].released, q->req.tenant_psns, __ATOMIC_RELEASE);
	q->req.tenant_psns = 0;
}

void
rnic_pipeline_release_qp(struct rnic_qp *qp)
{
	struct rnic_device *dev = rnic_ctx_dev(qp->context);
	struct rnic_req_ctx *r = &rnic_qp_priv(qp)->req;
	uint32_t head = r->rtx_head;

	if (dev->nb_shards == 0)
		return;
	release_tenant_psns(rnic_shard_of(dev, qp->qp_num), rnic_qp_priv(qp));
	if (head == 0)
		return;
	r->rtx_head = r->rtx_tail = r->rtx_next = 0;
	r->rtx_bytes = 0;
	if (rte_ring_mp_enqueue_elem(rnic_shard_of(dev, qp->qp_num)->rtx_reclaim, &head, sizeof(head)) != 0)
		RNIC_LOG_LIMITED(ERR, "QP %u: reclaim ring full: its kept frames are lost to the pool", qp->qp_num);
}

/* The tenants' queues of QPs waiting for their caps' tokens (rnic_pacer.h): every slot in none. The pacer's
 * wheel has a slot for each tenant's wake after the QPs' (rnic_pacer.c). */
static int
cap_link_init(struct rnic_pipeline *p)
{
	uint32_t slots = rnic_qp_table_slots(p->dev);

	p->cap_link = rte_malloc_socket("rnic_cap_link", sizeof(*p->cap_link) * slots, 0, p->dev->socket_id);
	if (p->cap_link == NULL)
		return -ENOMEM;
	for (uint32_t s = 0; s < slots; s++)
		p->cap_link[s] = RNIC_CAP_UNPARKED;
	return 0;
}

int
rnic_pipeline_create(struct rnic_device *dev, struct rte_mempool *pool, uint16_t shard,
		     const unsigned int ring_flags[RNIC_EDGE_MAX], struct rnic_pipeline **out)
{
	static const struct rnic_engine_hooks hooks = {
		.release_qp = rnic_pipeline_release_qp,
		.route_prepare = rnic_route_prepare,
	};
	uint8_t idle_kicks;
	struct rnic_pipeline *p;

	rnic_engine_hooks_register(&hooks);	/* the QP's control path reaches the pipelines through them */
	p = rte_zmalloc_socket("rnic_pipeline", sizeof(*p), RTE_CACHE_LINE_SIZE, dev->socket_id);
	if (p == NULL)
		return -ENOMEM;
	p->dev = dev;
	p->pool = pool;
	p->shard = shard;
	/* Every QP slot twice: a QP is queued once at a time, and one reset or destroyed while queued leaves
	 * at most a stale entry behind. */
	p->read_fifo_mask = 2 * rnic_qp_table_slots(dev) - 1;
	p->read_fifo = rte_malloc_socket("rnic_read_fifo", sizeof(uint32_t) * (p->read_fifo_mask + 1),
					 RTE_CACHE_LINE_SIZE, dev->socket_id);
	if (pipe_rings(p, ring_flags) != 0 || p->read_fifo == NULL ||
	    rnic_sched_init(&p->sched, rnic_qp_table_slots(dev), dev->socket_id) != 0 ||
	    rnic_timer_init(&p->timers, rnic_qp_table_slots(dev), dev->socket_id) != 0 ||
	    rnic_timer_init(&p->pace_timers, rnic_qp_table_slots(dev) + RNIC_MAX_TENANTS, dev->socket_id) != 0 ||
	    cap_link_init(p) != 0 || rtx_init(p) != 0) {
		RNIC_LOG(ERR, "%s: cannot create the pipeline: %s", dev->name, rte_strerror(rte_errno));
		rnic_pipeline_free(p);
		return -ENOMEM;
	}
	if (shard == 0 && rnic_neigh_create(dev, pool) != 0) {
		RNIC_LOG(ERR, "%s: cannot create the neighbour cache", dev->name);
		rnic_pipeline_free(p);
		return -ENOMEM;
	}
	p->neigh_tx = rnic_neigh_tx_ring(dev);
	p->neigh_wait_cycles = RNIC_NEIGH_WAIT_MS * (rte_get_tsc_hz() / 1000);
	p->neigh_recheck_cycles = RNIC_NEIGH_RECHECK_US * (rte_get_tsc_hz() / 1000000);
	rnic_mr_cache_init(&p->req_cache);
	rnic_mr_cache_init(&p->resp_cache);
	p->shared_horizon = rte_get_tsc_hz() / 1000 * RNIC_TENANT_HORIZON_MS;
	p->cap_recheck_cycles = rte_get_tsc_hz() / 1000000 * RNIC_CAP_RECHECK_US;
	/* 4.096 us x 2^timeout (IBA 9.7.6.1.3), worked out once: the timer restarts on every response. */
	for (unsigned int t = 0; t < RTE_DIM(p->loss_timeout_cycles); t++)
		p->loss_timeout_cycles[t] = (uint64_t)(4.096e-6 * (double)(1ull << t) * (double)rte_get_tsc_hz());
	p->min_probe_cycles = rte_get_tsc_hz() / 1000000 * RNIC_MIN_PROBE_US;
	rnic_cc_conf_init(&p->cc, dev);
	idle_kicks = dev->tx_kick != NULL ? RNIC_TX_IDLE_KICKS : 0;
	p->req_tx = (struct rnic_tx_buffer){
		.stats = RNIC_STATS(p, REQUESTER), .port = dev->port_id,
		.queue = rnic_device_port_queue(dev, shard, 0), .idle_kicks = idle_kicks, .kick = dev->tx_kick,
	};
	p->resp_tx = (struct rnic_tx_buffer){
		.stats = RNIC_STATS(p, RESPONDER), .port = dev->port_id,
		.queue = rnic_device_port_queue(dev, shard, 1), .idle_kicks = idle_kicks, .kick = dev->tx_kick,
	};
	*out = p;
	return 0;
}

void
rnic_ring_free_mbufs(struct rte_ring *r)
{
	struct rte_mbuf *m;

	while (r != NULL && rte_ring_dequeue_elem(r, &m, sizeof(m)) == 0)
		rte_pktmbuf_free(m);
}

void
rnic_pipeline_free(struct rnic_pipeline *p)
{
	if (p == NULL)
		return;
	if (p->neigh_tx != NULL)
		rnic_neigh_free(p->dev);	/* shard 0's: the device's neighbour state goes with it */
	rte_pktmbuf_free_bulk(p->req_tx.pkts, p->req_tx.count);
	rte_pktmbuf_free_bulk(p->req_tx.spare, p->req_tx.nb_spare);
	rte_pktmbuf_free_bulk(p->resp_tx.pkts, p->resp_tx.count);
	rte_pktmbuf_free_bulk(p->resp_tx.spare, p->resp_tx.nb_spare);
	rnic_sched_free(&p->sched);
	rnic_timer_free(&p->timers);
	rnic_timer_free(&p->pace_timers);
	rte_free(p->cap_link);
	if (p->rtx_reclaim != NULL) {
		uint32_t head;

		while (rte_ring_dequeue_elem(p->rtx_reclaim, &head, sizeof(head)) == 0)
			rnic_rtx_free_list(p, head);
	}
	for (unsigned int e = 0; e < RNIC_EDGE_MAX; e++) {
		struct rte_ring *r = *(struct rte_ring **)((uint8_t *)p + rnic_edges[e].field);

		if (rnic_edges[e].mbufs)
			rnic_ring_free_mbufs(r);
		rte_ring_free(r);
	}
	rte_free(p->rtx);
	rte_free(p->read_fifo);
	rte_free(p);
}

/* ------------------------------------------------------------------------------------------------------ */
/* TX                                                                                                       */

void
rnic_tx_flush(struct rnic_tx_buffer *tx)
{
	uint16_t sent;

	if (tx->count == 0)
		return;
	/* The wire's share of latency starts when the port is handed the frame: one stamp per burst. */
	if (rnic_latency_on) {
		uint64_t now = rte_rdtsc();

		for (uint16_t i = 0; i < tx->count; i++)
			*rnic_mbuf_tsc(tx->pkts[i]) = now;
	}
	sent = rte_eth_tx_burst(tx->port, tx->queue, tx->pkts, tx->count);
	for (uint16_t i = 0; i < sent; i++)
		tx->stats->tx_bytes += tx->pkts[i]->pkt_len;
	tx->stats->tx_packets += sent;
	if (sent != 0) {
		tx->kicks_left = tx->idle_kicks;
		tx->kick_gap = 0;
	}
	/* A busy port keeps the rest for the next flush: back-pressure, not loss. */
	memmove(tx->pkts, tx->pkts + sent, (size_t)(tx->count - sent) * sizeof(tx->pkts[0]));
	tx->count = (uint16_t)(tx->count - sent);
}

/*
 * A port that stopped sending at a frame the kernel dropped keeps the frames behind it until its next burst
 * (rnic_port_tx_needs_kick); an idle stage makes no next burst, and a peer would wait for those frames (an
 * ACK behind hundreds of READ responses) until its retry budget is spent. So a stage idle for
 * RNIC_TX_KICK_FIRST_US kicks the queue, then again after gaps doubling up to RNIC_TX_KICK_MAX_US (a qdisc's
 * full queue drains at the link's rate), at most idle_kicks times after a burst: each kick sends up to the
 * next frame dropped, and the port cannot tell when none is left. A short lull between bursts costs no
 * syscall.
 */
void
rnic_tx_kick(struct rnic_tx_buffer *tx, struct rte_mempool *pool)
{
	uint64_t now = rte_rdtsc(), us = rte_get_tsc_hz() / 1000000;

	if (tx->count != 0)
		return;		/* the stage's next flush is a burst */
	if (tx->kick_gap == 0)	/* the first idle pass since a burst */
		tx->kick_gap = (uint32_t)(RNIC_TX_KICK_FIRST_US * us);
	else if (now < tx->next_kick)
		return;
	else {
		tx->kicks_left--;
		tx->stats->tx_kicks++;
		tx->kick(tx->port, tx->queue, pool);
		tx->kick_gap = (uint32_t)RTE_MIN(2 * (uint64_t)tx->kick_gap, RNIC_TX_KICK_MAX_US * us);
	}
	tx->next_kick = now + tx->kick_gap;
}

/*
 * Spares are taken from the pool a burst at a time and reset one at a time when used: the mbufs come back
 * cold from the lcore that freed them, and their lines (the mbuf's two and the first of the data) load while
 * the frames before them are built.
 */
struct rte_mbuf *
rnic_tx_alloc(struct rnic_tx_buffer *tx, struct rte_mempool *pool)
{
	struct rte_mbuf *m;

	if (tx->nb_spare == 0) {
		if (rte_mempool_get_bulk(pool, (void **)tx->spare, RNIC_BURST) != 0)
			return rte_pktmbuf_alloc(pool);	/* the pool is nearly empty: one will do */
		tx->nb_spare = RNIC_BURST;
		for (unsigned int i = 0; i < RNIC_BURST; i++) {
			m = tx->spare[i];
			rte_prefetch0_write(m);
			rte_prefetch0_write(&m->cacheline1);
			rte_prefetch0_write((uint8_t *)m->buf_addr + RTE_PKTMBUF_HEADROOM);
		}
	}
	m = tx->spare[--tx->nb_spare];
	rte_pktmbuf_reset(m);
	return m;
}

void
rnic_tx_enqueue(struct rnic_tx_buffer *tx, struct rte_mbuf *m)
{
	if (tx->count == RNIC_TX_BUF) {
		rnic_tx_flush(tx);
		if (tx->count == RNIC_TX_BUF) {
			rte_pktmbuf_free(m);
			tx->stats->tx_dropped++;
			return;
		}
	}
	tx->pkts[tx->count++] = m;
	if (tx->count >= RNIC_BURST)
		rnic_tx_flush(tx);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Routing and control frames                                                                               */

/* The peer's MAC: a device of this process with that GID (the loopback pair), a static --neigh entry, or the
 * port's neighbour cache (ARP/ND). */
int
rnic_route_lookup(const struct rnic_device *dev, const union rnic_gid *dgid, uint8_t mac[6])
{
	const struct rnic_device *d = rnic_engine_device_by_gid(dgid);

	if (d != NULL) {
		memcpy(mac, d->mac.addr_bytes, RTE_ETHER_ADDR_LEN);
		return 0;
	}
	if (rnic_neigh_static_lookup(dgid, mac) == 0)
		return 0;
	return rnic_neigh_lookup(dev, dgid, mac);
}

void
rnic_route_prepare(const struct rnic_device *dev, const union rnic_gid *dgid)
{
	uint8_t mac[RTE_ETHER_ADDR_LEN];

	rnic_route_lookup(dev, dgid, mac);	/* a miss asks the control thread */
}

/*
 * The UDP source port of a QP pair (the RoCEv2 annex, A17.3.3: any value of 0xC000-0xFFFF, the same for a
 * flow): Linux's rdma_get_udp_sport. The flow label, or one made from both QPNs (the product is symmetric, so
 * both ends of a connection pick the same port), folded to 14 bits. Flows of other QP pairs land on other
 * ports: ECMP paths and RSS queues spread them.
 */
static uint16_t
udp_sport(uint32_t flow_label, uint32_t qpn, uint32_t dqpn)
{
	if (flow_label == 0) {
		uint64_t v = (uint64_t)qpn * dqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		flow_label = (uint32_t)(v & 0xfffff);
	}
	return (uint16_t)(0xc000 | ((flow_label & 0x3fff) ^ ((flow_label & 0xfc000) >> 14)));
}

/* Real RNICs' TTL (rxe, mlx5): 64, or the address vector's hop limit when it asks for more. An AV's hop limit
 * of 1 (what the pingpong examples give) would not get past the first router. */
#define RNIC_DEFAULT_TTL 64

int
rnic_fill_route(struct rnic_tx_buffer *tx, const struct rnic_device *dev, const struct rnic_ah_attr *av,
		uint32_t qpn, uint32_t dqpn, uint8_t dmac[6], uint8_t *dmac_known, struct rnic_pkt_desc *d)
{
	if (!*dmac_known) {
		int ret = rnic_route_lookup(dev, &av->grh.dgid, dmac);

		if (ret != 0)
			return ret;
		*dmac_known = 1;
	}
	memcpy(&d->dst_mac, dmac, RTE_ETHER_ADDR_LEN);
	d->src_mac = dev->mac;
	d->ip_version = rnic_gid_is_ipv4(&av->grh.dgid) ? 4 : 6;
	d->sgid = dev->gid[av->grh.sgid_index];
	d->dgid = av->grh.dgid;
	d->hop_limit = RTE_MAX(av->grh.hop_limit, (uint8_t)RNIC_DEFAULT_TTL);
	d->traffic_class = rnic_tclass_out(av->grh.traffic_class);	/* DSCP and ECN: IPv4 TOS / IPv6 TC */
	d->flow_label = av->grh.flow_label;
	/* A new ID per frame, as Linux gives a UDP datagram (DF is set: the ID only tells frames apart). */
	d->ip_id = tx->ip_id++;
	d->udp_sport = udp_sport(av->grh.flow_label, qpn, dqpn);
	d->pkey = RNIC_DEFAULT_PKEY;
	return 0;
}

int
rnic_send_control(struct rnic_pipeline *p, struct rnic_tx_buffer *tx, struct rnic_pkt_desc *d)
{
	struct rte_mbuf *m = rnic_tx_alloc(tx, p->pool);

	if (m == NULL) {
		tx->stats->no_mbuf++;
		return -ENOMEM;
	}
	if (rnic_pkt_build_mbuf(d, m) < 0) {
		rte_pktmbuf_free(m);
		return -EINVAL;
	}
	rnic_tx_enqueue(tx, m);
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* DataPack                                                                                                 */

enum rnic_mr_status
rnic_sge_copy(struct rnic_pipeline *p, struct rnic_mr_cache *cache, const struct rnic_wqe_data *sge,
	      uint32_t nb_sge, uint32_t pdn, uint32_t need, uint32_t off, uint8_t *buf, uint32_t len, int to_sges)
{
	for (uint32_t i = 0; i < nb_sge && len != 0; i++) {
		uint32_t sge_len = rte_be_to_cpu_32(sge[i].byte_count), piece, n;
		struct rnic_mr_seg seg[3];	/* a piece is at most one MTU: three pages at the worst */
		enum rnic_mr_status st;

		if (off >= sge_len) {
			off -= sge_len;
			continue;
		}
		piece = RTE_MIN(sge_len - off, len);
		st = rnic_mr_translate(p->dev->mr_table, cache, rte_be_to_cpu_32(sge[i].lkey), pdn, need,
				       rte_be_to_cpu_64(sge[i].addr) + off, piece, seg, RTE_DIM(seg), &n);
		if (st != RNIC_MR_OK)
			return st;
		for (uint32_t s = 0; s < n; s++) {
			if (to_sges)
				memcpy(seg[s].addr, buf, seg[s].len);
			else
				memcpy(buf, seg[s].addr, seg[s].len);
			buf += seg[s].len;
		}
		len -= piece;
		off = 0;
	}
	return len == 0 ? RNIC_MR_OK : RNIC_MR_OUT_OF_BOUNDS;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Completions and errors                                                                                   */

int
rnic_complete(struct rnic_qp *qp, int is_send, uint32_t index, uint8_t wqe_opcode, enum rnic_wc_status st,
	      uint32_t byte_len)
{
	struct rnic_cqe_desc d = {
		.qpn = qp->qp_num,
		.wqe_counter = (uint16_t)index,
		.is_send = (uint8_t)is_send,
		.wqe_opcode = wqe_opcode,
		.status = st,
		.byte_cnt = byte_len,
	};

	return rnic_cq_push(is_send ? qp->send_cq : qp->recv_cq, &d);
}
