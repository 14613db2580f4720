/* SPDX-License-Identifier: BSD-3-Clause
 * The command line the engine-hosting tools share (rnic-perf, rnic-pingpong):
 *
 *   TOOL [tool options] [-- EAL options [-- engine options]]
 *
 * The tool's own options come first. The engine options most runs need (rnic_tool_engine_opts) may also be
 * given among them (but --port with a number: that is the tool's TCP port, as perftest's --port); every
 * engine option may follow a second "--". EAL options are MERGED with the defaults
 * (RNIC_TOOL_EAL_DEFAULTS): a default stays unless the user gives an option of the same kind (rnic_tool.c has
 * the table), so "-- --file-prefix p1" keeps --no-huge, -m 1024 and --no-pci.
 */
#ifndef RNIC_APP_TOOL_H
#define RNIC_APP_TOOL_H

#define RNIC_TOOL_MAX_ARGS 256

/* What the tools print as the EAL defaults (their usage texts). */
#define RNIC_TOOL_EAL_DEFAULTS "-l 0,1 --no-huge -m 1024 --no-pci --no-shconf --log-level=error"

/* The command line split up: the tool's own arguments, and rnic_engine_init's (EAL, "--", engine). */
struct rnic_tool_cmdline {
	int app_argc;
	char *app_argv[RNIC_TOOL_MAX_ARGS + 1];	/* argv[0] and the tool's own options */
	int init_argc;
	char *init_argv[RNIC_TOOL_MAX_ARGS + 1];	/* argv[0], EAL arguments, "--", engine arguments */
	int engine_at;				/* init_argv index of the first engine argument */
};

/* Split argv. 0, or -1 with the reason printed (a usage error). */
int rnic_tool_split(const char *tool, int argc, char **argv, struct rnic_tool_cmdline *c);

/* An engine argument the tool chooses: put before the user's, which (given directly or through --config)
 * override it. 0, or -1 when the argument list is full. */
int rnic_tool_engine_default(struct rnic_tool_cmdline *c, const char *name, const char *value);

/* Whether the user gave the engine option name (on the command line; a --config file is not read here). */
int rnic_tool_has_engine_opt(const struct rnic_tool_cmdline *c, const char *name);

/* The engine options a tool takes among its own (each with a value but --no-latency), for usage texts. */
extern const char rnic_tool_engine_opts_help[];

#endif /* RNIC_APP_TOOL_H */
