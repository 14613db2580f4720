/* SPDX-License-Identifier: BSD-3-Clause
 * A shared receive queue of an rnicd client (doc/qp.md, "Shared receive queues"): the client creates it
 * through the daemon (RNICD_CREATE_SRQ, its block a memfd both map), two of its QPs on it receive SENDs from
 * two QPs of its other context, every byte and wr_id checked; limit, query and destroy go through the daemon
 * (EBUSY while a QP uses it). Then the client writes its SRQ's head past what the SRQ holds, as a hostile
 * tenant would: the daemon's engine fails the SRQ and NAKs the request, and goes on serving (the next
 * client's traffic, its counters).
 * Run as: test_rnicd_srq RNICD
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rnic.h"
#include "rnic_srq.h"

#define NB_MSG 16u
#define SLOT 4096u

static struct rnic_qp *
srq_qp(struct end *e, struct rnic_srq *srq)
{
	struct rnic_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq, .srq = srq, .qp_type = RNIC_QPT_RC,
					.cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct rnic_qp *qp = rnic_create_qp(e->pd, &ia);

	CHECK(qp != NULL, "create_qp on the SRQ: %s", strerror(errno));
	return qp;
}

static void
post_srq(struct end *e, struct rnic_srq *srq)
{
	for (uint32_t i = 0; i < NB_MSG; i++) {
		struct rnic_sge sge = { .addr = (uintptr_t)e->buf + i * SLOT, .length = SLOT, .lkey = e->mr->lkey };
		struct rnic_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 }, *bad;

		CHECK(rnic_post_srq_recv(srq, &wr, &bad) == 0, "post_srq_recv %u", i);
	}
}

static int
client(void)
{
	struct end a = { 0 }, b = { 0 };
	struct rnic_srq_init_attr sia = { .attr = { .max_wr = NB_MSG, .max_sge = 1 } };
	struct rnic_srq_attr attr = { .srq_limit = 4 };
	struct rnic_recv_wr rwr = { .wr_id = 1 }, *rbad;
	struct rnic_qp *aq[2], *bq[2];
	struct { struct info a, b; } info[2];
	struct rnic_srq *srq;
	uint32_t seen = 0;
	struct rnic_wc wc;

	client_init();
	end_open(&a, 0);
	end_open(&b, 1);
	srq = rnic_create_srq(b.pd, &sia);
	CHECK(srq != NULL, "create_srq through rnicd: %s", strerror(errno));
	CHECK(sia.attr.max_wr >= NB_MSG && sia.attr.max_sge >= 1, "SRQ of %u WQEs", sia.attr.max_wr);
	aq[0] = a.qp;
	aq[1] = new_qp(&a);
	CHECK(aq[1] != NULL, "create_qp: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		bq[i] = srq_qp(&b, srq);
		info[i].a = end_info(&a, aq[i]);
		info[i].b = end_info(&b, bq[i]);
		connect_qp(aq[i], &info[i].b);
		connect_qp(bq[i], &info[i].a);
	}
	CHECK(rnic_post_recv(bq[0], &rwr, &rbad) == EINVAL, "post_recv on a QP of an SRQ is refused");
	post_srq(&b, srq);
	CHECK(rnic_modify_srq(srq, &attr, RNIC_SRQ_LIMIT) == 0, "modify_srq (limit)");
	for (uint32_t i = 0; i < NB_MSG; i++) {
		fill(a.buf + (i % 8) * SLOT, 1000 + i, i);
		post(aq[i % 2], RNIC_WR_SEND, (uintptr_t)a.buf + (i % 8) * SLOT, 1000 + i, a.mr->lkey, 0, 0);
		expect_ok(a.cq, RNIC_WC_SEND);
		wc = wait_wc(b.cq);
		CHECK(wc.status == RNIC_WC_SUCCESS && wc.opcode == RNIC_WC_RECV, "receive %u: %s", i,
		      rnic_wc_status_str(wc.status));
		CHECK(wc.wr_id >= 100 && wc.wr_id < 100 + NB_MSG && !(seen & (1u << (wc.wr_id - 100))),
		      "receive %u: wr_id %lu", i, (unsigned long)wc.wr_id);
		seen |= 1u << (wc.wr_id - 100);
		CHECK(wc.byte_len == 1000 + i && wc.qp_num == bq[i % 2]->qp_num, "receive %u: %u bytes on QP %u", i,
		      wc.byte_len, wc.qp_num);
		CHECK(matches(b.buf + (wc.wr_id - 100) * SLOT, 1000 + i, i), "receive %u: data differs", i);
	}
	CHECK(rnic_query_srq(srq, &attr) == 0 && attr.srq_limit == 0 && attr.max_wr >= NB_MSG,
	      "query_srq: the limit fired (%u), max_wr %u", attr.srq_limit, attr.max_wr);
	CHECK(rnic_destroy_srq(srq) == EBUSY, "destroy_srq with QPs on it is refused");

	/* Hostile: the SRQ's head, in this process's mapping of the block, past what the SRQ holds. */
	rnic_srq_priv(srq)->wq.idx->head += 1000;
	post(aq[0], RNIC_WR_SEND, (uintptr_t)a.buf, 64, a.mr->lkey, 0, 0);
	wc = wait_wc(a.cq);
	CHECK(wc.status == RNIC_WC_REM_OP_ERR, "a SEND into the failed SRQ: %s", rnic_wc_status_str(wc.status));

	for (int i = 0; i < 2; i++)
		CHECK(rnic_destroy_qp(bq[i]) == 0, "destroy_qp");
	CHECK(rnic_destroy_qp(aq[1]) == 0, "destroy_qp");
	CHECK(rnic_destroy_srq(srq) == 0, "destroy_srq");
	end_close(&a);
	end_close(&b);
	rnic_engine_fini();
	printf("srq: %u SENDs from 2 QPs into one SRQ of 2 QPs through rnicd, verified; a hostile head refused\n",
	       NB_MSG);
	return 0;
}

/* Another client after the hostile one: the daemon still serves (an SRQ made, traffic, freed). */
static int
client_after(void)
{
	struct end a = { 0 }, b = { 0 };
	struct rnic_srq_init_attr sia = { .attr = { .max_wr = NB_MSG, .max_sge = 1 } };
	struct info ia, ib;
	struct rnic_srq *srq;
	struct rnic_qp *bq;
	struct rnic_wc wc;

	client_init();
	end_open(&a, 0);
	end_open(&b, 1);
	srq = rnic_create_srq(b.pd, &sia);
	CHECK(srq != NULL, "create_srq: %s", strerror(errno));
	bq = srq_qp(&b, srq);
	ia = end_info(&a, a.qp);
	ib = end_info(&b, bq);
	connect_qp(a.qp, &ib);
	connect_qp(bq, &ia);
	post_srq(&b, srq);
	fill(a.buf, 3000, 42);
	post(a.qp, RNIC_WR_SEND, (uintptr_t)a.buf, 3000, a.mr->lkey, 0, 0);
	expect_ok(a.cq, RNIC_WC_SEND);
	wc = wait_wc(b.cq);
	CHECK(wc.status == RNIC_WC_SUCCESS && wc.wr_id == 100 && wc.byte_len == 3000 && matches(b.buf, 3000, 42),
	      "the next client's SEND into its SRQ");
	CHECK(rnic_destroy_qp(bq) == 0 && rnic_destroy_srq(srq) == 0, "destroy");
	end_close(&a);
	end_close(&b);
	rnic_engine_fini();
	return 0;
}

static void
run_child(int (*fn)(void), const char *what)
{
	pid_t c = fork();
	int status;

	CHECK(c >= 0, "fork");
	if (c == 0)
		_exit(fn());
	status = wait_child(c, 120);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (status %#x)", what, status);
}

int
main(int argc, char **argv)
{
	struct rnicd_stats st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc != 2) {
		fprintf(stderr, "usage: test_rnicd_srq RNICD\n");
		return 2;
	}
	start_daemon(argv[1], NULL);
	run_child(client, "the SRQ client");
	run_child(client_after, "the client after it");
	st = daemon_stats();
	CHECK(st.srqs_live == 0 && st.qps_live == 0 && st.shared_bytes == 0 && st.clients_gone == 0,
	      "after the clients: %lu SRQs, %lu QPs, %lu bytes live, %lu clients gone", (unsigned long)st.srqs_live,
	      (unsigned long)st.qps_live, (unsigned long)st.shared_bytes, (unsigned long)st.clients_gone);
	stop_daemon();
	return 0;
}
