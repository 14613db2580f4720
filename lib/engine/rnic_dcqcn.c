/* SPDX-License-Identifier: BSD-3-Clause
 * DCQCN's notification and reaction points (rnic_dcqcn.h). The reaction point follows mlx5's form of the
 * algorithm: alpha in 1/1024, updated every rp_dce_tcp_rtt (x g / 1024, plus 1 - g / 1024 when a CNP came in
 * the period); a cut at most every rp_rate_reduce_monitor_period (a CNP within it cuts at its end; target =
 * current; current less current x alpha / 2^rp_gd, at most less rp_min_dec_fac %); an increase on every
 * rp_time_reset of the timer and every rp_byte_reset bytes sent (target + rp_hai_rate once both counts
 * passed rp_threshold, + rp_ai_rate once either reached it, none before: fast recovery; then current =
 * (current + target) / 2).
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "rnic_dcqcn.h"
#include "rnic_pacer.h"
#include "rnic_provider.h"

#define LINE_RATE_FALLBACK_MBPS 100000u	/* a port that reports no speed */
#define MAX_LINE_RATE_MBPS 4000000u	/* what a kbit/s rate in 32 bits holds */
#define MAX_INCREASES_PER_CALL 4096u	/* a QP back after a long pause catches up over a few calls */

/* The port's link speed in Mbit/s; 0 when it reports none. */
static uint32_t
port_speed_mbps(uint16_t port_id)
{
	struct rte_eth_link link;

	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(port_id, &link) != 0 || link.link_speed == RTE_ETH_SPEED_NUM_NONE ||
	    link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
		return 0;
	return link.link_speed;
}

void
rnic_cc_conf_init(struct rnic_cc_conf *c, const struct rnic_device *dev)
{
	const struct rnic_cc_params *cp = &dev->cc;
	uint64_t us = RTE_MAX(rte_get_tsc_hz() / 1000000, (uint64_t)1);
	uint32_t speed = port_speed_mbps(dev->port_id);
	uint32_t line = cp->rp_max_rate != 0 ? cp->rp_max_rate : speed != 0 ? speed : LINE_RATE_FALLBACK_MBPS;

	line = RTE_MIN(line, MAX_LINE_RATE_MBPS);
	*c = (struct rnic_cc_conf){
		.cnp_tclass = (uint8_t)(cp->np_cnp_dscp << 2 | RNIC_ECN_ECT0),
		.cnp_gap = cp->np_min_time_between_cnps * us,
		.time_reset = cp->rp_time_reset * us,
		.alpha_period = cp->rp_dce_tcp_rtt * us,
		.away_gap = RNIC_AWAY_US * us,
		.cut_period = cp->rp_rate_reduce_monitor_period * us,
		.byte_reset = cp->rp_byte_reset * 64,
		.threshold = cp->rp_threshold,
		.ai = cp->rp_ai_rate * 1000,
		.hai = cp->rp_hai_rate * 1000,
		.min_rate = RTE_MIN(cp->rp_min_rate, line) * 1000,
		.line_rate = line * 1000,
		/* A port does not hold a QP to a rate below its speed (nor a software port to its own): DCQCN
		 * must. At the port's speed the QP can go unpaced, as a NIC's QP does at its link's. */
		.cap_paced = cp->rp_max_rate != 0 && (speed == 0 || cp->rp_max_rate < speed),
		.gd = cp->rp_gd,
		.min_dec_fac = cp->rp_min_dec_fac,
		.g = cp->rp_dce_tcp_g,
		.initial_alpha = cp->rp_initial_alpha_value,
	};
}

/* ------------------------------------------------------------------------------------------------------ */
/* Notification point                                                                                      */

void
rnic_np_marked(struct rnic_pipeline *p, struct rnic_tx_buffer *tx, struct rnic_qp *qp, uint64_t *last,
	       uint8_t dmac[6], uint8_t *dmac_known)
{
	struct rnic_qp_priv *q = rnic_qp_priv(qp);
	struct rnic_pkt_desc d;
	uint64_t now;

	if (!__atomic_load_n(&p->dev->cc.np_enable, __ATOMIC_RELAXED) || qp->qp_type == RNIC_QPT_UD)
		return;		/* a UD sender is per WQE: no QP to notify (doc/congestion.md) */
	now = rte_rdtsc();
	if (*last != 0 && now - *last < p->cc.cnp_gap)
		return;
	if (rnic_tx_room(tx) == 0)
		return;		/* the next CE-marked frame tries again */
	memset(&d, 0, sizeof(d));
	if (rnic_fill_route(tx, p->dev, &q->attr.ah_attr, qp->qp_num, q->attr.dest_qp_num, dmac, dmac_known,
			    &d) != 0)
		return;
	rnic_cnp_fill(&d, p->cc.cnp_tclass, q->attr.dest_qp_num);
	if (rnic_send_control(p, tx, &d) != 0)
		return;
	*last = now;
	tx->stats->cnp_sent++;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Reaction point                                                                                          */

/* The rate comes back: the target by stage (fast recovery, additive, hyper), then halfway to it (rounded
 * up, so that it reaches the line rate). Back there, the QP stops running DCQCN, unless the line rate is an
 * rp_max_rate below the port's speed: it then stays paced at it. */
static void
increase(const struct rnic_cc_conf *c, struct rnic_dcqcn_rp *rp)
{
	uint32_t lo = RTE_MIN(rp->t_stage, rp->bc_stage), hi = RTE_MAX(rp->t_stage, rp->bc_stage);
	uint64_t rt = rp->rt;

	if (lo > c->threshold)
		rt += c->hai;
	else if (hi >= c->threshold)
		rt += c->ai;
	rp->rt = (uint32_t)RTE_MIN(rt, (uint64_t)c->line_rate);
	rp->rc = (uint32_t)(((uint64_t)rp->rc + rp->rt + 1) / 2);
	if (rp->rc >= c->line_rate && !c->cap_paced)
		rp->active = 0;
}

/* A cut: the target is the rate before it; the rate loses alpha / 2 of itself (with rp_gd 11), at most
 * rp_min_dec_fac % of it, down to rp_min_rate; the increase stages start again. */
static void
cut(struct rnic_pipeline *p, struct rnic_dcqcn_rp *rp, uint64_t now)
{
	const struct rnic_cc_conf *c = &p->cc;
	uint64_t rc = rp->rc;
	uint64_t by = RTE_MIN((rc * rp->alpha) >> c->gd, rc * (100 - c->min_dec_fac) / 100);

	rp->rt = rp->rc;
	rp->rc = (uint32_t)RTE_MAX(rc - by, (uint64_t)c->min_rate);
	rp->t_stage = rp->bc_stage = 0;
	rp->bytes = 0;
	rp->inc_tsc = now;
	rp->cut_tsc = now;
	RNIC_STATS(p, COMPLETER)->rate_cuts++;
}

/* alpha for the periods since alpha_tsc: the first with the CNP it saw, if any, the rest decaying. */
static void
alpha_periods(const struct rnic_cc_conf *c, struct rnic_dcqcn_rp *rp, uint64_t now)
{
	uint64_t n;

	if (c->alpha_period == 0 || now - rp->alpha_tsc < c->alpha_period)
		return;
	n = (now - rp->alpha_tsc) / c->alpha_period;
	rp->alpha_tsc += n * c->alpha_period;
	if (rp->cnp_in_period) {
		rp->alpha = (uint16_t)RTE_MIN(rp->alpha * c->g / 1024 + 1024 - c->g, 1023u);
		rp->cnp_in_period = 0;
		n--;
	}
	/* Each step takes at least 1 off (g < 1024), so alpha reaches 0 within 1023 of them. */
	while (n-- > 0 && rp->alpha != 0 && c->g < 1024)
		rp->alpha = (uint16_t)(rp->alpha * c->g / 1024);
}

/* The rate moved from rc (or DCQCN ended): the pacer follows. */
static void
rate_moved(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint32_t rc)
{
	if (q->cc.rp.rc != rc || !q->cc.rp.active)
		rnic_pacer_update(p, q);
}

/* The time the lcore was away since the QP's timers last moved is not theirs: they move on past it (to now
 * at most: the gap may have begun before they last moved, with a CNP the completer handled in it). */
static void
skip_away(const struct rnic_pipeline *p, struct rnic_dcqcn_rp *rp, uint64_t now)
{
	uint64_t gap = p->away_cycles - rp->away;

	rp->alpha_tsc = RTE_MIN(rp->alpha_tsc + gap, now);
	rp->inc_tsc = RTE_MIN(rp->inc_tsc + gap, now);
	rp->cut_tsc = RTE_MIN(rp->cut_tsc + gap, now);
	rp->away = p->away_cycles;
}

/* alpha's periods and the increase timer's events until t. */
static void
timers_until(const struct rnic_cc_conf *c, struct rnic_dcqcn_rp *rp, uint64_t t)
{
	alpha_periods(c, rp, t);
	for (unsigned int i = 0; rp->active && t - rp->inc_tsc >= c->time_reset && i < MAX_INCREASES_PER_CALL; i++) {
		rp->inc_tsc += RTE_MAX(c->time_reset, (uint64_t)1);
		increase(c, rp);	/* at the stage reached before this event, as mlx5 */
		rp->t_stage++;
	}
}

void
rnic_dcqcn_advance(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint64_t now)
{
	const struct rnic_cc_conf *c = &p->cc;
	struct rnic_dcqcn_rp *rp = &q->cc.rp;
	uint32_t rc = rp->rc;

	skip_away(p, rp, now);
	/* A CNP that came within the monitor period cuts at its end (mlx5: a cut when a CNP came in the
	 * period), by alpha as it is then. */
	if (rp->cut_due && now - rp->cut_tsc >= c->cut_period) {
		uint64_t at = rp->cut_tsc + c->cut_period;

		timers_until(c, rp, at);
		rp->cut_due = 0;
		if (rp->active)
			cut(p, rp, at);
	}
	timers_until(c, rp, now);
	rate_moved(p, q, rc);
}

void
rnic_dcqcn_sent(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint32_t bytes)
{
	struct rnic_dcqcn_rp *rp = &q->cc.rp;
	uint32_t rc = rp->rc;

	rp->bytes += bytes;
	while (rp->active && rp->bytes >= p->cc.byte_reset) {
		rp->bytes -= p->cc.byte_reset;
		increase(&p->cc, rp);
		rp->bc_stage++;
	}
	rate_moved(p, q, rc);
}

void
rnic_dcqcn_react(struct rnic_pipeline *p, struct rnic_qp_priv *q, uint64_t now)
{
	struct rnic_dcqcn_rp *rp = &q->cc.rp;

	if (rp->active) {
		rnic_dcqcn_advance(p, q, now);
		rp->cnp_in_period = 1;
	}
	if (!rp->active) {
		*rp = (struct rnic_dcqcn_rp){
			.active = 1, .alpha = (uint16_t)p->cc.initial_alpha, .rc = p->cc.line_rate,
			.rt = p->cc.line_rate, .alpha_tsc = now, .inc_tsc = now, .away = p->away_cycles,
		};
	}
	if (rp->cut_tsc == 0 || now - rp->cut_tsc >= p->cc.cut_period)
		cut(p, rp, now);
	else
		rp->cut_due = 1;
	rnic_pacer_update(p, q);
}

void
rnic_dcqcn_cnp(struct rnic_pipeline *p, const struct rnic_pkt_desc *d)
{
	struct rnic_qp *qp = rnic_qp_lookup(p->dev, d->dqpn);
	struct rnic_pipeline_stats *st = RNIC_STATS(p, COMPLETER);

	st->cnp_received++;
	if (!__atomic_load_n(&p->dev->cc.rp_enable, __ATOMIC_RELAXED) || qp == NULL || qp->qp_type == RNIC_QPT_UD ||
	    __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) != RNIC_QPS_RTS ||
	    !rnic_from_peer(p->dev, rnic_qp_priv(qp), d)) {
		st->cnp_ignored++;
		return;
	}
	st->cnp_handled++;
	rnic_dcqcn_react(p, rnic_qp_priv(qp), rte_rdtsc());
}

/* ------------------------------------------------------------------------------------------------------ */
/* Switched while the engine runs                                                                          */

int
rnic_set_cc(struct rnic_context *ctx, int rp_enable, int np_enable)
{
	if (ctx == NULL || (rp_enable != 0 && rp_enable != 1) || (np_enable != 0 && np_enable != 1))
		return -EINVAL;
	return rnic_ctx_ops(ctx)->set_cc(ctx, rp_enable, np_enable);
}

/* The pipelines read the flags where they act on them (a CNP received, a CE-marked frame), so the next
 * one sees the switch; nothing else of DCQCN depends on them. */
int
rnic_local_set_cc(struct rnic_context *ctx, int rp_enable, int np_enable)
{
	struct rnic_device *dev = rnic_ctx_dev(ctx);

	__atomic_store_n(&dev->cc.rp_enable, (uint32_t)rp_enable, __ATOMIC_RELAXED);
	__atomic_store_n(&dev->cc.np_enable, (uint32_t)np_enable, __ATOMIC_RELAXED);
	return 0;
}
