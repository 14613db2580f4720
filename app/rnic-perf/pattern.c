/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's data pattern (--verify): every 64-bit word of a message says which QP, message and offset it
 * is, so a byte placed in the wrong message or at the wrong offset is caught, not only a wrong byte.
 */
#include <stdint.h>
#include <string.h>

#include "perf.h"

#define PATTERN_MSG 0x9e3779b97f4a7c15ull
#define PATTERN_QP 0xd1b54a32d192ed03ull
#define PATTERN_OFF 0x100000001b3ull

/* The pattern's 64-bit word at byte offset i (a multiple of 8) of message msg of QP qp. */
static uint64_t
pattern_word(uint32_t qp, uint64_t msg, uint64_t i)
{
	return (msg * PATTERN_MSG) ^ ((uint64_t)qp * PATTERN_QP) ^ (i * PATTERN_OFF);
}

/*
 * The pattern 32 bytes at a time: four words, whose offset terms grow by a constant (no multiply), in
 * vector registers. --verify fills and checks every byte of every message, so at 64 KB this runs at
 * memory speed or the application's lcore (which carries engine stages too) becomes the bottleneck.
 */
typedef uint64_t pattern_vec __attribute__((vector_size(32)));

struct pattern_run {
	pattern_vec base;		/* the message's term in every lane */
	pattern_vec off;		/* the offset terms of the next four words */
	pattern_vec step;		/* what four words add to them */
};

static void
pattern_start(struct pattern_run *run, uint32_t qp, uint64_t msg)
{
	uint64_t b = pattern_word(qp, msg, 0), w = 8 * PATTERN_OFF;

	run->base = (pattern_vec){ b, b, b, b };
	run->off = (pattern_vec){ 0, w, 2 * w, 3 * w };
	run->step = (pattern_vec){ 4 * w, 4 * w, 4 * w, 4 * w };
}

static void
pattern_next(struct pattern_run *run, pattern_vec *w)
{
	*w = run->base ^ run->off;
	run->off += run->step;
}

void
perf_fill(uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg)
{
	struct pattern_run run;
	uint64_t i = 0;

	pattern_start(&run, qp, msg);
	for (; i + sizeof(pattern_vec) <= len; i += sizeof(pattern_vec)) {
		pattern_vec w;

		pattern_next(&run, &w);
		memcpy(p + i, &w, sizeof(w));
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(qp, msg, i);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(pattern_word(qp, msg, i) >> 8);
}

int
perf_check(const uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg)
{
	struct pattern_run run;
	pattern_vec diff = { 0, 0, 0, 0 };
	uint64_t i = 0;

	pattern_start(&run, qp, msg);
	for (; i + sizeof(pattern_vec) <= len; i += sizeof(pattern_vec)) {
		pattern_vec got, want;

		memcpy(&got, p + i, sizeof(got));
		pattern_next(&run, &want);
		diff |= got ^ want;
	}
	if ((diff[0] | diff[1] | diff[2] | diff[3]) != 0)
		return -1;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(qp, msg, i);

		if (memcmp(p + i, &w, 8) != 0)
			return -1;
	}
	for (; i < len; i++)
		if (p[i] != (uint8_t)(pattern_word(qp, msg, i) >> 8))
			return -1;
	return 0;
}
