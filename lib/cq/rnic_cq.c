/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues: CQE production (engine side), arming and completion events (application side),
 * completion channels. Polling, which maps CQEs back to the QPs' work requests, is in lib/qp (rnic_poll.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_atomic.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "rnic_cq.h"

#define CHANNEL_RING_SIZE 4096
#define SN_MASK 3u

struct rnic_cq_table {
	struct rnic_cq_priv **cq;	/* by CQN - 1 */
	uint32_t nb_cq;
	uint32_t next_free;		/* lowest possibly free slot */
};

static const struct {
	enum rnic_wc_status status;
	uint8_t syndrome;
} syndromes[] = {
	{ RNIC_WC_LOC_LEN_ERR, RNIC_CQE_SYND_LOCAL_LENGTH },
	{ RNIC_WC_LOC_QP_OP_ERR, RNIC_CQE_SYND_LOCAL_QP_OP },
	{ RNIC_WC_LOC_PROT_ERR, RNIC_CQE_SYND_LOCAL_PROT },
	{ RNIC_WC_WR_FLUSH_ERR, RNIC_CQE_SYND_WR_FLUSH },
	{ RNIC_WC_MW_BIND_ERR, RNIC_CQE_SYND_MW_BIND },
	{ RNIC_WC_BAD_RESP_ERR, RNIC_CQE_SYND_BAD_RESP },
	{ RNIC_WC_LOC_ACCESS_ERR, RNIC_CQE_SYND_LOCAL_ACCESS },
	{ RNIC_WC_REM_INV_REQ_ERR, RNIC_CQE_SYND_REMOTE_INVAL_REQ },
	{ RNIC_WC_REM_ACCESS_ERR, RNIC_CQE_SYND_REMOTE_ACCESS },
	{ RNIC_WC_REM_OP_ERR, RNIC_CQE_SYND_REMOTE_OP },
	{ RNIC_WC_RETRY_EXC_ERR, RNIC_CQE_SYND_RETRY_EXC },
	{ RNIC_WC_RNR_RETRY_EXC_ERR, RNIC_CQE_SYND_RNR_RETRY_EXC },
	{ RNIC_WC_REM_ABORT_ERR, RNIC_CQE_SYND_REMOTE_ABORT },
};

uint8_t
rnic_cqe_syndrome(enum rnic_wc_status status)
{
	for (unsigned int i = 0; i < RTE_DIM(syndromes); i++)
		if (syndromes[i].status == status)
			return syndromes[i].syndrome;
	return RNIC_CQE_SYND_LOCAL_QP_OP;	/* statuses mlx5 has no syndrome for (fatal, general) */
}

enum rnic_wc_status
rnic_cqe_status(uint8_t syndrome)
{
	for (unsigned int i = 0; i < RTE_DIM(syndromes); i++)
		if (syndromes[i].syndrome == syndrome)
			return syndromes[i].status;
	return RNIC_WC_GENERAL_ERR;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Table                                                                                                    */

int
rnic_cq_table_create(struct rnic_device *dev)
{
	struct rnic_cq_table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return -ENOMEM;
	t->cq = calloc(dev->lim.max_cq, sizeof(*t->cq));
	if (t->cq == NULL) {
		free(t);
		return -ENOMEM;
	}
	t->nb_cq = dev->lim.max_cq;
	dev->cq_table = t;
	return 0;
}

void
rnic_cq_table_free(struct rnic_device *dev)
{
	if (dev->cq_table == NULL)
		return;
	free(dev->cq_table->cq);
	free(dev->cq_table);
	dev->cq_table = NULL;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Completion channels and events                                                                          */

struct rnic_comp_channel *
rnic_create_comp_channel(struct rnic_context *context)
{
	if (context == NULL) {
		errno = EINVAL;
		return NULL;
	}
	return rnic_ctx_ops(context)->create_comp_channel(context);
}

struct rnic_comp_channel *
rnic_local_create_comp_channel(struct rnic_context *context)
{
	struct rnic_comp_channel_priv *ch;
	char name[RTE_RING_NAMESIZE];

	ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	snprintf(name, sizeof(name), "rnic_ch_%p", (void *)ch);
	if (rnic_evq_create(&ch->events, name, sizeof(struct rnic_cq *), CHANNEL_RING_SIZE,
			    rnic_ctx_dev(context)->socket_id) != 0) {
		free(ch);
		errno = ENOMEM;
		return NULL;
	}
	ch->pub.fd = ch->events.fd;
	ch->pub.context = context;
	rnic_ctx_hold(context);
	return &ch->pub;
}

int
rnic_destroy_comp_channel(struct rnic_comp_channel *channel)
{
	if (channel == NULL)
		return EINVAL;
	return rnic_ctx_ops(channel->context)->destroy_comp_channel(channel);
}

int
rnic_local_destroy_comp_channel(struct rnic_comp_channel *channel)
{
	struct rnic_comp_channel_priv *ch = (struct rnic_comp_channel_priv *)channel;

	if (__atomic_load_n(&ch->nb_cqs, __ATOMIC_ACQUIRE) != 0)
		return EBUSY;
	rnic_ctx_release(channel->context);
	rnic_evq_free(&ch->events);
	free(ch);
	return 0;
}

/* Queue one completion event for the CQ (its channel's eventfd becomes readable). */
void
rnic_local_deliver_cq_event(struct rnic_cq *pub)
{
	struct rnic_comp_channel_priv *ch = (struct rnic_comp_channel_priv *)pub->channel;
	struct rnic_cq_priv *cq = rnic_cq_priv(pub);

	if (rnic_evq_post(&ch->events, &cq, sizeof(cq)) != 0)
		RNIC_LOG_LIMITED(ERR, "CQ %u: completion channel full, event lost", cq->cqn);
}

/* Deliver one completion event for the CQ, through its provider's channel. */
static void
deliver_event(struct rnic_cq_priv *cq)
{
	__atomic_fetch_add(&cq->events, 1, __ATOMIC_RELAXED);
	if (cq->pub.channel != NULL)
		rnic_ctx_ops(cq->pub.context)->deliver_cq_event(&cq->pub);
}

/* Fire the armed event at most once: whoever clears the arm word delivers it. */
static void
fire(struct rnic_cq_priv *cq, uint32_t armed)
{
	if (!__atomic_compare_exchange_n(&cq->hif->arm, &armed, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&cq->hif->last_fired_sn, (armed & SN_MASK) + 1, __ATOMIC_RELEASE);
	deliver_event(cq);
}

int
rnic_get_cq_event(struct rnic_comp_channel *channel, struct rnic_cq **cq, void **cq_context)
{
	if (channel == NULL || cq == NULL || cq_context == NULL) {
		errno = EINVAL;
		return -1;
	}
	return rnic_ctx_ops(channel->context)->get_cq_event(channel, cq, cq_context);
}

int
rnic_local_get_cq_event(struct rnic_comp_channel *channel, struct rnic_cq **cq, void **cq_context)
{
	struct rnic_comp_channel_priv *ch = (struct rnic_comp_channel_priv *)channel;

	if (rnic_evq_get(&ch->events, cq, sizeof(*cq)) != 0)
		return -1;
	*cq_context = (*cq)->cq_context;
	/* As mlx5_cq_event: the next arm uses the next sequence number. */
	rnic_cq_priv(*cq)->arm_sn++;
	return 0;
}

void
rnic_ack_cq_events(struct rnic_cq *cq, unsigned int nevents)
{
	if (cq != NULL)
		__atomic_fetch_add(&cq->comp_events_completed, nevents, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Create / destroy                                                                                         */

size_t
rnic_cq_hif_size(uint32_t nent)
{
	return RTE_ALIGN_CEIL(sizeof(struct rnic_cqe64) * nent + sizeof(struct rnic_cq_hif), 4096);
}

void
rnic_cq_bind(struct rnic_cq_priv *cq, void *base, uint32_t nent)
{
	cq->cqes = base;
	cq->hif = (struct rnic_cq_hif *)&cq->cqes[nent];
	cq->dbrec = cq->hif->dbrec;
	cq->log_nent = (uint32_t)rte_log2_u32(nent);
}

static int
alloc_cqn(struct rnic_device *dev, struct rnic_cq_priv *cq)
{
	struct rnic_cq_table *t = dev->cq_table;

	for (uint32_t i = t->next_free; i < t->nb_cq; i++) {
		if (t->cq[i] == NULL) {
			t->cq[i] = cq;
			t->next_free = i + 1;
			return (int)i + 1;
		}
	}
	return -1;
}

struct rnic_cq *
rnic_local_create_cq(struct rnic_context *context, int cqe, void *cq_context, struct rnic_comp_channel *channel,
		     int comp_vector)
{
	struct rnic_device *dev = rnic_ctx_dev(context);
	struct rnic_cq_priv *cq;
	void *block;
	uint32_t nent;
	int cqn;

	RTE_SET_USED(comp_vector);	/* one completion vector */
	nent = rte_align32pow2((uint32_t)cqe + 1);	/* one slot more, as mlx5 does */
	cq = rte_zmalloc_socket("rnic_cq", sizeof(*cq), RTE_CACHE_LINE_SIZE, dev->socket_id);
	block = cq == NULL ? NULL : rnic_hostmem_alloc(context, rnic_cq_hif_size(nent));
	if (block == NULL) {
		rte_free(cq);
		errno = ENOMEM;
		return NULL;
	}
	rnic_cq_bind(cq, block, nent);
	for (uint32_t i = 0; i < nent; i++)
		cq->cqes[i].op_own = RNIC_CQE_OP_OWN_INIT;

	pthread_mutex_lock(&dev->lock);
	cqn = alloc_cqn(dev, cq);
	pthread_mutex_unlock(&dev->lock);
	if (cqn < 0) {
		rnic_hostmem_free(context, cq->cqes);
		rte_free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->cqn = (uint32_t)cqn;
	cq->pub.context = context;
	cq->pub.channel = channel;
	cq->pub.cq_context = cq_context;
	cq->pub.handle = cq->cqn;
	cq->pub.cqe = (int)nent - 1;
	if (channel != NULL)
		__atomic_fetch_add(&((struct rnic_comp_channel_priv *)channel)->nb_cqs, 1, __ATOMIC_ACQ_REL);
	return &cq->pub;
}

struct rnic_cq *
rnic_create_cq(struct rnic_context *context, int cqe, void *cq_context, struct rnic_comp_channel *channel,
	       int comp_vector)
{
	struct rnic_cq *cq;

	if (context == NULL || (channel != NULL && channel->context != context) || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors || cqe <= 0 ||
	    (uint32_t)cqe > rnic_ctx_dev(context)->lim.max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	cq = rnic_ctx_ops(context)->create_cq(context, cqe, cq_context, channel, comp_vector);
	if (cq != NULL)
		rnic_ctx_hold(context);
	return cq;
}

int
rnic_local_destroy_cq(struct rnic_cq *pub)
{
	struct rnic_cq_priv *cq = rnic_cq_priv(pub);
	struct rnic_device *dev;
	struct rnic_cq_table *t;

	/* A QP still completes here; and events not yet acknowledged would point at freed memory. */
	if (__atomic_load_n(&pub->comp_events_completed, __ATOMIC_ACQUIRE) != cq->arm_sn ||
	    !rnic_engine_users_gone(&cq->attached))
		return EBUSY;
	dev = rnic_ctx_dev(pub->context);
	t = dev->cq_table;
	pthread_mutex_lock(&dev->lock);
	t->cq[cq->cqn - 1] = NULL;
	if (cq->cqn - 1 < t->next_free)
		t->next_free = cq->cqn - 1;
	pthread_mutex_unlock(&dev->lock);
	if (pub->channel != NULL)
		__atomic_fetch_sub(&((struct rnic_comp_channel_priv *)pub->channel)->nb_cqs, 1, __ATOMIC_ACQ_REL);
	rnic_hostmem_free(pub->context, cq->cqes);
	rte_free(cq);
	return 0;
}

int
rnic_destroy_cq(struct rnic_cq *cq)
{
	struct rnic_context *context;
	int ret;

	if (cq == NULL)
		return EINVAL;
	context = cq->context;
	ret = rnic_ctx_ops(context)->destroy_cq(cq);
	if (ret == 0)
		rnic_ctx_release(context);
	return ret;
}

void
rnic_cq_attach(struct rnic_cq *cq)
{
	__atomic_fetch_add(&rnic_cq_priv(cq)->attached, 1, __ATOMIC_ACQ_REL);
}

void
rnic_cq_detach(struct rnic_cq *cq)
{
	__atomic_fetch_sub(&rnic_cq_priv(cq)->attached, 1, __ATOMIC_ACQ_REL);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Producer                                                                                                 */

static uint8_t
cqe_opcode(const struct rnic_cqe_desc *d)
{
	if (d->status != RNIC_WC_SUCCESS)
		return d->is_send ? RNIC_CQE_REQ_ERR : RNIC_CQE_RESP_ERR;
	if (d->is_send)
		return RNIC_CQE_REQ;
	if (d->is_rdma_write)
		return RNIC_CQE_RESP_RDMA_WRITE_IMM;
	if (d->with_inv)
		return RNIC_CQE_RESP_SEND_INV;
	return d->with_imm ? RNIC_CQE_RESP_SEND_IMM : RNIC_CQE_RESP_SEND;
}

static void
encode_cqe(struct rnic_cqe64 *cqe, const struct rnic_cqe_desc *d)
{
	memset(cqe, 0, offsetof(struct rnic_cqe64, op_own));
	cqe->sop_drop_qpn = rte_cpu_to_be_32((uint32_t)d->wqe_opcode << 24 | (d->qpn & 0xffffff));
	cqe->wqe_counter = rte_cpu_to_be_16(d->wqe_counter);
	if (d->srqn != 0) {
		cqe->srqn_uidx = rte_cpu_to_be_32(d->srqn);
		cqe->srq_wr_id = rte_cpu_to_be_64(d->wr_id);
	}
	if (d->status != RNIC_WC_SUCCESS) {
		((uint8_t *)cqe)[RNIC_ERR_CQE_VENDOR_SYND] = d->vendor_err;
		((uint8_t *)cqe)[RNIC_ERR_CQE_SYNDROME] = rnic_cqe_syndrome(d->status);
		return;
	}
	cqe->byte_cnt = rte_cpu_to_be_32(d->byte_cnt);
	cqe->imm_inval_pkey = d->with_inv ? rte_cpu_to_be_32(d->imm_inval) : d->imm_inval;
	cqe->flags_rqpn = rte_cpu_to_be_32((uint32_t)(d->grh ? 1 : 0) << RNIC_CQE_GRH_SHIFT |
					   (d->src_qp & 0xffffff));
	/* cqe->timestamp stays 0: no completion timestamps (the verbs API here has none to return). */
}

/* Entries the consumer has not released yet, from the doorbell record it updates. */
static uint32_t
cq_used(const struct rnic_cq_priv *cq, uint32_t prod)
{
	uint32_t ci = rte_be_to_cpu_32(__atomic_load_n(&cq->dbrec[RNIC_CQ_DB_SET_CI], __ATOMIC_ACQUIRE));

	return (prod - ci) & 0xffffff;
}

uint32_t
rnic_cq_free_slots(struct rnic_cq *pub)
{
	struct rnic_cq_priv *cq = rnic_cq_priv(pub);

	return (1u << cq->log_nent) - cq_used(cq, __atomic_load_n(&cq->hif->prod, __ATOMIC_ACQUIRE));
}

/* Never overwrite: the CQ goes to error and its owner is told once (IBA 11.6.3, CQ overrun). */
static int
overflow(struct rnic_cq_priv *cq)
{
	if (__atomic_exchange_n(&cq->failed, 1, __ATOMIC_ACQ_REL) == 0) {
		__atomic_store_n(&cq->hif->error, 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&cq->overflows, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&rnic_ctx_dev(cq->pub.context)->cq_errors, 1, __ATOMIC_RELAXED);
		RNIC_LOG_LIMITED(ERR, "CQ %u overflowed (%u entries): CQ in error", cq->cqn, 1u << cq->log_nent);
		rnic_async_event_raise(cq->pub.context, RNIC_EVENT_CQ_ERR, &cq->pub);
	}
	return -ENOSPC;
}

/* Reserve n entries (one compare-and-swap); returns the first, or a negative errno (nothing reserved):
 * -EAGAIN when more than one entry was asked and they do not all fit. */
static int64_t
reserve(struct rnic_cq_priv *cq, uint32_t n)
{
	uint32_t nent = 1u << cq->log_nent, prod;

	/*
	 * Producers (the requester and responder lcores, when a QP's send and receive completions share the
	 * CQ) reserve their entries with a compare-and-swap; the consumer takes entries in order, so an entry
	 * reserved but not yet written holds back the ones after it, never the reverse.
	 */
	prod = __atomic_load_n(&cq->hif->prod, __ATOMIC_ACQUIRE);
	do {
		if (__atomic_load_n(&cq->failed, __ATOMIC_ACQUIRE))
			return -EIO;
		/* The consumer index seen last only lags: a CQ that looks full by it is checked for real. */
		if (((prod + n - 1 - __atomic_load_n(&cq->ci_seen, __ATOMIC_RELAXED)) & 0xffffff) >= nent) {
			uint32_t ci = rte_be_to_cpu_32(__atomic_load_n(&cq->dbrec[RNIC_CQ_DB_SET_CI],
								       __ATOMIC_ACQUIRE));

			__atomic_store_n(&cq->ci_seen, ci, __ATOMIC_RELAXED);
			if (((prod + n - 1 - ci) & 0xffffff) >= nent)
				return n == 1 ? overflow(cq) : -EAGAIN;
		}
	} while (!__atomic_compare_exchange_n(&cq->hif->prod, &prod, prod + n, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return prod;
}

/* Completions a CQ in error did not take: counted for the device (the producers' callers go on). */
static void
cqes_lost(struct rnic_cq_priv *cq, unsigned int n)
{
	__atomic_fetch_add(&rnic_ctx_dev(cq->pub.context)->cqes_lost, n, __ATOMIC_RELAXED);
}

static int
push_now(struct rnic_cq *pub, const struct rnic_cqe_desc *d, unsigned int n)
{
	struct rnic_cq_priv *cq = rnic_cq_priv(pub);
	int64_t first;
	uint32_t armed;
	int event = 0;

	first = reserve(cq, n);
	if (first == -EAGAIN) {
		/* Not room for all: as many as fit, one by one, then the overflow where it happens. */
		for (unsigned int i = 0; i < n; i++) {
			int ret = push_now(pub, &d[i], 1);

			if (ret != 0) {
				cqes_lost(cq, n - i - 1);	/* the one that failed counted itself */
				return ret;
			}
		}
		return 0;
	}
	if (first < 0) {
		cqes_lost(cq, n);
		return (int)first;
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t prod = (uint32_t)first + i;
		struct rnic_cqe64 *cqe = &cq->cqes[prod & ((1u << cq->log_nent) - 1)];

		encode_cqe(cqe, &d[i]);
		/* The body must be visible before the owner bit hands the entry to the consumer. */
		__atomic_store_n(&cqe->op_own, (uint8_t)(cqe_opcode(&d[i]) << 4 | (d[i].solicited ? RNIC_CQE_SE : 0) |
						       ((prod >> cq->log_nent) & 1)), __ATOMIC_RELEASE);
		event |= d[i].solicited || d[i].status != RNIC_WC_SUCCESS;
	}
	/* The CQEs visible before the arm word is read: the other half of rnic_req_notify_cq's fence. */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	armed = __atomic_load_n(&cq->hif->arm, __ATOMIC_ACQUIRE);
	if ((armed & RNIC_CQ_ARMED) && (!(armed & RNIC_CQ_ARMED_SOLICITED) || event))
		fire(cq, armed);
	return 0;
}

RTE_DEFINE_PER_LCORE(struct rnic_cq_deferred, rnic_cq_deferred);

void
rnic_cq_flush_deferred(void)
{
	struct rnic_cq_deferred *b = &RTE_PER_LCORE(rnic_cq_deferred);
	unsigned int n = b->n;

	if (n == 0)
		return;
	b->n = 0;
	push_now(b->cq, b->d, n);	/* a CQ in error counts what it did not take */
}

int
rnic_cq_push_burst(struct rnic_cq *pub, const struct rnic_cqe_desc *d, unsigned int n)
{
	if (n == 0)
		return 0;
	rnic_cq_flush_deferred();	/* the thread's CQEs in the order it produced them */
	return push_now(pub, d, n);
}

int
rnic_cq_push(struct rnic_cq *pub, const struct rnic_cqe_desc *d)
{
	return rnic_cq_push_burst(pub, d, 1);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Consumer                                                                                                 */

/* What rnic_poll_cq runs first: the engine's manual progress, while it maps stages to the application's
 * thread (doc/engine.md, "Manual progress"); NULL otherwise. */
rnic_progress_fn rnic_cq_progress;

void
rnic_cq_set_progress(rnic_progress_fn fn)
{
	__atomic_store_n(&rnic_cq_progress, fn, __ATOMIC_RELAXED);
}

/* Whether an unpolled CQE would satisfy the arm (any CQE; or solicited / error ones). */
static int
pending_match(struct rnic_cq_priv *cq, int solicited_only)
{
	uint32_t prod = __atomic_load_n(&cq->hif->prod, __ATOMIC_ACQUIRE);

	for (uint32_t n = cq->cons; n != prod; n++) {
		const struct rnic_cqe64 *cqe = rnic_cq_sw_cqe(cq, n);
		uint8_t opcode;

		if (cqe == NULL)
			break;
		if (!solicited_only)
			return 1;
		opcode = cqe->op_own >> 4;
		if ((cqe->op_own & RNIC_CQE_SE) || opcode == RNIC_CQE_REQ_ERR || opcode == RNIC_CQE_RESP_ERR)
			return 1;
	}
	return 0;
}

int
rnic_req_notify_cq(struct rnic_cq *pub, int solicited_only)
{
	struct rnic_cq_priv *cq = rnic_cq_priv(pub);
	uint32_t sn, cmd, armed;

	if (pub == NULL)
		return EINVAL;
	sn = cq->arm_sn & SN_MASK;
	cmd = solicited_only ? RNIC_CQ_ARM_SOLICITED : RNIC_CQ_ARM_NEXT;
	/* Table 156: after ARM_NEXT, ARM_SOLICITED with the same sn is not rung. */
	if (cq->last_arm == (RNIC_CQ_ARMED | sn << 28 | RNIC_CQ_ARM_NEXT) && solicited_only)
		return 0;
	cq->last_arm = RNIC_CQ_ARMED | sn << 28 | cmd;
	__atomic_store_n(&cq->dbrec[RNIC_CQ_DB_ARM], rte_cpu_to_be_32(sn << 28 | cmd | (cq->cons & 0xffffff)),
			 __ATOMIC_RELEASE);
	/* An sn whose event already fired arms nothing: the next event needs the next sn. */
	if (__atomic_load_n(&cq->hif->last_fired_sn, __ATOMIC_ACQUIRE) == sn + 1)
		return 0;
	armed = RNIC_CQ_ARMED | (solicited_only ? RNIC_CQ_ARMED_SOLICITED : 0) | sn;
	__atomic_store_n(&cq->hif->arm, armed, __ATOMIC_RELEASE);
	/*
	 * The arm visible before the CQEs are looked at. A producer stores its CQE then reads the arm word; we
	 * store the arm word then read the CQEs: a store and a later load of another word, which the CPU may
	 * reorder (x86's store buffer does). Without a full fence on both sides each can miss the other, the
	 * CQE waits under an arm nobody fires, and a program asleep in its completion channel sleeps for good.
	 * With them one of the two sees the other, and fire() lets only one deliver.
	 */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* CQEs already waiting fire at once. */
	if (pending_match(cq, solicited_only))
		fire(cq, armed);
	return 0;
}
