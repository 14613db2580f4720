/* SPDX-License-Identifier: BSD-3-Clause
 * Tenants' shares and caps through rnicd (doc/rnicd.md, "Tenants and quotas"; issue 21): two tenants (two
 * uids, one client process each) keep 64 KB WRITEs queued on two QPs each, rnic0 -> rnic1.
 * shares: with `share 1` and `share 3` in the daemon's configuration, the engine's bytes of each (telemetry
 * /rnicd/tenants) over the same second must be 1:3 within 10 %; then the configuration swaps the shares,
 * SIGHUP, and they must be 3:1. A ratio of what the two sent in the same window: the load of the machine
 * slows both alike.
 * caps: one tenant with `rate 200M`, the other without a cap; then, after SIGHUP, the first without and the
 * other with `msg-rate 250` (caps low enough that the tenant without one passes twice them under ASan on a
 * loaded machine). The capped tenant's frames (its payload bytes and 58 bytes a packet) or messages (its
 * bytes / 64 KB) a second: by the clock no window above the cap by more than 5 % and two
 * buckets, per second the daemon's engine lcore ran (its schedstat: the machine is loaded) the best window
 * at least 0.9 of it; and the other tenant more than twice the cap.
 * Run as root: test_shares RNICD [shares|caps]
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_env.h"

#define UID_A 4251
#define UID_B 4252
#define QPS 2
#define DEPTH 128			/* WRITEs each QP keeps queued: 16 MB a tenant, milliseconds of the engine */
#define WARMUP_S 0.3			/* after a change of shares, before a window */
#define WINDOW_S 1.0
#define TRIES 3
#define CAP_WINDOWS 4
#define CAP_WINDOW_S 0.25
#define FRAME_HDR 58			/* a WRITE packet's bytes besides its payload, at least (IPv4) */
#define BUCKET_US 64			/* what a cap's bucket holds (RNIC_PACER_BURST_US) */

static char config[64], log_path[64];

/* The two tenants' entries: what follows "tenant uid=N" for each. */
static void
write_config(const char *a, const char *b)
{
	FILE *f = fopen(config, "w");

	CHECK(f != NULL, "%s: %s", config, strerror(errno));
	fprintf(f, "tenant uid=%d %s\ntenant uid=%d %s\n", UID_A, a, UID_B, b);
	CHECK(fclose(f) == 0, "%s", config);
}

static void
write_shares(uint32_t share_a, uint32_t share_b)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "share %u", share_a);
	snprintf(b, sizeof(b), "share %u", share_b);
	write_config(a, b);
}

/* A WRITE of 64 KB whose completion names its QP (every peer QP is of the same end: one buffer, one rkey). */
static void
post_write(struct rnic_qp *qp, const struct end *x, const struct info *peer)
{
	struct rnic_sge sge = { .addr = (uintptr_t)x->buf, .length = MSG, .lkey = x->mr->lkey };
	struct rnic_send_wr wr = { .wr_id = (uintptr_t)qp, .sg_list = &sge, .num_sge = 1,
				   .opcode = RNIC_WR_RDMA_WRITE, .send_flags = RNIC_SEND_SIGNALED,
				   .wr.rdma = { .remote_addr = peer->addr + MSG, .rkey = peer->rkey } };
	struct rnic_send_wr *bad;

	CHECK(rnic_post_send(qp, &wr, &bad) == 0, "post_send: %s", strerror(errno));
}

/* A tenant: uid, QPS QPs on rnic0 connected to one on rnic1, DEPTH WRITEs queued on each and each completion replaced
 * until the parent closes its end of stop. It sleeps while it has no completion: both tenants' processes
 * share one CPU, and one that spins takes it from the other for whole time slices, in which the other's
 * queue runs dry (then each gets what its process's CPU time lets it post, whatever the shares). */
static void
tenant(uid_t uid, int ready_fd, int stop_fd)
{
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	struct end x, y;
	struct info ix, iy;
	struct rnic_qp *qp[QPS];
	cpu_set_t set;

	is_parent = 0;		/* a failed check ends this child only */
	CPU_ZERO(&set);
	CPU_SET(0, &set);	/* off the engine's worker (doc/rnicd.md, "Performance") */
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "sched_setaffinity: %s", strerror(errno));
	CHECK(setgid(uid) == 0 && setuid(uid) == 0, "setuid %u: %s", (unsigned int)uid, strerror(errno));
	CHECK(prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "prctl: %s", strerror(errno));
	client_init();
	end_open(&x, 0);
	end_open(&y, 1);
	for (int q = 0; q < QPS; q++) {
		struct rnic_qp *peer = q == 0 ? y.qp : new_qp(&y);

		qp[q] = new_qp_depth(&x, x.cq, DEPTH);
		CHECK(qp[q] != NULL && peer != NULL, "create_qp: %s", strerror(errno));
		ix = end_info(&x, qp[q]);
		iy = end_info(&y, peer);
		connect_qp(qp[q], &iy);
		connect_qp(peer, &ix);
		for (int i = 0; i < DEPTH; i++)
			post_write(qp[q], &x, &iy);
	}
	CHECK(write(ready_fd, "r", 1) == 1, "ready");
	while (poll(&pfd, 1, 0) == 0) {
		struct rnic_wc wc[DEPTH];
		int n = rnic_poll_cq(x.cq, DEPTH, wc);

		CHECK(n >= 0, "poll_cq: %d", n);
		for (int i = 0; i < n; i++) {
			CHECK(wc[i].status == RNIC_WC_SUCCESS, "WRITE failed: status %d", wc[i].status);
			post_write((struct rnic_qp *)(uintptr_t)wc[i].wr_id, &x, &iy);
		}
		if (n == 0)
			usleep(100);
	}
	_exit(0);	/* the daemon releases what the connection held */
}

/* A number of a tenant in /rnicd/tenants ("uid N"'s entry, key "name"). */
static uint64_t
tenant_value(const char *tel, uid_t uid, const char *name)
{
	char who[48], key[48];
	const char *t, *v, *next;

	snprintf(who, sizeof(who), "\"tenant\":\"uid %u\"", (unsigned int)uid);
	snprintf(key, sizeof(key), "\"%s\":", name);
	t = strstr(tel, who);
	CHECK(t != NULL, "no tenant uid %u in /rnicd/tenants: %s", (unsigned int)uid, tel);
	v = strstr(t, key);
	next = strstr(t + 1, "\"tenant\":");
	CHECK(v != NULL && (next == NULL || v < next), "no %s of uid %u in /rnicd/tenants", name, (unsigned int)uid);
	return strtoull(v + strlen(key), NULL, 10);
}

/* The two tenants' bytes over WINDOW_S (after WARMUP_S), and their shares as the daemon shows them. */
static double
ratio_b_to_a(uint64_t *share_a, uint64_t *share_b)
{
	static char t0[16384], t1[16384];
	double a, b, start;

	usleep((useconds_t)(WARMUP_S * 1e6));
	telemetry("/rnicd/tenants", t0, sizeof(t0));
	start = now_s();
	usleep((useconds_t)(WINDOW_S * 1e6));
	telemetry("/rnicd/tenants", t1, sizeof(t1));
	a = (double)(tenant_value(t1, UID_A, "bytes") - tenant_value(t0, UID_A, "bytes"));
	b = (double)(tenant_value(t1, UID_B, "bytes") - tenant_value(t0, UID_B, "bytes"));
	*share_a = tenant_value(t1, UID_A, "share");
	*share_b = tenant_value(t1, UID_B, "share");
	printf("uid %d (share %llu): %.1f MB/s, uid %d (share %llu): %.1f MB/s over %.2f s: ratio %.3f\n", UID_A,
	       (unsigned long long)*share_a, a / 1e6 / (now_s() - start), UID_B, (unsigned long long)*share_b,
	       b / 1e6 / (now_s() - start), now_s() - start, b / a);
	CHECK(a > 0 && b > 0, "a tenant sent nothing");
	return b / a;
}

/* The shares as configured, in one of TRIES windows (a tenant whose process waited for the CPU while its
 * queues ran dry leaves the other what it does not take: the shares give way to work). */
static void
expect_ratio(uint32_t share_a, uint32_t share_b)
{
	double want = (double)share_b / share_a, got = 0;
	uint64_t sa, sb;

	for (int w = 0; w < TRIES && !(got > 0.9 * want && got < 1.1 * want); w++) {
		got = ratio_b_to_a(&sa, &sb);
		CHECK(sa == share_a && sb == share_b, "the daemon shows shares %llu:%llu, configured %u:%u",
		      (unsigned long long)sa, (unsigned long long)sb, share_a, share_b);
	}
	CHECK(got > 0.9 * want && got < 1.1 * want, "bytes %.3f of the share %u:%u (%.3f) not within 10 %%", got,
	      share_a, share_b, want);
}

/* What a tenant sent, from two /rnicd/tenants: its frames' bytes, or its messages (msgs). */
static double
sent(const char *t0, const char *t1, uid_t uid, int msgs)
{
	double bytes = (double)(tenant_value(t1, uid, "bytes") - tenant_value(t0, uid, "bytes"));
	double packets = (double)(tenant_value(t1, uid, "packets") - tenant_value(t0, uid, "packets"));

	return msgs ? bytes / MSG : bytes + packets * FRAME_HDR;
}

/*
 * Tenant capped at x (frames' bytes a second, or messages: msgs) beside tenant other without a cap, over
 * CAP_WINDOWS windows: the daemon shows the cap (key, configured), the cap held QPs of the capped tenant and
 * none of the other's; the rates as the head of the file says.
 */
static void
expect_cap(uid_t capped, uid_t other, const char *key, uint64_t configured, double x, int msgs)
{
	static char t0[16384], t1[16384];
	double best = 0, highest = 0, other_best = 0, bucket = RTE_MAX(x * BUCKET_US / 1e6, msgs ? 2.0 : 8448.0);
	uint64_t waits0;

	usleep((useconds_t)(WARMUP_S * 1e6));
	telemetry("/rnicd/tenants", t0, sizeof(t0));
	waits0 = tenant_value(t0, capped, "cap_waits");
	for (int w = 0; w < CAP_WINDOWS; w++) {
		uint64_t ran0 = test_engine_cpu_ns(daemon_pid), ran1;
		double start = now_s(), wall, cpu;

		usleep((useconds_t)(CAP_WINDOW_S * 1e6));
		telemetry("/rnicd/tenants", t1, sizeof(t1));
		ran1 = test_engine_cpu_ns(daemon_pid);
		wall = now_s() - start;
		cpu = (double)(ran1 - ran0) / 1e9;
		CHECK(ran1 > ran0, "the daemon's engine lcore did not run (or its schedstat cannot be read)");
		printf("uid %u capped at %.0f %s/s: %.0f by the clock, %.0f per second of the engine's lcore; uid %u "
		       "%.0f per second of the lcore\n", (unsigned int)capped, x, msgs ? "messages" : "bytes",
		       sent(t0, t1, capped, msgs) / wall, sent(t0, t1, capped, msgs) / cpu, (unsigned int)other,
		       sent(t0, t1, other, msgs) / cpu);
		highest = RTE_MAX(highest, sent(t0, t1, capped, msgs) / wall);
		best = RTE_MAX(best, sent(t0, t1, capped, msgs) / cpu);
		other_best = RTE_MAX(other_best, sent(t0, t1, other, msgs) / cpu);
		memcpy(t0, t1, sizeof(t0));
	}
	CHECK(tenant_value(t1, capped, key) == configured, "the daemon shows %s %llu for uid %u, configured %llu", key,
	      (unsigned long long)tenant_value(t1, capped, key), (unsigned int)capped, (unsigned long long)configured);
	CHECK(tenant_value(t1, other, "rate") == 0 && tenant_value(t1, other, "msg_rate") == 0,
	      "uid %u has a cap it was not given", (unsigned int)other);
	CHECK(tenant_value(t1, capped, "cap_waits") > waits0, "the cap held no QP of uid %u", (unsigned int)capped);
	CHECK(highest <= 1.05 * x + 2 * bucket / CAP_WINDOW_S, "uid %u sent %.3f of its cap in a window",
	      (unsigned int)capped, highest / x);
	CHECK(best >= 0.9 * x, "uid %u sent at most %.3f of its cap per second of the engine's lcore",
	      (unsigned int)capped, best / x);
	CHECK(other_best >= 2 * x, "uid %u, without a cap, sent at most %.2f of the other's cap", (unsigned int)other,
	      other_best / x);
}

/* SIGHUP, and the daemon's line that it read its configuration again. */
static void
reload(void)
{
	int before = count_lines(log_path, "configuration read again");

	CHECK(kill(daemon_pid, SIGHUP) == 0, "SIGHUP");
	for (double t0 = now_s(); count_lines(log_path, "configuration read again") == before;) {
		CHECK(now_s() - t0 < TIMEOUT_S, "rnicd did not read its configuration again");
		usleep(20000);
	}
}

int
main(int argc, char **argv)
{
	int ready[2], stop[2], caps;
	pid_t kids[2];
	char c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	CHECK(argc == 2 || (argc == 3 && (strcmp(argv[2], "shares") == 0 || strcmp(argv[2], "caps") == 0)),
	      "usage: test_shares RNICD [shares|caps]");
	caps = argc == 3 && strcmp(argv[2], "caps") == 0;
	if (getuid() != 0) {
		printf("SKIP: the tenants are other users: run as root\n");
		return 77;
	}
	snprintf(config, sizeof(config), "/tmp/rnicd-shares-%d.conf", (int)getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/rnicd-shares-%d.log", (int)getpid());
	if (caps)
		write_config("rate 200M", "");
	else
		write_shares(1, 3);
	daemon_log = log_path;
	start_daemon(argv[1], config);
	open_to_all_users();
	CHECK(pipe(ready) == 0 && pipe(stop) == 0, "pipe");
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		CHECK(kids[i] >= 0, "fork");
		if (kids[i] == 0) {
			close(ready[0]);
			close(stop[1]);
			tenant(i == 0 ? UID_A : UID_B, ready[1], stop[0]);
		}
	}
	close(ready[1]);
	close(stop[0]);
	for (int i = 0; i < 2; i++)
		CHECK(read(ready[0], &c, 1) == 1, "a tenant did not start");

	if (caps) {
		expect_cap(UID_A, UID_B, "rate", 200000000, 200e6 / 8, 0);
		write_config("", "msg-rate 250");
		reload();
		expect_cap(UID_B, UID_A, "msg_rate", 250, 250, 1);
	} else {
		expect_ratio(1, 3);
		write_shares(3, 1);
		reload();
		expect_ratio(3, 1);
	}

	close(stop[1]);
	for (int i = 0; i < 2; i++) {
		int st = wait_child(kids[i], TIMEOUT_S);

		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tenant %d failed (status %#x)", i, st);
	}
	stop_daemon();
	unlink(config);
	unlink(log_path);
	return 0;
}
