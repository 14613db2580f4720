/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbour resolution (rnic_neigh.h) and the wire habits of real RNICs, against a scripted peer: device A's
 * stages and its neighbour control (rnic_neigh_poll, with a clock the test moves) run on the test's thread;
 * the test plays hosts on A's LAN from the other port of the loopback pair, with ARP and ND frames it builds
 * by hand (RFC 826, RFC 4861), hostile ones included.
 * Run as: test_neigh <EAL args with one lcore> [-- --ip ADDR[,ADDR...] --ip ADDR]: the family of A's
 * address picks the tests (ARP for IPv4, neighbour discovery for IPv6); A's further addresses (GIDs 1, ...)
 * are answered for and announced as its first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "rnic.h"
#include "rnic_neigh.h"
#include "rnic_pipeline.h"
#include "rnic_priv.h"
#include "rnic_wire.h"
#include "test_env.h"
#include "test_pipeline.h"

#define PEER_QPN 0x123
#define RKEY 0x77
#define BUF 4096
#define MAX_FRAMES 64
#define HOST_MAC { 0x02, 0x00, 0x00, 0x00, 0x00, 0x99 }

static int g_argc;
static char **g_argv;
static struct test_side a;	/* device A: context, PD, CQ, registered buffer */
static struct rnic_device *dev;
static struct rnic_pipeline *pipe_a;
static struct rte_mempool *pool;
static uint16_t peer_port;
static int v6;			/* A's address is IPv6: neighbour discovery instead of ARP */
static uint64_t clock_now;	/* the neighbour control's clock: the test moves it */
static uint64_t ms;

static const uint8_t host_mac[6] = HOST_MAC;
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* A host on A's LAN numbered n: 10.77.0.n or fd00:77::n. */
static union rnic_gid
host(uint8_t n)
{
	union rnic_gid g = { .raw = { 0 } };

	if (v6) {
		g.raw[0] = 0xfd;
		g.raw[3] = 0x77;
	} else {
		g.raw[10] = g.raw[11] = 0xff;
		g.raw[12] = 10;
		g.raw[13] = 77;
	}
	g.raw[15] = n;
	return g;
}

/* The engine with one lcore: A's pipeline is the test's to poll; the other port of the pair is the LAN. */
static int
setup(void)
{
	struct rnic_device **list;
	int ret;

	if (rnic_engine_init(g_argc, g_argv) < 0)
		return -1;
	list = rnic_get_device_list(NULL);
	peer_port = list[1]->port_id;
	ret = test_side_open(&a, list[0], BUF, RNIC_ACCESS_LOCAL_WRITE);
	rnic_free_device_list(list);
	if (ret != 0)
		return -1;
	dev = rnic_ctx_dev(a.ctx);
	v6 = dev->gid[0].raw[10] != 0xff;
	pool = rte_pktmbuf_pool_create("neigh_test", 1023, 64, 0, RTE_PKTMBUF_HEADROOM + 8192, SOCKET_ID_ANY);
	pipe_a = pool != NULL ? test_pipeline_attach(a.ctx, pool) : NULL;
	ms = rte_get_tsc_hz() / 1000;
	clock_now = rte_get_tsc_cycles();
	return pipe_a != NULL ? 0 : -1;
}

/* A's neighbour control at the test's clock, then its stages (what the control built goes out). */
static void
run_a(void)
{
	rnic_neigh_poll(dev, clock_now);
	test_pipeline_pump(pipe_a);
}

/* The frames A sent since the last call, copied into f[i] (len[i]); how many. */
static int
peer_take(uint8_t f[][600], uint32_t *len, int max)
{
	struct rte_mbuf *m[MAX_FRAMES];
	int got = 0;

	run_a();
	for (uint16_t q = 0; q < 2; q++) {
		uint16_t n = rte_eth_rx_burst(peer_port, q, m, MAX_FRAMES);

		for (uint16_t i = 0; i < n; i++) {
			if (got < max && rte_pktmbuf_pkt_len(m[i]) <= 600) {
				const uint8_t *data;

				len[got] = rte_pktmbuf_pkt_len(m[i]);
				data = rte_pktmbuf_read(m[i], 0, len[got], f[got]);
				assert_non_null(data);
				memmove(f[got], data, len[got]);	/* read copies only a chained mbuf */
				got++;
			}
			rte_pktmbuf_free(m[i]);
		}
	}
	return got;
}

static void
peer_send(const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	assert_non_null(m);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), frame, len);
	assert_int_equal(rte_eth_tx_burst(peer_port, 0, &m, 1), 1);
	test_pipeline_pump(pipe_a);	/* the parser hands it to the neighbour ring */
}

static uint64_t
counter(const char *name)
{
	return test_counter(a.ctx, name);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Frames of the LAN's hosts, built here by hand                                                            */

static uint8_t *
eth(uint8_t *p, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	p[12] = (uint8_t)(type >> 8);
	p[13] = (uint8_t)type;
	return p + 14;
}

/* An ARP frame (42 bytes, no padding: what Linux sends on a veth). */
static uint32_t
arp_frame(uint8_t *f, uint16_t op, const uint8_t *sha, uint8_t sip, const uint8_t *tha, const uint8_t *tip)
{
	static const uint8_t zero[6];
	uint8_t *p = eth(f, op == 1 ? bcast : dev->mac.addr_bytes, sha, 0x0806);
	const uint8_t head[8] = { 0, 1, 0x08, 0x00, 6, 4, 0, (uint8_t)op };
	union rnic_gid s = host(sip);

	memcpy(p, head, 8);
	memcpy(p + 8, sha, 6);
	memcpy(p + 14, &s.raw[12], 4);
	memcpy(p + 18, tha != NULL ? tha : zero, 6);
	memcpy(p + 24, tip, 4);
	return 42;
}

/* The ICMPv6 checksum, big-endian words (RFC 4443 2.3), over the pseudo-header and the message. */
static uint16_t
icmp6_checksum(const uint8_t *src, const uint8_t *dst, const uint8_t *msg, uint32_t len)
{
	uint32_t sum = 58 + len;

	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)(src[i] << 8 | src[i + 1]) + (uint32_t)(dst[i] << 8 | dst[i + 1]);
	for (uint32_t i = 0; i < len; i += 2)
		sum += (uint32_t)(msg[i] << 8 | (i + 1 < len ? msg[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* An NS or NA from host src: type, flags (NA), target, an option (type opt, link-layer address lla, length
 * opt_len x 8; none if opt is 0), hop limit hl. */
static uint32_t
nd_frame(uint8_t *f, uint8_t type, uint8_t flags, const uint8_t *src, const uint8_t *dst, const uint8_t *dst_mac,
	 const uint8_t *target, uint8_t opt, uint8_t opt_len, const uint8_t *lla, uint8_t hl)
{
	uint8_t *ip = eth(f, dst_mac, host_mac, 0x86dd), *icmp = ip + 40;
	uint32_t len = 24 + (opt != 0 ? 8u : 0u);
	uint16_t sum;

	memset(ip, 0, 40 + len);
	ip[0] = 0x60;
	ip[4] = (uint8_t)(len >> 8);
	ip[5] = (uint8_t)len;
	ip[6] = 58;
	ip[7] = hl;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	if (opt != 0) {
		icmp[24] = opt;
		icmp[25] = opt_len;
		memcpy(icmp + 26, lla, 6);
	}
	sum = icmp6_checksum(src, dst, icmp, len);
	icmp[2] = (uint8_t)(sum >> 8);
	icmp[3] = (uint8_t)sum;
	return 14 + 40 + len;
}

/* The peer host n answers A's request for its address from mac (an ARP reply or a solicited NA). */
static void
answer(uint8_t n, const uint8_t *mac)
{
	uint8_t f[128];
	union rnic_gid h = host(n);

	if (v6)
		peer_send(f, nd_frame(f, 136, 0x60, h.raw, dev->gid[0].raw, dev->mac.addr_bytes, h.raw, 2, 1, mac, 255));
	else
		peer_send(f, arp_frame(f, 2, mac, n, dev->mac.addr_bytes, &dev->gid[0].raw[12]));
	run_a();
}

/* Whether frame f is A's request for host n's address (broadcast ARP / NS to the solicited-node address). */
static int
is_request_for(const uint8_t *f, uint32_t len, uint8_t n)
{
	union rnic_gid h = host(n);

	if (memcmp(f + 6, dev->mac.addr_bytes, 6) != 0)
		return 0;
	if (!v6)
		return len == 42 && memcmp(f, bcast, 6) == 0 && f[12] == 0x08 && f[13] == 0x06 && f[21] == 1 &&
		       memcmp(f + 22, dev->mac.addr_bytes, 6) == 0 && memcmp(f + 28, &dev->gid[0].raw[12], 4) == 0 &&
		       memcmp(f + 38, &h.raw[12], 4) == 0;
	/* 33:33:ff + the target's last 3 bytes; ff02::1:ffXX:XXXX; hop limit 255; NS; our SLLA; checksum right. */
	return len == 14 + 40 + 32 && f[0] == 0x33 && f[1] == 0x33 && f[2] == 0xff && f[5] == n && f[20] == 58 &&
	       f[21] == 255 && f[38] == 0xff && f[39] == 0x02 && f[49] == 0x01 && f[50] == 0xff && f[53] == n &&
	       f[54] == 135 && memcmp(f + 62, h.raw, 16) == 0 && f[78] == 1 && f[79] == 1 &&
	       memcmp(f + 80, dev->mac.addr_bytes, 6) == 0 && icmp6_checksum(f + 22, f + 38, f + 54, 32) == 0;
}

/* The frames A sends now that are requests for host n. */
static int
requests_for(uint8_t n)
{
	static uint8_t f[MAX_FRAMES][600];
	uint32_t len[MAX_FRAMES];
	int got = peer_take(f, len, MAX_FRAMES), found = 0;

	for (int i = 0; i < got; i++)
		found += is_request_for(f[i], len[i], n);
	return found;
}

/* ------------------------------------------------------------------------------------------------------ */
/* QPs                                                                                                      */

/* A UC QP (completes when sent: no peer answers needed) of A towards host n's QP dqpn, through RTS; the
 * address vector's hop limit 1, as the pingpong examples give it, and traffic class tclass. */
static struct rnic_qp *
uc_qp(uint8_t n, uint32_t dqpn, uint8_t tclass)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = a.cq, .recv_cq = a.cq, .qp_type = RNIC_QPT_UC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rnic_qp *qp = rnic_create_qp(a.pd, &ia);
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
				  .qp_access_flags = RNIC_ACCESS_REMOTE_WRITE };

	assert_non_null(qp);
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
					RNIC_QP_ACCESS_FLAGS), 0);
	a = (struct rnic_qp_attr){
		.qp_state = RNIC_QPS_RTR, .path_mtu = RNIC_MTU_1024, .dest_qp_num = dqpn,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = host(n), .hop_limit = 1, .traffic_class = tclass } },
	};
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
					RNIC_QP_RQ_PSN), 0);
	a = (struct rnic_qp_attr){ .qp_state = RNIC_QPS_RTS };
	assert_int_equal(rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN), 0);
	return qp;
}

static void
post_write(struct rnic_qp *qp, uint64_t id)
{
	struct rnic_sge sge = { .addr = (uintptr_t)a.buf, .length = 64, .lkey = a.mr->lkey };
	struct rnic_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_RDMA_WRITE,
		.send_flags = RNIC_SEND_SIGNALED, .wr = { .rdma = { .remote_addr = 0x1000, .rkey = RKEY } },
	}, *bad;

	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

/* Pump A until it sends a RoCE frame (bounded: 2 s), parsed into d; 0 if none came. */
static int
take_roce(struct rnic_pkt_desc *d, uint8_t *raw)
{
	static uint8_t f[MAX_FRAMES][600];
	uint32_t len[MAX_FRAMES];
	double end = test_now_s() + 2;

	while (test_now_s() < end) {
		int got = peer_take(f, len, MAX_FRAMES);

		for (int i = 0; i < got; i++) {
			if (rnic_pkt_parse(f[i], len[i], d, 1) == RNIC_DROP_NONE) {
				memcpy(raw, f[i], 64);
				return 1;
			}
		}
	}
	return 0;
}

/* Pump A until a completion comes (bounded: 6 s, past RNIC_NEIGH_WAIT_MS). */
static int
wait_wc(struct rnic_wc *wc)
{
	double end = test_now_s() + 6;

	while (test_now_s() < end) {
		run_a();
		if (rnic_poll_cq(a.cq, 1, wc) == 1)
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Tests                                                                                                    */

/* A request for one of A's addresses (GID mine) from a host is answered (ARP reply / solicited NA), to the
 * host's MAC, from that address. */
static void
request_answered(const union rnic_gid *mine)
{
	static uint8_t out[MAX_FRAMES][600];
	uint32_t len[MAX_FRAMES];
	uint8_t f[128];
	union rnic_gid h = host(9);
	uint64_t req = counter("neigh_requests_received"), rep = counter("neigh_replies_sent");
	int got;

	if (v6) {
		uint8_t snm[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff };
		const uint8_t snm_mac[6] = { 0x33, 0x33, 0xff, mine->raw[13], mine->raw[14],
					     mine->raw[15] };

		memcpy(snm + 13, mine->raw + 13, 3);
		peer_send(f, nd_frame(f, 135, 0, h.raw, snm, snm_mac, mine->raw, 1, 1, host_mac, 255));
	} else {
		peer_send(f, arp_frame(f, 1, host_mac, 9, NULL, &mine->raw[12]));
	}
	got = peer_take(out, len, MAX_FRAMES);
	assert_int_equal(got, 1);
	assert_memory_equal(out[0], host_mac, 6);			/* to the host */
	assert_memory_equal(out[0] + 6, dev->mac.addr_bytes, 6);	/* from A */
	if (v6) {
		const uint8_t *icmp = out[0] + 54;

		assert_int_equal(len[0], 14 + 40 + 32);
		assert_int_equal(out[0][21], 255);
		assert_memory_equal(out[0] + 22, mine->raw, 16);
		assert_memory_equal(out[0] + 38, h.raw, 16);
		assert_int_equal(icmp[0], 136);
		assert_int_equal(icmp[4], 0x60);			/* solicited, override */
		assert_memory_equal(icmp + 8, mine->raw, 16);
		assert_int_equal(icmp[24], 2);				/* target link-layer address */
		assert_memory_equal(icmp + 26, dev->mac.addr_bytes, 6);
		assert_int_equal(icmp6_checksum(out[0] + 22, out[0] + 38, icmp, 32), 0);
	} else {
		assert_int_equal(len[0], 42);
		assert_int_equal(out[0][21], 2);			/* reply */
		assert_memory_equal(out[0] + 22, dev->mac.addr_bytes, 6);
		assert_memory_equal(out[0] + 28, &mine->raw[12], 4);
		assert_memory_equal(out[0] + 32, host_mac, 6);
		assert_memory_equal(out[0] + 38, &h.raw[12], 4);
	}
	assert_int_equal(counter("neigh_requests_received"), req + 1);
	assert_int_equal(counter("neigh_replies_sent"), rep + 1);
	/* A request is answered; it puts no entry in the cache for an address A never asked for. */
	assert_int_equal(counter("neigh_entries"), 0);
}

/* Every address of A's GID table is answered for (neigh-*-gids: several, one per tenant). */
static void
test_request_answered(void **state)
{
	(void)state;
	for (int g = 0; g < dev->gid_count; g++)
		request_answered(&dev->gid[g]);
}

/* A request for someone else's address is not answered (counted ignored). */
static void
test_request_for_other_ignored(void **state)
{
	static uint8_t out[MAX_FRAMES][600];
	uint32_t len[MAX_FRAMES];
	uint8_t f[128];
	union rnic_gid h = host(9), other = host(77);
	uint64_t ignored = counter("neigh_ignored");

	(void)state;
	if (v6)
		peer_send(f, nd_frame(f, 135, 0, h.raw, other.raw, bcast, other.raw, 1, 1, host_mac, 255));
	else
		peer_send(f, arp_frame(f, 1, host_mac, 9, NULL, &other.raw[12]));
	assert_int_equal(peer_take(out, len, MAX_FRAMES), 0);
	assert_int_equal(counter("neigh_ignored"), ignored + 1);
}

/*
 * A QP to a host A has no MAC for: the move to RTR asks (broadcast ARP / NS), a WRITE posted waits, the
 * answer fills the cache and the WRITE goes to the MAC learned. Its frame has real RNICs' habits: TTL 64
 * though the AV says 1, the AV's traffic class as TOS, DF and an IP ID that increments, a UDP source port of
 * the 0xC000 range that differs per QP pair.
 */
static void
test_resolve_then_send(void **state)
{
	const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x21 };
	struct rnic_qp *qp = uc_qp(21, PEER_QPN, 0x8a), *qp2;
	struct rnic_pkt_desc d, d2;
	struct rnic_wc wc;
	uint8_t raw[64], raw2[64];

	(void)state;
	assert_int_equal(requests_for(21), 1);
	post_write(qp, 1);
	run_a();
	assert_int_equal(requests_for(21), 0);		/* asked once; the WRITE waits, nothing goes out */
	assert_int_equal(rnic_poll_cq(a.cq, 1, &wc), 0);
	assert_true(pipe_a->stats[RNIC_STAGE_REQUESTER].neigh_waits > 0);
	answer(21, mac);
	assert_int_equal(counter("neigh_replies_received"), 1);
	assert_int_equal(counter("neigh_entries"), 1);
	assert_true(take_roce(&d, raw));
	assert_memory_equal(&d.dst_mac, mac, 6);
	assert_int_equal(d.dqpn, PEER_QPN);
	assert_int_equal(d.hop_limit, 64);
	assert_int_equal(d.traffic_class, 0x8a);
	assert_true(d.udp_sport >= 0xc000);
	if (!v6)
		assert_int_equal(raw[20] & 0x40, 0x40);		/* DF */
	assert_true(wait_wc(&wc));
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);

	/* The next frame of the same stage: the next IP ID. Another QP pair: another source port. */
	qp2 = uc_qp(21, PEER_QPN + 1, 0);
	post_write(qp2, 2);
	assert_true(take_roce(&d2, raw2));
	assert_true(wait_wc(&wc));
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	if (!v6)
		assert_int_equal((uint16_t)(d2.ip_id - d.ip_id), 1);
	assert_true(d2.udp_sport >= 0xc000);
	assert_int_not_equal(d2.udp_sport, d.udp_sport);
	assert_int_equal(rnic_destroy_qp(qp), 0);
	assert_int_equal(rnic_destroy_qp(qp2), 0);
}

/* No answer: RNIC_NEIGH_RETRIES requests RNIC_NEIGH_RETRANS_MS apart, then the resolution fails and the
 * waiting WRITE completes in error (retry exceeded), the UC QP in SQE (a send error, IBA 10.3.1). */
static void
test_no_answer_fails(void **state)
{
	struct rnic_qp *qp = uc_qp(22, PEER_QPN, 0);
	uint64_t failures = counter("neigh_failures"), no_route = counter("no_route");
	struct rnic_wc wc;
	int asked;

	(void)state;
	post_write(qp, 3);
	asked = requests_for(22);
	for (int i = 1; i < RNIC_NEIGH_RETRIES + 2; i++) {
		clock_now += RNIC_NEIGH_RETRANS_MS * ms;
		asked += requests_for(22);
	}
	assert_int_equal(asked, RNIC_NEIGH_RETRIES);
	assert_int_equal(counter("neigh_failures"), failures + 1);
	assert_true(wait_wc(&wc));
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, RNIC_WC_RETRY_EXC_ERR);
	assert_int_equal(qp->state, RNIC_QPS_SQE);
	assert_int_equal(counter("no_route"), no_route + 1);
	/* After RNIC_NEIGH_FAILED_MS the failure is forgotten: a new QP asks again. */
	clock_now += RNIC_NEIGH_FAILED_MS * ms;
	run_a();
	assert_int_equal(rnic_destroy_qp(qp), 0);
	qp = uc_qp(22, PEER_QPN, 0);
	assert_int_equal(requests_for(22), 1);
	assert_int_equal(rnic_destroy_qp(qp), 0);
}

/* A known entry is checked again after RNIC_NEIGH_REACHABLE_MS with a unicast request; its answer keeps it. */
static void
test_entry_checked_again(void **state)
{
	static uint8_t out[MAX_FRAMES][600];
	uint32_t len[MAX_FRAMES];
	const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x21 };
	uint8_t got[6];
	union rnic_gid h = host(21);
	int n, to_mac = 0;

	(void)state;
	assert_int_equal(rnic_neigh_lookup(dev, &h, got), 0);	/* learned by test_resolve_then_send */
	clock_now += RNIC_NEIGH_REACHABLE_MS * ms;
	n = peer_take(out, len, MAX_FRAMES);
	for (int i = 0; i < n; i++)
		to_mac += memcmp(out[i], mac, 6) == 0;
	assert_int_equal(to_mac, 1);				/* a request unicast to the MAC known */
	assert_int_equal(rnic_neigh_lookup(dev, &h, got), 0);	/* still used meanwhile */
	answer(21, mac);
	clock_now += RNIC_NEIGH_RETRIES * RNIC_NEIGH_RETRANS_MS * ms;
	run_a();
	assert_int_equal(rnic_neigh_lookup(dev, &h, got), 0);
	assert_memory_equal(got, mac, 6);
}

/* Hostile ARP frames: each dropped and counted under its reason; none changes the cache. */
static void
test_hostile_arp(void **state)
{
	const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x21 }, evil[6] = { 0x02, 0xee, 0, 0, 0, 1 };
	uint8_t f[128], got[6];
	union rnic_gid h21 = host(21), h50 = host(50);
	uint64_t malformed = counter("neigh_drop_malformed"), sender = counter("neigh_drop_bad_sender");
	uint64_t unsolicited = counter("neigh_drop_unsolicited");
	uint32_t len;

	(void)state;
	len = arp_frame(f, 2, evil, 21, dev->mac.addr_bytes, &dev->gid[0].raw[12]);
	peer_send(f, 30);					/* truncated */
	f[18] = 8;						/* hlen 8 */
	peer_send(f, len);
	f[18] = 6;
	f[19] = 6;						/* plen 6 */
	peer_send(f, len);
	f[19] = 4;
	f[21] = 3;						/* op 3 */
	peer_send(f, len);
	f[16] = 0x86;						/* protocol not IPv4 */
	f[21] = 2;
	peer_send(f, len);
	run_a();
	assert_int_equal(counter("neigh_drop_malformed"), malformed + 5);

	peer_send(f, arp_frame(f, 2, bcast, 21, dev->mac.addr_bytes, &dev->gid[0].raw[12]));	/* broadcast sha */
	len = arp_frame(f, 2, evil, 21, dev->mac.addr_bytes, &dev->gid[0].raw[12]);
	memset(f + 22, 0, 6);					/* zero sha */
	peer_send(f, len);
	len = arp_frame(f, 2, evil, 1, dev->mac.addr_bytes, &dev->gid[0].raw[12]);
	memcpy(f + 28, &dev->gid[0].raw[12], 4);		/* A's own address as the sender */
	peer_send(f, len);
	run_a();
	assert_int_equal(counter("neigh_drop_bad_sender"), sender + 3);

	/* A gratuitous ARP reply for an address A never asked for, and one for A's own address. */
	peer_send(f, arp_frame(f, 2, evil, 50, bcast, &h50.raw[12]));
	run_a();
	assert_int_equal(counter("neigh_drop_unsolicited"), unsolicited + 1);
	assert_int_equal(rnic_neigh_lookup(dev, &h50, got), -EAGAIN);	/* not in the cache (and now asked) */
	assert_int_equal(rnic_neigh_lookup(dev, &h21, got), 0);
	assert_memory_equal(got, mac, 6);				/* unchanged by every frame above */
}

/* Hostile neighbour discovery frames: each dropped and counted; none changes the cache. */
static void
test_hostile_nd(void **state)
{
	const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x21 }, evil[6] = { 0x02, 0xee, 0, 0, 0, 1 };
	const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0, 0, 1 };
	uint8_t f[128], got[6];
	union rnic_gid h21 = host(21), h50 = host(50);
	const uint8_t *me = dev->gid[0].raw, *amac = dev->mac.addr_bytes;
	uint64_t malformed = counter("neigh_drop_malformed"), sender = counter("neigh_drop_bad_sender");
	uint64_t unsolicited = counter("neigh_drop_unsolicited");
	uint32_t len;

	(void)state;
	peer_send(f, nd_frame(f, 136, 0x60, h21.raw, me, amac, h21.raw, 2, 1, evil, 64));	/* hop limit 64 */
	len = nd_frame(f, 136, 0x60, h21.raw, me, amac, h21.raw, 2, 1, evil, 255);
	f[56] ^= 1;						/* checksum */
	peer_send(f, len);
	peer_send(f, nd_frame(f, 136, 0x60, h21.raw, me, amac, h21.raw, 2, 0, evil, 255));	/* option length 0 */
	len = nd_frame(f, 136, 0x60, h21.raw, me, amac, h21.raw, 0, 0, NULL, 255);
	f[19] = 16;						/* ICMPv6 shorter than an NA */
	f[54 + 2] = f[54 + 3] = 0;
	peer_send(f, 14 + 40 + 16);
	peer_send(f, nd_frame(f, 136, 0x60, h21.raw, (const uint8_t[16]){ 0xff, 0x02, [15] = 1 }, amac, h21.raw,
			      2, 1, evil, 255));		/* solicited, to a multicast address */
	run_a();
	assert_int_equal(counter("neigh_drop_malformed"), malformed + 5);

	peer_send(f, nd_frame(f, 136, 0x60, h21.raw, me, amac, h21.raw, 2, 1, mcast, 255));	/* multicast TLLA */
	peer_send(f, nd_frame(f, 136, 0x60, h21.raw, me, amac, me, 2, 1, evil, 255));		/* target: A */
	peer_send(f, nd_frame(f, 135, 0, h21.raw, me, amac, me, 1, 1, bcast, 255));		/* broadcast SLLA */
	run_a();
	assert_int_equal(counter("neigh_drop_bad_sender"), sender + 3);

	/* An unsolicited NA for an address A never asked for. */
	peer_send(f, nd_frame(f, 136, 0x20, h50.raw, me, amac, h50.raw, 2, 1, evil, 255));
	run_a();
	assert_int_equal(counter("neigh_drop_unsolicited"), unsolicited + 1);
	assert_int_equal(rnic_neigh_lookup(dev, &h50, got), -EAGAIN);
	assert_int_equal(rnic_neigh_lookup(dev, &h21, got), 0);
	assert_memory_equal(got, mac, 6);
}

/* At port start: a gratuitous ARP (a request for A's own address) or an unsolicited NA to all nodes, for
 * each address of its GID table. */
static void
test_announce(void **state)
{
	static uint8_t out[MAX_FRAMES][600];
	uint32_t len[MAX_FRAMES];

	(void)state;
	rnic_neigh_announce(dev);
	assert_int_equal(peer_take(out, len, MAX_FRAMES), dev->gid_count);
	for (int g = 0; g < dev->gid_count; g++) {
		const uint8_t *f = out[g], *mine = dev->gid[g].raw;

		if (v6) {
			assert_int_equal(f[0], 0x33);
			assert_int_equal(f[54], 136);
			assert_int_equal(f[58], 0x20);			/* override, not solicited */
			assert_memory_equal(f + 62, mine, 16);
			assert_int_equal(icmp6_checksum(f + 22, f + 38, f + 54, 32), 0);
		} else {
			assert_memory_equal(f, bcast, 6);
			assert_int_equal(f[21], 1);
			assert_memory_equal(f + 28, &mine[12], 4);	/* sender = target = A's address */
			assert_memory_equal(f + 38, &mine[12], 4);
		}
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_announce),
		cmocka_unit_test(test_request_answered),
		cmocka_unit_test(test_request_for_other_ignored),
		cmocka_unit_test(test_resolve_then_send),
		cmocka_unit_test(test_no_answer_fails),
		cmocka_unit_test(test_entry_checked_again),
	};
	const struct CMUnitTest arp[] = { cmocka_unit_test(test_hostile_arp) };
	const struct CMUnitTest nd[] = { cmocka_unit_test(test_hostile_nd) };
	int ret;

	g_argc = argc;
	g_argv = argv;
	if (setup() != 0)
		return 1;
	ret = cmocka_run_group_tests_name("neigh", tests, NULL, NULL);
	ret += v6 ? cmocka_run_group_tests_name("neigh-nd", nd, NULL, NULL) :
		    cmocka_run_group_tests_name("neigh-arp", arp, NULL, NULL);
	/* The engine frees A's pipeline with the device; the pool goes with the EAL. */
	test_side_close(&a);
	return ret + (rnic_engine_fini() != 0);
}
