/* SPDX-License-Identifier: BSD-3-Clause
 * Packet capture to pcapng through ethdev RX/TX callbacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pcapng.h>
#include <rte_spinlock.h>

#include "rnic_capture.h"
#include "rnic_priv.h"
#include "rnic_port.h"

#define CAPTURE_MBUFS 4095
#define CAPTURE_SNAPLEN 9216
#define MAX_CAPTURE_PORTS RNIC_MAX_DEVICES

static struct {
	rte_pcapng_t *file;
	struct rte_mempool *pool;
	rte_spinlock_t lock;		/* several lcores (RX, and each TX queue) write the one file */
	unsigned int nb_ports;
	uint16_t port[MAX_CAPTURE_PORTS];
	uint16_t nb_queues;
	const struct rte_eth_rxtx_callback *rx_cb[MAX_CAPTURE_PORTS][RNIC_PORT_MAX_QUEUES];
	const struct rte_eth_rxtx_callback *tx_cb[MAX_CAPTURE_PORTS][RNIC_PORT_MAX_QUEUES];
	uint64_t written;
	uint64_t lost;
} cap;

static void
capture(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, enum rte_pcapng_direction dir)
{
	struct rte_mbuf *copies[RTE_MAX(n, 1)];
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		copies[k] = rte_pcapng_copy(port, queue, pkts[i], cap.pool, CAPTURE_SNAPLEN, rte_get_tsc_cycles(),
					    dir);
		if (copies[k] != NULL)
			k++;
	}
	rte_spinlock_lock(&cap.lock);
	if (k > 0 && rte_pcapng_write_packets(cap.file, copies, k) >= 0)
		cap.written += k;
	else
		cap.lost += k;
	cap.lost += n - k;
	rte_spinlock_unlock(&cap.lock);
	rte_pktmbuf_free_bulk(copies, k);
}

static uint16_t
rx_callback(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max, void *arg)
{
	(void)max;
	(void)arg;
	capture(port, queue, pkts, n, RTE_PCAPNG_DIRECTION_IN);
	return n;
}

static uint16_t
tx_callback(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	(void)arg;
	capture(port, queue, pkts, n, RTE_PCAPNG_DIRECTION_OUT);
	return n;
}

int
rnic_capture_start(const char *path, const uint16_t *ports, unsigned int nb_ports, uint16_t nb_queues,
		   int socket_id)
{
	int fd;

	if (nb_ports > MAX_CAPTURE_PORTS)
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		RNIC_LOG(ERR, "--pcap %s: %s", path, strerror(errno));
		return -errno;
	}
	cap.file = rte_pcapng_fdopen(fd, NULL, NULL, "softrnic", NULL);
	cap.pool = rte_pktmbuf_pool_create("rnic_capture", CAPTURE_MBUFS, 0, 0,
					   (uint16_t)rte_pcapng_mbuf_size(CAPTURE_SNAPLEN), socket_id);
	if (cap.file == NULL || cap.pool == NULL) {
		RNIC_LOG(ERR, "--pcap %s: cannot start the capture: %s", path, rte_strerror(rte_errno));
		if (cap.file == NULL)
			close(fd);
		rnic_capture_stop();
		return -ENOMEM;
	}
	rte_spinlock_init(&cap.lock);
	cap.nb_queues = nb_queues;
	for (unsigned int i = 0; i < nb_ports; i++) {
		cap.port[cap.nb_ports++] = ports[i];
		for (uint16_t q = 0; q < nb_queues; q++)
			cap.rx_cb[i][q] = rte_eth_add_rx_callback(ports[i], q, rx_callback, NULL);
		for (uint16_t q = 0; q < nb_queues; q++)
			cap.tx_cb[i][q] = rte_eth_add_tx_callback(ports[i], q, tx_callback, NULL);
	}
	return 0;
}

void
rnic_capture_stop(void)
{
	for (unsigned int i = 0; i < cap.nb_ports; i++) {
		for (uint16_t q = 0; q < cap.nb_queues; q++)
			if (cap.rx_cb[i][q] != NULL)
				rte_eth_remove_rx_callback(cap.port[i], q, cap.rx_cb[i][q]);
		for (uint16_t q = 0; q < cap.nb_queues; q++)
			if (cap.tx_cb[i][q] != NULL)
				rte_eth_remove_tx_callback(cap.port[i], q, cap.tx_cb[i][q]);
	}
	if (cap.file != NULL)
		rte_pcapng_close(cap.file);
	rte_mempool_free(cap.pool);
	memset(&cap, 0, sizeof(cap));
}

void
rnic_capture_counts(uint64_t *written, uint64_t *lost)
{
	*written = cap.written;
	*lost = cap.lost;
}
