/* SPDX-License-Identifier: BSD-3-Clause
 * QP1: the general services interface of a device (rnic_gsi.h, doc/cm.md).
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_malloc.h>

#include "rnic_gsi.h"
#include "rnic_qp.h"
#include "rnic_wire.h"

#define RECV_SLOT (RNIC_GRH_BYTES + RNIC_MAD_SIZE)
#define CQ_ENTRIES (RNIC_GSI_RECV + RNIC_GSI_SEND)
#define GSI_HOP_LIMIT 64
#define CM_CLASS 0x07
#define CM_CLASS_VERSION 2

static uint8_t *
recv_slot(const struct rnic_gsi *g, uint32_t i)
{
	return g->buf + (size_t)i * RECV_SLOT;
}

static uint8_t *
send_slot(const struct rnic_gsi *g, uint32_t i)
{
	return g->buf + (size_t)RNIC_GSI_RECV * RECV_SLOT + (size_t)i * RNIC_MAD_SIZE;
}

static int
post_recv(struct rnic_gsi *g, uint32_t i)
{
	struct rnic_sge sge = {
		.addr = (uintptr_t)recv_slot(g, i), .length = RECV_SLOT, .lkey = g->mr->lkey,
	};
	struct rnic_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct rnic_recv_wr *bad;

	return rnic_post_recv(g->qp, &wr, &bad);
}

/* RESET -> INIT -> RTR -> RTS, with QP1's Q_Key, as ib_mad brings its QP up; then every receive posted. */
static int
qp_up(struct rnic_gsi *g)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qkey = RNIC_GSI_QKEY };
	int ret;

	ret = rnic_modify_qp(g->qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_QKEY);
	a.qp_state = RNIC_QPS_RTR;
	if (ret == 0)
		ret = rnic_modify_qp(g->qp, &a, RNIC_QP_STATE);
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = 0;
	if (ret == 0)
		ret = rnic_modify_qp(g->qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN);
	for (uint32_t i = 0; ret == 0 && i < RNIC_GSI_RECV; i++)
		ret = post_recv(g, i);
	return ret;
}

int
rnic_gsi_open(struct rnic_device *dev, struct rnic_gsi **out)
{
	struct rnic_qp_init_attr ia = {
		.qp_type = RNIC_QPT_UD,
		.cap = { .max_send_wr = RNIC_GSI_SEND, .max_recv_wr = RNIC_GSI_RECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rnic_gsi *g;
	int ret;

	if (rnic_provider_remote())
		return -ENOTSUP;	/* rnicd owns the ports, and QP1 with them */
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return -ENOMEM;
	g->dev = dev;
	g->ipv4 = rnic_gid_is_ipv4(&dev->gid[0]);
	g->buf_len = (size_t)RNIC_GSI_RECV * RECV_SLOT + (size_t)RNIC_GSI_SEND * RNIC_MAD_SIZE;
	g->ctx = rnic_open_device(dev);
	g->pd = g->ctx != NULL ? rnic_alloc_pd(g->ctx) : NULL;
	g->cq = g->pd != NULL ? rnic_create_cq(g->ctx, CQ_ENTRIES, NULL, NULL, 0) : NULL;
	g->buf = g->cq != NULL ? rte_zmalloc_socket("rnic_gsi", g->buf_len, RTE_CACHE_LINE_SIZE, dev->socket_id) : NULL;
	g->mr = g->buf != NULL ? rnic_reg_mr(g->pd, g->buf, g->buf_len, RNIC_ACCESS_LOCAL_WRITE) : NULL;
	if (g->mr == NULL) {
		ret = -(errno != 0 ? errno : ENOMEM);
		goto fail;
	}
	ia.send_cq = g->cq;
	ia.recv_cq = g->cq;
	g->qp = rnic_local_create_gsi_qp(g->pd, &ia);
	if (g->qp == NULL) {
		ret = -errno;
		goto fail;
	}
	ret = -qp_up(g);
	if (ret != 0)
		goto fail;
	*out = g;
	return 0;
fail:
	RNIC_LOG(ERR, "%s: QP1 not created: %s", dev->name, strerror(-ret));
	rnic_gsi_close(g);
	return ret;
}

void
rnic_gsi_close(struct rnic_gsi *g)
{
	if (g == NULL)
		return;
	if (g->qp != NULL)
		rnic_destroy_qp(g->qp);
	for (uint32_t i = 0; i < RNIC_GSI_SEND; i++)
		if (g->send_ah[i] != NULL)
			rnic_destroy_ah(g->send_ah[i]);
	if (g->mr != NULL)
		rnic_dereg_mr(g->mr);
	rte_free(g->buf);
	if (g->cq != NULL)
		rnic_destroy_cq(g->cq);
	if (g->pd != NULL)
		rnic_dealloc_pd(g->pd);
	if (g->ctx != NULL)
		rnic_close_device(g->ctx);
	free(g);
}

void
rnic_gsi_set_cm_handler(struct rnic_gsi *g, rnic_gsi_handler handler, void *arg)
{
	g->cm = handler;
	g->cm_arg = arg;
}

static int
free_send_slot(struct rnic_gsi *g, uint32_t *slot)
{
	for (uint32_t k = 0; k < RNIC_GSI_SEND; k++) {
		uint32_t i = (g->send_next + k) % RNIC_GSI_SEND;

		if (g->send_ah[i] == NULL) {
			*slot = i;
			g->send_next = (i + 1) % RNIC_GSI_SEND;
			return 0;
		}
	}
	return -ENOBUFS;
}

int
rnic_gsi_send(struct rnic_gsi *g, const struct rnic_gsi_addr *to, const uint8_t *mad)
{
	struct rnic_ah_attr av = {
		.grh = { .dgid = to->gid, .sgid_index = 0, .hop_limit = GSI_HOP_LIMIT },
		.is_global = 1, .port_num = 1,
	};
	struct rnic_sge sge;
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_SEND,
				   .send_flags = RNIC_SEND_SIGNALED };
	struct rnic_send_wr *bad;
	uint32_t i;
	int ret;

	if (free_send_slot(g, &i) != 0) {
		g->stats.send_no_slot++;
		return -ENOBUFS;
	}
	g->send_ah[i] = rnic_create_ah(g->pd, &av);
	if (g->send_ah[i] == NULL) {
		g->stats.send_errors++;
		return -errno;
	}
	memcpy(send_slot(g, i), mad, RNIC_MAD_SIZE);
	sge = (struct rnic_sge){ .addr = (uintptr_t)send_slot(g, i), .length = RNIC_MAD_SIZE, .lkey = g->mr->lkey };
	wr.wr_id = i;
	wr.wr.ud.ah = g->send_ah[i];
	wr.wr.ud.remote_qpn = to->qpn;
	wr.wr.ud.remote_qkey = RNIC_GSI_QKEY;
	ret = rnic_post_send(g->qp, &wr, &bad);
	if (ret != 0) {
		rnic_destroy_ah(g->send_ah[i]);
		g->send_ah[i] = NULL;
		g->stats.send_errors++;
		return -ret;
	}
	g->stats.mads_sent++;
	return 0;
}

/* Where a received MAD came from: its GRH's source address (an IPv4 header in the GRH's last 20 bytes for
 * RoCEv2 over IPv4, as the engine writes it) and the DETH's source QP. */
static void
source_of(const struct rnic_gsi *g, const uint8_t *grh, uint32_t src_qp, struct rnic_gsi_addr *from)
{
	memset(from, 0, sizeof(*from));
	if (g->ipv4) {
		from->gid.raw[10] = 0xff;
		from->gid.raw[11] = 0xff;
		memcpy(&from->gid.raw[12], grh + 20 + 12, 4);
	} else {
		memcpy(from->gid.raw, grh + 8, 16);
	}
	from->qpn = src_qp;
}

/* A MAD of a class, class version or method softrnic does not serve (IBA 13.4.7, 13.5.3): a Get or Set is
 * answered, the status saying what is missing; anything else (a response, a trap, a send, a report) is
 * dropped. Linux's ib_mad answers the same requests (generate_unmatched_resp). */
static void
not_served(struct rnic_gsi *g, const uint8_t *mad, const struct rnic_gsi_addr *from, int class_served)
{
	const struct rnic_mad_hdr *h = (const void *)mad;
	uint8_t resp[RNIC_MAD_SIZE];
	struct rnic_mad_hdr *r = (void *)resp;
	uint16_t status;

	if (h->method != RNIC_MAD_METHOD_GET && h->method != RNIC_MAD_METHOD_SET) {
		g->stats.unsupported_dropped++;
		return;
	}
	if (!class_served)
		status = RNIC_MAD_STATUS_BAD_VERSION;
	else if (h->method == RNIC_MAD_METHOD_SET)
		status = RNIC_MAD_STATUS_UNSUPPORTED_METHOD;	/* the CM defines no Set */
	else
		status = RNIC_MAD_STATUS_UNSUPPORTED_ATTR;	/* nor any attribute softrnic answers a Get of */
	memcpy(resp, mad, sizeof(resp));
	r->method = RNIC_MAD_METHOD_GET_RESP;
	r->status = rte_cpu_to_be_16(status);
	if (rnic_gsi_send(g, from, resp) == 0)
		g->stats.unsupported_answered++;
}

static void
handle_mad(struct rnic_gsi *g, const struct rnic_wc *wc)
{
	const uint8_t *grh = recv_slot(g, (uint32_t)wc->wr_id);
	const uint8_t *mad = grh + RNIC_GRH_BYTES;
	const struct rnic_mad_hdr *h = (const void *)mad;
	struct rnic_gsi_addr from;
	int cm_class;

	g->stats.mads_received++;
	if (wc->byte_len != RECV_SLOT || h->base_version != RNIC_MAD_BASE_VERSION) {
		g->stats.malformed++;
		return;
	}
	source_of(g, grh, wc->src_qp, &from);
	cm_class = h->mgmt_class == CM_CLASS && h->class_version == CM_CLASS_VERSION && g->cm != NULL;
	if (cm_class && h->method == RNIC_MAD_METHOD_SEND) {
		g->stats.cm_mads++;
		g->cm(g->cm_arg, g, mad, &from);
		return;
	}
	not_served(g, mad, &from, cm_class);
}

/* A send of QP1 failed (no route to its destination): the UD QP went to SQE (or ERR); bring it back, so that
 * one unreachable peer does not silence the port's CM. */
static void
recover(struct rnic_gsi *g)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RTS };
	struct rnic_qp_init_attr ia;
	int ret;

	if (rnic_query_qp(g->qp, &a, RNIC_QP_STATE, &ia) != 0 || a.qp_state == RNIC_QPS_RTS)
		return;
	if (a.qp_state == RNIC_QPS_SQE) {
		a.qp_state = RNIC_QPS_RTS;
		ret = rnic_modify_qp(g->qp, &a, RNIC_QP_STATE);
	} else {
		a.qp_state = RNIC_QPS_RESET;
		ret = rnic_modify_qp(g->qp, &a, RNIC_QP_STATE);
		for (uint32_t i = 0; ret == 0 && i < RNIC_GSI_SEND; i++) {
			if (g->send_ah[i] != NULL)
				rnic_destroy_ah(g->send_ah[i]);
			g->send_ah[i] = NULL;
		}
		if (ret == 0)
			ret = qp_up(g);
	}
	if (ret != 0)
		RNIC_LOG_LIMITED(ERR, "%s: QP1 not recovered: %s", g->dev->name, strerror(ret));
	else
		g->stats.qp_recoveries++;
}

static void
send_done(struct rnic_gsi *g, const struct rnic_wc *wc)
{
	uint32_t i = (uint32_t)wc->wr_id;

	if (i < RNIC_GSI_SEND && g->send_ah[i] != NULL) {
		rnic_destroy_ah(g->send_ah[i]);
		g->send_ah[i] = NULL;
	}
	if (wc->status != RNIC_WC_SUCCESS && wc->status != RNIC_WC_WR_FLUSH_ERR) {
		g->stats.send_errors++;
		recover(g);
	}
}

/* One burst of QP1's completions. */
static int
poll_burst(struct rnic_gsi *g)
{
	struct rnic_wc wc[32];
	int n = rnic_poll_cq(g->cq, (int)RTE_DIM(wc), wc);

	for (int k = 0; k < n; k++) {
		if (!(wc[k].opcode & RNIC_WC_RECV)) {
			send_done(g, &wc[k]);
			continue;
		}
		if (wc[k].status != RNIC_WC_SUCCESS)
			continue;	/* flushed by a reset: qp_up posts the receives again */
		handle_mad(g, &wc[k]);
		if (post_recv(g, (uint32_t)wc[k].wr_id) != 0)
			RNIC_LOG_LIMITED(ERR, "%s: QP1 receive not posted again", g->dev->name);
	}
	return n > 0 ? n : 0;
}

unsigned int
rnic_gsi_poll(struct rnic_gsi *g)
{
	unsigned int done = 0;
	int n;

	/* Everything the CQ holds (it holds no more than QP1's queues): receive buffers go back at once. */
	do {
		n = poll_burst(g);
		done += (unsigned int)n;
	} while (n > 0 && done < CQ_ENTRIES);
	return done;
}

int
rnic_gsi_counters(const struct rnic_gsi *g, struct rnic_counter *out, int n)
{
	struct rnic_counter all[] = {
#define RNIC_X(name, what) { "gsi_" #name, 0 },
		RNIC_GSI_COUNTERS(RNIC_X)
#undef RNIC_X
	};
	const uint64_t *v = (const uint64_t *)&g->stats;

	for (int i = 0; i < (int)RTE_DIM(all) && i < n; i++) {
		out[i] = all[i];
		out[i].value = __atomic_load_n(&v[i], __ATOMIC_RELAXED);
	}
	return (int)RTE_DIM(all);
}
