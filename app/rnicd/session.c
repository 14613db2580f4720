/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd's client sessions: one per connection. A session owns one context on one device; its objects are
 * the engine's own (rnic_create_qp, ... on that context), whose host-interface memory comes from memfd
 * blocks the session shares with the client. Every handle the client sends is looked up in the session's
 * own table; nothing it sends is used as an address here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_common.h>

#include "rnicd.h"
#include "rnic_daemon.h"
#include "rnic_dbq.h"

#define PAGE 4096ul

/* The descriptors of a message: received with a request, or sent with a reply (owned: bit i set when the
 * daemon closes fd[i] once it is sent, a socket end it keeps no copy of). */
struct msg_fds {
	int fd[RNICD_MAX_FDS];
	int nb;
	uint32_t owned;
};
#define HANDLE_SHIFT 16
#define MAX_OBJ 65535u

/* ------------------------------------------------------------------------------------------------------ */
/* Shared memory                                                                                            */

/* A sealed memfd of len bytes mapped here; the client maps the same fd. */
static void *
block_new(struct rnicd_session *s, size_t len)
{
	struct rnicd_block *b;

	if (s->bytes + len > rnicd.quota.max_bytes ||
	    rnicd_tenant_charge(s->tenant, RNICD_RES_MEM, len, s->pid) != 0) {
		s->over_quota = 1;
		/* Once per session: a client retrying does not fill the log. */
		if (!s->quota_logged)
			RNICD_LOG(WARNING, "client %u (pid %d): refused %zu bytes of shared memory: it has %llu of its "
				  "max-mem %llu", s->id, (int)s->pid, len, (unsigned long long)s->bytes,
				  (unsigned long long)rnicd.quota.max_bytes);
		s->quota_logged = 1;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (b == NULL || (b->addr = rnic_shm_create("rnicd-hif", len, &b->fd)) == NULL) {
		uint32_t left_out;

		if (rnicd_tenant_log_ok(s->tenant, &left_out))
			RNICD_LOG(ERR, "client %u (tenant %s): shared memory of %zu bytes: %s", s->id, s->tenant->name,
				  len, strerror(errno));
		rnicd_tenant_release(s->tenant, RNICD_RES_MEM, len);
		free(b);
		return NULL;
	}
	b->len = len;
	b->next = s->blocks;
	s->blocks = b;
	s->bytes += len;
	rnicd.stats.shared_bytes += len;
	return b->addr;
}

static struct rnicd_block *
block_find(struct rnicd_session *s, const void *addr)
{
	for (struct rnicd_block *b = s->blocks; b != NULL; b = b->next)
		if (b->addr == addr)
			return b;
	return NULL;
}

static void
block_free(struct rnicd_session *s, void *addr)
{
	struct rnicd_block **pp, *b;

	for (pp = &s->blocks; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->addr != addr)
			continue;
		b = *pp;
		*pp = b->next;
		munmap(b->addr, b->len);
		close(b->fd);
		rnicd_tenant_release(s->tenant, RNICD_RES_MEM, b->len);
		s->bytes -= b->len;
		rnicd.stats.shared_bytes -= b->len;
		free(b);
		return;
	}
}

static void *
hostmem_alloc(void *arg, size_t size)
{
	return block_new(arg, RTE_ALIGN_CEIL(size, PAGE));
}

static void
hostmem_free(void *arg, void *ptr)
{
	block_free(arg, ptr);
}

static const struct rnic_hostmem_ops session_hostmem = { .alloc = hostmem_alloc, .free = hostmem_free };

/* What a line about a tenant's connection adds when lines were left out before it (rnicd_tenant_log_ok). */
static const char *
left_out_note(uint32_t left_out, char *buf, size_t len)
{
	buf[0] = '\0';
	if (left_out != 0)
		snprintf(buf, len, " (%u lines about the tenant's connections left out)", left_out);
	return buf;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Handles                                                                                                  */

static uint64_t *
live_counter(enum rnicd_obj_kind kind)
{
	switch (kind) {
	case OBJ_PD: return &rnicd.stats.pds_live;
	case OBJ_MR: return &rnicd.stats.mrs_live;
	case OBJ_CQ: return &rnicd.stats.cqs_live;
	case OBJ_SRQ: return &rnicd.stats.srqs_live;
	default: return &rnicd.stats.qps_live;
	}
}

static uint64_t *
freed_counter(enum rnicd_obj_kind kind)
{
	switch (kind) {
	case OBJ_PD: return &rnicd.stats.pds_freed;
	case OBJ_MR: return &rnicd.stats.mrs_freed;
	case OBJ_CQ: return &rnicd.stats.cqs_freed;
	case OBJ_SRQ: return &rnicd.stats.srqs_freed;
	default: return &rnicd.stats.qps_freed;
	}
}

static uint32_t
quota_of(enum rnicd_obj_kind kind)
{
	switch (kind) {
	case OBJ_PD: return rnicd.quota.max_pd;
	case OBJ_MR: return rnicd.quota.max_mr;
	case OBJ_CQ: return rnicd.quota.max_cq;
	default: return rnicd.quota.max_qp;	/* QPs, and as many SRQs */
	}
}

/* The tenant's resource an object kind is charged as: an SRQ as a QP. */
static enum rnicd_res
obj_res(enum rnicd_obj_kind kind)
{
	return kind == OBJ_SRQ ? RNICD_RES_QP : (enum rnicd_res)kind;
}

/* Room for one more object of a kind: under the connection's limit, and counted against its tenant's quota.
 * 0 or EDQUOT; an object that is then not made gives its place back (unreserve). */
static int
reserve(struct rnicd_session *s, enum rnicd_obj_kind kind)
{
	if (s->count[kind] >= quota_of(kind))
		return EDQUOT;
	return rnicd_tenant_charge(s->tenant, obj_res(kind), 1, s->pid);
}

static void
unreserve(struct rnicd_session *s, enum rnicd_obj_kind kind)
{
	rnicd_tenant_release(s->tenant, obj_res(kind), 1);
}

/* Record an object reserve() made room for; returns its handle (0 when the table is full). */
static uint32_t
obj_add(struct rnicd_session *s, enum rnicd_obj_kind kind, void *ptr, void *map, size_t map_len)
{
	for (uint32_t i = 0; i < s->nb_obj; i++) {
		if (s->obj[i].kind != OBJ_FREE)
			continue;
		s->obj[i] = (struct rnicd_obj){ .kind = (uint8_t)kind, .ptr = ptr, .map = map, .map_len = map_len };
		s->count[kind]++;
		(*live_counter(kind))++;
		return (s->id & 0xffff) << HANDLE_SHIFT | (i + 1);
	}
	return 0;
}

/* The session's object of this kind behind a handle, or NULL: a handle of another client (or a forged one)
 * names nothing here. */
static struct rnicd_obj *
obj_get(struct rnicd_session *s, uint32_t handle, enum rnicd_obj_kind kind)
{
	uint32_t index = (handle & 0xffff) - 1;

	if (handle >> HANDLE_SHIFT != (s->id & 0xffff) || index >= s->nb_obj || s->obj[index].kind != kind)
		return NULL;
	return &s->obj[index];
}

struct rnic_qp *
rnicd_session_qp(const struct rnicd_session *s, uint32_t client_id, uint32_t handle)
{
	for (struct rnicd_session *o = rnicd.sessions; o != NULL; o = o->next) {
		const struct rnicd_obj *qp;

		if (o->id != client_id)
			continue;
		if (o->pid != s->pid || o->tenant != s->tenant)
			return NULL;
		qp = obj_get(o, handle, OBJ_QP);
		return qp != NULL ? qp->ptr : NULL;
	}
	return NULL;
}

uint32_t
rnicd_session_handle_of(const struct rnicd_session *s, const void *ptr, enum rnicd_obj_kind kind)
{
	for (uint32_t i = 0; i < s->nb_obj; i++)
		if (s->obj[i].kind == kind && s->obj[i].ptr == ptr)
			return (s->id & 0xffff) << HANDLE_SHIFT | (i + 1);
	return 0;
}

/* Destroy an object the session made but could not record. */
static void
destroy_unrecorded(enum rnicd_obj_kind kind, void *ptr)
{
	switch (kind) {
	case OBJ_PD:
		rnic_dealloc_pd(ptr);
		break;
	case OBJ_CQ:
		rnic_destroy_cq(ptr);
		break;
	case OBJ_SRQ:
		rnic_destroy_srq(ptr);
		break;
	default:
		rnic_destroy_qp(ptr);
		break;
	}
}

/*
 * Record an object made after reserve() (s->over_quota cleared before it was made): 0 and its handle; or,
 * when it was not made (ptr NULL: the engine's errno, EDQUOT where the tenant's engine quota refused it) or
 * the table is full (ENOMEM, the object destroyed), the error and its place given back.
 */
static int
record_created(struct rnicd_session *s, enum rnicd_obj_kind kind, void *ptr, uint32_t *handle)
{
	int ret = s->over_quota ? EDQUOT : errno;

	if (ptr != NULL) {
		*handle = obj_add(s, kind, ptr, NULL, 0);
		if (*handle != 0)
			return 0;
		destroy_unrecorded(kind, ptr);
		ret = ENOMEM;
	}
	unreserve(s, kind);
	return ret;
}

static void
obj_del(struct rnicd_session *s, struct rnicd_obj *o)
{
	unreserve(s, o->kind);
	s->count[o->kind]--;
	(*live_counter(o->kind))--;
	memset(o, 0, sizeof(*o));
}

/* ------------------------------------------------------------------------------------------------------ */
/* Requests                                                                                                 */

static int
do_list(struct rnicd_rep *rep)
{
	struct rnic_device **list = rnic_get_device_list(NULL);

	if (list == NULL)
		return ENOMEM;
	for (uint32_t i = 0; list[i] != NULL && i < RNIC_MAX_DEVICES; i++) {
		rnic_daemon_device_info(list[i], &rep->u.list.dev[i]);
		rep->u.list.count = i + 1;
	}
	rnic_free_device_list(list);
	return 0;
}

static int
do_open(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep, struct msg_fds *out)
{
	struct rnic_device **list;
	struct rnicd_block *b;
	uint32_t left_out;
	char note[64];
	int n = 0, ret = 0;

	if (s->ctx != NULL)
		return EBUSY;		/* one context per connection */
	list = rnic_get_device_list(&n);
	if (list == NULL)
		return ENOMEM;
	if (req->u.open.index >= (uint32_t)n) {
		rnic_free_device_list(list);
		return ENODEV;
	}
	if (rnicd_tenant_charge(s->tenant, RNICD_RES_CTX, 1, s->pid) != 0) {
		rnic_free_device_list(list);
		return EDQUOT;
	}
	s->ctx = rnic_open_device(list[req->u.open.index]);
	rnic_free_device_list(list);
	if (s->ctx == NULL) {
		rnicd_tenant_release(s->tenant, RNICD_RES_CTX, 1);
		return errno;
	}
	s->dev_index = (int)req->u.open.index;
	rnic_daemon_context_bind(s->ctx, &session_hostmem, s, s->id, s->tenant->engine_id,
				 rnicd_tenant_gids(s->tenant));
	s->over_quota = 0;
	s->dbq = block_new(s, RTE_ALIGN_CEIL(rnic_dbq_memsize(rnicd.quota.dbq_size), PAGE));
	if (s->dbq != NULL) {
		s->dbq->size = rnicd.quota.dbq_size;
		ret = -rnic_daemon_attach_dbq(s->ctx, s->dbq, rnicd.quota.dbq_size);
		if (ret == 0 && (ret = rnicd_events_open(s, &out->fd[1])) != 0)
			rnic_daemon_detach_dbq(s->ctx, s->dbq);
	}
	if (s->dbq == NULL || ret != 0) {
		if (s->dbq != NULL)
			block_free(s, s->dbq);
		s->dbq = NULL;
		rnic_close_device(s->ctx);
		s->ctx = NULL;
		rnicd_tenant_release(s->tenant, RNICD_RES_CTX, 1);
		return ret != 0 ? ret : s->over_quota ? EDQUOT : ENOMEM;
	}
	b = block_find(s, s->dbq);
	rep->u.open.client_id = s->id;
	rep->u.open.dbq_size = rnicd.quota.dbq_size;
	rep->u.open.dbq_bytes = b->len;
	out->fd[0] = b->fd;
	out->nb = 2;		/* and the client's end of the async event socket */
	out->owned = 1u << 1;
	if (rnicd_tenant_log_ok(s->tenant, &left_out))
		RNICD_LOG(INFO, "client %u (pid %d, tenant %s) opened %s%s", s->id, (int)s->pid, s->tenant->name,
			  rnic_get_device_name(s->ctx->device), left_out_note(left_out, note, sizeof(note)));
	return 0;
}

static int
do_alloc_pd(struct rnicd_session *s, struct rnicd_rep *rep)
{
	struct rnic_pd *pd;
	int ret = reserve(s, OBJ_PD);

	if (ret != 0)
		return ret;
	s->over_quota = 0;
	pd = rnic_alloc_pd(s->ctx);
	return record_created(s, OBJ_PD, pd, &rep->u.obj.handle);
}

/* The pages of a client's memfd that the daemon maps for a region: [offset, offset + len) of fd. */
struct mr_seg {
	int fd;
	uint64_t offset, len;
};

/* A region's memfds and their pages, as REG_MR names them (rnicd_proto.h): one memfd holding the region from
 * an offset (rnic_alloc_buf), or up to RNICD_MR_MAX_SEGS back to back (a region moved in place in pieces).
 * Checks that they cover the region's pages exactly, page by page; *in_page: where the region starts in its
 * first page. */
static int
mr_segments(const struct rnicd_req *req, const int *fds, int nb_fds, struct mr_seg *seg, int *nb_seg,
	    uint64_t *in_page)
{
	uint64_t va = req->u.reg_mr.va, length = req->u.reg_mr.length, offset = req->u.reg_mr.offset, span;
	uint32_t n = req->u.reg_mr.nb_seg;

	if (length == 0 || va + length < va || va + length > UINT64_MAX - PAGE)
		return EINVAL;
	if (nb_fds != (n == 0 ? 1 : (int)n) || n > RNICD_MR_MAX_SEGS)
		return EBADF;	/* a descriptor per segment, exactly */
	*in_page = va & (PAGE - 1);
	span = RTE_ALIGN_CEIL(va + length, PAGE) - (va & ~(PAGE - 1));
	if (n == 0) {
		/* The client's VA and the file offset must agree within the page: both are mappings of the file. */
		if (offset + length < offset || offset > UINT64_MAX - PAGE || (va & (PAGE - 1)) != (offset & (PAGE - 1)))
			return EINVAL;
		seg[0] = (struct mr_seg){ .fd = fds[0], .offset = offset & ~(PAGE - 1), .len = span };
		*nb_seg = 1;
		return 0;
	}
	if (offset != 0)
		return EINVAL;		/* the segments say where the region is */
	for (uint32_t i = 0; i < n; i++) {
		const struct rnicd_mr_seg *g = &req->u.reg_mr.seg[i];

		if (g->len == 0 || g->len > span || ((g->offset | g->len) & (PAGE - 1)) ||
		    g->offset > UINT64_MAX - g->len)
			return EINVAL;
		span -= g->len;
		seg[i] = (struct mr_seg){ .fd = fds[i], .offset = g->offset, .len = g->len };
	}
	*nb_seg = (int)n;
	return span == 0 ? 0 : EINVAL;
}

/* Whether the daemon may map [offset, offset + len) of a client's descriptor, with write access or not. */
static int
check_client_fd(const struct mr_seg *seg, int writable)
{
	int seals = fcntl(seg->fd, F_GET_SEALS), mode = fcntl(seg->fd, F_GETFL);
	struct stat st;

	/* A file that may shrink could fault the engine mid-access: only sealed memfds are mapped. */
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return EPERM;
	/* Writes asked of memory the client may not write itself: a write-sealed file, a read-only descriptor. */
	if (writable && (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
		return EPERM;
	if (mode < 0 || (mode & O_ACCMODE) == O_WRONLY || (writable && (mode & O_ACCMODE) != O_RDWR))
		return EACCES;
	if (fstat(seg->fd, &st) != 0 || st.st_size < 0 || seg->offset + seg->len > (uint64_t)st.st_size)
		return EINVAL;
	return 0;
}

/* The daemon's mapping of a client's region: its memfds' pages back to back, with the rights the region's
 * access needs: read, and write too for LOCAL_WRITE (which remote writes and atomics need). A read-only
 * mapping is safe: the MPT refuses every write to a region without LOCAL_WRITE. */
static int
map_client_region(const struct rnicd_req *req, const int *fds, int nb_fds, void **map, size_t *map_len,
		  void **host)
{
	int writable = (req->u.reg_mr.access & RNIC_ACCESS_LOCAL_WRITE) != 0;
	struct mr_seg seg[RNICD_MR_MAX_SEGS];
	uint64_t in_page, at = 0;
	uint8_t *base;
	size_t len;
	int nb_seg, ret;

	ret = mr_segments(req, fds, nb_fds, seg, &nb_seg, &in_page);
	for (int i = 0; ret == 0 && i < nb_seg; i++) {
		ret = check_client_fd(&seg[i], writable);
		at += seg[i].len;
	}
	if (ret != 0)
		return ret;
	/* The whole span reserved first, then each memfd's pages in their place within it. */
	len = at;
	base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return ENOMEM;
	at = 0;
	for (int i = 0; i < nb_seg; i++) {
		void *p = mmap(base + at, seg[i].len, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED | MAP_FIXED,
			       seg[i].fd, (off_t)seg[i].offset);

		if (p == MAP_FAILED) {
			ret = errno == EACCES || errno == EPERM ? errno : ENOMEM;
			munmap(base, len);
			return ret;
		}
		at += seg[i].len;
	}
	*map = base;
	*map_len = len;
	*host = base + in_page;
	return 0;
}

/* Room for a registration: an MR, and the pages its range touches (computed so that nothing overflows:
 * the bytes the mapping takes, in *bytes), within the connection's limits and the tenant's quotas. */
static int
reserve_mr(struct rnicd_session *s, const struct rnicd_req *req, uint64_t *bytes)
{
	uint64_t room = s->bytes < rnicd.quota.max_bytes ? rnicd.quota.max_bytes - s->bytes : 0;
	int ret;

	if (req->u.reg_mr.length > room)
		return EDQUOT;
	*bytes = RTE_ALIGN_CEIL(req->u.reg_mr.length + (req->u.reg_mr.va & (PAGE - 1)), PAGE);
	if (*bytes > room)
		return EDQUOT;
	ret = reserve(s, OBJ_MR);
	if (ret == 0 && (ret = rnicd_tenant_charge(s->tenant, RNICD_RES_MEM, *bytes, s->pid)) != 0)
		unreserve(s, OBJ_MR);
	return ret;
}

static int
do_reg_mr(struct rnicd_session *s, const struct rnicd_req *req, const int *fds, int nb_fds, struct rnicd_rep *rep)
{
	const struct rnicd_obj *pd = obj_get(s, req->u.reg_mr.pd, OBJ_PD);
	struct rnic_mr *mr = NULL;
	size_t map_len = 0;
	uint64_t bytes;
	void *map, *host;
	int ret;

	if (nb_fds == 0)
		return EBADF;
	if (pd == NULL)
		return ENOENT;
	ret = reserve_mr(s, req, &bytes);
	if (ret != 0)
		return ret;
	ret = map_client_region(req, fds, nb_fds, &map, &map_len, &host);
	if (ret == 0) {
		mr = rnic_daemon_reg_mr(pd->ptr, (void *)(uintptr_t)req->u.reg_mr.va, host, req->u.reg_mr.length,
				      req->u.reg_mr.access);
		ret = mr == NULL ? errno : 0;
	}
	if (ret == 0 && (rep->u.reg_mr.handle = obj_add(s, OBJ_MR, mr, map, map_len)) == 0) {
		rnic_dereg_mr(mr);
		ret = ENOMEM;
	}
	if (ret != 0) {
		if (map_len != 0)
			munmap(map, map_len);
		unreserve(s, OBJ_MR);
		rnicd_tenant_release(s->tenant, RNICD_RES_MEM, bytes);
		return ret;
	}
	rep->u.reg_mr.lkey = mr->lkey;
	rep->u.reg_mr.rkey = mr->rkey;
	s->bytes += map_len;
	rnicd.stats.shared_bytes += map_len;
	return 0;
}

static int
destroy_obj(struct rnicd_session *s, struct rnicd_obj *o)
{
	enum rnicd_obj_kind kind = o->kind;
	int ret;

	switch (o->kind) {
	case OBJ_PD:
		ret = rnic_dealloc_pd(o->ptr);
		break;
	case OBJ_MR:
		ret = rnic_dereg_mr(o->ptr);	/* quiesces the engine: nothing reads the mapping after */
		if (ret == 0) {
			munmap(o->map, o->map_len);
			rnicd_tenant_release(s->tenant, RNICD_RES_MEM, o->map_len);
			s->bytes -= o->map_len;
			rnicd.stats.shared_bytes -= o->map_len;
		}
		break;
	case OBJ_CQ:
		/* Its pending events go to the client first: none may name it once it is freed (it has no QP,
		 * so the engine raises none after). */
		rnicd_events_forward(s);
		rnicd_events_cq_bound(s, o->ptr, -1);
		ret = rnic_destroy_cq(o->ptr);
		if (ret != 0)
			rnicd_events_cq_bound(s, o->ptr, +1);
		break;
	case OBJ_SRQ:
		ret = rnic_destroy_srq(o->ptr);		/* EBUSY while a QP uses it */
		break;
	default:
		/* Its events raised before and while it is destroyed (which quiesces the engine), after it:
		 * rnicd_events_forward drops those about an object no longer in the table. */
		rnicd_events_forward(s);
		rnicd_cm_qp_gone(o->ptr);
		ret = rnic_destroy_qp(o->ptr);
		break;
	}
	if (ret == 0)
		obj_del(s, o);
	if (ret == 0 && kind == OBJ_QP)
		rnicd_events_forward(s);
	return ret;
}

static int
do_destroy(struct rnicd_session *s, const struct rnicd_req *req, enum rnicd_obj_kind kind)
{
	struct rnicd_obj *o = obj_get(s, req->u.obj.handle, kind);

	return o == NULL ? ENOENT : destroy_obj(s, o);
}

/* Reply with the object's host-interface block: its memfd and size. */
static int
share_block(struct rnicd_session *s, const void *addr, struct msg_fds *out, uint64_t *bytes)
{
	const struct rnicd_block *b = block_find(s, addr);

	if (b == NULL)
		return EFAULT;	/* cannot happen: the session allocated it */
	out->fd[0] = b->fd;
	out->nb = 1;
	*bytes = b->len;
	return 0;
}

static int
do_create_cq(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep, struct msg_fds *out)
{
	struct rnic_daemon_cq_hif hif;
	struct rnic_comp_channel *evch;
	struct rnic_cq *cq;
	void *cq_context;
	int ret = rnicd_events_cq_channel(s, req->u.create_cq.channel, &evch, &cq_context);

	if (ret == 0)
		ret = reserve(s, OBJ_CQ);
	if (ret != 0)
		return ret;
	s->over_quota = 0;
	cq = rnic_create_cq(s->ctx, req->u.create_cq.cqe, cq_context, evch, 0);
	ret = record_created(s, OBJ_CQ, cq, &rep->u.create_cq.handle);
	if (ret != 0)
		return ret;
	rnic_daemon_cq_hif(cq, &hif);
	rnicd_events_cq_bound(s, cq, +1);
	rep->u.create_cq.cqn = hif.cqn;
	rep->u.create_cq.nent = hif.nent;
	return share_block(s, hif.block, out, &rep->u.create_cq.bytes);
}

static int
do_create_qp(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep, struct msg_fds *out)
{
	const struct rnicd_obj *pd = obj_get(s, req->u.create_qp.pd, OBJ_PD);
	const struct rnicd_obj *scq = obj_get(s, req->u.create_qp.send_cq, OBJ_CQ);
	const struct rnicd_obj *rcq = obj_get(s, req->u.create_qp.recv_cq, OBJ_CQ);
	const struct rnicd_obj *srq = req->u.create_qp.srq != 0 ? obj_get(s, req->u.create_qp.srq, OBJ_SRQ) : NULL;
	struct rnic_qp_init_attr ia = {
		.qp_type = (enum rnic_qp_type)req->u.create_qp.qp_type,
		.sq_sig_all = req->u.create_qp.sq_sig_all,
		.cap = req->u.create_qp.cap,
	};
	struct rnic_daemon_qp_hif hif;
	struct rnic_qp *qp;
	int ret;

	if (pd == NULL || scq == NULL || rcq == NULL || (req->u.create_qp.srq != 0 && srq == NULL))
		return ENOENT;
	ret = reserve(s, OBJ_QP);
	if (ret != 0)
		return ret;
	ia.send_cq = scq->ptr;
	ia.recv_cq = rcq->ptr;
	ia.srq = srq != NULL ? srq->ptr : NULL;
	s->over_quota = 0;
	qp = rnic_create_qp(pd->ptr, &ia);
	ret = record_created(s, OBJ_QP, qp, &rep->u.create_qp.handle);
	if (ret != 0)
		return ret;
	rnic_daemon_qp_hif(qp, &hif);
	rep->u.create_qp.qpn = qp->qp_num;
	rep->u.create_qp.cap = ia.cap;
	rep->u.create_qp.sq_cnt = hif.sq_cnt;
	rep->u.create_qp.sq_stride = hif.sq_stride;
	rep->u.create_qp.rq_cnt = hif.rq_cnt;
	rep->u.create_qp.rq_stride = hif.rq_stride;
	return share_block(s, hif.block, out, &rep->u.create_qp.bytes);
}

static int
do_modify_qp(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep)
{
	const struct rnicd_obj *o = obj_get(s, req->u.modify_qp.handle, OBJ_QP);
	struct rnic_qp_attr attr = req->u.modify_qp.attr;
	int ret;

	if (o == NULL)
		return ENOENT;
	/* A tenant's QPs send only from its own GIDs (`tenant ... gids`), so that the switch can tell it apart. */
	if ((req->u.modify_qp.mask & RNIC_QP_AV) &&
	    (ret = rnicd_tenant_gid_check(s->tenant, attr.ah_attr.grh.sgid_index, s->pid)) != 0)
		return ret;
	if ((req->u.modify_qp.mask & RNIC_QP_ALT_PATH) &&
	    (ret = rnicd_tenant_gid_check(s->tenant, attr.alt_ah_attr.grh.sgid_index, s->pid)) != 0)
		return ret;
	/* A controlled Q_Key (bit 31, IBA 10.2.5) is for privileged consumers: with QP1's 0x80010000 a client's
	 * UD QP could speak the CM beside the daemon's (a DREQ for another tenant's connection). */
	if ((req->u.modify_qp.mask & RNIC_QP_QKEY) && (attr.qkey & 0x80000000u))
		return EPERM;
	ret = rnic_modify_qp(o->ptr, &attr, req->u.modify_qp.mask);
	rep->u.modify_qp.state = ((struct rnic_qp *)o->ptr)->state;
	return ret;
}

static int
do_query_qp(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep)
{
	const struct rnicd_obj *o = obj_get(s, req->u.obj.handle, OBJ_QP);
	struct rnic_qp_init_attr init;
	int ret;

	if (o == NULL)
		return ENOENT;
	ret = rnic_query_qp(o->ptr, &rep->u.query_qp.attr, 0, &init);
	rep->u.query_qp.sq_sig_all = init.sq_sig_all;
	return ret;
}

static int
do_qp_counters(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep)
{
	const struct rnicd_obj *o = obj_get(s, req->u.obj.handle, OBJ_QP);

	return o == NULL ? ENOENT : rnic_query_qp_counters(o->ptr, &rep->u.qp_counters);
}

/* An SRQ whose host-interface block is in the client's shared region: the engine reads its WQEs and head as
 * hostile input (doc/qp.md, "Shared receive queues"). */
static int
do_create_srq(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep, struct msg_fds *out)
{
	const struct rnicd_obj *pd = obj_get(s, req->u.create_srq.pd, OBJ_PD);
	struct rnic_srq_init_attr ia = { .attr = req->u.create_srq.attr };
	struct rnic_daemon_srq_hif hif;
	struct rnic_srq *srq;
	int ret;

	if (pd == NULL)
		return ENOENT;
	ret = reserve(s, OBJ_SRQ);
	if (ret != 0)
		return ret;
	s->over_quota = 0;
	srq = rnic_create_srq(pd->ptr, &ia);
	ret = record_created(s, OBJ_SRQ, srq, &rep->u.create_srq.handle);
	if (ret != 0)
		return ret;
	rnic_daemon_srq_hif(srq, &hif);
	rep->u.create_srq.srqn = hif.srqn;
	rep->u.create_srq.cnt = hif.cnt;
	rep->u.create_srq.stride = hif.stride;
	return share_block(s, hif.block, out, &rep->u.create_srq.bytes);
}

static int
do_modify_srq(struct rnicd_session *s, const struct rnicd_req *req)
{
	const struct rnicd_obj *o = obj_get(s, req->u.modify_srq.handle, OBJ_SRQ);
	struct rnic_srq_attr attr = req->u.modify_srq.attr;

	return o == NULL ? ENOENT : rnic_modify_srq(o->ptr, &attr, req->u.modify_srq.mask);
}

static int
do_query_srq(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep)
{
	const struct rnicd_obj *o = obj_get(s, req->u.obj.handle, OBJ_SRQ);

	return o == NULL ? ENOENT : rnic_query_srq(o->ptr, &rep->u.query_srq);
}

static int
do_device_counters(struct rnicd_session *s, const struct rnicd_req *req, struct rnicd_rep *rep)
{
	int n = RTE_MIN(RTE_MAX(req->u.counters.n, 0), RNICD_MAX_COUNTERS);
	int total = rnic_query_device_counters(s->ctx, rep->u.counters.c, n);

	if (total < 0)
		return -total;
	rep->u.counters.total = total;
	rep->u.counters.count = RTE_MIN(total, n);
	return 0;
}

/* Commands that need an open context, the rest. */
static int
dispatch(struct rnicd_session *s, const struct rnicd_req *req, const struct msg_fds *in, struct rnicd_rep *rep,
	 struct msg_fds *out)
{
	switch (req->cmd) {
	case RNICD_LIST:
		return do_list(rep);
	case RNICD_STATS:
		rep->u.stats = rnicd.stats;
		return 0;
	case RNICD_OPEN:
		return do_open(s, req, rep, out);
	default:
		break;
	}
	if (rnicd_cm_cmd(req->cmd)) {
		int ret = rnicd_cm_serve(s, req, rep, &out->fd[0]);

		out->nb = out->fd[0] >= 0;	/* a channel's fd: the daemon keeps its copy */
		return ret;
	}
	if (s->ctx == NULL)
		return ENXIO;		/* no device opened on this connection yet */
	switch (req->cmd) {
	case RNICD_QUERY_PORT:
		return rnic_query_port(s->ctx, 1, &rep->u.port);
	case RNICD_ALLOC_PD:
		return do_alloc_pd(s, rep);
	case RNICD_DEALLOC_PD:
		return do_destroy(s, req, OBJ_PD);
	case RNICD_REG_MR:
		return do_reg_mr(s, req, in->fd, in->nb, rep);
	case RNICD_DEREG_MR:
		return do_destroy(s, req, OBJ_MR);
	case RNICD_CREATE_CQ:
		return do_create_cq(s, req, rep, out);
	case RNICD_DESTROY_CQ:
		return do_destroy(s, req, OBJ_CQ);
	case RNICD_CREATE_QP:
		return do_create_qp(s, req, rep, out);
	case RNICD_MODIFY_QP:
		return do_modify_qp(s, req, rep);
	case RNICD_QUERY_QP:
		return do_query_qp(s, req, rep);
	case RNICD_DESTROY_QP:
		return do_destroy(s, req, OBJ_QP);
	case RNICD_QUERY_QP_COUNTERS:
		return do_qp_counters(s, req, rep);
	case RNICD_CREATE_SRQ:
		return do_create_srq(s, req, rep, out);
	case RNICD_MODIFY_SRQ:
		return do_modify_srq(s, req);
	case RNICD_QUERY_SRQ:
		return do_query_srq(s, req, rep);
	case RNICD_DESTROY_SRQ:
		return do_destroy(s, req, OBJ_SRQ);
	case RNICD_CREATE_COMP_CHANNEL:
		out->nb = 2;		/* the client's end, and the daemon's (the client queues events of its own) */
		out->owned = 1;
		return rnicd_events_create_channel(s, rep, &out->fd[0], &out->fd[1]);
	case RNICD_DESTROY_COMP_CHANNEL:
		return rnicd_events_destroy_channel(s, req->u.obj.handle);
	default:
		return do_device_counters(s, req, rep);
	}
}

/* Whether a message is a well-formed request: known command, our version, exactly its size. */
static int
check_request(const struct rnicd_req *req, ssize_t n, int truncated)
{
	if (truncated || n < (ssize_t)offsetof(struct rnicd_req, u))
		return EBADMSG;
	if (req->cmd == 0 || req->cmd >= RNICD_CMD_END)
		return EOPNOTSUPP;
	if (req->version != RNICD_PROTO_VERSION)
		return EPROTONOSUPPORT;
	return (size_t)n == rnicd_req_size(req->cmd) ? 0 : EBADMSG;
}

/* Close the descriptors of a message that mask names. */
static void
close_fds(const struct msg_fds *m, uint32_t mask)
{
	for (int i = 0; i < m->nb; i++)
		if (((mask >> i) & 1) && m->fd[i] >= 0)
			close(m->fd[i]);
}

int
rnicd_session_serve(struct rnicd_session *s)
{
	static struct rnicd_rep rep;	/* one control thread; large: not on the stack */
	struct msg_fds in = { .nb = 0 }, out = { .nb = 0 };
	struct rnicd_req req;
	int truncated, ret;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	memset(out.fd, -1, sizeof(out.fd));
	n = rnicd_recv_msg_fds(s->sock, &req, sizeof(req), in.fd, RNICD_MAX_FDS, &in.nb, &truncated);
	if (n == -EAGAIN)
		return 0;	/* woken for nothing */
	if (n <= 0) {
		close_fds(&in, ~0u);
		return -1;	/* closed (0) or broken */
	}
	memset(&rep, 0, sizeof(rep));
	pthread_mutex_lock(&rnicd.lock);
	ret = check_request(&req, n, truncated);
	if (ret == 0)
		ret = dispatch(s, &req, &in, &rep, &out);
	if (ret != 0 && ret != EBUSY && ret != EDQUOT && ret != EAGAIN) {
		rnicd.stats.bad_requests++;
		RNICD_LOG(DEBUG, "client %u: request %u refused: %s", s->id, req.cmd, strerror(ret));
	}
	pthread_mutex_unlock(&rnicd.lock);
	close_fds(&in, ~0u);		/* a registered buffer stays mapped without them */
	rep.status = ret;
	/* A reply the socket cannot take at once (the client does not read them) ends the session. */
	n = rnicd_send_msg_fds(s->sock, &rep, sizeof(rep), out.fd, ret == 0 ? out.nb : 0);
	close_fds(&out, out.owned);
	return n == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Sessions                                                                                                 */

struct rnicd_session *
rnicd_session_new(int sock)
{
	struct rnicd_session *s = calloc(1, sizeof(*s));
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (s == NULL)
		return NULL;
	/* The peer's credentials, as the kernel saw them at connect(): who the tenant is. */
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		free(s);
		return NULL;
	}
	s->nb_obj = RTE_MIN(rnicd.quota.max_pd + rnicd.quota.max_cq + 2 * rnicd.quota.max_qp + rnicd.quota.max_mr,
			    MAX_OBJ);
	s->obj = calloc(s->nb_obj, sizeof(*s->obj));
	if (s->obj == NULL) {
		free(s);
		return NULL;
	}
	s->sock = sock;
	s->async_sock = -1;
	s->pid = cred.pid;
	s->uid = cred.uid;
	pthread_mutex_lock(&rnicd.lock);
	s->tenant = rnicd_tenant_join(&cred, s->cgroup, sizeof(s->cgroup));
	if (s->tenant == NULL) {
		int err = errno;

		pthread_mutex_unlock(&rnicd.lock);
		free(s->obj);
		free(s);
		errno = err;
		return NULL;
	}
	rnicd.stats.tenants = rnicd_tenant_count();
	s->id = ++rnicd.next_id;
	if ((s->id & 0xffff) == 0)
		s->id = ++rnicd.next_id;	/* handles carry the id's low 16 bits: never 0 */
	s->next = rnicd.sessions;
	rnicd.sessions = s;
	rnicd.stats.clients_connected++;
	pthread_mutex_unlock(&rnicd.lock);
	return s;
}

/* Destroy every object of one kind the session still holds. */
static void
destroy_all(struct rnicd_session *s, enum rnicd_obj_kind kind)
{
	for (uint32_t i = 0; i < s->nb_obj; i++) {
		if (s->obj[i].kind != kind)
			continue;
		if (destroy_obj(s, &s->obj[i]) != 0) {
			RNICD_LOG(ERR, "client %u: cannot free a %s", s->id,
				  kind == OBJ_QP ? "QP" : kind == OBJ_SRQ ? "SRQ" : kind == OBJ_CQ ? "CQ" :
				  kind == OBJ_MR ? "MR" : "PD");
			continue;
		}
		(*freed_counter(kind))++;
	}
}

void
rnicd_session_end(struct rnicd_session *s)
{
	struct rnicd_session **pp;
	uint32_t live = s->count[OBJ_QP] + s->count[OBJ_SRQ] + s->count[OBJ_CQ] + s->count[OBJ_MR] + s->count[OBJ_PD];
	uint32_t left_out;
	char note[64];

	pthread_mutex_lock(&rnicd.lock);
	rnicd_cm_end(s);	/* first: its connections' peers are told while its QPs still exist */
	rnicd.stats.clients_gone += live != 0;
	if (rnicd_tenant_log_ok(s->tenant, &left_out)) {
		left_out_note(left_out, note, sizeof(note));
		if (live != 0)
			RNICD_LOG(WARNING, "client %u (pid %d, tenant %s) went with %u QPs, %u SRQs, %u CQs, %u MRs, "
				  "%u PDs: freeing them%s", s->id, (int)s->pid, s->tenant->name, s->count[OBJ_QP],
				  s->count[OBJ_SRQ], s->count[OBJ_CQ], s->count[OBJ_MR], s->count[OBJ_PD], note);
		else
			RNICD_LOG(INFO, "client %u (pid %d, tenant %s) disconnected%s", s->id, (int)s->pid,
				  s->tenant->name, note);
	}
	/* QPs first, to the error state so the engine stops sending for them, then destroyed (which quiesces
	 * the engine); then what they used. */
	for (uint32_t i = 0; i < s->nb_obj; i++) {
		struct rnic_qp_attr attr = { .qp_state = RNIC_QPS_ERR };

		if (s->obj[i].kind == OBJ_QP)
			rnic_modify_qp(s->obj[i].ptr, &attr, RNIC_QP_STATE);
	}
	destroy_all(s, OBJ_QP);
	destroy_all(s, OBJ_SRQ);
	destroy_all(s, OBJ_MR);
	destroy_all(s, OBJ_CQ);
	destroy_all(s, OBJ_PD);
	rnicd_events_close(s);
	if (s->ctx != NULL) {
		if (s->dbq != NULL) {
			rnic_daemon_detach_dbq(s->ctx, s->dbq);
			block_free(s, s->dbq);
		}
		rnic_close_device(s->ctx);
		rnicd_tenant_release(s->tenant, RNICD_RES_CTX, 1);
	}
	while (s->blocks != NULL)	/* none left unless an object could not be freed */
		block_free(s, s->blocks->addr);
	rnicd_tenant_leave(s->tenant);
	rnicd.stats.tenants = rnicd_tenant_count();
	for (pp = &rnicd.sessions; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	rnicd.stats.clients_connected--;
	pthread_mutex_unlock(&rnicd.lock);
	close(s->sock);
	free(s->obj);
	free(s);
}
