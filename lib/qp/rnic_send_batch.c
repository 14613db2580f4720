/* SPDX-License-Identifier: BSD-3-Clause
 * Posting field by field (rnic_send_batch.h): the WQEs of a batch are written into the SQ as their fields
 * come, with rnic_post_send's segment writers (rnic_wqe.h), and posted at the end as one list.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>

#include "rnic_qp.h"
#include "rnic_send_batch.h"
#include "rnic_wqe.h"

#define BATCH_SEND_FLAGS (RNIC_SEND_FENCE | RNIC_SEND_SIGNALED | RNIC_SEND_SOLICITED)

void
rnic_send_batch_start(struct rnic_qp *pub, struct rnic_send_batch *b)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);

	rte_spinlock_lock(&qp->post_lock.sq);
	b->qp = pub;
	b->first = qp->sq.idx->head;
	b->n = 0;
	b->posted_tsc = rte_rdtsc();
	b->wqe = NULL;
	b->state = rnic_sq_post_state(pub);
	b->err = b->state == RNIC_QPS_UNKNOWN ? EINVAL : 0;	/* RESET, INIT, RTR: no send post */
}

void
rnic_send_batch_fail(struct rnic_send_batch *b, int err)
{
	if (b->err == 0)
		b->err = err;
}

/* The open work request is complete: check what its setters gave it, then state its size. */
static void
finish_wr(struct rnic_send_batch *b)
{
	if (b->wqe == NULL || b->err != 0)
		return;
	if (b->ud_missing || b->length > RNIC_MAX_MSG_SIZE ||
	    (b->is_atomic && (b->length != 8 || b->end - b->payload != sizeof(struct rnic_wqe_data)))) {
		b->err = EINVAL;	/* an atomic returns its 8-byte original value into exactly one SGE */
		return;
	}
	rnic_wqe_finish(b->wqe, b->end, b->extra_flags);
	b->wqe = NULL;
}

void
rnic_send_batch_wr(struct rnic_send_batch *b, const struct rnic_send_wr *wr)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(b->qp);
	struct rnic_wq *sq = &qp->sq;
	uint32_t index = b->first + b->n;
	struct rnic_send_wr w;

	finish_wr(b);
	if (b->err != 0)
		return;
	if ((unsigned int)wr->opcode > RNIC_WR_SEND_WITH_INV || wr->opcode == RNIC_WR_LOCAL_INV ||
	    wr->opcode == RNIC_WR_BIND_MW || (wr->send_flags & ~(uint32_t)(BATCH_SEND_FLAGS | RNIC_SEND_INLINE))) {
		b->err = EINVAL;
		return;
	}
	if (index - __atomic_load_n(&sq->idx->tail, __ATOMIC_ACQUIRE) >= sq->wqe_cnt) {
		b->err = ENOMEM;
		return;
	}
	w = *wr;
	w.send_flags &= BATCH_SEND_FLAGS;	/* inline or not: the payload setter says */
	sq->wrid[index & (sq->wqe_cnt - 1)] = wr->wr_id;
	sq->posted_tsc[index & (sq->wqe_cnt - 1)] = b->posted_tsc;
	b->wqe = rnic_wq_slot(sq, index);
	b->payload = rnic_wqe_start(b->qp, &w, b->wqe);
	b->end = b->payload;
	b->length = 0;
	b->extra_flags = 0;
	b->is_atomic = wr->opcode == RNIC_WR_ATOMIC_CMP_AND_SWP || wr->opcode == RNIC_WR_ATOMIC_FETCH_AND_ADD;
	b->no_inline = b->is_atomic || wr->opcode == RNIC_WR_RDMA_READ;
	b->ud_missing = b->qp->qp_type == RNIC_QPT_UD;
	b->n++;
}

/* A setter's work request: the open one, or none (an error: a setter before any work request). */
static int
setter_ok(struct rnic_send_batch *b)
{
	if (b->err == 0 && b->wqe == NULL)
		b->err = EINVAL;
	return b->err == 0;
}

void
rnic_send_batch_ud(struct rnic_send_batch *b, struct rnic_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
	if (!setter_ok(b))
		return;
	if (b->qp->qp_type != RNIC_QPT_UD || ah == NULL) {
		b->err = EINVAL;
		return;
	}
	rnic_wqe_put_ud(b->wqe + sizeof(struct rnic_wqe_next), ah, remote_qpn, remote_qkey);
	b->ud_missing = 0;
}

void
rnic_send_batch_sge(struct rnic_send_batch *b, const struct rnic_sge *sge, size_t nb_sge)
{
	uint64_t length = 0;

	if (!setter_ok(b))
		return;
	if (nb_sge > rnic_qp_priv(b->qp)->cap.max_send_sge || (nb_sge > 0 && sge == NULL)) {
		b->err = EINVAL;
		return;
	}
	for (size_t i = 0; i < nb_sge; i++)
		length += sge[i].length;
	/* A second payload setter replaces the first, as libibverbs' providers write it over. */
	b->end = rnic_wqe_put_sges(b->payload, sge, (int)nb_sge);
	b->length = length;
	b->extra_flags = 0;
}

void
rnic_send_batch_inline(struct rnic_send_batch *b, const struct rnic_data_buf *buf, size_t nb_buf)
{
	uint8_t *data;
	uint64_t length = 0;

	if (!setter_ok(b))
		return;
	for (size_t i = 0; i < nb_buf; i++)
		length += buf[i].length;
	if (b->no_inline || length > rnic_qp_priv(b->qp)->cap.max_inline_data || (nb_buf > 0 && buf == NULL)) {
		b->err = EINVAL;	/* inline carries outgoing data only, up to the QP's inline size */
		return;
	}
	data = b->payload + sizeof(uint32_t);
	for (size_t i = 0; i < nb_buf; i++) {
		memcpy(data, buf[i].addr, buf[i].length);
		data += buf[i].length;
	}
	b->end = rnic_wqe_put_inline_len(b->payload, (uint32_t)length);
	b->length = length;
	b->extra_flags = RNIC_WQE_F_INLINE;
}

int
rnic_send_batch_complete(struct rnic_send_batch *b)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(b->qp);
	int err;

	finish_wr(b);
	err = b->err;
	if (err == 0)
		rnic_sq_publish(b->qp, b->first, b->n, b->state);
	rnic_post_unlock(&qp->post_lock.sq);
	return err;
}

void
rnic_send_batch_abort(struct rnic_send_batch *b)
{
	rnic_post_unlock(&rnic_qp_priv(b->qp)->post_lock.sq);
}
