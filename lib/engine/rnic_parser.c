/* SPDX-License-Identifier: BSD-3-Clause
 * Header parser stage (seed 003 HeaderParser, table 5.2): receive a burst from the port, validate every
 * frame (lengths, versions, opcode, pad, ICRC), count drops by reason, and classify: requests go to the
 * responder, responses (ACK/NAK, READ responses, atomic ACKs) to the completer of the QP's shard.
 */
#include <rte_ethdev.h>
#include <rte_mbuf_dyn.h>

#include "rnic_pipeline.h"

int rnic_pkt_meta_offset = -1;

int
rnic_pkt_meta_register(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "rnic_pkt_meta",
		.size = sizeof(struct rnic_pkt_meta),
		.align = __alignof__(struct rnic_pkt_meta),
	};

	if (rnic_pkt_meta_offset < 0)
		rnic_pkt_meta_offset = rte_mbuf_dynfield_register(&desc);
	return rnic_pkt_meta_offset < 0 ? -rte_errno : 0;
}
