/* SPDX-License-Identifier: BSD-3-Clause
 * What softrnic does not do (doc/verbs.md, "Not supported"): every other entry a program can reach through
 * a context (struct ibv_context_ops, the verbs_context extensions verbs.h's inline functions call) and
 * every other exported libibverbs verb that takes a softrnic object fails with EOPNOTSUPP. None may be
 * left NULL or to libibverbs: its own code would follow pointers into provider state our objects do not
 * have. Verbs returning an object return NULL with errno EOPNOTSUPP; verbs returning int return
 * EOPNOTSUPP (libibverbs' convention: a positive errno value).
 */
#include <errno.h>

#include "rnic_verbs.h"

/* Each stub has its entry's exact type (a call through a mismatched function type is undefined), but uses
 * none of its arguments. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define RNIC_VERBS_NO_PTR(ret, name, ...)                                                                  \
	static ret *name(__VA_ARGS__)                                                                      \
	{                                                                                                  \
		errno = EOPNOTSUPP;                                                                        \
		return NULL;                                                                               \
	}
#define RNIC_VERBS_NO_INT(name, ...)                                                                       \
	static int name(__VA_ARGS__)                                                                       \
	{                                                                                                  \
		return EOPNOTSUPP;                                                                         \
	}

/* struct ibv_context_ops */
RNIC_VERBS_NO_INT(no_compat_query_device, struct ibv_context *c, struct ibv_device_attr *a)
RNIC_VERBS_NO_INT(no_compat_query_port, struct ibv_context *c, uint8_t p, struct _compat_ibv_port_attr *a)
RNIC_VERBS_NO_PTR(void, no_compat, void)
RNIC_VERBS_NO_PTR(struct ibv_mw, no_alloc_mw, struct ibv_pd *pd, enum ibv_mw_type type)
RNIC_VERBS_NO_INT(no_bind_mw, struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
RNIC_VERBS_NO_INT(no_dealloc_mw, struct ibv_mw *mw)

/* struct verbs_context */
RNIC_VERBS_NO_INT(no_advise_mr, struct ibv_pd *pd, enum ibv_advise_mr_advice a, uint32_t f, struct ibv_sge *s,
		  uint32_t n)
RNIC_VERBS_NO_PTR(struct ibv_mr, no_alloc_null_mr, struct ibv_pd *pd)
RNIC_VERBS_NO_INT(no_read_counters, struct ibv_counters *c, uint64_t *v, uint32_t n, uint32_t f)
RNIC_VERBS_NO_INT(no_attach_counters_point_flow, struct ibv_counters *c, struct ibv_counter_attach_attr *a,
		  struct ibv_flow *f)
RNIC_VERBS_NO_PTR(struct ibv_counters, no_create_counters, struct ibv_context *c, struct ibv_counters_init_attr *a)
RNIC_VERBS_NO_INT(no_destroy_counters, struct ibv_counters *c)
RNIC_VERBS_NO_PTR(struct ibv_mr, no_reg_dm_mr, struct ibv_pd *pd, struct ibv_dm *dm, uint64_t o, size_t l,
		  unsigned int a)
RNIC_VERBS_NO_PTR(struct ibv_dm, no_alloc_dm, struct ibv_context *c, struct ibv_alloc_dm_attr *a)
RNIC_VERBS_NO_INT(no_free_dm, struct ibv_dm *dm)
RNIC_VERBS_NO_INT(no_modify_flow_action_esp, struct ibv_flow_action *f, struct ibv_flow_action_esp_attr *a)
RNIC_VERBS_NO_INT(no_destroy_flow_action, struct ibv_flow_action *f)
RNIC_VERBS_NO_PTR(struct ibv_flow_action, no_create_flow_action_esp, struct ibv_context *c,
		  struct ibv_flow_action_esp_attr *a)
RNIC_VERBS_NO_PTR(struct ibv_pd, no_alloc_parent_domain, struct ibv_context *c,
		  struct ibv_parent_domain_init_attr *a)
RNIC_VERBS_NO_INT(no_dealloc_td, struct ibv_td *td)
RNIC_VERBS_NO_PTR(struct ibv_td, no_alloc_td, struct ibv_context *c, struct ibv_td_init_attr *a)
RNIC_VERBS_NO_INT(no_modify_cq, struct ibv_cq *cq, struct ibv_modify_cq_attr *a)
RNIC_VERBS_NO_INT(no_post_srq_ops, struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad)
RNIC_VERBS_NO_INT(no_destroy_rwq_ind_table, struct ibv_rwq_ind_table *t)
RNIC_VERBS_NO_PTR(struct ibv_rwq_ind_table, no_create_rwq_ind_table, struct ibv_context *c,
		  struct ibv_rwq_ind_table_init_attr *a)
RNIC_VERBS_NO_INT(no_destroy_wq, struct ibv_wq *wq)
RNIC_VERBS_NO_INT(no_modify_wq, struct ibv_wq *wq, struct ibv_wq_attr *a)
RNIC_VERBS_NO_PTR(struct ibv_wq, no_create_wq, struct ibv_context *c, struct ibv_wq_init_attr *a)
RNIC_VERBS_NO_INT(no_query_rt_values, struct ibv_context *c, struct ibv_values_ex *v)
RNIC_VERBS_NO_INT(no_destroy_flow, struct ibv_flow *f)
RNIC_VERBS_NO_PTR(struct ibv_flow, no_create_flow, struct ibv_qp *qp, struct ibv_flow_attr *a)
RNIC_VERBS_NO_PTR(struct ibv_qp, no_open_qp, struct ibv_context *c, struct ibv_qp_open_attr *a)
RNIC_VERBS_NO_INT(no_get_srq_num, struct ibv_srq *srq, uint32_t *n)
RNIC_VERBS_NO_PTR(struct ibv_xrcd, no_open_xrcd, struct ibv_context *c, struct ibv_xrcd_init_attr *a)
RNIC_VERBS_NO_INT(no_close_xrcd, struct ibv_xrcd *x)

static void
no_placeholder(void)
{
}

static void
rnic_verbs_set_unsupported_context_ops(struct ibv_context_ops *ops)
{
	ops->_compat_query_device = no_compat_query_device;
	ops->_compat_query_port = no_compat_query_port;
	ops->_compat_alloc_pd = no_compat;
	ops->_compat_dealloc_pd = no_compat;
	ops->_compat_reg_mr = no_compat;
	ops->_compat_rereg_mr = no_compat;
	ops->_compat_dereg_mr = no_compat;
	ops->alloc_mw = no_alloc_mw;
	ops->bind_mw = no_bind_mw;
	ops->dealloc_mw = no_dealloc_mw;
	ops->_compat_create_cq = no_compat;
	ops->_compat_cq_event = no_compat;
	ops->_compat_resize_cq = no_compat;
	ops->_compat_destroy_cq = no_compat;
	ops->_compat_create_srq = no_compat;
	ops->_compat_modify_srq = no_compat;
	ops->_compat_query_srq = no_compat;
	ops->_compat_destroy_srq = no_compat;
	ops->_compat_create_qp = no_compat;
	ops->_compat_query_qp = no_compat;
	ops->_compat_modify_qp = no_compat;
	ops->_compat_destroy_qp = no_compat;
	ops->_compat_create_ah = no_compat;
	ops->_compat_destroy_ah = no_compat;
	ops->_compat_attach_mcast = no_compat;
	ops->_compat_detach_mcast = no_compat;
	ops->_compat_async_event = no_compat;
}

void
rnic_verbs_set_unsupported_ops(struct verbs_context *vctx)
{
	rnic_verbs_set_unsupported_context_ops(&vctx->context.ops);
	vctx->advise_mr = no_advise_mr;
	vctx->alloc_null_mr = no_alloc_null_mr;
	vctx->read_counters = no_read_counters;
	vctx->attach_counters_point_flow = no_attach_counters_point_flow;
	vctx->create_counters = no_create_counters;
	vctx->destroy_counters = no_destroy_counters;
	vctx->reg_dm_mr = no_reg_dm_mr;
	vctx->alloc_dm = no_alloc_dm;
	vctx->free_dm = no_free_dm;
	vctx->modify_flow_action_esp = no_modify_flow_action_esp;
	vctx->destroy_flow_action = no_destroy_flow_action;
	vctx->create_flow_action_esp = no_create_flow_action_esp;
	vctx->alloc_parent_domain = no_alloc_parent_domain;
	vctx->dealloc_td = no_dealloc_td;
	vctx->alloc_td = no_alloc_td;
	vctx->modify_cq = no_modify_cq;
	vctx->post_srq_ops = no_post_srq_ops;
	vctx->destroy_rwq_ind_table = no_destroy_rwq_ind_table;
	vctx->create_rwq_ind_table = no_create_rwq_ind_table;
	vctx->destroy_wq = no_destroy_wq;
	vctx->modify_wq = no_modify_wq;
	vctx->create_wq = no_create_wq;
	vctx->query_rt_values = no_query_rt_values;
	vctx->ibv_destroy_flow = no_destroy_flow;
	vctx->ABI_placeholder2 = no_placeholder;
	vctx->ibv_create_flow = no_create_flow;
	vctx->ABI_placeholder1 = no_placeholder;
	vctx->open_qp = no_open_qp;
	vctx->get_srq_num = no_get_srq_num;
	vctx->open_xrcd = no_open_xrcd;
	vctx->close_xrcd = no_close_xrcd;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Exported verbs that softrnic does not do (rnic_verbs.map lists them with libibverbs' versions)          */

#define RNIC_VERBS_NO_EXPORT_PTR(ret, name, ...)                                                           \
	ret *name(__VA_ARGS__)                                                                             \
	{                                                                                                  \
		errno = EOPNOTSUPP;                                                                        \
		return NULL;                                                                               \
	}
#define RNIC_VERBS_NO_EXPORT_INT(name, ...)                                                                \
	int name(__VA_ARGS__)                                                                              \
	{                                                                                                  \
		return EOPNOTSUPP;                                                                         \
	}
#define RNIC_VERBS_NO_EXPORT_VOID(name, ...)                                                               \
	void name(__VA_ARGS__)                                                                             \
	{                                                                                                  \
	}

RNIC_VERBS_NO_EXPORT_INT(ibv_resize_cq, struct ibv_cq *cq, int cqe)
RNIC_VERBS_NO_EXPORT_INT(ibv_attach_mcast, struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
RNIC_VERBS_NO_EXPORT_INT(ibv_detach_mcast, struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
RNIC_VERBS_NO_EXPORT_INT(ibv_init_ah_from_wc, struct ibv_context *c, uint8_t port, struct ibv_wc *wc,
			 struct ibv_grh *grh, struct ibv_ah_attr *a)
RNIC_VERBS_NO_EXPORT_PTR(struct ibv_ah, ibv_create_ah_from_wc, struct ibv_pd *pd, struct ibv_wc *wc,
			 struct ibv_grh *grh, uint8_t port)
RNIC_VERBS_NO_EXPORT_INT(ibv_resolve_eth_l2_from_gid, struct ibv_context *c, struct ibv_ah_attr *a,
			 uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
RNIC_VERBS_NO_EXPORT_PTR(struct ibv_pd, ibv_import_pd, struct ibv_context *c, uint32_t handle)
RNIC_VERBS_NO_EXPORT_PTR(struct ibv_mr, ibv_import_mr, struct ibv_pd *pd, uint32_t handle)
RNIC_VERBS_NO_EXPORT_PTR(struct ibv_dm, ibv_import_dm, struct ibv_context *c, uint32_t handle)
RNIC_VERBS_NO_EXPORT_VOID(ibv_unimport_pd, struct ibv_pd *pd)
RNIC_VERBS_NO_EXPORT_VOID(ibv_unimport_mr, struct ibv_mr *mr)
RNIC_VERBS_NO_EXPORT_VOID(ibv_unimport_dm, struct ibv_dm *dm)
RNIC_VERBS_NO_EXPORT_INT(ibv_query_ece, struct ibv_qp *qp, struct ibv_ece *ece)
RNIC_VERBS_NO_EXPORT_INT(ibv_set_ece, struct ibv_qp *qp, struct ibv_ece *ece)
RNIC_VERBS_NO_EXPORT_PTR(struct ibv_mr, ibv_reg_dmabuf_mr, struct ibv_pd *pd, uint64_t offset, size_t length,
			 uint64_t iova, int fd, int access)

/* As libibverbs, whose errors here are -1 with errno. */
int
ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

int
ibv_get_device_index(struct ibv_device *device)
{
	return -1;	/* no kernel device index */
}

/* Only the P_Key table entry RoCE has: the default, full-membership 0xFFFF at index 0 (IBA 10.9.1.2). */
int
ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (port_num != 1 || index != 0)
		return EINVAL;
	*pkey = 0xffff;
	return 0;
}

int
ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	return port_num == 1 && (pkey & 0xff7f) == 0xff7f ? 0 : -1;	/* full or limited member of the default */
}

/* Not guaranteed: softrnic places a message's data in packet order, but does not promise it to readers
 * that poll the buffer before the completion. */
int
ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return 0;
}
