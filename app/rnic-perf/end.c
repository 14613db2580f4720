/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf: one end of a test. Its verbs objects, its QPs' connection, the posting of sends and receives
 * with the count of what is outstanding, and the drain that leaves no completion behind when the QPs go
 * back to RESET between sizes.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "perf.h"
#include "psn.h"
#include "post.h"

#define UD_GRH 40

static uint64_t
slot_bytes(const struct perf_test *t, uint32_t size)
{
	return RTE_ALIGN_CEIL((uint64_t)size + (t->conn == RNIC_QPT_UD ? UD_GRH : 0), 64);
}

/* Slots per QP for n QPs of depth messages in flight within a budget of slots: at least one. */
static uint32_t
fit_slots(uint32_t depth, uint64_t budget, uint32_t n)
{
	return (uint32_t)RTE_MIN((uint64_t)depth, RTE_MAX(budget / n, (uint64_t)1));
}

/* The buffer areas, sized for the largest message: as many slots per QP as messages in flight (--qp-ab's
 * few QPs: their turns' depth, within a budget of their own). */
static int
alloc_area(struct perf_end *e, const struct perf_test *t)
{
	uint32_t depth = t->mode == MODE_BW ? t->tx_depth : 2;
	uint64_t budget;

	e->slot = slot_bytes(t, perf_max_size(t));
	budget = PERF_AREA_BYTES / 2 / e->slot;
	e->slots_per_qp = fit_slots(depth, budget, t->nb_qp);
	e->few_qps = t->qp_ab_ms != 0 ? t->qp_ab_n : 0;
	e->few_slots = e->few_qps != 0 ? RTE_MAX(fit_slots(t->qp_ab_depth, budget, e->few_qps), e->slots_per_qp) :
					 e->slots_per_qp;
	e->area_bytes = 2 * perf_qp_first_slot(e, t->nb_qp) * e->slot;
	/* rnic_alloc_buf: memory rnicd can map when this process is its client (RNIC_DAEMON). */
	e->area = rnic_alloc_buf(e->area_bytes);
	if (e->area == NULL)
		return perf_fail("cannot allocate %llu bytes of buffers", (unsigned long long)e->area_bytes);
	memset(e->area, 0, e->area_bytes);
	e->cq_mod = RTE_MIN(t->cq_mod, e->slots_per_qp);
	e->post_list = RTE_MIN(t->post_list, e->slots_per_qp);
	return 0;
}

static int
create_cqs(struct perf_end *e, const struct perf_test *t)
{
	int cqe = (int)(perf_qp_first_slot(e, t->nb_qp) + 64);

	if (t->events) {
		e->channel = rnic_create_comp_channel(e->ctx);
		if (e->channel == NULL)
			return perf_fail("-e: cannot create a completion channel: %s", strerror(errno));
	}
	e->cq = rnic_create_cq(e->ctx, cqe, NULL, e->channel, 0);
	e->rcq = rnic_create_cq(e->ctx, cqe, NULL, e->channel, 0);
	if (e->cq == NULL || e->rcq == NULL)
		return perf_fail("cannot create 2 CQs of %d entries (more QPs x depth than --max-cqe?)", cqe);
	if (t->events && (rnic_req_notify_cq(e->cq, 0) != 0 || rnic_req_notify_cq(e->rcq, 0) != 0))
		return perf_fail("-e: cannot arm the CQs");
	return 0;
}

static int
create_qps(struct perf_end *e, const struct perf_test *t)
{
	for (uint32_t q = 0; q < t->nb_qp; q++) {
		struct rnic_qp_init_attr ia = {
			.send_cq = e->cq, .recv_cq = e->rcq, .qp_type = t->conn,
			.cap = { .max_send_wr = perf_qp_slots(e, q) + 1, .max_recv_wr = perf_qp_slots(e, q) + 1,
				 .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = t->inline_size },
		};

		e->qp[q] = rnic_create_qp(e->pd, &ia);
		if (e->qp[q] == NULL)
			return perf_fail("cannot create QP %u of %u: %s (--max-qp N raises the device's limit)", q + 1,
					 t->nb_qp, strerror(errno));
	}
	return 0;
}

/* READs and atomics a QP keeps outstanding: -o, else as many as the device allows (perftest's default) for
 * READ and atomic tests (and --op-ab's READ turns); one otherwise (the responder allocates a resource per
 * outstanding one). */
static uint8_t
rd_atomic_depth(struct perf_end *e, const struct perf_test *t)
{
	struct rnic_device_attr attr;
	uint32_t max = 16;

	if (!perf_test_uses(t, OP_READ) && !perf_op_atomic(t->op))
		return 1;
	if (rnic_query_device(e->ctx, &attr) == 0 && attr.max_qp_rd_atom >= 1)
		max = (uint32_t)attr.max_qp_rd_atom;
	return (uint8_t)RTE_MIN(RTE_MIN(t->outs != 0 ? t->outs : max, max), (uint32_t)UINT8_MAX);
}

/* Open a device: PD, CQs, the buffers, QPs in RESET. */
int
perf_end_open(struct perf_end *e, struct rnic_device *dev, const struct perf_opts *o)
{
	struct rnic_port_attr port;

	e->nb_qp = o->t.nb_qp;
	e->name = rnic_get_device_name(dev);
	e->gid_index = (uint8_t)o->gid_index;
	e->ctx = rnic_open_device(dev);
	if (e->ctx == NULL)
		return perf_fail("cannot open device %s: %s", e->name, strerror(errno));
	if (rnic_query_port(e->ctx, 1, &port) != 0 || o->t.mtu > port.active_mtu)
		return perf_fail("-m %u is above the MTU of %s's port (%u)", 128u << o->t.mtu, e->name,
				 128u << port.active_mtu);
	e->pd = rnic_alloc_pd(e->ctx);
	if (e->pd == NULL)
		return perf_fail("cannot allocate a PD: %s", strerror(errno));
	if (alloc_area(e, &o->t) != 0 || create_cqs(e, &o->t) != 0)
		return -1;
	e->outs = rd_atomic_depth(e, &o->t);
	e->mr = rnic_reg_mr(e->pd, e->area, e->area_bytes, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			    RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC);
	if (e->mr == NULL)
		return perf_fail("cannot register %llu bytes: %s", (unsigned long long)e->area_bytes, strerror(errno));
	return create_qps(e, &o->t);
}

void
perf_end_close(struct perf_end *e)
{
	for (uint32_t q = 0; q < e->nb_qp; q++)
		if (e->qp[q] != NULL)
			rnic_destroy_qp(e->qp[q]);
	if (e->ah != NULL)
		rnic_destroy_ah(e->ah);
	if (e->mr != NULL)
		rnic_dereg_mr(e->mr);
	if (e->cq != NULL)
		rnic_destroy_cq(e->cq);
	if (e->rcq != NULL)
		rnic_destroy_cq(e->rcq);
	if (e->channel != NULL)
		rnic_destroy_comp_channel(e->channel);
	if (e->pd != NULL)
		rnic_dealloc_pd(e->pd);
	if (e->ctx != NULL)
		rnic_close_device(e->ctx);
	rnic_free_buf(e->area);
	memset(e, 0, sizeof(*e));
}

/* What the peer needs to reach each QP (e->self). -1 when the GID index names no GID. */
int
perf_end_info(struct perf_end *e)
{
	union rnic_gid gid, zero = { 0 };

	if (rnic_query_gid(e->ctx, 1, e->gid_index, &gid) != 0 || memcmp(&gid, &zero, sizeof(gid)) == 0)
		return perf_fail("-x %u: %s's port has no GID at that index", e->gid_index, e->name);
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		e->self[q] = (struct perf_qp_info){
			.qpn = e->qp[q]->qp_num, .psn = random_psn(), .rkey = e->mr->rkey,
			.rx_addr = (uintptr_t)perf_rx_slot(e, q, 0), .tx_addr = (uintptr_t)perf_tx_slot(e, q, 0),
		};
		memcpy(e->self[q].gid, gid.raw, 16);
	}
	return 0;
}

static int
to_init(struct perf_end *e, uint32_t q, const struct perf_test *t)
{
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = PERF_QKEY,
		.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
	};

	return rnic_modify_qp(e->qp[q], &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
			      (t->conn == RNIC_QPT_UD ? RNIC_QP_QKEY : RNIC_QP_ACCESS_FLAGS));
}

static int
to_rtr(struct perf_end *e, uint32_t q, const struct perf_test *t, uint8_t outs)
{
	const struct perf_qp_info *p = &e->peer[q];
	int rc = t->conn == RNIC_QPT_RC, ud = t->conn == RNIC_QPT_UD;
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_RTR, .path_mtu = t->mtu, .dest_qp_num = p->qpn,
		.rq_psn = perf_connection_psn(p->psn, e->connects),
		.max_dest_rd_atomic = outs, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = e->gid_index, .traffic_class = t->tclass } },
	};

	memcpy(a.ah_attr.grh.dgid.raw, p->gid, 16);
	return rnic_modify_qp(e->qp[q], &a, RNIC_QP_STATE |
			      (ud ? 0 : RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN) |
			      (rc ? RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER : 0));
}

static int
to_rts(struct perf_end *e, uint32_t q, const struct perf_test *t, uint8_t outs)
{
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_RTS, .sq_psn = perf_connection_psn(e->self[q].psn, e->connects),
		.timeout = t->qp_timeout, .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = outs,
		.rate_limit = t->rate_limit_kbps,
	};

	return rnic_modify_qp(e->qp[q], &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN |
			      (t->rate_limit_kbps != 0 ? RNIC_QP_RATE_LIMIT : 0) |
			      (t->conn == RNIC_QPT_RC ? RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY |
			       RNIC_QP_MAX_QP_RD_ATOMIC : 0));
}

/* Every QP from RESET to RTS towards its peer (e->peer), and the UD address handle. */
int
perf_end_connect_all(struct perf_end *e, const struct perf_opts *o)
{
	uint8_t outs = e->outs;

	for (uint32_t q = 0; q < e->nb_qp; q++) {
		struct rnic_qp_attr reset = { .qp_state = RNIC_QPS_RESET };
		int err = rnic_modify_qp(e->qp[q], &reset, RNIC_QP_STATE);

		err = err ? err : to_init(e, q, &o->t);
		err = err ? err : to_rtr(e, q, &o->t, outs);
		err = err ? err : to_rts(e, q, &o->t, outs);
		if (err != 0)
			return perf_fail("cannot connect QP %u of %s: %s", e->qp[q]->qp_num, e->name, strerror(err));
		e->posted[q] = e->done[q] = e->received[q] = e->next_msg[q] = 0;
		e->tail_signaled[q] = 1;
	}
	e->connects++;
	e->outstanding = e->completed = e->received_total = e->rq_out = 0;
	if (o->t.conn == RNIC_QPT_UD && e->ah == NULL) {
		struct rnic_ah_attr ah = { .is_global = 1, .port_num = 1,
					   .grh = { .sgid_index = e->gid_index, .traffic_class = o->t.tclass } };

		memcpy(ah.grh.dgid.raw, e->peer[0].gid, 16);
		e->ah = rnic_create_ah(e->pd, &ah);
		if (e->ah == NULL)
			return perf_fail("cannot create the UD address handle: %s", strerror(errno));
	}
	return 0;
}

int
perf_poll_send(struct perf_end *e, int max, struct rnic_wc *wc)
{
	int n = rnic_poll_cq(e->cq, max, wc);

	if (n < 0)
		return perf_fail("rnic_poll_cq failed on %s: %d", e->name, n);
	for (int i = 0; i < n; i++)
		perf_account_send(e, &wc[i]);
	return n;
}

int
perf_poll_recv(struct perf_end *e, int max, struct rnic_wc *wc)
{
	int n = rnic_poll_cq(e->rcq, max, wc);

	if (n < 0)
		return perf_fail("rnic_poll_cq failed on %s: %d", e->name, n);
	e->rq_out -= (uint64_t)n;
	return n;
}

/*
 * Leave nothing behind before the QPs go back to RESET: in ERR the engine completes every send and receive
 * still posted (flushed), and the drain polls until each has its completion. A completion polled after its
 * QP was reset would name a slot of the emptied queue.
 */
int
perf_end_quiesce(struct perf_end *e)
{
	struct rnic_qp_attr err = { .qp_state = RNIC_QPS_ERR };
	struct rnic_wc wc[64];
	double deadline = perf_now_s() + PERF_WAIT_S;

	for (uint32_t q = 0; q < e->nb_qp; q++)
		if (rnic_modify_qp(e->qp[q], &err, RNIC_QP_STATE) != 0)
			return perf_fail("cannot move QP %u of %s to ERR", e->qp[q]->qp_num, e->name);
	while (e->outstanding > 0 || e->rq_out > 0) {
		if (perf_poll_send(e, 64, wc) < 0 || perf_poll_recv(e, 64, wc) < 0)
			return -1;
		if (perf_now_s() > deadline)
			return perf_fail("%s: %llu sends and %llu receives still without a completion after %d s",
					 e->name, (unsigned long long)e->outstanding, (unsigned long long)e->rq_out,
					 PERF_WAIT_S);
	}
	return 0;
}

int
perf_post_recv(struct perf_end *e, uint32_t q, uint64_t idx)
{
	struct rnic_sge sge = { (uintptr_t)perf_rx_slot(e, q, idx), (uint32_t)e->slot, e->mr->lkey };
	struct rnic_recv_wr wr = { .wr_id = perf_wr_id(q, idx), .sg_list = &sge, .num_sge = 1 }, *bad;
	int err = rnic_post_recv(e->qp[q], &wr, &bad);

	if (err != 0)
		return perf_fail("cannot post a receive on QP %u of %s: %s", e->qp[q]->qp_num, e->name, strerror(err));
	e->rq_out++;
	return 0;
}

int
perf_post_receives(struct perf_end *e)
{
	for (uint32_t q = 0; q < e->nb_qp; q++)
		for (uint32_t k = 0; k < perf_qp_slots(e, q); k++)
			if (perf_post_recv(e, q, k) != 0)
				return -1;
	return 0;
}

/*
 * -e: sleep until a CQ of one of the ends has a completion event, then re-arm it. The stages this thread
 * runs (manual progress) run between the waits, which last 1 ms at most.
 */
int
perf_wait_events(struct perf_end *const *ends, int n)
{
	struct pollfd pfd[2];

	for (int i = 0; i < n && i < 2; i++)
		pfd[i] = (struct pollfd){ .fd = ends[i]->channel->fd, .events = POLLIN };
	if (poll(pfd, (nfds_t)RTE_MIN(n, 2), 1) < 0 && errno != EINTR)
		return perf_fail("-e: poll: %s", strerror(errno));
	for (int i = 0; i < n && i < 2; i++) {
		struct rnic_cq *cq;
		void *ctx;

		if (!(pfd[i].revents & POLLIN))
			continue;
		if (rnic_get_cq_event(ends[i]->channel, &cq, &ctx) != 0)
			return perf_fail("-e: rnic_get_cq_event: %s", strerror(errno));
		rnic_ack_cq_events(cq, 1);
		if (rnic_req_notify_cq(cq, 0) != 0)
			return perf_fail("-e: cannot arm a CQ again");
	}
	rnic_engine_progress();
	return 0;
}

/* Wait for one completion on cq (a send CQ: counted). */
int
perf_wait_wc(struct perf_end *e, struct rnic_cq *cq, const struct perf_test *t, struct rnic_wc *wc)
{
	double deadline = perf_now_s() + PERF_WAIT_S;

	for (;;) {
		int n = cq == e->cq ? perf_poll_send(e, 1, wc) : perf_poll_recv(e, 1, wc);

		if (n == 1)
			return wc->status == RNIC_WC_SUCCESS ? 0 :
			       perf_fail("%s: QP %u: %s", e->name, wc->qp_num, rnic_wc_status_str(wc->status));
		if (n < 0)
			return -1;
		if (perf_now_s() > deadline)
			return perf_fail("%s: no completion in %d s", e->name, PERF_WAIT_S);
		if (t->events && perf_wait_events(&e, 1) != 0)
			return -1;
	}
}

/* Fill the tx slots the peer READs from (READ tests), and zero the atomic counters. */
void
perf_prepare_target(struct perf_end *e, const struct perf_test *t, uint32_t size)
{
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		for (uint32_t k = 0; k < perf_qp_slots(e, q) && t->op == OP_READ; k++)
			perf_fill(perf_tx_slot(e, q, k), size, q, k);
		if (perf_op_atomic(t->op))
			memset(perf_tx_slot(e, q, 0), 0, 8);
	}
}

/* The target's state after count[q] messages per QP: each slot holds the last WRITE to it, each atomic
 * counter the number of atomics. 0, 1 (not yet), or -1 (wrong and said so: final). */
static int
target_state(struct perf_end *e, const struct perf_test *t, uint32_t size, const uint64_t *count, int final)
{
	for (uint32_t q = 0; q < e->nb_qp; q++) {
		uint64_t counter, from = count[q] > perf_qp_slots(e, q) ? count[q] - perf_qp_slots(e, q) : 0;

		for (uint64_t m = from; t->op == OP_WRITE && m < count[q]; m++) {
			if (perf_check(perf_rx_slot(e, q, m), size, q, m) == 0)
				continue;
			if (!final)
				return 1;
			return perf_fail("QP %u message %llu: written data differs", q, (unsigned long long)m);
		}
		if (!perf_op_atomic(t->op))
			continue;
		memcpy(&counter, perf_tx_slot(e, q, 0), 8);
		if (counter != count[q] && !final)
			return 1;
		if (counter != count[q])
			return perf_fail("QP %u: atomic counter %llu, expected %llu", q, (unsigned long long)counter,
					 (unsigned long long)count[q]);
	}
	return 0;
}

/* --verify at the target after a run. UC completes a WRITE when it is sent: give the last ones time to land
 * (the target's stages may be this thread's own: run them meanwhile). */
int
perf_check_target(struct perf_end *e, const struct perf_test *t, uint32_t size, const uint64_t *count)
{
	for (int i = 0; t->conn != RNIC_QPT_RC && i < 1000; i++) {
		if (target_state(e, t, size, count, 0) == 0)
			return 0;
		while (rnic_engine_progress() != 0)
			;
		usleep(1000);
	}
	return target_state(e, t, size, count, 1);
}

/*
 * A received message (--verify). Its first 8 bytes say which it is (messages of 8 bytes or more): RC must
 * deliver each in order exactly once; UC and UD may lose some (a SEND finding no receive is dropped), so a
 * later one may come, never an earlier one again.
 */
int
perf_check_received(struct perf_end *e, const struct perf_test *t, uint32_t q, const uint8_t *data, uint32_t len,
		    uint32_t size)
{
	uint64_t msg = e->next_msg[q];

	if (len != size + (t->conn == RNIC_QPT_UD ? UD_GRH : 0))
		return -1;
	if (size >= 8) {
		memcpy(&msg, data, 8);
		if (t->conn == RNIC_QPT_RC ? msg != e->next_msg[q] : msg < e->next_msg[q])
			return -1;
		e->next_msg[q] = msg + 1;
		return perf_check(data + 8, size - 8, q, msg) == 0 ? 0 : -1;
	}
	if (t->conn != RNIC_QPT_RC)
		return 0;	/* too short to say which message it is */
	e->next_msg[q] = msg + 1;
	return perf_check(data, size, q, msg);
}

/* What a SEND carries (--verify): its number in the first 8 bytes, then the pattern. */
void
perf_fill_send(uint8_t *p, uint32_t size, uint32_t q, uint64_t msg)
{
	if (size < 8) {
		perf_fill(p, size, q, msg);
		return;
	}
	memcpy(p, &msg, 8);
	perf_fill(p + 8, size - 8, q, msg);
}

/* Receive completions: check (--verify) and post the receive again. -1 on an error completion or bad data. */
int
perf_serve_receives(struct perf_end *e, const struct perf_test *t, uint32_t size)
{
	struct rnic_wc wc[64];
	int n = perf_poll_recv(e, 64, wc);

	for (int i = 0; i < n; i++) {
		uint32_t q = perf_wr_qp(wc[i].wr_id);
		uint64_t idx = perf_wr_msg(wc[i].wr_id);
		const uint8_t *data = perf_rx_slot(e, q, idx) + (t->conn == RNIC_QPT_UD ? UD_GRH : 0);

		if (wc[i].status != RNIC_WC_SUCCESS)
			return perf_fail("%s: receive failed: %s", e->name, rnic_wc_status_str(wc[i].status));
		if (t->verify && perf_check_received(e, t, q, data, wc[i].byte_len, size) != 0)
			return perf_fail("%s: QP %u message %llu: received data differs", e->name, q,
					 (unsigned long long)e->received[q]);
		e->received[q]++;
		e->received_total++;
		if (perf_post_recv(e, q, idx + perf_qp_slots(e, q)) != 0)
			return -1;
	}
	return n < 0 ? -1 : 0;
}

/* The byte offset of a UD receive's payload in its slot (the GRH comes first). */
uint32_t
perf_recv_offset(const struct perf_test *t)
{
	return t->conn == RNIC_QPT_UD ? UD_GRH : 0;
}
