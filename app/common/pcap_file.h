/* SPDX-License-Identifier: BSD-3-Clause
 * A minimal reader and writer of classic pcap files (microsecond, Ethernet link type), for the tools and
 * tests (no libpcap needed).
 */
#ifndef PCAP_FILE_H
#define PCAP_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pcap_frames {
	uint32_t count;
	uint32_t *len;
	uint8_t **data;
};

static inline void
pcap_frames_free(struct pcap_frames *pf)
{
	for (uint32_t i = 0; i < pf->count; i++)
		free(pf->data[i]);
	free(pf->data);
	free(pf->len);
	memset(pf, 0, sizeof(*pf));
}

/* Read every frame of a little-endian microsecond pcap with link type Ethernet; 0 or -1. */
static inline int
pcap_frames_read(const char *path, struct pcap_frames *pf)
{
	uint32_t ghdr[6], rhdr[4], cap = 0;
	FILE *f = fopen(path, "rb");

	memset(pf, 0, sizeof(*pf));
	if (f == NULL)
		return -1;
	if (fread(ghdr, sizeof(ghdr), 1, f) != 1 || ghdr[0] != 0xa1b2c3d4 || ghdr[5] != 1)
		goto fail;
	while (fread(rhdr, sizeof(rhdr), 1, f) == 1) {
		if (rhdr[2] > 262144)
			goto fail;
		if (pf->count == cap) {
			uint32_t *len;
			uint8_t **data;

			cap = cap ? cap * 2 : 64;
			len = realloc(pf->len, cap * sizeof(*len));
			if (len == NULL)
				goto fail;
			pf->len = len;
			data = realloc(pf->data, cap * sizeof(*data));
			if (data == NULL)
				goto fail;
			pf->data = data;
		}
		pf->data[pf->count] = malloc(rhdr[2] ? rhdr[2] : 1);
		if (pf->data[pf->count] == NULL || fread(pf->data[pf->count], 1, rhdr[2], f) != rhdr[2]) {
			free(pf->data[pf->count]);
			goto fail;
		}
		pf->len[pf->count++] = rhdr[2];
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	pcap_frames_free(pf);
	return -1;
}

/* Open a pcap file for writing and write its global header; NULL on error (errno set). */
static inline FILE *
pcap_writer_open(const char *path)
{
	const uint32_t ghdr[6] = { 0xa1b2c3d4, 2 | 4u << 16, 0, 0, 262144, 1 };
	FILE *f = fopen(path, "wb");

	if (f != NULL && fwrite(ghdr, sizeof(ghdr), 1, f) != 1) {
		fclose(f);
		return NULL;
	}
	return f;
}

/* Append one frame with the given timestamp (seconds, microseconds); 0 or -1. */
static inline int
pcap_writer_add(FILE *f, const uint8_t *frame, uint32_t len, uint32_t sec, uint32_t usec)
{
	const uint32_t rhdr[4] = { sec, usec, len, len };

	if (fwrite(rhdr, sizeof(rhdr), 1, f) != 1 || fwrite(frame, 1, len, f) != len)
		return -1;
	return 0;
}

#endif /* PCAP_FILE_H */
