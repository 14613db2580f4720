/* SPDX-License-Identifier: BSD-3-Clause
 * The interposer's devices and contexts: ibv_get_device_list lists the engine's devices, ibv_open_device
 * hands out a verbs_context laid out as rdma-core 44's verbs.h reads it (doc/verbs.md), and the query verbs
 * answer from the rnic_ device. Exported under libibverbs' names and symbol versions (rnic_verbs.map).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic_verbs.h"

/* rdma-core's private enum (driver.h, not installed): what ibv_devinfo asks ibv_query_gid_type for. */
enum rnic_verbs_gid_type_sysfs { RNIC_VERBS_GID_TYPE_SYSFS_IB_ROCE_V1, RNIC_VERBS_GID_TYPE_SYSFS_ROCE_V2 };

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum rnic_verbs_gid_type_sysfs *type);

#define RNIC_VERBS_MAX_DEVICES 16

/* The engine's devices, listed once (the engine's devices live as long as the process). */
static struct rnic_verbs_device rnic_verbs_devices[RNIC_VERBS_MAX_DEVICES];
static int rnic_verbs_nb_devices = -1;
static pthread_mutex_t rnic_verbs_list_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The vendor and part IDs the devices report (ibv_query_device): softrnic's own (0, 0: no vendor), or
 * SOFTRNIC_VERBS_VENDOR=VENDOR_ID:PART_ID (C integers, "0x02c9:4119"). Some tools choose a code path by the
 * device's identity rather than by a capability: perftest 4.5 uses its ibv_wr_* post API only on the parts
 * it knows (mlx5's, EFA's), and inline data only on a known vendor's (doc/verbs.md).
 */
static uint32_t rnic_verbs_vendor_id, rnic_verbs_vendor_part_id;

/* 0, or EINVAL (said on stderr) for a SOFTRNIC_VERBS_VENDOR that is not two numbers. */
static int
rnic_verbs_read_vendor(void)
{
	const char *env = getenv("SOFTRNIC_VERBS_VENDOR");
	unsigned long vendor, part;
	char *end;

	if (env == NULL || env[0] == '\0')
		return 0;
	errno = 0;
	vendor = strtoul(env, &end, 0);
	if (errno == 0 && *end == ':' && end[1] != '\0') {
		part = strtoul(end + 1, &end, 0);
		if (errno == 0 && *end == '\0' && vendor <= UINT32_MAX && part <= UINT32_MAX) {
			rnic_verbs_vendor_id = (uint32_t)vendor;
			rnic_verbs_vendor_part_id = (uint32_t)part;
			return 0;
		}
	}
	fprintf(stderr, "softrnic-verbs: SOFTRNIC_VERBS_VENDOR \"%s\" is not VENDOR_ID:PART_ID (\"0x02c9:4119\")\n",
		env);
	return EINVAL;
}

static int
rnic_verbs_list_devices(void)
{
	struct rnic_device **list;
	int n = 0;

	if (rnic_verbs_read_vendor() != 0)
		return EINVAL;
	list = rnic_get_device_list(NULL);

	for (; list != NULL && list[n] != NULL && n < RNIC_VERBS_MAX_DEVICES; n++) {
		struct rnic_verbs_device *d = &rnic_verbs_devices[n];
		const char *name = rnic_get_device_name(list[n]);

		d->dev = list[n];
		d->ibv.node_type = IBV_NODE_CA;
		d->ibv.transport_type = IBV_TRANSPORT_IB;	/* RoCE reports IB transport, as rxe and mlx5 do */
		snprintf(d->ibv.name, sizeof(d->ibv.name), "%s", name);
		/* The precisions keep each result within its field: a long name is cut, never overflows. */
		snprintf(d->ibv.dev_name, sizeof(d->ibv.dev_name), "softrnic-%.54s", name);
		/* No sysfs node: libibverbs' ibv_read_sysfs_file on these paths finds nothing (no board_id). */
		snprintf(d->ibv.dev_path, sizeof(d->ibv.dev_path), "/nonexistent/softrnic/%.63s", name);
		snprintf(d->ibv.ibdev_path, sizeof(d->ibv.ibdev_path), "/nonexistent/softrnic/%.63s", name);
	}
	rnic_free_device_list(list);
	rnic_verbs_nb_devices = n;
	return 0;
}

struct ibv_device **
ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	int err = rnic_verbs_engine_up();

	if (err != 0) {
		errno = err;
		return NULL;
	}
	pthread_mutex_lock(&rnic_verbs_list_lock);
	if (rnic_verbs_nb_devices < 0)
		err = rnic_verbs_list_devices();
	pthread_mutex_unlock(&rnic_verbs_list_lock);
	if (err != 0) {
		errno = err;
		return NULL;
	}
	list = calloc((size_t)rnic_verbs_nb_devices + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < rnic_verbs_nb_devices; i++)
		list[i] = &rnic_verbs_devices[i].ibv;
	if (num_devices != NULL)
		*num_devices = rnic_verbs_nb_devices;
	return list;
}

void
ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64
ibv_get_device_guid(struct ibv_device *device)
{
	return rnic_get_device_guid(RNIC_VERBS_CONTAINER(device, struct rnic_verbs_device, ibv)->dev);
}

struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	struct rnic_verbs_device *d = RNIC_VERBS_CONTAINER(device, struct rnic_verbs_device, ibv);
	struct rnic_verbs_context *c = calloc(1, sizeof(*c));
	struct ibv_context *context;

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->ctx = rnic_open_device(d->dev);
	if (c->ctx == NULL) {
		free(c);
		return NULL;
	}
	context = &c->vctx.context;
	context->device = device;
	context->cmd_fd = -1;
	context->async_fd = c->ctx->async_fd;
	context->num_comp_vectors = c->ctx->num_comp_vectors;
	pthread_mutex_init(&context->mutex, NULL);
	pthread_mutex_init(&c->objs_lock, NULL);
	for (int k = 0; k < RNIC_VERBS_KINDS; k++)
		c->objs[k].next = c->objs[k].prev = &c->objs[k];
	context->abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->vctx.sz = sizeof(c->vctx);
	rnic_verbs_set_datapath_ops(&context->ops);
	rnic_verbs_set_unsupported_ops(&c->vctx);
	c->vctx.query_port = rnic_verbs_query_port_ex;
	c->vctx.query_device_ex = rnic_verbs_query_device_ex;
	c->vctx.create_srq_ex = rnic_verbs_create_srq_ex;
	c->vctx.create_qp_ex = rnic_verbs_create_qp_ex;
	c->vctx.create_cq_ex = rnic_verbs_create_cq_ex;
	c->vctx.modify_qp_rate_limit = rnic_verbs_modify_qp_rate_limit;
	return context;
}

/* As the kernel when a process closes its verbs device: what the program left on the context is released
 * first (rnic_verbs_release.c), then the context; rnic_close_device itself refuses a context with objects. */
int
ibv_close_device(struct ibv_context *context)
{
	struct rnic_verbs_context *c = rnic_verbs_ctx(context);
	int ret = rnic_verbs_release_all(c);

	if (ret == 0)
		ret = rnic_close_device(c->ctx);
	if (ret != 0)
		return ret;
	pthread_mutex_destroy(&c->objs_lock);
	pthread_mutex_destroy(&context->mutex);
	free(c);
	return 0;
}

int
ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct rnic_device_attr a;
	int ret = rnic_query_device(rnic_verbs_ctx(context)->ctx, &a);

	if (ret != 0)
		return ret;
	/* rnic_device_attr is ibv_device_attr and a softrnic field after it (rnic_verbs_abi.c checks). */
	memcpy(attr, &a, sizeof(*attr));
	attr->vendor_id = rnic_verbs_vendor_id;
	attr->vendor_part_id = rnic_verbs_vendor_part_id;
	return 0;
}

int
rnic_verbs_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex = { 0 };
	int ret;

	if ((input != NULL && input->comp_mask != 0) || attr_size < sizeof(ex.orig_attr))
		return EINVAL;
	ret = ibv_query_device(context, &ex.orig_attr);
	if (ret != 0)
		return ret;
	/* Packet pacing: a QP's IBV_QP_RATE_LIMIT (kbit/s) is held by the engine's pacer for RC, UC and UD QPs
	 * at any rate (doc/congestion.md); an application, as perftest's PP mode, looks for it here. */
	ex.packet_pacing_caps.qp_rate_limit_min = 1;
	ex.packet_pacing_caps.qp_rate_limit_max = UINT32_MAX;
	ex.packet_pacing_caps.supported_qpts = 1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD;
	/* None of the other extended capabilities (ODP, TSO, RSS, timestamps, device memory): zero, as
	 * verbs.h's legacy fallback reports them; a caller with a longer struct gets the rest zeroed too. */
	ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
	memset(attr, 0, attr_size);
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	return 0;
}

int
rnic_verbs_query_port_ex(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
			 size_t attr_len)
{
	struct ibv_port_attr p = { 0 };
	struct rnic_port_attr a;
	int ret = rnic_query_port(rnic_verbs_ctx(context)->ctx, port_num, &a);

	if (ret != 0)
		return ret;
	/* rnic_port_attr is ibv_port_attr field for field (rnic_verbs_abi.c checks). */
	memcpy(&p, &a, sizeof(a) < sizeof(p) ? sizeof(a) : sizeof(p));
	memset(attr, 0, attr_len);
	memcpy(attr, &p, attr_len < sizeof(p) ? attr_len : sizeof(p));
	return 0;
}

/* libibverbs' exported ibv_query_port takes its compat struct, the same layout as ibv_port_attr; verbs.h
 * calls it only when the context has no query_port entry. */
#undef ibv_query_port
int
ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *port_attr)
{
	return rnic_verbs_query_port_ex(context, port_num, (struct ibv_port_attr *)port_attr,
					sizeof(struct ibv_port_attr));
}

int
ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	int ret = rnic_query_gid(rnic_verbs_ctx(context)->ctx, port_num, index, (union rnic_gid *)gid);

	/* libibverbs: -1 on failure (it reads sysfs) */
	return ret == 0 ? 0 : -1;
}

/* Every GID of a softrnic port is a RoCE v2 one: its IPv4 address, IPv4-mapped (doc/wire.md). */
int
ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		   enum rnic_verbs_gid_type_sysfs *type)
{
	union ibv_gid gid;

	if (index > INT32_MAX || ibv_query_gid(context, port_num, (int)index, &gid) != 0)
		return -1;
	*type = RNIC_VERBS_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

static int
rnic_verbs_gid_entry(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		     struct ibv_gid_entry *entry)
{
	static const uint8_t zero[16];

	if (port_num > UINT8_MAX || gid_index > INT32_MAX ||
	    ibv_query_gid(context, (uint8_t)port_num, (int)gid_index, &entry->gid) != 0)
		return EINVAL;
	if (memcmp(entry->gid.raw, zero, sizeof(zero)) == 0)
		return ENODATA;		/* an empty entry, as libibverbs reports one */
	entry->gid_index = gid_index;
	entry->port_num = port_num;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 0;	/* the port is DPDK's, not a kernel netdev */
	return 0;
}

int
_ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		  struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	if (flags != 0 || entry_size < sizeof(*entry))
		return EINVAL;
	return rnic_verbs_gid_entry(context, port_num, gid_index, entry);
}

ssize_t
_ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries, size_t max_entries,
		     uint32_t flags, size_t entry_size)
{
	struct rnic_port_attr port;
	ssize_t n = 0;

	if (flags != 0 || entry_size < sizeof(*entries) || rnic_query_port(rnic_verbs_ctx(context)->ctx, 1, &port))
		return -EINVAL;
	for (int i = 0; i < port.gid_tbl_len; i++) {
		if ((size_t)n == max_entries)
			return -EINVAL;
		if (rnic_verbs_gid_entry(context, 1, (uint32_t)i, (struct ibv_gid_entry *)
					 ((char *)entries + (size_t)n * entry_size)) == 0)
			n++;
	}
	return n;
}

int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct rnic_async_event e;

	if (rnic_get_async_event(rnic_verbs_ctx(context)->ctx, &e) != 0)
		return -1;
	event->event_type = (enum ibv_event_type)e.event_type;
	switch (e.event_type) {
	case RNIC_EVENT_CQ_ERR:
		event->element.cq = &((struct rnic_verbs_cq *)e.element.cq->cq_context)->ibv;
		break;
	case RNIC_EVENT_QP_FATAL:
	case RNIC_EVENT_QP_REQ_ERR:
	case RNIC_EVENT_QP_ACCESS_ERR:
	case RNIC_EVENT_COMM_EST:
	case RNIC_EVENT_SQ_DRAINED:
	case RNIC_EVENT_PATH_MIG:
	case RNIC_EVENT_PATH_MIG_ERR:
	case RNIC_EVENT_QP_LAST_WQE_REACHED:
		event->element.qp = &((struct rnic_verbs_qp *)e.element.qp->qp_context)->ibv;
		break;
	case RNIC_EVENT_SRQ_ERR:
	case RNIC_EVENT_SRQ_LIMIT_REACHED:
		event->element.srq = &((struct rnic_verbs_srq *)e.element.srq->srq_context)->ibv;
		break;
	default:
		event->element.port_num = e.element.port_num;
		break;
	}
	/* Acknowledged here: the rnic_ event holds nothing the program's acknowledgement would release. */
	rnic_ack_async_event(&e);
	return 0;
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
