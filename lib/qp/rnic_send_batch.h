/* SPDX-License-Identifier: BSD-3-Clause
 * Posting field by field: what libibverbs' ibv_wr_* API does (the verbs interposer maps it here, doc/verbs.md).
 * A batch begins with rnic_send_batch_start; each work request of it is begun by rnic_send_batch_wr (its
 * opcode, flags, remote address...), given its UD address and its payload by the setters, and written into
 * its SQ slot as the fields come; rnic_send_batch_complete posts them all as one rnic_post_send of a list
 * does (one head store, one doorbell). The first error of any call (a full queue, more SGEs or inline bytes
 * than the QP takes, an atomic without its one 8-byte SGE, a UD request without an address...) is kept:
 * rnic_send_batch_complete returns it and posts none of the batch, as libibverbs' providers do;
 * rnic_send_batch_abort drops the batch. From start to complete or abort the batch holds the SQ's poster
 * lock, as rnic_post_send does for a call. Nothing here allocates or makes a system call.
 */
#ifndef RNIC_SEND_BATCH_H
#define RNIC_SEND_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "rnic.h"

/* One buffer of inline data (libibverbs' struct ibv_data_buf). */
struct rnic_data_buf {
	void *addr;
	size_t length;
};

struct rnic_send_batch {
	struct rnic_qp *qp;
	uint32_t first;			/* SQ index of its first work request */
	uint32_t n;			/* work requests begun */
	uint64_t posted_tsc;
	enum rnic_qp_state state;	/* the QP's state as the post saw it at the start */
	int err;			/* the first error (0: none) */
	/* The newest work request: open to its setters until the next begins or the batch completes. */
	uint8_t *wqe;
	uint8_t *payload;		/* where its payload segments go */
	uint8_t *end;			/* one past its last segment */
	uint64_t length;		/* its payload bytes */
	uint32_t extra_flags;		/* NextSeg flags its payload adds (inline) */
	uint8_t is_atomic;
	uint8_t no_inline;		/* READ, atomics: the payload is where the response goes */
	uint8_t ud_missing;		/* UD: no address set yet */
};

void rnic_send_batch_start(struct rnic_qp *qp, struct rnic_send_batch *b);
/* Begin a work request: wr's wr_id, opcode, send_flags, imm_data / invalidate_rkey and wr.rdma / wr.atomic
 * (its sg_list, num_sge, next and wr.ud are not read: the setters give them). RNIC_SEND_INLINE in
 * send_flags is ignored too: the payload setter chooses. */
void rnic_send_batch_wr(struct rnic_send_batch *b, const struct rnic_send_wr *wr);
void rnic_send_batch_ud(struct rnic_send_batch *b, struct rnic_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey);
void rnic_send_batch_sge(struct rnic_send_batch *b, const struct rnic_sge *sge, size_t nb_sge);
void rnic_send_batch_inline(struct rnic_send_batch *b, const struct rnic_data_buf *buf, size_t nb_buf);
/* Make the batch fail with err (a work request softrnic does not post: a memory window bind...). */
void rnic_send_batch_fail(struct rnic_send_batch *b, int err);
int rnic_send_batch_complete(struct rnic_send_batch *b);
void rnic_send_batch_abort(struct rnic_send_batch *b);

#endif /* RNIC_SEND_BATCH_H */
