/* SPDX-License-Identifier: BSD-3-Clause
 * Completion queues: digest seed-001-002-004 §4.4 cases 1-11 and 13 (owner bit, doorbell record, arming,
 * events, overflow, error CQEs), receive CQE fields, a two-thread producer/consumer stress, channels,
 * arming racing a CQE.
 * Run as: test_cq <EAL args>
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_byteorder.h>

#include "rnic.h"
#include "test_env.h"
#include "rnic_cq.h"
#include "rnic_wqe.h"

static int g_argc;
static char **g_argv;
static struct rnic_context *ctx;

static int
setup(void **state)
{
	(void)state;
	ctx = test_env_open(g_argc, g_argv);
	if (ctx == NULL)
		return -1;
	return ctx != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	return test_env_close(ctx);
}

static struct rnic_cqe_desc
send_desc(uint32_t qpn, uint16_t counter, uint32_t bytes)
{
	return (struct rnic_cqe_desc){ .qpn = qpn, .wqe_counter = counter, .is_send = 1,
				       .wqe_opcode = RNIC_WQE_OP_RDMA_WRITE, .status = RNIC_WC_SUCCESS,
				       .byte_cnt = bytes };
}

static int
readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static struct rnic_comp_channel *
nonblocking_channel(void)
{
	struct rnic_comp_channel *ch = rnic_create_comp_channel(ctx);

	assert_non_null(ch);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	return ch;
}

static void
take_event(struct rnic_comp_channel *ch, struct rnic_cq *expect)
{
	struct rnic_cq *cq;
	void *cq_ctx;

	assert_int_equal(rnic_get_cq_event(ch, &cq, &cq_ctx), 0);
	assert_ptr_equal(cq, expect);
	assert_ptr_equal(cq_ctx, expect->cq_context);
	rnic_ack_cq_events(cq, 1);
}

static void
test_create_args(void **state)
{
	struct rnic_device_attr attr;
	struct rnic_cq *cq;

	(void)state;
	rnic_query_device(ctx, &attr);
	assert_null(rnic_create_cq(ctx, 0, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_create_cq(ctx, attr.max_cqe + 1, NULL, NULL, 0));
	assert_null(rnic_create_cq(ctx, 16, NULL, NULL, 1));	/* one completion vector */
	assert_null(rnic_create_cq(NULL, 16, NULL, NULL, 0));
	cq = rnic_create_cq(ctx, 5, (void *)0x1234, NULL, 0);
	assert_non_null(cq);
	assert_true(cq->cqe >= 5);
	assert_ptr_equal(cq->cq_context, (void *)0x1234);
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_destroy_cq(NULL), EINVAL);
}

/* Cases 1 and 2 */
static void
test_new_cq_empty_then_one(void **state)
{
	struct rnic_cq *cq = rnic_create_cq(ctx, 8, NULL, NULL, 0);
	struct rnic_cq_priv *p = rnic_cq_priv(cq);
	struct rnic_cqe_desc d = send_desc(0x1234, 7, 100);
	struct rnic_wc wc[4];

	(void)state;
	for (int i = 0; i <= cq->cqe; i++)
		assert_int_equal(p->cqes[i].op_own, 0xf1);
	assert_int_equal(rnic_poll_cq(cq, 4, wc), 0);
	assert_int_equal(rnic_cq_push(cq, &d), 0);
	assert_int_equal(rnic_poll_cq(cq, 4, wc), 1);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, RNIC_WC_RDMA_WRITE);
	assert_int_equal(wc[0].qp_num, 0x1234);
	assert_int_equal(wc[0].byte_len, 100);
	/* The CQE itself, in the mlx5 layout. */
	assert_int_equal(rte_be_to_cpu_32(p->cqes[0].sop_drop_qpn), (uint32_t)RNIC_WQE_OP_RDMA_WRITE << 24 | 0x1234);
	assert_int_equal(rte_be_to_cpu_16(p->cqes[0].wqe_counter), 7);
	assert_int_equal(rte_be_to_cpu_32(p->cqes[0].byte_cnt), 100);
	assert_int_equal(p->cqes[0].op_own >> 4, RNIC_CQE_REQ);
	assert_int_equal(p->cons, 1);
	assert_int_equal(p->dbrec[RNIC_CQ_DB_SET_CI], rte_cpu_to_be_32(1));
	assert_int_equal(rnic_poll_cq(cq, 4, wc), 0);
	assert_int_equal(rnic_poll_cq(cq, -1, wc), -EINVAL);
	assert_int_equal(rnic_destroy_cq(cq), 0);
}

/* Case 3: owner bit across wraps, stale entries never returned */
static void
test_owner_bit_wraps(void **state)
{
	struct rnic_cq *cq = rnic_create_cq(ctx, 3, NULL, NULL, 0);	/* 4 entries */
	struct rnic_cq_priv *p = rnic_cq_priv(cq);
	static const uint8_t expect_owner[10] = { 0, 0, 0, 0, 1, 1, 1, 1, 0, 0 };
	struct rnic_wc wc;

	(void)state;
	assert_int_equal(1u << p->log_nent, 4);
	for (uint16_t i = 0; i < 10; i++) {
		struct rnic_cqe_desc d = send_desc(9, i, i);

		assert_int_equal(rnic_cq_push(cq, &d), 0);
		assert_int_equal(p->cqes[i % 4].op_own & 1, expect_owner[i]);
		assert_int_equal(rnic_poll_cq(cq, 1, &wc), 1);
		assert_int_equal(wc.byte_len, i);
		assert_int_equal(rnic_poll_cq(cq, 1, &wc), 0);	/* last pass's entries are stale */
	}
	assert_int_equal(rnic_destroy_cq(cq), 0);
}

/* Case 4: a batch poll publishes the consumer index in the doorbell record once, at the end */
static void
test_batch_doorbell_record(void **state)
{
	struct rnic_cq *cq = rnic_create_cq(ctx, 16, NULL, NULL, 0);
	struct rnic_cq_priv *p = rnic_cq_priv(cq);
	struct rnic_wc wc[16];

	(void)state;
	for (uint16_t i = 0; i < 5; i++) {
		struct rnic_cqe_desc d = send_desc(9, i, 0);

		rnic_cq_push(cq, &d);
	}
	assert_int_equal(p->dbrec[RNIC_CQ_DB_SET_CI], 0);	/* nothing polled: nothing published */
	assert_int_equal(rnic_poll_cq(cq, 3, wc), 3);
	assert_int_equal(p->dbrec[RNIC_CQ_DB_SET_CI], rte_cpu_to_be_32(3));
	assert_int_equal(rnic_poll_cq(cq, 16, wc), 2);
	assert_int_equal(p->dbrec[RNIC_CQ_DB_SET_CI], rte_cpu_to_be_32(5));
	assert_int_equal(rnic_destroy_cq(cq), 0);
}

/* Case 6: full -> overflow error, async event, nothing overwritten */
static void
test_overflow(void **state)
{
	struct rnic_cq *cq = rnic_create_cq(ctx, 3, NULL, NULL, 0);
	struct rnic_cq_priv *p = rnic_cq_priv(cq);
	struct rnic_async_event ev;
	struct rnic_wc wc[8];

	(void)state;
	assert_int_equal(fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK), 0);
	for (uint16_t i = 0; i < 4; i++) {
		struct rnic_cqe_desc d = send_desc(9, i, i);

		assert_int_equal(rnic_cq_push(cq, &d), 0);
	}
	struct rnic_cqe_desc extra = send_desc(9, 99, 99);

	assert_false(readable(ctx->async_fd));
	assert_int_equal(rnic_cq_push(cq, &extra), -ENOSPC);
	assert_int_equal(rte_be_to_cpu_16(p->cqes[0].wqe_counter), 0);	/* the oldest survives */
	assert_true(readable(ctx->async_fd));
	assert_int_equal(rnic_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, RNIC_EVENT_CQ_ERR);
	assert_ptr_equal(ev.element.cq, cq);
	rnic_ack_async_event(&ev);
	assert_int_equal(cq->async_events_completed, 1);
	assert_int_equal(rnic_cq_push(cq, &extra), -EIO);
	/* What was written is still delivered, in order; then the error. */
	assert_int_equal(rnic_poll_cq(cq, 8, wc), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(wc[i].byte_len, i);
	assert_int_equal(rnic_poll_cq(cq, 8, wc), -EIO);
	assert_int_equal(rnic_destroy_cq(cq), 0);
}

/* A burst of CQEs (one reservation, as the requester retires a run of WQEs): in order across the wrap,
 * one event for an armed CQ; a burst larger than the room left fills it and then overflows, as one CQE
 * after another would. */
static void
test_push_burst(void **state)
{
	struct rnic_comp_channel *ch = nonblocking_channel();
	struct rnic_cq *cq = rnic_create_cq(ctx, 8, NULL, ch, 0);
	uint32_t nent = 1u << rnic_cq_priv(cq)->log_nent;
	struct rnic_cqe_desc d[64];
	struct rnic_wc wc[64];
	struct rnic_cq *got;
	void *got_ctx;

	(void)state;
	assert_true(nent + 2 <= 64);
	for (uint16_t i = 0; i < 64; i++)
		d[i] = send_desc(9, i, 100u + i);
	assert_int_equal(rnic_cq_push_burst(cq, d, 5), 0);
	assert_int_equal(rnic_poll_cq(cq, 16, wc), 5);
	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);
	assert_int_equal(rnic_cq_push_burst(cq, d + 5, nent - 2), 0);	/* wraps the ring */
	assert_int_equal(rnic_get_cq_event(ch, &got, &got_ctx), 0);
	assert_ptr_equal(got, cq);
	rnic_ack_cq_events(cq, 1);
	assert_int_equal(rnic_get_cq_event(ch, &got, &got_ctx), -1);	/* one event for the burst */
	assert_int_equal(rnic_poll_cq(cq, 64, wc), (int)nent - 2);
	for (uint32_t i = 0; i < nent - 2; i++)
		assert_int_equal(wc[i].byte_len, 105u + i);
	assert_int_equal(rnic_cq_push_burst(cq, d, 0), 0);
	/* Two more than fit: the CQ filled, then the overflow error; nothing overwritten. */
	assert_int_equal(rnic_cq_push_burst(cq, d, nent + 2), -ENOSPC);
	assert_int_equal(rnic_poll_cq(cq, 64, wc), (int)nent);
	for (uint32_t i = 0; i < nent; i++)
		assert_int_equal(wc[i].byte_len, 100u + i);
	assert_int_equal(rnic_poll_cq(cq, 64, wc), -EIO);
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_destroy_comp_channel(ch), 0);
}

/* Polls n CQEs from cq, byte_len first, first + 1, ...; nothing after them. */
static void
expect_bytes(struct rnic_cq *cq, int n, uint32_t first)
{
	struct rnic_wc wc[64];

	assert_int_equal(rnic_poll_cq(cq, 64, wc), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(wc[i].byte_len, first + (uint32_t)i);
}

/* Deferred CQEs (rnic_cq_defer_slot, as a stage retires WQEs): none visible before the thread flushes, all of
 * them after; a push of the thread, a deferral to another CQ and a full batch push them first, so the CQ
 * sees them in the order they were produced; an armed CQ gets one event for the batch. */
static void
test_deferred(void **state)
{
	struct rnic_comp_channel *ch = nonblocking_channel();
	struct rnic_cq *cq = rnic_create_cq(ctx, 64, NULL, ch, 0), *other = rnic_create_cq(ctx, 64, NULL, NULL, 0);
	struct rnic_cqe_desc d[RNIC_CQ_DEFER_MAX + 1];
	struct rnic_cq *got;
	void *got_ctx;

	(void)state;
	assert_true(RNIC_CQ_DEFER_MAX + 1 <= 64);
	for (uint16_t i = 0; i < RTE_DIM(d); i++)
		d[i] = send_desc(9, i, 100u + i);
	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);
	for (int i = 0; i < 3; i++)
		*rnic_cq_defer_slot(cq) = d[i];
	expect_bytes(cq, 0, 0);
	assert_false(readable(ch->fd));
	rnic_cq_flush_deferred();
	take_event(ch, cq);
	assert_int_equal(rnic_get_cq_event(ch, &got, &got_ctx), -1);	/* one event for the batch */
	expect_bytes(cq, 3, 100);
	rnic_cq_flush_deferred();					/* nothing left: nothing pushed */
	expect_bytes(cq, 0, 0);

	/* A push of the thread comes after what it deferred. */
	*rnic_cq_defer_slot(cq) = d[0];
	*rnic_cq_defer_slot(cq) = d[1];
	assert_int_equal(rnic_cq_push(cq, &d[2]), 0);
	expect_bytes(cq, 3, 100);

	/* A deferral to another CQ pushes the first CQ's. */
	*rnic_cq_defer_slot(cq) = d[0];
	*rnic_cq_defer_slot(cq) = d[1];
	*rnic_cq_defer_slot(other) = d[2];
	expect_bytes(cq, 2, 100);
	expect_bytes(other, 0, 0);
	rnic_cq_flush_deferred();
	expect_bytes(other, 1, 102);

	/* A full batch goes when the next one is deferred. */
	for (unsigned int i = 0; i < RTE_DIM(d); i++)
		*rnic_cq_defer_slot(cq) = d[i];
	expect_bytes(cq, RNIC_CQ_DEFER_MAX, 100);
	rnic_cq_flush_deferred();
	expect_bytes(cq, 1, 100 + RNIC_CQ_DEFER_MAX);
	assert_int_equal(rnic_destroy_cq(other), 0);
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_destroy_comp_channel(ch), 0);
}

/* Cases 7 and 8: ARM_NEXT fires once on the next CQE, or at once when CQEs are waiting; no arm, no event */
static void
test_arm_next(void **state)
{
	struct rnic_comp_channel *ch = nonblocking_channel();
	struct rnic_cq *cq = rnic_create_cq(ctx, 16, (void *)0xc0, ch, 0);
	struct rnic_cqe_desc d = send_desc(9, 0, 0);
	struct rnic_cq *got;
	void *got_ctx;
	struct rnic_wc wc[16];

	(void)state;
	rnic_cq_push(cq, &d);				/* not armed: no event */
	assert_false(readable(ch->fd));
	assert_int_equal(rnic_get_cq_event(ch, &got, &got_ctx), -1);
	assert_int_equal(errno, EAGAIN);
	rnic_poll_cq(cq, 16, wc);

	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);	/* armed, nothing pending: no event yet */
	assert_false(readable(ch->fd));
	rnic_cq_push(cq, &d);				/* the next CQE fires exactly one */
	assert_true(readable(ch->fd));
	rnic_cq_push(cq, &d);
	take_event(ch, cq);
	assert_false(readable(ch->fd));			/* one event, not two */

	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);	/* re-armed with CQEs waiting: fires at once */
	assert_true(readable(ch->fd));
	take_event(ch, cq);
	assert_int_equal(rnic_poll_cq(cq, 16, wc), 2);

	assert_int_equal(rnic_destroy_comp_channel(ch), EBUSY);	/* a CQ still uses it */
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_destroy_comp_channel(ch), 0);
}

/* Case 9: ARM_SOLICITED fires on a solicited CQE or an error CQE only */
static void
test_arm_solicited(void **state)
{
	struct rnic_comp_channel *ch = nonblocking_channel();
	struct rnic_cq *cq = rnic_create_cq(ctx, 16, NULL, ch, 0);
	struct rnic_cqe_desc plain = { .qpn = 9, .status = RNIC_WC_SUCCESS, .byte_cnt = 1 };
	struct rnic_cqe_desc se = plain, err = plain;
	struct rnic_wc wc[16];

	(void)state;
	se.solicited = 1;
	err.status = RNIC_WC_REM_ACCESS_ERR;
	assert_int_equal(rnic_req_notify_cq(cq, 1), 0);
	rnic_cq_push(cq, &plain);
	assert_false(readable(ch->fd));
	rnic_cq_push(cq, &se);
	assert_true(readable(ch->fd));
	take_event(ch, cq);
	assert_int_equal(rnic_poll_cq(cq, 16, wc), 2);

	assert_int_equal(rnic_req_notify_cq(cq, 1), 0);
	rnic_cq_push(cq, &err);
	assert_true(readable(ch->fd));
	take_event(ch, cq);

	/* Armed solicited with an unpolled solicited CQE waiting: fires at once; with only plain ones: not. */
	rnic_poll_cq(cq, 16, wc);
	rnic_cq_push(cq, &plain);
	assert_int_equal(rnic_req_notify_cq(cq, 1), 0);
	assert_false(readable(ch->fd));
	rnic_cq_push(cq, &se);
	take_event(ch, cq);
	rnic_poll_cq(cq, 16, wc);
	rnic_cq_push(cq, &se);
	assert_int_equal(rnic_req_notify_cq(cq, 1), 0);
	assert_true(readable(ch->fd));
	take_event(ch, cq);
	rnic_poll_cq(cq, 16, wc);
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_destroy_comp_channel(ch), 0);
}

/* Cases 10 and 11: sequence numbers and the repeated-sn rule (table 156) */
static void
test_arm_sequence(void **state)
{
	struct rnic_comp_channel *ch = nonblocking_channel();
	struct rnic_cq *cq = rnic_create_cq(ctx, 64, NULL, ch, 0);
	struct rnic_cq_priv *p = rnic_cq_priv(cq);
	struct rnic_cqe_desc d = send_desc(9, 0, 0);
	struct rnic_wc wc[64];
	struct rnic_cq *got;
	void *got_ctx;

	(void)state;
	/* The doorbell record carries sn, command and consumer index. */
	assert_int_equal(rnic_req_notify_cq(cq, 1), 0);
	assert_int_equal(rte_be_to_cpu_32(p->dbrec[RNIC_CQ_DB_ARM]), 0u << 28 | RNIC_CQ_ARM_SOLICITED | 0);
	rnic_cq_push(cq, &d);
	d.solicited = 1;
	rnic_cq_push(cq, &d);
	d.solicited = 0;
	/* The event fired for sn 0; arming again with sn 0 (no rnic_get_cq_event yet) arms nothing. */
	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);
	rnic_poll_cq(cq, 64, wc);
	rnic_cq_push(cq, &d);
	assert_int_equal(rnic_get_cq_event(ch, &got, &got_ctx), 0);	/* the one event of sn 0 */
	assert_false(readable(ch->fd));
	rnic_ack_cq_events(cq, 1);
	rnic_poll_cq(cq, 64, wc);

	/* sn = events delivered mod 4: after 1, 2, 3, 4 events the arm word carries 1, 2, 3, 0. */
	for (unsigned int i = 1; i <= 4; i++) {
		assert_int_equal(rnic_req_notify_cq(cq, 0), 0);
		assert_int_equal(rte_be_to_cpu_32(p->dbrec[RNIC_CQ_DB_ARM]) >> 28, i & 3);
		rnic_cq_push(cq, &d);
		take_event(ch, cq);
		rnic_poll_cq(cq, 64, wc);
	}

	/* Table 156: ARM_NEXT then ARM_SOLICITED with the same sn: not rung (a plain CQE still fires). */
	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);
	assert_int_equal(rnic_req_notify_cq(cq, 1), 0);
	assert_int_equal(rte_be_to_cpu_32(p->dbrec[RNIC_CQ_DB_ARM]) & RNIC_CQ_ARM_SOLICITED, 0);
	rnic_cq_push(cq, &d);
	take_event(ch, cq);
	rnic_poll_cq(cq, 64, wc);
	/* ARM_SOLICITED then ARM_NEXT with the same sn: rung (a plain CQE fires). */
	assert_int_equal(rnic_req_notify_cq(cq, 1), 0);
	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);
	rnic_cq_push(cq, &d);
	take_event(ch, cq);
	rnic_poll_cq(cq, 64, wc);

	/* Events not acknowledged keep the CQ from being destroyed. */
	assert_int_equal(rnic_req_notify_cq(cq, 0), 0);
	rnic_cq_push(cq, &d);
	assert_int_equal(rnic_get_cq_event(ch, &got, &got_ctx), 0);
	assert_int_equal(rnic_destroy_cq(cq), EBUSY);
	rnic_ack_cq_events(cq, 1);
	assert_int_equal(rnic_destroy_cq(cq), 0);
	assert_int_equal(rnic_destroy_comp_channel(ch), 0);
}

/* Case 13: error CQEs map back to their statuses; receive CQE fields */
static void
test_error_and_receive_cqes(void **state)
{
	static const enum rnic_wc_status statuses[] = {
		RNIC_WC_LOC_LEN_ERR, RNIC_WC_LOC_QP_OP_ERR, RNIC_WC_LOC_PROT_ERR, RNIC_WC_WR_FLUSH_ERR,
		RNIC_WC_BAD_RESP_ERR, RNIC_WC_LOC_ACCESS_ERR, RNIC_WC_REM_INV_REQ_ERR, RNIC_WC_REM_ACCESS_ERR,
		RNIC_WC_REM_OP_ERR, RNIC_WC_RETRY_EXC_ERR, RNIC_WC_RNR_RETRY_EXC_ERR, RNIC_WC_REM_ABORT_ERR,
	};
	struct rnic_cq *cq = rnic_create_cq(ctx, 64, NULL, NULL, 0);
	struct rnic_cq_priv *p = rnic_cq_priv(cq);
	struct rnic_wc wc[64];
	int n;

	(void)state;
	for (unsigned int i = 0; i < RTE_DIM(statuses); i++) {
		struct rnic_cqe_desc d = { .qpn = 5, .is_send = (uint8_t)(i & 1), .status = statuses[i],
					   .wqe_opcode = RNIC_WQE_OP_SEND, .vendor_err = (uint8_t)i };

		assert_int_equal(rnic_cq_push(cq, &d), 0);
		assert_int_equal(p->cqes[i].op_own >> 4, (i & 1) ? RNIC_CQE_REQ_ERR : RNIC_CQE_RESP_ERR);
	}
	assert_int_equal(((uint8_t *)&p->cqes[7])[RNIC_ERR_CQE_SYNDROME], 0x13);	/* remote access */
	assert_int_equal(((uint8_t *)&p->cqes[3])[RNIC_ERR_CQE_SYNDROME], 0x05);	/* flush */
	n = rnic_poll_cq(cq, 64, wc);
	assert_int_equal(n, (int)RTE_DIM(statuses));
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, statuses[i]);
		assert_int_equal(wc[i].vendor_err, i);
	}

	/* Receive completions: immediate, invalidate, RDMA WRITE with immediate, UD source and GRH. */
	struct rnic_cqe_desc imm = { .qpn = 5, .with_imm = 1, .imm_inval = rte_cpu_to_be_32(0xabcd),
				     .byte_cnt = 10, .solicited = 1 };
	struct rnic_cqe_desc inv = { .qpn = 5, .with_inv = 1, .imm_inval = 0x1122, .byte_cnt = 11 };
	struct rnic_cqe_desc wimm = { .qpn = 5, .with_imm = 1, .is_rdma_write = 1, .imm_inval = 7 };
	struct rnic_cqe_desc ud = { .qpn = 5, .grh = 1, .src_qp = 0x777, .byte_cnt = 40 + 3 };

	rnic_cq_push(cq, &imm);
	rnic_cq_push(cq, &inv);
	rnic_cq_push(cq, &wimm);
	rnic_cq_push(cq, &ud);
	assert_int_equal(rnic_poll_cq(cq, 64, wc), 4);
	assert_int_equal(wc[0].opcode, RNIC_WC_RECV);
	assert_int_equal(wc[0].wc_flags, RNIC_WC_WITH_IMM);
	assert_int_equal(wc[0].imm_data, rte_cpu_to_be_32(0xabcd));
	assert_int_equal(wc[0].byte_len, 10);
	assert_int_equal(wc[1].wc_flags, RNIC_WC_WITH_INV);
	assert_int_equal(wc[1].invalidated_rkey, 0x1122);
	assert_int_equal(wc[2].opcode, RNIC_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc[2].imm_data, 7);
	assert_int_equal(wc[3].opcode, RNIC_WC_RECV);
	assert_int_equal(wc[3].src_qp, 0x777);
	assert_int_equal(wc[3].wc_flags, RNIC_WC_GRH);
	assert_int_equal(wc[3].byte_len, 43);

	/* Every send WQE opcode maps to its completion opcode. */
	static const struct {
		uint8_t wqe;
		enum rnic_wc_opcode wc;
	} ops[] = {
		{ RNIC_WQE_OP_SEND, RNIC_WC_SEND }, { RNIC_WQE_OP_SEND_IMM, RNIC_WC_SEND },
		{ RNIC_WQE_OP_SEND_INVAL, RNIC_WC_SEND }, { RNIC_WQE_OP_RDMA_WRITE, RNIC_WC_RDMA_WRITE },
		{ RNIC_WQE_OP_RDMA_WRITE_IMM, RNIC_WC_RDMA_WRITE }, { RNIC_WQE_OP_RDMA_READ, RNIC_WC_RDMA_READ },
		{ RNIC_WQE_OP_ATOMIC_CS, RNIC_WC_COMP_SWAP }, { RNIC_WQE_OP_ATOMIC_FA, RNIC_WC_FETCH_ADD },
	};
	for (unsigned int i = 0; i < RTE_DIM(ops); i++) {
		struct rnic_cqe_desc d = send_desc(5, 0, 8);

		d.wqe_opcode = ops[i].wqe;
		rnic_cq_push(cq, &d);
		assert_int_equal(rnic_poll_cq(cq, 1, wc), 1);
		assert_int_equal(wc[0].opcode, ops[i].wc);
	}
	assert_int_equal(rnic_cqe_status(0x77), RNIC_WC_GENERAL_ERR);
	assert_int_equal(rnic_destroy_cq(cq), 0);
}

/* Case 5: a consumer on another thread never sees a CQE before its body is complete */
struct stress {
	struct rnic_cq *cq;
	uint32_t total;
	volatile int stop;
};

static void *
producer(void *arg)
{
	struct stress *s = arg;
	uint32_t i = 0;

	while (i < s->total && !s->stop) {
		struct rnic_cqe_desc d = send_desc(i & 0xffffff, (uint16_t)i, i * 3);

		d.imm_inval = ~i;
		if (rnic_cq_free_slots(s->cq) == 0)
			continue;	/* wait for the consumer, as the engine does */
		if (rnic_cq_push(s->cq, &d) == 0)
			i++;
		else
			s->stop = 2;
	}
	return NULL;
}

static void
test_two_thread_ordering(void **state)
{
	struct stress s = { .total = 300000 };
	struct rnic_wc wc[32];
	uint32_t next = 0;
	pthread_t t;
	time_t deadline = time(NULL) + 20;
	struct rnic_cq_priv *p;

	(void)state;
	s.cq = rnic_create_cq(ctx, 1024, NULL, NULL, 0);
	p = rnic_cq_priv(s.cq);
	/* The producer writes only when there is room (by the doorbell record), so it never overflows. */
	assert_int_equal(pthread_create(&t, NULL, producer, &s), 0);
	while (next < s.total && time(NULL) < deadline && s.stop == 0) {
		int n = rnic_poll_cq(s.cq, 32, wc);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++, next++) {
			if (wc[i].qp_num != (next & 0xffffff) || wc[i].byte_len != next * 3)
				fail_msg("CQE %u read before its body was complete", next);
		}
	}
	s.stop = s.stop ? s.stop : 1;
	pthread_join(t, NULL);
	assert_int_equal(next, s.total);
	assert_int_equal(p->overflows, 0);
	assert_int_equal(rnic_destroy_cq(s.cq), 0);
}

/*
 * Arming while a CQE lands (the lost wakeup ibv_uc_pingpong -e and ibv_ud_pingpong -e hung on through
 * rnicd): the consumer arms (a store of the arm word, then a look for CQEs already there) while the
 * producer pushes one CQE (a store of the CQE, then a look at the arm word). Each side's store and later
 * load are of different words, which even x86 reorders; one of the two must see the other, so every round
 * ends with exactly one event. The two threads on two CPUs, rounds started together, for 5 s (without the
 * fences, 3 runs of 3 s lost an event after 13, 3284 and 61180 rounds).
 */
struct arm_race {
	struct rnic_cq *cq;
	uint32_t round;			/* the round the producer may start: set by the consumer */
	uint32_t done;			/* the last round the producer pushed its CQE in */
	uint32_t stop;
};

static void *
arm_race_producer(void *arg)
{
	struct arm_race *r = arg;
	struct rnic_cqe_desc d = send_desc(9, 0, 0);
	uint32_t round = 0;

	for (;;) {
		uint32_t next;

		while ((next = __atomic_load_n(&r->round, __ATOMIC_ACQUIRE)) == round)
			if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
				return NULL;
		round = next;
		d.wqe_counter = (uint16_t)round;
		if (rnic_cq_push(r->cq, &d) != 0)
			__atomic_store_n(&r->stop, 2, __ATOMIC_RELEASE);
		__atomic_store_n(&r->done, round, __ATOMIC_RELEASE);
	}
}

/* The calling thread on the first online CPU and t on the second (the EAL pinned the test's thread to its
 * one lcore, and t inherited that); 0, both left where they were, when there are not two to have. */
static int
two_cpus(pthread_t t, cpu_set_t *saved)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t one;

	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(*saved), saved), 0);
	if (online < 2)
		return 0;
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	if (pthread_setaffinity_np(t, sizeof(one), &one) != 0)
		return 0;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
}

static void
test_arm_races_cqe(void **state)
{
	/* Static: the producer may still spin on it if an assertion ends the test. */
	static struct arm_race r;
	struct rnic_comp_channel *ch = nonblocking_channel();
	struct timespec start, now;
	struct rnic_wc wc[4];
	uint32_t armed = 0;
	int lost = 0, failed;
	cpu_set_t saved;
	pthread_t t;

	(void)state;
	r = (struct arm_race){ .cq = rnic_create_cq(ctx, 16, NULL, ch, 0) };
	assert_non_null(r.cq);
	assert_int_equal(pthread_create(&t, NULL, arm_race_producer, &r), 0);
	if (!two_cpus(t, &saved))
		print_message("not two CPUs: the two sides never overlap, the race is not exercised\n");
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		/* The producer starts as the consumer arms: both at once, a few instructions each. */
		__atomic_store_n(&r.round, r.round + 1, __ATOMIC_RELEASE);
		assert_int_equal(rnic_req_notify_cq(r.cq, 0), 0);
		while (__atomic_load_n(&r.done, __ATOMIC_ACQUIRE) != r.round)
			;
		if (__atomic_load_n(&r.stop, __ATOMIC_ACQUIRE) != 0)
			break;		/* the push failed: said below */
		if (!readable(ch->fd)) {
			/* Armed, the CQE there, no event: a program asleep on the channel would sleep for good. */
			lost = 1;
			armed = __atomic_load_n(&rnic_cq_priv(r.cq)->hif->arm, __ATOMIC_ACQUIRE);
			break;
		}
		take_event(ch, r.cq);
		assert_int_equal(rnic_poll_cq(r.cq, 4, wc), 1);
		assert_false(readable(ch->fd));		/* one event a round, not two */
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 5);
	failed = (int)__atomic_exchange_n(&r.stop, 1, __ATOMIC_ACQ_REL);
	pthread_join(t, NULL);
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved), 0);
	print_message("%u rounds\n", r.round);
	assert_int_equal(failed, 0);		/* every push took its CQE */
	if (lost)
		fail_msg("round %u: armed (arm word 0x%x), a CQE waiting, no event", r.round, armed);
	assert_int_equal(rnic_poll_cq(r.cq, 4, wc), 0);
	assert_int_equal(rnic_destroy_cq(r.cq), 0);
	assert_int_equal(rnic_destroy_comp_channel(ch), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_args),
		cmocka_unit_test(test_new_cq_empty_then_one),
		cmocka_unit_test(test_owner_bit_wraps),
		cmocka_unit_test(test_batch_doorbell_record),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_push_burst),
		cmocka_unit_test(test_deferred),
		cmocka_unit_test(test_arm_next),
		cmocka_unit_test(test_arm_solicited),
		cmocka_unit_test(test_arm_sequence),
		cmocka_unit_test(test_error_and_receive_cqes),
		cmocka_unit_test(test_two_thread_ordering),
		cmocka_unit_test(test_arm_races_cqe),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("cq", tests, setup, teardown);
}
