/* SPDX-License-Identifier: BSD-3-Clause
 * What the rnicd tests share (tests/rnicd): a daemon started for the test on its embedded loopback pair
 * rnic0/rnic1 (its own --file-prefix, socket in a temporary directory) and ended with SIGTERM, bounded waits
 * for child processes, the daemon's counters (socket and telemetry), and a client's end of an RC connection:
 * context, PD, CQ, QP and a registered buffer, connected to a peer's end.
 */
#ifndef RNICD_HARNESS_H
#define RNICD_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "rnic.h"
#include "rnic_client.h"

#define MSG 65536u
#define RECV_OFF (2 * MSG)
#define SEND_OFF (2 * MSG + 4096)
#define BUF_BYTES (2 * MSG + 8192)
#define TIMEOUT_S 30

/* A failed check ends the process: a child with status 1, the test (after killing the daemon) too. */
#define CHECK(cond, ...) do {								\
	if (!(cond)) {									\
		fprintf(stderr, "FAIL %s:%d (pid %d): ", __FILE__, __LINE__, (int)getpid());	\
		fprintf(stderr, __VA_ARGS__);						\
		fputc('\n', stderr);							\
		fail_exit();								\
	}										\
} while (0)

/* What a peer needs to reach an end: QPN, rkey and address of its buffer, GID. */
struct info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	union rnic_gid gid;
};

/* A client's end: one context on one device, with one RC QP and one registered buffer. */
struct end {
	struct rnic_context *ctx;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
	struct rnic_mr *mr;
	uint8_t *buf;			/* [src 64K][dst 64K][receive 4K][send 4K] */
};

extern char dir[64], sock_path[100], prefix[64];	/* the daemon's directory, socket, file prefix */
extern pid_t daemon_pid;
extern int is_parent;			/* the test's process (not a client child): kills the daemon on failure */
extern const char *daemon_log;		/* set before start_daemon: the daemon's stderr goes to that file */

void fail_exit(void) __attribute__((noreturn));
/* Remove the daemon's DPDK runtime directory (/var/run/dpdk/<prefix>) once it has ended. */
void remove_runtime_dir(void);
double now_s(void);

/* A connection to the daemon's socket (-1 if refused). */
int raw_connect(void);
/* Start rnicd (optional configuration file) and wait for its socket; RNIC_DAEMON is set for clients. */
void start_daemon(const char *rnicd, const char *config);
/* Let processes of other users connect (tests of tenants: children that setuid). */
void open_to_all_users(void);
/* Lines of a file (the daemon's log) that contain a string. */
int count_lines(const char *path, const char *what);
/* Wait for a child with a deadline; returns its wait status (killed and failed on timeout). */
int wait_child(pid_t pid, double seconds);
/* SIGTERM: the daemon must exit 0 and remove its socket. */
void stop_daemon(void);
/* The daemon's counters over its own socket (RNICD_STATS). */
struct rnicd_stats daemon_stats(void);
/* One telemetry command's JSON reply from the daemon's DPDK telemetry socket. */
void telemetry(const char *cmd, char *out, size_t len);

/* A client process: client mode of the library (RNIC_DAEMON). */
void client_init(void);
struct rnic_qp *new_qp(struct end *e);
/* An RC QP of the end's PD on cq, depth work requests each way, 512 bytes inline. */
struct rnic_qp *new_qp_depth(struct end *e, struct rnic_cq *cq, uint32_t depth);
/* Open device dev (0: rnic0, 1: rnic1), PD, CQ, one QP, a buffer of BUF_BYTES registered for local write,
 * remote write and read. */
void end_open(struct end *e, int dev);
void end_close(struct end *e);
struct info end_info(const struct end *e, const struct rnic_qp *qp);
/* How connect_path connects: path MTU, first PSN both ways, loss timer exponent, retries. */
struct path {
	enum rnic_mtu mtu;
	uint32_t psn;
	uint8_t timeout;
	uint8_t retry_cnt;
};

/* INIT, RTR, RTS towards the peer: 0, or -1 at the first step refused. */
int connect_path(struct rnic_qp *qp, const struct info *peer, const struct path *path);
/* The same with MTU 1024, PSN 0, the loss timer at 4.096 us x 2^14, 7 retries; failing the test if refused. */
void connect_qp(struct rnic_qp *qp, const struct info *peer);
/* One signaled work request with one SGE (RDMA fields for WRITE / READ). */
void post(struct rnic_qp *qp, enum rnic_wr_opcode op, uint64_t laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
	  uint32_t rkey);
/* A receive of 64 bytes at RECV_OFF of the end's buffer. */
void post_recv(struct end *e);
/* The next completion (failed after TIMEOUT_S). */
struct rnic_wc wait_wc(struct rnic_cq *cq);
void expect_ok(struct rnic_cq *cq, enum rnic_wc_opcode op);
/* A pseudo-random pattern of a seed, and whether memory holds it. */
void fill(uint8_t *p, uint32_t len, uint32_t seed);
int matches(const uint8_t *p, uint32_t len, uint32_t seed);

#endif /* RNICD_HARNESS_H */
