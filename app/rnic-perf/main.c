/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-perf: perftest-style bandwidth and latency benchmark for softrnic (ib_write_bw, ib_read_lat, ... as
 * rnic_write_bw, rnic_read_lat, ...), with the per-stage latency table no hardware RNIC gives.
 *
 *   rnic-perf [options] [-- EAL options [-- engine options]]          loopback: two devices, one process
 *   rnic-perf --server [options] [-- ...]   (or rnic_write_bw ...)     server: takes the test from the client
 *   rnic-perf [options] HOST [-- ...]       (or rnic_write_bw HOST)    client: runs the test against HOST
 * rnic-perf --help lists the options, doc/perftest.md compares them with perftest's. Exit status 0 when every
 * run completed (and verified, with --verify), 1 when one failed, 2 for bad options.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "perf.h"
#include "rnic_tool.h"

volatile sig_atomic_t perf_interrupted;

int
perf_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("rnic-perf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static double
monotonic_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* TSC cycles per second: EAL measured them; a client of rnicd (RNIC_DAEMON) has no EAL and measures here. */
double
perf_tsc_hz(void)
{
	static double hz;
	double t0, c0;

	if (hz != 0)
		return hz;
	if (rte_get_tsc_hz() != 0)
		return hz = (double)rte_get_tsc_hz();
	t0 = monotonic_s();
	c0 = (double)rte_rdtsc();
	usleep(50000);
	return hz = ((double)rte_rdtsc() - c0) / (monotonic_s() - t0);
}

/* Seconds from the TSC: the polling loops read the time on every turn, and a clock_gettime costs a VM about
 * as much as a turn of the engine (5% of the 64 B message rate). */
double
perf_now_s(void)
{
	return (double)rte_rdtsc() / perf_tsc_hz();
}

/* A second signal counts only this long after the first: timeout(1) sends its one stop to the command and
 * again to its process group, and a handler that ran between the two took them for two (an abort). */
#define SECOND_SIGNAL_NS 500000000LL

/* The first signal's watchdog: the engine's teardown waits for its lcores, and one that never returned its
 * stage (a stage's pass that did not end) kept a stalled rnic-perf alive through every SIGTERM. */
static void
on_alarm(int sig)
{
	static const char msg[] = "rnic-perf: not down " RTE_STR(PERF_EXIT_S) " s after the signal: exiting\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static void
on_signal(int sig)
{
	static struct timespec first;
	struct timespec now;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &now);	/* async-signal-safe */
	if (perf_interrupted == 0) {
		first = now;
		alarm(PERF_EXIT_S);
	} else if ((now.tv_sec - first.tv_sec) * 1000000000LL + (now.tv_nsec - first.tv_nsec) < SECOND_SIGNAL_NS)
		return;
	perf_interrupted = perf_interrupted + 1;
}

/* SIGINT and SIGTERM end the run at the next turn (--run_infinitely's end: a second one, half a second or
 * more later, aborts it), within PERF_STOP_WAIT_S of the last completion, and the process within
 * PERF_EXIT_S; a blocking accept or connect returns EINTR. */
static void
catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal }, alarm_sa = { .sa_handler = on_alarm };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&alarm_sa.sa_mask);
	sigaction(SIGALRM, &alarm_sa, NULL);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Loopback: two ends in this process                                                                       */

/* The device -d names (default the first), and for the peer the first other one. */
static int
open_pair(struct perf_end *a, struct perf_end *b, const struct perf_opts *o)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_device *da = NULL, *db = NULL;
	int ret;

	for (int i = 0; list != NULL && list[i] != NULL; i++) {
		if (da == NULL && (o->dev_name == NULL || strcmp(rnic_get_device_name(list[i]), o->dev_name) == 0))
			da = list[i];
		else if (db == NULL)
			db = list[i];
	}
	if (da == NULL || db == NULL) {
		rnic_free_device_list(list);
		return perf_fail(da == NULL && o->dev_name != NULL ? "-d %s: no such device" :
				 "loopback needs two devices (the engine's default pair: give no --port)",
				 o->dev_name);
	}
	ret = perf_end_open(a, da, o) || perf_end_open(b, db, o) || perf_end_info(a) || perf_end_info(b);
	rnic_free_device_list(list);
	if (ret != 0)
		return -1;
	memcpy(a->peer, b->self, sizeof(a->peer[0]) * o->t.nb_qp);
	memcpy(b->peer, a->self, sizeof(b->peer[0]) * o->t.nb_qp);
	a->peer_end = b;
	b->peer_end = a;
	return 0;
}

/* --run_infinitely's report of a period: the row of the ends' sum. */
static int
print_period(void *arg, const struct perf_result *r, int n)
{
	const struct perf_opts *o = arg;
	struct perf_result sum = r[0];

	if (n > 1)
		perf_sum_results(&sum, &r[0], &r[1]);
	perf_print_result(o, &sum, &(struct perf_stage_set){ 0 });
	return 0;
}

/* One bandwidth size between a and b: a sends, b too with -b. res[0] is a's, res[1] b's. */
static int
loopback_bw(struct perf_end *a, struct perf_end *b, const struct perf_opts *o, uint32_t size,
	    struct perf_result *res)
{
	const struct perf_test *t = &o->t;
	struct perf_end *ends[2] = { a, b };
	int send = perf_test_uses(t, OP_SEND);

	a->sends = 1;
	b->sends = t->duplex;
	a->receives = send && t->duplex;
	b->receives = send;
	if (perf_run_bw(ends, b->sends || b->receives ? 2 : 1, o, size, res, print_period, (void *)o) != 0)
		return -1;
	if (t->verify && perf_check_target(b, t, size, a->posted) != 0)
		return -1;
	return t->verify && t->duplex ? perf_check_target(a, t, size, b->posted) : 0;
}

/* One size: run it, print its result; its stages go to the sweep's table. */
static int
loopback_size(struct perf_end *a, struct perf_end *b, const struct perf_opts *o, uint32_t size,
	      struct perf_stage_set *sweep)
{
	const struct perf_test *t = &o->t;
	struct perf_end *ends[2] = { a, b };
	struct perf_result res[2] = { 0 }, sum;
	static struct perf_stage_set before, st;
	int ret;

	perf_stages_snapshot(&before, ends, 2);
	perf_prepare_target(b, t, size);
	perf_prepare_target(a, t, size);
	ret = perf_test_uses(t, OP_SEND) ? perf_post_receives(b) || perf_post_receives(a) : 0;
	if (ret == 0)
		ret = t->mode == MODE_BW ? loopback_bw(a, b, o, size, res) : perf_run_lat(a, b, o, size, &res[0]);
	if (ret != 0)
		return -1;
	perf_stages_snapshot(&st, ends, 2);
	perf_stages_since(&st, &before);
	res[0].verified = res[1].verified = t->verify;
	sum = res[0];
	if (t->duplex)
		perf_sum_results(&sum, &res[0], &res[1]);
	if (!t->run_infinitely)
		perf_print_result(o, &sum, &st);
	perf_print_both(o, &res[0], &res[1]);
	perf_hist_add(size, &st);
	perf_stages_add(sweep, &st);
	return perf_check_limits(o, &sum);
}

static int
run_loopback(const struct perf_opts *o)
{
	static struct perf_end a, b;
	static struct perf_stage_set sweep;
	int ret = open_pair(&a, &b, o);

	for (uint32_t size = perf_next_size(&o->t, 0); ret == 0 && size != 0; size = perf_next_size(&o->t, size)) {
		ret = perf_end_connect_all(&a, o) || perf_end_connect_all(&b, o);
		if (ret == 0 && size == perf_next_size(&o->t, 0))
			perf_print_header(o, &a);
		if (ret == 0)
			ret = loopback_size(&a, &b, o, size, &sweep);
		if (ret == 0)
			ret = perf_end_quiesce(&a) || perf_end_quiesce(&b);
	}
	if (ret == 0) {
		perf_print_footer(o);
		perf_stages_print(o, &sweep, o->t.sweep ? "the whole sweep" : "the run");
	}
	if (o->wait_destroy_s != 0)
		sleep(o->wait_destroy_s);
	perf_end_close(&a);
	perf_end_close(&b);
	return ret;
}

/* ------------------------------------------------------------------------------------------------------ */
/* The engine                                                                                               */

/*
 * rnic-perf polls all the time, so its own lcore can carry engine stages (manual progress). Below 4 KB the
 * host interface's stages (doorbell, requester, completer) go beside the posts and polls that share their
 * lines, the wire's on a worker; from 4 KB the copies dominate and every stage goes on the worker, leaving
 * the application's lcore to --verify (doc/performance.md has the measurements). With -e this thread sleeps:
 * every stage on the worker. The user's --stages (or a --config file's) overrides the choice.
 */
static int
choose_stages(struct rnic_tool_cmdline *cl, const struct perf_opts *o)
{
	const char *map = o->t.events || (o->t.size >= 4096 && !o->t.sweep) ? "one" : "host";

	if (rnic_tool_has_engine_opt(cl, "--stages"))
		return 0;
	return rnic_tool_engine_default(cl, "--stages", map) == 0 ? 0 : perf_fail("too many arguments");
}

/* Without -m, perftest's default: the MTU of the device's port. */
static int
default_mtu(struct perf_opts *o)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_context *ctx = NULL;
	struct rnic_port_attr port;
	int ret = -1;

	for (int i = 0; list != NULL && list[i] != NULL && ctx == NULL; i++)
		if (o->dev_name == NULL || strcmp(rnic_get_device_name(list[i]), o->dev_name) == 0)
			ctx = rnic_open_device(list[i]);
	if (ctx != NULL && rnic_query_port(ctx, 1, &port) == 0) {
		o->t.mtu = port.active_mtu;
		ret = 0;
	}
	if (ctx != NULL)
		rnic_close_device(ctx);
	rnic_free_device_list(list);
	return ret == 0 ? 0 : perf_fail(o->dev_name != NULL ? "-d %s: no such device" : "no device", o->dev_name);
}

static int
run(struct perf_opts *o)
{
	int ret = perf_hist_open(o) || perf_out_json_open(o) ? -1 : 0;

	if (ret == 0 && !o->mtu_given)
		ret = default_mtu(o);
	if (ret == 0 && o->t.conn == RNIC_QPT_UD && !o->t.sweep && o->t.size > (128u << o->t.mtu))
		ret = perf_fail("UD messages are at most one MTU (%u bytes)", 128u << o->t.mtu);
	if (ret == 0)
		ret = o->role == ROLE_SERVER ? perf_run_server(o) : o->role == ROLE_CLIENT ? perf_run_client(o) :
		      run_loopback(o);
	if (perf_hist_close() != 0 || perf_out_json_close() != 0)
		ret = -1;
	return ret;
}

int
main(int argc, char **argv)
{
	static struct rnic_tool_cmdline cl;
	static struct perf_opts o;
	int ret;

	if (rnic_tool_split("rnic-perf", argc, argv, &cl) != 0)
		return 2;
	ret = perf_parse_args(cl.app_argc, cl.app_argv, &o);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	if (choose_stages(&cl, &o) != 0)
		return 2;
	catch_signals();
	ret = rnic_engine_init(cl.init_argc, cl.init_argv);
	if (ret < 0) {
		perf_fail("the engine did not start: %s (its options: rnic-perf --help-engine; EAL's: "
			  "rnic-perf -- --help)", strerror(-ret));
		return ret == -EINVAL ? 2 : 1;
	}
	if (rnic_engine_start() != 0) {
		perf_fail("the engine's lcores did not start");
		rnic_engine_fini();
		return 1;
	}
	ret = run(&o);
	/* The last ACKs on their way before the ports go (this lcore's stages may carry them). */
	for (double t0 = perf_now_s(); perf_now_s() - t0 < 0.1;)
		if (rnic_engine_progress() == 0)
			usleep(1000);
	perf_remote_goodbye(&o, OOB_BEFORE_STOP);
	rnic_engine_stop();
	perf_remote_goodbye(&o, OOB_STOPPED);
	rnic_engine_fini();
	perf_remote_goodbye(&o, OOB_DOWN);
	return ret == 0 ? 0 : 1;
}
