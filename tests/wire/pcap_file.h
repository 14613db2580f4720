/* SPDX-License-Identifier: BSD-3-Clause
 * A minimal reader of classic pcap files (Ethernet link type), for tests and tools.
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

#endif /* PCAP_FILE_H */
