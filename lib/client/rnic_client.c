/* SPDX-License-Identifier: BSD-3-Clause
 * Client mode (doc/rnicd.md): devices, contexts and objects of a process served by rnicd. Each context is
 * one connection to the daemon; each QP and CQ is the daemon's object, whose host-interface block (WQE
 * buffers, indexes, CQEs, doorbell record) the daemon shares as a memfd this process maps. The objects here
 * are this process's views of them: the same structs as in-process, bound to this process's mappings, so
 * rnic_post_send / rnic_post_recv / rnic_poll_cq / rnic_req_notify_cq run unchanged and never call the
 * daemon. Buffers to register come from rnic_alloc_buf (sealed memfds the daemon maps too), or are moved
 * onto shared memory in place (rnic_client_shm.c). Events come from the daemon on sockets of their own
 * (struct rnicd_event): the context's async_fd, each completion channel's fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_common.h>

#include "rnic_client.h"
#include "rnic_client_cm.h"
#include "rnic_cq.h"
#include "rnic_dbq.h"
#include "rnic_mr.h"
#include "rnic_qp.h"
#include "rnic_srq.h"

/* An object of the context that an event may name, by the daemon's handle. */
struct client_obj {
	struct client_obj *next;
	uint32_t handle;
	void *obj;			/* struct rnic_qp or rnic_cq */
};

struct rnic_client {
	int sock;
	pthread_mutex_t lock;		/* one request at a time on the connection */
	uint32_t id;
	size_t dbq_bytes;
	pthread_mutex_t objs_lock;	/* the lists below: the control verbs vs the event readers */
	struct client_obj *qps, *cqs, *srqs;
};

/* A completion channel: the fd is the client's end of its event socket; inject, the daemon's end, through
 * which the client queues the events its own arming fires (CQEs already there when it arms). */
struct client_channel {
	struct rnic_comp_channel pub;
	uint32_t handle;
	int inject;
};

/* A registration and the memory it holds shared with the daemon. */
struct client_mr {
	struct rnic_mr pub;
	struct rnic_client_region region;
};

static const struct rnic_provider_ops client_ops;

static struct {
	int active;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct rnic_device *dev[RNIC_MAX_DEVICES];
	int nb_dev;
} mode;

int
rnic_client_mode(void)
{
	return mode.active;
}

static int
client_connect(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int s;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		int err = errno;

		close(s);
		return -err;
	}
	return s;
}

/* A device as the daemon describes it: what query_device, query_gid and create_ah read, and a QP table
 * through which rnic_poll_cq finds this process's QPs. */
static struct rnic_device *
proxy_device(const struct rnicd_dev_info *info)
{
	struct rnic_device *dev = calloc(1, sizeof(*dev));

	if (dev == NULL)
		return NULL;
	memcpy(dev->name, info->name, sizeof(dev->name));
	dev->name[sizeof(dev->name) - 1] = '\0';
	dev->guid = info->guid;
	dev->lim = info->lim;
	memcpy(dev->gid, info->gid, sizeof(dev->gid));
	dev->gid_count = RTE_MIN(RTE_MAX(info->gid_count, 0), RNIC_GID_TBL_LEN);
	dev->active_mtu = (enum rnic_mtu)info->active_mtu;
	dev->ops = &client_ops;
	dev->port_id = UINT16_MAX;
	dev->socket_id = SOCKET_ID_ANY;
	pthread_mutex_init(&dev->lock, NULL);
	if (rnic_qp_table_create(dev) != 0) {
		free(dev);
		return NULL;
	}
	return dev;
}

static void
free_devices(void)
{
	for (int i = 0; i < mode.nb_dev; i++) {
		rnic_qp_table_free(mode.dev[i]);
		pthread_mutex_destroy(&mode.dev[i]->lock);
		free(mode.dev[i]);
		mode.dev[i] = NULL;
	}
	mode.nb_dev = 0;
}

int
rnic_client_init(const char *path)
{
	struct rnicd_req req = { 0 };
	struct rnicd_rep *rep;
	int s, ret;

	if (mode.active)
		return -EBUSY;
	s = client_connect(path);
	if (s < 0) {
		RNIC_LOG(ERR, "rnicd at %s: %s", path, strerror(-s));
		return s;
	}
	rep = calloc(1, sizeof(*rep));
	ret = rep == NULL ? ENOMEM : rnicd_call(s, &req, RNICD_LIST, -1, rep, NULL);
	close(s);
	if (ret != 0) {
		RNIC_LOG(ERR, "rnicd at %s: device list: %s", path, strerror(ret));
		free(rep);
		return -ret;
	}
	for (uint32_t i = 0; i < RTE_MIN(rep->u.list.count, (uint32_t)RNIC_MAX_DEVICES); i++) {
		mode.dev[i] = proxy_device(&rep->u.list.dev[i]);
		if (mode.dev[i] == NULL) {
			free_devices();
			free(rep);
			return -ENOMEM;
		}
		mode.nb_dev++;
	}
	free(rep);
	snprintf(mode.path, sizeof(mode.path), "%s", path);
	mode.active = 1;
	RNIC_LOG(INFO, "client of rnicd at %s: %d devices", path, mode.nb_dev);
	return 0;
}

void
rnic_client_fini(void)
{
	free_devices();
	mode.active = 0;
}

static int
client_device_count(void)
{
	return mode.nb_dev;
}

static struct rnic_device *
client_device(int index)
{
	return index >= 0 && index < mode.nb_dev ? mode.dev[index] : NULL;
}

static const struct rnic_provider client_provider = {
	.name = "rnicd",
	.remote = 1,
	.init = rnic_client_init,
	.fini = rnic_client_fini,
	.device_count = client_device_count,
	.device = client_device,
};

RTE_INIT(rnic_client_provider_register)
{
	rnic_provider_register(&client_provider);
}

static struct rnic_client *
ctx_client(struct rnic_context *ctx)
{
	return rnic_context_priv(ctx)->client;
}

int
rnic_client_connect(void)
{
	return mode.active ? client_connect(mode.path) : -ENOTCONN;
}

int
rnic_client_qp_ref(const struct rnic_qp *qp, uint32_t *client_id, uint32_t *handle)
{
	if (qp->context->device->ops != &client_ops)
		return EINVAL;
	*client_id = ctx_client(qp->context)->id;
	*handle = qp->handle;
	return 0;
}

/* A request on the context's connection, with nb_out descriptors; the reply buffer is the caller's, and so
 * is its descriptor (if fd_in is not NULL). */
static int
call_fds(struct rnic_context *ctx, struct rnicd_req *req, uint32_t cmd, const int *fds_out, int nb_out,
	 struct rnicd_rep *rep, int *fd_in)
{
	struct rnic_client *cl = ctx_client(ctx);
	int ret;

	pthread_mutex_lock(&cl->lock);
	ret = rnicd_call_fds(cl->sock, req, cmd, fds_out, nb_out, rep, fd_in, fd_in != NULL ? 1 : 0);
	pthread_mutex_unlock(&cl->lock);
	return ret;
}

static int
call(struct rnic_context *ctx, struct rnicd_req *req, uint32_t cmd, struct rnicd_rep *rep, int *fd_in)
{
	return call_fds(ctx, req, cmd, NULL, 0, rep, fd_in);
}

/*
 * The status of a destroy request: when the daemon is gone, the object is gone with it, and the local view
 * is released all the same (as rdma-core does after a fatal device error), so that an application can
 * still clean up.
 */
static int
destroyed(int ret)
{
	return ret == ECONNRESET || ret == EPIPE || ret == ENOTCONN ? 0 : ret;
}

/* Requests that name one object and expect nothing back but a status. */
static int
call_obj(struct rnic_context *ctx, uint32_t cmd, uint32_t handle, struct rnicd_rep *rep)
{
	struct rnicd_req req = { .u.obj.handle = handle };

	return call(ctx, &req, cmd, rep, NULL);
}

/* Objects events may name: added when made, removed when destroyed, found by handle. */
static int
obj_list_add(struct rnic_context *ctx, struct client_obj **list, uint32_t handle, void *obj)
{
	struct rnic_client *cl = ctx_client(ctx);
	struct client_obj *o = malloc(sizeof(*o));

	if (o == NULL)
		return ENOMEM;
	o->handle = handle;
	o->obj = obj;
	pthread_mutex_lock(&cl->objs_lock);
	o->next = *list;
	*list = o;
	pthread_mutex_unlock(&cl->objs_lock);
	return 0;
}

static void
obj_list_del(struct rnic_context *ctx, struct client_obj **list, void *obj)
{
	struct rnic_client *cl = ctx_client(ctx);

	pthread_mutex_lock(&cl->objs_lock);
	for (struct client_obj **pp = list; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->obj == obj) {
			struct client_obj *o = *pp;

			*pp = o->next;
			free(o);
			break;
		}
	}
	pthread_mutex_unlock(&cl->objs_lock);
}

static void *
obj_list_find(struct rnic_context *ctx, struct client_obj *const *list, uint32_t handle)
{
	struct rnic_client *cl = ctx_client(ctx);
	void *obj = NULL;

	pthread_mutex_lock(&cl->objs_lock);
	for (const struct client_obj *o = *list; o != NULL && obj == NULL; o = o->next)
		if (o->handle == handle)
			obj = o->obj;
	pthread_mutex_unlock(&cl->objs_lock);
	return obj;
}

/* One event from an event socket (blocking unless the program made the fd non-blocking). 0 or -1 with errno. */
static int
read_event(int fd, struct rnicd_event *ev)
{
	ssize_t n;

	do {
		n = recv(fd, ev, sizeof(*ev), 0);
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(*ev))
		return 0;
	if (n >= 0)
		errno = n == 0 ? ECONNRESET : EPROTO;	/* 0: the daemon went away */
	return -1;
}

/* Map a block the daemon sent (and close its descriptor); NULL with errno set on failure. */
static void *
map_shared(int fd, size_t bytes)
{
	void *p;

	if (fd < 0) {
		errno = EPROTO;
		return NULL;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Zeroed memory with the alignment the library's structs ask for. */
static void *
zalloc_aligned(size_t size)
{
	size_t bytes = RTE_ALIGN_CEIL(size, RTE_CACHE_LINE_SIZE);
	void *p = aligned_alloc(RTE_CACHE_LINE_SIZE, bytes);

	if (p != NULL)
		memset(p, 0, bytes);
	return p;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Contexts                                                                                                 */

static struct rnic_context *
client_open_device(struct rnic_device *dev)
{
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	struct rnic_context_priv *ctx;
	struct rnic_client *cl;
	int index = -1, fds[2] = { -1, -1 }, ret;

	for (int i = 0; i < mode.nb_dev; i++)
		if (mode.dev[i] == dev)
			index = i;
	if (index < 0) {
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	cl = calloc(1, sizeof(*cl));
	if (ctx == NULL || cl == NULL) {
		free(ctx);
		free(cl);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&cl->lock, NULL);
	pthread_mutex_init(&cl->objs_lock, NULL);
	cl->sock = client_connect(mode.path);
	ret = cl->sock < 0 ? -cl->sock : 0;
	req.u.open.index = (uint32_t)index;
	if (ret == 0)
		ret = rnicd_call_fds(cl->sock, &req, RNICD_OPEN, NULL, 0, &rep, fds, 2);
	if (ret == 0 && fds[1] < 0)
		ret = EPROTO;
	if (ret == 0) {
		cl->id = rep.u.open.client_id;
		cl->dbq_bytes = rep.u.open.dbq_bytes;
		ctx->dbq = map_shared(fds[0], cl->dbq_bytes);
		fds[0] = -1;
		if (ctx->dbq == NULL)
			ret = errno;
	}
	if (ret != 0) {
		RNIC_LOG(ERR, "rnicd: cannot open %s: %s", dev->name, ret == EDQUOT ?
			 "over quota (its tenant's contexts, or the memory its doorbell queue needs: the daemon's "
			 "log and /rnicd/tenants say which)" :
			 strerror(ret));
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (cl->sock >= 0)
			close(cl->sock);
		free(cl);
		free(ctx);
		errno = ret;
		return NULL;
	}
	ctx->client = cl;
	ctx->dev = dev;
	ctx->pub.device = dev;
	ctx->pub.async_fd = fds[1];	/* the client's end of the daemon's async event socket */
	ctx->pub.num_comp_vectors = 1;
	return &ctx->pub;
}

static int
client_close_device(struct rnic_context *context)
{
	struct rnic_context_priv *ctx = rnic_context_priv(context);
	struct rnic_client *cl = ctx->client;

	/* The daemon frees whatever the context still holds when the connection closes. */
	munmap(ctx->dbq, cl->dbq_bytes);
	close(cl->sock);
	close(context->async_fd);
	pthread_mutex_destroy(&cl->lock);
	pthread_mutex_destroy(&cl->objs_lock);
	free(cl);
	free(ctx);
	return 0;
}

static int
client_query_port(struct rnic_context *ctx, struct rnic_port_attr *attr)
{
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	int ret = call(ctx, &req, RNICD_QUERY_PORT, &rep, NULL);

	if (ret == 0)
		*attr = rep.u.port;
	return ret;
}

static int
client_query_device_counters(struct rnic_context *ctx, struct rnic_counter *counters, int n)
{
	struct rnicd_req req = { .u.counters.n = n };
	struct rnicd_rep *rep = malloc(sizeof(*rep));
	int ret;

	if (rep == NULL)
		return -ENOMEM;
	ret = call(ctx, &req, RNICD_QUERY_DEVICE_COUNTERS, rep, NULL);
	if (ret == 0) {
		int count = RTE_MIN(RTE_MIN(rep->u.counters.count, n), RNICD_MAX_COUNTERS);

		for (int i = 0; i < count; i++)
			counters[i] = rep->u.counters.c[i];
	}
	ret = ret == 0 ? rep->u.counters.total : -ret;
	free(rep);
	return ret;
}

/* A tenant does not switch the shared device's congestion control: rnicd's operator sets it (--cc). */
static int
client_set_cc(struct rnic_context *ctx, int rp_enable, int np_enable)
{
	(void)ctx;
	(void)rp_enable;
	(void)np_enable;
	return -ENOTSUP;
}

/* ------------------------------------------------------------------------------------------------------ */
/* PDs and MRs                                                                                              */

static struct rnic_pd *
client_alloc_pd(struct rnic_context *ctx)
{
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	struct rnic_pd_priv *pd;
	int ret = call(ctx, &req, RNICD_ALLOC_PD, &rep, NULL);

	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		call_obj(ctx, RNICD_DEALLOC_PD, rep.u.obj.handle, &rep);
		errno = ENOMEM;
		return NULL;
	}
	pd->pub.context = ctx;
	pd->pub.handle = rep.u.obj.handle;
	return &pd->pub;
}

static int
client_dealloc_pd(struct rnic_pd *pd)
{
	struct rnicd_rep rep;
	int ret;

	if (__atomic_load_n(&rnic_pd_priv(pd)->refcnt, __ATOMIC_ACQUIRE) != 0)
		return EBUSY;	/* an AH of this process uses it */
	ret = destroyed(call_obj(pd->context, RNICD_DEALLOC_PD, pd->handle, &rep));
	if (ret == 0)
		free(pd);
	return ret;
}

static struct rnic_mr *
client_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access)
{
	struct rnicd_req req = { .u.reg_mr = { .pd = pd->handle, .access = access, .va = (uintptr_t)addr,
					       .length = length } };
	int fds[RNICD_MR_MAX_SEGS];
	struct rnicd_rep rep;
	struct client_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ret = rnic_client_region_get(addr, length, (access & RNIC_ACCESS_LOCAL_WRITE) != 0, &mr->region);
	if (ret != 0) {
		RNIC_LOG(ERR, "rnicd: reg_mr of %p: %s", addr, ret == EINVAL ?
			 "not memory of rnic_alloc_buf (rnicd cannot map it)" : strerror(ret));
		free(mr);
		errno = ret;
		return NULL;
	}
	req.u.reg_mr.nb_seg = (uint32_t)mr->region.nb;
	for (int i = 0; i < mr->region.nb; i++) {
		req.u.reg_mr.seg[i].offset = mr->region.offset[i];
		req.u.reg_mr.seg[i].len = mr->region.len[i];
		fds[i] = rnic_client_region_fd(&mr->region, i);
	}
	ret = call_fds(pd->context, &req, RNICD_REG_MR, fds, mr->region.nb, &rep, NULL);
	if (ret != 0) {
		rnic_client_region_put(&mr->region, 1);	/* pages moved for it go back */
		free(mr);
		errno = ret;
		return NULL;
	}
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	mr->pub.addr = addr;
	mr->pub.length = length;
	mr->pub.handle = rep.u.reg_mr.handle;
	mr->pub.lkey = rep.u.reg_mr.lkey;
	mr->pub.rkey = rep.u.reg_mr.rkey;
	return &mr->pub;
}

static int
client_dereg_mr(struct rnic_mr *pub)
{
	struct client_mr *mr = (struct client_mr *)pub;
	struct rnicd_rep rep;
	int ret = destroyed(call_obj(pub->context, RNICD_DEREG_MR, pub->handle, &rep));

	if (ret != 0)
		return ret;
	/* Moved pages stay shared (doc/verbs.md): the segments only lose a registration. */
	rnic_client_region_put(&mr->region, 0);
	free(mr);
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* CQs and QPs                                                                                              */

static struct rnic_cq *
client_create_cq(struct rnic_context *ctx, int cqe, void *cq_context, struct rnic_comp_channel *channel,
		 int comp_vector)
{
	struct rnicd_req req = { .u.create_cq = { .cqe = cqe } };
	struct rnicd_rep rep;
	struct rnic_cq_priv *cq;
	void *block;
	int fd = -1, ret;

	if (channel != NULL)
		req.u.create_cq.channel = ((struct client_channel *)channel)->handle;
	if (comp_vector != 0) {
		errno = EINVAL;
		return NULL;
	}
	ret = call(ctx, &req, RNICD_CREATE_CQ, &rep, &fd);
	if (ret == 0 && (rep.u.create_cq.nent == 0 || (rep.u.create_cq.nent & (rep.u.create_cq.nent - 1)) ||
			 rep.u.create_cq.bytes != rnic_cq_hif_size(rep.u.create_cq.nent)))
		ret = EPROTO;
	block = ret == 0 ? map_shared(fd, rep.u.create_cq.bytes) : NULL;
	cq = block != NULL ? zalloc_aligned(sizeof(*cq)) : NULL;
	if (cq != NULL && obj_list_add(ctx, &ctx_client(ctx)->cqs, rep.u.create_cq.handle, &cq->pub) != 0) {
		free(cq);
		cq = NULL;
	}
	if (cq == NULL) {
		if (ret == 0) {
			ret = ENOMEM;
			if (block != NULL)
				munmap(block, rep.u.create_cq.bytes);
			call_obj(ctx, RNICD_DESTROY_CQ, rep.u.create_cq.handle, &rep);
		} else if (fd >= 0) {
			close(fd);
		}
		errno = ret;
		return NULL;
	}
	rnic_cq_bind(cq, block, rep.u.create_cq.nent);
	cq->cqn = rep.u.create_cq.cqn;
	cq->pub.context = ctx;
	cq->pub.channel = channel;
	cq->pub.cq_context = cq_context;
	cq->pub.handle = rep.u.create_cq.handle;
	cq->pub.cqe = (int)rep.u.create_cq.nent - 1;
	return &cq->pub;
}

static int
client_destroy_cq(struct rnic_cq *pub)
{
	struct rnic_cq_priv *cq = rnic_cq_priv(pub);
	struct rnicd_rep rep;
	int ret;

	/* As in-process: events the program has not acknowledged would name a freed CQ. */
	if (__atomic_load_n(&pub->comp_events_completed, __ATOMIC_ACQUIRE) != cq->arm_sn)
		return EBUSY;
	ret = destroyed(call_obj(pub->context, RNICD_DESTROY_CQ, pub->handle, &rep));
	if (ret != 0)
		return ret;
	obj_list_del(pub->context, &ctx_client(pub->context)->cqs, pub);
	munmap(cq->cqes, rnic_cq_hif_size(1u << cq->log_nent));
	free(cq);
	return 0;
}

static size_t
qp_hif_bytes(const struct rnic_qp_priv *qp)
{
	struct rnic_qp_hif_layout l;

	rnic_qp_hif_layout(qp->sq.wqe_cnt, qp->sq.stride, qp->rq.wqe_cnt, qp->rq.stride, &l);
	return l.size;
}

static int
pow2(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

static struct rnic_qp *
client_create_qp(struct rnic_pd *pd, struct rnic_qp_init_attr *ia)
{
	struct rnic_context *ctx = pd->context;
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	struct rnic_qp_hif_layout l;
	struct rnic_qp_priv *qp = NULL;
	void *block = NULL;
	int fd = -1, ret;

	if (ia->send_cq == NULL || ia->recv_cq == NULL || ia->send_cq->context != ctx ||
	    ia->recv_cq->context != ctx || (ia->srq != NULL && ia->srq->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	req.u.create_qp.pd = pd->handle;
	req.u.create_qp.send_cq = ia->send_cq->handle;
	req.u.create_qp.recv_cq = ia->recv_cq->handle;
	req.u.create_qp.qp_type = ia->qp_type;
	req.u.create_qp.sq_sig_all = ia->sq_sig_all;
	req.u.create_qp.cap = ia->cap;
	req.u.create_qp.srq = ia->srq != NULL ? ia->srq->handle : 0;
	ret = call(ctx, &req, RNICD_CREATE_QP, &rep, &fd);
	if (ret == 0) {
		rnic_qp_hif_layout(rep.u.create_qp.sq_cnt, rep.u.create_qp.sq_stride, rep.u.create_qp.rq_cnt,
				   rep.u.create_qp.rq_stride, &l);
		if (!pow2(rep.u.create_qp.sq_cnt) || !pow2(rep.u.create_qp.rq_cnt) ||
		    !pow2(rep.u.create_qp.sq_stride) || !pow2(rep.u.create_qp.rq_stride) ||
		    l.size != rep.u.create_qp.bytes)
			ret = EPROTO;
	}
	if (ret == 0) {
		block = map_shared(fd, l.size);
		fd = -1;
		qp = block != NULL ? zalloc_aligned(sizeof(*qp)) : NULL;
		if (qp != NULL && obj_list_add(ctx, &ctx_client(ctx)->qps, rep.u.create_qp.handle, &qp->pub) != 0) {
			free(qp);
			qp = NULL;
		}
		if (qp == NULL) {
			ret = ENOMEM;
			if (block != NULL)
				munmap(block, l.size);
			call_obj(ctx, RNICD_DESTROY_QP, rep.u.create_qp.handle, &rep);
		}
	}
	if (ret != 0) {
		if (fd >= 0)
			close(fd);
		errno = ret;
		return NULL;
	}
	qp->hif = block;
	rnic_wq_bind(&qp->sq, block, l.sq_buf, l.sq_wrid, l.sq_tsc, l.sq_idx, rep.u.create_qp.sq_cnt,
		     rep.u.create_qp.sq_stride);
	rnic_wq_bind(&qp->rq, block, l.rq_buf, l.rq_wrid, 0, l.rq_idx, rep.u.create_qp.rq_cnt,
		     rep.u.create_qp.rq_stride);
	qp->post_state = (enum rnic_qp_state *)((uint8_t *)block + l.state);
	qp->dbq = rnic_context_priv(ctx)->dbq;
	qp->cap = rep.u.create_qp.cap;
	qp->sq_sig_all = ia->sq_sig_all;
	ia->cap = qp->cap;
	qp->pub.context = ctx;
	qp->pub.qp_context = ia->qp_context;
	qp->pub.pd = pd;
	qp->pub.send_cq = ia->send_cq;
	qp->pub.recv_cq = ia->recv_cq;
	qp->pub.srq = ia->srq;
	qp->pub.handle = rep.u.create_qp.handle;
	qp->pub.qp_num = rep.u.create_qp.qpn;
	qp->pub.state = RNIC_QPS_RESET;
	qp->pub.qp_type = ia->qp_type;
	rnic_qp_table_publish(rnic_ctx_dev(ctx), &qp->pub);
	return &qp->pub;
}

static int
client_modify_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr, int mask)
{
	struct rnicd_req req = { .u.modify_qp = { .handle = qp->handle, .mask = mask, .attr = *attr } };
	struct rnicd_rep rep;
	int ret = call(qp->context, &req, RNICD_MODIFY_QP, &rep, NULL);

	if (ret == 0)
		__atomic_store_n(&qp->state, (enum rnic_qp_state)rep.u.modify_qp.state, __ATOMIC_RELEASE);
	return ret;
}

static int
client_query_qp(struct rnic_qp *pub, struct rnic_qp_attr *attr)
{
	struct rnicd_rep rep;
	int ret = call_obj(pub->context, RNICD_QUERY_QP, pub->handle, &rep);

	if (ret != 0)
		return ret;
	*attr = rep.u.query_qp.attr;
	__atomic_store_n(&pub->state, attr->qp_state, __ATOMIC_RELEASE);
	return 0;
}

static int
client_destroy_qp(struct rnic_qp *pub)
{
	struct rnic_qp_priv *qp = rnic_qp_priv(pub);
	struct rnicd_rep rep;
	int ret = destroyed(call_obj(pub->context, RNICD_DESTROY_QP, pub->handle, &rep));

	if (ret != 0)
		return ret;
	rnic_client_cm_forget_qp(pub);
	rnic_qp_table_unpublish(rnic_ctx_dev(pub->context), pub);
	obj_list_del(pub->context, &ctx_client(pub->context)->qps, pub);
	munmap(qp->hif, qp_hif_bytes(qp));
	free(qp);
	return 0;
}

static int
client_query_qp_counters(struct rnic_qp *qp, struct rnic_qp_counters *counters)
{
	struct rnicd_rep rep;
	int ret = call_obj(qp->context, RNICD_QUERY_QP_COUNTERS, qp->handle, &rep);

	if (ret == 0)
		*counters = rep.u.qp_counters;
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* SRQs                                                                                                     */

/* The daemon's SRQ, bound to this process's mapping of its block: rnic_post_srq_recv writes it unchanged. */
static struct rnic_srq *
client_create_srq(struct rnic_pd *pd, struct rnic_srq_init_attr *ia)
{
	struct rnic_context *ctx = pd->context;
	struct rnicd_req req = { .u.create_srq = { .pd = pd->handle, .attr = ia->attr } };
	struct rnicd_rep rep;
	struct rnic_srq_hif_layout l;
	struct rnic_srq_priv *srq = NULL;
	void *block = NULL;
	int fd = -1, ret = call(ctx, &req, RNICD_CREATE_SRQ, &rep, &fd);

	if (ret == 0) {
		rnic_srq_hif_layout(rep.u.create_srq.cnt, rep.u.create_srq.stride, &l);
		if (!pow2(rep.u.create_srq.cnt) || !pow2(rep.u.create_srq.stride) || rep.u.create_srq.stride < 64 ||
		    l.size != rep.u.create_srq.bytes)
			ret = EPROTO;
	}
	if (ret == 0) {
		block = map_shared(fd, l.size);
		fd = -1;
		srq = block != NULL ? zalloc_aligned(sizeof(*srq)) : NULL;
		if (srq != NULL && obj_list_add(ctx, &ctx_client(ctx)->srqs, rep.u.create_srq.handle, &srq->pub) != 0) {
			free(srq);
			srq = NULL;
		}
		if (srq == NULL) {
			ret = ENOMEM;
			if (block != NULL)
				munmap(block, l.size);
			call_obj(ctx, RNICD_DESTROY_SRQ, rep.u.create_srq.handle, &rep);
		}
	}
	if (ret != 0) {
		if (fd >= 0)
			close(fd);
		errno = ret;
		return NULL;
	}
	rnic_srq_bind(srq, block, rep.u.create_srq.cnt, rep.u.create_srq.stride);
	rte_spinlock_init(&srq->post_lock);
	srq->srqn = rep.u.create_srq.srqn;
	srq->pub.context = ctx;
	srq->pub.srq_context = ia->srq_context;
	srq->pub.pd = pd;
	srq->pub.handle = rep.u.create_srq.handle;
	ia->attr.max_wr = srq->max_wr;
	ia->attr.max_sge = srq->max_sge;
	ia->attr.srq_limit = 0;
	return &srq->pub;
}

static int
client_modify_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr, int mask)
{
	struct rnicd_req req = { .u.modify_srq = { .handle = srq->handle, .mask = mask, .attr = *attr } };
	struct rnicd_rep rep;

	return call(srq->context, &req, RNICD_MODIFY_SRQ, &rep, NULL);
}

static int
client_query_srq(struct rnic_srq *srq, struct rnic_srq_attr *attr)
{
	struct rnicd_rep rep;
	int ret = call_obj(srq->context, RNICD_QUERY_SRQ, srq->handle, &rep);

	if (ret == 0)
		*attr = rep.u.query_srq;
	return ret;
}

static int
client_destroy_srq(struct rnic_srq *pub)
{
	struct rnic_srq_priv *srq = rnic_srq_priv(pub);
	struct rnic_srq_hif_layout l;
	struct rnicd_rep rep;
	int ret = destroyed(call_obj(pub->context, RNICD_DESTROY_SRQ, pub->handle, &rep));

	if (ret != 0)
		return ret;	/* EBUSY: a QP of this client still uses it */
	obj_list_del(pub->context, &ctx_client(pub->context)->srqs, pub);
	rnic_srq_hif_layout(srq->wq.wqe_cnt, srq->wq.stride, &l);
	munmap(srq->hif, l.size);
	free(srq);
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The provider                                                                                             */

/* An async event from the daemon: the program's QP, CQ or SRQ its handle names (an event about an object the
 * program destroyed since is skipped). */
static int
client_get_async_event(struct rnic_context *ctx, struct rnic_async_event *event)
{
	struct rnicd_event ev;

	for (;;) {
		if (read_event(ctx->async_fd, &ev) != 0)
			return -1;
		memset(event, 0, sizeof(*event));
		event->event_type = (enum rnic_event_type)ev.event_type;
		if (ev.handle == 0) {
			event->element.port_num = (int)ev.port_num;
			return 0;
		}
		if (ev.event_type == RNIC_EVENT_CQ_ERR)
			event->element.cq = obj_list_find(ctx, &ctx_client(ctx)->cqs, ev.handle);
		else if (ev.event_type == RNIC_EVENT_SRQ_ERR || ev.event_type == RNIC_EVENT_SRQ_LIMIT_REACHED)
			event->element.srq = obj_list_find(ctx, &ctx_client(ctx)->srqs, ev.handle);
		else
			event->element.qp = obj_list_find(ctx, &ctx_client(ctx)->qps, ev.handle);
		if (event->element.cq != NULL || event->element.qp != NULL || event->element.srq != NULL)
			return 0;
	}
}

static struct rnic_comp_channel *
client_create_comp_channel(struct rnic_context *ctx)
{
	struct client_channel *ch = calloc(1, sizeof(*ch));
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	int fds[2] = { -1, -1 }, ret;

	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx_client(ctx)->lock);
	ret = rnicd_call_fds(ctx_client(ctx)->sock, &req, RNICD_CREATE_COMP_CHANNEL, NULL, 0, &rep, fds, 2);
	pthread_mutex_unlock(&ctx_client(ctx)->lock);
	if (ret == 0 && (fds[0] < 0 || fds[1] < 0))
		ret = EPROTO;
	if (ret != 0) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		free(ch);
		errno = ret;
		return NULL;
	}
	ch->handle = rep.u.obj.handle;
	ch->pub.context = ctx;
	ch->pub.fd = fds[0];	/* the client's end of the channel's event socket */
	ch->inject = fds[1];
	rnic_ctx_hold(ctx);
	return &ch->pub;
}

static int
client_destroy_comp_channel(struct rnic_comp_channel *pub)
{
	struct client_channel *ch = (struct client_channel *)pub;
	struct rnicd_rep rep;
	int ret = destroyed(call_obj(pub->context, RNICD_DESTROY_COMP_CHANNEL, ch->handle, &rep));

	if (ret != 0)
		return ret;
	rnic_ctx_release(pub->context);
	close(pub->fd);
	close(ch->inject);
	free(ch);
	return 0;
}

/* The program armed a CQ over CQEs already there: the event is its own to queue (the daemon's engine fires
 * only for CQEs it writes after an arm). */
static void
client_deliver_cq_event(struct rnic_cq *cq)
{
	const struct client_channel *ch = (const struct client_channel *)cq->channel;
	struct rnicd_event ev = { .handle = cq->handle };

	if (send(ch->inject, &ev, sizeof(ev), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ev))
		RNIC_LOG_LIMITED(ERR, "CQ %u: completion channel full, event lost", rnic_cq_priv(cq)->cqn);
}

/* A completion event from the daemon: the CQ its handle names (one the program destroyed since is skipped). */
static int
client_get_cq_event(struct rnic_comp_channel *channel, struct rnic_cq **cq, void **cq_context)
{
	struct rnicd_event ev;

	do {
		if (read_event(channel->fd, &ev) != 0)
			return -1;
		*cq = obj_list_find(channel->context, &ctx_client(channel->context)->cqs, ev.handle);
	} while (*cq == NULL || (*cq)->channel != channel);
	*cq_context = (*cq)->cq_context;
	/* As mlx5_cq_event: the next arm uses the next sequence number. */
	rnic_cq_priv(*cq)->arm_sn++;
	return 0;
}

static const struct rnic_provider_ops client_ops = {
	.name = "rnicd",
	.open_device = client_open_device,
	.close_device = client_close_device,
	.query_port = client_query_port,
	.query_device_counters = client_query_device_counters,
	.set_cc = client_set_cc,
	.get_async_event = client_get_async_event,
	.alloc_pd = client_alloc_pd,
	.dealloc_pd = client_dealloc_pd,
	.reg_mr = client_reg_mr,
	.dereg_mr = client_dereg_mr,
	.create_comp_channel = client_create_comp_channel,
	.destroy_comp_channel = client_destroy_comp_channel,
	.get_cq_event = client_get_cq_event,
	.deliver_cq_event = client_deliver_cq_event,
	.create_cq = client_create_cq,
	.destroy_cq = client_destroy_cq,
	.create_qp = client_create_qp,
	.modify_qp = client_modify_qp,
	.query_qp = client_query_qp,
	.destroy_qp = client_destroy_qp,
	.query_qp_counters = client_query_qp_counters,
	.create_srq = client_create_srq,
	.modify_srq = client_modify_srq,
	.query_srq = client_query_srq,
	.destroy_srq = client_destroy_srq,
};
