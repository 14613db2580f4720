/* SPDX-License-Identifier: BSD-3-Clause
 * The doorbell stage: SQ doorbells from the device's ring and from rnicd clients' queues (each tenant's share
 * a turn, doc/engine.md "Fair service between tenants") -> the owning shard's slot ring.
 */
#ifndef RNIC_DOORBELL_H
#define RNIC_DOORBELL_H

/* Up to budget doorbells (shard 0's pipeline: the stage serves the whole device); returns how many. */
unsigned int rnic_stage_doorbell(void *pipeline, unsigned int budget);

#endif /* RNIC_DOORBELL_H */
