/* SPDX-License-Identifier: BSD-3-Clause
 * QP1 (lib/cm/rnic_gsi.c) between the two devices of the loopback pair: device 0's GSI, and a UD QP of the
 * test's on device 1 that sends it MADs as another port's agent would. What is answered (Get and Set of a
 * class or method not served, with IBA's status), what is dropped (responses, traps, malformed MADs, a
 * wrong Q_Key), what is handed to the CM class handler, and the numbering of QP1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rte_byteorder.h>

#include "cm_test.h"
#include "rnic.h"
#include "rnic_gsi.h"
#include "rnic_priv.h"
#include "rnic_wire.h"
#include "test_env.h"

#define SLOT (RNIC_GRH_BYTES + RNIC_MAD_SIZE)
#define NB_RECV 16

static int g_argc;
static char **g_argv;

static struct rnic_gsi *gsi;		/* device 0's QP1 */
static struct test_side B;		/* the far port: device 1 */
static struct rnic_qp *ud;		/* B's UD QP, Q_Key 0x80010000 (a management QP's) */
static struct rnic_ah *to_qp1;		/* B -> device 0 */
static union rnic_gid gid0;

/* What the CM class handler was given. */
static int cm_calls;
static struct rnic_gsi_addr cm_from;
static uint8_t cm_mad[RNIC_MAD_SIZE];

static void
cm_handler(void *arg, struct rnic_gsi *g, const uint8_t *mad, const struct rnic_gsi_addr *from)
{
	(void)arg;
	(void)g;
	cm_calls++;
	cm_from = *from;
	memcpy(cm_mad, mad, sizeof(cm_mad));
}

static void
post_recv(uint32_t i)
{
	struct rnic_sge sge = { .addr = (uintptr_t)(B.buf + (size_t)i * SLOT), .length = SLOT, .lkey = B.mr->lkey };
	struct rnic_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(rnic_post_recv(ud, &wr, &bad), 0);
}

static struct rnic_qp *
ud_qp(uint32_t qkey)
{
	struct rnic_qp *qp = cm_test_ud_qp(B.pd, B.cq, qkey, NB_RECV);

	assert_non_null(qp);
	return qp;
}

/* A MAD of B's, at the end of B's buffer (past the receive slots). */
static uint8_t *
out_mad(void)
{
	return B.buf + (size_t)NB_RECV * SLOT;
}

static void
make_mad(uint8_t mgmt_class, uint8_t version, uint8_t method, uint64_t tid)
{
	struct rnic_mad_hdr *h = (void *)out_mad();

	memset(out_mad(), 0, RNIC_MAD_SIZE);
	h->base_version = RNIC_MAD_BASE_VERSION;
	h->mgmt_class = mgmt_class;
	h->class_version = version;
	h->method = method;
	h->tid = rte_cpu_to_be_64(tid);
	h->attr_id = rte_cpu_to_be_16(0x0010);
	out_mad()[100] = 0x5a;		/* a byte of the data, which a response carries back */
}

static void
send_from(struct rnic_qp *qp, uint32_t len)
{
	struct rnic_sge sge = { .addr = (uintptr_t)out_mad(), .length = len, .lkey = B.mr->lkey };
	struct rnic_send_wr wr = { .wr_id = 99, .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_SEND,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = to_qp1;
	wr.wr.ud.remote_qpn = RNIC_GSI_QPN;
	wr.wr.ud.remote_qkey = RNIC_GSI_QKEY;
	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

/* Poll QP1 and B's CQ for up to `seconds`: the number of MADs B received (the last one's slot in *slot), once
 * B's send completed and QP1 took what it got. */
static int
exchange(double seconds, uint32_t *slot)
{
	double end = test_now_s() + seconds;
	int received = 0, sent = 0;
	struct rnic_wc wc;

	while (test_now_s() < end) {
		rnic_gsi_poll(gsi);
		while (rnic_poll_cq(B.cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, RNIC_WC_SUCCESS);
			if (wc.opcode & RNIC_WC_RECV) {
				*slot = (uint32_t)wc.wr_id;
				received++;
			} else {
				sent++;
			}
		}
		if (sent > 0 && received > 0)
			break;
	}
	return received;
}

static uint64_t
gsi_counter(const char *name)
{
	struct rnic_counter c[32];
	int n = rnic_gsi_counters(gsi, c, 32);

	for (int i = 0; i < n && i < 32; i++)
		if (strcmp(c[i].name, name) == 0)
			return c[i].value;
	fail_msg("no counter %s", name);
	return 0;
}

/* A request is answered: a GetResp to the QP it came from, same transaction, data, and the status. */
static void
expect_answer(uint8_t mgmt_class, uint8_t version, uint8_t method, uint16_t status)
{
	uint64_t before = gsi_counter("gsi_unsupported_answered");
	static uint64_t tid = 0x1000;
	const struct rnic_mad_hdr *r;
	uint32_t slot = 0;

	make_mad(mgmt_class, version, method, ++tid);
	send_from(ud, RNIC_MAD_SIZE);
	assert_int_equal(exchange(5.0, &slot), 1);
	r = (const void *)(B.buf + (size_t)slot * SLOT + RNIC_GRH_BYTES);
	assert_int_equal(r->method, RNIC_MAD_METHOD_GET_RESP);
	assert_int_equal(rte_be_to_cpu_16(r->status), status);
	assert_int_equal(r->mgmt_class, mgmt_class);
	assert_true(rte_be_to_cpu_64(r->tid) == tid);
	assert_int_equal(B.buf[(size_t)slot * SLOT + RNIC_GRH_BYTES + 100], 0x5a);
	assert_int_equal(gsi_counter("gsi_unsupported_answered"), before + 1);
	post_recv(slot);
}

/* Nothing comes back, and the counter says why. */
static void
expect_drop(uint32_t len, const char *counter)
{
	uint64_t before = gsi_counter(counter);
	uint32_t slot = 0;

	send_from(ud, len);
	assert_int_equal(exchange(0.3, &slot), 0);
	assert_int_equal(gsi_counter(counter), before + 1);
}

static void
test_qp1_numbering(void **state)
{
	struct rnic_gsi *second;
	struct rnic_qp *qp;

	(void)state;
	assert_int_equal(gsi->qp->qp_num, RNIC_GSI_QPN);
	assert_int_equal(rnic_gsi_open(rnic_engine_device(0), &second), -EBUSY);
	qp = ud_qp(0x11);		/* an ordinary QP never takes 0 or 1 */
	assert_true(qp->qp_num > 1);
	assert_int_equal(rnic_destroy_qp(qp), 0);
}

static void
test_unsupported_class_answered(void **state)
{
	(void)state;
	/* Performance management (0x04): no agent serves it here. */
	expect_answer(0x04, 1, RNIC_MAD_METHOD_GET, RNIC_MAD_STATUS_BAD_VERSION);
	expect_answer(0x04, 1, RNIC_MAD_METHOD_SET, RNIC_MAD_STATUS_BAD_VERSION);
	/* The CM class, a version it does not speak. */
	expect_answer(0x07, 1, RNIC_MAD_METHOD_GET, RNIC_MAD_STATUS_BAD_VERSION);
}

static void
test_cm_methods(void **state)
{
	uint32_t slot = 0;

	(void)state;
	/* Without a CM handler the class is not served at all. */
	expect_answer(0x07, 2, RNIC_MAD_METHOD_GET, RNIC_MAD_STATUS_BAD_VERSION);
	rnic_gsi_set_cm_handler(gsi, cm_handler, NULL);
	expect_answer(0x07, 2, RNIC_MAD_METHOD_SET, RNIC_MAD_STATUS_UNSUPPORTED_METHOD);
	expect_answer(0x07, 2, RNIC_MAD_METHOD_GET, RNIC_MAD_STATUS_UNSUPPORTED_ATTR);
	/* A Send is the CM's, with where it came from. */
	make_mad(0x07, 2, RNIC_MAD_METHOD_SEND, 0x77);
	send_from(ud, RNIC_MAD_SIZE);
	for (double end = test_now_s() + 5.0; cm_calls == 0 && test_now_s() < end;)
		rnic_gsi_poll(gsi);
	assert_int_equal(cm_calls, 1);
	assert_memory_equal(&cm_from.gid, &B.gid, sizeof(B.gid));
	assert_int_equal(cm_from.qpn, ud->qp_num);
	assert_memory_equal(cm_mad, out_mad(), RNIC_MAD_SIZE);
	assert_int_equal(gsi_counter("gsi_cm_mads"), 1);
	assert_int_equal(exchange(0.2, &slot), 0);
	rnic_gsi_set_cm_handler(gsi, NULL, NULL);
}

static void
test_not_requests_dropped(void **state)
{
	(void)state;
	make_mad(0x04, 1, RNIC_MAD_METHOD_TRAP, 1);
	expect_drop(RNIC_MAD_SIZE, "gsi_unsupported_dropped");
	make_mad(0x04, 1, RNIC_MAD_METHOD_GET_RESP, 2);
	expect_drop(RNIC_MAD_SIZE, "gsi_unsupported_dropped");
	make_mad(0x04, 1, RNIC_MAD_METHOD_SEND, 3);
	expect_drop(RNIC_MAD_SIZE, "gsi_unsupported_dropped");
}

static void
test_malformed_dropped(void **state)
{
	(void)state;
	make_mad(0x04, 1, RNIC_MAD_METHOD_GET, 4);
	expect_drop(100, "gsi_malformed");	/* not a whole MAD */
	make_mad(0x04, 1, RNIC_MAD_METHOD_GET, 5);
	out_mad()[0] = 2;			/* base version 2 */
	expect_drop(RNIC_MAD_SIZE, "gsi_malformed");
}

static void
test_wrong_qkey_dropped(void **state)
{
	uint64_t received = gsi_counter("gsi_mads_received");
	uint64_t violations = test_counter(gsi->ctx, "qkey_violations");
	struct rnic_qp *other = ud_qp(0x1234);
	struct rnic_sge sge = { .addr = (uintptr_t)out_mad(), .length = RNIC_MAD_SIZE, .lkey = B.mr->lkey };
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_SEND,
				   .send_flags = RNIC_SEND_SIGNALED }, *bad;
	uint32_t slot;

	(void)state;
	make_mad(0x04, 1, RNIC_MAD_METHOD_GET, 6);
	wr.wr.ud.ah = to_qp1;
	wr.wr.ud.remote_qpn = RNIC_GSI_QPN;
	wr.wr.ud.remote_qkey = 0x1234;
	assert_int_equal(rnic_post_send(other, &wr, &bad), 0);
	assert_int_equal(exchange(0.3, &slot), 0);
	assert_int_equal(gsi_counter("gsi_mads_received"), received);
	assert_int_equal(test_counter(gsi->ctx, "qkey_violations"), violations + 1);
	assert_int_equal(rnic_destroy_qp(other), 0);
}

static void
test_gsi_sends(void **state)
{
	struct rnic_gsi_addr to = { .gid = B.gid, .qpn = ud->qp_num };
	uint8_t mad[RNIC_MAD_SIZE] = { RNIC_MAD_BASE_VERSION, 0x07, 2, RNIC_MAD_METHOD_SEND, [200] = 0xc3 };
	double end = test_now_s() + 5.0;
	struct rnic_wc wc;
	int got = 0;

	(void)state;
	assert_int_equal(rnic_gsi_send(gsi, &to, mad), 0);
	while (!got && test_now_s() < end) {
		rnic_gsi_poll(gsi);
		if (rnic_poll_cq(B.cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, RNIC_WC_SUCCESS);
			assert_true(wc.opcode & RNIC_WC_RECV);
			assert_int_equal(wc.src_qp, RNIC_GSI_QPN);
			assert_int_equal(wc.byte_len, SLOT);
			assert_memory_equal(B.buf + wc.wr_id * SLOT + RNIC_GRH_BYTES, mad, RNIC_MAD_SIZE);
			post_recv((uint32_t)wc.wr_id);
			got = 1;
		}
	}
	assert_true(got);
}

static void
test_pkey_match(void **state)
{
	(void)state;
	assert_true(rnic_pkey_match(0xffff));	/* full member of the default partition */
	assert_true(rnic_pkey_match(0x7fff));	/* limited member: our entry is full */
	assert_false(rnic_pkey_match(0x8001));
	assert_false(rnic_pkey_match(0x0000));
}

static int
setup(void **state)
{
	struct rnic_device **list;
	struct rnic_ah_attr av = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64 } };

	(void)state;
	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	if (test_side_open(&B, list[1], 1 << 16, RNIC_ACCESS_LOCAL_WRITE) != 0)
		return -1;
	rnic_free_device_list(list);
	if (rnic_engine_start() != 0 || rnic_gsi_open(rnic_engine_device(0), &gsi) != 0)
		return -1;
	if (rnic_query_gid(gsi->ctx, 1, 0, &gid0) != 0)
		return -1;
	av.grh.dgid = gid0;
	to_qp1 = rnic_create_ah(B.pd, &av);
	ud = ud_qp(RNIC_GSI_QKEY);
	for (uint32_t i = 0; i < NB_RECV; i++)
		post_recv(i);
	return to_qp1 != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	rnic_engine_stop();
	rnic_destroy_qp(ud);
	rnic_destroy_ah(to_qp1);
	rnic_gsi_close(gsi);
	test_side_close(&B);
	return rnic_engine_fini();
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pkey_match),
		cmocka_unit_test(test_qp1_numbering),
		cmocka_unit_test(test_unsupported_class_answered),
		cmocka_unit_test(test_cm_methods),
		cmocka_unit_test(test_not_requests_dropped),
		cmocka_unit_test(test_malformed_dropped),
		cmocka_unit_test(test_wrong_qkey_dropped),
		cmocka_unit_test(test_gsi_sends),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("gsi", tests, setup, teardown);
}
