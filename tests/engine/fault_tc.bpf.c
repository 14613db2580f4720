/* SPDX-License-Identifier: BSD-3-Clause
 * The kernel's faults for tests/engine/fault-veth.sh: a tc-BPF program (clang -target bpf, attached with
 * "tc filter add dev DEV ingress|egress bpf da") on each veth of the pair, so that the frames one softrnic
 * process sends are lost, corrupted or held back before the other one receives them (at the sending veth's
 * egress; duplicated at the receiving veth's ingress: see DUPLICATE). What it does is fixed when it is
 * compiled, it acts on RoCEv2 frames only, with these macros (probabilities as thresholds of a 32-bit random
 * number, P x 2^32; 0: off):
 *   DROP            lose a frame, with LOSS_ACT: TC_ACT_STOLEN (the default) on egress tells the sender's
 *                   send it went and frees it, a frame lost on the wire; TC_ACT_SHOT is a send the kernel
 *                   refused, which AF_PACKET keeps in its TX ring and sends again with its next sendto():
 *                   no loss. Never at ingress: a packet socket takes its copy of a frame before the
 *                   ingress filters run. The frames lost are counted in `lost`.
 *   GE_P, GE_R      Gilbert-Elliott burst loss: good -> bad and bad -> good per frame; in the bad state a
 *                   frame is lost with GE_BAD (default: always)
 *   RESPONSES_ONLY  1: act only on RoCEv2 responses (BTH opcode ACK/NAK, atomic ACK, READ response)
 *   CORRUPT         flip one bit past the Ethernet header (the receiver's ICRC check must catch it)
 *   DUPLICATE       deliver a copy too: attached at the receiving veth's ingress, the copy is injected into
 *                   that device's receive path once more (marked: it passes untouched). At egress the copy,
 *                   a clone no longer owned by the sending socket, would reach that socket's own receive
 *                   ring as well.
 *   SLOW            put the frame in the slow class of the device's HTB root qdisc (priority 1:20), where
 *                   a low rate holds it back while later frames pass: reordering by delay
 * and a switch's ECN marking, where no qdisc here marks (no red, fq_codel, ...): in front of a tbf root qdisc
 * of rate MARK_RATE (bytes/s) and limit MARK_LIMIT (bytes), the program keeps the queue's depth (frames in,
 * the rate out: tbf's backlog, less its small bucket) and sets CE in the ECN-capable frames that find
 * MARK_KMIN bytes or more ahead of them, with a probability rising to MARK_PMAX (a threshold as above) at
 * MARK_KMAX and always from there: RED as DCQCN's switches mark (the engine's own bottleneck, --fault kmin=,
 * does the same by frames). The depth each RoCEv2 frame found is counted in `vq.hist` (VQ_BUCKET bytes a
 * bucket), its marks in `vq.marked`, read with bpftool by tests/engine/incast-veth.sh.
 * The kernel has no sch_netem here; this is what stands in for it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef DROP
#define DROP 0
#endif
#ifndef GE_P
#define GE_P 0
#endif
#ifndef GE_R
#define GE_R 0
#endif
#ifndef GE_BAD
#define GE_BAD 0xffffffffu
#endif
#ifndef RESPONSES_ONLY
#define RESPONSES_ONLY 0
#endif
#ifndef CORRUPT
#define CORRUPT 0
#endif
#ifndef DUPLICATE
#define DUPLICATE 0
#endif
#ifndef SLOW
#define SLOW 0
#endif

#ifndef LOSS_ACT
#define LOSS_ACT TC_ACT_STOLEN
#endif
#ifndef MARK_RATE
#define MARK_RATE 0
#endif
#ifndef MARK_KMIN
#define MARK_KMIN 0
#endif
#ifndef MARK_KMAX
#define MARK_KMAX 0
#endif
#ifndef MARK_PMAX
#define MARK_PMAX 0
#endif
#ifndef MARK_LIMIT
#define MARK_LIMIT 0
#endif

#define ROCEV2_PORT 4791
#define DUP_MARK 0x52444d50		/* a copy this program made: it passes as it is */
#define SLOW_CLASS 0x10020		/* HTB class 1:20 */
#define OP_READ_RESPONSE_FIRST 0x0d	/* RC responses: 0x0d .. 0x12 (IBA 9.2.1) */
#define OP_ATOMIC_ACKNOWLEDGE 0x12

/* The Gilbert-Elliott chain's state (racy between CPUs: a burst's edges may blur, the rates hold). */
static __u32 ge_bad;
/* Frames DROP and the chain lost (racy as ge_bad: a count the test checks is above zero). */
__u64 lost;

#define VQ_BUCKET 4096
#define VQ_BUCKETS 256

/* The marking queue's state and counts (racy between CPUs as ge_bad: one sending process's frames leave
 * from one CPU at a time). */
struct rnic_vq {
	__u64 backlog;			/* bytes queued, as tbf drains them */
	__u64 last_ns;
	__u64 frames;			/* RoCEv2 frames seen */
	__u64 marked;			/* of them, CE set here */
	__u64 over_limit;		/* of them, finding the queue full (tbf drops them) */
	__u64 hist[VQ_BUCKETS];		/* the depth each found, VQ_BUCKET bytes a bucket */
};
struct rnic_vq vq;

static __always_inline int
chance(__u32 threshold)
{
	return threshold != 0 && bpf_get_prandom_u32() < threshold;
}

/* The BTH opcode of a RoCEv2 frame (IPv4: the tests run softrnic over IPv4), or -1 for any other frame. Only
 * RoCEv2 frames are faulted: the test's TCP control channel must stay intact (a bit flipped in it would
 * pass, since a veth never computes the TCP checksum it offloads). */
static __always_inline int
roce_opcode(struct __sk_buff *skb)
{
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	__u8 opcode;
	__u32 off;

	if (bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)) < 0 || eth.h_proto != bpf_htons(ETH_P_IP) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 || ip.protocol != IPPROTO_UDP)
		return -1;
	off = ETH_HLEN + ip.ihl * 4u;
	if (bpf_skb_load_bytes(skb, off, &udp, sizeof(udp)) < 0 || udp.dest != bpf_htons(ROCEV2_PORT) ||
	    bpf_skb_load_bytes(skb, off + sizeof(udp), &opcode, 1) < 0)
		return -1;
	return opcode;
}

static __always_inline int
burst_lost(void)
{
	if (GE_P == 0)
		return 0;
	if (ge_bad)
		ge_bad = !chance(GE_R);
	else
		ge_bad = chance(GE_P);
	return ge_bad && chance(GE_BAD);
}

static __always_inline void
flip_a_bit(struct __sk_buff *skb)
{
	__u32 len = skb->len, off;
	__u8 b;

	if (len <= ETH_HLEN)
		return;
	off = ETH_HLEN + bpf_get_prandom_u32() % (len - ETH_HLEN);
	if (bpf_skb_load_bytes(skb, off, &b, 1) < 0)
		return;
	b ^= (__u8)(1u << (bpf_get_prandom_u32() & 7));
	bpf_skb_store_bytes(skb, off, &b, 1, 0);
}

/* Set CE in an ECN-capable IPv4 frame (ECT(0) or ECT(1)), the header checksum mended; 1 if set. The ICRC
 * leaves the IP ToS out, so the frame stays valid. */
static __always_inline int
set_ce(struct __sk_buff *skb)
{
	__u8 hdr[2], old[2];

	if (bpf_skb_load_bytes(skb, ETH_HLEN, hdr, 2) < 0 || (hdr[1] & 3) == 0 || (hdr[1] & 3) == 3)
		return 0;
	old[0] = hdr[0];
	old[1] = hdr[1];
	hdr[1] |= 3;
	if (bpf_skb_store_bytes(skb, ETH_HLEN, hdr, 2, 0) < 0)
		return 0;
	bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check), *(__u16 *)old,
			    *(__u16 *)hdr, 2);
	return 1;
}

/* The queue in front of the link: drained at MARK_RATE since the last frame, then this frame's depth
 * counted, RED's mark, and the frame queued unless tbf will drop it. */
static __always_inline void
mark_by_queue(struct __sk_buff *skb)
{
	__u64 now = bpf_ktime_get_ns(), dt = now - vq.last_ns, drained, q;
	__u32 b;

	if (dt > 1000000000ull)
		dt = 1000000000ull;
	drained = dt * MARK_RATE / 1000000000ull;
	vq.last_ns = now;
	q = vq.backlog > drained ? vq.backlog - drained : 0;
	b = q / VQ_BUCKET;
	if (b >= VQ_BUCKETS)
		b = VQ_BUCKETS - 1;
	vq.hist[b]++;
	vq.frames++;
	if (q + skb->len > MARK_LIMIT) {
		vq.over_limit++;
		vq.backlog = q;
		return;
	}
	vq.backlog = q + skb->len;
	if (q < MARK_KMIN)
		return;
	if (q < MARK_KMAX &&
	    bpf_get_prandom_u32() >= (__u64)MARK_PMAX * (q - MARK_KMIN) / (MARK_KMAX - MARK_KMIN + 1))
		return;
	vq.marked += set_ce(skb);
}

SEC("tc")
int
rnic_fault(struct __sk_buff *skb)
{
	if (skb->mark == DUP_MARK) {
		skb->mark = 0;
		return TC_ACT_OK;
	}
	int opcode = roce_opcode(skb);

	if (opcode < 0 || (RESPONSES_ONLY && (opcode < OP_READ_RESPONSE_FIRST || opcode > OP_ATOMIC_ACKNOWLEDGE)))
		return TC_ACT_OK;
	if (chance(DROP) || burst_lost()) {
		lost++;
		return LOSS_ACT;
	}
	if (chance(CORRUPT))
		flip_a_bit(skb);
	if (chance(DUPLICATE)) {
		skb->mark = DUP_MARK;
		bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS);
		skb->mark = 0;
	}
	if (chance(SLOW))
		skb->priority = SLOW_CLASS;
	if (MARK_RATE != 0)
		mark_by_queue(skb);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "Dual BSD/GPL";
