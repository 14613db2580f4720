/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-pktgen: softrnic's wire formats on file, for the oracles (scapy, tshark, Wireshark).
 *
 *   rnic-pktgen write FILE.pcap   one frame of every opcode softrnic emits, IPv4 and IPv6; prints the
 *                                 expected decode of each frame as a JSON line
 *   rnic-pktgen parse FILE        decodes every frame of a pcap or pcapng file (libpcap) with softrnic's
 *                                 parser, one JSON line per frame
 *   rnic-pktgen check             builds every frame, parses it back and compares (the main job's self check)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "rnic_version.h"
#include "rnic_wire.h"
#include "pcap_file.h"

#define MAX_FRAME 8192

static const char *const usage =
	"usage: rnic-pktgen write FILE.pcap   frames of every opcode (IPv4 and IPv6) to FILE, expected\n"
	"                                     decode as JSON lines on stdout\n"
	"       rnic-pktgen parse FILE        softrnic's decode of every frame in FILE (pcap or pcapng),\n"
	"                                     as JSON lines\n"
	"       rnic-pktgen check             build, parse back and compare every frame; prints a summary\n"
	"       rnic-pktgen --version\n";

/* Frame i of the generated set: opcode, IP version and field values all derived from i. */
static void
generated_desc(struct rnic_pkt_desc *d, uint8_t opcode, uint8_t ip_version, unsigned int i, uint8_t *payload)
{
	const struct rnic_opcode_info *info = rnic_opcode_info(opcode);

	memset(d, 0, sizeof(*d));
	d->dst_mac = (struct rte_ether_addr){ { 0x02, 0x52, 0x4e, 0x49, 0x43, 0x02 } };
	d->src_mac = (struct rte_ether_addr){ { 0x02, 0x52, 0x4e, 0x49, 0x43, 0x01 } };
	d->ip_version = ip_version;
	if (ip_version == 4) {
		inet_pton(AF_INET6, "::ffff:10.77.0.1", d->sgid.raw);
		inet_pton(AF_INET6, "::ffff:10.77.0.2", d->dgid.raw);
		d->ip_id = (uint16_t)i;
	} else {
		inet_pton(AF_INET6, "fd00:77::1", d->sgid.raw);
		inet_pton(AF_INET6, "fd00:77::2", d->dgid.raw);
		d->flow_label = 0x10000 + i;
	}
	d->traffic_class = (uint8_t)(i << 2);
	d->hop_limit = 64;
	d->udp_sport = (uint16_t)(0xc000 + i);
	d->opcode = opcode;
	d->se = (uint8_t)(info->is_request && (i & 1));
	d->pkey = 0xffff;
	d->dqpn = 0x100 + i;
	d->ack_req = (uint8_t)(info->is_request && (i & 2));
	d->psn = 0x800000 + i * 3;
	d->reth.va = 0x7f0000000000ULL + (uint64_t)i * 0x1000;
	d->reth.rkey = 0x1000 + i;
	d->reth.dma_len = 4096 + i;
	d->aeth.syndrome = (uint8_t)(i % 32);	/* ACK with credit counts 0..31 */
	d->aeth.msn = 0x10 + i;
	d->atomiceth.va = 0x7f0000100000ULL + (uint64_t)i * 8;
	d->atomiceth.rkey = 0x2000 + i;
	d->atomiceth.swap_add = 0x1111111100000000ULL + i;
	d->atomiceth.compare = 0x2222222200000000ULL + i;
	d->atomic_ack_orig = 0x3333333300000000ULL + i;
	d->imm = 0xabcd0000 + i;
	d->ieth_rkey = 0x3000 + i;
	d->deth.qkey = 0x11110000 + i;
	d->deth.src_qp = 0x200 + i;
	if (info->hdrs & RNIC_HDR_PAYLOAD) {
		/* 13..16 bytes: every pad count from 3 down to 0 over consecutive frames. */
		d->payload_len = 13 + i % 4;
		for (uint32_t b = 0; b < d->payload_len; b++)
			payload[b] = (uint8_t)(i + b);
		d->payload = payload;
	}
}

static void
print_gid(const char *key, const union rnic_gid *gid, uint8_t ip_version)
{
	char text[INET6_ADDRSTRLEN];

	if (ip_version == 4)
		inet_ntop(AF_INET, &gid->raw[12], text, sizeof(text));
	else
		inet_ntop(AF_INET6, gid->raw, text, sizeof(text));
	printf(", \"%s\": \"%s\"", key, text);
}

/* One JSON object for a decoded (or to-be-built) frame: the fields its opcode carries. */
static void
print_desc_json(unsigned int frame, const struct rnic_pkt_desc *d)
{
	const struct rnic_opcode_info *info = rnic_opcode_info(d->opcode);
	uint16_t h = info->hdrs;

	printf("{\"frame\": %u, \"drop\": \"none\", \"opcode\": %u, \"name\": \"%s\"", frame, d->opcode,
	       info->name);
	printf(", \"ip_version\": %u", d->ip_version);
	print_gid("src", &d->sgid, d->ip_version);
	print_gid("dst", &d->dgid, d->ip_version);
	printf(", \"traffic_class\": %u, \"hop_limit\": %u, \"flow_label\": %u, \"vlan\": %d",
	       d->traffic_class, d->hop_limit, d->flow_label, d->has_vlan ? d->vlan_tci : -1);
	printf(", \"udp_sport\": %u, \"udp_dport\": %u", d->udp_sport,
	       d->udp_dport ? d->udp_dport : RNIC_ROCEV2_UDP_PORT);
	printf(", \"se\": %u, \"mig\": %u, \"pad\": %u, \"tver\": %u, \"pkey\": %u, \"fecn\": %u, \"becn\": %u",
	       d->se, d->mig, (4 - (d->payload_len & 3)) & 3, d->tver, d->pkey, d->fecn, d->becn);
	printf(", \"dqpn\": %u, \"ack_req\": %u, \"psn\": %u", d->dqpn, d->ack_req, d->psn);
	if (h & RNIC_HDR_DETH)
		printf(", \"deth_qkey\": %u, \"deth_src_qp\": %u", d->deth.qkey, d->deth.src_qp);
	if (h & RNIC_HDR_RETH)
		printf(", \"reth_va\": %" PRIu64 ", \"reth_rkey\": %u, \"reth_dma_len\": %u", d->reth.va,
		       d->reth.rkey, d->reth.dma_len);
	if (h & RNIC_HDR_ATOMICETH)
		printf(", \"atomic_va\": %" PRIu64 ", \"atomic_rkey\": %u, \"atomic_swap_add\": %" PRIu64
		       ", \"atomic_compare\": %" PRIu64, d->atomiceth.va, d->atomiceth.rkey,
		       d->atomiceth.swap_add, d->atomiceth.compare);
	if (h & RNIC_HDR_AETH)
		printf(", \"aeth_syndrome\": %u, \"aeth_msn\": %u", d->aeth.syndrome, d->aeth.msn);
	if (h & RNIC_HDR_ATOMICACKETH)
		printf(", \"atomic_ack_orig\": %" PRIu64, d->atomic_ack_orig);
	if (h & RNIC_HDR_IMMDT)
		printf(", \"imm\": %u", d->imm);
	if (h & RNIC_HDR_IETH)
		printf(", \"ieth_rkey\": %u", d->ieth_rkey);
	printf(", \"payload_len\": %u, \"payload\": \"", d->payload_len);
	for (uint32_t i = 0; i < d->payload_len && d->payload != NULL; i++)
		printf("%02x", d->payload[i]);
	printf("\"}\n");
}

/* Calls fn for every frame of the generated set, in order. */
static int
for_each_generated(int (*fn)(unsigned int frame, const struct rnic_pkt_desc *d, void *arg), void *arg)
{
	uint8_t payload[64];
	struct rnic_pkt_desc d;
	unsigned int frame = 0;
	int ret;

	for (uint8_t ipv = 4; ipv <= 6; ipv += 2) {
		for (unsigned int op = 0; op < 256; op++) {
			if (rnic_opcode_info((uint8_t)op)->name == NULL)
				continue;
			generated_desc(&d, (uint8_t)op, ipv, frame, payload);
			ret = fn(++frame, &d, arg);
			if (ret != 0)
				return ret;
		}
	}
	return 0;
}

static int
write_one(unsigned int frame, const struct rnic_pkt_desc *d, void *arg)
{
	uint8_t buf[MAX_FRAME];
	int len = rnic_pkt_build(d, buf, sizeof(buf));

	if (len < 0) {
		fprintf(stderr, "rnic-pktgen: frame %u (%s): cannot build: %s\n", frame,
			rnic_opcode_info(d->opcode)->name, strerror(-len));
		return 1;
	}
	rnic_pcap_writer_add(arg, buf, (uint32_t)len, frame, 0);
	print_desc_json(frame, d);
	return 0;
}

static int
cmd_write(const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	struct rnic_pcap_writer w;
	int ret;

	if (rnic_pcap_writer_open(&w, path, err) != 0) {
		fprintf(stderr, "rnic-pktgen: %s: %s\n", path, err);
		return 1;
	}
	ret = for_each_generated(write_one, &w);
	if (rnic_pcap_writer_close(&w) != 0 && ret == 0) {
		fprintf(stderr, "rnic-pktgen: %s: write error\n", path);
		ret = 1;
	}
	return ret;
}

/* Every frame of a pcap or pcapng file (the engine's --pcap captures too) through softrnic's parser. */
static int
cmd_parse(const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	struct rnic_frames pf;

	if (rnic_frames_read(path, &pf, err) != 0) {
		fprintf(stderr, "rnic-pktgen: %s: %s\n", path, err);
		return 1;
	}
	for (uint32_t i = 0; i < pf.count; i++) {
		struct rnic_pkt_desc d;
		enum rnic_drop_reason why = rnic_pkt_parse(pf.data[i], pf.len[i], &d, 1);

		if (why == RNIC_DROP_NONE)
			print_desc_json(i + 1, &d);
		else
			printf("{\"frame\": %u, \"drop\": \"%s\"}\n", i + 1, rnic_drop_reason_str(why));
	}
	rnic_frames_free(&pf);
	return 0;
}

struct check_totals {
	unsigned int frames;
	unsigned int bad;
	unsigned int bytes;
};

static int
check_one(unsigned int frame, const struct rnic_pkt_desc *d, void *arg)
{
	struct check_totals *t = arg;
	uint8_t buf[MAX_FRAME];
	struct rnic_pkt_desc out;
	int len = rnic_pkt_build(d, buf, sizeof(buf));
	enum rnic_drop_reason why = len < 0 ? RNIC_DROP_TRUNCATED : rnic_pkt_parse(buf, (uint32_t)len, &out, 1);

	t->frames++;
	if (why != RNIC_DROP_NONE || out.opcode != d->opcode || out.psn != d->psn || out.dqpn != d->dqpn ||
	    out.payload_len != d->payload_len ||
	    (d->payload_len && memcmp(out.payload, d->payload, d->payload_len) != 0)) {
		fprintf(stderr, "rnic-pktgen: frame %u (%s, IPv%u) does not survive build+parse (%s)\n", frame,
			rnic_opcode_info(d->opcode)->name, d->ip_version, rnic_drop_reason_str(why));
		t->bad++;
		return 0;
	}
	/* The ICRC must catch a flipped bit anywhere past the masked headers. */
	buf[len - 5] ^= 0x01;
	if (rnic_pkt_parse(buf, (uint32_t)len, &out, 1) != RNIC_DROP_BAD_ICRC) {
		fprintf(stderr, "rnic-pktgen: frame %u: a flipped bit went unnoticed\n", frame);
		t->bad++;
	}
	t->bytes += (unsigned int)len;
	return 0;
}

static int
cmd_check(void)
{
	struct check_totals t = { 0, 0, 0 };

	for_each_generated(check_one, &t);
	printf("{\"check\": \"wire\", \"frames\": %u, \"bytes\": %u, \"failed\": %u}\n", t.frames, t.bytes, t.bad);
	if (t.frames == 0)
		fprintf(stderr, "rnic-pktgen: check: no frame generated\n");
	return t.bad == 0 && t.frames != 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		rnic_print_version("rnic-pktgen");
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "write") == 0)
		return cmd_write(argv[2]);
	if (argc == 3 && strcmp(argv[1], "parse") == 0)
		return cmd_parse(argv[2]);
	if (argc == 2 && strcmp(argv[1], "check") == 0)
		return cmd_check();
	if (argc < 2)
		fprintf(stderr, "rnic-pktgen: no command\n");
	else
		fprintf(stderr, "rnic-pktgen: '%s' with %d argument(s): not a command\n", argv[1], argc - 2);
	fputs(usage, stderr);
	return 2;
}
