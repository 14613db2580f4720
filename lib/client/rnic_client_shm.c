/* SPDX-License-Identifier: BSD-3-Clause
 * The memory a client shares with rnicd for its registrations (doc/rnicd.md, doc/verbs.md): rnic_alloc_buf's
 * buffers (sealed memfds the program maps), and, when moving in place is on (the verbs interposer, which
 * registers a program's ordinary memory), the pages of any region the program registers, moved in place
 * as FreeFlow does: the page-aligned span's current contents are written into a new sealed memfd, which is
 * then mapped over the same addresses (MAP_FIXED | MAP_SHARED) with the pages' protections, so that the
 * program's pointers stay valid and the daemon can map the same pages.
 *
 * Each memfd is a segment: the program's addresses it backs, its descriptor, and the registrations using
 * it. A page belongs to one segment at most; a page already moved stays in its segment for the next
 * registration (overlapping and adjacent regions share it). A moved segment is forgotten when its last
 * registration goes (its descriptor closed; the pages stay mapped from it, shared: doc/verbs.md). What the
 * program did to its memory since (unmapped it, freed it to the kernel, remapped it) is read from
 * /proc/self/maps at each registration: a segment whose pages are no longer its mapping is detached, and its
 * pages, whatever they are now, are treated as never moved.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_common.h>

#include "rnic_client.h"

#define PAGE 4096ul
#define MOVED_NAME "softrnic-moved"	/* the memfds of moved pages, as /proc/self/maps names them */
#define MAX_VMAS 64			/* mappings one registration's span may cross */

struct shm_seg {
	struct shm_seg *next;
	uint8_t *base;			/* the program's address of its first byte (page-aligned) */
	size_t len;			/* bytes (whole pages) */
	int fd;
	dev_t dev;			/* the memfd's, to find its mapping in /proc/self/maps */
	ino_t ino;
	uint32_t refs;			/* registrations using its pages */
	uint8_t moved;			/* made by a move in place (else: an rnic_alloc_buf buffer) */
	uint8_t detached;		/* its addresses are no longer its mapping: found by no address, freed
					 * when its last registration goes */
};

static struct shm_seg *segs;
static pthread_mutex_t shm_lock = PTHREAD_MUTEX_INITIALIZER;
static int move_in_place;

void
rnic_client_move_in_place(int on)
{
	move_in_place = on;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Segments                                                                                                 */

static struct shm_seg *
seg_new(uint8_t *base, size_t len, int fd, int moved)
{
	struct shm_seg *g = calloc(1, sizeof(*g));
	struct stat st;

	if (g == NULL || fstat(fd, &st) != 0) {
		free(g);
		return NULL;
	}
	*g = (struct shm_seg){ .next = segs, .base = base, .len = len, .fd = fd, .dev = st.st_dev,
			       .ino = st.st_ino, .moved = (uint8_t)moved };
	segs = g;
	return g;
}

static void
seg_unlink(struct shm_seg *g)
{
	for (struct shm_seg **pp = &segs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			return;
		}
	}
}

static void
seg_free(struct shm_seg *g)
{
	seg_unlink(g);
	close(g->fd);
	free(g);
}

/* A segment no registration needs any more goes: a moved one, or one that lost its addresses. */
static void
seg_release(struct shm_seg *g)
{
	if (g->refs == 0 && (g->moved || g->detached))
		seg_free(g);
}

static void
seg_detach(struct shm_seg *g)
{
	g->detached = 1;
	seg_release(g);
}

/* The attached segment holding the address, or NULL. */
static struct shm_seg *
seg_at(const uint8_t *addr)
{
	for (struct shm_seg *g = segs; g != NULL; g = g->next)
		if (!g->detached && addr >= g->base && (size_t)(addr - g->base) < g->len)
			return g;
	return NULL;
}

/* The lowest attached segment base in (addr, end), or end. */
static uint8_t *
next_seg_start(const uint8_t *addr, uint8_t *end)
{
	uint8_t *next = end;

	for (struct shm_seg *g = segs; g != NULL; g = g->next)
		if (!g->detached && g->base > addr && g->base < next)
			next = g->base;
	return next;
}

/* ------------------------------------------------------------------------------------------------------ */
/* rnic_alloc_buf                                                                                           */

int
rnic_shm_fd(const char *name, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -1;
	/* Sealed: the daemon maps it too, and a file that could shrink under it would fault it. */
	if (ftruncate(fd, (off_t)len) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

void *
rnic_shm_create(const char *name, size_t len, int *fd_out)
{
	int fd = rnic_shm_fd(name, len), err;
	void *p;

	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	*fd_out = fd;
	return p;
}

void *
rnic_alloc_buf(size_t length)
{
	size_t len = RTE_ALIGN_CEIL(length, PAGE);
	struct shm_seg *g;
	void *base;
	int fd;

	if (length == 0 || len < length) {
		errno = EINVAL;
		return NULL;
	}
	base = rnic_shm_create("rnic-buf", len, &fd);
	if (base == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&shm_lock);
	g = seg_new(base, len, fd, 0);
	pthread_mutex_unlock(&shm_lock);
	if (g == NULL) {
		munmap(base, len);
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	return base;
}

void
rnic_free_buf(void *buf)
{
	struct shm_seg *g;

	if (buf == NULL)
		return;
	pthread_mutex_lock(&shm_lock);
	g = seg_at(buf);
	if (g != NULL && !g->moved && g->base == buf) {
		munmap(g->base, g->len);
		/* A registration still using it keeps the segment (the daemon's mapping keeps the pages). */
		seg_detach(g);
	}
	pthread_mutex_unlock(&shm_lock);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The program's mappings                                                                                   */

struct vma {
	uintptr_t start, end;
	int prot;
	int shared;
	uint64_t offset;
	dev_t dev;
	ino_t ino;
	int moved_memfd;		/* a memfd of ours: pages moved before (their segment forgotten) */
	int special;			/* [vvar], [vdso], [vsyscall]: not the program's memory */
};

/* The mappings of /proc/self/maps that meet [start, end), in order; their count, or -errno. */
static int
read_vmas(uintptr_t start, uintptr_t end, struct vma *v, int max)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (f == NULL)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long s, e, off, ino;
		unsigned int maj, min;
		char perms[8];
		int name_at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e, perms, &off, &maj, &min, &ino,
			   &name_at) < 7)
			continue;
		if (e <= start || s >= end)
			continue;
		if (n == max) {
			n = -E2BIG;
			break;
		}
		v[n] = (struct vma){
			.start = (uintptr_t)s, .end = (uintptr_t)e, .offset = off, .dev = makedev(maj, min),
			.ino = (ino_t)ino, .shared = perms[3] == 's',
			.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
				(perms[2] == 'x' ? PROT_EXEC : 0),
			.moved_memfd = strstr(line + name_at, "/memfd:" MOVED_NAME " ") != NULL,
			.special = strstr(line + name_at, "[vvar]") != NULL || strstr(line + name_at, "[vdso]") != NULL ||
				   strstr(line + name_at, "[vsyscall]") != NULL,
		};
		n++;
	}
	free(line);
	fclose(f);
	return n;
}

/* Whether [a, b) is mapped from the segment, at its offsets, by the mappings v. */
static int
seg_still_mapped(const struct shm_seg *g, uintptr_t a, uintptr_t b, const struct vma *v, int nb)
{
	uintptr_t at = a;

	for (int i = 0; i < nb && at < b; i++) {
		if (v[i].end <= at)
			continue;
		if (v[i].start > at || !v[i].shared || v[i].dev != g->dev || v[i].ino != g->ino ||
		    v[i].offset + (at - v[i].start) != at - (uintptr_t)g->base)
			return 0;
		at = v[i].end;
	}
	return at >= b;
}

/* Whether [a, b) is mapped, readable, and writable too if asked (0, or the errno to fail with). */
static int
span_usable(uintptr_t a, uintptr_t b, int writable, const struct vma *v, int nb)
{
	uintptr_t at = a;

	for (int i = 0; i < nb && at < b; i++) {
		if (v[i].end <= at)
			continue;
		if (v[i].start > at || v[i].special || !(v[i].prot & PROT_READ))
			return EFAULT;		/* a hole, or memory the program cannot read itself */
		if (writable && !(v[i].prot & PROT_WRITE))
			return EFAULT;		/* as ibv_reg_mr of read-only pages for local write */
		at = v[i].end;
	}
	return at >= b ? 0 : EFAULT;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Moving pages in place                                                                                    */

/*
 * The move runs in a child sharing the memory, on a stack of its own, while the kernel holds the caller
 * (clone with CLONE_VM | CLONE_VFORK): the pages may hold the registering thread's stack (a buffer on it),
 * and a thread writing to its stack between the copy and the remap would lose the write, or its return
 * address. The copies are system calls (pwrite, pread) on the program's memory, not loads by the library
 * (which a sanitizer would check against the program's own objects on those pages); the child's code is
 * not instrumented, so that its frames leave nothing in the sanitizer's view of a stack that goes.
 */
#define MOVE_STACK (64u << 10)

struct move_op {
	uint8_t *addr;
	size_t len;
	int fd;
	int back;			/* 0: onto the memfd; 1: back onto private anonymous memory */
	int err;
};

static __attribute__((no_sanitize_address)) int
copy_all(long nr, int fd, uint8_t *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		long n = syscall(nr, fd, buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		done += (size_t)n;
	}
	return 0;
}

static __attribute__((no_sanitize_address)) int
move_child(void *arg)
{
	struct move_op *op = arg;
	void *anon, *p;

	if (!op->back) {
		op->err = copy_all(SYS_pwrite64, op->fd, op->addr, op->len);
		if (op->err == 0) {
			p = mmap(op->addr, op->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, op->fd, 0);
			op->err = p == MAP_FAILED ? errno : 0;
		}
		return 0;
	}
	anon = mmap(NULL, op->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED) {
		op->err = errno;
		return 0;
	}
	op->err = copy_all(SYS_pread64, op->fd, anon, op->len);
	if (op->err == 0) {
		p = mremap(anon, op->len, op->len, MREMAP_MAYMOVE | MREMAP_FIXED, op->addr);
		op->err = p == MAP_FAILED ? errno : 0;
	}
	if (op->err != 0)
		munmap(anon, op->len);
	return 0;
}

/* Run the move in the child (its stack and the operation in a mapping of their own); 0 or an errno. */
static int
run_move(uint8_t *addr, size_t len, int fd, int back)
{
	uint8_t *area = mmap(NULL, MOVE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct move_op *op = (struct move_op *)(void *)area;
	pid_t pid;
	int ret, st;

	if (area == MAP_FAILED)
		return errno;
	*op = (struct move_op){ .addr = addr, .len = len, .fd = fd, .back = back, .err = ECHILD };
	/* No exit signal: a program's SIGCHLD handler and wait() never see the child; __WALL reaps it. */
	pid = clone(move_child, area + MOVE_STACK, CLONE_VM | CLONE_VFORK, op);
	if (pid < 0) {
		ret = errno;
	} else {
		while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
			;
		ret = op->err;
	}
	munmap(area, MOVE_STACK);
	return ret;
}

/* Move [addr, addr + len) onto fd or back off it, then give each page the protection the mappings v gave it
 * before. 0 or an errno (nothing moved: the first step failed). */
static int
move_pages(uint8_t *addr, size_t len, int fd, int back, const struct vma *v, int nb)
{
	uintptr_t a = (uintptr_t)addr, b = a + len;
	int ret = run_move(addr, len, fd, back);

	if (ret != 0)
		return ret;
	for (int i = 0; i < nb; i++) {
		uintptr_t s = RTE_MAX(v[i].start, a), e = RTE_MIN(v[i].end, b);

		if (s < e && v[i].prot != (PROT_READ | PROT_WRITE) && mprotect((void *)s, e - s, v[i].prot) != 0)
			RNIC_LOG(WARNING, "rnicd: pages at %#" PRIxPTR " moved in place: cannot restore their "
				 "protection: %s", s, strerror(errno));
	}
	return 0;
}

/* Move the run [a, b), which no segment holds, onto a new segment. 0 or an errno (nothing changed). */
static int
move_run(uintptr_t a, uintptr_t b, const struct vma *v, int nb, struct shm_seg **out)
{
	uintptr_t at = a;
	int fd, ret;

	/* Only private memory of the program's, or pages it had moved before: a shared mapping of anything
	 * else (a file, another process's memory) would stop being shared with it. */
	for (int i = 0; i < nb && at < b; i++) {
		if (v[i].end <= at)
			continue;
		if (v[i].shared && !v[i].moved_memfd)
			return EOPNOTSUPP;
		at = v[i].end;
	}
	fd = rnic_shm_fd(MOVED_NAME, b - a);
	if (fd < 0)
		return errno;
	*out = seg_new((uint8_t *)a, b - a, fd, 1);
	if (*out == NULL) {
		close(fd);
		return ENOMEM;
	}
	ret = move_pages((uint8_t *)a, b - a, fd, 0, v, nb);
	if (ret != 0)
		seg_free(*out);
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Regions                                                                                                  */

static int
region_add(struct rnic_client_region *r, struct shm_seg *g, uintptr_t a, uintptr_t b, int created)
{
	uint64_t offset = a - (uintptr_t)g->base;

	if (r->nb > 0 && r->seg[r->nb - 1] == g && r->offset[r->nb - 1] + r->len[r->nb - 1] == offset) {
		r->len[r->nb - 1] += b - a;	/* the same memfd, contiguous: one segment */
		return 0;
	}
	if (r->nb == RNICD_MR_MAX_SEGS)
		return E2BIG;
	r->seg[r->nb] = g;
	r->offset[r->nb] = offset;
	r->len[r->nb] = b - a;
	r->created[r->nb] = (uint8_t)created;
	g->refs++;
	r->nb++;
	return 0;
}

/* A segment moved in place for a registration that failed: its pages back onto private memory, with the
 * protections v gave them, and the segment gone. */
static void
seg_unmove(struct shm_seg *g, const struct vma *v, int nb_vma)
{
	int ret = move_pages(g->base, g->len, g->fd, 1, v, nb_vma);

	if (ret != 0)
		RNIC_LOG(WARNING, "rnicd: pages at %p moved in place for a refused registration stay shared: %s",
			 (void *)g->base, strerror(ret));
	seg_free(g);
}

/* Undo what region_get did: references dropped, segments it made moved back (undo) or kept. */
static void
region_put_locked(struct rnic_client_region *r, int undo, const struct vma *v, int nb_vma)
{
	for (int i = r->nb - 1; i >= 0; i--) {
		struct shm_seg *g = r->seg[i];

		g->refs--;
		if (undo && r->created[i] && g->refs == 0)
			seg_unmove(g, v, nb_vma);
		else
			seg_release(g);
	}
	r->nb = 0;
}

int
rnic_client_region_get(void *addr, size_t length, int writable, struct rnic_client_region *r)
{
	uintptr_t first = (uintptr_t)addr & ~(PAGE - 1), end, at;
	struct vma v[MAX_VMAS];
	int nb_vma = 0, ret = 0;

	memset(r, 0, sizeof(*r));
	if (length == 0 || (uintptr_t)addr + length < (uintptr_t)addr || (uintptr_t)addr + length > UINTPTR_MAX - PAGE)
		return EINVAL;
	end = RTE_ALIGN_CEIL((uintptr_t)addr + length, PAGE);
	pthread_mutex_lock(&shm_lock);
	if (move_in_place) {
		nb_vma = read_vmas(first, end, v, MAX_VMAS);
		ret = nb_vma < 0 ? -nb_vma : span_usable(first, end, writable, v, nb_vma);
	}
	for (at = first; ret == 0 && at < end;) {
		struct shm_seg *g = seg_at((uint8_t *)at);
		uintptr_t stop;

		if (g != NULL) {
			stop = RTE_MIN(end, (uintptr_t)g->base + g->len);
			if (move_in_place && !seg_still_mapped(g, at, stop, v, nb_vma)) {
				seg_detach(g);	/* the program unmapped or remapped its pages */
				continue;
			}
			ret = region_add(r, g, at, stop, 0);
		} else if (move_in_place) {
			stop = (uintptr_t)next_seg_start((uint8_t *)at, (uint8_t *)end);
			ret = move_run(at, stop, v, nb_vma, &g);
			if (ret == 0 && (ret = region_add(r, g, at, stop, 1)) != 0)
				seg_unmove(g, v, nb_vma);
		} else {
			ret = EINVAL;	/* not memory of rnic_alloc_buf: the daemon cannot map it */
			stop = end;
		}
		at = stop;
	}
	if (ret != 0)
		region_put_locked(r, 1, v, nb_vma);
	pthread_mutex_unlock(&shm_lock);
	return ret;
}

void
rnic_client_region_put(struct rnic_client_region *r, int undo)
{
	struct vma v[MAX_VMAS];
	int nb_vma = 0;

	if (r->nb == 0)
		return;
	pthread_mutex_lock(&shm_lock);
	/* Moving back restores the pages' protections as they are now (those they had before the move). */
	if (undo) {
		uintptr_t a = UINTPTR_MAX, b = 0;

		for (int i = 0; i < r->nb; i++) {
			a = RTE_MIN(a, (uintptr_t)r->seg[i]->base);
			b = RTE_MAX(b, (uintptr_t)r->seg[i]->base + r->seg[i]->len);
		}
		nb_vma = RTE_MAX(read_vmas(a, b, v, MAX_VMAS), 0);
	}
	region_put_locked(r, undo, v, nb_vma);
	pthread_mutex_unlock(&shm_lock);
}

int
rnic_client_region_fd(const struct rnic_client_region *r, int i)
{
	return r->seg[i]->fd;
}
