/* SPDX-License-Identifier: BSD-3-Clause
 * Posting work requests: rnic_post_send writes send WQEs and rings one 64-bit doorbell per call,
 * rnic_post_recv and rnic_post_srq_recv write receive WQEs; and the parser the engine reads send WQEs with.
 */
#include <errno.h>
#include <string.h>

#include <rte_atomic.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>

#include "rnic_qp.h"
#include "rnic_srq.h"
#include "rnic_wqe.h"

static const uint8_t wr_to_wqe_opcode[] = {
	[RNIC_WR_RDMA_WRITE] = RNIC_WQE_OP_RDMA_WRITE,
	[RNIC_WR_RDMA_WRITE_WITH_IMM] = RNIC_WQE_OP_RDMA_WRITE_IMM,
	[RNIC_WR_SEND] = RNIC_WQE_OP_SEND,
	[RNIC_WR_SEND_WITH_IMM] = RNIC_WQE_OP_SEND_IMM,
	[RNIC_WR_RDMA_READ] = RNIC_WQE_OP_RDMA_READ,
	[RNIC_WR_ATOMIC_CMP_AND_SWP] = RNIC_WQE_OP_ATOMIC_CS,
	[RNIC_WR_ATOMIC_FETCH_AND_ADD] = RNIC_WQE_OP_ATOMIC_FA,
	[RNIC_WR_SEND_WITH_INV] = RNIC_WQE_OP_SEND_INVAL,
};

int
rnic_wqe_op_has_raddr(uint8_t opcode)
{
	return opcode == RNIC_WQE_OP_RDMA_WRITE || opcode == RNIC_WQE_OP_RDMA_WRITE_IMM ||
	       opcode == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(opcode);
}

int
rnic_wqe_op_is_atomic(uint8_t opcode)
{
	return opcode == RNIC_WQE_OP_ATOMIC_CS || opcode == RNIC_WQE_OP_ATOMIC_FA;
}

static int
wqe_op_known(uint8_t opcode)
{
	return opcode == RNIC_WQE_OP_SEND || opcode == RNIC_WQE_OP_SEND_IMM || opcode == RNIC_WQE_OP_SEND_INVAL ||
	       rnic_wqe_op_has_raddr(opcode);
}

/* The bytes between a send WQE's next segment and its data: the UD address vector, or the remote address and
 * an atomic's operands. The builder writes them, the parser and the prefetch step over them. */
static size_t
wqe_ctrl_size(uint8_t opcode, int is_ud)
{
	if (is_ud)
		return sizeof(struct rnic_wqe_ud);
	if (!rnic_wqe_op_has_raddr(opcode))
		return 0;
	return sizeof(struct rnic_wqe_raddr) + (rnic_wqe_op_is_atomic(opcode) ? sizeof(struct rnic_wqe_atomic) : 0);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Send                                                                                                     */

static uint64_t
wr_length(const struct rnic_send_wr *wr)
{
	uint64_t len = 0;

	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	return len;
}

/*
 * Validate one work request for this QP (libibverbs semantics: an invalid WR is refused at post time).
 * Opcodes of the verbs enum that the QP's transport does not carry (READ on UC, ...) are accepted: the
 * engine completes them with the seed's "unsupported opcode" error (RNIC_WC_LOC_QP_OP_ERR).
 */
static int
check_send_wr(const struct rnic_qp_priv *qp, const struct rnic_send_wr *wr)
{
	uint8_t op;

	if ((unsigned int)wr->opcode >= RTE_DIM(wr_to_wqe_opcode) || wr->opcode == RNIC_WR_LOCAL_INV ||
	    wr->opcode == RNIC_WR_BIND_MW)
		return EINVAL;	/* memory windows and local invalidation are not implemented */
	op = wr_to_wqe_opcode[wr->opcode];
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
	    (wr->num_sge > 0 && wr->sg_list == NULL))
		return EINVAL;
	if (wr->send_flags & ~(uint32_t)(RNIC_SEND_FENCE | RNIC_SEND_SIGNALED | RNIC_SEND_SOLICITED |
					 RNIC_SEND_INLINE))
		return EINVAL;
	if (wr_length(wr) > RNIC_MAX_MSG_SIZE)
		return EINVAL;
	if (wr->send_flags & RNIC_SEND_INLINE) {
		/* Inline carries outgoing data only, up to the QP's inline size. */
		if (op == RNIC_WQE_OP_RDMA_READ || rnic_wqe_op_is_atomic(op) ||
		    wr_length(wr) > qp->cap.max_inline_data)
			return EINVAL;
	}
	/* An atomic returns the 8-byte original value into exactly one 8-byte SGE. */
	if (rnic_wqe_op_is_atomic(op) && (wr->num_sge != 1 || wr->sg_list[0].length != 8))
		return EINVAL;
	if (qp->pub.qp_type == RNIC_QPT_UD && wr->wr.ud.ah == NULL)
		return EINVAL;
	return 0;
}

/* The InlineSeg of the SGEs' bytes at p (the caller checked they fit); returns where it ends. */
static uint8_t *
put_inline(uint8_t *p, const struct rnic_sge *sge, int nb_sge)
{
	uint8_t *data = p + sizeof(uint32_t);

	for (int i = 0; i < nb_sge; i++) {
		memcpy(data, (const void *)(uintptr_t)sge[i].addr, sge[i].length);
		data += sge[i].length;
	}
	return rnic_wqe_put_inline_len(p, (uint32_t)(data - p - sizeof(uint32_t)));
}

uint8_t *
rnic_wqe_put_ud(uint8_t *p, const struct rnic_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
	const struct rnic_ah_attr *av = &((const struct rnic_ah_priv *)ah)->attr;
	struct rnic_wqe_ud ud;

	memset(&ud, 0, sizeof(ud));
	memcpy(ud.dgid, av->grh.dgid.raw, sizeof(ud.dgid));
	ud.sgid_index = av->grh.sgid_index;
	ud.hop_limit = av->grh.hop_limit;
	ud.traffic_class = av->grh.traffic_class;
	ud.flow_label = rte_cpu_to_be_32(av->grh.flow_label);
	ud.dqpn = rte_cpu_to_be_32(remote_qpn);
	ud.qkey = rte_cpu_to_be_32(remote_qkey);
	memcpy(p, &ud, sizeof(ud));
	return p + sizeof(ud);
}

uint8_t *
rnic_wqe_put_sges(uint8_t *p, const struct rnic_sge *sge, int nb_sge)
{
	for (int i = 0; i < nb_sge; i++) {
		struct rnic_wqe_data d = {
			.byte_count = rte_cpu_to_be_32(sge[i].length),
			.lkey = rte_cpu_to_be_32(sge[i].lkey),
			.addr = rte_cpu_to_be_64(sge[i].addr),
		};

		memcpy(p, &d, sizeof(d));
		p += sizeof(d);
	}
	return p;
}

uint8_t *
rnic_wqe_start(const struct rnic_qp *pub, const struct rnic_send_wr *wr, uint8_t *wqe)
{
	const struct rnic_qp_priv *qp = (const struct rnic_qp_priv *)pub;
	uint8_t op = wr_to_wqe_opcode[wr->opcode];
	struct rnic_wqe_next next = { 0 };
	uint8_t *p = wqe + sizeof(next);
	uint32_t flags = (uint32_t)op << RNIC_WQE_F_OPCODE_SHIFT;

	if ((wr->send_flags & RNIC_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= RNIC_WQE_F_SIGNALED;
	if (wr->send_flags & RNIC_SEND_SOLICITED)
		flags |= RNIC_WQE_F_SOLICITED;
	if (wr->send_flags & RNIC_SEND_FENCE)
		flags |= RNIC_WQE_F_FENCE;
	if (wr->send_flags & RNIC_SEND_INLINE)
		flags |= RNIC_WQE_F_INLINE;
	next.flags = rte_cpu_to_be_32(flags);
	next.imm = op == RNIC_WQE_OP_SEND_INVAL ? rte_cpu_to_be_32(wr->invalidate_rkey) : wr->imm_data;
	memcpy(wqe, &next, sizeof(next));

	if (pub->qp_type == RNIC_QPT_UD)
		return p + sizeof(struct rnic_wqe_ud);	/* the caller puts the address vector there */
	if (rnic_wqe_op_has_raddr(op)) {
		struct rnic_wqe_raddr r = {
			.raddr = rte_cpu_to_be_64(rnic_wqe_op_is_atomic(op) ? wr->wr.atomic.remote_addr :
						  wr->wr.rdma.remote_addr),
			.rkey = rte_cpu_to_be_32(rnic_wqe_op_is_atomic(op) ? wr->wr.atomic.rkey : wr->wr.rdma.rkey),
		};

		memcpy(p, &r, sizeof(r));
		p += sizeof(r);
		if (rnic_wqe_op_is_atomic(op)) {
			struct rnic_wqe_atomic a = {
				.swap_add = rte_cpu_to_be_64(op == RNIC_WQE_OP_ATOMIC_CS ? wr->wr.atomic.swap :
							     wr->wr.atomic.compare_add),
				.compare = rte_cpu_to_be_64(op == RNIC_WQE_OP_ATOMIC_CS ? wr->wr.atomic.compare_add :
							    0),
			};

			memcpy(p, &a, sizeof(a));
			p += sizeof(a);
		}
	}
	return p;
}

/* Write the WQE for wr at wqe. */
static void
write_send_wqe(const struct rnic_qp_priv *qp, const struct rnic_send_wr *wr, uint8_t *wqe)
{
	uint8_t *p = rnic_wqe_start(&qp->pub, wr, wqe);

	if (qp->pub.qp_type == RNIC_QPT_UD)
		rnic_wqe_put_ud(wqe + sizeof(struct rnic_wqe_next), wr->wr.ud.ah, wr->wr.ud.remote_qpn,
				wr->wr.ud.remote_qkey);
	if (wr->send_flags & RNIC_SEND_INLINE)
		p = put_inline(p, wr->sg_list, wr->num_sge);
	else
		p = rnic_wqe_put_sges(p, wr->sg_list, wr->num_sge);
	rnic_wqe_finish(wqe, p, 0);
}

static int
post_send_state_ok(enum rnic_qp_state state)
{
	return state == RNIC_QPS_RTS || state == RNIC_QPS_SQD || state == RNIC_QPS_SQE || state == RNIC_QPS_ERR;
}

enum rnic_qp_state
rnic_sq_post_state(const struct rnic_qp *pub)
{
	enum rnic_qp_state state = __atomic_load_n(((const struct rnic_qp_priv *)pub)->post_state, __ATOMIC_ACQUIRE);

	return post_send_state_ok(state) ? state : RNIC_QPS_UNKNOWN;
}

void
rnic_sq_publish(struct rnic_qp *pub, uint32_t first, uint32_t n, enum rnic_qp_state state)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	struct rnic_wq *sq = &qp->sq;
	uint8_t *wqe = rnic_wq_slot(sq, first);
	uint32_t flags;

	if (n == 0)
		return;
	flags = rte_be_to_cpu_32(((const struct rnic_wqe_next *)(const void *)wqe)->flags);
	/* The WQEs must be in memory before the engine can see the head that covers them; the head before the
	 * doorbell flag (rnic_qp_doorbell_taken): sequentially consistent. */
	__atomic_store_n(&sq->idx->head, first + n, __ATOMIC_SEQ_CST);
	if (state == RNIC_QPS_ERR || state == RNIC_QPS_SQE)
		rnic_qp_error_flush(pub);	/* IBA: WRs posted to a QP in error complete as flushed */
	else
		rnic_qp_ring_doorbell(pub, rnic_doorbell_make((uint32_t)(wqe - sq->buf) / RNIC_WQE_SEG,
							      !!(flags & RNIC_WQE_F_FENCE),
							      (uint8_t)(flags >> RNIC_WQE_F_OPCODE_SHIFT), pub->qp_num,
							      (uint8_t)((flags >> RNIC_WQE_F_SIZE_SHIFT) &
									RNIC_WQE_F_SIZE_MASK)));
}

int
rnic_post_send(struct rnic_qp *pub, struct rnic_send_wr *wr, struct rnic_send_wr **bad_wr)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	struct rnic_wq *sq;
	uint32_t first, n = 0;
	uint64_t now;
	enum rnic_qp_state state;
	int err = 0;

	if (pub == NULL || bad_wr == NULL)
		return EINVAL;
	*bad_wr = NULL;
	sq = &qp->sq;
	state = rnic_sq_post_state(pub);
	if (state == RNIC_QPS_UNKNOWN) {
		*bad_wr = wr;
		return EINVAL;
	}

	rte_spinlock_lock(&qp->post_lock.sq);
	first = sq->idx->head;
	now = rte_rdtsc();
	for (; wr != NULL; wr = wr->next, n++) {
		uint32_t tail = __atomic_load_n(&sq->idx->tail, __ATOMIC_ACQUIRE);

		err = check_send_wr(qp, wr);
		if (err == 0 && first + n - tail >= sq->wqe_cnt)
			err = ENOMEM;
		if (err != 0) {
			*bad_wr = wr;
			break;
		}
		sq->wrid[(first + n) & (sq->wqe_cnt - 1)] = wr->wr_id;
		sq->posted_tsc[(first + n) & (sq->wqe_cnt - 1)] = now;
		write_send_wqe(qp, wr, rnic_wq_slot(sq, first + n));
	}
	rnic_sq_publish(pub, first, n, state);
	rnic_post_unlock(&qp->post_lock.sq);
	return err;
}

int
rnic_send_wqe_parse(const uint8_t *wqe, uint32_t size16, int is_ud, struct rnic_send_wqe *out)
{
	const uint8_t *p = wqe + sizeof(struct rnic_wqe_next), *end;
	struct rnic_wqe_next next;
	uint32_t flags;

	memcpy(&next, wqe, sizeof(next));
	flags = rte_be_to_cpu_32(next.flags);
	if (size16 == 0)
		size16 = (flags >> RNIC_WQE_F_SIZE_SHIFT) & RNIC_WQE_F_SIZE_MASK;
	if (size16 == 0 || size16 > RNIC_WQE_MAX_SIZE16)
		return -EINVAL;
	end = wqe + size16 * RNIC_WQE_SEG;
	memset(out, 0, sizeof(*out));
	out->opcode = (uint8_t)(flags >> RNIC_WQE_F_OPCODE_SHIFT);
	out->signaled = !!(flags & RNIC_WQE_F_SIGNALED);
	out->solicited = !!(flags & RNIC_WQE_F_SOLICITED);
	out->fence = !!(flags & RNIC_WQE_F_FENCE);
	out->imm = next.imm;
	if (!wqe_op_known(out->opcode))
		return -EINVAL;

	if ((size_t)(end - p) < wqe_ctrl_size(out->opcode, is_ud))
		return -EINVAL;
	if (is_ud) {
		out->ud = (const struct rnic_wqe_ud *)p;
	} else if (rnic_wqe_op_has_raddr(out->opcode)) {
		struct rnic_wqe_raddr r;

		memcpy(&r, p, sizeof(r));
		out->raddr = rte_be_to_cpu_64(r.raddr);
		out->rkey = rte_be_to_cpu_32(r.rkey);
		if (rnic_wqe_op_is_atomic(out->opcode)) {
			struct rnic_wqe_atomic a;

			memcpy(&a, p + sizeof(r), sizeof(a));
			out->swap_add = rte_be_to_cpu_64(a.swap_add);
			out->compare = rte_be_to_cpu_64(a.compare);
		}
	}
	p += wqe_ctrl_size(out->opcode, is_ud);
	if (flags & RNIC_WQE_F_INLINE) {
		uint32_t len;

		if (p + sizeof(len) > end)
			return -EINVAL;
		memcpy(&len, p, sizeof(len));
		out->length = rte_be_to_cpu_32(len);
		out->inline_data = p + sizeof(len);
		/* The stated length must fit the WQE (an rnicd client's WQE is not trusted). */
		return out->length <= (uint64_t)(end - out->inline_data) ? 0 : -EINVAL;
	}
	out->sge = (const struct rnic_wqe_data *)p;
	out->nb_sge = (uint32_t)(end - p) / sizeof(struct rnic_wqe_data);
	for (uint32_t i = 0; i < out->nb_sge; i++)
		out->length += rte_be_to_cpu_32(out->sge[i].byte_count);
	return 0;
}

uint32_t
rnic_send_wqe_copy(uint8_t *dst, const uint8_t *slot, uint32_t stride)
{
	struct rnic_wqe_next next;
	uint32_t size;

	memcpy(&next, slot, sizeof(next));
	size = ((rte_be_to_cpu_32(next.flags) >> RNIC_WQE_F_SIZE_SHIFT) & RNIC_WQE_F_SIZE_MASK) * RNIC_WQE_SEG;
	if (size == 0 || size > stride)
		return 0;
	memcpy(dst, &next, sizeof(next));
	memcpy(dst + sizeof(next), slot + sizeof(next), size - sizeof(next));
	/* What the engine uses from here on is the copy: no load of it may be turned back into one of the slot. */
	rte_compiler_barrier();
	return size;
}

int
rnic_send_wqe_first_sge(const uint8_t *slot, uint32_t stride, int is_ud, uint64_t *addr, uint32_t *len)
{
	struct rnic_wqe_next next;
	struct rnic_wqe_data d;
	uint32_t flags, size, off = sizeof(next);
	uint8_t op;

	memcpy(&next, slot, sizeof(next));
	flags = rte_be_to_cpu_32(next.flags);
	op = (uint8_t)(flags >> RNIC_WQE_F_OPCODE_SHIFT);
	size = ((flags >> RNIC_WQE_F_SIZE_SHIFT) & RNIC_WQE_F_SIZE_MASK) * RNIC_WQE_SEG;
	off += wqe_ctrl_size(op, is_ud);
	if ((flags & RNIC_WQE_F_INLINE) || size > stride || off + sizeof(d) > size)
		return 0;
	memcpy(&d, slot + off, sizeof(d));
	*addr = rte_be_to_cpu_64(d.addr);
	*len = rte_be_to_cpu_32(d.byte_count);
	return 1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Receive                                                                                                  */

uint32_t
rnic_recv_wqe_copy(struct rnic_wqe_data *sge, uint32_t max_sge, const uint8_t *slot, uint32_t stride)
{
	static const struct rnic_wqe_data delimiter;
	const uint8_t *p = slot + sizeof(struct rnic_wqe_next);
	uint32_t n;

	max_sge = RTE_MIN(max_sge, (stride - (uint32_t)sizeof(struct rnic_wqe_next)) / (uint32_t)sizeof(*sge));
	for (n = 0; n < max_sge; n++, p += sizeof(*sge)) {
		memcpy(&sge[n], p, sizeof(*sge));
		if (memcmp(&sge[n], &delimiter, sizeof(delimiter)) == 0)
			break;
	}
	rte_compiler_barrier();
	return n;
}

static void
write_recv_wqe(const struct rnic_recv_wr *wr, uint8_t *wqe)
{
	struct rnic_wqe_next next = { 0 };
	uint8_t *p = wqe + sizeof(next);

	memcpy(wqe, &next, sizeof(next));
	for (int i = 0; i < wr->num_sge; i++) {
		struct rnic_wqe_data d = {
			.byte_count = rte_cpu_to_be_32(wr->sg_list[i].length),
			.lkey = rte_cpu_to_be_32(wr->sg_list[i].lkey),
			.addr = rte_cpu_to_be_64(wr->sg_list[i].addr),
		};

		memcpy(p, &d, sizeof(d));
		p += sizeof(d);
	}
	memset(p, 0, RNIC_WQE_SEG);	/* the delimiter that ends the scatter list */
}

/*
 * Write a list of receive work requests into a receive queue (an RQ, or an SRQ) and publish its head: the
 * engine fetches receive WQEs when a message needs one (no doorbell). Under the queue's posting lock. Returns
 * 0 or the errno of the first WR not posted (*bad_wr); *n: the WRs posted.
 */
static int
post_recv_wqes(struct rnic_wq *wq, uint32_t max_sge, struct rnic_recv_wr *wr, struct rnic_recv_wr **bad_wr,
	       uint32_t *n)
{
	uint32_t first = wq->idx->head;
	int err = 0;

	for (*n = 0; wr != NULL; wr = wr->next, (*n)++) {
		uint32_t tail = __atomic_load_n(&wq->idx->tail, __ATOMIC_ACQUIRE);

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge > 0 && wr->sg_list == NULL))
			err = EINVAL;
		else if (first + *n - tail >= wq->wqe_cnt)
			err = ENOMEM;
		if (err != 0) {
			*bad_wr = wr;
			break;
		}
		wq->wrid[(first + *n) & (wq->wqe_cnt - 1)] = wr->wr_id;
		write_recv_wqe(wr, rnic_wq_slot(wq, first + *n));
	}
	__atomic_store_n(&wq->idx->head, first + *n, __ATOMIC_RELEASE);
	/* The next post's slot, which the engine's lcore read last: owned again by the time that post writes
	 * it, so the barrier of its lock does not wait for the transfer. */
	rte_prefetch0_write(rnic_wq_slot(wq, first + *n));
	return err;
}

int
rnic_post_recv(struct rnic_qp *pub, struct rnic_recv_wr *wr, struct rnic_recv_wr **bad_wr)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	enum rnic_qp_state state;
	uint32_t n;
	int err;

	if (pub == NULL || bad_wr == NULL)
		return EINVAL;
	*bad_wr = NULL;
	state = __atomic_load_n(qp->post_state, __ATOMIC_ACQUIRE);
	/* A QP on an SRQ has no receive queue: its receives are posted to the SRQ (EINVAL, as providers). */
	if (state == RNIC_QPS_RESET || qp->cap.max_recv_wr == 0 || pub->srq != NULL) {
		*bad_wr = wr;
		return EINVAL;
	}
	rte_spinlock_lock(&qp->post_lock.rq);
	err = post_recv_wqes(&qp->rq, qp->cap.max_recv_sge, wr, bad_wr, &n);
	if (n > 0 && state == RNIC_QPS_ERR)
		rnic_qp_error_flush(pub);
	rnic_post_unlock(&qp->post_lock.rq);
	return err;
}

int
rnic_post_srq_recv(struct rnic_srq *pub, struct rnic_recv_wr *wr, struct rnic_recv_wr **bad_wr)
{
	struct rnic_srq_priv *srq = rnic_srq_priv(pub);
	uint32_t n;
	int err;

	if (pub == NULL || bad_wr == NULL)
		return EINVAL;
	*bad_wr = NULL;
	rte_spinlock_lock(&srq->post_lock);
	err = post_recv_wqes(&srq->wq, srq->max_sge, wr, bad_wr, &n);
	rnic_post_unlock(&srq->post_lock);
	return err;
}
