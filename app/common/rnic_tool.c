/* SPDX-License-Identifier: BSD-3-Clause
 * The shared command line of the engine-hosting tools (rnic_tool.h): the split into the tool's, EAL's and
 * the engine's arguments, and the merge of the user's EAL arguments with the defaults.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rnic_tool.h"

/* Engine options a tool takes among its own, with a value; --no-latency has none. The tools' --mtu is the
 * path MTU of their QPs, so the engine's --mtu (the ports') goes after the second "--". */
static const char *const engine_opts[] = {
	"--config", "--port", "--ip", "--neigh", "--mbufs", "--stages", "--pcap", "--pcap-snaplen", "--pcap-count",
	"--pcap-filter", "--fault", "--idle-sleep", "--max-qp", "--max-cq", "--max-cqe", "--max-mr", "--max-pd",
	"--max-qp-wr", "--max-sge", "--max-inline", "--window", NULL,
};
static const char engine_flag[] = "--no-latency";

const char rnic_tool_engine_opts_help[] =
	"  engine options (also accepted after a second \"--\", with every other engine option):\n"
	"      --config FILE, --port NAME, --ip ADDR, --neigh IP,MAC, --stages MAP, --pcap FILE,\n"
	"      --pcap-snaplen N, --pcap-count N, --pcap-filter F, --fault SPEC, --no-latency, --mbufs N,\n"
	"      --idle-sleep US, --max-qp N, --max-cq N, --max-cqe N, --max-mr N, --max-pd N, --max-qp-wr N,\n"
	"      --max-sge N, --max-inline N, --window BYTES (a --port that is a number is the tool's TCP port, perftest's)\n";

/*
 * The EAL defaults and the user options that replace each: an option of the same kind (-l and --lcores and
 * a coremask all choose lcores; -m and --socket-mem both size memory; hugepage options need hugepages; a
 * PCI allow or block list needs PCI; a named runtime directory (--file-prefix) is there to be attached to,
 * by telemetry clients, dpdk-proc-info or dpdk-dumpcap, which need the shared configuration).
 */
static const struct {
	const char *arg[2];
	const char *replaced_by[5];
} eal_defaults[] = {
	{ { "-l", "0,1" }, { "-l", "--lcores", "-c", "--coremask", NULL } },
	{ { "--no-huge", NULL }, { "--socket-mem", "--huge-dir", "--huge-unlink", "--socket-limit", NULL } },
	{ { "-m", "1024" }, { "-m", "--socket-mem", NULL } },
	{ { "--no-pci", NULL }, { "-a", "--allow", "-b", "--block", NULL } },
	{ { "--no-shconf", NULL }, { "--file-prefix", "--proc-type", NULL } },
	{ { "--log-level=error", NULL }, { "--log-level", NULL } },
};

/* Whether arg is option name: "--name", "--name=value", "-x" or "-xvalue" (a short option). */
static int
is_opt(const char *arg, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n) != 0)
		return 0;
	return arg[n] == '\0' || arg[n] == '=' || (name[1] != '-' && n == 2);
}

/* The index of engine option arg in engine_opts, -2 for the flag, -1 when it is not one. */
static int
engine_opt(const char *arg)
{
	if (strcmp(arg, engine_flag) == 0)
		return -2;
	for (int k = 0; engine_opts[k] != NULL; k++)
		if (is_opt(arg, engine_opts[k]))
			return k;
	return -1;
}

static int
add(char **list, int *n, char *arg, const char *tool)
{
	if (*n >= RNIC_TOOL_MAX_ARGS) {
		fprintf(stderr, "%s: more than %d arguments\n", tool, RNIC_TOOL_MAX_ARGS);
		return -1;
	}
	list[(*n)++] = arg;
	list[*n] = NULL;
	return 0;
}

/* Whether s is a number: the value of a --port that is a TCP port (perftest's, rnic-perf's -p), never an
 * ethdev's name (the engine's --port names a --vdev or a PCI address). */
static int
is_number(const char *s)
{
	if (s == NULL || *s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Whether argv[i] (an engine option's name, its value in it or next) is the tool's own: a numeric --port. */
static int
tools_port(char **argv, int i, int end)
{
	const char *eq = strchr(argv[i], '=');

	if (!is_opt(argv[i], "--port"))
		return 0;
	return eq != NULL ? is_number(eq + 1) : i + 1 < end && is_number(argv[i + 1]);
}

/* The tool's part (before the first "--"): its own options to app_argv, engine options to eng. */
static int
split_tool_part(const char *tool, char **argv, int end, struct rnic_tool_cmdline *c, char **eng, int *neng)
{
	for (int i = 1; i < end; i++) {
		int k = tools_port(argv, i, end) ? -1 : engine_opt(argv[i]);
		char *eq = strchr(argv[i], '=');
		int ret;

		if (k == -1) {
			ret = add(c->app_argv, &c->app_argc, argv[i], tool);
		} else if (k == -2) {
			ret = add(eng, neng, argv[i], tool);
		} else if (eq != NULL) {
			*eq = '\0';	/* --name=value as two words: the engine's --config expansion wants them so */
			ret = add(eng, neng, argv[i], tool) || add(eng, neng, eq + 1, tool);
		} else if (i + 1 >= end) {
			fprintf(stderr, "%s: %s: missing value\n", tool, argv[i]);
			return -1;
		} else {
			ret = add(eng, neng, argv[i], tool) || add(eng, neng, argv[i + 1], tool);
			i++;
		}
		if (ret != 0)
			return -1;
	}
	return 0;
}

/* Whether the user's EAL arguments (argv[from, to)) hold an option that replaces default d. */
static int
default_replaced(unsigned int d, char **argv, int from, int to)
{
	for (int i = from; i < to; i++)
		for (int k = 0; eal_defaults[d].replaced_by[k] != NULL; k++)
			if (is_opt(argv[i], eal_defaults[d].replaced_by[k]))
				return 1;
	return 0;
}

/* init_argv: argv[0], the defaults the user did not replace, the user's EAL arguments, "--". */
static int
merge_eal(const char *tool, char **argv, int from, int to, struct rnic_tool_cmdline *c)
{
	int ret = add(c->init_argv, &c->init_argc, argv[0], tool);

	for (unsigned int d = 0; ret == 0 && d < sizeof(eal_defaults) / sizeof(eal_defaults[0]); d++) {
		if (default_replaced(d, argv, from, to))
			continue;
		for (int k = 0; k < 2 && ret == 0 && eal_defaults[d].arg[k] != NULL; k++)
			ret = add(c->init_argv, &c->init_argc, (char *)(uintptr_t)eal_defaults[d].arg[k], tool);
	}
	for (int i = from; ret == 0 && i < to; i++)
		ret = add(c->init_argv, &c->init_argc, argv[i], tool);
	if (ret == 0)
		ret = add(c->init_argv, &c->init_argc, "--", tool);
	c->engine_at = c->init_argc;
	return ret;
}

int
rnic_tool_split(const char *tool, int argc, char **argv, struct rnic_tool_cmdline *c)
{
	static char *eng[RNIC_TOOL_MAX_ARGS + 1];
	int neng = 0, first = argc, second = argc, ret;

	memset(c, 0, sizeof(*c));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") != 0)
			continue;
		if (first == argc) {
			first = i;
		} else {
			second = i;
			break;
		}
	}
	ret = add(c->app_argv, &c->app_argc, argv[0], tool);
	if (ret == 0)
		ret = split_tool_part(tool, argv, first, c, eng, &neng);
	if (ret == 0)
		ret = merge_eal(tool, argv, first + 1 < argc ? first + 1 : argc, second, c);
	for (int i = 0; ret == 0 && i < neng; i++)
		ret = add(c->init_argv, &c->init_argc, eng[i], tool);
	for (int i = second + 1; ret == 0 && i < argc; i++)
		ret = add(c->init_argv, &c->init_argc, argv[i], tool);
	return ret;
}

int
rnic_tool_engine_default(struct rnic_tool_cmdline *c, const char *name, const char *value)
{
	if (c->init_argc + 2 > RNIC_TOOL_MAX_ARGS)
		return -1;
	memmove(&c->init_argv[c->engine_at + 2], &c->init_argv[c->engine_at],
		sizeof(c->init_argv[0]) * (size_t)(c->init_argc - c->engine_at + 1));
	c->init_argv[c->engine_at] = (char *)(uintptr_t)name;
	c->init_argv[c->engine_at + 1] = (char *)(uintptr_t)value;
	c->init_argc += 2;
	return 0;
}

int
rnic_tool_has_engine_opt(const struct rnic_tool_cmdline *c, const char *name)
{
	for (int i = c->engine_at; i < c->init_argc; i++)
		if (is_opt(c->init_argv[i], name))
			return 1;
	return 0;
}
