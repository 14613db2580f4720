/* SPDX-License-Identifier: BSD-3-Clause
 * Fault injection at the port: what a real network does to the frames a port receives. Independent loss,
 * burst loss (a Gilbert-Elliott chain), reordering (a frame held back for K later frames or T microseconds),
 * duplication, a flipped bit, a link that goes down for a while, and a rate limit with a tail-dropping queue;
 * optionally only for responses (ACKs, NAKs, READ responses, atomic ACKs) or only for requests. Probabilities
 * come from a seeded generator so that a run can be repeated exactly. Applied in the port's RX callbacks, so
 * every frame the engine sees has been through it: the faults of port N are those of the direction towards
 * device N, and giving them to both ports of a link covers both directions (doc/engine.md, "Fault
 * injection"). The rate limit's queue is the port's, shared by its RX queues (one wire): they must all be
 * polled by one lcore.
 */
#ifndef RNIC_FAULT_H
#define RNIC_FAULT_H

#include <stdint.h>

/* Which frames the per-frame faults (drop, ge_*, reorder, duplicate, corrupt) act on. The link going down
 * and the rate limit act on every frame, as a real link's would. */
enum rnic_fault_frames {
	RNIC_FAULT_ALL,			/* every frame */
	RNIC_FAULT_RESPONSES,		/* RoCEv2 frames whose BTH opcode is a response (IBA 9.2.1: ACK/NAK,
					 * atomic ACK, READ response) */
	RNIC_FAULT_REQUESTS,		/* every other RoCEv2 frame */
	RNIC_FAULT_GSI,			/* RoCEv2 frames to QP1: the MADs of the CM (doc/cm.md) */
};

#define RNIC_FAULT_DEPTH_BINS 257

struct rnic_fault_spec {
	double drop;		/* probabilities per frame, 0..1 */
	double reorder;
	double duplicate;
	double corrupt;
	/* Gilbert-Elliott burst loss: per frame the chain moves good -> bad with ge_p and bad -> good with
	 * ge_r; a frame is lost with ge_bad in the bad state and ge_good in the good one. */
	double ge_p;
	double ge_r;
	double ge_bad;
	double ge_good;
	uint32_t depth;		/* a reordered frame comes out after this many later frames (1..64) */
	uint32_t delay_us;	/* ... or after this many microseconds, whichever is first (0: K idle polls) */
	uint32_t down_ms;	/* the link is down for this long (0: never) */
	uint32_t down_at_ms;	/* from this long after the spec took effect */
	uint32_t down_every_ms;	/* and again every this long (0: once) */
	uint32_t rate_mbps;	/* a rate limit in Mbit/s (0: none) */
	uint32_t queue;		/* frames waiting for the rate limit; more are tail-dropped */
	uint32_t bucket;	/* bytes the token bucket lets through at once */
	/* ECN marking, as a switch's RED/ECN queue (DCQCN's): a frame entering the rate limit's queue with
	 * kmin frames or more before it is marked CE with a probability rising linearly to pmax at kmax, and
	 * always from kmax on; ecn marks any frame with that probability. Only ECN-capable (ECT) frames are
	 * marked: the others pass as they are. */
	double ecn;
	uint32_t kmin;
	uint32_t kmax;		/* 0: no marking by queue depth */
	double pmax;
	enum rnic_fault_frames frames;
	uint64_t seed;
	int port;		/* the device (by index) whose port it applies to; -1: every port */
};

struct rnic_fault_counts {
	uint64_t frames;	/* frames that went through the layer */
	uint64_t dropped;	/* every frame lost in the layer, for whatever reason below or drop= */
	uint64_t burst_dropped;	/* lost by the Gilbert-Elliott chain */
	uint64_t down_dropped;	/* arrived while the link was down */
	uint64_t queue_dropped;	/* found the rate limit's queue full */
	uint64_t reordered;
	uint64_t duplicated;
	uint64_t corrupted;
	uint64_t delayed;	/* waited in the rate limit's queue */
	uint64_t exempt;	/* not of the kind only= names: passed without per-frame faults */
	uint64_t ecn_marked;	/* ECT frames marked CE (ecn=, or by the queue's depth) */
	/* The time the rate limit's link served, in ns: the time between polls, of a gap in which the
	 * polling lcore was away only a millisecond (its capacity is rate x this). */
	uint64_t served_ns;
	/* The rate limit's queue as each frame found it on arrival: depth[i] frames found i frames before
	 * them (the last bin: RNIC_FAULT_DEPTH_BINS - 1 or more). */
	uint64_t depth[RNIC_FAULT_DEPTH_BINS];
};

/*
 * Parse "name=value,..." (doc/engine.md lists the names: port, drop, ge_p, ge_r, ge_bad, ge_good, reorder,
 * depth, delay, duplicate, corrupt, ecn, down, at, every, rate, queue, bucket, kmin, kmax, pmax, only, seed). Returns 0, or -EINVAL
 * with the reason logged: an unknown name, a value out of range, or a name that needs another one (depth
 * and delay need reorder, at and every need down, queue, bucket and kmax need rate, kmin and pmax need kmax,
 * ge_r/ge_bad/ge_good need ge_p; kmin must be below kmax).
 */
int rnic_fault_parse(const char *text, struct rnic_fault_spec *spec);

/*
 * Give each of the nb_ports ports (device index i: ports[i]) its fault layer from the n specs: the last one
 * naming its index, else the last one without port=. 0, or a negative errno (a bad spec, or one naming a
 * device that does not exist).
 */
int rnic_fault_attach_specs(const char *const *texts, unsigned int n, const uint16_t *ports,
			    unsigned int nb_ports, uint16_t nb_queues);

/* Inject faults into what the port receives on its nb_queues RX queues. 0 or a negative errno. */
int rnic_fault_attach(uint16_t port_id, uint16_t nb_queues, const struct rnic_fault_spec *spec);

/*
 * Replace a port's faults while it runs (its spec's port field is ignored): each RX queue takes the new spec
 * at its next poll, with a fresh generator from its seed, time counted from then (down, at, every), held and
 * queued frames kept. 0, -ENOENT without a fault layer on the port, -EBUSY if a queue did not take the
 * previous update within a second (nobody polls it).
 */
int rnic_fault_update(uint16_t port_id, const struct rnic_fault_spec *spec);

/* Take the port's link down from now for ms milliseconds (0: up again now). 0 or -ENOENT. */
int rnic_fault_link_down(uint16_t port_id, uint32_t ms);

/* Remove every port's fault layer, freeing the frames it still held back. */
void rnic_fault_detach_all(void);

/* What the layer did to a port's frames so far (zeros for a port without it). */
void rnic_fault_get_counts(uint16_t port_id, struct rnic_fault_counts *counts);

/* The clock of the time-based faults, in nanoseconds (NULL: the TSC). For tests that step time by hand. */
void rnic_fault_set_clock(uint64_t (*now_ns)(void));

#endif /* RNIC_FAULT_H */
