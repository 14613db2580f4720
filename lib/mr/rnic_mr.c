/* SPDX-License-Identifier: BSD-3-Clause */
/* PLACEHOLDER: the MR module replaces this file. */
#include <errno.h>
#include "rnic_mr.h"
int rnic_mr_table_create(struct rnic_device *dev) { (void)dev; return 0; }
void rnic_mr_table_free(struct rnic_device *dev) { (void)dev; }
struct rnic_mr *rnic_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access)
{ (void)pd; (void)addr; (void)length; (void)access; errno = ENOTSUP; return NULL; }
int rnic_dereg_mr(struct rnic_mr *mr) { (void)mr; return ENOTSUP; }
