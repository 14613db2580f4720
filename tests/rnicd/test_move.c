/* SPDX-License-Identifier: BSD-3-Clause
 * A client of rnicd registering ordinary memory, as the verbs interposer does (rnic_client_move_in_place,
 * doc/verbs.md "Two ways to run"), and its events through the daemon. One process, two contexts: a on rnic0
 * WRITEs and READs into regions b on rnic1 registered.
 *   move    malloc'd, stack, static and read-only memory moved in place: contents kept, the program's
 *           pointers unchanged, a remote WRITE seen through them; overlapping and adjacent regions sharing
 *           pages; dereg and re-register; memory the program unmapped and mapped again while still
 *           registered; regions refused (read-only pages for local write; over the daemon's max-mem, then
 *           moved back: private memory again, contents kept); REG_MR's segments the daemon refuses
 *   events  completion events on a channel (armed before and after the CQE: the daemon's, the client's
 *           own), and an async event (QP_ACCESS_ERR) on the context's async_fd
 * Usage: test_move RNICD move|events
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "rnic_cq.h"

#define PAGE 4096u
#define ACCESS (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ)

static struct end a, b;
static struct info a_info;

/* Whether the mapping of /proc/self/maps holding addr is one of the moved memfds (and its permissions). */
static int
moved_at(const void *addr, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int moved = -1;

	CHECK(f != NULL, "/proc/self/maps");
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx %4s", &s, &e, perms) == 3 && (uintptr_t)addr >= s && (uintptr_t)addr < e) {
			moved = strstr(line, "softrnic-moved") != NULL;
			break;
		}
	}
	fclose(f);
	CHECK(moved >= 0, "%p is not mapped", addr);
	return moved;
}

/* a WRITEs len bytes of pattern seed at raddr of b's region rkey (through a's own registered buffer). */
static void
remote_write(uint64_t raddr, uint32_t rkey, uint32_t len, uint32_t seed)
{
	fill(a.buf, len, seed);
	post(a.qp, RNIC_WR_RDMA_WRITE, (uintptr_t)a.buf, len, a.mr->lkey, raddr, rkey);
	expect_ok(a.cq, RNIC_WC_RDMA_WRITE);
}

/* a READs len bytes at raddr into its buffer. */
static void
remote_read(uint64_t raddr, uint32_t rkey, uint32_t len)
{
	memset(a.buf + MSG, 0, len);
	post(a.qp, RNIC_WR_RDMA_READ, (uintptr_t)a.buf + MSG, len, a.mr->lkey, raddr, rkey);
	expect_ok(a.cq, RNIC_WC_RDMA_READ);
}

static void
connect_ends(void)
{
	struct info bi;

	client_init();
	rnic_client_move_in_place(1);
	end_open(&a, 0);
	end_open(&b, 1);
	a_info = end_info(&a, a.qp);
	bi = end_info(&b, b.qp);
	connect_qp(a.qp, &bi);
	connect_qp(b.qp, &a_info);
}

static void
close_ends(void)
{
	end_close(&a);
	end_close(&b);
}

/* A region of the program's memory registered by b: contents and pointer as they were, the pages moved,
 * a remote WRITE into its middle seen through the program's pointer, the rest untouched. */
static struct rnic_mr *
register_and_write(uint8_t *p, size_t len, uint32_t seed, const char *what)
{
	uint8_t *before = malloc(len);
	struct rnic_mr *mr;
	char perms[5];
	uint32_t n = (uint32_t)RTE_MIN(len / 2, 4096u);

	CHECK(before != NULL, "malloc");
	fill(p, (uint32_t)len, seed);
	memcpy(before, p, len);
	mr = rnic_reg_mr(b.pd, p, len, ACCESS);
	CHECK(mr != NULL, "%s: reg_mr: %s", what, strerror(errno));
	CHECK(mr->addr == p && memcmp(p, before, len) == 0, "%s: contents changed by the move", what);
	CHECK(moved_at(p, perms) && moved_at(p + len - 1, perms) && perms[3] == 's' && perms[1] == 'w',
	      "%s: pages not moved onto shared memory (%s)", what, perms);
	remote_write((uintptr_t)p + len / 4, mr->rkey, n, seed + 1);
	CHECK(matches(p + len / 4, n, seed + 1), "%s: the remote WRITE is not seen through the program's pointer",
	      what);
	CHECK(memcmp(p, before, len / 4) == 0 && memcmp(p + len / 4 + n, before + len / 4 + n, len - len / 4 - n) == 0,
	      "%s: bytes around the WRITE changed", what);
	free(before);
	return mr;
}

static void
move_stack(void)
{
	uint8_t buf[3 * PAGE + 123];	/* its pages hold this frame and the callers' too */
	struct rnic_mr *mr = register_and_write(buf + 7, sizeof(buf) - 7, 11, "stack");

	CHECK(rnic_dereg_mr(mr) == 0, "stack: dereg");
	printf("stack buffer: moved, WRITE seen, frames intact\n");
}

static uint8_t static_buf[5 * PAGE + 99];

static void
move_heap_overlap(void)
{
	size_t len = 40000;
	uint8_t *p = malloc(len);
	struct rnic_mr *r1, *r2, *r3;

	CHECK(p != NULL, "malloc");
	/* [50, 10050): moved; [8000, 28000): its first pages already moved (two segments); [28000, 30000):
	 * adjacent, sharing r2's last page. */
	r1 = register_and_write(p + 50, 10000, 21, "malloc'd");
	fill(p + 8000, 20000, 22);
	r2 = rnic_reg_mr(b.pd, p + 8000, 20000, ACCESS);
	CHECK(r2 != NULL, "overlapping: reg_mr: %s", strerror(errno));
	CHECK(matches(p + 8000, 20000, 22), "overlapping: contents changed by the move");
	remote_write((uintptr_t)p + 9000, r2->rkey, 4096, 23);	/* into r1's pages through r2 */
	CHECK(matches(p + 9000, 4096, 23), "overlapping: WRITE into shared pages not seen");
	remote_read((uintptr_t)p + 9000, r1->rkey, 1000);	/* and through r1 (to its end at 10050) */
	CHECK(matches(a.buf + MSG, 1000, 23), "overlapping: r1 does not see r2's WRITE");
	remote_write((uintptr_t)p + 20000, r2->rkey, 4096, 24);	/* into pages moved for r2 */
	CHECK(matches(p + 20000, 4096, 24), "overlapping: WRITE into new pages not seen");
	r3 = rnic_reg_mr(b.pd, p + 28000, 2000, ACCESS);
	CHECK(r3 != NULL, "adjacent: reg_mr: %s", strerror(errno));
	remote_write((uintptr_t)p + 28000, r3->rkey, 2000, 25);
	CHECK(matches(p + 28000, 2000, 25) && matches(p + 20000, 4096, 24), "adjacent: WRITE not seen");
	/* Deregistered, the pages stay where they are; registered again, the same bytes. */
	CHECK(rnic_dereg_mr(r1) == 0 && rnic_dereg_mr(r2) == 0 && rnic_dereg_mr(r3) == 0, "dereg");
	p[60] = 0x5a;
	r1 = rnic_reg_mr(b.pd, p + 50, 10000, ACCESS);
	CHECK(r1 != NULL && p[60] == 0x5a && matches(p + 9000, 1000, 23), "re-register: %s", strerror(errno));
	remote_write((uintptr_t)p + 100, r1->rkey, 4096, 26);
	CHECK(matches(p + 100, 4096, 26) && p[60] == 0x5a, "re-register: WRITE not seen");
	CHECK(rnic_dereg_mr(r1) == 0, "dereg");
	free(p);	/* malloc's memory as any other: the pages stay shared (doc/verbs.md) */
	printf("malloc'd: moved, overlapping and adjacent regions share pages, dereg and re-register\n");
}

/* Pages the program unmapped and mapped again while a registration still held them: the next registration
 * sees new memory, not the old segment. */
static void
move_remapped(void)
{
	uint8_t *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rnic_mr *old, *mr;

	CHECK(p != MAP_FAILED, "mmap");
	old = register_and_write(p, 2 * PAGE, 31, "mmap'd");
	CHECK(munmap(p, 2 * PAGE) == 0, "munmap");
	CHECK(mmap(p, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p, "mmap");
	CHECK(!moved_at(p, (char[5]){ 0 }), "remapped: still the moved mapping");
	mr = register_and_write(p, 2 * PAGE, 32, "remapped");
	CHECK(rnic_dereg_mr(mr) == 0 && rnic_dereg_mr(old) == 0, "dereg");
	CHECK(munmap(p, 2 * PAGE) == 0, "munmap");
	printf("unmapped and mapped again while registered: moved again\n");
}

/* Read-only pages: refused for local write (as ibv_reg_mr), registered read-only with their protection. */
static void
move_read_only(void)
{
	uint8_t *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rnic_mr *mr;
	char perms[5];

	CHECK(p != MAP_FAILED, "mmap");
	fill(p, 2 * PAGE, 41);
	CHECK(mprotect(p, 2 * PAGE, PROT_READ) == 0, "mprotect");
	CHECK(rnic_reg_mr(b.pd, p, 2 * PAGE, ACCESS) == NULL && errno == EFAULT,
	      "read-only pages for local write: %s", strerror(errno));
	CHECK(!moved_at(p, perms), "read-only: moved for a refused registration");
	mr = rnic_reg_mr(b.pd, p + 100, PAGE, RNIC_ACCESS_REMOTE_READ);
	CHECK(mr != NULL, "read-only: reg_mr: %s", strerror(errno));
	CHECK(moved_at(p, perms) && strcmp(perms, "r--s") == 0, "read-only: moved as %s", perms);
	remote_read((uintptr_t)p + 100, mr->rkey, PAGE);
	CHECK(memcmp(a.buf + MSG, p + 100, PAGE) == 0 && matches(p, 2 * PAGE, 41), "read-only: READ");
	CHECK(rnic_dereg_mr(mr) == 0 && munmap(p, 2 * PAGE) == 0, "dereg");
	printf("read-only: refused for local write, moved with its protection for remote read\n");
}

/* Over the daemon's max-mem (4 MB, the test's configuration): refused, and the pages moved for it back. */
static void
move_refused(void)
{
	size_t len = 8u << 20;
	uint8_t *p = malloc(len), *before = malloc(len);
	char perms[5];

	CHECK(p != NULL && before != NULL, "malloc");
	fill(p, (uint32_t)len, 51);
	memcpy(before, p, len);
	CHECK(rnic_reg_mr(b.pd, p, len, ACCESS) == NULL && errno == EDQUOT, "over max-mem: %s", strerror(errno));
	CHECK(memcmp(p, before, len) == 0, "refused: contents changed");
	CHECK(!moved_at(p + len / 2, perms) && perms[3] == 'p' && perms[1] == 'w', "refused: pages still moved (%s)",
	      perms);
	p[len / 2] ^= 1;	/* writable private memory */
	free(before);
	free(p);
	printf("refused by the daemon: moved back, contents kept\n");
}

/* REG_MR over several memfds, on a raw session: the daemon maps only segments that are page-aligned, within
 * their files, sealed, one descriptor each, and cover the region's pages exactly. */
static int
raw_reg(int s, struct rnicd_req *req, const struct rnicd_mr_seg *seg, uint32_t nb_seg, const int *fds, int nb_fds)
{
	struct rnicd_rep rep;
	int ret;

	req->u.reg_mr.nb_seg = nb_seg;
	memcpy(req->u.reg_mr.seg, seg, nb_seg * sizeof(*seg));
	ret = rnicd_call_fds(s, req, RNICD_REG_MR, fds, nb_fds, &rep, NULL, 0);
	if (ret == 0) {
		struct rnicd_req d = { .u.obj.handle = rep.u.reg_mr.handle };

		CHECK(rnicd_call(s, &d, RNICD_DEREG_MR, -1, &rep, NULL) == 0, "segments: dereg");
	}
	return ret;
}

static void
segment_refusals(void)
{
	int s = raw_connect(), fd = rnic_shm_fd("t", 4 * PAGE), loose = memfd_create("t", MFD_CLOEXEC);
	struct rnicd_req req = { 0 };
	struct rnicd_rep rep;
	int two[2] = { fd, fd }, mixed[2] = { fd, loose };
	/* the region [0x10000100, +2 pages): its span is 3 pages */
	const struct rnicd_mr_seg good[2] = { { 0, PAGE }, { PAGE, 2 * PAGE } };
	const struct rnicd_mr_seg short_[2] = { { 0, PAGE }, { PAGE, PAGE } };
	const struct rnicd_mr_seg unaligned[2] = { { 100, PAGE }, { PAGE, 2 * PAGE } };
	const struct rnicd_mr_seg past_end[2] = { { 0, PAGE }, { 3 * PAGE, 2 * PAGE } };

	CHECK(s >= 0 && fd >= 0 && loose >= 0 && ftruncate(loose, 4 * PAGE) == 0, "segments: setup");
	CHECK(rnicd_call(s, &req, RNICD_OPEN, -1, &rep, NULL) == 0, "segments: open");
	CHECK(rnicd_call(s, &req, RNICD_ALLOC_PD, -1, &rep, NULL) == 0, "segments: alloc_pd");
	req.u.reg_mr.pd = rep.u.obj.handle;
	req.u.reg_mr.access = RNIC_ACCESS_LOCAL_WRITE;
	req.u.reg_mr.va = 0x10000100;
	req.u.reg_mr.length = 2 * PAGE;
	CHECK(raw_reg(s, &req, good, 2, two, 2) == 0, "segments: a good pair refused");
	CHECK(raw_reg(s, &req, short_, 2, two, 2) == EINVAL, "segments: short of the span");
	CHECK(raw_reg(s, &req, unaligned, 2, two, 2) == EINVAL, "segments: not page-aligned");
	CHECK(raw_reg(s, &req, past_end, 2, two, 2) == EINVAL, "segments: past the file's end");
	CHECK(raw_reg(s, &req, good, 2, two, 1) == EBADF, "segments: a descriptor short");
	CHECK(raw_reg(s, &req, good, 1, two, 2) == EBADF, "segments: a descriptor too many");
	CHECK(raw_reg(s, &req, good, 2, mixed, 2) == EPERM, "segments: an unsealed memfd");
	req.u.reg_mr.offset = PAGE;
	CHECK(raw_reg(s, &req, good, 2, two, 2) == EINVAL, "segments: an offset besides them");
	close(fd);
	close(loose);
	close(s);
	printf("REG_MR over several memfds: short, unaligned, past the end, descriptors short or extra, "
	       "unsealed, an offset besides: refused\n");
}

static void
test_move_in_place(void)
{
	struct rnic_mr *mr;

	connect_ends();
	move_heap_overlap();
	move_stack();
	mr = register_and_write(static_buf + 17, sizeof(static_buf) - 17, 61, "static");
	CHECK(rnic_dereg_mr(mr) == 0, "static: dereg");
	printf("static buffer: moved, WRITE seen\n");
	move_remapped();
	move_read_only();
	move_refused();
	segment_refusals();
	close_ends();
}

/* poll() an event fd with a deadline. */
static void
wait_readable(int fd, const char *what)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	CHECK(poll(&p, 1, TIMEOUT_S * 1000) == 1 && (p.revents & POLLIN), "%s: no event in %d s", what, TIMEOUT_S);
}

static void
expect_cq_event(struct rnic_comp_channel *ch, struct rnic_cq *cq, const char *what)
{
	struct rnic_cq *got;
	void *ctx;

	wait_readable(ch->fd, what);
	CHECK(rnic_get_cq_event(ch, &got, &ctx) == 0 && got == cq && ctx == &a, "%s: get_cq_event: %s", what,
	      strerror(errno));
	rnic_ack_cq_events(cq, 1);
}

static void
test_events(void)
{
	struct rnic_comp_channel *ch;
	struct rnic_async_event ev;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
	struct rnic_wc wc;
	struct info bi;

	connect_ends();
	ch = rnic_create_comp_channel(a.ctx);
	CHECK(ch != NULL && ch->fd >= 0, "create_comp_channel: %s", strerror(errno));
	cq = rnic_create_cq(a.ctx, 16, &a, ch, 0);
	CHECK(cq != NULL, "create_cq on a channel: %s", strerror(errno));
	qp = new_qp_depth(&a, cq, 16);
	/* b's QP connected to a's new one instead */
	bi = end_info(&b, b.qp);
	CHECK(rnic_destroy_qp(b.qp) == 0, "destroy_qp");
	b.qp = new_qp(&b);
	bi.qpn = b.qp->qp_num;
	connect_qp(qp, &bi);
	connect_qp(b.qp, &(struct info){ .qpn = qp->qp_num, .gid = a_info.gid });
	/* Armed, then the CQE: the daemon's engine fires and forwards. */
	CHECK(rnic_req_notify_cq(cq, 0) == 0, "req_notify_cq");
	post(qp, RNIC_WR_RDMA_WRITE, (uintptr_t)a.buf, 64, a.mr->lkey, (uintptr_t)b.buf, b.mr->rkey);
	expect_cq_event(ch, cq, "armed before the CQE");
	CHECK(rnic_poll_cq(cq, 1, &wc) == 1 && wc.status == RNIC_WC_SUCCESS, "poll_cq");
	/* The CQE first, then the arm: the client fires its own event. */
	post(qp, RNIC_WR_RDMA_WRITE, (uintptr_t)a.buf, 64, a.mr->lkey, (uintptr_t)b.buf, b.mr->rkey);
	for (double t0 = now_s(); rnic_cq_free_slots(cq) == 32u; usleep(1000))
		CHECK(now_s() - t0 < TIMEOUT_S, "no CQE");
	CHECK(rnic_req_notify_cq(cq, 0) == 0, "req_notify_cq");
	expect_cq_event(ch, cq, "armed over a CQE");
	CHECK(rnic_poll_cq(cq, 1, &wc) == 1 && wc.status == RNIC_WC_SUCCESS, "poll_cq");
	printf("completion events: armed before the CQE and over one\n");
	/* A WRITE with a wrong rkey: b's QP goes to error with an async event on b's context. */
	post(qp, RNIC_WR_RDMA_WRITE, (uintptr_t)a.buf, 64, a.mr->lkey, (uintptr_t)b.buf, b.mr->rkey ^ 0x100);
	CHECK(rnic_req_notify_cq(cq, 0) == 0, "req_notify_cq");
	expect_cq_event(ch, cq, "the failed WRITE");
	CHECK(rnic_poll_cq(cq, 1, &wc) == 1 && wc.status == RNIC_WC_REM_ACCESS_ERR, "poll_cq: %s",
	      rnic_wc_status_str(wc.status));
	wait_readable(b.ctx->async_fd, "async event");
	CHECK(rnic_get_async_event(b.ctx, &ev) == 0 && ev.event_type == RNIC_EVENT_QP_ACCESS_ERR &&
	      ev.element.qp == b.qp, "async event: %s (type %d)", strerror(errno), (int)ev.event_type);
	rnic_ack_async_event(&ev);
	printf("async event: QP_ACCESS_ERR on the target's QP\n");
	CHECK(rnic_destroy_qp(qp) == 0 && rnic_destroy_cq(cq) == 0, "destroy");
	CHECK(rnic_destroy_comp_channel(ch) == 0, "destroy_comp_channel");
	close_ends();
}

int
main(int argc, char **argv)
{
	char config[] = "/tmp/rnicd-test-move-XXXXXX";
	int fd;

	if (argc != 3 || (strcmp(argv[2], "move") != 0 && strcmp(argv[2], "events") != 0)) {
		fprintf(stderr, "usage: %s RNICD move|events\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	is_parent = 1;
	/* 4 MB of shared memory per connection: room for the test's regions, not for move_refused's. */
	fd = mkstemp(config);
	CHECK(fd >= 0 && write(fd, "max-mem 4M\n", 11) == 11 && close(fd) == 0, "%s: %s", config, strerror(errno));
	start_daemon(argv[1], config);
	unlink(config);
	if (strcmp(argv[2], "move") == 0)
		test_move_in_place();
	else
		test_events();
	stop_daemon();
	remove_runtime_dir();
	printf("ok\n");
	return 0;
}
