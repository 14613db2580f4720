/* SPDX-License-Identifier: BSD-3-Clause */
/* PLACEHOLDER: the QP module replaces this file (post_send/post_recv, WQE formats). */
#include "rnic_qp.h"
