/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbour resolution: the per-port cache, ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861), with the
 * states and timers of Linux's neighbour table, simplified: INCOMPLETE (requests broadcast, up to
 * RNIC_NEIGH_RETRIES, RNIC_NEIGH_RETRANS_MS apart), REACHABLE (RNIC_NEIGH_REACHABLE_MS), PROBE (still used
 * while unicast requests check it; no answer frees it), FAILED (RNIC_NEIGH_FAILED_MS, then free).
 *
 * Every frame is hostile: lengths, types and addresses are checked before anything is read, and an answer
 * only updates an entry that exists (one the device asked for): no entry is created for an address the
 * device never asked for, and a static --neigh entry is never changed. Linux accepts no less (arp_accept 0,
 * no unsolicited neighbour advertisements into the cache).
 */
#include <errno.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_seqlock.h>

#include "rnic_neigh.h"
#include "rnic_pipeline.h"

enum neigh_state { NEIGH_FREE, NEIGH_INCOMPLETE, NEIGH_REACHABLE, NEIGH_PROBE, NEIGH_FAILED };

/* One cache entry. The data path reads state, MAC and GID under the seqlock; the rest is the control
 * thread's. */
struct neigh_entry {
	rte_seqlock_t lock;
	uint8_t state;
	uint8_t mac[RTE_ETHER_ADDR_LEN];
	union rnic_gid gid;
	uint8_t requests;		/* sent in this resolution or check */
	uint64_t until;			/* TSC: the next request, or the end of the state */
};

struct rnic_neigh {
	struct neigh_entry e[RNIC_NEIGH_SLOTS];
	struct rte_ring *rx;		/* parser -> control thread: ARP and ICMPv6 frames */
	struct rte_ring *want;		/* any lcore -> control thread: GIDs to resolve */
	struct rte_ring *tx;		/* control thread -> shard 0's responder: frames to send */
	struct rte_mempool *pool;
	uint64_t ms;			/* TSC cycles per millisecond */
	uint32_t served;		/* rnic_neigh_poll has run: frames handed over will be read (a port no
					 * control thread serves, the loopback pair's, keeps dropping them) */
	struct rnic_neigh_stats st;
};

#define ND_NS 135
#define ND_NA 136
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2
#define ND_NA_SOLICITED 0x40
#define ND_NA_OVERRIDE 0x20
#define ND_LEN 24			/* ICMPv6 NS/NA before options: type, code, sum, flags, target */
#define IPV6_HDR_LEN 40

static const union rnic_gid v4_prefix = { .raw = { [10] = 0xff, [11] = 0xff } };

/* The ICMPv6 checksum's one's-complement sum over the pseudo-header and the message (RFC 4443 2.3). */
static uint16_t
icmp6_sum(const struct rte_ipv6_hdr *ip, const uint8_t *icmp, uint32_t len)
{
	uint32_t sum = (uint32_t)rte_ipv6_phdr_cksum(ip, 0) + rte_raw_cksum(icmp, len);

	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)((sum & 0xffff) + (sum >> 16));
}

static uint32_t
slot_of(const union rnic_gid *g)
{
	uint32_t w[4];

	memcpy(w, g->raw, sizeof(w));
	return ((w[0] ^ w[1] ^ w[2] ^ w[3]) * 0x9e3779b1u) >> 24;
}

static struct rte_ring *
neigh_ring(const struct rnic_device *dev, const char *what, uint32_t esize, unsigned int flags)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "rnic_nb%s_%.12s", what, dev->name);
	return rte_ring_create_elem(name, esize, RNIC_NEIGH_RING, dev->socket_id, flags);
}

int
rnic_neigh_create(struct rnic_device *dev, struct rte_mempool *pool)
{
	struct rnic_neigh *n = rte_zmalloc_socket("rnic_neigh", sizeof(*n), RTE_CACHE_LINE_SIZE, dev->socket_id);

	if (n == NULL)
		return -ENOMEM;
	dev->neigh = n;
	n->pool = pool;
	n->ms = rte_get_tsc_hz() / 1000;
	for (unsigned int i = 0; i < RNIC_NEIGH_SLOTS; i++)
		rte_seqlock_init(&n->e[i].lock);
	/* The parser alone puts frames in, shard 0's responder alone takes them out; resolutions come from
	 * every requester and responder and the control path. */
	/* Every shard's parser hands ARP and ND over: multi-producer. */
	n->rx = neigh_ring(dev, "rx", sizeof(struct rte_mbuf *), RING_F_SC_DEQ);
	n->want = neigh_ring(dev, "wt", sizeof(union rnic_gid), RING_F_SC_DEQ);
	n->tx = neigh_ring(dev, "tx", sizeof(struct rte_mbuf *), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (n->rx == NULL || n->want == NULL || n->tx == NULL) {
		rnic_neigh_free(dev);
		return -ENOMEM;
	}
	return 0;
}

void
rnic_neigh_free(struct rnic_device *dev)
{
	struct rnic_neigh *n = dev->neigh;

	if (n == NULL)
		return;
	rnic_ring_free_mbufs(n->rx);
	rnic_ring_free_mbufs(n->tx);
	rte_ring_free(n->rx);
	rte_ring_free(n->want);
	rte_ring_free(n->tx);
	rte_free(n);
	dev->neigh = NULL;
}

static void
count_queue_full(struct rnic_neigh *n)
{
	__atomic_fetch_add(&n->st.queue_full, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The data path's side                                                                                     */

int
rnic_neigh_lookup(const struct rnic_device *dev, const union rnic_gid *gid, uint8_t mac[6])
{
	struct rnic_neigh *n = dev->neigh;
	union rnic_gid ask;
	uint32_t h;

	/* No neighbour code serves the port (the loopback pair's: every peer is a device of this process): no
	 * MAC will come. */
	if (n == NULL || !__atomic_load_n(&n->served, __ATOMIC_RELAXED))
		return -EHOSTUNREACH;
	h = slot_of(gid);
	for (unsigned int i = 0; i < RNIC_NEIGH_WINDOW; i++) {
		const struct neigh_entry *e = &n->e[(h + i) & (RNIC_NEIGH_SLOTS - 1)];
		uint8_t state, found[RTE_ETHER_ADDR_LEN];
		uint32_t sn;
		int match;

		do {
			sn = rte_seqlock_read_begin(&e->lock);
			state = e->state;
			match = memcmp(e->gid.raw, gid->raw, sizeof(gid->raw)) == 0;
			memcpy(found, e->mac, sizeof(found));
		} while (rte_seqlock_read_retry(&e->lock, sn));
		if (state == NEIGH_FREE || !match)
			continue;
		if (state == NEIGH_FAILED)
			return -EHOSTUNREACH;
		if (state == NEIGH_INCOMPLETE)
			return -EAGAIN;
		memcpy(mac, found, sizeof(found));
		return 0;
	}
	/* Not asked yet (or asked, and the control thread has not got to it): ask. */
	ask = *gid;
	if (rte_ring_mp_enqueue_elem(n->want, &ask, sizeof(ask)) != 0)
		count_queue_full(n);
	return -EAGAIN;
}

int
rnic_neigh_input(struct rnic_device *dev, struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint16_t type;

	if (dev->neigh == NULL || !__atomic_load_n(&dev->neigh->served, __ATOMIC_RELAXED) ||
	    rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN)
		return -1;
	type = (uint16_t)(f[12] << 8 | f[13]);
	/* ARP, or IPv6 whose next header is ICMPv6 (the lengths are checked by the control thread). */
	if (type != RTE_ETHER_TYPE_ARP && !(type == RTE_ETHER_TYPE_IPV6 &&
	    rte_pktmbuf_data_len(m) >= RTE_ETHER_HDR_LEN + IPV6_HDR_LEN && f[RTE_ETHER_HDR_LEN + 6] == IPPROTO_ICMPV6))
		return -1;
	if (rte_ring_mp_enqueue_elem(dev->neigh->rx, &m, sizeof(m)) != 0) {
		count_queue_full(dev->neigh);
		return -1;
	}
	return 0;
}

struct rte_ring *
rnic_neigh_tx_ring(const struct rnic_device *dev)
{
	return dev->neigh != NULL ? dev->neigh->tx : NULL;
}

unsigned int
rnic_neigh_tx(struct rte_ring *ring, struct rnic_tx_buffer *tx)
{
	struct rte_mbuf *m;
	unsigned int n = 0;

	while (rnic_tx_room(tx) != 0 && rte_ring_sc_dequeue_elem(ring, &m, sizeof(m)) == 0) {
		rnic_tx_enqueue(tx, m);
		n++;
	}
	return n;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The cache (control thread)                                                                               */

static struct neigh_entry *
find(struct rnic_neigh *n, const union rnic_gid *gid)
{
	uint32_t h = slot_of(gid);

	for (unsigned int i = 0; i < RNIC_NEIGH_WINDOW; i++) {
		struct neigh_entry *e = &n->e[(h + i) & (RNIC_NEIGH_SLOTS - 1)];

		if (e->state != NEIGH_FREE && memcmp(e->gid.raw, gid->raw, sizeof(gid->raw)) == 0)
			return e;
	}
	return NULL;
}

static void
set_entry(struct rnic_neigh *n, struct neigh_entry *e, uint8_t state, const uint8_t *mac, uint64_t until)
{
	if ((e->state == NEIGH_FREE) != (state == NEIGH_FREE))
		n->st.entries += state == NEIGH_FREE ? (uint64_t)-1 : 1;
	rte_seqlock_write_lock(&e->lock);
	e->state = state;
	if (mac != NULL)
		memcpy(e->mac, mac, RTE_ETHER_ADDR_LEN);
	rte_seqlock_write_unlock(&e->lock);
	e->until = until;
}

/* A slot for a new entry in the address's window: a free one, else the one whose state ends first of those
 * not being resolved (an entry some WQE waits for is never taken). */
static struct neigh_entry *
claim(struct rnic_neigh *n, const union rnic_gid *gid)
{
	struct neigh_entry *pick = NULL;
	uint32_t h = slot_of(gid);

	for (unsigned int i = 0; i < RNIC_NEIGH_WINDOW; i++) {
		struct neigh_entry *e = &n->e[(h + i) & (RNIC_NEIGH_SLOTS - 1)];

		if (e->state == NEIGH_FREE) {
			pick = e;
			break;
		}
		if (e->state != NEIGH_INCOMPLETE && (pick == NULL || e->until < pick->until))
			pick = e;
	}
	if (pick == NULL)
		return NULL;
	set_entry(n, pick, NEIGH_FREE, NULL, 0);
	rte_seqlock_write_lock(&pick->lock);
	pick->gid = *gid;
	rte_seqlock_write_unlock(&pick->lock);
	return pick;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Frames out                                                                                               */

static uint8_t *
frame_start(struct rnic_neigh *n, struct rte_mbuf **m, uint16_t len)
{
	*m = rte_pktmbuf_alloc(n->pool);
	return *m != NULL ? (uint8_t *)rte_pktmbuf_append(*m, len) : NULL;
}

static void
frame_send(struct rnic_neigh *n, struct rte_mbuf *m)
{
	if (rte_ring_sp_enqueue_elem(n->tx, &m, sizeof(m)) != 0) {
		count_queue_full(n);
		rte_pktmbuf_free(m);
	}
}

static uint8_t *
put_eth(uint8_t *p, const uint8_t *dst, const struct rte_ether_addr *src, uint16_t type)
{
	memcpy(p, dst, RTE_ETHER_ADDR_LEN);
	memcpy(p + RTE_ETHER_ADDR_LEN, src->addr_bytes, RTE_ETHER_ADDR_LEN);
	p[12] = (uint8_t)(type >> 8);
	p[13] = (uint8_t)type;
	return p + RTE_ETHER_HDR_LEN;
}

/* Whether an address (16 bytes, a GID) is one of the device's GIDs: the frames of each are its own. */
static int
own_gid(const struct rnic_device *dev, const uint8_t *addr)
{
	for (int i = 0; i < dev->gid_count; i++)
		if (memcmp(addr, dev->gid[i].raw, 16) == 0)
			return 1;
	return 0;
}

/* An ARP frame from the device: op, from its address spa (one of its GIDs), to eth_dst, for target (tha,
 * tpa). */
static void
send_arp(struct rnic_device *dev, uint16_t op, const uint8_t *spa, const uint8_t *eth_dst, const uint8_t *tha,
	 const uint8_t *tpa)
{
	static const uint8_t zero[RTE_ETHER_ADDR_LEN];
	struct rte_mbuf *m;
	uint8_t *p = frame_start(dev->neigh, &m, RTE_ETHER_HDR_LEN + sizeof(struct rte_arp_hdr));
	struct rte_arp_hdr a = {
		.arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER), .arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4),
		.arp_hlen = RTE_ETHER_ADDR_LEN, .arp_plen = 4, .arp_opcode = rte_cpu_to_be_16(op),
	};

	if (p == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	a.arp_data.arp_sha = dev->mac;
	memcpy(&a.arp_data.arp_sip, spa, 4);
	memcpy(&a.arp_data.arp_tha, tha != NULL ? tha : zero, RTE_ETHER_ADDR_LEN);
	memcpy(&a.arp_data.arp_tip, tpa, 4);
	p = put_eth(p, eth_dst, &dev->mac, RTE_ETHER_TYPE_ARP);
	memcpy(p, &a, sizeof(a));
	frame_send(dev->neigh, m);
	if (op == RTE_ARP_OP_REQUEST)
		dev->neigh->st.requests_sent++;
	else
		dev->neigh->st.replies_sent++;
}

/* The solicited-node multicast address of a target (RFC 4291 2.7.1) and its MAC (RFC 2464 7). */
static void
solicited_node(const uint8_t *target, uint8_t ip[16], uint8_t mac[6])
{
	static const uint8_t prefix[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

	memcpy(ip, prefix, sizeof(prefix));
	memcpy(ip + 13, target + 13, 3);
	mac[0] = mac[1] = 0x33;
	memcpy(mac + 2, ip + 12, 4);
}

/* An NS (type ND_NS) or NA from the device to ip_dst/eth_dst about target (an NA: one of the device's GIDs),
 * with our link-layer address. */
static void
send_nd(struct rnic_device *dev, uint8_t type, uint8_t flags, const uint8_t *eth_dst, const uint8_t *ip_dst,
	const uint8_t *target)
{
	const uint16_t icmp_len = ND_LEN + 8;
	struct rte_mbuf *m;
	uint8_t *p = frame_start(dev->neigh, &m, RTE_ETHER_HDR_LEN + IPV6_HDR_LEN + icmp_len), *icmp;
	struct rte_ipv6_hdr ip = {
		.vtc_flow = rte_cpu_to_be_32(6u << 28), .payload_len = rte_cpu_to_be_16(icmp_len),
		.proto = IPPROTO_ICMPV6, .hop_limits = 255,	/* RFC 4861 7.1: never forwarded */
	};
	uint16_t sum;

	if (p == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	/* An NA is from the address it advertises (one of the device's GIDs), an NS from GID 0. */
	memcpy(ip.src_addr, type == ND_NA ? target : dev->gid[0].raw, 16);
	memcpy(ip.dst_addr, ip_dst, 16);
	p = put_eth(p, eth_dst, &dev->mac, RTE_ETHER_TYPE_IPV6);
	memcpy(p, &ip, sizeof(ip));
	icmp = p + IPV6_HDR_LEN;
	memset(icmp, 0, icmp_len);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	icmp[ND_LEN] = type == ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
	icmp[ND_LEN + 1] = 1;			/* option length in units of 8 bytes */
	memcpy(icmp + ND_LEN + 2, dev->mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	sum = (uint16_t)~icmp6_sum((const struct rte_ipv6_hdr *)p, icmp, icmp_len);
	memcpy(icmp + 2, &sum, sizeof(sum));	/* a sum of the words as stored, stored the same way */
	frame_send(dev->neigh, m);
	if (type == ND_NS)
		dev->neigh->st.requests_sent++;
	else
		dev->neigh->st.replies_sent++;
}

/* A request for an entry's address: broadcast / solicited-node multicast, or unicast to the MAC known when
 * an entry is checked (PROBE). */
static void
send_request(struct rnic_device *dev, const struct neigh_entry *e)
{
	static const uint8_t bcast[RTE_ETHER_ADDR_LEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t ip[16], mac[RTE_ETHER_ADDR_LEN];

	if (rnic_gid_is_ipv4(&e->gid)) {
		send_arp(dev, RTE_ARP_OP_REQUEST, &dev->gid[0].raw[12], e->state == NEIGH_PROBE ? e->mac : bcast, NULL,
			 &e->gid.raw[12]);
		return;
	}
	solicited_node(e->gid.raw, ip, mac);
	if (e->state == NEIGH_PROBE)
		send_nd(dev, ND_NS, 0, e->mac, e->gid.raw, e->gid.raw);
	else
		send_nd(dev, ND_NS, 0, mac, ip, e->gid.raw);
}

void
rnic_neigh_announce(struct rnic_device *dev)
{
	static const uint8_t bcast[RTE_ETHER_ADDR_LEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 0x01 };
	static const uint8_t all_nodes_mac[RTE_ETHER_ADDR_LEN] = { 0x33, 0x33, 0, 0, 0, 0x01 };

	/* Gratuitous ARP as Linux sends it: a request for our own address (RFC 5227 3); for each GID. */
	for (int i = 0; i < dev->gid_count; i++) {
		const uint8_t *gid = dev->gid[i].raw;

		if (rnic_gid_is_ipv4(&dev->gid[i]))
			send_arp(dev, RTE_ARP_OP_REQUEST, &gid[12], bcast, NULL, &gid[12]);
		else
			send_nd(dev, ND_NA, ND_NA_OVERRIDE, all_nodes_mac, all_nodes, gid);
	}
}

/* ------------------------------------------------------------------------------------------------------ */
/* Frames in                                                                                                */

static int
mac_is_bad(const uint8_t *mac)
{
	static const uint8_t zero[RTE_ETHER_ADDR_LEN];

	return (mac[0] & 1) != 0 || memcmp(mac, zero, RTE_ETHER_ADDR_LEN) == 0;
}

/* What an ARP/ND frame says about its sender, applied to the entry the device asked for (if any). */
static void
learn(struct rnic_neigh *n, const union rnic_gid *sender, const uint8_t *mac, int answer, uint64_t now)
{
	struct neigh_entry *e = find(n, sender);

	if (e == NULL) {
		if (answer)
			n->st.drop_unsolicited++;
		return;
	}
	if (answer)
		n->st.replies_received++;
	set_entry(n, e, NEIGH_REACHABLE, mac, now + RNIC_NEIGH_REACHABLE_MS * n->ms);
	e->requests = 0;
}

static void
arp_input(struct rnic_device *dev, const uint8_t *f, uint32_t len, uint64_t now)
{
	struct rnic_neigh *n = dev->neigh;
	const struct rte_arp_hdr *a = (const struct rte_arp_hdr *)(f + RTE_ETHER_HDR_LEN);
	union rnic_gid sender = v4_prefix, target;
	uint16_t op;

	if (len < RTE_ETHER_HDR_LEN + sizeof(*a) || a->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    a->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || a->arp_hlen != RTE_ETHER_ADDR_LEN ||
	    a->arp_plen != 4) {
		n->st.drop_malformed++;
		return;
	}
	op = rte_be_to_cpu_16(a->arp_opcode);
	memcpy(&sender.raw[12], &a->arp_data.arp_sip, 4);
	if (op != RTE_ARP_OP_REQUEST && op != RTE_ARP_OP_REPLY) {
		n->st.drop_malformed++;
		return;
	}
	/* A multicast or zero sender MAC, our own address as the sender (a conflict or a spoof), or a
	 * multicast/broadcast sender IP. */
	if (mac_is_bad(a->arp_data.arp_sha.addr_bytes) || own_gid(dev, sender.raw) ||
	    sender.raw[12] >= 224) {
		n->st.drop_bad_sender++;
		return;
	}
	if (op == RTE_ARP_OP_REPLY) {
		learn(n, &sender, a->arp_data.arp_sha.addr_bytes, 1, now);
		return;
	}
	n->st.requests_received++;
	memcpy(target.raw, sender.raw, 12);
	memcpy(&target.raw[12], &a->arp_data.arp_tip, 4);
	if (!rnic_gid_is_ipv4(&dev->gid[0]) || !own_gid(dev, target.raw)) {
		n->st.ignored++;
		return;
	}
	/* An ARP probe (RFC 5227: sender 0.0.0.0) is answered and teaches nothing. */
	if (a->arp_data.arp_sip != 0)
		learn(n, &sender, a->arp_data.arp_sha.addr_bytes, 0, now);
	send_arp(dev, RTE_ARP_OP_REPLY, &target.raw[12], a->arp_data.arp_sha.addr_bytes, a->arp_data.arp_sha.addr_bytes,
		 (const uint8_t *)&a->arp_data.arp_sip);
}

/* The link-layer address option of type want in an NS/NA's options, or NULL; -1 for a malformed option. */
static int
nd_lladdr(const uint8_t *opt, uint32_t len, uint8_t want, const uint8_t **mac)
{
	*mac = NULL;
	while (len >= 2) {
		uint32_t olen = (uint32_t)opt[1] * 8;

		if (olen == 0 || olen > len)
			return -1;	/* RFC 4861 4.6: a zero length, or past the end, invalidates the packet */
		if (opt[0] == want && olen >= 8)
			*mac = opt + 2;
		opt += olen;
		len -= olen;
	}
	return len == 0 ? 0 : -1;
}

static void
ns_input(struct rnic_device *dev, const struct rte_ipv6_hdr *ip, const uint8_t *icmp, uint32_t len,
	 const uint8_t *eth_src, uint64_t now)
{
	static const uint8_t unspecified[16];
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 0x01 };
	static const uint8_t all_nodes_mac[RTE_ETHER_ADDR_LEN] = { 0x33, 0x33, 0, 0, 0, 0x01 };
	struct rnic_neigh *n = dev->neigh;
	const uint8_t *slla;
	union rnic_gid sender;
	int dad = memcmp(ip->src_addr, unspecified, 16) == 0;

	if (nd_lladdr(icmp + ND_LEN, len - ND_LEN, ND_OPT_SLLA, &slla) != 0 || (dad && slla != NULL)) {
		n->st.drop_malformed++;
		return;
	}
	if ((slla != NULL && mac_is_bad(slla)) || ip->src_addr[0] == 0xff ||
	    own_gid(dev, ip->src_addr)) {
		n->st.drop_bad_sender++;
		return;
	}
	n->st.requests_received++;
	if (rnic_gid_is_ipv4(&dev->gid[0]) || !own_gid(dev, icmp + 8)) {
		n->st.ignored++;
		return;
	}
	memcpy(sender.raw, ip->src_addr, 16);
	if (dad) {	/* a duplicate address detection probe for our address: tell everyone (RFC 4861 7.2.4) */
		send_nd(dev, ND_NA, ND_NA_OVERRIDE, all_nodes_mac, all_nodes, icmp + 8);
		return;
	}
	if (slla != NULL)
		learn(n, &sender, slla, 0, now);
	send_nd(dev, ND_NA, ND_NA_SOLICITED | ND_NA_OVERRIDE, slla != NULL ? slla : eth_src, ip->src_addr, icmp + 8);
}

static void
na_input(struct rnic_device *dev, const struct rte_ipv6_hdr *ip, const uint8_t *icmp, uint32_t len, uint64_t now)
{
	struct rnic_neigh *n = dev->neigh;
	const uint8_t *tlla;
	union rnic_gid target;

	/* RFC 4861 7.1.2: an NA to a multicast address is not solicited. */
	if (nd_lladdr(icmp + ND_LEN, len - ND_LEN, ND_OPT_TLLA, &tlla) != 0 ||
	    (ip->dst_addr[0] == 0xff && (icmp[4] & ND_NA_SOLICITED))) {
		n->st.drop_malformed++;
		return;
	}
	memcpy(target.raw, icmp + 8, 16);
	if (tlla == NULL || mac_is_bad(tlla) || own_gid(dev, target.raw)) {
		n->st.drop_bad_sender++;
		return;
	}
	learn(n, &target, tlla, 1, now);
}

static void
icmp6_input(struct rnic_device *dev, const uint8_t *f, uint32_t len, uint64_t now)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(f + RTE_ETHER_HDR_LEN);
	const uint8_t *icmp = f + RTE_ETHER_HDR_LEN + IPV6_HDR_LEN;
	uint32_t icmp_len;

	if (len < RTE_ETHER_HDR_LEN + IPV6_HDR_LEN + ND_LEN)
		goto malformed;
	icmp_len = rte_be_to_cpu_16(ip->payload_len);
	if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6 || icmp_len > len - RTE_ETHER_HDR_LEN - IPV6_HDR_LEN)
		goto malformed;
	if (icmp[0] != ND_NS && icmp[0] != ND_NA)
		return;		/* other ICMPv6 (echo, router advertisements...): not ours to answer */
	/* RFC 4861 7.1: hop limit 255 (not forwarded), code 0, at least 24 bytes, the checksum, a unicast
	 * target. */
	if (ip->hop_limits != 255 || icmp[1] != 0 || icmp_len < ND_LEN || icmp[8] == 0xff ||
	    icmp6_sum(ip, icmp, icmp_len) != 0xffff)
		goto malformed;
	if (icmp[0] == ND_NS)
		ns_input(dev, ip, icmp, icmp_len, f + RTE_ETHER_ADDR_LEN, now);
	else
		na_input(dev, ip, icmp, icmp_len, now);
	return;
malformed:
	dev->neigh->st.drop_malformed++;
}

static void
frame_input(struct rnic_device *dev, struct rte_mbuf *m, uint64_t now)
{
	uint8_t copy[RNIC_NEIGH_MAX_FRAME];
	uint32_t len = rte_pktmbuf_pkt_len(m);
	const uint8_t *f;

	if (len > RNIC_NEIGH_MAX_FRAME) {
		dev->neigh->st.drop_malformed++;
		return;
	}
	f = rte_pktmbuf_read(m, 0, len, copy);
	if (f == NULL || len < RTE_ETHER_HDR_LEN) {
		dev->neigh->st.drop_malformed++;
		return;
	}
	if (f[12] == (RTE_ETHER_TYPE_ARP >> 8) && f[13] == (RTE_ETHER_TYPE_ARP & 0xff))
		arp_input(dev, f, len, now);
	else
		icmp6_input(dev, f, len, now);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Resolutions and timers (control thread)                                                                  */

static void
resolve(struct rnic_device *dev, const union rnic_gid *gid, uint64_t now)
{
	struct rnic_neigh *n = dev->neigh;
	struct neigh_entry *e = find(n, gid);

	if (e != NULL)
		return;		/* asked already, known, or failed (until its time is over) */
	e = claim(n, gid);
	if (e == NULL) {
		n->st.table_full++;
		return;
	}
	/* An address of the other family than the device's has no source to ask from: it fails at once. */
	if (rnic_gid_is_ipv4(gid) != rnic_gid_is_ipv4(&dev->gid[0])) {
		n->st.failures++;
		set_entry(n, e, NEIGH_FAILED, NULL, now + RNIC_NEIGH_FAILED_MS * n->ms);
		return;
	}
	set_entry(n, e, NEIGH_INCOMPLETE, NULL, now + RNIC_NEIGH_RETRANS_MS * n->ms);
	e->requests = 1;
	send_request(dev, e);
}

static void
expire(struct rnic_device *dev, struct neigh_entry *e, uint64_t now)
{
	struct rnic_neigh *n = dev->neigh;

	switch (e->state) {
	case NEIGH_REACHABLE:	/* time to check it: unicast requests, the MAC still in use meanwhile */
		set_entry(n, e, NEIGH_PROBE, NULL, now + RNIC_NEIGH_RETRANS_MS * n->ms);
		e->requests = 1;
		send_request(dev, e);
		break;
	case NEIGH_INCOMPLETE:
	case NEIGH_PROBE:
		if (e->requests < RNIC_NEIGH_RETRIES) {
			e->requests++;
			e->until = now + RNIC_NEIGH_RETRANS_MS * n->ms;
			send_request(dev, e);
		} else if (e->state == NEIGH_INCOMPLETE) {
			n->st.failures++;
			set_entry(n, e, NEIGH_FAILED, NULL, now + RNIC_NEIGH_FAILED_MS * n->ms);
		} else {
			set_entry(n, e, NEIGH_FREE, NULL, 0);	/* gone: the next use resolves it again */
		}
		break;
	case NEIGH_FAILED:
		set_entry(n, e, NEIGH_FREE, NULL, 0);
		break;
	default:
		break;
	}
}

unsigned int
rnic_neigh_poll(struct rnic_device *dev, uint64_t now)
{
	struct rnic_neigh *n = dev->neigh;
	struct rte_mbuf *m;
	union rnic_gid gid;
	unsigned int work = 0;

	if (n == NULL)
		return 0;
	if (!n->served)
		__atomic_store_n(&n->served, 1, __ATOMIC_RELAXED);
	while (rte_ring_sc_dequeue_elem(n->rx, &m, sizeof(m)) == 0) {
		frame_input(dev, m, now);
		rte_pktmbuf_free(m);
		work++;
	}
	while (rte_ring_sc_dequeue_elem(n->want, &gid, sizeof(gid)) == 0) {
		resolve(dev, &gid, now);
		work++;
	}
	for (unsigned int i = 0; i < RNIC_NEIGH_SLOTS; i++) {
		struct neigh_entry *e = &n->e[i];

		if (e->state != NEIGH_FREE && now >= e->until) {
			expire(dev, e, now);
			work++;
		}
	}
	return work;
}

void
rnic_neigh_stats(const struct rnic_device *dev, struct rnic_neigh_stats *out)
{
	const uint64_t *from;
	uint64_t *to = (uint64_t *)out;

	memset(out, 0, sizeof(*out));
	if (dev->neigh == NULL)
		return;
	from = (const uint64_t *)&dev->neigh->st;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
}

static struct {
	unsigned int nb;
	struct {
		union rnic_gid gid;
		uint8_t mac[RTE_ETHER_ADDR_LEN];
	} entry[RNIC_MAX_STATIC_NEIGHBORS];
} static_neighbors;

int
rnic_neigh_static_add(const union rnic_gid *gid, const uint8_t mac[6])
{
	if (static_neighbors.nb == RNIC_MAX_STATIC_NEIGHBORS)
		return -ENOSPC;
	static_neighbors.entry[static_neighbors.nb].gid = *gid;
	memcpy(static_neighbors.entry[static_neighbors.nb].mac, mac, RTE_ETHER_ADDR_LEN);
	static_neighbors.nb++;
	return 0;
}

void
rnic_neigh_static_clear(void)
{
	static_neighbors.nb = 0;
}

int
rnic_neigh_static_lookup(const union rnic_gid *gid, uint8_t mac[6])
{
	for (unsigned int i = 0; i < static_neighbors.nb; i++) {
		if (memcmp(static_neighbors.entry[i].gid.raw, gid->raw, sizeof(gid->raw)) == 0) {
			memcpy(mac, static_neighbors.entry[i].mac, RTE_ETHER_ADDR_LEN);
			return 0;
		}
	}
	return -ENOENT;
}
