/* SPDX-License-Identifier: BSD-3-Clause
 * Frames from and to capture files for the tools and tests, through libpcap: any file it reads (pcap or
 * pcapng, such as the engine's own --pcap captures) with Ethernet frames; classic pcap written.
 */
#ifndef PCAP_FILE_H
#define PCAP_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

/* Every frame of a file: the bytes captured of each. */
struct rnic_frames {
	uint32_t count;
	uint32_t *len;
	uint8_t **data;
};

static inline void
rnic_frames_free(struct rnic_frames *pf)
{
	for (uint32_t i = 0; i < pf->count; i++)
		free(pf->data[i]);
	free(pf->data);
	free(pf->len);
	memset(pf, 0, sizeof(*pf));
}

/* Room for one more frame; 0 or -1. */
static inline int
rnic_frames_grow(struct rnic_frames *pf, uint32_t *cap)
{
	uint32_t *len;
	uint8_t **data;

	if (pf->count < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 64;
	len = realloc(pf->len, *cap * sizeof(*len));
	if (len == NULL)
		return -1;
	pf->len = len;
	data = realloc(pf->data, *cap * sizeof(*data));
	if (data == NULL)
		return -1;
	pf->data = data;
	return 0;
}

/* Read every frame of a pcap or pcapng file of Ethernet frames; 0, or -1 with the reason in err. */
static inline int
rnic_frames_read(const char *path, struct rnic_frames *pf, char err[PCAP_ERRBUF_SIZE])
{
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *bytes;
	uint32_t cap = 0;
	int r;

	memset(pf, 0, sizeof(*pf));
	if (p == NULL)
		return -1;
	if (pcap_datalink(p) != DLT_EN10MB) {
		snprintf(err, PCAP_ERRBUF_SIZE, "link type %s, not Ethernet", pcap_datalink_val_to_name(pcap_datalink(p)));
		pcap_close(p);
		return -1;
	}
	while ((r = pcap_next_ex(p, &h, &bytes)) == 1) {
		if (rnic_frames_grow(pf, &cap) != 0 || (pf->data[pf->count] = malloc(h->caplen ? h->caplen : 1)) == NULL) {
			snprintf(err, PCAP_ERRBUF_SIZE, "out of memory");
			break;
		}
		memcpy(pf->data[pf->count], bytes, h->caplen);
		pf->len[pf->count++] = h->caplen;
	}
	if (r == PCAP_ERROR)
		snprintf(err, PCAP_ERRBUF_SIZE, "%s", pcap_geterr(p));
	pcap_close(p);
	if (r != PCAP_ERROR_BREAK) {	/* the end of the file, not an error */
		rnic_frames_free(pf);
		return -1;
	}
	return 0;
}

/* A classic pcap file being written (microseconds, Ethernet). */
struct rnic_pcap_writer {
	pcap_t *pcap;
	pcap_dumper_t *dump;
};

/* Open path for writing; 0, or -1 with the reason in err. */
static inline int
rnic_pcap_writer_open(struct rnic_pcap_writer *w, const char *path, char err[PCAP_ERRBUF_SIZE])
{
	w->pcap = pcap_open_dead(DLT_EN10MB, 262144);
	w->dump = w->pcap != NULL ? pcap_dump_open(w->pcap, path) : NULL;
	if (w->dump == NULL) {
		snprintf(err, PCAP_ERRBUF_SIZE, "%s", w->pcap != NULL ? pcap_geterr(w->pcap) : "out of memory");
		if (w->pcap != NULL)
			pcap_close(w->pcap);
		return -1;
	}
	return 0;
}

/* Append one frame with the given timestamp (seconds, microseconds). */
static inline void
rnic_pcap_writer_add(struct rnic_pcap_writer *w, const uint8_t *frame, uint32_t len, uint32_t sec, uint32_t usec)
{
	struct pcap_pkthdr h = { .ts = { .tv_sec = sec, .tv_usec = usec }, .caplen = len, .len = len };

	pcap_dump((u_char *)w->dump, &h, frame);
}

/* Flush and close; 0, or -1 if the file could not be written whole. */
static inline int
rnic_pcap_writer_close(struct rnic_pcap_writer *w)
{
	int ret = pcap_dump_flush(w->dump);

	pcap_dump_close(w->dump);
	pcap_close(w->pcap);
	return ret == 0 ? 0 : -1;
}

#endif /* PCAP_FILE_H */
