/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-baseline: what the machine does without RDMA, for the benchmark runner's ratios (JSON lines).
 *   forward  the loopback pair softrnic uses (net_ring ports, the same mbuf pool size and frame sizes):
 *            one worker lcore transmits frames on port A, the main lcore receives them on port B and
 *            frees them; no headers built, no RDMA processing. Frames/s and Gb/s per frame size.
 *   memcpy   one core copying 64 KB blocks through 256 MB (bytes/s): the bound of a copying data path.
 *   --probe  the 138 B forwarding and the memcpy only: the machine-mode probe the runner takes right before
 *            each case (scripts/bench.py, doc/performance.md).
 *   --ethdev a real port between two processes (scripts/bench_ports.py): --send MAC transmits frames of
 *            --frame bytes (IPv4/UDP to 4791, as softrnic's frames) to MAC until --seconds pass or SIGINT /
 *            SIGTERM, within a window of 512 frames the receiver's credits open (as softrnic's window paces
 *            it); --receive counts what arrives in --seconds (from 50 ms after the first frame), prints
 *            it, and drains the port until SIGINT / SIGTERM. The receiver's rate is the port path's raw
 *            rate, the baseline of softrnic's figures over the same ports.
 *
 *   rnic-baseline [--seconds S] [--probe] [-- EAL options]
 *   rnic-baseline --ethdev NAME (--send MAC [--frame BYTES] | --receive) [--seconds S] -- EAL options (--vdev)
 * (--ethdev, not the engine tools' --port: a real port here needs no engine).
 * The tools' command line (app/common/rnic_tool.h): EAL options merge with the defaults; two lcores. Exit
 * status 0, 1 when a measurement could not run, 2 for bad options, each failure with its reason.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_byteorder.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "rnic_port.h"
#include "rnic_tool.h"
#include "rnic_version.h"

#define BURST 32
#define MBUFS 8191

struct forward {
	uint16_t port;
	uint16_t frame;
	struct rte_mempool *pool;
	volatile int stop;
	uint64_t sent;
};

static int
transmit(void *arg)
{
	struct forward *f = arg;
	struct rte_mbuf *m[BURST];

	while (!f->stop) {
		uint16_t n;

		if (rte_pktmbuf_alloc_bulk(f->pool, m, BURST) != 0)
			continue;	/* the receiver has not freed enough yet */
		for (int i = 0; i < BURST; i++) {
			m[i]->data_len = f->frame;
			m[i]->pkt_len = f->frame;
		}
		n = rte_eth_tx_burst(f->port, 0, m, BURST);
		if (n < BURST)
			rte_pktmbuf_free_bulk(m + n, BURST - n);
		f->sent += n;
	}
	return 0;
}

static int
forward(const struct rnic_loopback *lb, struct rte_mempool *pool, uint16_t frame, double seconds)
{
	struct forward f = { .port = lb->port[0], .frame = frame, .pool = pool };
	unsigned int worker = rte_get_next_lcore(-1, 1, 0);
	uint64_t received = 0, bytes = 0, start, end;
	struct rte_mbuf *m[BURST];

	if (worker >= RTE_MAX_LCORE) {
		fprintf(stderr, "rnic-baseline: forward: no worker lcore\n");
		return -1;
	}
	start = rte_get_tsc_cycles();
	end = start + (uint64_t)(seconds * (double)rte_get_tsc_hz());
	rte_eal_remote_launch(transmit, &f, worker);
	while (rte_get_tsc_cycles() < end) {
		uint16_t n = rte_eth_rx_burst(lb->port[1], 0, m, BURST);

		for (uint16_t i = 0; i < n; i++)
			bytes += m[i]->pkt_len;
		received += n;
		rte_pktmbuf_free_bulk(m, n);
	}
	f.stop = 1;
	rte_eal_wait_lcore(worker);
	for (uint16_t n; (n = rte_eth_rx_burst(lb->port[1], 0, m, BURST)) != 0;)
		rte_pktmbuf_free_bulk(m, n);
	printf("{\"bench\": \"baseline_forward\", \"frame_bytes\": %u, \"seconds\": %.3f, \"mpps\": %.3f, "
	       "\"gbps\": %.3f}\n", frame, seconds, (double)received / seconds / 1e6, (double)bytes * 8 / seconds / 1e9);
	return 0;
}

static int
copy_bandwidth(double seconds)
{
	const size_t block = 65536, area = 256u << 20;
	uint8_t *src = malloc(area), *dst = malloc(area);
	uint64_t copied = 0, start, end;

	if (src == NULL || dst == NULL) {
		free(src);
		free(dst);
		fprintf(stderr, "rnic-baseline: memcpy: cannot allocate 2 x %zu bytes\n", area);
		return -1;
	}
	memset(src, 1, area);
	memset(dst, 2, area);
	start = rte_get_tsc_cycles();
	end = start + (uint64_t)(seconds * (double)rte_get_tsc_hz());
	for (size_t off = 0; rte_get_tsc_cycles() < end; off = (off + block) % area) {
		memcpy(dst + off, src + off, block);
		copied += block;
	}
	printf("{\"bench\": \"memcpy\", \"block_bytes\": %zu, \"seconds\": %.3f, \"GBps\": %.3f, \"gbps\": %.3f}\n",
	       block, seconds, (double)copied / seconds / 1e9, (double)copied * 8 / seconds / 1e9);
	free(src);
	free(dst);
	return 0;
}

/* What the command line asks for. */
struct options {
	double seconds;
	int probe;		/* --probe: 138 B forwarding and memcpy only */
	const char *port;	/* --ethdev NAME: a real port, with send_mac or receive */
	const char *send_mac;
	int receive;
	unsigned int frame;	/* --frame: the sender's frame length */
};

static const char usage[] = "usage: rnic-baseline [--seconds S] [--probe] [-- EAL options] | rnic-baseline --ethdev NAME "
	"(--send MAC [--frame BYTES] | --receive) [--seconds S] -- EAL options";

/* The longest frame one of the engine's mbufs holds, and Ethernet's shortest without its FCS. */
#define FRAME_MAX (RNIC_PORT_MBUF_DATA_ROOM - RTE_PKTMBUF_HEADROOM)
#define FRAME_MIN 60

/* The value of option argv[i], or NULL with the reason said. */
static const char *
option_value(const struct rnic_tool_cmdline *c, int i)
{
	if (i + 1 < c->app_argc)
		return c->app_argv[i + 1];
	fprintf(stderr, "rnic-baseline: '%s' needs a value; %s\n", c->app_argv[i], usage);
	return NULL;
}

/* The options: 0, or 2 with the reason said. */
static int
parse_args(const struct rnic_tool_cmdline *c, struct options *o)
{
	struct rte_ether_addr mac;
	char *end;

	if (c->init_argc > c->engine_at) {
		fprintf(stderr, "rnic-baseline: '%s': no engine here, no engine options\n", c->init_argv[c->engine_at]);
		return 2;
	}
	for (int i = 1; i < c->app_argc; i++) {
		const char *opt = c->app_argv[i], *v = NULL;

		if (strcmp(opt, "--probe") == 0 || strcmp(opt, "--receive") == 0) {
			*(opt[2] == 'p' ? &o->probe : &o->receive) = 1;
			continue;
		}
		if (strcmp(opt, "--seconds") != 0 && strcmp(opt, "--ethdev") != 0 && strcmp(opt, "--send") != 0 &&
		    strcmp(opt, "--frame") != 0) {
			fprintf(stderr, "rnic-baseline: '%s': %s\n", opt, usage);
			return 2;
		}
		v = option_value(c, i++);
		if (v == NULL)
			return 2;
		if (strcmp(opt, "--seconds") == 0) {
			o->seconds = strtod(v, &end);
			if (*end != '\0' || !(o->seconds > 0 && o->seconds < 600)) {
				fprintf(stderr, "rnic-baseline: --seconds '%s': more than 0, less than 600\n", v);
				return 2;
			}
		} else if (strcmp(opt, "--frame") == 0) {
			unsigned long n = strtoul(v, &end, 10);

			if (*end != '\0' || n < FRAME_MIN || n > FRAME_MAX) {
				fprintf(stderr, "rnic-baseline: --frame '%s': %u .. %u bytes\n", v, FRAME_MIN, FRAME_MAX);
				return 2;
			}
			o->frame = (unsigned int)n;
		} else if (strcmp(opt, "--send") == 0) {
			if (rte_ether_unformat_addr(v, &mac) != 0) {
				fprintf(stderr, "rnic-baseline: --send '%s': not a MAC address\n", v);
				return 2;
			}
			o->send_mac = v;
		} else {
			o->port = v;
		}
	}
	if ((o->port != NULL) != (o->send_mac != NULL || o->receive) || (o->send_mac != NULL && o->receive) ||
	    (o->port != NULL && o->probe)) {
		fprintf(stderr, "rnic-baseline: --ethdev takes one of --send and --receive, and no --probe; %s\n", usage);
		return 2;
	}
	return 0;
}

static volatile sig_atomic_t stopped;

static void
on_signal(int sig)
{
	(void)sig;
	stopped = 1;
}

/* Start the port with one queue pair and wait for its link (a memif peer connects): 0, or -1 with the reason
 * said. */
static int
port_open(const char *name, uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_link link = { 0 };

	if (rnic_port_start(port, pool, 1024, 1) != 0) {
		fprintf(stderr, "rnic-baseline: --ethdev %s: cannot start it\n", name);
		return -1;
	}
	for (int i = 0; i < 300 && !stopped && !link.link_status; i++) {
		if (rte_eth_link_get_nowait(port, &link) != 0 || !link.link_status)
			rte_delay_us_sleep(100000);
	}
	if (!link.link_status) {
		fprintf(stderr, "rnic-baseline: --ethdev %s: the link did not come up in 30 s\n", name);
		rnic_port_close(port);
		return -1;
	}
	return 0;
}

/* The headers of a RoCEv2 frame of len bytes to dst: Ethernet, IPv4 10.99.0.2 -> 10.99.0.1 (the addresses
 * softrnic's runs over these ports use, none the kernel's: it drops them as softrnic's), UDP to 4791. */
static void
frame_headers(uint8_t *h, uint16_t len, const struct rte_ether_addr *dst, const struct rte_ether_addr *src)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)h;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memset(h, 0, sizeof(*eth) + sizeof(*ip) + sizeof(*udp));
	eth->dst_addr = *dst;
	eth->src_addr = *src;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(len - sizeof(*eth)));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(RTE_IPV4(10, 99, 0, 2));
	ip->dst_addr = rte_cpu_to_be_32(RTE_IPV4(10, 99, 0, 1));
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(49152);
	udp->dst_port = rte_cpu_to_be_16(4791);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - sizeof(*eth) - sizeof(*ip)));
}

/* The receiver's credit frames: Ethernet, the local experimental EtherType, its count of frames received. */
#define CREDIT_ETHERTYPE 0x88b5
#define CREDIT_EVERY 32		/* frames received per credit frame */
#define WINDOW 512		/* frames the sender has out beyond the last credit */
#define WINDOW_LOST_US 1000	/* no credit for this long: what is out was lost */

struct credit {
	struct rte_ether_hdr eth;
	uint64_t received;
};	/* the count after two bytes of padding */

/* The receiver's count in a credit frame for this port, or -1 for any other frame. */
static int64_t
credit_of(const struct rte_mbuf *m, const struct rte_ether_addr *me)
{
	const struct credit *c = rte_pktmbuf_mtod(m, const struct credit *);

	if (m->data_len < sizeof(*c) || c->eth.ether_type != rte_cpu_to_be_16(CREDIT_ETHERTYPE) ||
	    !rte_is_same_ether_addr(&c->eth.dst_addr, me))
		return -1;
	return (int64_t)c->received;
}

/* Poll for credits: the highest count received so far. */
static uint64_t
credits_poll(uint16_t port, const struct rte_ether_addr *me, uint64_t acked)
{
	struct rte_mbuf *m[BURST];
	uint16_t n = rte_eth_rx_burst(port, 0, m, BURST);

	for (uint16_t i = 0; i < n; i++)
		acked = RTE_MAX(acked, (uint64_t)RTE_MAX(credit_of(m[i], me), (int64_t)0));
	rte_pktmbuf_free_bulk(m, n);
	return acked;
}

/* --send: frames to the peer until the time is up or a signal comes, at most WINDOW beyond the receiver's last
 * credit: sent without pause, a kernel path (veth's backlog) drops what its softirq cannot take and the
 * sender's syscalls starve that softirq, a rate below what the path carries when paced (softrnic's window
 * paces it). Frames out for WINDOW_LOST_US with no credit are written off as lost. 0. */
static int
port_send(uint16_t port, struct rte_mempool *pool, const struct options *o)
{
	const size_t hdr_len = sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr);
	const uint64_t hz = rte_get_tsc_hz(), lost_after = hz * WINDOW_LOST_US / 1000000;
	uint64_t sent = 0, acked = 0, lost = 0, start = rte_get_tsc_cycles(), end, last_credit = start;
	struct rte_ether_addr dst, src;
	struct rte_mbuf *m[BURST];
	uint8_t hdr[64];

	rte_ether_unformat_addr(o->send_mac, &dst);
	rte_eth_macaddr_get(port, &src);
	frame_headers(hdr, (uint16_t)o->frame, &dst, &src);
	end = start + (uint64_t)(o->seconds * (double)hz);
	while (!stopped) {
		uint64_t now = rte_get_tsc_cycles(), was = acked, out;
		uint16_t n;

		if (now >= end)
			break;
		acked = credits_poll(port, &src, acked);
		out = sent - lost > acked ? sent - lost - acked : 0;	/* late credits may pass a write-off */
		if (acked != was)
			last_credit = now;
		else if (out > 0 && now - last_credit > lost_after) {
			lost = sent - acked;	/* the receiver's count is of every frame it got */
			out = 0;
			last_credit = now;
		}
		if (out + BURST > WINDOW || rte_pktmbuf_alloc_bulk(pool, m, BURST) != 0)
			continue;
		for (int i = 0; i < BURST; i++) {
			memcpy(rte_pktmbuf_mtod(m[i], uint8_t *), hdr, hdr_len);
			m[i]->data_len = (uint16_t)o->frame;
			m[i]->pkt_len = o->frame;
		}
		n = rte_eth_tx_burst(port, 0, m, BURST);
		if (n < BURST)
			rte_pktmbuf_free_bulk(m + n, BURST - n);
		sent += n;
	}
	end = rte_get_tsc_cycles();
	printf("{\"bench\": \"port_send\", \"port\": \"%s\", \"frame_bytes\": %u, \"seconds\": %.3f, \"mpps\": %.3f, "
	       "\"written_off\": %" PRIu64 "}\n", o->port, o->frame, (double)(end - start) / (double)hz,
	       (double)sent * (double)hz / (double)(end - start) / 1e6, lost);
	return 0;
}

/* A credit frame to the sender of m: the count of frames received. */
static void
credit_send(uint16_t port, struct rte_mempool *pool, const struct rte_mbuf *m, uint64_t received)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	struct rte_mbuf *c = rte_pktmbuf_alloc(pool);
	struct credit *cr;

	if (c == NULL)
		return;		/* the next one carries the count */
	cr = rte_pktmbuf_mtod(c, struct credit *);
	memset(cr, 0, FRAME_MIN);
	cr->eth.dst_addr = eth->src_addr;
	rte_eth_macaddr_get(port, &cr->eth.src_addr);
	cr->eth.ether_type = rte_cpu_to_be_16(CREDIT_ETHERTYPE);
	cr->received = received;
	c->data_len = FRAME_MIN;
	c->pkt_len = FRAME_MIN;
	if (rte_eth_tx_burst(port, 0, &c, 1) != 1)
		rte_pktmbuf_free(c);
}

/* Receive a burst: the IPv4 frames of it (the sender's; not a port's own frames seen again) counted into
 * *received and *bytes; a credit to the sender every CREDIT_EVERY of them. The burst's size. */
static uint16_t
receive_burst(uint16_t port, struct rte_mempool *pool, uint64_t *received, uint64_t *bytes, uint64_t *credited)
{
	struct rte_mbuf *m[BURST];
	uint16_t n = rte_eth_rx_burst(port, 0, m, BURST), got = 0;

	for (uint16_t i = 0; i < n; i++) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m[i], const struct rte_ether_hdr *);

		if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
			continue;
		*bytes += m[i]->pkt_len;
		got++;
	}
	*received += got;
	if (got != 0 && *received - *credited >= CREDIT_EVERY) {
		credit_send(port, pool, m[n - 1], *received);
		*credited = *received;
	}
	rte_pktmbuf_free_bulk(m, n);
	return got;
}

/* --receive: what arrives in --seconds from 50 ms after the first frame on (the sender may start later, and
 * its first pass through its mbuf pool faults the pages in): the raw rate of the port path. Then it drains the
 * port until SIGINT / SIGTERM (at most 30 s), so that the sender stops first: a memif sender whose peer goes
 * away under its TX burst may crash. 0, or -1 when nothing came in 30 s. */
static int
port_receive(uint16_t port, struct rte_mempool *pool, const struct options *o)
{
	const uint64_t hz = rte_get_tsc_hz();
	uint64_t received = 0, bytes = 0, credited = 0, first = 0, end = rte_get_tsc_cycles() + 30 * hz;
	uint64_t at_start = 0, bytes_at_start = 0;

	while (!stopped && rte_get_tsc_cycles() < end) {
		if (receive_burst(port, pool, &received, &bytes, &credited) == 0 || first != 0)
			continue;
		first = rte_get_tsc_cycles();
		end = first + hz / 20;
	}
	if (first == 0) {
		fprintf(stderr, "rnic-baseline: --ethdev %s: no frame came in 30 s\n", o->port);
		return -1;
	}
	at_start = received;	/* 50 ms on: the window opens */
	bytes_at_start = bytes;
	for (end = rte_get_tsc_cycles() + (uint64_t)(o->seconds * (double)hz); !stopped && rte_get_tsc_cycles() < end;)
		receive_burst(port, pool, &received, &bytes, &credited);
	received -= at_start;
	bytes -= bytes_at_start;
	printf("{\"bench\": \"port_forward\", \"port\": \"%s\", \"frame_bytes\": %.0f, \"seconds\": %.3f, "
	       "\"mpps\": %.3f, \"gbps\": %.3f}\n", o->port, received ? (double)bytes / (double)received : 0.0,
	       o->seconds, (double)received / o->seconds / 1e6, (double)bytes * 8 / o->seconds / 1e9);
	fflush(stdout);
	for (end = rte_get_tsc_cycles() + 30 * hz; !stopped && rte_get_tsc_cycles() < end;)
		receive_burst(port, pool, &received, &bytes, &credited);
	return 0;
}

/* --ethdev: one side of the raw rate between two processes; 0, or 1 with the reason said. */
static int
measure_port(const struct options *o)
{
	struct rte_mempool *pool;
	uint16_t port;
	int ret;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (rte_eth_dev_get_port_by_name(o->port, &port) != 0) {
		fprintf(stderr, "rnic-baseline: --ethdev %s: no such ethdev (give it to EAL with --vdev)\n", o->port);
		return 1;
	}
	/* The engine's pool for such a port: the frames softrnic would send, in the mbufs it would use. */
	pool = rnic_port_pool_create(port, "baseline", MBUFS, 0, (int)rte_socket_id());
	if (pool == NULL) {
		fprintf(stderr, "rnic-baseline: mbuf pool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (o->send_mac != NULL && o->frame > rnic_port_mbuf_frame(port, pool)) {
		fprintf(stderr, "rnic-baseline: --frame %u: %s's mbufs hold frames of %u bytes at most\n", o->frame,
			o->port, rnic_port_mbuf_frame(port, pool));
		rte_mempool_free(pool);
		return 1;
	}
	if (port_open(o->port, port, pool) != 0) {
		rte_mempool_free(pool);
		return 1;
	}
	ret = o->receive ? port_receive(port, pool, o) : port_send(port, pool, o);
	rnic_port_close(port);
	rte_mempool_free(pool);
	return ret == 0 ? 0 : 1;
}

/* The measurements; 0, or 1 with the reason said. */
static int
measure(double seconds, int probe)
{
	/* The frames of a 64 B and of a 4 KB RDMA WRITE Only over IPv4 (Ethernet, IP, UDP, BTH, RETH, ICRC). */
	static const uint16_t frames[] = { 14 + 20 + 8 + 12 + 16 + 64 + 4, 14 + 20 + 8 + 12 + 16 + 4096 + 4 };
	struct rte_mempool *pool;
	struct rnic_loopback lb;
	int ret = 0;

	pool = rte_pktmbuf_pool_create("baseline", MBUFS, 256, 0, RNIC_PORT_MBUF_DATA_ROOM, (int)rte_socket_id());
	if (pool == NULL || rnic_port_loopback_create(&lb, "baseline", (int)rte_socket_id(), 1, 0) != 0 ||
	    rnic_port_start(lb.port[0], pool, 1024, 1) != 0 || rnic_port_start(lb.port[1], pool, 1024, 1) != 0) {
		fprintf(stderr, "rnic-baseline: cannot create the loopback pair (mbuf pool: %s)\n",
			pool == NULL ? rte_strerror(rte_errno) : "ok");
		rte_mempool_free(pool);
		return 1;
	}
	for (unsigned int i = 0; i < (probe ? 1 : RTE_DIM(frames)) && ret == 0; i++)
		ret = forward(&lb, pool, frames[i], seconds);
	if (ret == 0)
		ret = copy_bandwidth(seconds);
	rnic_port_loopback_free(&lb);
	rte_mempool_free(pool);
	return ret == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	static struct rnic_tool_cmdline c;
	struct options o = { .seconds = 2, .frame = 138 };
	int ret;

	if (rnic_version_asked(argc, argv)) {
		rnic_print_version("rnic-baseline");
		return 0;
	}
	if (rnic_tool_split("rnic-baseline", argc, argv, &c) != 0)
		return 2;
	ret = parse_args(&c, &o);
	if (ret != 0)
		return ret;
	if (rte_eal_init(c.engine_at - 1, c.init_argv) < 0) {
		fprintf(stderr, "rnic-baseline: EAL did not start: %s\n", rte_strerror(rte_errno));
		return rte_errno == EINVAL ? 2 : 1;
	}
	if (o.port == NULL && rte_lcore_count() < 2) {
		fprintf(stderr, "rnic-baseline: needs 2 lcores (-- -l 0,1)\n");
		rte_eal_cleanup();
		return 2;
	}
	ret = o.port != NULL ? measure_port(&o) : measure(o.seconds, o.probe);
	rte_eal_cleanup();
	return ret;
}
