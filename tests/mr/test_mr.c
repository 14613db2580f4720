/* SPDX-License-Identifier: BSD-3-Clause
 * Memory regions: every check of the VirtToPhys digest (§4, §8.2), the translation, the 4-way cache and
 * its invalidation, registration errors and exhaustion.
 * Run as: test_mr <EAL args> -- --max-mr 300
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rnic.h"
#include "test_env.h"
#include "rnic_mr.h"

#define MAX_MR 300
#define PAGE 4096

static int g_argc;
static char **g_argv;
static struct rnic_context *ctx;
static struct rnic_pd *pd, *other_pd;
static struct rnic_mr_table *table;
static uint8_t *buf;		/* 4 pages, page aligned */

static uint32_t
pdn(struct rnic_pd *p)
{
	return rnic_pd_priv(p)->pdn;
}

static enum rnic_mr_status
check(uint32_t key, struct rnic_pd *p, uint32_t need, const void *addr, uint64_t len)
{
	struct rnic_mr_seg segs[8];
	uint32_t n;

	return rnic_mr_translate(table, NULL, key, pdn(p), need, (uint64_t)(uintptr_t)addr, len, segs, 8, &n);
}

static int
setup(void **state)
{
	(void)state;
	ctx = test_env_open(g_argc, g_argv);
	if (ctx == NULL)
		return -1;
	pd = rnic_alloc_pd(ctx);
	other_pd = rnic_alloc_pd(ctx);
	table = rnic_ctx_dev(ctx)->mr_table;
	buf = aligned_alloc(PAGE, 4 * PAGE);
	return ctx && pd && other_pd && buf ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	free(buf);
	rnic_dealloc_pd(pd);
	rnic_dealloc_pd(other_pd);
	return test_env_close(ctx);
}

static void
test_keys(void **state)
{
	struct rnic_mr *a = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);
	struct rnic_mr *b = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->lkey, a->rkey);
	assert_int_not_equal(a->lkey >> 8, b->lkey >> 8);	/* distinct MPT entries */
	assert_int_not_equal(a->lkey >> 8, 0);			/* index 0 is never used */
	assert_ptr_equal(a->addr, buf);
	assert_int_equal(a->length, PAGE);
	assert_int_equal(check(a->lkey, pd, RNIC_MR_NEED_LOCAL_WRITE, buf, PAGE), RNIC_MR_OK);
	assert_int_equal(rnic_dealloc_pd(pd), EBUSY);		/* MRs hold the PD */
	assert_int_equal(rnic_dereg_mr(a), 0);
	assert_int_equal(rnic_dereg_mr(b), 0);
	assert_int_equal(rnic_dereg_mr(NULL), EINVAL);
}

static void
test_stale_key_after_reregistration(void **state)
{
	struct rnic_mr *a = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);
	uint32_t old = a->lkey;
	struct rnic_mr *b;

	(void)state;
	assert_int_equal(rnic_dereg_mr(a), 0);
	assert_int_equal(check(old, pd, 0, buf, 8), RNIC_MR_INVALID);	/* deregistered */
	b = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);
	assert_int_equal(b->lkey >> 8, old >> 8);			/* same MPT entry reused ... */
	assert_int_not_equal(b->lkey & 0xff, old & 0xff);		/* ... with a new key byte */
	assert_int_equal(check(old, pd, 0, buf, 8), RNIC_MR_BAD_KEY);
	assert_int_equal(check(b->lkey, pd, 0, buf, 8), RNIC_MR_OK);
	assert_int_equal(rnic_dereg_mr(b), 0);
}

static void
test_bad_index(void **state)
{
	(void)state;
	assert_int_equal(check(0x00000001, pd, 0, buf, 8), RNIC_MR_BAD_INDEX);	/* index 0 */
	assert_int_equal(check((MAX_MR + 1) << 8, pd, 0, buf, 8), RNIC_MR_BAD_INDEX);
	assert_int_equal(check(0xffffff00, pd, 0, buf, 8), RNIC_MR_BAD_INDEX);
	assert_int_equal(check(MAX_MR << 8, pd, 0, buf, 8), RNIC_MR_INVALID);	/* in range, never registered */
}

static void
test_pd_mismatch(void **state)
{
	struct rnic_mr *mr = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);

	(void)state;
	assert_int_equal(check(mr->rkey, other_pd, RNIC_MR_NEED_REMOTE_READ, buf, 8), RNIC_MR_BAD_PD);
	assert_int_equal(check(mr->rkey, pd, RNIC_MR_NEED_REMOTE_READ, buf, 8), RNIC_MR_OK);
	rnic_dereg_mr(mr);
}

static void
test_rights(void **state)
{
	static const struct {
		int access;
		uint32_t need;
		enum rnic_mr_status expect;
	} cases[] = {
		{ 0, RNIC_MR_NEED_LOCAL_READ, RNIC_MR_OK },
		{ 0, RNIC_MR_NEED_LOCAL_WRITE, RNIC_MR_NO_RIGHTS },
		{ RNIC_ACCESS_LOCAL_WRITE, RNIC_MR_NEED_LOCAL_WRITE, RNIC_MR_OK },
		{ RNIC_ACCESS_LOCAL_WRITE, RNIC_MR_NEED_REMOTE_READ, RNIC_MR_NO_RIGHTS },
		{ RNIC_ACCESS_LOCAL_WRITE, RNIC_MR_NEED_REMOTE_WRITE, RNIC_MR_NO_RIGHTS },
		{ RNIC_ACCESS_LOCAL_WRITE, RNIC_MR_NEED_REMOTE_ATOMIC, RNIC_MR_NO_RIGHTS },
		{ RNIC_ACCESS_REMOTE_READ, RNIC_MR_NEED_REMOTE_READ, RNIC_MR_OK },
		{ RNIC_ACCESS_REMOTE_READ, RNIC_MR_NEED_REMOTE_WRITE, RNIC_MR_NO_RIGHTS },
		{ RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE, RNIC_MR_NEED_REMOTE_WRITE, RNIC_MR_OK },
		{ RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE, RNIC_MR_NEED_REMOTE_READ, RNIC_MR_NO_RIGHTS },
		{ RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE, RNIC_MR_NEED_REMOTE_ATOMIC, RNIC_MR_NO_RIGHTS },
		{ RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_ATOMIC, RNIC_MR_NEED_REMOTE_ATOMIC, RNIC_MR_OK },
		{ RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_ATOMIC, RNIC_MR_NEED_REMOTE_WRITE, RNIC_MR_NO_RIGHTS },
	};

	(void)state;
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rnic_mr *mr = rnic_reg_mr(pd, buf, PAGE, cases[i].access);

		assert_non_null(mr);
		if (check(mr->lkey, pd, cases[i].need, buf, 8) != cases[i].expect)
			fail_msg("case %u: access 0x%x need 0x%x", i, cases[i].access, cases[i].need);
		rnic_dereg_mr(mr);
	}
}

static void
test_bounds(void **state)
{
	struct rnic_mr *mr = rnic_reg_mr(pd, buf + 100, 2 * PAGE, RNIC_ACCESS_LOCAL_WRITE);
	uint8_t *start = buf + 100, *end = buf + 100 + 2 * PAGE;

	(void)state;
	assert_int_equal(check(mr->lkey, pd, 0, start, 2 * PAGE), RNIC_MR_OK);		/* the whole region */
	assert_int_equal(check(mr->lkey, pd, 0, end - 1, 1), RNIC_MR_OK);		/* its last byte */
	assert_int_equal(check(mr->lkey, pd, 0, end, 0), RNIC_MR_OK);			/* empty, at the end */
	assert_int_equal(check(mr->lkey, pd, 0, start - 1, 8), RNIC_MR_OUT_OF_BOUNDS);	/* starts before */
	assert_int_equal(check(mr->lkey, pd, 0, end - 8, 8), RNIC_MR_OK);
	assert_int_equal(check(mr->lkey, pd, 0, end - 7, 8), RNIC_MR_OUT_OF_BOUNDS);	/* ends after */
	assert_int_equal(check(mr->lkey, pd, 0, end, 1), RNIC_MR_OUT_OF_BOUNDS);
	assert_int_equal(check(mr->lkey, pd, 0, start, UINT64_MAX), RNIC_MR_OUT_OF_BOUNDS);	/* wraps */
	assert_int_equal(check(mr->lkey, pd, 0, (void *)(uintptr_t)UINT64_MAX, 2), RNIC_MR_OUT_OF_BOUNDS);
	rnic_dereg_mr(mr);
}

static void
test_atomic_alignment(void **state)
{
	struct rnic_mr *mr = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_ATOMIC);

	(void)state;
	assert_int_equal(check(mr->rkey, pd, RNIC_MR_NEED_REMOTE_ATOMIC, buf + 8, 8), RNIC_MR_OK);
	assert_int_equal(check(mr->rkey, pd, RNIC_MR_NEED_REMOTE_ATOMIC, buf + 4, 8), RNIC_MR_MISALIGNED);
	assert_int_equal(check(mr->rkey, pd, RNIC_MR_NEED_REMOTE_ATOMIC, buf + PAGE - 4, 8),
			 RNIC_MR_OUT_OF_BOUNDS);	/* bounds come first, as in the seed */
	rnic_dereg_mr(mr);
}

static void
test_status_mapping(void **state)
{
	(void)state;
	assert_int_equal(rnic_mr_status_to_wc(RNIC_MR_OK), RNIC_WC_SUCCESS);
	for (int st = RNIC_MR_BAD_INDEX; st < RNIC_MR_STATUS_MAX; st++) {
		assert_int_equal(rnic_mr_status_to_wc(st), RNIC_WC_LOC_PROT_ERR);
		assert_int_equal(rnic_mr_status_to_nak(st), st == RNIC_MR_MISALIGNED ?
				 RNIC_AETH_NAK_INVALID_REQUEST : RNIC_AETH_NAK_REMOTE_ACCESS);
		assert_string_not_equal(rnic_mr_status_str(st), "unknown");
	}
}

static void
test_translation_across_pages(void **state)
{
	struct rnic_mr *mr = rnic_reg_mr(pd, buf + 1000, 3 * PAGE, RNIC_ACCESS_LOCAL_WRITE);
	struct rnic_mr_seg segs[4];
	uint32_t n;

	(void)state;
	/* From byte 3000 of page 0 to byte 500 of page 2: three pieces. */
	assert_int_equal(rnic_mr_translate(table, NULL, mr->lkey, pdn(pd), 0, (uintptr_t)(buf + 3000),
					   (PAGE - 3000) + PAGE + 500, segs, 4, &n), RNIC_MR_OK);
	assert_int_equal(n, 3);
	assert_ptr_equal(segs[0].addr, buf + 3000);
	assert_int_equal(segs[0].len, PAGE - 3000);
	assert_ptr_equal(segs[1].addr, buf + PAGE);
	assert_int_equal(segs[1].len, PAGE);
	assert_ptr_equal(segs[2].addr, buf + 2 * PAGE);
	assert_int_equal(segs[2].len, 500);
	/* Inside one page: one piece. */
	assert_int_equal(rnic_mr_translate(table, NULL, mr->lkey, pdn(pd), 0, (uintptr_t)(buf + PAGE + 8), 100,
					   segs, 4, &n), RNIC_MR_OK);
	assert_int_equal(n, 1);
	assert_int_equal(segs[0].len, 100);
	/* A check-only call fills nothing. */
	assert_int_equal(rnic_mr_translate(table, NULL, mr->lkey, pdn(pd), 0, (uintptr_t)(buf + 1000), 8,
					   segs, 0, &n), RNIC_MR_OK);
	assert_int_equal(n, 0);
	rnic_dereg_mr(mr);
}

static void
test_cache_hits_and_set_conflict(void **state)
{
	static struct rnic_mr_cache cache;
	struct rnic_mr *mrs[MAX_MR - 20];
	struct rnic_mr_seg seg;
	uint32_t n, nmr = 0;

	(void)state;
	rnic_mr_cache_init(&cache);
	for (unsigned int i = 0; i < RTE_DIM(mrs); i++, nmr++) {
		mrs[i] = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);
		assert_non_null(mrs[i]);
	}
	/* Five regions whose MPT indexes share a set (280 indexes out of 1..300: some set has five). */
	struct rnic_mr *same_set[5];
	unsigned int found = 0;

	for (uint32_t set = 0; set < RNIC_MR_CACHE_SETS && found < 5; set++) {
		found = 0;
		for (unsigned int i = 0; i < nmr && found < 5; i++)
			if ((mrs[i]->lkey >> 8 & (RNIC_MR_CACHE_SETS - 1)) == set)
				same_set[found++] = mrs[i];
	}
	assert_int_equal(found, 5);

	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(rnic_mr_translate(table, &cache, same_set[i]->lkey, pdn(pd), 0,
						   (uintptr_t)buf, 8, &seg, 1, &n), RNIC_MR_OK);
	assert_int_equal(cache.misses, 4);
	assert_int_equal(cache.evictions, 0);
	/* Touch 1..3 again (hits), so region 0 is the least recently used. */
	for (unsigned int i = 1; i < 4; i++)
		rnic_mr_translate(table, &cache, same_set[i]->lkey, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n);
	assert_int_equal(cache.hits, 3);
	/* The fifth evicts exactly one line: the LRU one. */
	rnic_mr_translate(table, &cache, same_set[4]->lkey, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n);
	assert_int_equal(cache.evictions, 1);
	rnic_mr_translate(table, &cache, same_set[3]->lkey, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n);
	assert_int_equal(cache.hits, 4);
	rnic_mr_translate(table, &cache, same_set[0]->lkey, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n);
	assert_int_equal(cache.misses, 6);
	assert_int_equal(cache.evictions, 2);
	/* A failed check through the cache is still a failed check. */
	assert_int_equal(rnic_mr_translate(table, &cache, same_set[0]->lkey, pdn(other_pd), 0, (uintptr_t)buf,
					   8, &seg, 1, &n), RNIC_MR_BAD_PD);

	for (unsigned int i = 0; i < nmr; i++)
		assert_int_equal(rnic_dereg_mr(mrs[i]), 0);
}

static void
test_cache_invalidated_by_dereg(void **state)
{
	static struct rnic_mr_cache cache;
	struct rnic_mr *mr = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);
	uint32_t key = mr->lkey, n;
	struct rnic_mr_seg seg;

	(void)state;
	rnic_mr_cache_init(&cache);
	assert_int_equal(rnic_mr_translate(table, &cache, key, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n),
			 RNIC_MR_OK);
	assert_int_equal(rnic_mr_translate(table, &cache, key, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n),
			 RNIC_MR_OK);
	assert_int_equal(cache.hits, 1);	/* the entry is cached */
	uint64_t flushes = cache.flushes;

	assert_int_equal(rnic_dereg_mr(mr), 0);
	assert_int_equal(rnic_mr_translate(table, &cache, key, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n),
			 RNIC_MR_INVALID);
	assert_int_equal(cache.flushes, flushes + 1);
	/* A new region at the same index, through the same cache: the old key stays dead. */
	mr = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);
	assert_int_equal(mr->lkey >> 8, key >> 8);
	assert_int_equal(rnic_mr_translate(table, &cache, key, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n),
			 RNIC_MR_BAD_KEY);
	assert_int_equal(rnic_mr_translate(table, &cache, mr->lkey, pdn(pd), 0, (uintptr_t)buf, 8, &seg, 1, &n),
			 RNIC_MR_OK);
	rnic_dereg_mr(mr);
}

static void
test_reg_errors(void **state)
{
	(void)state;
	assert_null(rnic_reg_mr(NULL, buf, PAGE, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, NULL, PAGE, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, buf, 0, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, buf, (size_t)1 << 40, RNIC_ACCESS_LOCAL_WRITE));	/* > max_mr_size */
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_REMOTE_WRITE));	/* needs LOCAL_WRITE */
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, buf, PAGE, 1 << 20));			/* unknown flag */
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_ZERO_BASED));	/* not supported */
	assert_int_equal(errno, EINVAL);
	assert_null(rnic_reg_mr(pd, (void *)(uintptr_t)(UINT64_MAX - 10), 100, 0));	/* wraps */
	assert_int_equal(errno, EINVAL);
}

static void
test_exhaustion(void **state)
{
	static struct rnic_mr *mrs[MAX_MR + 1];
	unsigned int n = 0;

	(void)state;
	while (n <= MAX_MR && (mrs[n] = rnic_reg_mr(pd, buf, 3 * PAGE, RNIC_ACCESS_LOCAL_WRITE)) != NULL)
		n++;
	assert_int_equal(n, MAX_MR);
	assert_int_equal(errno, ENOMEM);
	/* Freeing one makes room for exactly one more. */
	assert_int_equal(rnic_dereg_mr(mrs[17]), 0);
	mrs[17] = rnic_reg_mr(pd, buf, 3 * PAGE, RNIC_ACCESS_LOCAL_WRITE);
	assert_non_null(mrs[17]);
	assert_null(rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE));
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(rnic_dereg_mr(mrs[i]), 0);
	/* Everything came back: MTT extents merged, all MPT entries free. */
	assert_int_equal(table->nb_mr, 0);
	assert_int_equal(table->nb_free_mtt, 1);
	assert_int_equal(table->nb_free_index, MAX_MR);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_stale_key_after_reregistration),
		cmocka_unit_test(test_bad_index),
		cmocka_unit_test(test_pd_mismatch),
		cmocka_unit_test(test_rights),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_atomic_alignment),
		cmocka_unit_test(test_status_mapping),
		cmocka_unit_test(test_translation_across_pages),
		cmocka_unit_test(test_cache_hits_and_set_conflict),
		cmocka_unit_test(test_cache_invalidated_by_dereg),
		cmocka_unit_test(test_reg_errors),
		cmocka_unit_test(test_exhaustion),
	};

	g_argc = argc;
	g_argv = argv;
	return cmocka_run_group_tests_name("mr", tests, setup, teardown);
}
