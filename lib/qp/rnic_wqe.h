/* SPDX-License-Identifier: BSD-3-Clause
 * Work queue entries and doorbells: the host interface between rnic_post_send / rnic_post_recv and the
 * engine, in the mthca layout the seed's RDMA engine parses (doc/qp.md, "Send WQE"). Every field is
 * big-endian; WQEs are made of 16-byte segments.
 *
 * Send WQE:  NextSeg, [RaddrSeg [AtomicSeg]] | [UDSeg], DataSeg* | InlineSeg (byte count, then the data)
 * Recv WQE:  NextSeg, DataSeg*, a 16-byte all-zero delimiter
 * Doorbell:  word 0 = offset of the first WQE (16-byte units) << 8 | F << 7 | opcode
 *            word 1 = QPN << 8 | size of the first WQE (16-byte units)
 * One rnic_post_send of N work requests writes N WQEs in consecutive SQ slots and rings one doorbell. The
 * engine takes WQEs from the SQ by index, up to the head the poster published (doc/qp.md): it follows no
 * chain, so the seed's next-WQE fields of the NextSeg are reserved (zero), and of a doorbell it reads only
 * the QPN (the first WQE's offset, size, opcode and fence are there for whoever decodes a doorbell).
 */
#ifndef RNIC_WQE_H
#define RNIC_WQE_H

#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_common.h>

#include "rnic.h"

/* WQE opcodes (mthca/mlx5 values). */
enum rnic_wqe_opcode {
	RNIC_WQE_OP_NOP = 0x00,
	RNIC_WQE_OP_SEND_INVAL = 0x01,
	RNIC_WQE_OP_RDMA_WRITE = 0x08,
	RNIC_WQE_OP_RDMA_WRITE_IMM = 0x09,
	RNIC_WQE_OP_SEND = 0x0a,
	RNIC_WQE_OP_SEND_IMM = 0x0b,
	RNIC_WQE_OP_RDMA_READ = 0x10,
	RNIC_WQE_OP_ATOMIC_CS = 0x11,
	RNIC_WQE_OP_ATOMIC_FA = 0x12,
};

#define RNIC_WQE_SEG 16			/* segment granularity */
#define RNIC_WQE_MAX_SIZE16 63		/* the 6-bit size fields */

/* NextSeg flags word */
#define RNIC_WQE_F_INLINE (1u << 5)	/* softrnic: the payload is an InlineSeg, not DataSegs (a DataSeg's
					 * byte_count takes all 32 bits: a 2^31-byte SGE is max_msg_sz) */
#define RNIC_WQE_F_FENCE (1u << 4)	/* softrnic: this WQE's own fence (the seed has it in the doorbell/NextSeg) */
#define RNIC_WQE_F_SIGNALED (1u << 3)
#define RNIC_WQE_F_EVENT (1u << 2)
#define RNIC_WQE_F_SOLICITED (1u << 1)
#define RNIC_WQE_F_OPCODE_SHIFT 24	/* softrnic: the WQE's own opcode and size, so flush, retransmit */
#define RNIC_WQE_F_SIZE_SHIFT 16	/* and the engine find a WQE's bounds in the WQE itself */
#define RNIC_WQE_F_SIZE_MASK 0x3fu

struct rnic_wqe_next {
	uint32_t nda_op;		/* reserved, zero: the seed's next-WQE offset and opcode (no chain) */
	uint32_t ee_nds;		/* reserved, zero: the seed's next fence and size */
	uint32_t flags;			/* [31:24] this WQE's opcode, [21:16] its size, [5] inline, [4] fence,
					 * [3] signaled, [1] solicited */
	uint32_t imm;			/* immediate data (as on the wire) or the rkey to invalidate */
};

struct rnic_wqe_raddr {
	uint64_t raddr;
	uint32_t rkey;
	uint32_t rsvd;
};

struct rnic_wqe_atomic {
	uint64_t swap_add;
	uint64_t compare;
};

/* UD address vector (Arbel-style: the AV is in the WQE). */
struct rnic_wqe_ud {
	uint8_t dgid[16];
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t rsvd0;
	uint32_t flow_label;
	uint8_t rsvd1[8];
	uint32_t dqpn;
	uint32_t qkey;
	uint8_t rsvd2[8];
};

struct rnic_wqe_data {
	uint32_t byte_count;
	uint32_t lkey;
	uint64_t addr;
};

/* A send WQE as the engine sees it after parsing. */
struct rnic_send_wqe {
	uint8_t opcode;
	uint8_t signaled;
	uint8_t solicited;
	uint8_t fence;
	uint32_t imm;			/* as on the wire */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
	const struct rnic_wqe_ud *ud;	/* UD only */
	const struct rnic_wqe_data *sge;
	uint32_t nb_sge;
	const uint8_t *inline_data;	/* non-NULL: the payload is inline */
	uint64_t length;		/* message length in bytes */
};

/* The 64-bit SQ doorbell. */
static inline uint64_t
rnic_doorbell_make(uint32_t offset16, int fence, uint8_t opcode, uint32_t qpn, uint8_t size16)
{
	uint32_t w0 = rte_cpu_to_be_32(offset16 << 8 | (fence ? 1u << 7 : 0) | (opcode & 0x7f));
	uint32_t w1 = rte_cpu_to_be_32(qpn << 8 | size16);

	return (uint64_t)w1 << 32 | w0;	/* word 0 first in memory */
}

struct rnic_doorbell {
	uint32_t offset16;
	uint8_t fence;
	uint8_t opcode;
	uint32_t qpn;
	uint8_t size16;
};

static inline void
rnic_doorbell_parse(uint64_t db, struct rnic_doorbell *out)
{
	uint32_t w0 = rte_be_to_cpu_32((uint32_t)db), w1 = rte_be_to_cpu_32((uint32_t)(db >> 32));

	out->offset16 = w0 >> 8;
	out->fence = (w0 >> 7) & 1;
	out->opcode = w0 & 0x7f;
	out->qpn = w1 >> 8;
	out->size16 = w1 & 0xff;
}

/* Bytes a send WQE needs for the given segments (multiple of 16). */
static inline uint32_t
rnic_send_wqe_size(int has_raddr, int has_atomic, int is_ud, uint32_t nb_sge, int is_inline, uint32_t inline_len)
{
	uint32_t size = sizeof(struct rnic_wqe_next);

	size += has_raddr ? sizeof(struct rnic_wqe_raddr) : 0;
	size += has_atomic ? sizeof(struct rnic_wqe_atomic) : 0;
	size += is_ud ? sizeof(struct rnic_wqe_ud) : 0;
	if (is_inline)
		size += (4 + inline_len + RNIC_WQE_SEG - 1) & ~(RNIC_WQE_SEG - 1);
	else
		size += nb_sge * sizeof(struct rnic_wqe_data);
	return size;
}

/*
 * Writing a send WQE into an SQ slot, segment by segment (rnic_post_send, and the field-by-field post of
 * rnic_send_batch.h): rnic_wqe_start writes the NextSeg of wr (its opcode, flags, immediate) and the fixed
 * segments its opcode carries (RaddrSeg, AtomicSeg), and returns where the payload goes; on a UD QP it
 * leaves the UDSeg after the NextSeg to rnic_wqe_put_ud. The payload: rnic_wqe_put_sges (DataSegs) or an
 * InlineSeg (its data, then rnic_wqe_put_inline_len). rnic_wqe_finish then states the WQE's size. The
 * caller checked wr (an opcode rnic_post_send takes) and that the segments fit the slot.
 */
uint8_t *rnic_wqe_start(const struct rnic_qp *qp, const struct rnic_send_wr *wr, uint8_t *wqe);
uint8_t *rnic_wqe_put_ud(uint8_t *p, const struct rnic_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey);
uint8_t *rnic_wqe_put_sges(uint8_t *p, const struct rnic_sge *sge, int nb_sge);

/* The byte count of an InlineSeg at p whose len data bytes are in place after it; returns where it ends. */
static inline uint8_t *
rnic_wqe_put_inline_len(uint8_t *p, uint32_t len)
{
	uint32_t hdr = rte_cpu_to_be_32(len);

	memcpy(p, &hdr, sizeof(hdr));
	return p + ((sizeof(hdr) + len + RNIC_WQE_SEG - 1) & ~(RNIC_WQE_SEG - 1));
}

/* The WQE at wqe ends at end: its size, and extra NextSeg flags (RNIC_WQE_F_INLINE), into its flags word. */
static inline void
rnic_wqe_finish(uint8_t *wqe, const uint8_t *end, uint32_t extra_flags)
{
	struct rnic_wqe_next *next = (struct rnic_wqe_next *)(void *)wqe;
	uint32_t size16 = (uint32_t)(end - wqe) / RNIC_WQE_SEG;

	next->flags |= rte_cpu_to_be_32(size16 << RNIC_WQE_F_SIZE_SHIFT | extra_flags);
}

/*
 * Parse the send WQE at wqe (size16 16-byte units; 0: the size the WQE states in its flags). Returns 0, or
 * -EINVAL if the segments do not fit the size or the opcode is unknown (the engine completes such a WQE in
 * error). The pointers of out (SGEs, inline data, UD address vector) point into wqe: the engine parses its
 * own copy (rnic_send_wqe_copy), never the SQ the poster can rewrite.
 */
int rnic_send_wqe_parse(const uint8_t *wqe, uint32_t size16, int is_ud, struct rnic_send_wqe *out);

/*
 * Copy the send WQE in an SQ slot of stride bytes into the engine's own slot dst (as large), reading each byte
 * of the slot once: its NextSeg, then the rest of the size that NextSeg states. Returns that size in bytes,
 * or 0 when the slot cannot hold it (size 0 or past the slot: nothing more is read).
 */
uint32_t rnic_send_wqe_copy(uint8_t *dst, const uint8_t *slot, uint32_t stride);

/*
 * The address and length the first DataSeg of the send WQE in an SQ slot of stride bytes names, to prefetch
 * the payload before the engine takes the WQE (in an application's own engine an MR maps an address to
 * itself). Returns 0 when there is none (inline data, which lies in the slot, or a WQE that does not fit the
 * slot). Reads the slot without copying it and checks no key: only a prefetch, which never faults, uses it.
 */
int rnic_send_wqe_first_sge(const uint8_t *slot, uint32_t stride, int is_ud, uint64_t *addr, uint32_t *len);

/* Bytes of a receive queue slot for max_sge scatter entries: NextSeg, the entries, the all-zero delimiter,
 * rounded up to a power of two of at least 64. */
static inline uint32_t
rnic_recv_wqe_stride(uint32_t max_sge)
{
	uint32_t bytes = (uint32_t)sizeof(struct rnic_wqe_next) +
			 (max_sge > 1 ? max_sge : 1) * (uint32_t)sizeof(struct rnic_wqe_data) + RNIC_WQE_SEG;

	return rte_align32pow2(bytes > 64 ? bytes : 64);
}

/*
 * Copy the scatter list of the receive WQE in an RQ slot of stride bytes: its DataSegs up to the all-zero
 * delimiter, at most max_sge of them and never past the slot, each read once. Returns how many.
 */
uint32_t rnic_recv_wqe_copy(struct rnic_wqe_data *sge, uint32_t max_sge, const uint8_t *slot, uint32_t stride);

/* Which segments a WQE opcode carries. */
int rnic_wqe_op_has_raddr(uint8_t opcode);
int rnic_wqe_op_is_atomic(uint8_t opcode);

#endif /* RNIC_WQE_H */
