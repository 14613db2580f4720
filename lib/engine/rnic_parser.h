/* SPDX-License-Identifier: BSD-3-Clause
 * The header parser stage: RX bursts from the port, every frame validated (drops counted by reason) and
 * parsed once (its descriptor kept in the mbuf), requests -> the owning shard's request ring, responses ->
 * its response ring.
 */
#ifndef RNIC_PARSER_H
#define RNIC_PARSER_H

/* Up to budget frames (shard 0's pipeline: the stage serves the whole device); returns how many. */
unsigned int rnic_stage_parser(void *pipeline, unsigned int budget);

#endif /* RNIC_PARSER_H */
