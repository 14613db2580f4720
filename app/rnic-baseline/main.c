/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-baseline: what the machine does without RDMA, for the benchmark runner's ratios (JSON lines).
 *   forward  the loopback pair softrnic uses (net_ring ports, the same mbuf pool size and frame sizes):
 *            one worker lcore transmits frames on port A, the main lcore receives them on port B and
 *            frees them; no headers built, no RDMA processing. Frames/s and Gb/s per frame size.
 *   memcpy   one core copying 64 KB blocks through 256 MB (bytes/s): the bound of a copying data path.
 *
 *   rnic-baseline [--seconds S] [-- EAL options]
 * The tools' command line (app/common/rnic_tool.h): EAL options merge with the defaults; two lcores. Exit
 * status 0, 1 when a measurement could not run, 2 for bad options, each failure with its reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

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

/* --seconds S, the one option: 0, or 2 with the reason said. */
static int
parse_args(const struct rnic_tool_cmdline *c, double *seconds)
{
	char *end;

	if (c->init_argc > c->engine_at) {
		fprintf(stderr, "rnic-baseline: '%s': no engine here, no engine options\n", c->init_argv[c->engine_at]);
		return 2;
	}
	if (c->app_argc == 1)
		return 0;
	if (c->app_argc != 3 || strcmp(c->app_argv[1], "--seconds") != 0) {
		fprintf(stderr, "rnic-baseline: '%s': usage: rnic-baseline [--seconds S] [-- EAL options]\n",
			c->app_argv[1]);
		return 2;
	}
	*seconds = strtod(c->app_argv[2], &end);
	if (*end != '\0' || !(*seconds > 0 && *seconds < 600)) {
		fprintf(stderr, "rnic-baseline: --seconds '%s': more than 0, less than 600\n", c->app_argv[2]);
		return 2;
	}
	return 0;
}

/* The measurements; 0, or 1 with the reason said. */
static int
measure(double seconds)
{
	/* The frames of a 64 B and of a 4 KB RDMA WRITE Only over IPv4 (Ethernet, IP, UDP, BTH, RETH, ICRC). */
	static const uint16_t frames[] = { 14 + 20 + 8 + 12 + 16 + 64 + 4, 14 + 20 + 8 + 12 + 16 + 4096 + 4 };
	struct rte_mempool *pool;
	struct rnic_loopback lb;
	int ret = 0;

	pool = rte_pktmbuf_pool_create("baseline", MBUFS, 256, 0, RNIC_PORT_MBUF_DATA_ROOM, (int)rte_socket_id());
	if (pool == NULL || rnic_port_loopback_create(&lb, "baseline", (int)rte_socket_id(), 1) != 0 ||
	    rnic_port_start(lb.port[0], pool, 1024, 1) != 0 || rnic_port_start(lb.port[1], pool, 1024, 1) != 0) {
		fprintf(stderr, "rnic-baseline: cannot create the loopback pair (mbuf pool: %s)\n",
			pool == NULL ? rte_strerror(rte_errno) : "ok");
		rte_mempool_free(pool);
		return 1;
	}
	for (unsigned int i = 0; i < sizeof(frames) / sizeof(frames[0]) && ret == 0; i++)
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
	double seconds = 2;
	int ret;

	if (rnic_version_asked(argc, argv)) {
		rnic_print_version("rnic-baseline");
		return 0;
	}
	if (rnic_tool_split("rnic-baseline", argc, argv, &c) != 0)
		return 2;
	ret = parse_args(&c, &seconds);
	if (ret != 0)
		return ret;
	if (rte_eal_init(c.engine_at - 1, c.init_argv) < 0) {
		fprintf(stderr, "rnic-baseline: EAL did not start: %s\n", rte_strerror(rte_errno));
		return rte_errno == EINVAL ? 2 : 1;
	}
	if (rte_lcore_count() < 2) {
		fprintf(stderr, "rnic-baseline: needs 2 lcores (-- -l 0,1)\n");
		rte_eal_cleanup();
		return 2;
	}
	ret = measure(seconds);
	rte_eal_cleanup();
	return ret;
}
