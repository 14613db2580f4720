/* SPDX-License-Identifier: BSD-3-Clause
 * Memory regions: the MPT (one entry per region) and MTT (page addresses), key/PD/rights/bounds checks,
 * and the per-lcore translation cache (digest seed-000, patent seed-004's 4-way MR cache).
 *
 * Interface used by the rest of the library (the MR module owns everything else in this header).
 */
#ifndef RNIC_MR_H
#define RNIC_MR_H

#include <stdint.h>

#include "rnic_priv.h"

/* Create/free the device's MPT and MTT (called by the device module). */
int rnic_mr_table_create(struct rnic_device *dev);
void rnic_mr_table_free(struct rnic_device *dev);

#endif /* RNIC_MR_H */
