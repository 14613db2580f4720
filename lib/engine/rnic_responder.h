/* SPDX-License-Identifier: BSD-3-Clause
 * The responder stage of a shard: the execution engine (requests checked and executed, receive WQEs used),
 * READ responses and atomic answers as the port has room, coalesced ACKs and NAKs; and the receive queues of
 * QPs in error flushed (the flush ring).
 */
#ifndef RNIC_RESPONDER_H
#define RNIC_RESPONDER_H

/* Up to budget requests; returns the work done. */
unsigned int rnic_stage_responder(void *pipeline, unsigned int budget);

#endif /* RNIC_RESPONDER_H */
