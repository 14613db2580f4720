/* SPDX-License-Identifier: BSD-3-Clause
 * Packet capture (--pcap, doc/capture.md): what the ports send and receive, to a pcapng file that Wireshark
 * and tshark decode as RoCE. One interface per device and port, wall-clock timestamps in nanoseconds, each
 * frame's direction; a snap length, a frame count and a filter by QP, opcode or direction; frames the
 * capture could not write are counted in the file's interface statistics. The lcores copy frames into
 * slots; a control thread writes them, so no lcore waits for the file. Also the attachment point of
 * dpdk-dumpcap (rte_pdump).
 */
#ifndef RNIC_CAPTURE_H
#define RNIC_CAPTURE_H

#include <stdint.h>

struct rte_mempool;

#define RNIC_CAPTURE_MAX_QPS 16

/* Which frames to keep: all of them when no field is set; otherwise a frame matches every field that is set
 * (and one of the values of a field). */
struct rnic_capture_filter {
	unsigned int nb_qp;
	uint32_t qp[RNIC_CAPTURE_MAX_QPS];	/* RoCEv2 frames with this destination QP (BTH) */
	uint64_t opcode[4];			/* RoCEv2 frames with these BTH opcodes (a bitmap); none: any */
	uint8_t direction;			/* RNIC_CAPTURE_IN | RNIC_CAPTURE_OUT; 0: both */
};

#define RNIC_CAPTURE_IN 1
#define RNIC_CAPTURE_OUT 2

struct rnic_capture_conf {
	const char *path;
	uint32_t snaplen;			/* bytes kept of each frame; 0: whole frames */
	uint64_t count;				/* stop after this many frames; 0: no limit */
	struct rnic_capture_filter filter;
};

/* A port to capture and the device on it (names the pcapng interface). */
struct rnic_capture_port {
	uint16_t port_id;
	const char *device;
};

/*
 * Parse a --pcap-filter: comma-separated terms qp=N, opcode=NAME|N (send, write, read_request,
 * read_response, ack, atomic, atomic_ack, cnp, or a BTH opcode number), dir=in|out. 0 or -EINVAL.
 */
int rnic_capture_parse_filter(const char *text, struct rnic_capture_filter *filter);

/* Start capturing on the ports' nb_queues RX and TX queues. 0 or a negative errno. */
int rnic_capture_start(const struct rnic_capture_conf *conf, const struct rnic_capture_port *ports,
		       unsigned int nb_ports, uint16_t nb_queues, int socket_id);

/* Remove the callbacks, write what is left and each interface's statistics, close the file (the engine's
 * lcores must be stopped). */
void rnic_capture_stop(void);

/* Let dpdk-dumpcap (a secondary process) capture the ports: 0, or a negative errno when this process has no
 * shared configuration for secondaries to attach to (--no-shconf). mp: a pool to take one mbuf from. */
int rnic_capture_pdump_init(struct rte_mempool *mp);
void rnic_capture_pdump_uninit(void);

#endif /* RNIC_CAPTURE_H */
