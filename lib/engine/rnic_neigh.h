/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbour resolution of a device's port: ARP (RFC 826) for IPv4 GIDs, neighbour discovery (RFC 4861) for
 * IPv6 GIDs (doc/engine.md, "Neighbours").
 *
 * The data path reads the cache without a lock (each entry is a seqlock the control thread alone writes)
 * and asks for the addresses it misses through a ring. ARP and ND frames never reach the RoCE stages: the
 * parser hands what is not RoCE to a ring, and the engine's control thread (rnic_neigh_poll) answers,
 * learns, retries and expires; what it sends goes out through shard 0's responder (rnic_neigh_tx), the
 * stage that owns a TX queue of the port.
 */
#ifndef RNIC_NEIGH_H
#define RNIC_NEIGH_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "rnic_priv.h"

#define RNIC_NEIGH_SLOTS 256		/* cache entries per port (a power of two) */
#define RNIC_NEIGH_WINDOW 8		/* slots an address may take, from its hash on */
#define RNIC_NEIGH_RETRIES 3		/* requests per resolution or revalidation (Linux's mcast_solicit) */
#define RNIC_NEIGH_RETRANS_MS 1000	/* between two requests (Linux's retrans_time) */
#define RNIC_NEIGH_REACHABLE_MS 30000	/* an answer holds this long, then is checked again (base_reachable) */
#define RNIC_NEIGH_FAILED_MS 3000	/* a resolution that failed answers "unreachable" this long */
#define RNIC_NEIGH_WAIT_MS 4000		/* a WQE waits at most this long for its destination's MAC */
#define RNIC_NEIGH_RECHECK_US 1000	/* a waiting QP looks at the cache again this often */
#define RNIC_NEIGH_RING 256		/* frames or addresses each of the neighbour rings holds */
#define RNIC_NEIGH_MAX_FRAME 512	/* larger ARP/ND frames are not looked at (counted malformed) */

/* The counters, as X(name, what); the control thread writes them, but queue_full (any producer). */
#define RNIC_NEIGH_COUNTERS(X) \
	X(requests_sent, "ARP requests and neighbour solicitations sent (gratuitous ones included)") \
	X(requests_received, "ARP requests and neighbour solicitations received") \
	X(replies_sent, "ARP replies and neighbour advertisements sent") \
	X(replies_received, "ARP replies and neighbour advertisements received") \
	X(failures, "resolutions that got no answer") \
	X(entries, "cache entries in use") \
	X(ignored, "requests for an address that is not the device's") \
	X(drop_malformed, "ARP/ND frames dropped: truncated, bad lengths, types, hop limit or checksum") \
	X(drop_bad_sender, "ARP/ND frames dropped: a multicast, zero or own sender address") \
	X(drop_unsolicited, "answers or announcements for an address never asked for, dropped") \
	X(table_full, "resolutions refused: no cache entry free") \
	X(queue_full, "frames or resolutions dropped: a neighbour ring was full")

struct rnic_neigh_stats {
#define RNIC_X(name, what) uint64_t name;
	RNIC_NEIGH_COUNTERS(RNIC_X)
#undef RNIC_X
};

/* Create the port's neighbour state; frames it sends come from pool. Frees with rnic_neigh_free. */
int rnic_neigh_create(struct rnic_device *dev, struct rte_mempool *pool);
void rnic_neigh_free(struct rnic_device *dev);

/*
 * Data path: the MAC of a GID. 0; -EAGAIN while it is being resolved (a miss asks the control thread);
 * -EHOSTUNREACH when the neighbour did not answer, or nothing serves the port's neighbour code. Lock-free.
 */
int rnic_neigh_lookup(const struct rnic_device *dev, const union rnic_gid *gid, uint8_t mac[6]);

/* Parser: an ARP or ICMPv6 frame is taken (0: the neighbour code owns it); anything else, or anything on a
 * port whose neighbour state nothing polls (the loopback pair's), is left (-1). */
int rnic_neigh_input(struct rnic_device *dev, struct rte_mbuf *m);

/* The ring of frames the control thread built, and shard 0's responder moving them onto its TX buffer (the
 * frames moved). */
struct rnic_tx_buffer;
struct rte_ring *rnic_neigh_tx_ring(const struct rnic_device *dev);
unsigned int rnic_neigh_tx(struct rte_ring *ring, struct rnic_tx_buffer *tx);

/* Control thread: handle the frames and resolutions queued, and the timers due at TSC now. The work done. */
unsigned int rnic_neigh_poll(struct rnic_device *dev, uint64_t now);

/* Control thread: a gratuitous ARP or an unsolicited neighbour advertisement for the device's address. */
void rnic_neigh_announce(struct rnic_device *dev);

/* Static neighbours (--neigh IP,MAC): peers on other hosts, their MAC given; ARP/ND never changes them. Added
 * while the engine is initialised (-ENOSPC beyond RNIC_MAX_STATIC_NEIGHBORS), cleared when it ends. */
#define RNIC_MAX_STATIC_NEIGHBORS 64
int rnic_neigh_static_add(const union rnic_gid *gid, const uint8_t mac[6]);
void rnic_neigh_static_clear(void);
/* The MAC of a static neighbour; 0 or -ENOENT. */
int rnic_neigh_static_lookup(const union rnic_gid *gid, uint8_t mac[6]);

/* The counters (a copy; relaxed loads). */
void rnic_neigh_stats(const struct rnic_device *dev, struct rnic_neigh_stats *out);

#endif /* RNIC_NEIGH_H */
