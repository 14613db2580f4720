/* SPDX-License-Identifier: BSD-3-Clause */
/* PLACEHOLDER: the CQ module replaces this file. */
#include <errno.h>
#include "rnic_cq.h"
int rnic_cq_table_create(struct rnic_device *dev) { (void)dev; return 0; }
void rnic_cq_table_free(struct rnic_device *dev) { (void)dev; }
int rnic_cq_push(struct rnic_cq *cq, const struct rnic_cqe_desc *desc) { (void)cq; (void)desc; return -ENOTSUP; }
void rnic_cq_attach(struct rnic_cq *cq) { (void)cq; }
void rnic_cq_detach(struct rnic_cq *cq) { (void)cq; }
