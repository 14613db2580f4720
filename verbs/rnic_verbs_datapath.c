/* SPDX-License-Identifier: BSD-3-Clause
 * The fast paths verbs.h inlines (ibv_post_send, ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq,
 * ibv_req_notify_cq) call the
 * context's ops: these entries go straight to the rnic_ data-path verbs, on the program's own work requests
 * and completion array (their layouts are the same: rnic_verbs_abi.c checks), with no copy, lock or
 * system call of their own. A UD send names an ibv_ah, which stands for an rnic_ah: those work requests
 * are posted one at a time from a copy that names the rnic_ah.
 */
#include <errno.h>
#include <string.h>

#include "rnic_verbs.h"

/* Out of line: the RC and UC post stays a tail call into rnic_post_send. */
static __attribute__((noinline)) int
rnic_verbs_post_send_ud(struct rnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	for (; wr != NULL; wr = wr->next) {
		struct rnic_send_wr one;
		struct rnic_send_wr *bad;
		int ret;

		memcpy(&one, wr, sizeof(one));	/* rnic_send_wr is ibv_send_wr's prefix (rnic_verbs_abi.c) */
		one.next = NULL;
		if (wr->wr.ud.ah == NULL) {
			*bad_wr = wr;
			return EINVAL;
		}
		one.wr.ud.ah = RNIC_VERBS_CONTAINER(wr->wr.ud.ah, struct rnic_verbs_ah, ibv)->ah;
		ret = rnic_post_send(qp, &one, &bad);
		if (ret != 0) {
			*bad_wr = wr;
			return ret;
		}
	}
	return 0;
}

static int
rnic_verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct rnic_qp *rqp = rnic_verbs_qp(qp)->qp;

	if (qp->qp_type == IBV_QPT_UD)
		return rnic_verbs_post_send_ud(rqp, wr, bad_wr);
	return rnic_post_send(rqp, (struct rnic_send_wr *)wr, (struct rnic_send_wr **)bad_wr);
}

static int
rnic_verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return rnic_post_recv(rnic_verbs_qp(qp)->qp, (struct rnic_recv_wr *)wr, (struct rnic_recv_wr **)bad_wr);
}

static int
rnic_verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return rnic_post_srq_recv(rnic_verbs_srq(srq)->srq, (struct rnic_recv_wr *)wr, (struct rnic_recv_wr **)bad_wr);
}

static int
rnic_verbs_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return rnic_poll_cq(rnic_verbs_cq(cq)->cq, num_entries, (struct rnic_wc *)wc);
}

static int
rnic_verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return rnic_req_notify_cq(rnic_verbs_cq(cq)->cq, solicited_only);
}

void
rnic_verbs_set_datapath_ops(struct ibv_context_ops *ops)
{
	ops->post_send = rnic_verbs_post_send;
	ops->post_recv = rnic_verbs_post_recv;
	ops->post_srq_recv = rnic_verbs_post_srq_recv;
	ops->poll_cq = rnic_verbs_poll_cq;
	ops->req_notify_cq = rnic_verbs_req_notify_cq;
}
