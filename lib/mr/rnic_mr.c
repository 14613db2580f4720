/* SPDX-License-Identifier: BSD-3-Clause
 * Memory regions: registration (MPT entry + MTT pages), deregistration, and the checked translation the
 * data path uses, with the per-lcore cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_malloc.h>

#include "rnic_mr.h"
#include "rnic_wire.h"

#define PAGE_SIZE_BYTES (1ULL << RNIC_MR_PAGE_SHIFT)
#define PAGE_MASK (PAGE_SIZE_BYTES - 1)
#define KNOWN_ACCESS (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ | \
		      RNIC_ACCESS_REMOTE_ATOMIC)

struct rnic_mtt_extent {
	uint32_t start;
	uint32_t count;
};

struct rnic_mr_priv {
	struct rnic_mr pub;
	uint32_t index;
};

/* ------------------------------------------------------------------------------------------------------ */
/* Table                                                                                                    */

/* Bits of a key that name the MPT index: enough for the largest index (nb_mpt - 1 >= 1). */
static uint32_t
index_bits(uint32_t nb_mpt)
{
	return 32 - (uint32_t)__builtin_clz(nb_mpt - 1);
}

/* Random bytes from the kernel: the keys' starting points must not be guessable from outside. */
static void
fill_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n <= 0)
			break;	/* only an interrupted call: what is left keeps the zeroes it has */
		p += n;
		len -= (size_t)n;
	}
}

static int
key_state_create(struct rnic_mr_table *t)
{
	uint32_t nb_mpt = t->nb_mpt;

	t->key_bits = 32 - index_bits(nb_mpt);
	t->free_index = malloc(sizeof(*t->free_index) * nb_mpt);
	t->uses = calloc(nb_mpt, sizeof(*t->uses));
	t->gen_start = malloc(sizeof(*t->gen_start) * nb_mpt);
	if (t->free_index == NULL || t->uses == NULL || t->gen_start == NULL)
		return -ENOMEM;
	fill_random(t->gen_start, sizeof(*t->gen_start) * nb_mpt);
	fill_random(t->mix, sizeof(t->mix));
	t->mix[0] |= 1;		/* multiplications by odd numbers are permutations modulo 2^key_bits */
	t->mix[1] |= 1;
	/* Low indexes first, each freed index at the back of the line. */
	for (uint32_t i = 1; i < nb_mpt; i++)
		t->free_index[t->nb_free_index++] = i;
	return 0;
}

int
rnic_mr_table_create(struct rnic_device *dev)
{
	struct rnic_mr_table *t;
	uint32_t nb_mpt = dev->lim.max_mr + 1;	/* index 0 is never handed out */

	t = rte_zmalloc_socket("rnic_mr_table", sizeof(*t), RTE_CACHE_LINE_SIZE, dev->socket_id);
	if (t == NULL)
		return -ENOMEM;
	dev->mr_table = t;
	t->nb_mpt = nb_mpt;
	t->nb_mtt = dev->lim.max_mtt_entries;
	t->mpt = rte_zmalloc_socket("rnic_mpt", sizeof(*t->mpt) * nb_mpt, RTE_CACHE_LINE_SIZE, dev->socket_id);
	t->mtt = rte_zmalloc_socket("rnic_mtt", sizeof(*t->mtt) * t->nb_mtt, RTE_CACHE_LINE_SIZE,
				    dev->socket_id);
	t->free_mtt = malloc(sizeof(*t->free_mtt) * (dev->lim.max_mr + 1));
	if (t->mpt == NULL || t->mtt == NULL || t->free_mtt == NULL || key_state_create(t) != 0) {
		RNIC_LOG(ERR, "%s: cannot allocate the MPT (%u entries) and MTT (%u pages)", dev->name, nb_mpt,
			 t->nb_mtt);
		rnic_mr_table_free(dev);
		return -ENOMEM;
	}
	t->free_mtt[0] = (struct rnic_mtt_extent){ 0, t->nb_mtt };
	t->nb_free_mtt = 1;
	return 0;
}

void
rnic_mr_table_free(struct rnic_device *dev)
{
	struct rnic_mr_table *t = dev->mr_table;

	if (t == NULL)
		return;
	rte_free(t->mpt);
	rte_free(t->mtt);
	free(t->free_index);
	free(t->uses);
	free(t->gen_start);
	free(t->free_mtt);
	rte_free(t);
	dev->mr_table = NULL;
}

/*
 * Generation n of an index as key bits: a permutation of [0, 2^key_bits) (adding, multiplying by an odd
 * number and xor-shifting right are each one), from the index's random start. Distinct generations give
 * distinct keys, and one key of an index says little about the next.
 */
static uint32_t
generation_bits(const struct rnic_mr_table *t, uint32_t index, uint32_t n)
{
	uint32_t mask = (uint32_t)((1ull << t->key_bits) - 1), shift = (t->key_bits + 1) / 2;
	uint32_t x = (n + t->gen_start[index]) & mask;

	x = (x * t->mix[0]) & mask;
	x ^= x >> shift;
	x = (x * t->mix[1]) & mask;
	x ^= x >> shift;
	return x;
}

int
rnic_mr_slot_take(struct rnic_mr_table *t, uint32_t *index, uint32_t *key)
{
	uint32_t i;

	if (t->nb_free_index == 0)
		return -ENOMEM;
	i = t->free_index[t->free_head];
	t->free_head = t->free_head + 1 == t->nb_mpt ? 0 : t->free_head + 1;
	t->nb_free_index--;
	*index = i;
	*key = i << t->key_bits | generation_bits(t, i, t->uses[i]++);
	return 0;
}

void
rnic_mr_slot_give(struct rnic_mr_table *t, uint32_t index)
{
	uint32_t tail = t->free_head + t->nb_free_index;

	/* Every generation handed out once: a later key of this index would be an old one again. */
	if ((uint64_t)t->uses[index] >> t->key_bits != 0) {
		if (t->nb_retired++ == 0)
			RNIC_LOG(NOTICE, "MPT index %u retired after %llu registrations (its keys are used up); "
				 "the table has %u indexes", index, 1ull << t->key_bits, t->nb_mpt - 1);
		return;
	}
	t->free_index[tail >= t->nb_mpt ? tail - t->nb_mpt : tail] = index;
	t->nb_free_index++;
}

/* First fit over the sorted free extents. Returns the MTT start index or -1. */
static int64_t
mtt_alloc(struct rnic_mr_table *t, uint32_t count)
{
	for (uint32_t i = 0; i < t->nb_free_mtt; i++) {
		struct rnic_mtt_extent *e = &t->free_mtt[i];
		uint32_t start = e->start;

		if (e->count < count)
			continue;
		e->start += count;
		e->count -= count;
		if (e->count == 0) {
			memmove(e, e + 1, (t->nb_free_mtt - i - 1) * sizeof(*e));
			t->nb_free_mtt--;
		}
		return start;
	}
	return -1;
}

/* Give a range back, merging with its neighbours so the list never fragments beyond one extent per MR. */
static void
mtt_free(struct rnic_mr_table *t, uint32_t start, uint32_t count)
{
	uint32_t i = 0;

	while (i < t->nb_free_mtt && t->free_mtt[i].start < start)
		i++;
	if (i > 0 && t->free_mtt[i - 1].start + t->free_mtt[i - 1].count == start) {
		t->free_mtt[i - 1].count += count;
		if (i < t->nb_free_mtt && start + count == t->free_mtt[i].start) {
			t->free_mtt[i - 1].count += t->free_mtt[i].count;
			memmove(&t->free_mtt[i], &t->free_mtt[i + 1], (t->nb_free_mtt - i - 1) * sizeof(t->free_mtt[0]));
			t->nb_free_mtt--;
		}
		return;
	}
	if (i < t->nb_free_mtt && start + count == t->free_mtt[i].start) {
		t->free_mtt[i].start = start;
		t->free_mtt[i].count += count;
		return;
	}
	memmove(&t->free_mtt[i + 1], &t->free_mtt[i], (t->nb_free_mtt - i) * sizeof(t->free_mtt[0]));
	t->free_mtt[i] = (struct rnic_mtt_extent){ start, count };
	t->nb_free_mtt++;
}

static uint32_t
pages_spanned(uint64_t va, uint64_t length)
{
	return (uint32_t)((((va + length - 1) & ~PAGE_MASK) - (va & ~PAGE_MASK)) >> RNIC_MR_PAGE_SHIFT) + 1;
}

static int
check_reg_args(const struct rnic_device *dev, void *addr, size_t length, int access)
{
	if (addr == NULL || length == 0 || length > dev->lim.max_mr_size ||
	    (uint64_t)(uintptr_t)addr + length < (uint64_t)(uintptr_t)addr)
		return EINVAL;
	if (access & ~KNOWN_ACCESS)
		return EINVAL;	/* unknown bits, or memory windows / zero-based / on-demand: not supported */
	/* IBA 10.6.3.1: remote write or atomic access requires local write. */
	if ((access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) && !(access & RNIC_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

/*
 * Whether [start, start + length) is mapped in this process with the rights the region's access needs:
 * readable always (the engine gathers from it), writable as well for LOCAL_WRITE (which REMOTE_WRITE and
 * REMOTE_ATOMIC require). A region that is not would fault the engine's lcore at its first access. The
 * mappings of /proc/self/maps come in address order: walk them across the range. 0 or EFAULT.
 */
static int
check_mapped(uint64_t start, uint64_t length, int writable)
{
	FILE *f = fopen("/proc/self/maps", "re");
	uint64_t at = start, end = start + length, lo, hi;
	char perms[5];

	if (f == NULL) {
		RNIC_LOG(ERR, "reg_mr: cannot read /proc/self/maps to check the region: %s", strerror(errno));
		return EFAULT;
	}
	while (at < end && fscanf(f, "%" SCNx64 "-%" SCNx64 " %4s%*[^\n]", &lo, &hi, perms) == 3) {
		if (hi <= at)
			continue;
		if (lo > at || perms[0] != 'r' || (writable && perms[1] != 'w'))
			break;		/* a hole, or a mapping without the rights */
		at = hi;
	}
	fclose(f);
	return at >= end ? 0 : EFAULT;
}

struct rnic_mr *
rnic_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access)
{
	int err;

	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	err = check_reg_args(rnic_ctx_dev(pd->context), addr, length, access);
	if (err != 0) {
		errno = err;
		return NULL;
	}
	return rnic_ctx_ops(pd->context)->reg_mr(pd, addr, length, access);
}

struct rnic_mr *
rnic_local_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access)
{
	int err = check_mapped((uintptr_t)addr, length, access & RNIC_ACCESS_LOCAL_WRITE);

	if (err != 0) {
		errno = err;
		return NULL;
	}
	return rnic_mr_reg_host(pd, addr, addr, length, access);
}

struct rnic_mr *
rnic_mr_reg_host(struct rnic_pd *pd, void *addr, void *host, size_t length, int access)
{
	struct rnic_device *dev;
	struct rnic_mr_table *t;
	struct rnic_mr_priv *mr;
	struct rnic_mpt_entry *e;
	uint64_t va = (uint64_t)(uintptr_t)addr, pa = (uint64_t)(uintptr_t)host;
	uint32_t pages, index, key;
	int64_t base;
	int err;

	/* The host mapping must start at the same offset in its page as the VA (both are mmaps of one file). */
	if (pd == NULL || host == NULL || ((va ^ pa) & PAGE_MASK) != 0) {
		errno = EINVAL;
		return NULL;
	}
	dev = rnic_ctx_dev(pd->context);
	t = dev->mr_table;
	err = check_reg_args(dev, addr, length, access);
	if (err != 0) {
		errno = err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pages = pages_spanned(va, length);

	pthread_mutex_lock(&dev->lock);
	base = t->nb_free_index == 0 ? -1 : mtt_alloc(t, pages);
	if (base < 0) {
		pthread_mutex_unlock(&dev->lock);
		RNIC_LOG(DEBUG, "%s: reg_mr of %zu bytes: %s exhausted", dev->name, length,
			 t->nb_free_index == 0 ? "MPT (max_mr)" : "MTT");
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	rnic_mr_slot_take(t, &index, &key);
	for (uint32_t i = 0; i < pages; i++)
		t->mtt[base + i] = (pa & ~PAGE_MASK) + ((uint64_t)i << RNIC_MR_PAGE_SHIFT);
	e = &t->mpt[index];
	e->va = va;
	e->length = length;
	e->pdn = rnic_pd_priv(pd)->pdn;
	e->mtt_base = (uint32_t)base;
	e->access = (uint16_t)access;
	e->key = key;
	/* Publish the entry only once it is complete: the data path reads valid first. */
	__atomic_store_n(&e->valid, 1, __ATOMIC_RELEASE);
	t->nb_mr++;
	pthread_mutex_unlock(&dev->lock);

	rnic_pd_get(pd);
	mr->index = index;
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	mr->pub.addr = addr;
	mr->pub.length = length;
	mr->pub.handle = index;
	mr->pub.lkey = key;
	mr->pub.rkey = key;
	return &mr->pub;
}

/* The region's MTT, key slot and PD reference, once no engine lcore can still be using its entry or a cached
 * copy of it (rnic_engine_retire). */
static void
mr_release(void *arg)
{
	struct rnic_mr_priv *mr = arg;
	struct rnic_device *dev = rnic_ctx_dev(mr->pub.context);
	struct rnic_mr_table *t = dev->mr_table;
	struct rnic_mpt_entry *e = &t->mpt[mr->index];

	pthread_mutex_lock(&dev->lock);
	mtt_free(t, e->mtt_base, pages_spanned(e->va, e->length));
	rnic_mr_slot_give(t, mr->index);
	t->nb_mr--;
	pthread_mutex_unlock(&dev->lock);
	rnic_pd_put(mr->pub.pd);
	free(mr);
}

int
rnic_dereg_mr(struct rnic_mr *pub)
{
	if (pub == NULL)
		return EINVAL;
	return rnic_ctx_ops(pub->context)->dereg_mr(pub);
}

int
rnic_local_dereg_mr(struct rnic_mr *pub)
{
	struct rnic_mr_priv *mr = (struct rnic_mr_priv *)pub;
	struct rnic_device *dev = rnic_ctx_dev(pub->context);
	struct rnic_mr_table *t = dev->mr_table;
	struct rnic_mpt_entry *e = &t->mpt[mr->index];
	int ret;

	pthread_mutex_lock(&dev->lock);
	__atomic_store_n(&e->valid, 0, __ATOMIC_RELEASE);
	__atomic_fetch_add(&t->epoch, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dev->lock);

	ret = rnic_engine_retire(mr_release, mr);
	if (ret != 0)
		RNIC_LOG(WARNING, "%s: dereg_mr: engine did not quiesce; region %s", dev->name,
			 ret > 0 ? "released when it does" : "leaked (deferred queue full)");
	return 0;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Checks and translation (data path)                                                                       */

enum rnic_wc_status
rnic_mr_status_to_wc(enum rnic_mr_status st)
{
	/* IBA 10.7.2.2: every failed check of a local key or SGE is a local protection error. */
	return st == RNIC_MR_OK ? RNIC_WC_SUCCESS : RNIC_WC_LOC_PROT_ERR;
}

uint8_t
rnic_mr_status_to_nak(enum rnic_mr_status st)
{
	/* A misaligned atomic is a malformed request (IBA 9.4.5); every other failure is an access error. */
	return st == RNIC_MR_MISALIGNED ? RNIC_AETH_NAK_INVALID_REQUEST : RNIC_AETH_NAK_REMOTE_ACCESS;
}

const char *
rnic_mr_status_str(enum rnic_mr_status st)
{
	static const char *const names[RNIC_MR_STATUS_MAX] = {
		[RNIC_MR_OK] = "ok",
		[RNIC_MR_BAD_INDEX] = "key index out of range",
		[RNIC_MR_INVALID] = "no region at that key",
		[RNIC_MR_BAD_KEY] = "stale key",
		[RNIC_MR_BAD_PD] = "protection domain mismatch",
		[RNIC_MR_NO_RIGHTS] = "access rights",
		[RNIC_MR_OUT_OF_BOUNDS] = "out of bounds",
		[RNIC_MR_MISALIGNED] = "misaligned atomic",
	};

	return (unsigned int)st < RNIC_MR_STATUS_MAX ? names[st] : "unknown";
}

void
rnic_mr_cache_init(struct rnic_mr_cache *cache)
{
	memset(cache, 0, sizeof(*cache));
}

/* The MPT entry for index, through the cache when there is one; NULL if the entry is not valid. */
static const struct rnic_mpt_entry *
mpt_lookup(struct rnic_mr_table *t, struct rnic_mr_cache *cache, uint32_t index, struct rnic_mpt_entry *copy)
{
	struct rnic_mr_cache_way *set, *victim;
	uint32_t epoch;

	if (cache == NULL) {
		if (!__atomic_load_n(&t->mpt[index].valid, __ATOMIC_ACQUIRE))
			return NULL;
		*copy = t->mpt[index];
		return copy;
	}
	epoch = __atomic_load_n(&t->epoch, __ATOMIC_ACQUIRE);
	if (epoch != cache->epoch) {
		/* A region was deregistered since this cache last looked: forget everything. */
		memset(cache->set, 0, sizeof(cache->set));
		cache->epoch = epoch;
		cache->flushes++;
	}
	set = cache->set[index & (RNIC_MR_CACHE_SETS - 1)];
	cache->tick++;
	victim = &set[0];
	for (unsigned int w = 0; w < RNIC_MR_CACHE_WAYS; w++) {
		if (set[w].tag == index + 1) {
			set[w].last_use = cache->tick;
			cache->hits++;
			return &set[w].entry;
		}
		/* Ways fill in order and empty only all together (a flush): none is used past an empty one. */
		if (set[w].tag == 0) {
			victim = &set[w];
			break;
		}
		if (set[w].last_use < victim->last_use)
			victim = &set[w];
	}
	cache->misses++;
	if (!__atomic_load_n(&t->mpt[index].valid, __ATOMIC_ACQUIRE))
		return NULL;	/* invalid entries are never cached */
	if (victim->tag != 0)
		cache->evictions++;
	victim->entry = t->mpt[index];
	victim->tag = index + 1;
	victim->last_use = cache->tick;
	return &victim->entry;
}

enum rnic_mr_status
rnic_mr_translate(struct rnic_mr_table *t, struct rnic_mr_cache *cache, uint32_t key, uint32_t pdn,
		  uint32_t need, uint64_t va, uint64_t len, struct rnic_mr_seg *segs, uint32_t max_segs,
		  uint32_t *nb_segs)
{
	uint32_t index = key >> t->key_bits, n = 0;
	struct rnic_mpt_entry copy;
	const struct rnic_mpt_entry *e;

	*nb_segs = 0;
	if (index == 0 || index >= t->nb_mpt)
		return RNIC_MR_BAD_INDEX;
	e = mpt_lookup(t, cache, index, &copy);
	if (e == NULL)
		return RNIC_MR_INVALID;
	if (e->key != key)
		return RNIC_MR_BAD_KEY;
	if (e->pdn != pdn)
		return RNIC_MR_BAD_PD;
	if ((e->access & need) != need)
		return RNIC_MR_NO_RIGHTS;
	if (va < e->va || va + len < va || va + len > e->va + e->length)
		return RNIC_MR_OUT_OF_BOUNDS;
	if (need == RNIC_MR_NEED_REMOTE_ATOMIC && (va & 7) != 0)
		return RNIC_MR_MISALIGNED;

	/* Page walk: the first piece runs to the end of its page, the others are whole pages. */
	while (len != 0 && n < max_segs) {
		uint64_t page = (va >> RNIC_MR_PAGE_SHIFT) - (e->va >> RNIC_MR_PAGE_SHIFT);
		uint64_t in_page = PAGE_SIZE_BYTES - (va & PAGE_MASK);
		uint64_t piece = len < in_page ? len : in_page;

		segs[n].addr = (uint8_t *)(uintptr_t)(t->mtt[e->mtt_base + page] + (va & PAGE_MASK));
		segs[n].len = (uint32_t)piece;
		n++;
		va += piece;
		len -= piece;
	}
	*nb_segs = n;
	return RNIC_MR_OK;
}
