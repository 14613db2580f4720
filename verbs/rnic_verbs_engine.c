/* SPDX-License-Identifier: BSD-3-Clause
 * The interposer's engine: what a kernel driver and firmware do for a hardware RNIC, done in the process on
 * its first verb (doc/verbs.md, "Two ways to run"). SOFTRNIC_ARGS holds EAL arguments, then "--" and engine
 * arguments, separated by blanks; unset, the embedded default below (two devices joined by a net_ring pair).
 * With RNIC_DAEMON=/path/to/socket, rnicd runs the engine instead and the program is its client
 * (rnic_engine_init chooses; lib/client): its registrations of ordinary memory move it onto memory shared
 * with the daemon, in place.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rnic_client.h"
#include "rnic_verbs.h"

/* The embedded default: one worker lcore runs the stages, so a program blocked in ibv_get_cq_event still
 * sees its traffic progress (with "--stages devices" on one lcore only its polls would move it). */
#define RNIC_VERBS_DEFAULT_ARGS "-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level=error"
#define RNIC_VERBS_MAX_ARGS 64

static pthread_once_t rnic_verbs_once = PTHREAD_ONCE_INIT;
static int rnic_verbs_engine_err;	/* 0: up; an errno: why not */
static int rnic_verbs_engine_running;

/* Splits a copy of args at blanks into argv (argv[0]: the program's name for EAL); returns argc or -1. */
static int
rnic_verbs_split_args(char *args, char **argv, int max)
{
	int argc = 0;
	char *save = NULL;

	argv[argc++] = (char *)"softrnic-verbs";
	for (char *tok = strtok_r(args, " \t\n", &save); tok != NULL; tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == max - 1)
			return -1;
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	return argc;
}

static int
rnic_verbs_engine_start(void)
{
	static char *argv[RNIC_VERBS_MAX_ARGS];
	const char *env = getenv("SOFTRNIC_ARGS");
	char defaults[sizeof(RNIC_VERBS_DEFAULT_ARGS) + 48];
	const char *daemon = getenv("RNIC_DAEMON");
	char *args;
	int argc, ret;

	/* rnicd's client: no EAL, no arguments; the program's buffers are not rnic_alloc_buf's. */
	if (daemon != NULL && daemon[0] != '\0') {
		argv[0] = (char *)"softrnic-verbs";
		rnic_client_move_in_place(1);
		ret = rnic_engine_init(1, argv);
		if (ret < 0)
			fprintf(stderr, "softrnic-verbs: cannot be a client of rnicd at RNIC_DAEMON=%s: %s\n", daemon,
				strerror(-ret));
		return ret < 0 ? -ret : 0;
	}
	/* The default's file prefix carries the PID: two programs on the embedded default never share one. */
	snprintf(defaults, sizeof(defaults), "%s --file-prefix softrnic-verbs-%d", RNIC_VERBS_DEFAULT_ARGS,
		 (int)getpid());
	if (env == NULL || env[0] == '\0')
		env = defaults;
	args = strdup(env);
	if (args == NULL)
		return ENOMEM;
	argc = rnic_verbs_split_args(args, argv, RNIC_VERBS_MAX_ARGS);	/* argv keeps pointing into args */
	if (argc < 0) {
		fprintf(stderr, "softrnic-verbs: SOFTRNIC_ARGS has more than %d arguments\n", RNIC_VERBS_MAX_ARGS - 2);
		free(args);
		return E2BIG;
	}
	ret = rnic_engine_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "softrnic-verbs: the engine does not start from SOFTRNIC_ARGS \"%s\": %s\n",
			env, strerror(-ret));
		return -ret;
	}
	ret = rnic_engine_start();
	if (ret < 0) {
		fprintf(stderr, "softrnic-verbs: the engine's stages do not start: %s\n", strerror(-ret));
		rnic_engine_fini();
		return -ret;
	}
	rnic_verbs_engine_running = 1;
	return 0;
}

static void
rnic_verbs_engine_once(void)
{
	rnic_verbs_engine_err = rnic_verbs_engine_start();
}

int
rnic_verbs_engine_up(void)
{
	pthread_once(&rnic_verbs_once, rnic_verbs_engine_once);
	return rnic_verbs_engine_err;
}

/* At exit: stop the stages, then release the ports and EAL if the program closed its contexts (a program
 * that exits with contexts open leaves them to the process's end, as the kernel would clean up). */
__attribute__((destructor)) static void
rnic_verbs_engine_down(void)
{
	if (!rnic_verbs_engine_running)
		return;
	rnic_verbs_engine_running = 0;
	rnic_engine_stop();
	rnic_engine_fini();
}
