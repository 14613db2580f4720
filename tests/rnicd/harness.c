/* SPDX-License-Identifier: BSD-3-Clause
 * The rnicd tests' shared harness (harness.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

char dir[64], sock_path[100], prefix[64];
pid_t daemon_pid = -1;
int is_parent = 1;
const char *daemon_log;

void
remove_runtime_dir(void)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/var/run/dpdk/%s", prefix);
	d = opendir(path);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char file[PATH_MAX + 256];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		unlink(file);
	}
	closedir(d);
	rmdir(path);
}

void
fail_exit(void)
{
	int st;

	if (is_parent && daemon_pid > 0) {
		if (waitpid(daemon_pid, &st, WNOHANG) == daemon_pid) {
			fprintf(stderr, "(rnicd had ended: status %#x)\n", st);
		} else {
			kill(daemon_pid, SIGKILL);
			waitpid(daemon_pid, &st, 0);
		}
		remove_runtime_dir();
	}
	_exit(1);
}

double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The daemon                                                                                               */

int
raw_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
		return s;
	if (s >= 0)
		close(s);
	return -1;
}

void
start_daemon(const char *rnicd, const char *config)
{
	double t0 = now_s();
	int s;

	snprintf(dir, sizeof(dir), "/tmp/rnicd-test-XXXXXX");
	CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(sock_path, sizeof(sock_path), "%s/rnicd.sock", dir);
	snprintf(prefix, sizeof(prefix), "rnicd_test_%d", (int)getpid());
	daemon_pid = fork();
	CHECK(daemon_pid >= 0, "fork");
	if (daemon_pid == 0) {
		char *args[24];
		int n = 0;

		args[n++] = (char *)rnicd;
		args[n++] = "--socket";
		args[n++] = sock_path;
		if (config != NULL) {
			args[n++] = "--config";
			args[n++] = (char *)config;
		}
		args[n++] = "--";
		args[n++] = "-l";
		args[n++] = "0,1";
		args[n++] = "--no-huge";
		args[n++] = "-m";
		args[n++] = "512";
		args[n++] = "--no-pci";
		args[n++] = "--file-prefix";
		args[n++] = prefix;
		args[n++] = "--log-level=lib.eal:warning";
		args[n] = NULL;
		/* A test that dies (a sanitizer's abort, a signal) takes its daemon along: nothing is left
		 * holding the test's output open until the suite's timeout. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (daemon_log != NULL) {
			int fd = open(daemon_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

			if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
				_exit(126);
		}
		execv(rnicd, args);
		_exit(127);
	}
	while ((s = raw_connect()) < 0) {
		CHECK(now_s() - t0 < TIMEOUT_S, "rnicd did not open %s", sock_path);
		CHECK(waitpid(daemon_pid, NULL, WNOHANG) == 0, "rnicd exited at start");
		usleep(50000);
	}
	close(s);
	setenv("RNIC_DAEMON", sock_path, 1);
}

void
open_to_all_users(void)
{
	CHECK(chmod(dir, 0755) == 0 && chmod(sock_path, 0777) == 0, "chmod %s: %s", sock_path, strerror(errno));
}

int
count_lines(const char *path, const char *what)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	int n = 0;

	CHECK(f != NULL, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/* Wait for a child with a deadline; returns its wait status (killed and failed on timeout). */
int
wait_child(pid_t pid, double seconds)
{
	double t0 = now_s();
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (now_s() - t0 > seconds) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			CHECK(0, "process %d did not finish in %.0f s", (int)pid, seconds);
		}
		usleep(10000);
	}
}

void
stop_daemon(void)
{
	int st;

	kill(daemon_pid, SIGTERM);
	st = wait_child(daemon_pid, TIMEOUT_S);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rnicd did not exit 0 after SIGTERM (status %#x)", st);
	daemon_pid = -1;
	remove_runtime_dir();
	CHECK(access(sock_path, F_OK) != 0, "rnicd left its socket behind");
	rmdir(dir);
}

/* The daemon's counters over its own socket (RNICD_STATS). */
struct rnicd_stats
daemon_stats(void)
{
	struct rnicd_req req = { 0 };
	static struct rnicd_rep rep;
	int s = raw_connect();

	CHECK(s >= 0, "cannot connect to rnicd");
	CHECK(rnicd_call(s, &req, RNICD_STATS, -1, &rep, NULL) == 0, "RNICD_STATS refused");
	close(s);
	return rep.u.stats;
}

/* One telemetry command's JSON reply from the daemon's DPDK telemetry socket. */
void
telemetry(const char *cmd, char *out, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ssize_t n;

	snprintf(a.sun_path, sizeof(a.sun_path), "/var/run/dpdk/%s/dpdk_telemetry.v2", prefix);
	CHECK(s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0, "telemetry socket %s", a.sun_path);
	CHECK(read(s, out, len - 1) > 0, "telemetry greeting");
	CHECK(write(s, cmd, strlen(cmd)) == (ssize_t)strlen(cmd), "telemetry request");
	n = read(s, out, len - 1);
	CHECK(n > 0, "telemetry reply");
	out[n] = '\0';
	close(s);
}

/* ------------------------------------------------------------------------------------------------------ */
/* A client's end of an RC connection                                                                      */


void
client_init(void)
{
	is_parent = 0;
	CHECK(rnic_engine_init(0, NULL) == 0, "client mode did not start");
}

struct rnic_qp *
new_qp(struct end *e)
{
	return new_qp_depth(e, e->cq, 32);
}

struct rnic_qp *
new_qp_depth(struct end *e, struct rnic_cq *cq, uint32_t depth)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = RNIC_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 512 },
	};

	return rnic_create_qp(e->pd, &ia);
}

void
end_open(struct end *e, int dev)
{
	struct rnic_device **list = rnic_get_device_list(NULL);

	CHECK(list != NULL && list[0] != NULL && list[1] != NULL, "rnicd has no device pair");
	e->ctx = rnic_open_device(list[dev]);
	rnic_free_device_list(list);
	CHECK(e->ctx != NULL, "open_device: %s", strerror(errno));
	e->pd = rnic_alloc_pd(e->ctx);
	e->cq = rnic_create_cq(e->ctx, 256, NULL, NULL, 0);
	CHECK(e->pd != NULL && e->cq != NULL, "PD / CQ: %s", strerror(errno));
	e->qp = new_qp(e);
	CHECK(e->qp != NULL, "create_qp: %s", strerror(errno));
	e->buf = rnic_alloc_buf(BUF_BYTES);
	CHECK(e->buf != NULL, "rnic_alloc_buf");
	e->mr = rnic_reg_mr(e->pd, e->buf, BUF_BYTES, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			    RNIC_ACCESS_REMOTE_READ);
	CHECK(e->mr != NULL, "reg_mr: %s", strerror(errno));
}

void
end_close(struct end *e)
{
	CHECK(rnic_destroy_qp(e->qp) == 0, "destroy_qp");
	CHECK(rnic_dereg_mr(e->mr) == 0, "dereg_mr");
	CHECK(rnic_destroy_cq(e->cq) == 0, "destroy_cq");
	CHECK(rnic_dealloc_pd(e->pd) == 0, "dealloc_pd");
	CHECK(rnic_close_device(e->ctx) == 0, "close_device");
	rnic_free_buf(e->buf);
}

struct info
end_info(const struct end *e, const struct rnic_qp *qp)
{
	struct info i = { .qpn = qp->qp_num, .rkey = e->mr->rkey, .addr = (uintptr_t)e->buf };

	CHECK(rnic_query_gid(e->ctx, 1, 0, &i.gid) == 0, "query_gid");
	return i;
}

void
connect_qp(struct rnic_qp *qp, const struct info *peer)
{
	static const struct path path = { .mtu = RNIC_MTU_1024, .timeout = 14, .retry_cnt = 7 };

	CHECK(connect_path(qp, peer, &path) == 0, "QP %u: connecting to QP %u failed", qp->qp_num, peer->qpn);
}

int
connect_path(struct rnic_qp *qp, const struct info *peer, const struct path *path)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
				  .qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ };

	if (rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTR;
	a.path_mtu = path->mtu;
	a.rq_psn = path->psn;
	a.dest_qp_num = peer->qpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer->gid;
	if (rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
			   RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = path->psn;
	a.timeout = path->timeout;
	a.retry_cnt = path->retry_cnt;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	if (rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
			   RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC) != 0)
		return -1;
	return qp->state == RNIC_QPS_RTS ? 0 : -1;
}

void
post(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
     uint32_t rkey)
{
	struct rnic_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct rnic_send_wr wr = { .wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
				   .send_flags = RNIC_SEND_SIGNALED, .wr.rdma = { .remote_addr = raddr, .rkey = rkey } };
	struct rnic_send_wr *bad;
	int ret;

	ret = rnic_post_send(qp, &wr, &bad);
	CHECK(ret == 0, "post_send: %s", strerror(ret));
}

void
post_recv(struct end *e)
{
	struct rnic_sge sge = { .addr = (uintptr_t)e->buf + RECV_OFF, .length = 64, .lkey = e->mr->lkey };
	struct rnic_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct rnic_recv_wr *bad;

	CHECK(rnic_post_recv(e->qp, &wr, &bad) == 0, "post_recv");
}

struct rnic_wc
wait_wc(struct rnic_cq *cq)
{
	struct rnic_wc wc;
	double t0 = now_s();
	int n;

	while ((n = rnic_poll_cq(cq, 1, &wc)) == 0) {
		CHECK(now_s() - t0 < TIMEOUT_S, "no completion in %d s", TIMEOUT_S);
		sched_yield();
	}
	CHECK(n == 1, "poll_cq: %d", n);
	return wc;
}

void
expect_ok(struct rnic_cq *cq, enum rnic_wc_opcode op)
{
	struct rnic_wc wc = wait_wc(cq);

	CHECK(wc.status == RNIC_WC_SUCCESS && wc.opcode == op, "completion %s, opcode %d (want %d)",
	      rnic_wc_status_str(wc.status), wc.opcode, op);
}

void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (uint32_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

int
matches(const uint8_t *p, uint32_t len, uint32_t seed)
{
	static uint8_t want[BUF_BYTES];

	fill(want, len, seed);
	return memcmp(p, want, len) == 0;
}
