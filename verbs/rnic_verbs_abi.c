/* SPDX-License-Identifier: BSD-3-Clause
 * The interposer hands rnic_ verbs the program's libibverbs structs where rnic.h declares the same layout
 * (rnic.h: every field has the meaning and numeric value of its ibv_ twin): a work request list, a
 * completion array, QP and AH attributes, device and port attributes. These checks hold rdma-core 44's
 * verbs.h and rnic.h to it at build time, field by field: a change to either that breaks a cast fails the
 * build here, not a program at run time.
 */
#include <stddef.h>

#include "rnic_verbs.h"

#define RNIC_VERBS_SAME(ibv, rnic, field)                                                                   \
	_Static_assert(offsetof(struct ibv, field) == offsetof(struct rnic, field) &&                          \
			       sizeof(((struct ibv *)0)->field) == sizeof(((struct rnic *)0)->field),          \
		       #ibv "." #field " is not " #rnic "." #field)

/* ibv_post_send / ibv_post_recv: the work request lists (a UD send's ah is replaced, see the data path) */
RNIC_VERBS_SAME(ibv_sge, rnic_sge, addr);
RNIC_VERBS_SAME(ibv_sge, rnic_sge, length);
RNIC_VERBS_SAME(ibv_sge, rnic_sge, lkey);
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct rnic_sge), "ibv_sge arrays are rnic_sge arrays");
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr_id);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, next);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, sg_list);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, num_sge);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, opcode);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, send_flags);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, imm_data);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, invalidate_rkey);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.rdma.remote_addr);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.rdma.rkey);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.atomic.remote_addr);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.atomic.compare_add);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.atomic.swap);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.atomic.rkey);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.ud.ah);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.ud.remote_qpn);
RNIC_VERBS_SAME(ibv_send_wr, rnic_send_wr, wr.ud.remote_qkey);
_Static_assert(sizeof(struct ibv_send_wr) >= sizeof(struct rnic_send_wr), "rnic_send_wr is a prefix");
RNIC_VERBS_SAME(ibv_recv_wr, rnic_recv_wr, wr_id);
RNIC_VERBS_SAME(ibv_recv_wr, rnic_recv_wr, next);
RNIC_VERBS_SAME(ibv_recv_wr, rnic_recv_wr, sg_list);
RNIC_VERBS_SAME(ibv_recv_wr, rnic_recv_wr, num_sge);
_Static_assert(sizeof(struct ibv_recv_wr) == sizeof(struct rnic_recv_wr), "ibv_recv_wr is rnic_recv_wr");

/* ibv_post_srq_recv: the same receive work request lists; ibv_create_srq / ibv_modify_srq / ibv_query_srq */
RNIC_VERBS_SAME(ibv_srq_attr, rnic_srq_attr, max_wr);
RNIC_VERBS_SAME(ibv_srq_attr, rnic_srq_attr, max_sge);
RNIC_VERBS_SAME(ibv_srq_attr, rnic_srq_attr, srq_limit);
_Static_assert(sizeof(struct ibv_srq_attr) == sizeof(struct rnic_srq_attr), "ibv_srq_attr is rnic_srq_attr");
_Static_assert((int)IBV_SRQ_MAX_WR == (int)RNIC_SRQ_MAX_WR && (int)IBV_SRQ_LIMIT == (int)RNIC_SRQ_LIMIT,
	       "ibv_srq_attr_mask is rnic_srq_attr_mask");

/* ibv_poll_cq: the completion array */
RNIC_VERBS_SAME(ibv_wc, rnic_wc, wr_id);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, status);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, opcode);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, vendor_err);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, byte_len);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, imm_data);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, invalidated_rkey);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, qp_num);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, src_qp);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, wc_flags);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, pkey_index);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, slid);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, sl);
RNIC_VERBS_SAME(ibv_wc, rnic_wc, dlid_path_bits);
_Static_assert(sizeof(struct ibv_wc) == sizeof(struct rnic_wc), "ibv_wc arrays are rnic_wc arrays");

/* ibv_create_qp / ibv_modify_qp / ibv_query_qp / ibv_create_ah */
RNIC_VERBS_SAME(ibv_qp_cap, rnic_qp_cap, max_send_wr);
RNIC_VERBS_SAME(ibv_qp_cap, rnic_qp_cap, max_recv_wr);
RNIC_VERBS_SAME(ibv_qp_cap, rnic_qp_cap, max_send_sge);
RNIC_VERBS_SAME(ibv_qp_cap, rnic_qp_cap, max_recv_sge);
RNIC_VERBS_SAME(ibv_qp_cap, rnic_qp_cap, max_inline_data);
_Static_assert(sizeof(struct ibv_qp_cap) == sizeof(struct rnic_qp_cap), "ibv_qp_cap is rnic_qp_cap");
RNIC_VERBS_SAME(ibv_global_route, rnic_global_route, dgid);
RNIC_VERBS_SAME(ibv_global_route, rnic_global_route, flow_label);
RNIC_VERBS_SAME(ibv_global_route, rnic_global_route, sgid_index);
RNIC_VERBS_SAME(ibv_global_route, rnic_global_route, hop_limit);
RNIC_VERBS_SAME(ibv_global_route, rnic_global_route, traffic_class);
RNIC_VERBS_SAME(ibv_ah_attr, rnic_ah_attr, grh);
RNIC_VERBS_SAME(ibv_ah_attr, rnic_ah_attr, dlid);
RNIC_VERBS_SAME(ibv_ah_attr, rnic_ah_attr, sl);
RNIC_VERBS_SAME(ibv_ah_attr, rnic_ah_attr, src_path_bits);
RNIC_VERBS_SAME(ibv_ah_attr, rnic_ah_attr, static_rate);
RNIC_VERBS_SAME(ibv_ah_attr, rnic_ah_attr, is_global);
RNIC_VERBS_SAME(ibv_ah_attr, rnic_ah_attr, port_num);
_Static_assert(sizeof(struct ibv_ah_attr) == sizeof(struct rnic_ah_attr), "ibv_ah_attr is rnic_ah_attr");
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, qp_state);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, cur_qp_state);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, path_mtu);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, path_mig_state);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, qkey);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, rq_psn);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, sq_psn);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, dest_qp_num);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, qp_access_flags);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, cap);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, ah_attr);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, alt_ah_attr);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, pkey_index);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, alt_pkey_index);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, en_sqd_async_notify);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, sq_draining);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, max_rd_atomic);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, max_dest_rd_atomic);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, min_rnr_timer);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, port_num);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, timeout);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, retry_cnt);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, rnr_retry);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, alt_port_num);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, alt_timeout);
RNIC_VERBS_SAME(ibv_qp_attr, rnic_qp_attr, rate_limit);
_Static_assert(sizeof(struct ibv_qp_attr) == sizeof(struct rnic_qp_attr), "ibv_qp_attr is rnic_qp_attr");
_Static_assert(sizeof(union ibv_gid) == sizeof(union rnic_gid), "ibv_gid is rnic_gid");

/* ibv_query_device / ibv_query_port */
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, fw_ver);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, node_guid);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, sys_image_guid);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_mr_size);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, page_size_cap);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, vendor_id);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, vendor_part_id);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, hw_ver);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_qp);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_qp_wr);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, device_cap_flags);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_sge);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_sge_rd);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_cq);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_cqe);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_mr);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_pd);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_qp_rd_atom);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_ee_rd_atom);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_res_rd_atom);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_qp_init_rd_atom);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_ee_init_rd_atom);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, atomic_cap);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_ee);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_rdd);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_mw);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_raw_ipv6_qp);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_raw_ethy_qp);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_mcast_grp);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_mcast_qp_attach);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_total_mcast_qp_attach);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_ah);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_fmr);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_map_per_fmr);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_srq);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_srq_wr);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_srq_sge);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, max_pkeys);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, local_ca_ack_delay);
RNIC_VERBS_SAME(ibv_device_attr, rnic_device_attr, phys_port_cnt);
_Static_assert(sizeof(struct rnic_device_attr) >= sizeof(struct ibv_device_attr), "ibv_device_attr is a prefix");
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, state);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, max_mtu);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, active_mtu);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, gid_tbl_len);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, port_cap_flags);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, max_msg_sz);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, bad_pkey_cntr);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, qkey_viol_cntr);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, pkey_tbl_len);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, lid);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, sm_lid);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, lmc);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, max_vl_num);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, sm_sl);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, subnet_timeout);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, init_type_reply);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, active_width);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, active_speed);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, phys_state);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, link_layer);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, flags);
RNIC_VERBS_SAME(ibv_port_attr, rnic_port_attr, port_cap_flags2);
_Static_assert(sizeof(struct ibv_port_attr) == sizeof(struct rnic_port_attr), "ibv_port_attr is rnic_port_attr");

/* The enums whose values pass through unchanged (compared as int: they are different enum types) */
#define RNIC_VERBS_SAME_VALUE(ibv, rnic) _Static_assert((int)(ibv) == (int)(rnic), #ibv " is not " #rnic)
RNIC_VERBS_SAME_VALUE(IBV_QPT_RC, RNIC_QPT_RC);
RNIC_VERBS_SAME_VALUE(IBV_QPT_UC, RNIC_QPT_UC);
RNIC_VERBS_SAME_VALUE(IBV_QPT_UD, RNIC_QPT_UD);
RNIC_VERBS_SAME_VALUE(IBV_WR_SEND_WITH_INV, RNIC_WR_SEND_WITH_INV);
RNIC_VERBS_SAME_VALUE(IBV_WR_BIND_MW, RNIC_WR_BIND_MW);
RNIC_VERBS_SAME_VALUE(IBV_WC_RECV_RDMA_WITH_IMM, RNIC_WC_RECV_RDMA_WITH_IMM);
RNIC_VERBS_SAME_VALUE(IBV_WC_LOCAL_INV, RNIC_WC_LOCAL_INV);
RNIC_VERBS_SAME_VALUE(IBV_WC_GENERAL_ERR, RNIC_WC_GENERAL_ERR);
RNIC_VERBS_SAME_VALUE(IBV_QP_DEST_QPN, RNIC_QP_DEST_QPN);
RNIC_VERBS_SAME_VALUE(IBV_QPS_ERR, RNIC_QPS_ERR);
RNIC_VERBS_SAME_VALUE(IBV_EVENT_GID_CHANGE, RNIC_EVENT_GID_CHANGE);
RNIC_VERBS_SAME_VALUE(IBV_SEND_INLINE, RNIC_SEND_INLINE);
RNIC_VERBS_SAME_VALUE(IBV_ACCESS_ZERO_BASED, RNIC_ACCESS_ZERO_BASED);
RNIC_VERBS_SAME_VALUE(IBV_MTU_4096, RNIC_MTU_4096);
