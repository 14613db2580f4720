/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015), with mlx5's
 * parameters (struct rnic_cc_params, --cc; doc/congestion.md):
 * - the notification point: a CE-marked packet for a QP has that QP send a CNP (BTH opcode 0x81, BECN) to
 *   its peer QP, at most one per np_min_time_between_cnps per QP and side (the responder for requests, the
 *   completer for responses: each on its own lcore, with its own TX queue);
 * - the reaction point: a QP's rate, cut on CNPs (by alpha, the estimate of how often CNPs come) and
 *   recovered by a timer and a byte counter (fast recovery, additive, then hyper increase), enforced by its
 *   pacer (rnic_pacer.h). A QP runs it only from its first CNP until its rate is back at the line rate:
 *   without congestion it costs nothing. Its timers are not timers: each is worked out when the QP next
 *   sends or hears a CNP, for the periods that passed since in the engine's time (rnic_requester_clock).
 */
#ifndef RNIC_DCQCN_H
#define RNIC_DCQCN_H

#include "rnic_pipeline.h"

/* The pipeline's DCQCN parameters from the device's (the line rate: rp_max_rate, or the port's speed). */
void rnic_cc_conf_init(struct rnic_cc_conf *c, const struct rnic_device *dev);

/*
 * Notification point: a CE-marked frame for the connected QP came in on this side (the responder: tx its
 * TX buffer, last and dmac its context's; the completer: the requester's). Sends a CNP unless this side
 * sent one less than np_min_time_between_cnps ago.
 */
void rnic_np_marked(struct rnic_pipeline *p, struct rnic_tx_buffer *tx, struct rnic_qp *qp, uint64_t *last,
		    uint8_t dmac[6], uint8_t *dmac_known);

/* Reaction point, on the requester's lcore: a CNP frame (d) arrived at the completer. */
void rnic_dcqcn_cnp(struct rnic_pipeline *p, const struct rnic_pkt_desc *d);

/* The QP's reaction to a CNP at now: its first starts DCQCN at the line rate with the initial alpha; then
 * a cut, unless one was made within the monitor period (alpha still counts the CNP). */
void rnic_dcqcn_react(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint64_t now);

/* The periods that passed until now: alpha's decay, the increase timer's events. */
void rnic_dcqcn_advance(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint64_t now);

/* The byte counter: bytes more went out. */
void rnic_dcqcn_sent(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint32_t bytes);

#endif /* RNIC_DCQCN_H */
