/* SPDX-License-Identifier: BSD-3-Clause
 * Fault injection in the ports' RX callbacks (rnic_fault.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "rnic_fault.h"
#include "rnic_port.h"
#include "rnic_priv.h"

#define MAX_DEPTH 64
#define MAX_BURST 256		/* larger RX bursts pass through untouched */
#define MAX_FAULT_PORTS RNIC_MAX_DEVICES

/* The state of one RX queue: owned by the lcore polling it, so no lock. */
struct fault_queue {
	uint64_t rng;
	uint32_t held;				/* frames held back for reordering */
	struct rte_mbuf *hold[MAX_DEPTH];
	uint32_t countdown[MAX_DEPTH];		/* later frames each still waits for */
	struct rnic_fault_counts counts;
	const struct rte_eth_rxtx_callback *cb;
	struct rnic_fault_spec spec;
};

static struct {
	unsigned int nb_ports;
	uint16_t port[MAX_FAULT_PORTS];
	uint16_t nb_queues[MAX_FAULT_PORTS];
	struct fault_queue *queue[MAX_FAULT_PORTS];
} faults;

/* xorshift64*: small, fast, and the same sequence for the same seed on every machine. */
static uint64_t
next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static int
chance(uint64_t *s, double p)
{
	return p > 0 && (double)(next_random(s) >> 11) * 0x1.0p-53 < p;
}

/* Release the held frames whose countdown ran out into out[]; returns how many. */
static uint16_t
release(struct fault_queue *q, struct rte_mbuf **out, uint16_t room, int tick)
{
	uint16_t n = 0;

	for (uint32_t i = 0; i < q->held;) {
		if (tick && q->countdown[i] > 0)
			q->countdown[i]--;
		if (q->countdown[i] == 0 && n < room) {
			out[n++] = q->hold[i];
			q->hold[i] = q->hold[--q->held];
			q->countdown[i] = q->countdown[q->held];
			continue;
		}
		i++;
	}
	return n;
}

static uint16_t
rx_faults(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max, void *arg)
{
	struct fault_queue *q = arg;
	struct rte_mbuf *in[MAX_BURST];
	uint16_t out = 0;

	(void)port;
	(void)queue;
	if (n > MAX_BURST)
		return n;
	/* An idle poll moves the held frames on too: a quiet link still delivers them, only later. */
	if (n == 0)
		return release(q, pkts, max, 1);
	memcpy(in, pkts, n * sizeof(in[0]));
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = in[i];

		q->counts.frames++;
		/* Every later frame brings the held ones closer to their turn. */
		out += release(q, pkts + out, (uint16_t)(max - out), 1);
		if (chance(&q->rng, q->spec.drop)) {
			q->counts.dropped++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (chance(&q->rng, q->spec.corrupt) && m->data_len > RTE_ETHER_HDR_LEN) {
			/* One bit past the Ethernet header: the parser's checks (mostly the ICRC) must catch it. */
			uint32_t span = (uint32_t)m->data_len - RTE_ETHER_HDR_LEN;
			uint32_t at = RTE_ETHER_HDR_LEN + (uint32_t)(next_random(&q->rng) % span);
			uint8_t flip = (uint8_t)(1u << (next_random(&q->rng) & 7));

			/* A frame the sender still holds (kept for retransmission) is shared: corrupt a copy, as a
			 * wire would, not the sender's frame. */
			if (rte_mbuf_refcnt_read(m) > 1 || RTE_MBUF_HAS_EXTBUF(m) || RTE_MBUF_CLONED(m)) {
				struct rte_mbuf *own = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);

				rte_pktmbuf_free(m);
				if (own == NULL) {
					q->counts.dropped++;	/* no mbuf for the copy: the frame is lost instead */
					continue;
				}
				m = own;
			}
			rte_pktmbuf_mtod(m, uint8_t *)[at] ^= flip;
			q->counts.corrupted++;
		}
		if (chance(&q->rng, q->spec.duplicate) && out + 1 < max) {
			struct rte_mbuf *copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);

			if (copy != NULL) {
				pkts[out++] = copy;
				q->counts.duplicated++;
			}
		}
		if (q->held < MAX_DEPTH && chance(&q->rng, q->spec.reorder)) {
			q->hold[q->held] = m;
			q->countdown[q->held++] = q->spec.depth;
			q->counts.reordered++;
			continue;
		}
		if (out < max)
			pkts[out++] = m;
		else
			rte_pktmbuf_free(m);	/* the caller's array is full: a drop the counters do not hide */
	}
	return out;
}

static int
parse_probability(const char *name, const char *v, double *out)
{
	char *end;

	*out = strtod(v, &end);
	if (end == v || *end != '\0' || !(*out >= 0 && *out <= 1)) {
		RNIC_LOG(ERR, "--fault %s=%s: a probability from 0 to 1", name, v);
		return -EINVAL;
	}
	return 0;
}

int
rnic_fault_parse(const char *text, struct rnic_fault_spec *spec)
{
	char buf[256], *save;
	int ret = 0;

	memset(spec, 0, sizeof(*spec));
	spec->depth = 3;
	spec->seed = 1;
	spec->port = -1;
	if (strlen(text) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, text);
	for (char *item = strtok_r(buf, ",", &save); item != NULL && ret == 0; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *end;

		if (eq == NULL) {
			RNIC_LOG(ERR, "--fault %s: expected name=value", item);
			return -EINVAL;
		}
		*eq++ = '\0';
		if (strcmp(item, "drop") == 0)
			ret = parse_probability(item, eq, &spec->drop);
		else if (strcmp(item, "reorder") == 0)
			ret = parse_probability(item, eq, &spec->reorder);
		else if (strcmp(item, "duplicate") == 0)
			ret = parse_probability(item, eq, &spec->duplicate);
		else if (strcmp(item, "corrupt") == 0)
			ret = parse_probability(item, eq, &spec->corrupt);
		else if (strcmp(item, "depth") == 0) {
			unsigned long d = strtoul(eq, &end, 10);

			if (end == eq || *end != '\0' || d < 1 || d > MAX_DEPTH) {
				RNIC_LOG(ERR, "--fault depth=%s: 1 to %d frames", eq, MAX_DEPTH);
				return -EINVAL;
			}
			spec->depth = (uint32_t)d;
		} else if (strcmp(item, "port") == 0) {
			unsigned long n = strtoul(eq, &end, 10);

			if (end == eq || *end != '\0' || n >= RNIC_MAX_DEVICES) {
				RNIC_LOG(ERR, "--fault port=%s: a device index, 0 to %d", eq, RNIC_MAX_DEVICES - 1);
				return -EINVAL;
			}
			spec->port = (int)n;
		} else if (strcmp(item, "seed") == 0) {
			spec->seed = strtoull(eq, &end, 0);
			if (end == eq || *end != '\0') {
				RNIC_LOG(ERR, "--fault seed=%s: a number", eq);
				return -EINVAL;
			}
		} else {
			RNIC_LOG(ERR, "--fault: unknown fault '%s' (port, drop, reorder, duplicate, corrupt, depth, seed)",
				 item);
			return -EINVAL;
		}
	}
	return ret;
}

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
	unsigned int p = faults.nb_ports;

	if (p == MAX_FAULT_PORTS || nb_queues > RNIC_PORT_MAX_QUEUES)
		return -ENOSPC;
	q = rte_zmalloc("rnic_fault", sizeof(*q) * nb_queues, RTE_CACHE_LINE_SIZE);
	if (q == NULL)
		return -ENOMEM;
	for (uint16_t i = 0; i < nb_queues; i++) {
		q[i].spec = *spec;
		/* Distinct, reproducible streams per port and queue (a zero state would stay zero). */
		q[i].rng = spec->seed * 0x9e3779b97f4a7c15ULL + ((uint64_t)port_id << 16 | i) + 1;
		q[i].cb = rte_eth_add_rx_callback(port_id, i, rx_faults, &q[i]);
		if (q[i].cb == NULL) {
			RNIC_LOG(ERR, "port %u: cannot add the fault layer: %s", port_id, rte_strerror(rte_errno));
			for (uint16_t j = 0; j < i; j++)
				rte_eth_remove_rx_callback(port_id, j, q[j].cb);
			rte_free(q);
			return -rte_errno;
		}
	}
	faults.port[p] = port_id;
	faults.nb_queues[p] = nb_queues;
	faults.queue[p] = q;
	faults.nb_ports++;
	return 0;
}

void
rnic_fault_detach_all(void)
{
	for (unsigned int p = 0; p < faults.nb_ports; p++) {
		for (uint16_t i = 0; i < faults.nb_queues[p]; i++) {
			struct fault_queue *q = &faults.queue[p][i];

			rte_eth_remove_rx_callback(faults.port[p], i, q->cb);
			for (uint32_t h = 0; h < q->held; h++)
				rte_pktmbuf_free(q->hold[h]);
		}
		rte_free(faults.queue[p]);
	}
	memset(&faults, 0, sizeof(faults));
}

void
rnic_fault_get_counts(uint16_t port_id, struct rnic_fault_counts *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned int p = 0; p < faults.nb_ports; p++) {
		if (faults.port[p] != port_id)
			continue;
		for (uint16_t i = 0; i < faults.nb_queues[p]; i++) {
			const struct rnic_fault_counts *q = &faults.queue[p][i].counts;

			c->frames += q->frames;
			c->dropped += q->dropped;
			c->reordered += q->reordered;
			c->duplicated += q->duplicated;
			c->corrupted += q->corrupted;
		}
	}
}
