/* SPDX-License-Identifier: BSD-3-Clause
 * QP1, the general services interface of a device (IBA 13.5): a UD QP numbered 1 with the Q_Key 0x80010000
 * and the P_Key table's one entry, receiving and sending 256-byte MADs (management datagrams, IBA 13.4) in UD
 * SENDs. The CM (rnic_cm.c) is the one management class softrnic serves; a request of any other class, or a
 * method the CM does not take, is answered with the status IBA gives it, everything else dropped, counted
 * (doc/cm.md, "QP1").
 *
 * The GSI is a verbs consumer, as Linux's ib_mad is of a driver: its own context, PD, CQ, registered buffers
 * and the QP, made by rnic_gsi_open. It is polled by the CM's thread (or a test), never by the data path.
 */
#ifndef RNIC_GSI_H
#define RNIC_GSI_H

#include <stdint.h>

#include <rte_byteorder.h>

#include "rnic_priv.h"

#define RNIC_MAD_SIZE 256		/* every MAD of the GSI, on the wire and in a receive buffer */
#define RNIC_MAD_HDR_LEN 24		/* the common MAD header (IBA 13.4.3) */
#define RNIC_GSI_QPN 1
#define RNIC_GSI_QKEY 0x80010000u	/* QP1's well-known Q_Key (IBA 13.5.3.1) */
#define RNIC_GRH_BYTES 40		/* what a UD receive buffer holds before the payload: the GRH */
#define RNIC_GSI_RECV 256		/* receive buffers posted on QP1 (ib_mad posts 512) */
#define RNIC_GSI_SEND 64		/* MADs in flight at once (their buffers and AHs) */

#define RNIC_MAD_BASE_VERSION 1

/* MAD methods (IBA 13.4.5): bit 7 marks a response. */
enum rnic_mad_method {
	RNIC_MAD_METHOD_GET = 0x01,
	RNIC_MAD_METHOD_SET = 0x02,
	RNIC_MAD_METHOD_SEND = 0x03,
	RNIC_MAD_METHOD_TRAP = 0x05,
	RNIC_MAD_METHOD_REPORT = 0x06,
	RNIC_MAD_METHOD_TRAP_REPRESS = 0x07,
	RNIC_MAD_METHOD_RESP = 0x80,
	RNIC_MAD_METHOD_GET_RESP = 0x81,
};

/* The MAD status field's "invalid field" code (IBA 13.4.7, Table 114: bits 4:2). */
#define RNIC_MAD_STATUS_BAD_VERSION 0x0004		/* class or class version not supported */
#define RNIC_MAD_STATUS_UNSUPPORTED_METHOD 0x0008	/* method not supported */
#define RNIC_MAD_STATUS_UNSUPPORTED_ATTR 0x000c	/* method/attribute combination not supported */

/* The common MAD header, as on the wire (big-endian). */
struct rnic_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	rte_be16_t status;
	rte_be16_t class_specific;
	rte_be64_t tid;
	rte_be16_t attr_id;
	rte_be16_t resv;
	rte_be32_t attr_mod;
} __rte_packed;

/* A MAD's far end: the port's GID and the QP it came from or goes to. */
struct rnic_gsi_addr {
	union rnic_gid gid;
	uint32_t qpn;
};

/* The GSI's counters, as X(name, what). */
#define RNIC_GSI_COUNTERS(X) \
	X(mads_received, "MADs received on QP1") \
	X(mads_sent, "MADs sent from QP1") \
	X(cm_mads, "MADs handed to the CM (class 0x07, version 2, method Send)") \
	X(unsupported_answered, "requests (Get, Set) of a class or method not served, answered with a status") \
	X(unsupported_dropped, "MADs of a class or method not served that are not requests (responses, traps, " \
	  "sends, reports), dropped") \
	X(malformed, "MADs dropped: not 256 bytes, or base version not 1") \
	X(send_no_slot, "MADs not sent: every send buffer in flight") \
	X(send_errors, "MADs not sent: posting failed, or their send completed in error (no route)") \
	X(qp_recoveries, "QP1 brought back to RTS after a send error")

struct rnic_gsi_stats {
#define RNIC_X(name, what) uint64_t name;
	RNIC_GSI_COUNTERS(RNIC_X)
#undef RNIC_X
};

struct rnic_gsi;

/* What takes the MADs of the class the GSI serves (the CM): called from rnic_gsi_poll, with the MAD's
 * RNIC_MAD_SIZE bytes and where it came from. */
typedef void (*rnic_gsi_handler)(void *arg, struct rnic_gsi *gsi, const uint8_t *mad,
				 const struct rnic_gsi_addr *from);

struct rnic_gsi {
	struct rnic_device *dev;
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;		/* sends and receives */
	struct rnic_qp *qp;		/* QPN 1 */
	uint8_t *buf;			/* RNIC_GSI_RECV receive slots (GRH + MAD), then RNIC_GSI_SEND send slots */
	size_t buf_len;
	struct rnic_mr *mr;
	struct rnic_ah *send_ah[RNIC_GSI_SEND];	/* a send slot is busy while it holds its AH */
	uint32_t send_next;		/* where the search for a free send slot starts */
	int ipv4;			/* the device's GID is IPv4: a GRH holds the IPv4 header in its last 20 bytes */
	rnic_gsi_handler cm;		/* CM class MADs; NULL: the class is not served either */
	void *cm_arg;
	struct rnic_gsi_stats stats;
};

/* QP1 of a device, up and receiving (RTS, its receive buffers posted). 0 or a negative errno (-ENOTSUP for an
 * rnicd client's device: the daemon owns QP1; -EBUSY if the device has one). */
int rnic_gsi_open(struct rnic_device *dev, struct rnic_gsi **out);
/* Destroy QP1 and what it holds. */
void rnic_gsi_close(struct rnic_gsi *gsi);

/* Have CM class MADs handed to handler (NULL: none; the class is then answered as not served). */
void rnic_gsi_set_cm_handler(struct rnic_gsi *gsi, rnic_gsi_handler handler, void *arg);

/* Send a MAD (RNIC_MAD_SIZE bytes, copied) to a port's QP. 0, or -ENOBUFS (no send slot free), or a negative
 * errno from the AH or the post; counted. */
int rnic_gsi_send(struct rnic_gsi *gsi, const struct rnic_gsi_addr *to, const uint8_t *mad);

/* Handle what QP1's CQ holds: received MADs (to the CM, answered, or dropped), completed sends. Returns the
 * completions handled. */
unsigned int rnic_gsi_poll(struct rnic_gsi *gsi);

/* The counters as named device counters ("gsi_<name>"): fills up to n, returns how many there are. */
int rnic_gsi_counters(const struct rnic_gsi *gsi, struct rnic_counter *out, int n);

#endif /* RNIC_GSI_H */
