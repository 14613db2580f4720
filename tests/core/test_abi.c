/* SPDX-License-Identifier: BSD-3-Clause
 * rnic.h promises libibverbs' names, fields and enum values, so a program ports by renaming. This file
 * holds that promise against the real <infiniband/verbs.h>: any difference fails the build.
 */
#include <stddef.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#include "rnic.h"

#define SAME_VALUE(x) _Static_assert((long)RNIC_ ## x == (long)IBV_ ## x, #x)
#define SAME_FIELD(s, f) \
	_Static_assert(offsetof(struct rnic_ ## s, f) == offsetof(struct ibv_ ## s, f), #s "." #f); \
	_Static_assert(sizeof(((struct rnic_ ## s *)0)->f) == sizeof(((struct ibv_ ## s *)0)->f), #s "." #f)

SAME_VALUE(MTU_256); SAME_VALUE(MTU_4096);
SAME_VALUE(ACCESS_LOCAL_WRITE); SAME_VALUE(ACCESS_REMOTE_WRITE); SAME_VALUE(ACCESS_REMOTE_READ);
SAME_VALUE(ACCESS_REMOTE_ATOMIC); SAME_VALUE(ACCESS_MW_BIND); SAME_VALUE(ACCESS_ZERO_BASED);
SAME_VALUE(WC_SUCCESS); SAME_VALUE(WC_LOC_LEN_ERR); SAME_VALUE(WC_LOC_QP_OP_ERR); SAME_VALUE(WC_LOC_PROT_ERR);
SAME_VALUE(WC_WR_FLUSH_ERR); SAME_VALUE(WC_BAD_RESP_ERR); SAME_VALUE(WC_LOC_ACCESS_ERR);
SAME_VALUE(WC_REM_INV_REQ_ERR); SAME_VALUE(WC_REM_ACCESS_ERR); SAME_VALUE(WC_REM_OP_ERR);
SAME_VALUE(WC_RETRY_EXC_ERR); SAME_VALUE(WC_RNR_RETRY_EXC_ERR); SAME_VALUE(WC_REM_ABORT_ERR);
SAME_VALUE(WC_FATAL_ERR); SAME_VALUE(WC_RESP_TIMEOUT_ERR); SAME_VALUE(WC_GENERAL_ERR);
SAME_VALUE(WC_SEND); SAME_VALUE(WC_RDMA_WRITE); SAME_VALUE(WC_RDMA_READ); SAME_VALUE(WC_COMP_SWAP);
SAME_VALUE(WC_FETCH_ADD); SAME_VALUE(WC_BIND_MW); SAME_VALUE(WC_LOCAL_INV); SAME_VALUE(WC_RECV);
SAME_VALUE(WC_RECV_RDMA_WITH_IMM);
SAME_VALUE(WC_GRH); SAME_VALUE(WC_WITH_IMM); SAME_VALUE(WC_WITH_INV);
SAME_VALUE(QPT_RC); SAME_VALUE(QPT_UC); SAME_VALUE(QPT_UD);
SAME_VALUE(QPS_RESET); SAME_VALUE(QPS_INIT); SAME_VALUE(QPS_RTR); SAME_VALUE(QPS_RTS); SAME_VALUE(QPS_SQD);
SAME_VALUE(QPS_SQE); SAME_VALUE(QPS_ERR); SAME_VALUE(QPS_UNKNOWN);
SAME_VALUE(QP_STATE); SAME_VALUE(QP_CUR_STATE); SAME_VALUE(QP_EN_SQD_ASYNC_NOTIFY); SAME_VALUE(QP_ACCESS_FLAGS);
SAME_VALUE(QP_PKEY_INDEX); SAME_VALUE(QP_PORT); SAME_VALUE(QP_QKEY); SAME_VALUE(QP_AV); SAME_VALUE(QP_PATH_MTU);
SAME_VALUE(QP_TIMEOUT); SAME_VALUE(QP_RETRY_CNT); SAME_VALUE(QP_RNR_RETRY); SAME_VALUE(QP_RQ_PSN);
SAME_VALUE(QP_MAX_QP_RD_ATOMIC); SAME_VALUE(QP_ALT_PATH); SAME_VALUE(QP_MIN_RNR_TIMER); SAME_VALUE(QP_SQ_PSN);
SAME_VALUE(QP_MAX_DEST_RD_ATOMIC); SAME_VALUE(QP_PATH_MIG_STATE); SAME_VALUE(QP_CAP); SAME_VALUE(QP_DEST_QPN);
SAME_VALUE(WR_RDMA_WRITE); SAME_VALUE(WR_RDMA_WRITE_WITH_IMM); SAME_VALUE(WR_SEND); SAME_VALUE(WR_SEND_WITH_IMM);
SAME_VALUE(WR_RDMA_READ); SAME_VALUE(WR_ATOMIC_CMP_AND_SWP); SAME_VALUE(WR_ATOMIC_FETCH_AND_ADD);
SAME_VALUE(WR_LOCAL_INV); SAME_VALUE(WR_BIND_MW); SAME_VALUE(WR_SEND_WITH_INV);
SAME_VALUE(SEND_FENCE); SAME_VALUE(SEND_SIGNALED); SAME_VALUE(SEND_SOLICITED); SAME_VALUE(SEND_INLINE);
SAME_VALUE(EVENT_CQ_ERR); SAME_VALUE(EVENT_QP_FATAL); SAME_VALUE(EVENT_QP_REQ_ERR); SAME_VALUE(EVENT_QP_ACCESS_ERR);
SAME_VALUE(EVENT_COMM_EST); SAME_VALUE(EVENT_SQ_DRAINED); SAME_VALUE(EVENT_DEVICE_FATAL);
SAME_VALUE(EVENT_PORT_ACTIVE); SAME_VALUE(EVENT_PORT_ERR); SAME_VALUE(EVENT_QP_LAST_WQE_REACHED);
SAME_VALUE(EVENT_GID_CHANGE);
SAME_VALUE(PORT_DOWN); SAME_VALUE(PORT_ACTIVE); SAME_VALUE(LINK_LAYER_ETHERNET); SAME_VALUE(MIG_MIGRATED);
SAME_VALUE(ATOMIC_HCA); SAME_VALUE(NODE_CA);

SAME_FIELD(sge, addr); SAME_FIELD(sge, length); SAME_FIELD(sge, lkey);
SAME_FIELD(wc, wr_id); SAME_FIELD(wc, status); SAME_FIELD(wc, opcode); SAME_FIELD(wc, vendor_err);
SAME_FIELD(wc, byte_len); SAME_FIELD(wc, imm_data); SAME_FIELD(wc, qp_num); SAME_FIELD(wc, src_qp);
SAME_FIELD(wc, wc_flags); SAME_FIELD(wc, pkey_index); SAME_FIELD(wc, slid); SAME_FIELD(wc, sl);
SAME_FIELD(wc, dlid_path_bits);
_Static_assert(sizeof(struct rnic_wc) == sizeof(struct ibv_wc), "wc");
SAME_FIELD(recv_wr, wr_id); SAME_FIELD(recv_wr, next); SAME_FIELD(recv_wr, sg_list); SAME_FIELD(recv_wr, num_sge);
SAME_FIELD(send_wr, wr_id); SAME_FIELD(send_wr, next); SAME_FIELD(send_wr, sg_list); SAME_FIELD(send_wr, num_sge);
SAME_FIELD(send_wr, opcode); SAME_FIELD(send_wr, send_flags); SAME_FIELD(send_wr, imm_data);
SAME_FIELD(send_wr, invalidate_rkey); SAME_FIELD(send_wr, wr.rdma.remote_addr); SAME_FIELD(send_wr, wr.rdma.rkey);
SAME_FIELD(send_wr, wr.atomic.remote_addr); SAME_FIELD(send_wr, wr.atomic.compare_add);
SAME_FIELD(send_wr, wr.atomic.swap); SAME_FIELD(send_wr, wr.atomic.rkey); SAME_FIELD(send_wr, wr.ud.remote_qpn);
SAME_FIELD(send_wr, wr.ud.remote_qkey);
SAME_FIELD(qp_cap, max_send_wr); SAME_FIELD(qp_cap, max_recv_wr); SAME_FIELD(qp_cap, max_send_sge);
SAME_FIELD(qp_cap, max_recv_sge); SAME_FIELD(qp_cap, max_inline_data);
SAME_FIELD(qp_init_attr, qp_context); SAME_FIELD(qp_init_attr, send_cq); SAME_FIELD(qp_init_attr, recv_cq);
SAME_FIELD(qp_init_attr, srq); SAME_FIELD(qp_init_attr, cap); SAME_FIELD(qp_init_attr, qp_type);
SAME_FIELD(qp_init_attr, sq_sig_all);
SAME_FIELD(global_route, dgid); SAME_FIELD(global_route, flow_label); SAME_FIELD(global_route, sgid_index);
SAME_FIELD(global_route, hop_limit); SAME_FIELD(global_route, traffic_class);
SAME_FIELD(ah_attr, grh); SAME_FIELD(ah_attr, dlid); SAME_FIELD(ah_attr, sl); SAME_FIELD(ah_attr, src_path_bits);
SAME_FIELD(ah_attr, static_rate); SAME_FIELD(ah_attr, is_global); SAME_FIELD(ah_attr, port_num);
SAME_FIELD(qp_attr, qp_state); SAME_FIELD(qp_attr, cur_qp_state); SAME_FIELD(qp_attr, path_mtu);
SAME_FIELD(qp_attr, path_mig_state); SAME_FIELD(qp_attr, qkey); SAME_FIELD(qp_attr, rq_psn);
SAME_FIELD(qp_attr, sq_psn); SAME_FIELD(qp_attr, dest_qp_num); SAME_FIELD(qp_attr, qp_access_flags);
SAME_FIELD(qp_attr, cap); SAME_FIELD(qp_attr, ah_attr); SAME_FIELD(qp_attr, alt_ah_attr);
SAME_FIELD(qp_attr, pkey_index); SAME_FIELD(qp_attr, alt_pkey_index); SAME_FIELD(qp_attr, en_sqd_async_notify);
SAME_FIELD(qp_attr, sq_draining); SAME_FIELD(qp_attr, max_rd_atomic); SAME_FIELD(qp_attr, max_dest_rd_atomic);
SAME_FIELD(qp_attr, min_rnr_timer); SAME_FIELD(qp_attr, port_num); SAME_FIELD(qp_attr, timeout);
SAME_FIELD(qp_attr, retry_cnt); SAME_FIELD(qp_attr, rnr_retry); SAME_FIELD(qp_attr, alt_port_num);
SAME_FIELD(qp_attr, alt_timeout); SAME_FIELD(qp_attr, rate_limit);
SAME_FIELD(device_attr, fw_ver); SAME_FIELD(device_attr, max_mr_size); SAME_FIELD(device_attr, max_qp);
SAME_FIELD(device_attr, max_qp_wr); SAME_FIELD(device_attr, max_sge); SAME_FIELD(device_attr, max_cq);
SAME_FIELD(device_attr, max_cqe); SAME_FIELD(device_attr, max_mr); SAME_FIELD(device_attr, max_pd);
SAME_FIELD(device_attr, max_qp_rd_atom); SAME_FIELD(device_attr, atomic_cap); SAME_FIELD(device_attr, max_ah);
SAME_FIELD(device_attr, max_pkeys); SAME_FIELD(device_attr, phys_port_cnt);
SAME_FIELD(port_attr, state); SAME_FIELD(port_attr, max_mtu); SAME_FIELD(port_attr, active_mtu);
SAME_FIELD(port_attr, gid_tbl_len); SAME_FIELD(port_attr, max_msg_sz); SAME_FIELD(port_attr, link_layer);
SAME_VALUE(SRQ_MAX_WR); SAME_VALUE(SRQ_LIMIT);
SAME_FIELD(srq_attr, max_wr); SAME_FIELD(srq_attr, max_sge); SAME_FIELD(srq_attr, srq_limit);
SAME_FIELD(srq_init_attr, srq_context); SAME_FIELD(srq_init_attr, attr);
SAME_FIELD(async_event, element.srq); SAME_FIELD(async_event, event_type);
SAME_FIELD(device_attr, max_srq); SAME_FIELD(device_attr, max_srq_wr); SAME_FIELD(device_attr, max_srq_sge);

int
main(void)
{
	/* Everything above is checked by the compiler; reaching here means rnic.h matches libibverbs. */
	puts("rnic.h matches <infiniband/verbs.h>: enum values and struct layouts");
	return 0;
}
