/* SPDX-License-Identifier: BSD-3-Clause
 * Queue pairs: the QP table, create / modify (the IBA state machine) / query / destroy, error flush.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "rnic_cq.h"
#include "rnic_dbq.h"
#include "rnic_qp.h"
#include "rnic_srq.h"
#include "rnic_wire.h"
#include "rnic_wqe.h"

#define QPN_MASK 0xffffffu
#define FIRST_SLOT 2		/* QPNs 0 and 1 are IBA's special QPs */
#define GSI_SLOT 1		/* QP1, the general services QP (rnic_local_create_gsi_qp): QPN 1 always */

/* On a line of its own: every requester reads it per packet, and only the control path writes it. */
uint32_t rnic_qp_peers_gen __rte_cache_aligned = 1;

/* A QP was connected, reset or destroyed: requesters sending to QPs of this engine check their peer again. */
static void
peers_changed(void)
{
	if (__atomic_add_fetch(&rnic_qp_peers_gen, 1, __ATOMIC_RELEASE) == 0)
		__atomic_add_fetch(&rnic_qp_peers_gen, 1, __ATOMIC_RELEASE);	/* 0 is "never checked" */
}

int
rnic_qp_table_create(struct rnic_device *dev)
{
	struct rnic_qp_table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return -ENOMEM;
	t->nb_slots = rte_align32pow2(dev->lim.max_qp + FIRST_SLOT);
	t->slot_mask = t->nb_slots - 1;
	/* Plain heap, not DPDK memory: an rnicd client (no EAL) keeps the same table for its QPs. */
	t->slot = calloc(t->nb_slots, sizeof(*t->slot));
	t->generation = calloc(t->nb_slots, sizeof(*t->generation));
	if (t->slot == NULL || t->generation == NULL) {
		free(t->slot);
		free(t->generation);
		free(t);
		return -ENOMEM;
	}
	dev->qp_table = t;
	return 0;
}

void
rnic_qp_table_free(struct rnic_device *dev)
{
	struct rnic_qp_table *t = dev->qp_table;

	if (t == NULL)
		return;
	free(t->slot);
	free(t->generation);
	free(t);
	dev->qp_table = NULL;
}

void
rnic_qp_table_publish(struct rnic_device *dev, struct rnic_qp *qp)
{
	struct rnic_qp_table *t = dev->qp_table;

	rnic_qp_priv(qp)->slot = qp->qp_num & t->slot_mask;
	__atomic_store_n(&t->slot[qp->qp_num & t->slot_mask], rnic_qp_priv(qp), __ATOMIC_RELEASE);
}

void
rnic_qp_table_unpublish(struct rnic_device *dev, struct rnic_qp *qp)
{
	struct rnic_qp_table *t = dev->qp_table;
	struct rnic_qp_priv *expect = rnic_qp_priv(qp);

	__atomic_compare_exchange_n(&t->slot[qp->qp_num & t->slot_mask], &expect, NULL, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

uint32_t
rnic_qp_table_slots(const struct rnic_device *dev)
{
	return dev->qp_table->nb_slots;
}

const char *
rnic_qp_state_str(enum rnic_qp_state state)
{
	static const char *const names[] = {
		[RNIC_QPS_RESET] = "RESET", [RNIC_QPS_INIT] = "INIT", [RNIC_QPS_RTR] = "RTR",
		[RNIC_QPS_RTS] = "RTS", [RNIC_QPS_SQD] = "SQD", [RNIC_QPS_SQE] = "SQE",
		[RNIC_QPS_ERR] = "ERR", [RNIC_QPS_UNKNOWN] = "UNKNOWN",
	};

	return (unsigned int)state < RTE_DIM(names) ? names[state] : "UNKNOWN";
}

/* ------------------------------------------------------------------------------------------------------ */
/* Work queues                                                                                              */

uint64_t
rnic_qp_sq_wrid(struct rnic_qp *qp, uint16_t wqe_counter)
{
	const struct rnic_wq *wq = &rnic_qp_priv(qp)->sq;

	return wq->wrid[wqe_counter & (wq->wqe_cnt - 1)];
}

uint64_t
rnic_qp_rq_wrid(struct rnic_qp *qp, uint16_t wqe_counter)
{
	const struct rnic_wq *wq = &rnic_qp_priv(qp)->rq;

	return wq->wrid[wqe_counter & (wq->wqe_cnt - 1)];
}

/* The CQE names the last WQE it retires, as a 16-bit counter; unsignaled WQEs before it retire with it. */
static void
wq_retire(struct rnic_wq *wq, uint16_t wqe_counter)
{
	uint32_t tail = wq->idx->tail;

	__atomic_store_n(&wq->idx->tail, tail + (uint16_t)(wqe_counter + 1 - (uint16_t)tail), __ATOMIC_RELEASE);
}

void
rnic_qp_sq_retire(struct rnic_qp *qp, uint16_t wqe_counter)
{
	wq_retire(&rnic_qp_priv(qp)->sq, wqe_counter);
}

void
rnic_qp_rq_retire(struct rnic_qp *qp, uint16_t wqe_counter)
{
	wq_retire(&rnic_qp_priv(qp)->rq, wqe_counter);
}

void
rnic_qp_hif_layout(uint32_t sq_cnt, uint32_t sq_stride, uint32_t rq_cnt, uint32_t rq_stride,
		   struct rnic_qp_hif_layout *l)
{
	size_t off = 0;

	l->sq_buf = off;
	off += (size_t)sq_cnt * sq_stride;
	l->rq_buf = off;
	off += (size_t)rq_cnt * rq_stride;
	l->sq_wrid = off;
	off += sizeof(uint64_t) * sq_cnt;
	l->rq_wrid = off;
	off += sizeof(uint64_t) * rq_cnt;
	l->sq_tsc = off;
	off += sizeof(uint64_t) * sq_cnt;
	off = RTE_ALIGN_CEIL(off, RTE_CACHE_LINE_SIZE);	/* the indexes are cache-line aligned (rnic_wq_idx) */
	l->sq_idx = off;
	off += sizeof(struct rnic_wq_idx);	/* each queue's indexes on lines of their own */
	l->rq_idx = off;
	off += sizeof(struct rnic_wq_idx);
	l->state = off;
	off += RTE_CACHE_LINE_SIZE;
	l->size = RTE_ALIGN_CEIL(off, 4096);
}

/*
 * What the engine keeps of a QP's queues in its own memory, in one block: the requester's in-flight ring (one
 * entry per SQ slot, RNIC_MAX_INFLIGHT at most) with a copy of each entry's WQE (a slot of the SQ's stride),
 * and the responder's copy of the scatter list of the receive WQE a SEND is landing in (recv_sges entries).
 */
static int
engine_mem_alloc(struct rnic_qp_priv *qp, int socket_id, uint32_t recv_sges)
{
	uint32_t n = RTE_MIN(qp->sq.wqe_cnt, (uint32_t)RNIC_MAX_INFLIGHT);
	size_t ring = RTE_ALIGN_CEIL(sizeof(*qp->req.infl) * n, RTE_CACHE_LINE_SIZE);
	size_t copies = (size_t)n * qp->sq.stride;
	uint8_t *block = rte_zmalloc_socket("rnic_qp_engine", ring + copies +
					    sizeof(struct rnic_wqe_data) * recv_sges,
					    RTE_CACHE_LINE_SIZE, socket_id);

	if (block == NULL)
		return -ENOMEM;
	qp->req.infl = (struct rnic_inflight *)block;
	qp->req.infl_mask = n - 1;
	qp->req.wqe_copy = block + ring;
	qp->resp.recv_sge = (struct rnic_wqe_data *)(block + ring + copies);
	return 0;
}

void
rnic_wq_bind(struct rnic_wq *wq, uint8_t *base, size_t buf, size_t wrid, size_t tsc, size_t idx, uint32_t cnt,
	     uint32_t stride)
{
	wq->buf = base + buf;
	wq->wrid = (uint64_t *)(base + wrid);
	wq->posted_tsc = tsc != 0 ? (uint64_t *)(base + tsc) : NULL;
	wq->idx = (struct rnic_wq_idx *)(base + idx);
	wq->wqe_cnt = cnt;
	wq->stride = stride;
}

/* The SQ and RQ of a new QP in one host-interface block (shared memory for an rnicd client). */
static int
qp_hif_alloc(struct rnic_context *ctx, struct rnic_qp_priv *qp, uint32_t sq_count, uint32_t sq_wqe_bytes,
	     uint32_t rq_count, uint32_t rq_wqe_bytes)
{
	uint32_t sq_cnt = rte_align32pow2(sq_count), sq_stride = rte_align32pow2(RTE_MAX(sq_wqe_bytes, 64u));
	uint32_t rq_cnt = rte_align32pow2(rq_count), rq_stride = rte_align32pow2(RTE_MAX(rq_wqe_bytes, 64u));
	struct rnic_qp_hif_layout l;

	rnic_qp_hif_layout(sq_cnt, sq_stride, rq_cnt, rq_stride, &l);
	qp->hif = rnic_hostmem_alloc(ctx, l.size);
	if (qp->hif == NULL)
		return -ENOMEM;
	rnic_wq_bind(&qp->sq, qp->hif, l.sq_buf, l.sq_wrid, l.sq_tsc, l.sq_idx, sq_cnt, sq_stride);
	rnic_wq_bind(&qp->rq, qp->hif, l.rq_buf, l.rq_wrid, 0, l.rq_idx, rq_cnt, rq_stride);
	qp->post_state = (enum rnic_qp_state *)((uint8_t *)qp->hif + l.state);
	return 0;
}

static void
wq_reset(struct rnic_wq *wq, uint32_t *done)
{
	wq->idx->head = wq->idx->tail = *done = 0;
	memset(wq->buf, 0, (size_t)wq->wqe_cnt * wq->stride);
}

/* Complete every WQE posted and not done (*done counts them) with a flush error. */
static void
flush_wq(struct rnic_qp_priv *qp, struct rnic_wq *wq, uint32_t *done, struct rnic_cq *cq, int is_send)
{
	uint32_t head = __atomic_load_n(&wq->idx->head, __ATOMIC_ACQUIRE);
	struct rnic_cqe_desc d = {
		.qpn = qp->pub.qp_num,
		.is_send = (uint8_t)is_send,
		.status = RNIC_WC_WR_FLUSH_ERR,
	};

	/* An rnicd client's head is not trusted: never more than one queue's worth past what is done. */
	if (head - *done > wq->wqe_cnt)
		head = *done + wq->wqe_cnt;

	for (; *done != head; (*done)++) {
		const struct rnic_wqe_next *next = (const void *)rnic_wq_slot(wq, *done);

		d.wqe_counter = (uint16_t)*done;
		d.wqe_opcode = is_send ? (uint8_t)(rte_be_to_cpu_32(next->flags) >> RNIC_WQE_F_OPCODE_SHIFT) : 0;
		if (rnic_cq_push(cq, &d) != 0)	/* counted as cqes_lost */
			RNIC_LOG_LIMITED(ERR, "QP %u: flush completion lost (CQ %u full or in error)",
					 qp->pub.qp_num, rnic_cq_priv(cq)->cqn);
	}
}

void
rnic_qp_flush_sq(struct rnic_qp *pub)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);

	flush_wq(qp, &qp->sq, &qp->req.sq_done, pub->send_cq, 1);
}

/*
 * A QP on an SRQ in error: the one WQE it took and has not completed (a SEND cut short) completes flushed;
 * the SRQ's other WQEs stay there for its other QPs (IBA 10.2.9.5). Then, once, the Last WQE Reached event
 * (IBA 11.6.3.1): the QP will take no more from the SRQ.
 */
static void
flush_srq_wqe(struct rnic_qp_priv *qp)
{
	struct rnic_resp_ctx *r = &qp->resp;
	struct rnic_cqe_desc d = {
		.qpn = qp->pub.qp_num,
		.status = RNIC_WC_WR_FLUSH_ERR,
		.wqe_counter = (uint16_t)r->srq_index,
		.srqn = rnic_srq_priv(qp->pub.srq)->srqn,
		.wr_id = r->srq_wr_id,
	};

	if (r->srq_held && rnic_cq_push(qp->pub.recv_cq, &d) != 0)
		RNIC_LOG_LIMITED(ERR, "QP %u: flush completion lost (CQ %u full or in error)", qp->pub.qp_num,
				 rnic_cq_priv(qp->pub.recv_cq)->cqn);
	r->srq_held = 0;
	if (!r->last_wqe_raised) {
		r->last_wqe_raised = 1;
		rnic_async_event_raise(qp->pub.context, RNIC_EVENT_QP_LAST_WQE_REACHED, &qp->pub);
	}
}

void
rnic_qp_flush_rq(struct rnic_qp *pub)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);

	if (pub->srq != NULL)
		flush_srq_wqe(qp);
	else
		flush_wq(qp, &qp->rq, &qp->resp.rq_done, pub->recv_cq, 0);
}

void
rnic_qp_flush(struct rnic_qp *pub)
{
	rnic_qp_flush_sq(pub);
	rnic_qp_flush_rq(pub);
}

static int
enqueue_doorbell(struct rnic_qp_priv *qp, uint64_t db)
{
	if (qp->dbq != NULL)
		return rnic_dbq_push(qp->dbq, db);
	return rte_ring_mp_enqueue_elem(rnic_ctx_dev(qp->pub.context)->doorbell_ring, &db, sizeof(db));
}

/* A doorbell that found the queue full for 10 million tries (only a queue smaller than the QPs it serves, or
 * a doorbell stage that never runs while it is full, gets here): said once in a while, off the post path. */
static __rte_noinline __rte_cold void
doorbell_lost(struct rnic_qp *pub, uint32_t *pending)
{
	RNIC_LOG_LIMITED(ERR, "QP %u: doorbell queue full, the engine was not told", pub->qp_num);
	__atomic_store_n(pending, 0, __ATOMIC_SEQ_CST);
}

void
rnic_qp_ring_doorbell(struct rnic_qp *pub, uint64_t db)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	uint32_t *pending = &qp->sq.idx->doorbell_pending;

	/* The head store before this was sequentially consistent: a flag seen set here was set before the
	 * doorbell stage clears it and reads the head, which then covers this post. Only a clear flag needs
	 * the locked exchange (the doorbell stage writes this line). */
	if (__atomic_load_n(pending, __ATOMIC_SEQ_CST) != 0 || __atomic_exchange_n(pending, 1, __ATOMIC_SEQ_CST) != 0)
		return;
	for (unsigned int tries = 0; enqueue_doorbell(qp, db) != 0; tries++) {
		if (tries == 10000000) {
			doorbell_lost(pub, pending);
			return;
		}
		rte_pause();
	}
}

void
rnic_qp_notify_engine(struct rnic_qp *pub)
{
	rnic_qp_ring_doorbell(pub, rnic_doorbell_make(0, 0, RNIC_WQE_OP_NOP, pub->qp_num, 0));
}

void
rnic_qp_error_flush(struct rnic_qp *pub)
{
	/* A client's QP: the engine runs in rnicd, where the QP's completions are produced. */
	if (rnic_qp_priv(pub)->dbq != NULL || rnic_engine_running())
		rnic_qp_notify_engine(pub);
	else if (__atomic_load_n(&pub->state, __ATOMIC_ACQUIRE) == RNIC_QPS_SQE)
		rnic_qp_flush_sq(pub);		/* SQE: the receive queue goes on */
	else
		rnic_qp_flush(pub);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Create / destroy                                                                                         */

static uint32_t
max_send_wqe_bytes(enum rnic_qp_type type, const struct rnic_qp_cap *cap)
{
	uint32_t by_sge = rnic_send_wqe_size(type != RNIC_QPT_UD, type == RNIC_QPT_RC, type == RNIC_QPT_UD,
					     cap->max_send_sge, 0, 0);
	uint32_t by_inline = rnic_send_wqe_size(type != RNIC_QPT_UD, 0, type == RNIC_QPT_UD, 0, 1,
						cap->max_inline_data);

	return RTE_MAX(by_sge, by_inline);
}

static int
check_init_attr(const struct rnic_device *dev, const struct rnic_qp_init_attr *ia)
{
	const struct rnic_limits *lim = &dev->lim;

	if (ia->qp_type != RNIC_QPT_RC && ia->qp_type != RNIC_QPT_UC && ia->qp_type != RNIC_QPT_UD)
		return EINVAL;
	if (ia->send_cq == NULL || ia->recv_cq == NULL)
		return EINVAL;
	if (ia->cap.max_send_wr == 0 || ia->cap.max_send_wr > lim->max_qp_wr ||
	    ia->cap.max_recv_wr > lim->max_qp_wr || ia->cap.max_send_sge > lim->max_sge ||
	    ia->cap.max_recv_sge > lim->max_sge || ia->cap.max_inline_data > lim->max_inline_data)
		return EINVAL;
	if (max_send_wqe_bytes(ia->qp_type, &ia->cap) > RNIC_WQE_MAX_SIZE16 * RNIC_WQE_SEG)
		return EINVAL;
	return 0;
}

static int
alloc_slot(struct rnic_device *dev, struct rnic_qp_priv *qp)
{
	struct rnic_qp_table *t = dev->qp_table;
	uint32_t gen_shift = (uint32_t)rte_log2_u32(t->nb_slots);

	if (t->nb_qp == dev->lim.max_qp)
		return -ENOMEM;
	for (uint32_t s = FIRST_SLOT; s < t->nb_slots; s++) {
		if (t->slot[s] != NULL)
			continue;
		/* Generations in the high bits keep a just-destroyed QPN from resolving to its successor. */
		qp->pub.qp_num = ((t->generation[s]++ << gen_shift) | s) & QPN_MASK;
		qp->slot = s;
		t->nb_qp++;
		__atomic_store_n(&t->slot[s], qp, __ATOMIC_RELEASE);
		return 0;
	}
	return -ENOMEM;
}

/* QP1 takes its own slot, outside max_qp (IBA's special QPs are not among the device's QPs), and its number is
 * always 1: a peer addresses the general services QP by that number alone. */
static int
alloc_gsi_slot(struct rnic_device *dev, struct rnic_qp_priv *qp)
{
	struct rnic_qp_table *t = dev->qp_table;

	if (t->slot[GSI_SLOT] != NULL)
		return -EBUSY;
	qp->pub.qp_num = GSI_SLOT;
	qp->slot = GSI_SLOT;
	__atomic_store_n(&t->slot[GSI_SLOT], qp, __ATOMIC_RELEASE);
	return 0;
}

struct rnic_qp *
rnic_create_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia)
{
	int err;

	if (pd == NULL || ia == NULL) {
		errno = EINVAL;
		return NULL;
	}
	err = check_init_attr(rnic_ctx_dev(pd->context), ia);
	/* An SRQ is shared by QPs of its own PD (whose keys its WQEs' scatter lists use). */
	if (err == 0 && ia->srq != NULL && ia->srq->pd != pd)
		err = EINVAL;
	if (err != 0) {
		errno = err;
		return NULL;
	}
	return rnic_ctx_ops(pd->context)->create_qp(pd, ia);
}

static struct rnic_qp *
create_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia,
	  int (*alloc)(struct rnic_device *dev, struct rnic_qp_priv *qp))
{
	struct rnic_device *dev = rnic_ctx_dev(pd->context);
	struct rnic_qp_priv *qp;
	int err;

	qp = rte_zmalloc_socket("rnic_qp", sizeof(*qp), RTE_CACHE_LINE_SIZE, dev->socket_id);
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* On an SRQ, the QP has no receive queue of its own (libibverbs ignores its receive caps then): its
	 * messages land in the SRQ's WQEs, whose scatter lists the responder copies as for an RQ. */
	if (ia->srq != NULL) {
		ia->cap.max_recv_wr = 0;
		ia->cap.max_recv_sge = 0;
	}
	qp->cap = ia->cap;
	if (qp_hif_alloc(pd->context, qp, ia->cap.max_send_wr, max_send_wqe_bytes(ia->qp_type, &ia->cap),
			 RTE_MAX(ia->cap.max_recv_wr, 1u), rnic_recv_wqe_stride(ia->cap.max_recv_sge)) != 0 ||
	    engine_mem_alloc(qp, dev->socket_id,
			     ia->srq != NULL ? rnic_srq_priv(ia->srq)->max_sge : RTE_MAX(ia->cap.max_recv_sge, 1u)) != 0) {
		err = ENOMEM;
		goto fail;
	}
	qp->owner = rnic_context_priv(pd->context)->owner;
	qp->tenant = rnic_context_priv(pd->context)->tenant;
	qp->sgid_mask = rnic_context_priv(pd->context)->sgid_mask;
	pthread_mutex_lock(&dev->lock);
	err = -alloc(dev, qp);
	pthread_mutex_unlock(&dev->lock);
	if (err != 0)
		goto fail;

	/* Report what the QP really holds, as libibverbs does. */
	ia->cap.max_send_wr = qp->sq.wqe_cnt;
	ia->cap.max_recv_wr = ia->cap.max_recv_wr == 0 ? 0 : qp->rq.wqe_cnt;
	qp->cap = ia->cap;
	qp->sq_sig_all = ia->sq_sig_all;
	qp->pub.context = pd->context;
	qp->pub.qp_context = ia->qp_context;
	qp->pub.pd = pd;
	qp->pub.send_cq = ia->send_cq;
	qp->pub.recv_cq = ia->recv_cq;
	qp->pub.srq = ia->srq;
	qp->pub.handle = qp->pub.qp_num;
	qp->pub.state = RNIC_QPS_RESET;
	qp->pub.qp_type = ia->qp_type;
	qp->attr.qp_state = RNIC_QPS_RESET;
	qp->attr.cap = qp->cap;
	rnic_cq_attach(ia->send_cq);
	rnic_cq_attach(ia->recv_cq);
	if (ia->srq != NULL)
		rnic_srq_attach(ia->srq);
	rnic_pd_get(pd);
	return &qp->pub;

fail:
	rnic_hostmem_free(pd->context, qp->hif);
	rte_free(qp->req.infl);
	rte_free(qp);
	errno = err;
	return NULL;
}

struct rnic_qp *
rnic_local_create_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia)
{
	return create_qp(pd, ia, alloc_slot);
}

struct rnic_qp *
rnic_local_create_gsi_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia)
{
	if (pd == NULL || ia == NULL || ia->qp_type != RNIC_QPT_UD) {
		errno = EINVAL;
		return NULL;
	}
	if (check_init_attr(rnic_ctx_dev(pd->context), ia) != 0) {
		errno = EINVAL;
		return NULL;
	}
	return create_qp(pd, ia, alloc_gsi_slot);
}

/* What a destroyed QP holds, once no engine lcore can still hold the QP it looked up before the QP left the
 * table (rnic_engine_retire): its kept frames, its CQ and PD references, its memory. */
static void
qp_release(void *arg)
{
	struct rnic_qp_priv *qp = arg;
	struct rnic_qp *pub = &qp->pub;

	rnic_engine_release_qp(pub);
	rnic_cq_detach(pub->send_cq);
	rnic_cq_detach(pub->recv_cq);
	if (pub->srq != NULL)
		rnic_srq_detach(pub->srq);
	rnic_pd_put(pub->pd);
	rnic_hostmem_free(pub->context, qp->hif);
	rte_free(qp->req.infl);
	rte_free(qp->resp.rd);
	rte_free(qp);
}

int
rnic_destroy_qp(struct rnic_qp *pub)
{
	if (pub == NULL)
		return EINVAL;
	return rnic_ctx_ops(pub->context)->destroy_qp(pub);
}

int
rnic_local_destroy_qp(struct rnic_qp *pub)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	struct rnic_device *dev = rnic_ctx_dev(pub->context);
	int ret;

	pthread_mutex_lock(&dev->lock);
	__atomic_store_n(&dev->qp_table->slot[qp->slot], NULL, __ATOMIC_RELEASE);
	if (qp->slot != GSI_SLOT)
		dev->qp_table->nb_qp--;
	pthread_mutex_unlock(&dev->lock);
	peers_changed();
	ret = rnic_engine_retire(qp_release, qp);
	if (ret != 0)
		RNIC_LOG(WARNING, "QP %u: engine did not quiesce; QP %s", pub->qp_num,
			 ret > 0 ? "released when it does" : "leaked (deferred queue full)");
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The state machine                                                                                        */

void
rnic_qp_enter(struct rnic_qp *qp, enum rnic_qp_state state)
{
	rnic_qp_priv(qp)->attr.qp_state = state;
	__atomic_store_n(rnic_qp_priv(qp)->post_state, state, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->state, state, __ATOMIC_RELEASE);
}

void
rnic_qp_fail(struct rnic_qp *qp)
{
	rnic_qp_enter(qp, RNIC_QPS_ERR);
}

enum { QPT_RC, QPT_UC, QPT_UD, QPT_N };

#define M(x) RNIC_QP_ ## x
#define RC_PATH_OPTS (M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE))

/* Required and optional attributes per transition and QP type: Linux ib_modify_qp_is_ok()'s table, and
 * rate_limit on every move to RTS, as mlx5 takes it for RC, UC and UD QPs (doc/congestion.md). */
static const struct transition {
	uint8_t valid;
	uint32_t req[QPT_N];
	uint32_t opt[QPT_N];
} transitions[RNIC_QPS_ERR + 1][RNIC_QPS_ERR + 1] = {
	[RNIC_QPS_RESET] = {
		[RNIC_QPS_RESET] = { .valid = 1 },
		[RNIC_QPS_ERR] = { .valid = 1 },
		[RNIC_QPS_INIT] = { .valid = 1, .req = {
			[QPT_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
			[QPT_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
			[QPT_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS) } },
	},
	[RNIC_QPS_INIT] = {
		[RNIC_QPS_RESET] = { .valid = 1 },
		[RNIC_QPS_ERR] = { .valid = 1 },
		[RNIC_QPS_INIT] = { .valid = 1, .opt = {
			[QPT_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
			[QPT_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
			[QPT_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS) } },
		[RNIC_QPS_RTR] = { .valid = 1,
			.req = {
				[QPT_UC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
				[QPT_RC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
					   M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER) },
			.opt = {
				[QPT_UD] = M(PKEY_INDEX) | M(QKEY),
				[QPT_UC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[QPT_RC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) } },
	},
	[RNIC_QPS_RTR] = {
		[RNIC_QPS_RESET] = { .valid = 1 },
		[RNIC_QPS_ERR] = { .valid = 1 },
		[RNIC_QPS_RTS] = { .valid = 1,
			.req = {
				[QPT_UD] = M(SQ_PSN),
				[QPT_UC] = M(SQ_PSN),
				[QPT_RC] = M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) |
					   M(MAX_QP_RD_ATOMIC) },
			.opt = {
				[QPT_UD] = M(CUR_STATE) | M(RATE_LIMIT) | M(QKEY),
				[QPT_UC] = M(CUR_STATE) | M(RATE_LIMIT) | RC_PATH_OPTS,
				[QPT_RC] = M(CUR_STATE) | M(RATE_LIMIT) | RC_PATH_OPTS | M(MIN_RNR_TIMER) } },
	},
	[RNIC_QPS_RTS] = {
		[RNIC_QPS_RESET] = { .valid = 1 },
		[RNIC_QPS_ERR] = { .valid = 1 },
		[RNIC_QPS_RTS] = { .valid = 1, .opt = {
			[QPT_UD] = M(CUR_STATE) | M(RATE_LIMIT) | M(QKEY),
			[QPT_UC] = M(CUR_STATE) | M(RATE_LIMIT) | RC_PATH_OPTS,
			[QPT_RC] = M(CUR_STATE) | M(RATE_LIMIT) | RC_PATH_OPTS | M(MIN_RNR_TIMER) } },
		[RNIC_QPS_SQD] = { .valid = 1, .opt = {
			[QPT_UD] = M(EN_SQD_ASYNC_NOTIFY),
			[QPT_UC] = M(EN_SQD_ASYNC_NOTIFY),
			[QPT_RC] = M(EN_SQD_ASYNC_NOTIFY) } },
	},
	[RNIC_QPS_SQD] = {
		[RNIC_QPS_RESET] = { .valid = 1 },
		[RNIC_QPS_ERR] = { .valid = 1 },
		[RNIC_QPS_RTS] = { .valid = 1, .opt = {
			[QPT_UD] = M(CUR_STATE) | M(RATE_LIMIT) | M(QKEY),
			[QPT_UC] = M(CUR_STATE) | M(RATE_LIMIT) | RC_PATH_OPTS,
			[QPT_RC] = M(CUR_STATE) | M(RATE_LIMIT) | RC_PATH_OPTS | M(MIN_RNR_TIMER) } },
		[RNIC_QPS_SQD] = { .valid = 1, .opt = {
			[QPT_UD] = M(PKEY_INDEX) | M(QKEY),
			[QPT_UC] = M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PATH_MIG_STATE),
			[QPT_RC] = M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
				   M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC) | RC_PATH_OPTS | M(PKEY_INDEX) |
				   M(MIN_RNR_TIMER) } },
	},
	[RNIC_QPS_SQE] = {
		[RNIC_QPS_RESET] = { .valid = 1 },
		[RNIC_QPS_ERR] = { .valid = 1 },
		[RNIC_QPS_RTS] = { .valid = 1, .opt = {
			[QPT_UD] = M(CUR_STATE) | M(RATE_LIMIT) | M(QKEY),
			[QPT_UC] = M(CUR_STATE) | M(RATE_LIMIT) | M(ACCESS_FLAGS) } },
	},
	[RNIC_QPS_ERR] = {
		[RNIC_QPS_RESET] = { .valid = 1 },
		[RNIC_QPS_ERR] = { .valid = 1 },
	},
};

static int
qpt_index(enum rnic_qp_type type)
{
	return type == RNIC_QPT_RC ? QPT_RC : type == RNIC_QPT_UC ? QPT_UC : QPT_UD;
}

/* Whether the transition and its attribute mask are legal (ib_modify_qp_is_ok). */
static int
transition_ok(enum rnic_qp_state cur, enum rnic_qp_state next, enum rnic_qp_type type, uint32_t mask)
{
	const struct transition *tr;
	int t = qpt_index(type);

	if ((unsigned int)cur > RNIC_QPS_ERR || (unsigned int)next > RNIC_QPS_ERR)
		return 0;
	if ((mask & RNIC_QP_CUR_STATE) && cur != RNIC_QPS_RTR && cur != RNIC_QPS_RTS && cur != RNIC_QPS_SQD &&
	    cur != RNIC_QPS_SQE)
		return 0;
	tr = &transitions[cur][next];
	if (!tr->valid || (mask & tr->req[t]) != tr->req[t])
		return 0;
	return !(mask & ~(tr->req[t] | tr->opt[t] | RNIC_QP_STATE));
}

#define QP_ACCESS_FLAGS (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ | \
			 RNIC_ACCESS_REMOTE_ATOMIC)

static int
check_av(const struct rnic_device *dev, const struct rnic_ah_attr *av)
{
	static const union rnic_gid zero;

	/* RoCE: a GRH with a known source GID and a destination GID, on port 1. */
	return av->is_global && av->port_num == 1 && av->grh.sgid_index < dev->gid_count &&
	       memcmp(&av->grh.dgid, &zero, sizeof(zero)) != 0;
}

/* Value checks of the attributes the mask names. */
static int
attr_values_ok(const struct rnic_device *dev, const struct rnic_qp_attr *a, uint32_t mask)
{
	if ((mask & M(PATH_MTU)) && (a->path_mtu < RNIC_MTU_256 || a->path_mtu > RNIC_MTU_4096))
		return 0;
	/* Frames above the port's MTU would never leave it (retry exceeded, with nothing said): refused, as
	 * rxe refuses a path MTU above its netdev's. */
	if ((mask & M(PATH_MTU)) && a->path_mtu > dev->active_mtu) {
		RNIC_LOG_LIMITED(ERR, "modify_qp: path MTU %u above the port's active MTU %u",
				 128u << a->path_mtu, 128u << dev->active_mtu);
		return 0;
	}
	if ((mask & M(TIMEOUT)) && a->timeout > 31)
		return 0;
	if ((mask & M(RETRY_CNT)) && a->retry_cnt > 7)
		return 0;
	if ((mask & M(RNR_RETRY)) && a->rnr_retry > 7)
		return 0;
	if ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return 0;
	if ((mask & M(SQ_PSN)) && a->sq_psn > QPN_MASK)
		return 0;
	if ((mask & M(RQ_PSN)) && a->rq_psn > QPN_MASK)
		return 0;
	if ((mask & M(DEST_QPN)) && a->dest_qp_num > QPN_MASK)
		return 0;
	if ((mask & M(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > dev->lim.max_qp_rd_atom)
		return 0;
	if ((mask & M(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > dev->lim.max_qp_rd_atom)
		return 0;
	if ((mask & M(ACCESS_FLAGS)) && (a->qp_access_flags & ~QP_ACCESS_FLAGS))
		return 0;
	if ((mask & M(PORT)) && a->port_num != 1)
		return 0;
	if ((mask & M(PKEY_INDEX)) && a->pkey_index != 0)
		return 0;
	if ((mask & M(AV)) && !check_av(dev, &a->ah_attr))
		return 0;
	if ((mask & M(PATH_MIG_STATE)) && a->path_mig_state != RNIC_MIG_MIGRATED)
		return 0;
	/* Alternate paths (automatic path migration) are not implemented. */
	return !(mask & M(ALT_PATH));
}

static void
apply_attrs(struct rnic_qp_attr *cur, const struct rnic_qp_attr *a, uint32_t mask)
{
#define COPY(bit, field) do { if (mask & M(bit)) cur->field = a->field; } while (0)
	COPY(PATH_MTU, path_mtu);
	COPY(TIMEOUT, timeout);
	COPY(RETRY_CNT, retry_cnt);
	COPY(RNR_RETRY, rnr_retry);
	COPY(MIN_RNR_TIMER, min_rnr_timer);
	COPY(SQ_PSN, sq_psn);
	COPY(RQ_PSN, rq_psn);
	COPY(DEST_QPN, dest_qp_num);
	COPY(MAX_QP_RD_ATOMIC, max_rd_atomic);
	COPY(MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	COPY(ACCESS_FLAGS, qp_access_flags);
	COPY(PORT, port_num);
	COPY(PKEY_INDEX, pkey_index);
	COPY(QKEY, qkey);
	COPY(AV, ah_attr);
	COPY(PATH_MIG_STATE, path_mig_state);
	COPY(EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
#undef COPY
	/* The requester reads it while the QP sends (its pacer, rnic_pacer.c). */
	if (mask & M(RATE_LIMIT))
		__atomic_store_n(&cur->rate_limit, a->rate_limit, __ATOMIC_RELAXED);
}

/* A QP entered RESET: once no engine lcore can be in the middle of it, empty its queues and give its kept
 * frames back. */
static void
reset_queues(struct rnic_qp_priv *qp)
{
	if (rnic_engine_quiesce() < 0)
		RNIC_LOG(WARNING, "QP %u: engine did not quiesce; reset anyway", qp->pub.qp_num);
	wq_reset(&qp->sq, &qp->req.sq_done);
	wq_reset(&qp->rq, &qp->resp.rq_done);
	/* A WQE taken from an SRQ and not completed (a reset straight from a working state) is dropped, as
	 * the RQ's are; the next error raises Last WQE Reached again. */
	qp->resp.srq_held = 0;
	qp->resp.last_wqe_raised = 0;
	rnic_engine_release_qp(&qp->pub);
}

/* Responder resources for max_dest_rd_atomic: rounded up to a power of two, at least one (a WRITE/SEND QP
 * needs one). */
static uint32_t
resp_res_count(uint8_t max_dest_rd_atomic)
{
	return rte_align32pow2(RTE_MAX((uint32_t)max_dest_rd_atomic, 1u));
}

static struct rnic_resp_res *
resp_res_block(struct rnic_qp_priv *qp, uint32_t n)
{
	return rte_zmalloc_socket("rnic_resp_res", n * sizeof(struct rnic_resp_res), RTE_CACHE_LINE_SIZE,
				  rnic_ctx_dev(qp->pub.context)->socket_id);
}

/* The responder resources of an RC QP entering RTR; the QP's until it is destroyed, or entered RTR again with
 * another count. The QP is in INIT: no lcore looks at them. */
static int
resp_res_alloc(struct rnic_qp_priv *qp, uint8_t max_dest_rd_atomic)
{
	uint32_t n = resp_res_count(max_dest_rd_atomic);
	struct rnic_resp_ctx *r = &qp->resp;
	struct rnic_resp_res *block;

	if (r->rd != NULL && r->rd_mask + 1 == n)
		return 0;
	block = resp_res_block(qp, n);
	if (block == NULL)
		return -ENOMEM;
	rte_free(r->rd);
	r->rd = block;
	r->rd_mask = n - 1;
	return 0;
}

/*
 * max_dest_rd_atomic changed in SQD -> SQD (IBA 10.3: the responder resources may change there): the
 * resources are moved to a block of the new size, the newest ones kept (a smaller set keeps those it has
 * room for). The responder answers in SQD, so for that moment the QP is in no state it answers in (its
 * requests are dropped and resent by the peer) and no lcore is still in the middle of it.
 */
static int
resp_res_resize(struct rnic_qp_priv *qp, uint8_t max_dest_rd_atomic)
{
	uint32_t n = resp_res_count(max_dest_rd_atomic), keep;
	struct rnic_resp_ctx *r = &qp->resp;
	struct rnic_resp_res *block;

	if (r->rd_mask + 1 == n)
		return 0;
	block = resp_res_block(qp, n);
	if (block == NULL)
		return -ENOMEM;
	__atomic_store_n(&qp->pub.state, RNIC_QPS_UNKNOWN, __ATOMIC_RELEASE);
	if (rnic_engine_quiesce() < 0)
		RNIC_LOG(WARNING, "QP %u: engine did not quiesce; responder resources moved anyway", qp->pub.qp_num);
	keep = RTE_MIN(r->rd_kept, n);
	for (uint32_t i = r->rd_tail - keep; i != r->rd_tail; i++)
		block[i & (n - 1)] = r->rd[i & r->rd_mask];
	r->rd_kept = keep;
	if ((int32_t)(r->rd_head - (r->rd_tail - keep)) < 0)
		r->rd_head = r->rd_tail - keep;	/* the older ones' responses are dropped with them */
	rte_free(r->rd);
	r->rd = block;
	r->rd_mask = n - 1;
	return 0;
}

/* The requester's windows (rnic_qp.h) and how often it asks for an ACK: every quarter window of full packets,
 * RNIC_ACK_EVERY packets at most. */
static void
req_window(struct rnic_qp_priv *qp, uint32_t window)
{
	uint32_t packets = window >> (7 + qp->attr.path_mtu);	/* path MTU = 128 << path_mtu */

	qp->req.window = window;
	qp->req.ack_every = (uint8_t)RTE_MIN(RTE_MAX(packets / 4, 1u), RNIC_ACK_EVERY);
	qp->req.rd_window = RNIC_MAX_READ_WINDOW;
	qp->req.rd_cut = qp->req.npsn;
}

int
rnic_modify_qp(struct rnic_qp *pub, struct rnic_qp_attr *attr, int attr_mask)
{
	if (pub == NULL || attr == NULL)
		return EINVAL;
	return rnic_ctx_ops(pub->context)->modify_qp(pub, attr, attr_mask);
}

int
rnic_local_modify_qp(struct rnic_qp *pub, struct rnic_qp_attr *attr, int attr_mask)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	enum rnic_qp_state cur = pub->state, next;
	uint32_t mask = (uint32_t)attr_mask;

	/* CUR_STATE names the state the caller believes the QP is in; it must be right. */
	if ((mask & M(CUR_STATE)) && attr->cur_qp_state != cur)
		return EINVAL;
	next = (mask & M(STATE)) ? attr->qp_state : cur;
	if (!transition_ok(cur, next, pub->qp_type, mask) || !attr_values_ok(rnic_ctx_dev(pub->context), attr, mask))
		return EINVAL;

	if (cur == RNIC_QPS_INIT && next == RNIC_QPS_RTR && pub->qp_type == RNIC_QPT_RC &&
	    resp_res_alloc(qp, (mask & M(MAX_DEST_RD_ATOMIC)) ? attr->max_dest_rd_atomic :
			   qp->attr.max_dest_rd_atomic) != 0)
		return ENOMEM;
	if (cur == RNIC_QPS_SQD && next == RNIC_QPS_SQD && (mask & M(MAX_DEST_RD_ATOMIC)) &&
	    resp_res_resize(qp, attr->max_dest_rd_atomic) != 0)
		return ENOMEM;
	/* SQE -> RTS: the requester lcore finishes the flush it was doing when the QP entered SQE before the
	 * QP sends again. */
	if (cur == RNIC_QPS_SQE && next == RNIC_QPS_RTS && rnic_engine_quiesce() < 0)
		RNIC_LOG(WARNING, "QP %u: engine did not quiesce; back to RTS anyway", pub->qp_num);
	apply_attrs(&qp->attr, attr, mask);
	/* The engine starts each direction from the PSN the peer agreed on. */
	if (cur == RNIC_QPS_INIT && next == RNIC_QPS_RTR) {
		memset(&qp->resp, 0, offsetof(struct rnic_resp_ctx, rd_mask));
		qp->resp.epsn = qp->attr.rq_psn;
		/* The peer's MAC is asked for now (ARP/ND), as a kernel RNIC driver does at RTR; the first frame
		 * to it waits for the answer (rnic_neigh.h). */
		if (pub->qp_type != RNIC_QPT_UD)
			rnic_engine_route_prepare(rnic_ctx_dev(pub->context), &qp->attr.ah_attr.grh.dgid);
	}
	if (cur == RNIC_QPS_RTR && next == RNIC_QPS_RTS) {
		memset(&qp->req, 0, offsetof(struct rnic_req_ctx, infl_mask));
		memset(&qp->cc, 0, sizeof(qp->cc));
		qp->req.npsn = qp->attr.sq_psn;
		qp->req.una = qp->attr.sq_psn;
		qp->req.sent_psn = rnic_psn_prev(qp->attr.sq_psn);
		qp->req.acked = qp->req.sent_psn;
		qp->req.ask_psn = qp->req.sent_psn;
		qp->req.retry_left = qp->attr.retry_cnt;
		qp->req.rnr_left = qp->attr.rnr_retry;
		qp->req.sq_next = qp->req.sq_head_seen = qp->req.sq_done;
		req_window(qp, rnic_ctx_dev(pub->context)->lim.window);
	}
	qp->attr.qp_state = next;
	qp->attr.cur_qp_state = next;
	qp->attr.sq_draining = 0;
	__atomic_store_n(&pub->state, next, __ATOMIC_RELEASE);
	__atomic_store_n(qp->post_state, next, __ATOMIC_RELEASE);
	peers_changed();
	if (next == RNIC_QPS_ERR)
		rnic_qp_error_flush(pub);
	if (next == RNIC_QPS_RESET)
		reset_queues(qp);
	/* WQEs posted while the QP could not send (SQD) were not started: the requester looks again. */
	if (next == RNIC_QPS_RTS && cur != RNIC_QPS_RTS && rnic_engine_running())
		rnic_qp_notify_engine(pub);
	return 0;
}

int
rnic_query_qp_counters(struct rnic_qp *pub, struct rnic_qp_counters *counters)
{
	if (pub == NULL || counters == NULL)
		return EINVAL;
	return rnic_ctx_ops(pub->context)->query_qp_counters(pub, counters);
}

int
rnic_local_query_qp_counters(struct rnic_qp *pub, struct rnic_qp_counters *counters)
{
	/* Counter by counter: each is a whole 64-bit load of a value one lcore stores. */
	const uint64_t *src = (const uint64_t *)&rnic_qp_priv(pub)->counters;
	uint64_t *dst = (uint64_t *)counters;

	for (size_t i = 0; i < sizeof(*counters) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	return 0;
}

int
rnic_local_query_qp(struct rnic_qp *pub, struct rnic_qp_attr *attr)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);

	*attr = qp->attr;
	attr->qp_state = pub->state;
	attr->cur_qp_state = pub->state;
	attr->cap = qp->cap;
	return 0;
}

int
rnic_query_qp(struct rnic_qp *pub, struct rnic_qp_attr *attr, int attr_mask, struct rnic_qp_init_attr *init)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	int ret;

	(void)attr_mask;	/* as most providers: every attribute is returned */
	if (pub == NULL || attr == NULL || init == NULL)
		return EINVAL;
	ret = rnic_ctx_ops(pub->context)->query_qp(pub, attr);
	if (ret != 0)
		return ret;
	memset(init, 0, sizeof(*init));
	init->qp_context = pub->qp_context;
	init->send_cq = pub->send_cq;
	init->recv_cq = pub->recv_cq;
	init->srq = pub->srq;
	init->cap = qp->cap;
	init->qp_type = pub->qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}
