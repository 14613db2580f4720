/* SPDX-License-Identifier: BSD-3-Clause
 * Port glue: bringing up the ethdev ports softrnic devices send and receive on.
 */
#ifndef RNIC_PORT_H
#define RNIC_PORT_H

#include <stdint.h>

#include <rte_mempool.h>

/* Data room of the port mbufs: a 4096-byte RoCEv2 payload with every header, pad and ICRC fits one mbuf. */
#define RNIC_PORT_MBUF_DATA_ROOM (RTE_PKTMBUF_HEADROOM + 4096 + 256)

/* Two ethdev ports joined back to back by a pair of rte_rings (the embedded "loopback cable"). */
/* Queues per port, at most: two TX queues per shard (its requester's and its responder's, so no two lcores
 * share one; one per shard on a port with too few, when each shard's requester and responder share an lcore),
 * and as many RX queues: a memif peer connects only when its TX rings match our RX rings. */
#define RNIC_PORT_MAX_QUEUES 16

struct rnic_loopback {
	uint16_t port[2];
	/* ring[0][r] carries port[0]'s TX queue q to port[1]'s RX queue q, ring[1][r] the other way, for
	 * r = q % nb_rings: a ring per queue, or one per direction */
	struct rte_ring *ring[2][RNIC_PORT_MAX_QUEUES];
	uint16_t nb_rings;
};

/*
 * Create a loopback pair: what one port transmits the other receives. Needs no NIC, no root and no
 * hugepages. Returns 0, or a negative errno with nothing left allocated.
 */
int rnic_port_loopback_create(struct rnic_loopback *lb, const char *name, int socket_id, uint16_t nb_queues,
			      int ring_per_queue);

/* Close both ports of the pair and free its rings. */
void rnic_port_loopback_free(struct rnic_loopback *lb);

/* The queue pairs the port offers (the fewer of its RX and TX queues), or a negative errno. */
int rnic_port_queue_pairs(uint16_t port_id);

/*
 * The mbuf pool for a port's frames: n mbufs of RNIC_PORT_MBUF_DATA_ROOM with priv_size bytes of private area,
 * or for net_af_xdp mbufs of a page each, header and private area included: the PMD registers the pool as
 * its UMEM, one chunk per mbuf, and the kernel takes chunks larger than a page only in hugepages. NULL with
 * rte_errno set.
 */
struct rte_mempool *rnic_port_pool_create(uint16_t port_id, const char *name, unsigned int n, uint16_t priv_size,
					  int socket_id);

/* The longest Ethernet frame an mbuf of mp holds on the port, both ways: its data room less the headroom,
 * and for net_af_xdp less the kernel's XDP headroom, where a received frame starts. */
unsigned int rnic_port_mbuf_frame(uint16_t port_id, const struct rte_mempool *mp);

/* Configure nb_queues RX and nb_queues TX queues with mbufs from mp, and start. 0 or a negative errno. */
int rnic_port_start(uint16_t port_id, struct rte_mempool *mp, uint16_t nb_desc, uint16_t nb_queues);

/*
 * The address of the kernel interface a port is bound to (net_af_packet, net_af_xdp: their iface=
 * argument) as a RoCEv2 GID: its first IPv4 address (IPv4-mapped), else its first global IPv6 address.
 * 0, or -ENOENT when the port has no interface or the interface no address.
 */
int rnic_port_interface_gid(uint16_t port_id, uint8_t gid[16]);

/* The MTU of the kernel interface of a port (iface=), or -ENOENT. */
int rnic_port_interface_mtu(uint16_t port_id);

/* The longest Ethernet frame the port carries when its driver bounds it below the interface's MTU
 * (net_af_packet: its framesz=), or -ENOENT. */
int rnic_port_max_frame(uint16_t port_id);

/* What to give net_af_packet for RoCE MTU 4096: frames of 4096 bytes of payload and 94 of headers after the
 * kernel's 66, within the engine's mbufs (framesz - 32 <= 4352), in blocks of whole pages that hold whole
 * frames (17 x 4096 = 16 x 4352). */
#define RNIC_AF_PACKET_JUMBO_ARGS "framesz=4352,blocksz=69632"

/*
 * Whether frames the port took may stay unsent until its next burst on the same queue: net_af_packet hands
 * its TX ring to the kernel with one sendto() per burst, and the kernel stops at the first frame a qdisc or
 * egress filter drops (the socket's send gets ENOBUFS), leaving the frames behind it in the ring. A NIC sends
 * what it took; such a port needs rnic_port_tx_kick when its sender goes idle.
 */
int rnic_port_tx_needs_kick(uint16_t port_id);

/*
 * Have the port send what its TX queue still holds, adding no frame: one burst of an mbuf from mp that the
 * driver refuses (net_af_packet frees a frame longer than its ring frames, and still kicks the ring). It
 * bypasses the queue's TX callbacks (capture): nothing goes out for them to see. A syscall: for idle passes.
 */
void rnic_port_tx_kick(uint16_t port_id, uint16_t queue, struct rte_mempool *mp);

/* Stop and close the port. */
void rnic_port_close(uint16_t port_id);

#endif /* RNIC_PORT_H */
