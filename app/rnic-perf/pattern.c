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
 * The pattern 32 bytes at a time: four words in two 16-byte vectors (the machine baseline has SSE, not AVX),
 * whose offset terms grow by a constant (no multiply). --verify fills and checks every byte of every
 * message, so at 64 KB this must run at memory speed, or the application's lcore is the bottleneck.
 */
typedef uint64_t pattern_vec __attribute__((vector_size(16)));

#define PATTERN_STEP (8 * PATTERN_OFF)	/* what one word adds to the offset term */

void
perf_fill(uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg)
{
	const uint64_t b = pattern_word(qp, msg, 0);
	const pattern_vec base = { b, b }, step = { 4 * PATTERN_STEP, 4 * PATTERN_STEP };
	pattern_vec lo = { 0, PATTERN_STEP }, hi = { 2 * PATTERN_STEP, 3 * PATTERN_STEP };
	uint64_t i = 0;

	for (; i + 32 <= len; i += 32) {
		pattern_vec w0 = base ^ lo, w1 = base ^ hi;

		memcpy(p + i, &w0, 16);
		memcpy(p + i + 16, &w1, 16);
		lo += step;
		hi += step;
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
	const uint64_t b = pattern_word(qp, msg, 0);
	const pattern_vec base = { b, b }, step = { 4 * PATTERN_STEP, 4 * PATTERN_STEP };
	pattern_vec lo = { 0, PATTERN_STEP }, hi = { 2 * PATTERN_STEP, 3 * PATTERN_STEP }, diff = { 0, 0 };
	uint64_t i = 0;

	for (; i + 32 <= len; i += 32) {
		pattern_vec g0, g1;

		memcpy(&g0, p + i, 16);
		memcpy(&g1, p + i + 16, 16);
		diff |= (g0 ^ base ^ lo) | (g1 ^ base ^ hi);
		lo += step;
		hi += step;
	}
	if ((diff[0] | diff[1]) != 0)
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
