/* SPDX-License-Identifier: BSD-3-Clause
 * Packet capture to pcapng through ethdev RX/TX callbacks (doc/capture.md).
 *
 * The file is written here rather than with DPDK 22.11's rte_pcapng, which does not fit: it names every
 * interface "dpdk:N" (22.11 has no rte_pcapng_add_interface), and its TSC to wall-clock conversion is one
 * process-wide state initialised on first use from a TSC read after the caller's, so the first frame's
 * negative delta moves every timestamp about 2^64 cycles ahead (the year 2251 and later), and lcores
 * converting at once race on it. Here each capture takes its own clock base at start.
 *
 * The lcores (RX and TX callbacks) format each kept frame as a whole Enhanced Packet Block in a slot of a
 * mempool and enqueue it; the writer, a control thread, writes the slots in bursts. When no slot is free or
 * the ring is full (the file is slower than the ports), the frame is lost and counted; the counts end in
 * each interface's statistics block (isb_ifdrop).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/uio.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pcapng.h>
#include <rte_pdump.h>
#include <rte_ring.h>

#include "rnic_capture.h"
#include "rnic_priv.h"
#include "rnic_port.h"
#include "rnic_wire.h"

#define MAX_CAPTURE_PORTS RNIC_MAX_DEVICES
#define CAPTURE_MEMORY (32u << 20)	/* slots: frames between the lcores and the writer */
#define MIN_SLOTS 1024u
#define MAX_FRAME (RNIC_PORT_MBUF_DATA_ROOM - RTE_PKTMBUF_HEADROOM)	/* the largest frame a port carries */
#define WRITER_BURST 64
#define WRITER_IDLE_US 200

/* pcapng (draft-ietf-opsawg-pcapng): block types and option codes. */
#define PCAPNG_SHB 0x0A0D0D0Au
#define PCAPNG_IDB 1u
#define PCAPNG_ISB 5u
#define PCAPNG_EPB 6u
#define PCAPNG_BYTE_ORDER 0x1A2B3C4Du
#define OPT_END 0
#define OPT_COMMENT 1
#define SHB_USERAPPL 4
#define IF_NAME 2
#define IF_DESCRIPTION 3
#define IF_TSRESOL 9
#define EPB_FLAGS 2
#define EPB_QUEUE 6
#define ISB_STARTTIME 2
#define ISB_ENDTIME 3
#define ISB_IFRECV 4
#define ISB_IFDROP 5
#define ISB_FILTERACCEPT 6
#define ISB_USRDELIV 8

#define EPB_HEADER 28			/* type, length, interface, timestamp (2), captured and original length */
#define EPB_TRAILER (8 + 8 + 4 + 4)	/* flags and queue options, end of options, length again */

/* One captured port: a pcapng interface. Counters written by several lcores: atomic. */
struct capture_iface {
	uint16_t port_id;
	uint32_t index;			/* interface id in the file */
	uint64_t seen;			/* frames the port passed the capture */
	uint64_t accepted;		/* frames the filter and the count kept */
	uint64_t lost;			/* kept frames not in the file: no slot free, or the write failed */
	uint64_t written;		/* by the writer only */
};

static struct {
	int fd;
	struct rnic_capture_conf conf;
	uint32_t slot_data;		/* bytes of frame a slot holds */
	struct rte_mempool *slots;
	struct rte_ring *ring;
	pthread_t writer;
	volatile int stopping;
	int writer_running;
	uint64_t taken;			/* frames kept so far, against --pcap-count */
	uint64_t base_ns;		/* wall clock at the capture's start, and the TSC then */
	uint64_t base_tsc;
	uint64_t tsc_hz;
	unsigned int nb_ifaces;
	struct capture_iface iface[MAX_CAPTURE_PORTS];
	uint16_t nb_queues;
	const struct rte_eth_rxtx_callback *rx_cb[MAX_CAPTURE_PORTS][RNIC_PORT_MAX_QUEUES];
	const struct rte_eth_rxtx_callback *tx_cb[MAX_CAPTURE_PORTS][RNIC_PORT_MAX_QUEUES];
} cap = { .fd = -1 };

/* ------------------------------------------------------------------------------------------------------ */
/* The filter                                                                                               */

static const struct {
	const char *name;
	uint8_t first, last;		/* low five bits of the opcode (IBA 9.2.1 table 38), any transport */
} opcode_names[] = {
	{ "send", 0x00, 0x05 }, { "send", 0x16, 0x17 }, { "write", 0x06, 0x0b }, { "read_request", 0x0c, 0x0c },
	{ "read_response", 0x0d, 0x10 }, { "ack", 0x11, 0x11 }, { "atomic_ack", 0x12, 0x12 },
	{ "atomic", 0x13, 0x14 },
};

static void
opcode_set(struct rnic_capture_filter *f, unsigned int op)
{
	f->opcode[op / 64] |= 1ull << (op % 64);
}

static int
parse_opcode(const char *v, struct rnic_capture_filter *f)
{
	static const uint8_t transports[] = { 0x00, 0x20, 0x60 };	/* RC, UC, UD */
	unsigned long op;
	char *end;
	int found = 0;

	if (strcmp(v, "cnp") == 0) {
		opcode_set(f, 0x81);
		return 0;
	}
	for (unsigned int i = 0; i < RTE_DIM(opcode_names); i++) {
		if (strcmp(v, opcode_names[i].name) != 0)
			continue;
		for (unsigned int t = 0; t < RTE_DIM(transports); t++)
			for (unsigned int op5 = opcode_names[i].first; op5 <= opcode_names[i].last; op5++)
				opcode_set(f, transports[t] | op5);
		found = 1;
	}
	if (found)
		return 0;
	errno = 0;
	op = strtoul(v, &end, 0);
	if (errno != 0 || end == v || *end != '\0' || op > 0xff)
		return -EINVAL;
	opcode_set(f, (unsigned int)op);
	return 0;
}

static int
parse_term(char *term, struct rnic_capture_filter *f)
{
	char *eq = strchr(term, '='), *end;
	unsigned long v;

	if (eq == NULL)
		return -EINVAL;
	*eq++ = '\0';
	if (strcmp(term, "opcode") == 0)
		return parse_opcode(eq, f);
	if (strcmp(term, "dir") == 0) {
		if (strcmp(eq, "in") != 0 && strcmp(eq, "out") != 0)
			return -EINVAL;
		f->direction |= strcmp(eq, "in") == 0 ? RNIC_CAPTURE_IN : RNIC_CAPTURE_OUT;
		return 0;
	}
	if (strcmp(term, "qp") != 0 || f->nb_qp == RNIC_CAPTURE_MAX_QPS)
		return -EINVAL;
	errno = 0;
	v = strtoul(eq, &end, 0);
	if (errno != 0 || end == eq || *end != '\0' || eq[0] == '-' || v > 0xffffff)
		return -EINVAL;
	f->qp[f->nb_qp++] = (uint32_t)v;
	return 0;
}

int
rnic_capture_parse_filter(const char *text, struct rnic_capture_filter *f)
{
	char buf[512], *save;

	memset(f, 0, sizeof(*f));
	if (strlen(text) >= sizeof(buf) || text[0] == '\0')
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *term = strtok_r(buf, ",", &save); term != NULL; term = strtok_r(NULL, ",", &save))
		if (parse_term(term, f) != 0)
			return -EINVAL;
	return 0;
}

/* The BTH opcode and destination QP of a RoCEv2 frame (Ethernet, an optional 802.1Q tag, IPv4 or IPv6, UDP
 * to 4791); -1 for any other frame. */
static int
frame_bth(const struct rte_mbuf *m, uint8_t *opcode, uint32_t *dest_qp)
{
	uint8_t buf[RTE_ETHER_HDR_LEN + 4 + 40 + 8 + 12];
	const uint8_t *p = rte_pktmbuf_read(m, 0, RTE_MIN(sizeof(buf), (size_t)rte_pktmbuf_pkt_len(m)), buf);
	uint32_t len = RTE_MIN((uint32_t)sizeof(buf), rte_pktmbuf_pkt_len(m)), off = RTE_ETHER_HDR_LEN;
	uint16_t type;

	if (p == NULL || len < off)
		return -1;
	type = (uint16_t)(p[12] << 8 | p[13]);
	if (type == RTE_ETHER_TYPE_VLAN && len >= off + 4) {
		type = (uint16_t)(p[16] << 8 | p[17]);
		off += 4;
	}
	if (type == RTE_ETHER_TYPE_IPV4 && len >= off + 20 && p[off + 9] == IPPROTO_UDP)
		off += (p[off] & 0xfu) * 4u;
	else if (type == RTE_ETHER_TYPE_IPV6 && len >= off + 40 && p[off + 6] == IPPROTO_UDP)
		off += 40;
	else
		return -1;
	if (len < off + 8 + 12 || (p[off + 2] << 8 | p[off + 3]) != RNIC_ROCEV2_UDP_PORT)
		return -1;
	off += 8;
	*opcode = p[off];
	*dest_qp = (uint32_t)p[off + 5] << 16 | (uint32_t)p[off + 6] << 8 | p[off + 7];
	return 0;
}

static int
filter_match(const struct rnic_capture_filter *f, const struct rte_mbuf *m, uint8_t direction)
{
	uint8_t opcode;
	uint32_t qp;
	int by_opcode = (f->opcode[0] | f->opcode[1] | f->opcode[2] | f->opcode[3]) != 0, ok = 0;

	if (f->direction != 0 && !(f->direction & direction))
		return 0;
	if (f->nb_qp == 0 && !by_opcode)
		return 1;
	if (frame_bth(m, &opcode, &qp) != 0)
		return 0;
	if (by_opcode && !(f->opcode[opcode / 64] & (1ull << (opcode % 64))))
		return 0;
	for (unsigned int i = 0; i < f->nb_qp; i++)
		ok |= f->qp[i] == qp;
	return f->nb_qp == 0 || ok;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Blocks                                                                                                   */

/* An option at p (code, length, value padded to 32 bits); returns its size. */
static size_t
put_option(uint8_t *p, uint16_t code, const void *value, uint16_t len)
{
	size_t size = 4 + RTE_ALIGN_CEIL(len, 4u);

	memcpy(p, &code, 2);
	memcpy(p + 2, &len, 2);
	memset(p + 4, 0, size - 4);
	if (len != 0)
		memcpy(p + 4, value, len);
	return size;
}

static size_t
put_string(uint8_t *p, uint16_t code, const char *s)
{
	return put_option(p, code, s, (uint16_t)strlen(s));
}

/* A 64-bit timestamp as pcapng stores it: the high 32 bits first. */
static void
put_time(uint8_t *p, uint64_t ns)
{
	const uint32_t w[2] = { (uint32_t)(ns >> 32), (uint32_t)ns };

	memcpy(p, w, sizeof(w));
}

/* Close a block of len bytes at buf (options ended): its length at both ends; write it. */
static int
write_block(uint8_t *buf, size_t len)
{
	uint32_t total = (uint32_t)(len + 4);

	memcpy(buf + 4, &total, 4);
	memcpy(buf + len, &total, 4);
	return write(cap.fd, buf, total) == (ssize_t)total ? 0 : -1;
}

static int
write_section_header(void)
{
	const uint32_t head[2] = { PCAPNG_SHB, 0 }, magic = PCAPNG_BYTE_ORDER;
	const uint16_t version[2] = { 1, 0 };
	const uint64_t section_length = UINT64_MAX;	/* not known */
	uint8_t buf[256];
	size_t len = 0;

	memcpy(buf, head, 8);
	memcpy(buf + 8, &magic, 4);
	memcpy(buf + 12, version, 4);
	memcpy(buf + 16, &section_length, 8);
	len = 24;
	len += put_string(buf + len, SHB_USERAPPL, "softrnic " RNIC_VERSION);
	len += put_option(buf + len, OPT_END, NULL, 0);
	return write_block(buf, len);
}

/* An interface per port: named after the device and the ethdev ("rnic0/rnic_lb_a"). */
static int
write_interface(const struct rnic_capture_port *port)
{
	const uint32_t head[2] = { PCAPNG_IDB, 0 };
	const uint16_t link[2] = { 1, 0 };		/* LINKTYPE_ETHERNET, reserved */
	const uint32_t snaplen = cap.conf.snaplen;
	const uint8_t tsresol = 9;			/* nanoseconds */
	char ethdev[RTE_ETH_NAME_MAX_LEN] = "?", name[128], descr[256];
	uint8_t buf[512];
	size_t len;

	rte_eth_dev_get_name_by_port(port->port_id, ethdev);
	snprintf(name, sizeof(name), "%s/%s", port->device, ethdev);
	snprintf(descr, sizeof(descr), "softrnic device %s, port 1: ethdev %s (port id %u)", port->device, ethdev,
		 port->port_id);
	memcpy(buf, head, 8);
	memcpy(buf + 8, link, 4);
	memcpy(buf + 12, &snaplen, 4);
	len = 16;
	len += put_string(buf + len, IF_NAME, name);
	len += put_string(buf + len, IF_DESCRIPTION, descr);
	len += put_option(buf + len, IF_TSRESOL, &tsresol, 1);
	len += put_option(buf + len, OPT_END, NULL, 0);
	return write_block(buf, len);
}

/* The interface's statistics at the end: frames seen, kept by the filter, written, and lost. */
static int
write_statistics(const struct capture_iface *ifc, uint64_t start_ns, uint64_t end_ns)
{
	const uint32_t head[3] = { PCAPNG_ISB, 0, ifc->index };
	uint8_t buf[512], t[8];
	char comment[160];
	size_t len;

	memcpy(buf, head, 12);
	put_time(buf + 12, end_ns);
	len = 20;
	snprintf(comment, sizeof(comment), "softrnic: %" PRIu64 " frames seen, %" PRIu64 " kept, %" PRIu64
		 " written, %" PRIu64 " lost (no free slot, or the file refused them)", ifc->seen, ifc->accepted,
		 ifc->written, ifc->lost);
	len += put_string(buf + len, OPT_COMMENT, comment);
	put_time(t, start_ns);
	len += put_option(buf + len, ISB_STARTTIME, t, 8);
	put_time(t, end_ns);
	len += put_option(buf + len, ISB_ENDTIME, t, 8);
	len += put_option(buf + len, ISB_IFRECV, &ifc->seen, 8);
	len += put_option(buf + len, ISB_IFDROP, &ifc->lost, 8);
	len += put_option(buf + len, ISB_FILTERACCEPT, &ifc->accepted, 8);
	len += put_option(buf + len, ISB_USRDELIV, &ifc->written, 8);
	len += put_option(buf + len, OPT_END, NULL, 0);
	return write_block(buf, len);
}

/* Wall-clock nanoseconds of a TSC value, from the capture's base (a TSC read a little before the base, on
 * another lcore, counts as the base). */
static uint64_t
tsc_to_ns(uint64_t tsc)
{
	uint64_t delta = tsc > cap.base_tsc ? tsc - cap.base_tsc : 0;

	return cap.base_ns + (uint64_t)((unsigned __int128)delta * NS_PER_S / cap.tsc_hz);
}

/* A whole Enhanced Packet Block for the frame, in slot. Returns its length. */
static uint32_t
format_epb(uint8_t *slot, const struct capture_iface *ifc, const struct rte_mbuf *m, uint16_t queue,
	   uint8_t direction, uint64_t tsc)
{
	uint32_t orig = rte_pktmbuf_pkt_len(m), caplen = RTE_MIN(orig, cap.slot_data);
	uint32_t head[7] = { PCAPNG_EPB, 0, ifc->index, 0, 0, caplen, orig };
	const uint32_t flags = direction == RNIC_CAPTURE_IN ? 1 : 2;	/* epb_flags bits 0-1: inbound, outbound */
	const uint32_t q = queue;
	uint32_t len = EPB_HEADER + RTE_ALIGN_CEIL(caplen, 4u), total;
	const void *data;

	put_time((uint8_t *)&head[3], tsc_to_ns(tsc));
	memcpy(slot, head, sizeof(head));
	data = rte_pktmbuf_read(m, 0, caplen, slot + EPB_HEADER);
	if (data != slot + EPB_HEADER)
		memcpy(slot + EPB_HEADER, data, caplen);
	memset(slot + EPB_HEADER + caplen, 0, len - EPB_HEADER - caplen);
	len += (uint32_t)put_option(slot + len, EPB_FLAGS, &flags, 4);
	len += (uint32_t)put_option(slot + len, EPB_QUEUE, &q, 4);
	len += (uint32_t)put_option(slot + len, OPT_END, NULL, 0);
	total = len + 4;
	memcpy(slot + 4, &total, 4);
	memcpy(slot + len, &total, 4);
	return total;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The lcores' side                                                                                         */

static void
capture(struct capture_iface *ifc, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint8_t direction)
{
	uint64_t tsc = rte_get_tsc_cycles();

	__atomic_fetch_add(&ifc->seen, n, __ATOMIC_RELAXED);
	for (uint16_t i = 0; i < n; i++) {
		void *slot;

		if (!filter_match(&cap.conf.filter, pkts[i], direction))
			continue;
		if (cap.conf.count != 0 && __atomic_fetch_add(&cap.taken, 1, __ATOMIC_RELAXED) >= cap.conf.count)
			return;
		__atomic_fetch_add(&ifc->accepted, 1, __ATOMIC_RELAXED);
		if (rte_mempool_get(cap.slots, &slot) != 0) {
			__atomic_fetch_add(&ifc->lost, 1, __ATOMIC_RELAXED);
			continue;
		}
		format_epb(slot, ifc, pkts[i], queue, direction, tsc);
		if (rte_ring_mp_enqueue(cap.ring, slot) != 0) {
			rte_mempool_put(cap.slots, slot);
			__atomic_fetch_add(&ifc->lost, 1, __ATOMIC_RELAXED);
		}
	}
}

static uint16_t
rx_callback(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max, void *arg)
{
	(void)port;
	(void)max;
	capture(arg, queue, pkts, n, RNIC_CAPTURE_IN);
	return n;
}

static uint16_t
tx_callback(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	(void)port;
	capture(arg, queue, pkts, n, RNIC_CAPTURE_OUT);
	return n;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The writer                                                                                               */

static uint32_t
block_length(const void *slot)
{
	uint32_t len;

	memcpy(&len, (const uint8_t *)slot + 4, 4);
	return len;
}

static void
count_written(const void *slot, int written)
{
	uint32_t ifindex;

	memcpy(&ifindex, (const uint8_t *)slot + 8, 4);
	if (written)
		cap.iface[ifindex].written++;
	else
		__atomic_fetch_add(&cap.iface[ifindex].lost, 1, __ATOMIC_RELAXED);
}

/* Write a burst of slots, again after a short write; what the file refuses is lost (counted on its
 * interface). */
static void
write_burst(void **slots, unsigned int n)
{
	struct iovec iov[WRITER_BURST];
	unsigned int first = 0;		/* the first block not wholly written */

	for (unsigned int i = 0; i < n; i++) {
		iov[i].iov_base = slots[i];
		iov[i].iov_len = block_length(slots[i]);
	}
	while (first < n) {
		ssize_t done = writev(cap.fd, &iov[first], (int)(n - first));

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
			break;
		for (; first < n && (size_t)done >= iov[first].iov_len; first++) {
			done -= (ssize_t)iov[first].iov_len;
			count_written(slots[first], 1);
		}
		if (first < n) {	/* the rest of a block written in part */
			iov[first].iov_base = (uint8_t *)iov[first].iov_base + done;
			iov[first].iov_len -= (size_t)done;
		}
	}
	for (unsigned int i = first; i < n; i++)
		count_written(slots[i], 0);
	rte_mempool_put_bulk(cap.slots, slots, n);
}

static void *
writer_loop(void *arg)
{
	void *slots[WRITER_BURST];

	(void)arg;
	for (;;) {
		unsigned int n = rte_ring_sc_dequeue_burst(cap.ring, slots, WRITER_BURST, NULL);

		if (n != 0) {
			write_burst(slots, n);
			continue;
		}
		if (cap.stopping)
			return NULL;
		rte_delay_us_sleep(WRITER_IDLE_US);
	}
}

/* ------------------------------------------------------------------------------------------------------ */
/* Start and stop                                                                                           */

static uint64_t
wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* The clock base: the wall clock, and the TSC halfway through reading it. */
static void
clock_base(void)
{
	uint64_t before = rte_get_tsc_cycles();

	cap.base_ns = wall_ns();
	cap.base_tsc = before + (rte_get_tsc_cycles() - before) / 2;
	cap.tsc_hz = rte_get_tsc_hz();
}

/* The slot pool and ring: as many slots as CAPTURE_MEMORY holds (at least MIN_SLOTS). */
static int
create_slots(int socket_id)
{
	uint32_t size = EPB_HEADER + RTE_ALIGN_CEIL(cap.slot_data, 4u) + EPB_TRAILER;
	uint32_t n = rte_align32pow2(RTE_MAX(CAPTURE_MEMORY / size, MIN_SLOTS));

	cap.slots = rte_mempool_create("rnic_capture", n - 1, size, 256, 0, NULL, NULL, NULL, NULL, socket_id, 0);
	cap.ring = rte_ring_create("rnic_capture", n, socket_id, RING_F_SC_DEQ);
	return cap.slots != NULL && cap.ring != NULL ? 0 : -ENOMEM;
}

static int
open_file(const struct rnic_capture_conf *conf, const struct rnic_capture_port *ports, unsigned int nb_ports)
{
	cap.fd = open(conf->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (cap.fd < 0)
		return -errno;
	if (write_section_header() != 0)
		return -errno;
	for (unsigned int i = 0; i < nb_ports; i++)
		if (write_interface(&ports[i]) != 0)
			return -errno;
	return 0;
}

int
rnic_capture_start(const struct rnic_capture_conf *conf, const struct rnic_capture_port *ports,
		   unsigned int nb_ports, uint16_t nb_queues, int socket_id)
{
	int ret;

	if (nb_ports > MAX_CAPTURE_PORTS || cap.fd >= 0)
		return -EINVAL;
	memset(&cap, 0, sizeof(cap));
	cap.conf = *conf;
	cap.slot_data = conf->snaplen != 0 ? RTE_MIN(conf->snaplen, (uint32_t)MAX_FRAME) : MAX_FRAME;
	ret = open_file(conf, ports, nb_ports);
	if (ret == 0)
		ret = create_slots(socket_id);
	if (ret == 0)
		ret = rte_ctrl_thread_create(&cap.writer, "rnic-capture", NULL, writer_loop, NULL);
	if (ret != 0) {
		RNIC_LOG(ERR, "--pcap %s: %s", conf->path, strerror(-ret));
		rnic_capture_stop();
		return ret;
	}
	cap.writer_running = 1;
	clock_base();
	cap.nb_queues = nb_queues;
	for (unsigned int i = 0; i < nb_ports; i++) {
		struct capture_iface *ifc = &cap.iface[cap.nb_ifaces];

		ifc->port_id = ports[i].port_id;
		ifc->index = cap.nb_ifaces++;
		for (uint16_t q = 0; q < nb_queues; q++) {
			cap.rx_cb[i][q] = rte_eth_add_rx_callback(ifc->port_id, q, rx_callback, ifc);
			cap.tx_cb[i][q] = rte_eth_add_tx_callback(ifc->port_id, q, tx_callback, ifc);
		}
	}
	return 0;
}

void
rnic_capture_stop(void)
{
	uint64_t end_ns, lost = 0, written = 0;

	for (unsigned int i = 0; i < cap.nb_ifaces; i++) {
		for (uint16_t q = 0; q < cap.nb_queues; q++) {
			if (cap.rx_cb[i][q] != NULL)
				rte_eth_remove_rx_callback(cap.iface[i].port_id, q, cap.rx_cb[i][q]);
			if (cap.tx_cb[i][q] != NULL)
				rte_eth_remove_tx_callback(cap.iface[i].port_id, q, cap.tx_cb[i][q]);
		}
	}
	if (cap.writer_running) {
		cap.stopping = 1;	/* the writer empties the ring first */
		pthread_join(cap.writer, NULL);
	}
	end_ns = wall_ns();
	for (unsigned int i = 0; i < cap.nb_ifaces; i++) {
		if (write_statistics(&cap.iface[i], cap.base_ns, end_ns) != 0)
			RNIC_LOG(ERR, "--pcap %s: cannot write the statistics: %s", cap.conf.path, strerror(errno));
		lost += cap.iface[i].lost;
		written += cap.iface[i].written;
	}
	if (cap.fd >= 0) {
		close(cap.fd);
		if (lost != 0)
			RNIC_LOG(WARNING, "--pcap %s: %" PRIu64 " frames written, %" PRIu64 " lost (the file was "
				 "slower than the ports)", cap.conf.path, written, lost);
		else
			RNIC_LOG(INFO, "--pcap %s: %" PRIu64 " frames written", cap.conf.path, written);
	}
	rte_ring_free(cap.ring);
	rte_mempool_free(cap.slots);
	memset(&cap, 0, sizeof(cap));
	cap.fd = -1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* dpdk-dumpcap                                                                                             */

/*
 * rte_pdump's copies (made on the lcores while dpdk-dumpcap captures) take their timestamps from
 * rte_pcapng's process-wide clock, which 22.11 initialises on its first conversion from a TSC read later
 * than the one it converts: that first frame's negative delta would move every timestamp ~2^64 cycles
 * ahead. One conversion now, of a TSC a millisecond ahead (after the initialisation's read, less than the
 * second that would move the clock's base), initialises it correctly before any frame comes.
 */
static void
pcapng_clock_init(struct rte_mempool *mp)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp), *copy;

	if (m == NULL || rte_pktmbuf_append(m, RTE_ETHER_MIN_LEN) == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	memset(rte_pktmbuf_mtod(m, void *), 0, RTE_ETHER_MIN_LEN);
	copy = rte_pcapng_copy(0, 0, m, mp, RTE_ETHER_MIN_LEN, rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000,
			       RTE_PCAPNG_DIRECTION_UNKNOWN);
	rte_pktmbuf_free(copy);
	rte_pktmbuf_free(m);
}

static int
no_multiprocess(const struct rte_mp_msg *msg, const void *peer)
{
	(void)msg;
	(void)peer;
	return 0;
}

int
rnic_capture_pdump_init(struct rte_mempool *mp)
{
	/* Without a shared configuration (--no-shconf) EAL has no multi-process channel: nothing can attach. */
	if (rte_mp_action_register("rnic_mp_probe", no_multiprocess) != 0)
		return -rte_errno;
	rte_mp_action_unregister("rnic_mp_probe");
	if (rte_pdump_init() != 0)
		return -rte_errno;
	pcapng_clock_init(mp);
	if (!rte_eal_has_hugepages())
		RNIC_LOG(INFO, "no hugepages (--no-huge): secondary processes (dpdk-dumpcap, dpdk-proc-info) cannot "
			 "map this process's memory");
	return 0;
}

void
rnic_capture_pdump_uninit(void)
{
	rte_pdump_uninit();
}
