/* SPDX-License-Identifier: BSD-3-Clause
 * Fault injection at the port: what a lossy network does to the frames a port receives — drop, reorder
 * (hold a frame back behind the next k), duplicate, corrupt one byte — each with a probability, from a
 * seeded generator so that a run can be repeated exactly. Applied in the port's RX callbacks, so every
 * frame the engine sees has been through it; giving it to both ports of a link covers both directions.
 */
#ifndef RNIC_FAULT_H
#define RNIC_FAULT_H

#include <stdint.h>

struct rnic_fault_spec {
	double drop;		/* probabilities per frame, 0..1 */
	double reorder;
	double duplicate;
	double corrupt;
	uint32_t depth;		/* a reordered frame comes out after this many later frames (1..64) */
	uint64_t seed;
	int port;		/* the device (by index) whose port it applies to; -1: every port */
};

struct rnic_fault_counts {
	uint64_t frames;	/* frames that went through the layer */
	uint64_t dropped;
	uint64_t reordered;
	uint64_t duplicated;
	uint64_t corrupted;
};

/*
 * Parse "port=N,drop=P,reorder=P,duplicate=P,corrupt=P,depth=K,seed=S" (any subset; P in [0, 1]; without
 * port=, every port). Returns 0, or -EINVAL with the reason logged.
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

/* Remove every port's fault layer, freeing the frames it still held back. */
void rnic_fault_detach_all(void);

/* What the layer did to a port's frames so far (zeros for a port without it). */
void rnic_fault_get_counts(uint16_t port_id, struct rnic_fault_counts *counts);

#endif /* RNIC_FAULT_H */
