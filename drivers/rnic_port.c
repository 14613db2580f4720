/* SPDX-License-Identifier: BSD-3-Clause
 * Port glue: ethdev bring-up for the ports softrnic devices use.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include "rnic_priv.h"
#include "rnic_port.h"

#define LOOPBACK_RING_SIZE 4096

static struct rte_ring *
loopback_ring(const char *pair, const char *dir, uint16_t q, int socket_id)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "%s_%s%u", pair, dir, q);
	/* Its TX queues feed it (sending lcores, the control path too: multi-producer); one lcore reads it. */
	return rte_ring_create(name, LOOPBACK_RING_SIZE, socket_id, RING_F_SC_DEQ);
}

static void
loopback_rings_free(struct rnic_loopback *lb)
{
	for (uint16_t r = 0; r < lb->nb_rings; r++) {
		rte_ring_free(lb->ring[0][r]);
		rte_ring_free(lb->ring[1][r]);
		lb->ring[0][r] = lb->ring[1][r] = NULL;
	}
	lb->nb_rings = 0;
}

/*
 * With a ring per queue, TX queue q of each port is RX queue q of the other: a frame lands on the queue of
 * the same number as the one it was sent on (the engine's steering: the peer's same shard reads it), and
 * each RX queue may have its own lcore. With one ring per direction every queue shares it, which only one
 * lcore may read, at a lower cost per frame: one ring to poll and keep in cache instead of one per queue
 * (a pass over 64 QPs of 64 B WRITEs ran at 0.68-0.91 of the shared ring's rate with a ring per queue).
 */
int
rnic_port_loopback_create(struct rnic_loopback *lb, const char *name, int socket_id, uint16_t nb_queues,
			  int ring_per_queue)
{
	unsigned int numa = socket_id < 0 ? 0 : (unsigned int)socket_id;
	struct rte_ring *to_a[RNIC_PORT_MAX_QUEUES], *to_b[RNIC_PORT_MAX_QUEUES];
	uint16_t nb_rings = ring_per_queue ? nb_queues : 1;
	char port_name[RTE_ETH_NAME_MAX_LEN];
	int a = -1, b = -1;

	if (nb_queues == 0 || nb_queues > RNIC_PORT_MAX_QUEUES)
		return -EINVAL;
	for (lb->nb_rings = 0; lb->nb_rings < nb_rings; lb->nb_rings++) {
		lb->ring[0][lb->nb_rings] = loopback_ring(name, "ab", lb->nb_rings, socket_id);
		lb->ring[1][lb->nb_rings] = loopback_ring(name, "ba", lb->nb_rings, socket_id);
		if (lb->ring[0][lb->nb_rings] == NULL || lb->ring[1][lb->nb_rings] == NULL) {
			lb->nb_rings++;	/* free the one made */
			RNIC_LOG(ERR, "loopback %s: cannot create rings: %s", name, rte_strerror(rte_errno));
			goto free_rings;
		}
	}
	for (uint16_t q = 0; q < nb_queues; q++) {
		to_b[q] = lb->ring[0][q % nb_rings];
		to_a[q] = lb->ring[1][q % nb_rings];
	}

	snprintf(port_name, sizeof(port_name), "%s_a", name);
	a = rte_eth_from_rings(port_name, to_a, nb_queues, to_b, nb_queues, numa);
	snprintf(port_name, sizeof(port_name), "%s_b", name);
	if (a >= 0)
		b = rte_eth_from_rings(port_name, to_b, nb_queues, to_a, nb_queues, numa);
	if (a < 0 || b < 0) {
		RNIC_LOG(ERR, "loopback %s: cannot create ring ports: %s", name, rte_strerror(rte_errno));
		if (a >= 0)
			rte_eth_dev_close(a);
		goto free_rings;
	}
	lb->port[0] = (uint16_t)a;
	lb->port[1] = (uint16_t)b;
	return 0;

free_rings:
	loopback_rings_free(lb);
	return -ENOMEM;
}

void
rnic_port_loopback_free(struct rnic_loopback *lb)
{
	rnic_port_close(lb->port[0]);
	rnic_port_close(lb->port[1]);
	loopback_rings_free(lb);
}

/* The value of KEY= in a device's arguments (key given with its '='), into buf. */
static int
port_devarg(uint16_t port_id, const char *key, char *buf, size_t size)
{
	struct rte_eth_dev_info info;
	const struct rte_devargs *da;
	const char *p;
	size_t klen = strlen(key);

	if (rte_eth_dev_info_get(port_id, &info) != 0 || info.device == NULL)
		return -ENOENT;
	da = rte_dev_devargs(info.device);
	if (da == NULL || da->args == NULL)
		return -ENOENT;
	for (p = da->args; (p = strstr(p, key)) != NULL; p++) {
		if (p == da->args || p[-1] == ',') {
			snprintf(buf, size, "%.*s", (int)strcspn(p + klen, ","), p + klen);
			return 0;
		}
	}
	return -ENOENT;
}

static int
port_interface(uint16_t port_id, char *name, size_t size)
{
	return port_devarg(port_id, "iface=", name, size);
}

static int
port_is(uint16_t port_id, const char *driver)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(port_id, &info) == 0 && info.driver_name != NULL &&
	       strcmp(info.driver_name, driver) == 0;
}

static int
port_is_af_packet(uint16_t port_id)
{
	return port_is(port_id, "net_af_packet");
}

int
rnic_port_queue_pairs(uint16_t port_id)
{
	struct rte_eth_dev_info info;
	int ret = rte_eth_dev_info_get(port_id, &info);

	return ret < 0 ? ret : RTE_MIN(info.max_rx_queues, info.max_tx_queues);
}

/* Where the kernel puts a frame it hands an AF_XDP socket: XDP_PACKET_HEADROOM past the chunk's headroom
 * (the PMD makes that the mbuf's headroom). */
#define AF_XDP_RX_HEADROOM 256

static void
page_pool_free_chunk(struct rte_mempool_memhdr *memhdr __rte_unused, void *mz)
{
	rte_memzone_free(mz);
}

/*
 * A pool whose objects are a page each, header and private area included, in one page-aligned chunk: the
 * PMD's UMEM is the pool's first chunk from its page, n x object size long, so every object must lie in it
 * (rte_pktmbuf_pool_create would spread objects over memory channels, growing them past a page, and start
 * the chunk mid-page, leaving the last object outside the UMEM).
 */
static struct rte_mempool *
page_pool_create(const char *name, unsigned int n, uint16_t priv_size, int socket_id)
{
	const size_t page = (size_t)getpagesize();
	struct rte_pktmbuf_pool_private pp = { .mbuf_priv_size = priv_size };
	const struct rte_memzone *mz = NULL;
	struct rte_mempool *mp;
	uint32_t elt;

	/* The largest mbuf whose object (header, mbuf, private area, data room) is one page. */
	elt = (uint32_t)RTE_ALIGN_FLOOR(page - RTE_ALIGN_CEIL(sizeof(struct rte_mempool_objhdr), RTE_MEMPOOL_ALIGN),
					sizeof(uint64_t));
	pp.mbuf_data_room_size = (uint16_t)RTE_MIN(elt - sizeof(struct rte_mbuf) - priv_size,
						   (size_t)RNIC_PORT_MBUF_DATA_ROOM);
	elt = (uint32_t)(sizeof(struct rte_mbuf) + priv_size + pp.mbuf_data_room_size);
	/* Objects that tile the pages: none crosses one, so they lie back to back from the chunk's start. */
	if (page % rte_mempool_calc_obj_size(elt, RTE_MEMPOOL_F_NO_SPREAD, NULL) != 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	mp = rte_mempool_create_empty(name, n, elt, 256, sizeof(pp), socket_id, RTE_MEMPOOL_F_NO_SPREAD);
	if (mp == NULL)
		return NULL;
	if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL) != 0)
		goto fail;
	rte_pktmbuf_pool_init(mp, &pp);
	mz = rte_memzone_reserve_aligned(name, (size_t)n * page, socket_id, 0, page);
	if (mz == NULL)
		goto fail;
	if (rte_mempool_populate_iova(mp, mz->addr, mz->iova, mz->len, page_pool_free_chunk, (void *)(uintptr_t)mz) !=
	    (int)n) {
		rte_errno = ENOMEM;
		goto fail;	/* the chunk, if added, goes with the pool */
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	if (mz != NULL && mp->nb_mem_chunks == 0)
		rte_memzone_free(mz);
	rte_mempool_free(mp);
	return NULL;
}

struct rte_mempool *
rnic_port_pool_create(uint16_t port_id, const char *name, unsigned int n, uint16_t priv_size, int socket_id)
{
	/* net_af_xdp registers the pool as its UMEM: outside hugepages the kernel takes chunks of a page at most. */
	if (port_is(port_id, "net_af_xdp"))
		return page_pool_create(name, n, priv_size, socket_id);
	return rte_pktmbuf_pool_create(name, n, 256, priv_size, RNIC_PORT_MBUF_DATA_ROOM, socket_id);
}

unsigned int
rnic_port_mbuf_frame(uint16_t port_id, const struct rte_mempool *mp)
{
	unsigned int room = rte_pktmbuf_data_room_size((struct rte_mempool *)(uintptr_t)mp) - RTE_PKTMBUF_HEADROOM;

	return port_is(port_id, "net_af_xdp") ? room - AF_XDP_RX_HEADROOM : room;
}

int
rnic_port_tx_needs_kick(uint16_t port_id)
{
	return port_is_af_packet(port_id);
}

void
rnic_port_tx_kick(uint16_t port_id, uint16_t queue, struct rte_mempool *mp)
{
	struct rte_eth_fp_ops *ops = &rte_eth_fp_ops[port_id];
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);

	if (m == NULL)
		return;		/* the next idle pass tries again */
	/* Longer than any ring frame: the PMD drops it before its ring and then calls sendto(), which sends the
	 * frames still waiting there. A zero-frame burst returns before the sendto(). The mbuf never reaches a
	 * ring or a wire (only its length is read), so it carries no data. */
	m->pkt_len = UINT32_MAX;
	if (ops->tx_pkt_burst(ops->txq.data[queue], &m, 1) == 0)
		rte_pktmbuf_free(m);
}

/*
 * net_af_packet's ring frames (framesz=, 2048 by default) hold a tpacket2 header and the frame: the kernel
 * puts the frame AF_PACKET_MAC_OFFSET bytes in and truncates what does not fit; the PMD copies the frame
 * area less its header (framesz - AF_PACKET_RX_HDR) into one mbuf and refuses a queue whose mbufs are smaller.
 */
#define AF_PACKET_DEFAULT_FRAMESZ 2048
#define AF_PACKET_MAC_OFFSET 66		/* TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - ETH_HLEN */
#define AF_PACKET_RX_HDR 32		/* TPACKET2_HDRLEN - sizeof(struct sockaddr_ll) */

static unsigned int
af_packet_framesz(uint16_t port_id)
{
	char v[16];

	return port_devarg(port_id, "framesz=", v, sizeof(v)) == 0 ? (unsigned int)atoi(v) : AF_PACKET_DEFAULT_FRAMESZ;
}

int
rnic_port_max_frame(uint16_t port_id)
{
	if (!port_is_af_packet(port_id))
		return -ENOENT;
	return (int)af_packet_framesz(port_id) - AF_PACKET_MAC_OFFSET;
}

/*
 * net_af_packet's frames must fit the engine's mbufs, and its blocks hold whole frames (the PMD finds frame i
 * at i x framesz, where the kernel puts it only when blocksz is a multiple of framesz: else the port
 * receives nothing). Say so, with arguments that work.
 */
static int
port_frames_fit(uint16_t port_id)
{
	const unsigned int room = RNIC_PORT_MBUF_DATA_ROOM - RTE_PKTMBUF_HEADROOM;
	unsigned int framesz, blocksz;
	char v[16];

	if (!port_is_af_packet(port_id))
		return 0;
	framesz = af_packet_framesz(port_id);
	blocksz = port_devarg(port_id, "blocksz=", v, sizeof(v)) == 0 ? (unsigned int)atoi(v) :
		  (unsigned int)getpagesize();
	if (framesz > room + AF_PACKET_RX_HDR) {
		RNIC_LOG(ERR, "port %u: net_af_packet framesz=%u does not fit the engine's mbufs (%u bytes): give "
			 RNIC_AF_PACKET_JUMBO_ARGS " for RoCE MTU 4096 (with an interface MTU of 9000), or less",
			 port_id, framesz, room);
		return -EINVAL;
	}
	if (framesz != 0 && blocksz % framesz != 0) {
		RNIC_LOG(ERR, "port %u: net_af_packet blocksz=%u is not a multiple of framesz=%u: the port would "
			 "receive nothing (e.g. " RNIC_AF_PACKET_JUMBO_ARGS ")", port_id, blocksz, framesz);
		return -EINVAL;
	}
	return 0;
}

/* How a port with fewer queues serves (rnic_engine.c). */
#define QUEUE_SHARING "; or one per shard, when the stage map runs each shard's requester and responder on one " \
	"lcore (--stages one, devices)"

/*
 * Whether the port has the queues the engine uses: a vdev makes as many as its arguments say (net_af_packet
 * qpairs=, net_af_xdp queue_count=, 1 by default), and ethdev's own refusal does not say which argument.
 */
static int
port_has_queues(uint16_t port_id, uint16_t nb_queues)
{
	static const struct { const char *driver, *arg; } queue_arg[] = {
		{ "net_af_packet", "qpairs" }, { "net_af_xdp", "queue_count" }, { "net_memif", NULL },
	};
	struct rte_eth_dev_info info;
	char name[RTE_ETH_NAME_MAX_LEN] = "?";
	const char *arg = NULL;

	if (rte_eth_dev_info_get(port_id, &info) != 0)
		return -ENODEV;
	if (info.max_rx_queues >= nb_queues && info.max_tx_queues >= nb_queues)
		return 0;
	rte_eth_dev_get_name_by_port(port_id, name);
	for (unsigned int i = 0; i < RTE_DIM(queue_arg); i++)
		if (info.driver_name != NULL && strcmp(info.driver_name, queue_arg[i].driver) == 0)
			arg = queue_arg[i].arg;
	if (arg != NULL)
		RNIC_LOG(ERR, "port %s: %s needs %s=%u (the engine uses %u queue pairs: a requester and a responder "
			 "TX queue per shard, every RX queue read by the parser; it has %u): e.g. --vdev=%s,iface=IF,%s=%u"
			 QUEUE_SHARING, name, info.driver_name, arg, nb_queues, nb_queues,
			 RTE_MIN(info.max_rx_queues, info.max_tx_queues), name, arg, nb_queues);
	else
		RNIC_LOG(ERR, "port %s (%s): the engine uses %u queue pairs (a requester and a responder TX queue per "
			 "shard, every RX queue read by the parser); the port has %u RX and %u TX queues" QUEUE_SHARING,
			 name, info.driver_name != NULL ? info.driver_name : "?", nb_queues, info.max_rx_queues,
			 info.max_tx_queues);
	return -EINVAL;
}

int
rnic_port_start(uint16_t port_id, struct rte_mempool *mp, uint16_t nb_desc, uint16_t nb_queues)
{
	struct rte_eth_conf conf = { 0 };
	int socket_id = rte_eth_dev_socket_id(port_id);
	int ret;

	ret = port_has_queues(port_id, nb_queues);
	if (ret == 0)
		ret = port_frames_fit(port_id);
	if (ret < 0)
		return ret;
	ret = rte_eth_dev_configure(port_id, nb_queues, nb_queues, &conf);
	for (uint16_t q = 0; ret == 0 && q < nb_queues; q++)
		ret = rte_eth_rx_queue_setup(port_id, q, nb_desc, socket_id, NULL, mp);
	for (uint16_t q = 0; ret == 0 && q < nb_queues; q++)
		ret = rte_eth_tx_queue_setup(port_id, q, nb_desc, socket_id, NULL);
	if (ret == 0)
		ret = rte_eth_dev_start(port_id);
	if (ret < 0)
		RNIC_LOG(ERR, "port %u: cannot start: %s", port_id, rte_strerror(-ret));
	return ret;
}

int
rnic_port_interface_gid(uint16_t port_id, uint8_t gid[16])
{
	struct ifaddrs *list, *ifa;
	char name[IF_NAMESIZE + 1];
	int found = 0;

	if (port_interface(port_id, name, sizeof(name)) != 0 || getifaddrs(&list) != 0)
		return -ENOENT;
	/* IPv4 first: it is what RoCEv2 deployments address by. */
	for (int family = AF_INET; !found && family <= AF_INET6; family += AF_INET6 - AF_INET) {
		for (ifa = list; ifa != NULL && !found; ifa = ifa->ifa_next) {
			if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != family || strcmp(ifa->ifa_name, name))
				continue;
			memset(gid, 0, 16);
			if (family == AF_INET) {
				gid[10] = gid[11] = 0xff;
				memcpy(gid + 12, &((struct sockaddr_in *)(void *)ifa->ifa_addr)->sin_addr, 4);
				found = 1;
			} else if (!IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)(void *)ifa->ifa_addr)->sin6_addr)) {
				memcpy(gid, &((struct sockaddr_in6 *)(void *)ifa->ifa_addr)->sin6_addr, 16);
				found = 1;
			}
		}
	}
	freeifaddrs(list);
	return found ? 0 : -ENOENT;
}

int
rnic_port_interface_mtu(uint16_t port_id)
{
	struct ifreq ifr = { 0 };
	int fd, ret = -ENOENT;

	if (port_interface(port_id, ifr.ifr_name, sizeof(ifr.ifr_name)) != 0)
		return -ENOENT;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		ret = ifr.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return ret;
}

void
rnic_port_close(uint16_t port_id)
{
	if (!rte_eth_dev_is_valid_port(port_id))
		return;
	rte_eth_dev_stop(port_id);
	rte_eth_dev_close(port_id);
}
