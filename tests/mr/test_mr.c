/* SPDX-License-Identifier: BSD-3-Clause
 * Memory regions: every check of the VirtToPhys digest (§4, §8.2), the translation, the 4-way cache and
 * its invalidation, registration errors and exhaustion, keys that never come back (2^24 registrations of
 * one index), and registration of memory that is not mapped with the rights asked.
 * Run as: test_mr <EAL args> -- --max-mr 300
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "rnic.h"
#include "test_env.h"
#include "rnic_mr.h"
#include "rnic_wire.h"

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

/* The MPT index a key names. */
static uint32_t
key_index(uint32_t key)
{
	return key >> table->key_bits;
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
	assert_int_not_equal(key_index(a->lkey), key_index(b->lkey));	/* distinct MPT entries */
	assert_int_not_equal(key_index(a->lkey), 0);			/* index 0 is never used */
	assert_ptr_equal(a->addr, buf);
	assert_int_equal(a->length, PAGE);
	assert_int_equal(check(a->lkey, pd, RNIC_MR_NEED_LOCAL_WRITE, buf, PAGE), RNIC_MR_OK);
	assert_int_equal(rnic_dealloc_pd(pd), EBUSY);		/* MRs hold the PD */
	assert_int_equal(rnic_dereg_mr(a), 0);
	assert_int_equal(rnic_dereg_mr(b), 0);
	assert_int_equal(rnic_dereg_mr(NULL), EINVAL);
}

/* Register regions (held) until one lands on MPT index `index`; the others are let go again. */
static struct rnic_mr *
reg_at_index(uint32_t index)
{
	static struct rnic_mr *held[MAX_MR];
	struct rnic_mr *mr = NULL;
	unsigned int n = 0;

	while (n < MAX_MR && (mr = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE)) != NULL &&
	       key_index(mr->lkey) != index)
		held[n++] = mr;
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(rnic_dereg_mr(held[i]), 0);
	assert_non_null(mr);
	assert_int_equal(key_index(mr->lkey), index);
	return mr;
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
	assert_int_not_equal(key_index(b->lkey), key_index(old));	/* the index freed last is reused last */
	assert_int_equal(rnic_dereg_mr(b), 0);
	b = reg_at_index(key_index(old));				/* the same MPT entry reused ... */
	assert_int_not_equal(b->lkey, old);				/* ... with other key bits */
	assert_int_equal(check(old, pd, 0, buf, 8), RNIC_MR_BAD_KEY);
	assert_int_equal(check(b->lkey, pd, 0, buf, 8), RNIC_MR_OK);
	assert_int_equal(rnic_dereg_mr(b), 0);
}

/*
 * Finding 6 of issue 15: with every other index held, 3000 registrations of the one left free; every key
 * ever handed out for it is refused once its region is gone (an 8-bit key came back after 256).
 */
static void
test_stale_keys_never_return(void **state)
{
	static struct rnic_mr *held[MAX_MR];
	static uint32_t keys[3000];
	unsigned int nb_held = 0;
	struct rnic_mr *mr;

	(void)state;
	while ((mr = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE)) != NULL)
		held[nb_held++] = mr;
	assert_int_equal(nb_held, MAX_MR);
	assert_int_equal(rnic_dereg_mr(held[--nb_held]), 0);
	for (unsigned int i = 0; i < RTE_DIM(keys); i++) {
		mr = rnic_reg_mr(pd, buf, PAGE, RNIC_ACCESS_LOCAL_WRITE);
		assert_non_null(mr);
		keys[i] = mr->lkey;
		assert_int_equal(key_index(keys[i]), key_index(keys[0]));	/* always the one free index */
		for (unsigned int k = 0; k < i; k++)
			if (check(keys[k], pd, 0, buf, 8) != RNIC_MR_BAD_KEY)
				fail_msg("registration %u: the key of registration %u (%#x) is accepted again", i, k,
					 keys[k]);
		assert_int_equal(check(keys[i], pd, 0, buf, 8), RNIC_MR_OK);
		assert_int_equal(rnic_dereg_mr(mr), 0);
	}
	while (nb_held > 0)
		assert_int_equal(rnic_dereg_mr(held[--nb_held]), 0);
}

/*
 * The key allocator alone, on a table of 255 indexes (8 index bits, 24 generation bits): with 254 indexes
 * taken, 2^24 registrations of the last one. Every key is new (a bitmap of the 2^24 generation values), the
 * MPT refuses the previous and the first key at each step, and then the index is retired: never reused.
 */
static void
test_key_allocator_2_24(void **state)
{
	struct rnic_device dev = { .name = "keys", .socket_id = SOCKET_ID_ANY,
				   .lim = { .max_mr = 255, .max_mtt_entries = 16 } };
	uint8_t *seen = calloc(1u << 21, 1);
	uint32_t index, key, prev = 0, first = 0, other, sequential = 0, n;
	struct rnic_mr_table *t;
	struct rnic_mpt_entry *e;

	(void)state;
	assert_non_null(seen);
	assert_int_equal(rnic_mr_table_create(&dev), 0);
	t = dev.mr_table;
	assert_int_equal(t->key_bits, 24);
	for (uint32_t i = 0; i < 254; i++)
		assert_int_equal(rnic_mr_slot_take(t, &other, &key), 0);
	for (uint32_t i = 0; i < (1u << 24); i++) {
		uint32_t gen;

		assert_int_equal(rnic_mr_slot_take(t, &index, &key), 0);
		gen = key & 0xffffff;
		if (index != 255 || key >> 24 != 255 || (seen[gen >> 3] & (1u << (gen & 7))))
			fail_msg("registration %u: index %u, key %#x (seen before: %d)", i, index, key,
				 !!(seen[gen >> 3] & (1u << (gen & 7))));
		seen[gen >> 3] |= (uint8_t)(1u << (gen & 7));
		e = &t->mpt[index];
		*e = (struct rnic_mpt_entry){ .va = 4096, .length = 4096, .pdn = 1, .key = key, .valid = 1 };
		if (i == 0)
			first = key;
		if (i > 0 && (rnic_mr_translate(t, NULL, prev, 1, 0, 4096, 8, NULL, 0, &n) != RNIC_MR_BAD_KEY ||
			      rnic_mr_translate(t, NULL, first, 1, 0, 4096, 8, NULL, 0, &n) != RNIC_MR_BAD_KEY))
			fail_msg("registration %u: a stale key is accepted", i);
		assert_int_equal(rnic_mr_translate(t, NULL, key, 1, 0, 4096, 8, NULL, 0, &n), RNIC_MR_OK);
		sequential += i > 0 && key == prev + 1;
		prev = key;
		e->valid = 0;
		rnic_mr_slot_give(t, index);
	}
	/* Every generation was handed out once: the index is retired, and nothing is left to take. */
	assert_int_equal(t->nb_retired, 1);
	assert_int_equal(rnic_mr_slot_take(t, &index, &key), -ENOMEM);
	/* Not a counter: consecutive keys of an index are not consecutive numbers. */
	assert_true(sequential < 1000);
	rnic_mr_table_free(&dev);
	free(seen);
}

/* Finding 7 of issue 15: memory that is not mapped, or not writable when the access writes, is refused. */
static void
test_reg_unmapped_or_read_only(void **state)
{
	uint8_t *m = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rnic_mr *mr;

	(void)state;
	assert_true(m != MAP_FAILED);
	assert_int_equal(munmap(m + PAGE, PAGE), 0);		/* a hole in the middle */
	assert_null(rnic_reg_mr(pd, m, 3 * PAGE, RNIC_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EFAULT);
	assert_null(rnic_reg_mr(pd, m + PAGE + 100, 8, 0));	/* inside the hole */
	assert_int_equal(errno, EFAULT);
	assert_null(rnic_reg_mr(pd, m + PAGE - 8, 16, 0));	/* running into it */
	assert_int_equal(errno, EFAULT);
	mr = rnic_reg_mr(pd, m + 2 * PAGE, PAGE, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	assert_int_equal(rnic_dereg_mr(mr), 0);
	/* Read-only memory: registered for reading, refused for any right that writes. */
	assert_int_equal(mprotect(m, PAGE, PROT_READ), 0);
	mr = rnic_reg_mr(pd, m, PAGE, RNIC_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_int_equal(rnic_dereg_mr(mr), 0);
	assert_null(rnic_reg_mr(pd, m, PAGE, RNIC_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EFAULT);
	assert_null(rnic_reg_mr(pd, m, PAGE, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EFAULT);
	assert_null(rnic_reg_mr(pd, m, PAGE, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EFAULT);
	/* Nothing mapped at all, and a range past the end of the address space's mappings. */
	assert_null(rnic_reg_mr(pd, m + PAGE, PAGE, 0));
	assert_int_equal(errno, EFAULT);
	assert_null(rnic_reg_mr(pd, (void *)(uintptr_t)0x1000, PAGE, 0));
	assert_int_equal(errno, EFAULT);
	munmap(m, PAGE);
	munmap(m + 2 * PAGE, PAGE);
}

static void
test_bad_index(void **state)
{
	(void)state;
	assert_int_equal(check(0x00000001, pd, 0, buf, 8), RNIC_MR_BAD_INDEX);	/* index 0 */
	assert_int_equal(check((uint32_t)(MAX_MR + 1) << table->key_bits, pd, 0, buf, 8), RNIC_MR_BAD_INDEX);
	assert_int_equal(check(0xffffff00, pd, 0, buf, 8), RNIC_MR_BAD_INDEX);
	assert_int_equal(check((uint32_t)MAX_MR << table->key_bits, pd, 0, buf, 8), RNIC_MR_INVALID);	/* never registered */
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
			if ((key_index(mrs[i]->lkey) & (RNIC_MR_CACHE_SETS - 1)) == set)
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
	mr = reg_at_index(key_index(key));
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
		cmocka_unit_test(test_stale_keys_never_return),
		cmocka_unit_test(test_key_allocator_2_24),
		cmocka_unit_test(test_reg_unmapped_or_read_only),
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
