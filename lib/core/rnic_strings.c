/* SPDX-License-Identifier: BSD-3-Clause
 * Human-readable names of the API's enums, worded as libibverbs words them.
 */
#include "rnic.h"

const char *
rnic_wc_status_str(enum rnic_wc_status status)
{
	static const char *const names[] = {
		[RNIC_WC_SUCCESS] = "success",
		[RNIC_WC_LOC_LEN_ERR] = "local length error",
		[RNIC_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[RNIC_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[RNIC_WC_LOC_PROT_ERR] = "local protection error",
		[RNIC_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[RNIC_WC_MW_BIND_ERR] = "memory management operation error",
		[RNIC_WC_BAD_RESP_ERR] = "bad response error",
		[RNIC_WC_LOC_ACCESS_ERR] = "local access error",
		[RNIC_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[RNIC_WC_REM_ACCESS_ERR] = "remote access error",
		[RNIC_WC_REM_OP_ERR] = "remote operation error",
		[RNIC_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[RNIC_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[RNIC_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[RNIC_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[RNIC_WC_REM_ABORT_ERR] = "aborted error",
		[RNIC_WC_INV_EECN_ERR] = "invalid EE context number",
		[RNIC_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[RNIC_WC_FATAL_ERR] = "fatal error",
		[RNIC_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[RNIC_WC_GENERAL_ERR] = "general error",
	};

	if ((unsigned int)status >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[status];
}

const char *
rnic_event_type_str(enum rnic_event_type event)
{
	static const char *const names[] = {
		[RNIC_EVENT_CQ_ERR] = "CQ error",
		[RNIC_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[RNIC_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[RNIC_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[RNIC_EVENT_COMM_EST] = "communication established",
		[RNIC_EVENT_SQ_DRAINED] = "send queue drained",
		[RNIC_EVENT_PATH_MIG] = "path migrated",
		[RNIC_EVENT_PATH_MIG_ERR] = "path migration request error",
		[RNIC_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[RNIC_EVENT_PORT_ACTIVE] = "port active",
		[RNIC_EVENT_PORT_ERR] = "port error",
		[RNIC_EVENT_LID_CHANGE] = "LID change",
		[RNIC_EVENT_PKEY_CHANGE] = "P_Key change",
		[RNIC_EVENT_SM_CHANGE] = "SM change",
		[RNIC_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[RNIC_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[RNIC_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[RNIC_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[RNIC_EVENT_GID_CHANGE] = "GID table change",
	};

	if ((unsigned int)event >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[event];
}
