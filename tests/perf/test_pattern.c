/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf's --verify pattern: the vectorised fill writes exactly the pattern's definition (word at byte
 * offset i = msg * K1 ^ qp * K2 ^ i * K3, trailing bytes from the word's second byte), at every length and
 * alignment, and the check refuses a single wrong byte anywhere, or another message's or QP's data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "perf.h"

static uint64_t
reference_word(uint32_t qp, uint64_t msg, uint64_t i)
{
	return (msg * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)qp * 0xd1b54a32d192ed03ull) ^ (i * 0x100000001b3ull);
}

static void
reference_fill(uint8_t *p, uint32_t len, uint32_t qp, uint64_t msg)
{
	uint64_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = reference_word(qp, msg, i);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(reference_word(qp, msg, i) >> 8);
}

static const uint32_t lens[] = { 0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 255, 256, 4095, 4096, 4103, 65536 };

static void
test_fill_matches_definition(void **state)
{
	static uint8_t buf[65536 + 64], want[65536];

	(void)state;
	for (unsigned int a = 0; a < 8; a++) {		/* every alignment of the start */
		for (unsigned int k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
			memset(buf, 0xa5, sizeof(buf));
			perf_fill(buf + a, lens[k], 3 + a, 1000 + k);
			reference_fill(want, lens[k], 3 + a, 1000 + k);
			assert_memory_equal(buf + a, want, lens[k]);
			assert_int_equal(buf[a + lens[k]], 0xa5);	/* nothing written past the end */
			assert_int_equal(perf_check(buf + a, lens[k], 3 + a, 1000 + k), 0);
		}
	}
}

static void
test_check_refuses_any_wrong_byte(void **state)
{
	static uint8_t buf[4103 + 8];

	(void)state;
	for (unsigned int a = 0; a < 3; a++) {
		perf_fill(buf + a, 4103, 7, 42);
		for (uint32_t i = 0; i < 4103; i++) {
			buf[a + i] ^= 0x10;
			if (perf_check(buf + a, 4103, 7, 42) == 0)
				fail_msg("a flipped bit at byte %u (alignment %u) passed", i, a);
			buf[a + i] ^= 0x10;
		}
		assert_int_equal(perf_check(buf + a, 4103, 7, 42), 0);
	}
}

static void
test_check_refuses_other_messages(void **state)
{
	static uint8_t buf[4096];

	(void)state;
	perf_fill(buf, sizeof(buf), 1, 5);
	assert_int_not_equal(perf_check(buf, sizeof(buf), 1, 6), 0);
	assert_int_not_equal(perf_check(buf, sizeof(buf), 2, 5), 0);
	assert_int_not_equal(perf_check(buf + 8, sizeof(buf) - 8, 1, 5), 0);	/* shifted by a word */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_matches_definition),
		cmocka_unit_test(test_check_refuses_any_wrong_byte),
		cmocka_unit_test(test_check_refuses_other_messages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
