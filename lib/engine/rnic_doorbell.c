/* SPDX-License-Identifier: BSD-3-Clause
 * The doorbell stage (seed 003 §3.1, doorbell processing): the device's doorbell ring, then rnicd clients'
 * doorbell queues, each QP named handed to its shard's requester through the slot ring.
 */
#include <rte_ring.h>

#include "rnic_dbq.h"
#include "rnic_doorbell.h"
#include "rnic_pipeline.h"

/* Tell the owning shards' requesters about the QPs the doorbells name. owner: who rang them (an rnicd
 * client may only ring its own QPs; a doorbell naming another's is dropped as if the QP did not exist);
 * t: the ringer's tenant, charged with them. */
static void
route_doorbells(struct rnic_pipeline *p, const uint64_t *db, unsigned int n, uint32_t owner,
		struct rnic_db_tenant *t)
{
	struct rnic_device *dev = p->dev;

	for (unsigned int i = 0; i < n; i++) {
		struct rnic_doorbell d;
		struct rnic_qp *qp;

		rnic_doorbell_parse(db[i], &d);
		qp = rnic_qp_lookup(dev, d.qpn);
		if (qp == NULL || (owner != 0 && rnic_qp_priv(qp)->owner != owner)) {
			RNIC_STATS(p, DOORBELL)->no_qp++;	/* destroyed since it rang, or not the ringer's */
			t->dropped++;
			continue;
		}
		rnic_qp_doorbell_taken(qp);
		rnic_edge_enqueue(rnic_shard_of(dev, qp->qp_num)->slot_ring, &rnic_qp_priv(qp)->slot, sizeof(uint32_t));
	}
	RNIC_STATS(p, DOORBELL)->doorbells += n;
	t->doorbells += n;
}

/*
 * rnicd clients' doorbell queues, at most room doorbells: round robin from the queue after the last one the
 * previous turn looked at, each tenant at most RNIC_DBQ_SHARE a turn over all its queues, so that a client
 * that keeps its queue full takes its share and no more (doc/engine.md, "Fair service").
 */
static unsigned int
take_client_doorbells(struct rnic_pipeline *p, unsigned int room)
{
	struct rnic_device *dev = p->dev;
	uint32_t nb_dbq = __atomic_load_n(&dev->nb_client_dbq, __ATOMIC_ACQUIRE);
	uint32_t i = p->dbq_next < nb_dbq ? p->dbq_next : 0;
	unsigned int total = 0;
	uint64_t db[RNIC_BURST];

	p->dbq_turn++;
	for (uint32_t looked = 0; looked < nb_dbq && total < room; looked++) {
		struct rnic_dbq_reader *r = &dev->client_dbq[i];
		struct rnic_dbq *q = __atomic_load_n(&r->q, __ATOMIC_ACQUIRE);
		struct rnic_db_tenant *t = &p->db_tenant[r->tenant];
		unsigned int n;

		i = i + 1 < nb_dbq ? i + 1 : 0;
		if (q == NULL)
			continue;
		if (t->turn != p->dbq_turn) {
			t->turn = p->dbq_turn;
			t->left = RNIC_DBQ_SHARE;
		}
		n = rnic_dbq_pop(r, q, db, RTE_MIN(room - total, t->left));
		t->left -= n;
		route_doorbells(p, db, n, r->owner, t);
		total += n;
	}
	p->dbq_next = i;
	return total;
}

unsigned int
rnic_stage_doorbell(void *arg, unsigned int budget)
{
	struct rnic_pipeline *p = arg;
	struct rnic_device *dev = p->dev;
	uint64_t db[RNIC_BURST];
	unsigned int n, room = RNIC_BURST;

	/* Take no more doorbells than every shard's requester can be told about: none is ever dropped. */
	for (uint16_t s = 0; s < dev->nb_shards; s++)
		room = RTE_MIN(room, rte_ring_free_count(dev->pipeline[s]->slot_ring));
	room = RTE_MIN(budget, room);
	n = rte_ring_sc_dequeue_burst_elem(dev->doorbell_ring, db, sizeof(db[0]), room, NULL);
	route_doorbells(p, db, n, 0, &p->db_tenant[0]);
	/* rnicd clients' doorbell queues (none in an application's own engine). */
	if (n < room && dev->nb_client_dbq != 0)
		n += take_client_doorbells(p, room - n);
	return n;
}
