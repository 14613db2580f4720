/* SPDX-License-Identifier: BSD-3-Clause
 * The kernel's faults for tests/engine/fault-veth.sh: a tc-BPF program (clang -target bpf, attached with
 * "tc filter add dev DEV ingress|egress bpf da") on each veth of the pair, so that the frames one softrnic
 * process sends are lost, corrupted or held back before the other one receives them (lost and duplicated at
 * the receiving veth's ingress: see DUPLICATE, and fault-veth.sh on losses). What it does is
 * fixed when it is compiled, it acts on RoCEv2 frames only, with these macros (probabilities as thresholds of a 32-bit random number,
 * P x 2^32; 0: off):
 *   DROP            lose a frame
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

#define ROCEV2_PORT 4791
#define DUP_MARK 0x52444d50		/* a copy this program made: it passes as it is */
#define SLOW_CLASS 0x10020		/* HTB class 1:20 */
#define OP_READ_RESPONSE_FIRST 0x0d	/* RC responses: 0x0d .. 0x12 (IBA 9.2.1) */
#define OP_ATOMIC_ACKNOWLEDGE 0x12

/* The Gilbert-Elliott chain's state (racy between CPUs: a burst's edges may blur, the rates hold). */
static __u32 ge_bad;

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
	if (chance(DROP) || burst_lost())
		return TC_ACT_SHOT;
	if (chance(CORRUPT))
		flip_a_bit(skb);
	if (chance(DUPLICATE)) {
		skb->mark = DUP_MARK;
		bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS);
		skb->mark = 0;
	}
	if (chance(SLOW))
		skb->priority = SLOW_CLASS;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "Dual BSD/GPL";
