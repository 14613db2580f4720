/* SPDX-License-Identifier: BSD-3-Clause
 * The libibverbs names the interop programs use, on softrnic: every struct, field and enum value of rnic.h
 * has the meaning and numeric value of its ibv_ twin (rnic.h says so), so mapping the names is the whole
 * port. verbs_check.c builds against libibverbs for the guest (Linux Soft-RoCE) and, with VERBS_ON_RNIC,
 * against softrnic through this header: both ends of the interop suite run the same program.
 *
 * What libibverbs leaves to the kernel, softrnic does in the process: verbs_backend_init() brings the
 * engine up from EAL and engine arguments and waits for the port's link; verbs_backend_progress() runs the
 * stages a stage map puts on the program's own lcore (manual progress: "--stages devices" with one lcore),
 * which the program calls whenever it waits, for a completion or for its peer's TCP message alike;
 * verbs_backend_stop() stops the stages before the objects go, verbs_backend_fini() ends the engine.
 * With RNIC_DAEMON set the program is a tenant of rnicd instead (doc/rnicd.md: no EAL, its arguments
 * ignored), as tests/ovs/ovs_vm.py runs it.
 */
#ifndef VERBS_RNIC_H
#define VERBS_RNIC_H

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "rnic.h"

/* Objects and attributes */
#define ibv_device rnic_device
#define ibv_context rnic_context
#define ibv_pd rnic_pd
#define ibv_mr rnic_mr
#define ibv_cq rnic_cq
#define ibv_qp rnic_qp
#define ibv_qp_init_attr rnic_qp_init_attr
#define ibv_qp_attr rnic_qp_attr
#define ibv_send_wr rnic_send_wr
#define ibv_recv_wr rnic_recv_wr
#define ibv_sge rnic_sge
#define ibv_wc rnic_wc
#define ibv_gid rnic_gid
#define ibv_port_attr rnic_port_attr
#define ibv_mtu rnic_mtu

/* Verbs */
#define ibv_get_device_list rnic_get_device_list
#define ibv_free_device_list rnic_free_device_list
#define ibv_get_device_name rnic_get_device_name
#define ibv_open_device rnic_open_device
#define ibv_close_device rnic_close_device
#define ibv_query_port rnic_query_port
#define ibv_query_gid rnic_query_gid
#define ibv_alloc_pd rnic_alloc_pd
#define ibv_dealloc_pd rnic_dealloc_pd
#define ibv_reg_mr rnic_reg_mr
#define ibv_dereg_mr rnic_dereg_mr
#define ibv_create_cq rnic_create_cq
#define ibv_destroy_cq rnic_destroy_cq
#define ibv_poll_cq rnic_poll_cq
#define ibv_create_qp rnic_create_qp
#define ibv_modify_qp rnic_modify_qp
#define ibv_destroy_qp rnic_destroy_qp
#define ibv_post_send rnic_post_send
#define ibv_post_recv rnic_post_recv
#define ibv_wc_status_str rnic_wc_status_str

/* Enum values */
#define IBV_QPT_RC RNIC_QPT_RC
#define IBV_QPS_INIT RNIC_QPS_INIT
#define IBV_QPS_RTR RNIC_QPS_RTR
#define IBV_QPS_RTS RNIC_QPS_RTS
#define IBV_QP_STATE RNIC_QP_STATE
#define IBV_QP_PKEY_INDEX RNIC_QP_PKEY_INDEX
#define IBV_QP_PORT RNIC_QP_PORT
#define IBV_QP_ACCESS_FLAGS RNIC_QP_ACCESS_FLAGS
#define IBV_QP_AV RNIC_QP_AV
#define IBV_QP_PATH_MTU RNIC_QP_PATH_MTU
#define IBV_QP_DEST_QPN RNIC_QP_DEST_QPN
#define IBV_QP_RQ_PSN RNIC_QP_RQ_PSN
#define IBV_QP_MAX_DEST_RD_ATOMIC RNIC_QP_MAX_DEST_RD_ATOMIC
#define IBV_QP_MIN_RNR_TIMER RNIC_QP_MIN_RNR_TIMER
#define IBV_QP_SQ_PSN RNIC_QP_SQ_PSN
#define IBV_QP_TIMEOUT RNIC_QP_TIMEOUT
#define IBV_QP_RETRY_CNT RNIC_QP_RETRY_CNT
#define IBV_QP_RNR_RETRY RNIC_QP_RNR_RETRY
#define IBV_QP_MAX_QP_RD_ATOMIC RNIC_QP_MAX_QP_RD_ATOMIC
#define IBV_ACCESS_LOCAL_WRITE RNIC_ACCESS_LOCAL_WRITE
#define IBV_ACCESS_REMOTE_WRITE RNIC_ACCESS_REMOTE_WRITE
#define IBV_ACCESS_REMOTE_READ RNIC_ACCESS_REMOTE_READ
#define IBV_ACCESS_REMOTE_ATOMIC RNIC_ACCESS_REMOTE_ATOMIC
#define IBV_WR_RDMA_WRITE RNIC_WR_RDMA_WRITE
#define IBV_WR_RDMA_WRITE_WITH_IMM RNIC_WR_RDMA_WRITE_WITH_IMM
#define IBV_WR_SEND_WITH_IMM RNIC_WR_SEND_WITH_IMM
#define IBV_WR_RDMA_READ RNIC_WR_RDMA_READ
#define IBV_WR_ATOMIC_CMP_AND_SWP RNIC_WR_ATOMIC_CMP_AND_SWP
#define IBV_WR_ATOMIC_FETCH_AND_ADD RNIC_WR_ATOMIC_FETCH_AND_ADD
#define IBV_SEND_SIGNALED RNIC_SEND_SIGNALED
#define IBV_WC_SUCCESS RNIC_WC_SUCCESS
#define IBV_WC_RECV RNIC_WC_RECV
#define IBV_WC_RECV_RDMA_WITH_IMM RNIC_WC_RECV_RDMA_WITH_IMM
#define IBV_WC_WITH_IMM RNIC_WC_WITH_IMM
#define IBV_PORT_ACTIVE RNIC_PORT_ACTIVE
#define IBV_MTU_256 RNIC_MTU_256
#define IBV_MTU_1024 RNIC_MTU_1024
#define IBV_MTU_4096 RNIC_MTU_4096

#define VERBS_LINK_WAIT_S 20

/* EAL arguments, then "--" and the engine's (argv[0] is the program). 0, or -1 with the reason printed. */
static inline int
verbs_backend_init(int argc, char **argv)
{
	struct rnic_device **list;
	struct rnic_context *ctx = NULL;
	struct rnic_port_attr port = { .state = RNIC_PORT_DOWN };

	if (rnic_engine_init(argc, argv) < 0 || rnic_engine_start() != 0) {
		fprintf(stderr, "softrnic: the engine does not start (EAL or engine arguments)\n");
		return -1;
	}
	/* Frames sent before the link is up are lost (a veth or tap comes up): wait for it, as a kernel
	 * driver's port goes ACTIVE only with the link. */
	list = rnic_get_device_list(NULL);
	if (list != NULL && list[0] != NULL)
		ctx = rnic_open_device(list[0]);
	rnic_free_device_list(list);
	for (int i = 0; ctx != NULL && i < VERBS_LINK_WAIT_S * 100; i++) {
		if (rnic_query_port(ctx, 1, &port) == 0 && port.state == RNIC_PORT_ACTIVE)
			break;
		usleep(10000);
	}
	if (ctx != NULL)
		rnic_close_device(ctx);
	if (port.state != RNIC_PORT_ACTIVE) {
		fprintf(stderr, "softrnic: no device, or its port's link did not come up in %d s\n", VERBS_LINK_WAIT_S);
		return -1;
	}
	return 0;
}

static inline void
verbs_backend_progress(void)
{
	rnic_engine_progress();
}

static inline void
verbs_backend_stop(void)
{
	rnic_engine_stop();
}

static inline void
verbs_backend_fini(void)
{
	rnic_engine_fini();
}

/* The registered buffer: from rnic_alloc_buf, the only memory a client of rnicd (RNIC_DAEMON) can register,
 * and page-aligned and zeroed in-process alike. */
static inline void *
verbs_alloc_buf(size_t len)
{
	return rnic_alloc_buf(len);
}

static inline void
verbs_free_buf(void *buf)
{
	rnic_free_buf(buf);
}

#endif /* VERBS_RNIC_H */
