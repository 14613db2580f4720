/* SPDX-License-Identifier: BSD-3-Clause
 * One end of a CM connection between two processes (tests/cm/cm-veth.sh): the server listens on its device's
 * address and accepts, telling the client where to WRITE; the client resolves the server's address (ARP
 * unless --neigh says), is first rejected by a port nobody listens on (REJ reason 8), then connects, SENDs
 * and WRITEs a pattern and disconnects; the server checks every byte. Each prints "cm-peer: ok" and exits 0.
 *   cm_peer server PORT [EAL args [-- engine args]]
 *   cm_peer client SERVER_IP PORT [EAL args [-- engine args]]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rnic.h"

#define BUF 65536
#define LEN 32768
#define WAIT_MS 20000

struct server_info {
	uint64_t addr;
	uint32_t rkey;
};

static int
fail(const char *what, int err)
{
	fprintf(stderr, "cm-peer: %s: %s\n", what, strerror(err));
	exit(1);
}

static struct rnic_cm_event *
expect(struct rnic_cm_event_channel *ch, enum rnic_cm_event_type type)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rnic_cm_event *e;

	if (poll(&p, 1, WAIT_MS) != 1)
		fail(rnic_cm_event_str(type), ETIMEDOUT);
	if (rnic_cm_get_cm_event(ch, &e) != 0)
		fail("rnic_cm_get_cm_event", errno);
	if (e->event != type) {
		fprintf(stderr, "cm-peer: %s (status %d), expected %s\n", rnic_cm_event_str(e->event), e->status,
			rnic_cm_event_str(type));
		exit(1);
	}
	return e;
}

static void
wait_wc(struct rnic_cq *cq, const char *what)
{
	struct timespec t0, t;
	struct rnic_wc wc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (rnic_poll_cq(cq, 1, &wc) == 1) {
			if (wc.status != RNIC_WC_SUCCESS) {
				fprintf(stderr, "cm-peer: %s: %s\n", what, rnic_wc_status_str(wc.status));
				exit(1);
			}
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 > WAIT_MS)
			fail(what, ETIMEDOUT);
	}
}

static uint8_t
pattern(int i)
{
	return (uint8_t)(i * 13 + 5);
}

static struct rnic_qp_init_attr
qp_attr(void)
{
	return (struct rnic_qp_init_attr){
		.qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
}

static void
server(uint16_t port)
{
	struct rnic_cm_event_channel *ch = rnic_cm_create_event_channel();
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rnic_qp_init_attr ia = qp_attr();
	uint8_t *buf = rnic_alloc_buf(BUF);
	struct rnic_cm_id *l, *s;
	struct rnic_cm_event *e;
	struct rnic_mr *mr;
	struct server_info info;
	struct rnic_conn_param acc = { .private_data = &info, .private_data_len = sizeof(info),
				       .responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = 7 };
	struct rnic_sge sge;
	struct rnic_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ch == NULL || buf == NULL)
		fail("channel", errno);
	if (rnic_cm_create_id(ch, &l, NULL, RNIC_PS_TCP) || rnic_cm_bind_addr(l, (struct sockaddr *)&any) ||
	    rnic_cm_listen(l, 4))
		fail("listen", EINVAL);
	printf("cm-peer: listening on port %u\n", port);
	fflush(stdout);
	e = expect(ch, RNIC_CM_EVENT_CONNECT_REQUEST);
	s = e->id;
	rnic_cm_ack_cm_event(e);
	if (rnic_cm_create_qp(s, NULL, &ia) != 0)
		fail("create_qp", EINVAL);
	mr = rnic_reg_mr(s->pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	if (mr == NULL)
		fail("reg_mr", errno);
	sge = (struct rnic_sge){ .addr = (uintptr_t)buf, .length = LEN, .lkey = mr->lkey };
	if (rnic_post_recv(s->qp, &wr, &bad) != 0)
		fail("post_recv", EINVAL);
	info = (struct server_info){ .addr = (uintptr_t)buf + LEN, .rkey = mr->rkey };
	if (rnic_cm_accept(s, &acc) != 0)
		fail("accept", EINVAL);
	rnic_cm_ack_cm_event(expect(ch, RNIC_CM_EVENT_ESTABLISHED));
	wait_wc(s->recv_cq, "the client's SEND");
	rnic_cm_ack_cm_event(expect(ch, RNIC_CM_EVENT_DISCONNECTED));	/* after its WRITE */
	for (int i = 0; i < LEN; i++)
		if (buf[i] != pattern(i) || buf[LEN + i] != pattern(i))
			fail("data", EIO);
	rnic_cm_disconnect(s);
	rnic_dereg_mr(mr);
	rnic_cm_destroy_qp(s);
	rnic_cm_destroy_id(s);
	rnic_cm_destroy_id(l);
	rnic_cm_destroy_event_channel(ch);
	rnic_free_buf(buf);
}

static struct rnic_cm_id *
resolved(struct rnic_cm_event_channel *ch, struct sockaddr_in *dst)
{
	struct rnic_cm_id *c;
	struct rnic_qp_init_attr ia = qp_attr();

	if (rnic_cm_create_id(ch, &c, NULL, RNIC_PS_TCP) != 0 ||
	    rnic_cm_resolve_addr(c, NULL, (struct sockaddr *)dst, WAIT_MS) != 0)
		fail("resolve_addr", EINVAL);
	rnic_cm_ack_cm_event(expect(ch, RNIC_CM_EVENT_ADDR_RESOLVED));
	if (rnic_cm_resolve_route(c, WAIT_MS) != 0)
		fail("resolve_route", EINVAL);
	rnic_cm_ack_cm_event(expect(ch, RNIC_CM_EVENT_ROUTE_RESOLVED));
	if (rnic_cm_create_qp(c, NULL, &ia) != 0)
		fail("create_qp", EINVAL);
	return c;
}

static void
client(const char *ip, uint16_t port)
{
	struct rnic_cm_event_channel *ch = rnic_cm_create_event_channel();
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(port + 1)) };
	struct rnic_conn_param p = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
				     .rnr_retry_count = 7 };
	uint8_t *buf = rnic_alloc_buf(BUF);
	struct rnic_cm_id *c;
	struct rnic_cm_event *e;
	struct server_info info;
	struct rnic_mr *mr;
	struct rnic_sge sge;
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .send_flags = RNIC_SEND_SIGNALED }, *bad;

	if (ch == NULL || buf == NULL || inet_pton(AF_INET, ip, &dst.sin_addr) != 1)
		fail("channel or address", EINVAL);
	/* A port nobody listens on: REJ reason 8 from the server's CM. */
	c = resolved(ch, &dst);
	if (rnic_cm_connect(c, &p) != 0)
		fail("connect", EINVAL);
	e = expect(ch, RNIC_CM_EVENT_REJECTED);
	if (e->status != 8)
		fail("REJ reason", EINVAL);
	rnic_cm_ack_cm_event(e);
	printf("cm-peer: rejected with reason 8 by a port nobody listens on\n");
	rnic_cm_destroy_qp(c);
	rnic_cm_destroy_id(c);

	dst.sin_port = htons(port);
	c = resolved(ch, &dst);
	if (rnic_cm_connect(c, &p) != 0)
		fail("connect", EINVAL);
	e = expect(ch, RNIC_CM_EVENT_ESTABLISHED);
	memcpy(&info, e->param.conn.private_data, sizeof(info));
	rnic_cm_ack_cm_event(e);
	mr = rnic_reg_mr(c->pd, buf, BUF, RNIC_ACCESS_LOCAL_WRITE);
	if (mr == NULL)
		fail("reg_mr", errno);
	for (int i = 0; i < LEN; i++)
		buf[i] = pattern(i);
	sge = (struct rnic_sge){ .addr = (uintptr_t)buf, .length = LEN, .lkey = mr->lkey };
	wr.opcode = RNIC_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = info.addr;
	wr.wr.rdma.rkey = info.rkey;
	if (rnic_post_send(c->qp, &wr, &bad) != 0)
		fail("post WRITE", EINVAL);
	wait_wc(c->send_cq, "WRITE");
	wr.opcode = RNIC_WR_SEND;
	if (rnic_post_send(c->qp, &wr, &bad) != 0)
		fail("post SEND", EINVAL);
	wait_wc(c->send_cq, "SEND");
	if (rnic_cm_disconnect(c) != 0)
		fail("disconnect", EINVAL);
	rnic_cm_ack_cm_event(expect(ch, RNIC_CM_EVENT_DISCONNECTED));
	rnic_dereg_mr(mr);
	rnic_cm_destroy_qp(c);
	rnic_cm_destroy_id(c);
	rnic_cm_destroy_event_channel(ch);
	rnic_free_buf(buf);
}

int
main(int argc, char **argv)
{
	int is_server = argc >= 3 && strcmp(argv[1], "server") == 0;
	int skip = is_server ? 2 : 3;
	const char *ip = is_server ? NULL : argv[2];
	uint16_t port;
	int ret;

	if (!is_server && !(argc >= 4 && strcmp(argv[1], "client") == 0)) {
		fprintf(stderr, "usage: cm_peer server PORT [EAL args [-- engine args]]\n"
				"       cm_peer client SERVER_IP PORT [EAL args [-- engine args]]\n");
		return 2;
	}
	port = (uint16_t)atoi(argv[skip]);
	/* EAL takes argv[0] and what follows the role's own arguments. */
	argv[skip] = argv[0];
	if (rnic_engine_init(argc - skip, argv + skip) < 0 || rnic_engine_start() != 0)
		return 1;
	if (is_server)
		server(port);
	else
		client(ip, port);
	rnic_engine_stop();
	ret = rnic_engine_fini();
	printf("cm-peer: ok\n");
	return ret == 0 ? 0 : 1;
}
