/* SPDX-License-Identifier: BSD-3-Clause
 * Fault injection in the ports' RX callbacks (rnic_fault.h).
 *
 * Per RX queue, a frame goes: link down? (lost) -> per-frame faults, if only= selects it: independent loss,
 * Gilbert-Elliott loss, a flipped bit, a duplicate, held back for reordering -> the port's link: the outbound
 * queue, which the rate limit's token bucket drains (without a rate limit it only keeps what the caller's
 * array had no room for). The link is the port's, not a queue's: a port's RX queues all read the one wire
 * (a loopback port's RX queue i is the peer's TX queue i, a ring each), and a queue per RX queue would be
 * parallel links, doubling the rate. The state belongs to the lcore polling the port's queues (one: the
 * engine refuses --fault with each shard's parser on its own lcore); the control thread talks to it through
 * the update handshake (requested/applied) and the link-down deadline, both atomics.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "rnic_fault.h"
#include "rnic_port.h"
#include "rnic_priv.h"
#include "rnic_wire.h"

#define MAX_DEPTH 64
#define MAX_QUEUE 4096			/* frames the outbound queue holds (a power of two) */
#define MAX_FAULT_PORTS RNIC_MAX_DEVICES
#define DEFAULT_QUEUE 64
#define DEFAULT_BUCKET 32768
#define MAX_MS (24u * 3600 * 1000)
#define NS_PER_MS 1000000ull
#define UPDATE_WAIT_US 1000000
/* Longer than this between two polls of a queue, the lcore polling it was taken away (the engine's loop
 * polls every few microseconds, a scheduler's time slice is milliseconds): the rate limit's link runs by
 * that lcore's time and counts this much of the gap, as the engine's pacers (a bucket of 64 us) do. */
#define AWAY_NS 1000000ull

/* A frame held back for reordering. */
struct held_frame {
	struct rte_mbuf *m;
	uint32_t countdown;		/* later frames it still waits for */
	uint64_t until_ns;		/* with delay=: when it goes at the latest */
};

/* A port's link: the outbound queue and the rate limit's token bucket, shared by the port's RX queues. */
struct fault_link {
	uint64_t refill_ns;		/* the token bucket's last refill */
	double tokens;			/* bytes the rate limit lets through now (below 0: owed) */
	uint64_t served_ns;		/* the time the rate limit served (rnic_fault_counts) */
	uint32_t out_head;		/* the outbound queue: out_len frames from out_head */
	uint32_t out_len;
	struct rte_mbuf *out[MAX_QUEUE];
};

/* The state of one RX queue: owned by the lcore polling it, but for the atomics marked as the control's. */
struct fault_queue {
	struct rnic_fault_spec spec;
	uint64_t rng;
	uint64_t start_ns;		/* when the spec took effect: down=, at=, every= count from here */
	int ge_bad;			/* the Gilbert-Elliott chain is in its bad state */
	uint32_t held;
	struct held_frame hold[MAX_DEPTH];
	struct fault_link *link;	/* the port's */
	struct rnic_fault_counts counts;
	const struct rte_eth_rxtx_callback *cb;
	uint16_t port_id;
	uint16_t queue_id;
	/* Written by the control thread: */
	uint64_t down_until_ns;		/* rnic_fault_link_down (atomic) */
	uint32_t requested;		/* updates asked for (atomic; next is valid when it moves) */
	uint32_t applied;		/* updates taken by the lcore (atomic) */
	struct rnic_fault_spec next;
};

static struct {
	unsigned int nb_ports;
	uint16_t port[MAX_FAULT_PORTS];
	uint16_t nb_queues[MAX_FAULT_PORTS];
	struct fault_queue *queue[MAX_FAULT_PORTS];
	struct fault_link *link[MAX_FAULT_PORTS];
} faults;

static uint64_t
tsc_ns(void)
{
	static double ns_per_cycle;

	if (ns_per_cycle == 0)
		ns_per_cycle = 1e9 / (double)rte_get_tsc_hz();
	return (uint64_t)((double)rte_get_tsc_cycles() * ns_per_cycle);
}

static uint64_t (*clock_ns)(void) = tsc_ns;

void
rnic_fault_set_clock(uint64_t (*now_ns)(void))
{
	clock_ns = now_ns != NULL ? now_ns : tsc_ns;
}

/* xorshift64*: small, fast, and the same sequence for the same seed on every machine. */
static uint64_t
next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* A draw only when the probability is not 0, so that a spec without a fault draws exactly as before. */
static int
chance(uint64_t *s, double p)
{
	return p > 0 && (double)(next_random(s) >> 11) * 0x1.0p-53 < p;
}

/* The spec takes effect: a generator distinct per port and queue and reproducible (a zero state would stay
 * zero), time counted from now, a full token bucket. */
static void
take_spec(struct fault_queue *q, const struct rnic_fault_spec *spec, uint64_t now)
{
	q->spec = *spec;
	q->rng = spec->seed * 0x9e3779b97f4a7c15ULL + ((uint64_t)q->port_id << 16 | q->queue_id) + 1;
	q->start_ns = now;
	q->link->refill_ns = now;
	q->link->tokens = spec->bucket;
	q->ge_bad = 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The path of a frame                                                                                      */

static void
lose(struct fault_queue *q, struct rte_mbuf *m, uint64_t *why)
{
	q->counts.dropped++;
	if (why != NULL)
		(*why)++;
	rte_pktmbuf_free(m);
}

/* A frame the layer is about to change: a copy of it when the sender still holds it (kept for
 * retransmission), as a wire changes what it carries, not the sender's frame. NULL when no mbuf was left for
 * the copy: the frame is lost instead. */
static struct rte_mbuf *
own_frame(struct fault_queue *q, struct rte_mbuf *m)
{
	struct rte_mbuf *own;

	if (rte_mbuf_refcnt_read(m) == 1 && !RTE_MBUF_HAS_EXTBUF(m) && !RTE_MBUF_CLONED(m))
		return m;
	own = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
	rte_pktmbuf_free(m);
	if (own == NULL)
		q->counts.dropped++;
	return own;
}

/* Where an IPv4 or IPv6 header starts in the frame (after an optional 802.1Q tag), its version in *v;
 * NULL for anything else or a frame too short for it. */
static uint8_t *
ip_header(struct rte_mbuf *m, int *v)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t off = RTE_ETHER_HDR_LEN;
	uint16_t type = (uint16_t)(f[12] << 8 | f[13]);

	if (m->data_len < RTE_ETHER_HDR_LEN + 4 + sizeof(struct rte_ipv6_hdr))
		return NULL;
	if (type == RTE_ETHER_TYPE_VLAN) {
		type = (uint16_t)(f[16] << 8 | f[17]);
		off += 4;
	}
	*v = type == RTE_ETHER_TYPE_IPV4 ? 4 : type == RTE_ETHER_TYPE_IPV6 ? 6 : 0;
	return *v != 0 ? f + off : NULL;
}

/* Mark an ECN-capable frame CE (RFC 3168): the ECN bits of the IPv4 TOS (and the header checksum again) or
 * of the IPv6 traffic class; the ICRC leaves both out. Returns the frame to go on with (a copy when the
 * sender holds it), or NULL when it was lost instead. */
static struct rte_mbuf *
mark_ce(struct fault_queue *q, struct rte_mbuf *m)
{
	uint8_t *ip, ecn, shift;
	int v;

	ip = ip_header(m, &v);
	if (ip == NULL)
		return m;
	/* Both in the header's second byte: IPv4's TOS, whose low bits they are; the low half of IPv6's
	 * traffic class (bits 4-11 of the header), where they are bits 4 and 5. */
	shift = v == 4 ? 0 : 4;
	ecn = (ip[1] >> shift) & RNIC_ECN_MASK;
	if (ecn == RNIC_ECN_NOT_ECT || ecn == RNIC_ECN_CE)
		return m;
	m = own_frame(q, m);
	if (m == NULL)
		return NULL;
	ip = ip_header(m, &v);
	ip[1] |= (uint8_t)(RNIC_ECN_CE << shift);
	if (v == 4) {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

		h->hdr_checksum = 0;
		h->hdr_checksum = rte_ipv4_cksum(h);
	}
	q->counts.ecn_marked++;
	return m;
}

/* RED/ECN by the depth the frame finds: nothing below kmin, always from kmax, linearly to pmax between. */
static int
red_mark(struct fault_queue *q, uint32_t depth)
{
	const struct rnic_fault_spec *s = &q->spec;

	if (s->kmax == 0 || depth < s->kmin)
		return 0;
	if (depth >= s->kmax)
		return 1;
	return chance(&q->rng, s->pmax * (double)(depth - s->kmin) / (double)(s->kmax - s->kmin));
}

/* Into the outbound queue, or lost at its tail: the rate limit's queue, else (a caller's array too small
 * for what came out) the queue's whole size. */
static void
send_out(struct fault_queue *q, struct rte_mbuf *m)
{
	struct fault_link *l = q->link;
	uint32_t limit = q->spec.rate_mbps != 0 ? q->spec.queue : MAX_QUEUE;

	if (q->spec.rate_mbps != 0) {
		q->counts.depth[RTE_MIN(l->out_len, (uint32_t)RNIC_FAULT_DEPTH_BINS - 1)]++;
		if (l->out_len < limit && red_mark(q, l->out_len)) {
			m = mark_ce(q, m);
			if (m == NULL)
				return;
		}
	}
	if (l->out_len >= limit) {
		lose(q, m, &q->counts.queue_dropped);
		return;
	}
	if (q->spec.rate_mbps != 0 && (l->out_len > 0 || l->tokens <= 0))
		q->counts.delayed++;
	l->out[(l->out_head + l->out_len++) & (MAX_QUEUE - 1)] = m;
}

/* Release the held frames that waited long enough, oldest first: tick = one more frame went by (or an idle
 * poll, when only frames count); and with delay=, those whose time is up. */
static void
release_held(struct fault_queue *q, int tick, uint64_t now)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < q->held; i++) {
		struct held_frame *h = &q->hold[i];

		if (tick && h->countdown > 0)
			h->countdown--;
		if (h->countdown == 0 || (q->spec.delay_us != 0 && now >= h->until_ns))
			send_out(q, h->m);
		else
			q->hold[kept++] = *h;
	}
	q->held = kept;
}

static int
link_is_down(const struct fault_queue *q, uint64_t now)
{
	uint64_t t, at = q->spec.down_at_ms * NS_PER_MS;

	if (now < __atomic_load_n(&q->down_until_ns, __ATOMIC_RELAXED))
		return 1;
	if (q->spec.down_ms == 0 || now - q->start_ns < at)
		return 0;
	t = now - q->start_ns - at;
	if (q->spec.down_every_ms != 0)
		t %= q->spec.down_every_ms * NS_PER_MS;
	return t < q->spec.down_ms * NS_PER_MS;
}

/* Whether the per-frame faults act on this frame (only=): responses are the opcodes IBA 9.2.1 gives to the
 * responder's side (ACK/NAK, atomic ACK, READ response); a frame that is not RoCEv2 is neither. */
static int
selected(const struct fault_queue *q, const struct rte_mbuf *m)
{
	struct rnic_pkt_desc d;

	if (q->spec.frames == RNIC_FAULT_ALL)
		return 1;
	if (rnic_pkt_parse_mbuf(m, &d, 0) != RNIC_DROP_NONE)
		return 0;
	if (q->spec.frames == RNIC_FAULT_GSI)
		return d.dqpn == 1;
	return rnic_opcode_info(d.opcode)->is_request == (q->spec.frames == RNIC_FAULT_REQUESTS);
}

/* Lost by the Gilbert-Elliott chain: one step of the chain per frame, then the loss of the state it is in. */
static int
burst_lost(struct fault_queue *q)
{
	if (q->spec.ge_p <= 0)
		return 0;
	if (q->ge_bad)
		q->ge_bad = !chance(&q->rng, q->spec.ge_r);
	else
		q->ge_bad = chance(&q->rng, q->spec.ge_p);
	return chance(&q->rng, q->ge_bad ? q->spec.ge_bad : q->spec.ge_good);
}

/* Flip one bit past the Ethernet header: the parser's checks (mostly the ICRC) must catch it. Returns the
 * frame to go on with (a copy when the sender still shares it), or NULL when it was lost instead. */
static struct rte_mbuf *
corrupt(struct fault_queue *q, struct rte_mbuf *m)
{
	uint32_t span = (uint32_t)m->data_len - RTE_ETHER_HDR_LEN;
	uint32_t at = RTE_ETHER_HDR_LEN + (uint32_t)(next_random(&q->rng) % span);
	uint8_t flip = (uint8_t)(1u << (next_random(&q->rng) & 7));

	m = own_frame(q, m);
	if (m == NULL)
		return NULL;
	rte_pktmbuf_mtod(m, uint8_t *)[at] ^= flip;
	q->counts.corrupted++;
	return m;
}

/* The per-frame faults, in a fixed order of draws (a seed repeats a run). */
static void
impair(struct fault_queue *q, struct rte_mbuf *m, uint64_t now)
{
	if (chance(&q->rng, q->spec.drop)) {
		lose(q, m, NULL);
		return;
	}
	if (burst_lost(q)) {
		lose(q, m, &q->counts.burst_dropped);
		return;
	}
	if (chance(&q->rng, q->spec.corrupt) && m->data_len > RTE_ETHER_HDR_LEN) {
		m = corrupt(q, m);
		if (m == NULL)
			return;
	}
	if (chance(&q->rng, q->spec.ecn)) {
		m = mark_ce(q, m);
		if (m == NULL)
			return;
	}
	if (chance(&q->rng, q->spec.duplicate)) {
		struct rte_mbuf *copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);

		if (copy != NULL) {
			send_out(q, copy);
			q->counts.duplicated++;
		}
	}
	if (q->held < MAX_DEPTH && chance(&q->rng, q->spec.reorder)) {
		q->hold[q->held++] = (struct held_frame){ .m = m, .countdown = q->spec.depth,
							  .until_ns = now + q->spec.delay_us * 1000ull };
		q->counts.reordered++;
		return;
	}
	send_out(q, m);
}

static void
admit(struct fault_queue *q, struct rte_mbuf *m, uint64_t now)
{
	q->counts.frames++;
	/* Every later frame brings the held ones closer to their turn. */
	release_held(q, 1, now);
	if (link_is_down(q, now)) {
		lose(q, m, &q->counts.down_dropped);
		return;
	}
	if (!selected(q, m)) {
		q->counts.exempt++;
		send_out(q, m);
		return;
	}
	impair(q, m, now);
}

/* What the rate limit lets through since the last poll: Mbit/s = 1e6 / 8 bytes per second = 1.25e-4 bytes
 * per nanosecond, up to the bucket's size. The link serves by the polling lcore's time: of a gap in which
 * the lcore was away (the senders behind it with it), only AWAY_NS counts, so that a starved lcore neither
 * loses the link's capacity while it runs nor drains the queue at once when it comes back. */
static void
refill(struct fault_queue *q, uint64_t now)
{
	struct fault_link *l = q->link;
	uint64_t dt;

	if (q->spec.rate_mbps == 0)
		return;
	dt = RTE_MIN(now - l->refill_ns, AWAY_NS);
	l->served_ns += dt;
	l->tokens += (double)dt * q->spec.rate_mbps * 1.25e-4;
	l->tokens = RTE_MIN(l->tokens, (double)q->spec.bucket);
	l->refill_ns = now;
}

/* Hand the outbound queue's frames to the caller, as many as its array and the token bucket allow. A frame
 * goes while the bucket is not in debt, so a frame larger than the bucket still passes, followed by a wait. */
static uint16_t
drain(struct fault_queue *q, struct rte_mbuf **pkts, uint16_t max)
{
	struct fault_link *l = q->link;
	uint16_t n = 0;

	while (l->out_len > 0 && n < max) {
		struct rte_mbuf *m = l->out[l->out_head];

		if (q->spec.rate_mbps != 0) {
			if (l->tokens <= 0)
				break;
			l->tokens -= m->pkt_len;
		}
		pkts[n++] = m;
		l->out_head = (l->out_head + 1) & (MAX_QUEUE - 1);
		l->out_len--;
	}
	return n;
}

static uint16_t
rx_faults(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max, void *arg)
{
	struct fault_queue *q = arg;
	uint64_t now = clock_ns();
	uint16_t out = 0;

	(void)port;
	(void)queue;
	if (__atomic_load_n(&q->requested, __ATOMIC_ACQUIRE) != q->applied) {
		take_spec(q, &q->next, now);
		__atomic_store_n(&q->applied, q->requested, __ATOMIC_RELEASE);
	}
	refill(q, now);
	/* Frames go out while others still come in (the token bucket serves them as they arrive), written
	 * over the array's entries already read: after frame i, at most i + 1 of them. */
	for (uint16_t i = 0; i < n; i++) {
		admit(q, pkts[i], now);
		out += drain(q, pkts + out, (uint16_t)(i + 1 - out));
	}
	/* Held frames come out on a quiet link too, only later: after K idle polls, or their delay. */
	release_held(q, n == 0 && q->spec.delay_us == 0, now);
	return out + drain(q, pkts + out, (uint16_t)(max - out));
}

/* ------------------------------------------------------------------------------------------------------ */
/* The spec                                                                                                 */

enum key_kind { KEY_PROB, KEY_U32, KEY_SEED, KEY_PORT, KEY_FRAMES };

struct fault_key {
	const char *name;
	enum key_kind kind;
	size_t off;
	uint32_t min;
	uint32_t max;
	const char *unit;
};

#define PROB(n, f) { n, KEY_PROB, offsetof(struct rnic_fault_spec, f), 0, 0, NULL }
#define U32(n, f, lo, hi, u) { n, KEY_U32, offsetof(struct rnic_fault_spec, f), lo, hi, u }

static const struct fault_key keys[] = {
	{ "port", KEY_PORT, 0, 0, RNIC_MAX_DEVICES - 1, "a device index" },
	PROB("drop", drop),
	PROB("ge_p", ge_p), PROB("ge_r", ge_r), PROB("ge_bad", ge_bad), PROB("ge_good", ge_good),
	PROB("reorder", reorder),
	U32("depth", depth, 1, MAX_DEPTH, "frames"),
	U32("delay", delay_us, 1, 10000000, "microseconds"),
	PROB("duplicate", duplicate),
	PROB("corrupt", corrupt),
	PROB("ecn", ecn),
	U32("down", down_ms, 1, MAX_MS, "milliseconds"),
	U32("at", down_at_ms, 0, MAX_MS, "milliseconds"),
	U32("every", down_every_ms, 1, MAX_MS, "milliseconds"),
	U32("rate", rate_mbps, 1, 1000000, "Mbit/s"),
	U32("queue", queue, 1, MAX_QUEUE, "frames"),
	U32("bucket", bucket, 64, 1u << 24, "bytes"),
	U32("kmin", kmin, 0, MAX_QUEUE, "frames"),
	U32("kmax", kmax, 1, MAX_QUEUE, "frames"),
	PROB("pmax", pmax),
	{ "only", KEY_FRAMES, 0, 0, 0, NULL },
	{ "seed", KEY_SEED, 0, 0, 0, NULL },
};

/* Names that mean nothing without another one. */
static const struct {
	const char *name;
	const char *needs;
} needs[] = {
	{ "depth", "reorder" }, { "delay", "reorder" }, { "at", "down" }, { "every", "down" },
	{ "queue", "rate" }, { "bucket", "rate" }, { "ge_r", "ge_p" }, { "ge_bad", "ge_p" },
	{ "ge_good", "ge_p" }, { "ge_p", "ge_r" }, { "kmax", "rate" }, { "kmin", "kmax" }, { "pmax", "kmax" },
};

static int
key_index(const char *name)
{
	for (unsigned int k = 0; k < RTE_DIM(keys); k++)
		if (strcmp(keys[k].name, name) == 0)
			return (int)k;
	return -1;
}

static int
parse_frames(const char *v, enum rnic_fault_frames *out)
{
	static const char *const names[] = { "all", "responses", "requests", "gsi" };

	for (unsigned int i = 0; i < RTE_DIM(names); i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = (enum rnic_fault_frames)i;
			return 0;
		}
	}
	RNIC_LOG(ERR, "--fault only=%s: all, responses, requests or gsi", v);
	return -EINVAL;
}

static int
parse_value(const struct fault_key *k, const char *v, struct rnic_fault_spec *spec)
{
	char *end;
	double p;
	unsigned long long u;

	switch (k->kind) {
	case KEY_PROB:
		p = strtod(v, &end);
		if (end == v || *end != '\0' || !(p >= 0 && p <= 1))
			break;
		*(double *)(void *)((char *)spec + k->off) = p;
		return 0;
	case KEY_FRAMES:
		return parse_frames(v, &spec->frames);
	case KEY_SEED:
		spec->seed = strtoull(v, &end, 0);
		if (end == v || *end != '\0' || v[0] == '-') {
			RNIC_LOG(ERR, "--fault seed=%s: a number", v);
			return -EINVAL;
		}
		return 0;
	case KEY_U32:
	case KEY_PORT:
		u = strtoull(v, &end, 10);
		if (end == v || *end != '\0' || v[0] == '-' || u < k->min || u > k->max)
			break;
		if (k->kind == KEY_PORT)
			spec->port = (int)u;
		else
			*(uint32_t *)(void *)((char *)spec + k->off) = (uint32_t)u;
		return 0;
	}
	if (k->kind == KEY_PROB)
		RNIC_LOG(ERR, "--fault %s=%s: a probability from 0 to 1", k->name, v);
	else
		RNIC_LOG(ERR, "--fault %s=%s: %s, %u to %u", k->name, v, k->unit, k->min, k->max);
	return -EINVAL;
}

/* The names given together: each one's partner present, a period longer than what repeats in it. */
static int
check_spec(const struct rnic_fault_spec *spec, uint64_t given)
{
	for (unsigned int i = 0; i < RTE_DIM(needs); i++) {
		if ((given >> key_index(needs[i].name) & 1) && !(given >> key_index(needs[i].needs) & 1)) {
			RNIC_LOG(ERR, "--fault %s= needs %s=", needs[i].name, needs[i].needs);
			return -EINVAL;
		}
	}
	if (spec->kmax != 0 && spec->kmin >= spec->kmax) {
		RNIC_LOG(ERR, "--fault kmin=%u: must be below kmax=%u", spec->kmin, spec->kmax);
		return -EINVAL;
	}
	if (spec->down_every_ms != 0 && spec->down_every_ms <= spec->down_ms) {
		RNIC_LOG(ERR, "--fault every=%u: the period must be longer than down=%u", spec->down_every_ms,
			 spec->down_ms);
		return -EINVAL;
	}
	return 0;
}

int
rnic_fault_parse(const char *text, struct rnic_fault_spec *spec)
{
	char buf[512], *save;
	uint64_t given = 0;
	int ret = 0;

	*spec = (struct rnic_fault_spec){ .depth = 3, .ge_bad = 1, .queue = DEFAULT_QUEUE, .bucket = DEFAULT_BUCKET,
					  .seed = 1, .port = -1 };
	if (strlen(text) >= sizeof(buf)) {
		RNIC_LOG(ERR, "--fault: longer than %zu characters", sizeof(buf) - 1);
		return -EINVAL;
	}
	strcpy(buf, text);
	for (char *item = strtok_r(buf, ",", &save); item != NULL && ret == 0; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		int k;

		if (eq == NULL) {
			RNIC_LOG(ERR, "--fault %s: expected name=value", item);
			return -EINVAL;
		}
		*eq++ = '\0';
		k = key_index(item);
		if (k < 0) {
			RNIC_LOG(ERR, "--fault: unknown fault '%s' (port, drop, ge_p, ge_r, ge_bad, ge_good, reorder, "
				 "depth, delay, duplicate, corrupt, ecn, down, at, every, rate, queue, bucket, kmin, kmax, pmax, only, "
				 "seed)", item);
			return -EINVAL;
		}
		given |= 1ull << k;
		ret = parse_value(&keys[k], eq, spec);
	}
	/* A delay alone bounds the hold by time: the frame count then allows the most. */
	if (ret == 0 && (given >> key_index("delay") & 1) && !(given >> key_index("depth") & 1))
		spec->depth = MAX_DEPTH;
	return ret != 0 ? ret : check_spec(spec, given);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Ports                                                                                                    */

int
rnic_fault_attach_specs(const char *const *texts, unsigned int n, const uint16_t *ports, unsigned int nb_ports,
			uint16_t nb_queues)
{
	struct rnic_fault_spec spec[RNIC_MAX_DEVICES + 1];
	int ret = 0;

	if (n > RTE_DIM(spec)) {
		RNIC_LOG(ERR, "--fault: at most %u specs (one per device and one for every port)",
			 (unsigned int)RTE_DIM(spec));
		return -EINVAL;
	}
	for (unsigned int i = 0; i < n && ret == 0; i++) {
		ret = rnic_fault_parse(texts[i], &spec[i]);
		if (ret == 0 && spec[i].port >= (int)nb_ports) {
			RNIC_LOG(ERR, "--fault port=%d: there are %u devices", spec[i].port, nb_ports);
			ret = -EINVAL;
		}
	}
	for (unsigned int p = 0; p < nb_ports && ret == 0; p++) {
		const struct rnic_fault_spec *chosen = NULL;

		for (unsigned int i = 0; i < n; i++)
			if (spec[i].port == (int)p || (spec[i].port == -1 && (chosen == NULL || chosen->port == -1)))
				chosen = &spec[i];
		if (chosen != NULL)
			ret = rnic_fault_attach(ports[p], nb_queues, chosen);
	}
	return ret;
}

int
rnic_fault_attach(uint16_t port_id, uint16_t nb_queues, const struct rnic_fault_spec *spec)
{
	struct fault_queue *q;
	struct fault_link *link;
	unsigned int p = faults.nb_ports;

	if (p == MAX_FAULT_PORTS || nb_queues > RNIC_PORT_MAX_QUEUES)
		return -ENOSPC;
	q = rte_zmalloc("rnic_fault", sizeof(*q) * nb_queues, RTE_CACHE_LINE_SIZE);
	link = rte_zmalloc("rnic_fault_link", sizeof(*link), RTE_CACHE_LINE_SIZE);
	if (q == NULL || link == NULL) {
		rte_free(q);
		rte_free(link);
		return -ENOMEM;
	}
	for (uint16_t i = 0; i < nb_queues; i++) {
		q[i].port_id = port_id;
		q[i].queue_id = i;
		q[i].link = link;
		take_spec(&q[i], spec, clock_ns());
		q[i].cb = rte_eth_add_rx_callback(port_id, i, rx_faults, &q[i]);
		if (q[i].cb == NULL) {
			RNIC_LOG(ERR, "port %u: cannot add the fault layer: %s", port_id, rte_strerror(rte_errno));
			for (uint16_t j = 0; j < i; j++)
				rte_eth_remove_rx_callback(port_id, j, q[j].cb);
			rte_free(q);
			rte_free(link);
			return -rte_errno;
		}
	}
	faults.port[p] = port_id;
	faults.nb_queues[p] = nb_queues;
	faults.queue[p] = q;
	faults.link[p] = link;
	faults.nb_ports++;
	return 0;
}

/* The fault layer of a port (its index in faults), or -1. */
static int
find_port(uint16_t port_id)
{
	for (unsigned int p = 0; p < faults.nb_ports; p++)
		if (faults.port[p] == port_id)
			return (int)p;
	return -1;
}

int
rnic_fault_update(uint16_t port_id, const struct rnic_fault_spec *spec)
{
	int p = find_port(port_id);

	if (p < 0)
		return -ENOENT;
	for (uint16_t i = 0; i < faults.nb_queues[p]; i++) {
		struct fault_queue *q = &faults.queue[p][i];
		uint32_t asked = q->requested;

		/* next belongs to the lcore until it took the previous update. */
		for (int us = 0; __atomic_load_n(&q->applied, __ATOMIC_ACQUIRE) != asked; us += 100) {
			if (us >= UPDATE_WAIT_US) {
				RNIC_LOG(ERR, "port %u queue %u: the fault layer is not polled", port_id, i);
				return -EBUSY;
			}
			rte_delay_us_sleep(100);
		}
		q->next = *spec;
		__atomic_store_n(&q->requested, asked + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

int
rnic_fault_link_down(uint16_t port_id, uint32_t ms)
{
	int p = find_port(port_id);
	uint64_t until = clock_ns() + ms * NS_PER_MS;

	if (p < 0)
		return -ENOENT;
	for (uint16_t i = 0; i < faults.nb_queues[p]; i++)
		__atomic_store_n(&faults.queue[p][i].down_until_ns, ms != 0 ? until : 0, __ATOMIC_RELAXED);
	return 0;
}

void
rnic_fault_detach_all(void)
{
	for (unsigned int p = 0; p < faults.nb_ports; p++) {
		struct fault_link *l = faults.link[p];

		for (uint16_t i = 0; i < faults.nb_queues[p]; i++) {
			struct fault_queue *q = &faults.queue[p][i];

			rte_eth_remove_rx_callback(faults.port[p], i, q->cb);
			for (uint32_t h = 0; h < q->held; h++)
				rte_pktmbuf_free(q->hold[h].m);
		}
		for (uint32_t k = 0; k < l->out_len; k++)
			rte_pktmbuf_free(l->out[(l->out_head + k) & (MAX_QUEUE - 1)]);
		rte_free(faults.queue[p]);
		rte_free(l);
	}
	memset(&faults, 0, sizeof(faults));
}

void
rnic_fault_get_counts(uint16_t port_id, struct rnic_fault_counts *c)
{
	int p = find_port(port_id);

	memset(c, 0, sizeof(*c));
	for (uint16_t i = 0; p >= 0 && i < faults.nb_queues[p]; i++) {
		const uint64_t *from = (const uint64_t *)(const void *)&faults.queue[p][i].counts;
		uint64_t *to = (uint64_t *)(void *)c;

		for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
			to[k] += from[k];
	}
	if (p >= 0)
		c->served_ns = faults.link[p]->served_ns;
}
