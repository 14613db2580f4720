/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target for the header parser: any bytes must give a verdict without a crash, a hang or a
 * sanitizer report; and a frame the parser accepts must survive a rebuild: building it again from the
 * decoded fields gives a frame the parser decodes to the same fields.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rnic_wire.h"

/* Where the IP header starts: after Ethernet and the optional 802.1Q tag. */
#define RNIC_ETHER_L3_OFF(d) (14u + ((d).has_vlan ? 4u : 0u))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[16384], input[16384];
	struct rnic_pkt_desc d, again;
	uint32_t end, icrc;
	int len;

	if (size > sizeof(input))
		return 0;
	rnic_pkt_parse(data, (uint32_t)size, &d, 1);
	if (rnic_pkt_parse(data, (uint32_t)size, &d, 0) != RNIC_DROP_NONE)
		return 0;
	/* Mutations break the ICRC: mend it, so every frame that parses also reaches the round trip. */
	memcpy(input, data, size);
	end = d.payload_off + d.payload_len + d.pad + RNIC_ICRC_LEN;
	icrc = rnic_icrc_compute(input, RNIC_ETHER_L3_OFF(d), end);
	memcpy(input + end - RNIC_ICRC_LEN, &icrc, sizeof(icrc));
	if (rnic_pkt_parse(input, (uint32_t)size, &d, 1) != RNIC_DROP_NONE)
		abort();	/* an ICRC the parser computed itself was refused */
	len = rnic_pkt_build(&d, frame, sizeof(frame));
	if (len < 0 || rnic_pkt_parse(frame, (uint32_t)len, &again, 1) != RNIC_DROP_NONE ||
	    again.opcode != d.opcode || again.psn != d.psn || again.dqpn != d.dqpn ||
	    again.payload_len != d.payload_len || memcmp(again.payload, d.payload, d.payload_len) != 0)
		abort();	/* the builder and the parser disagree */
	return 0;
}
