/* SPDX-License-Identifier: BSD-3-Clause
 * --version for the softrnic tools: softrnic's version (meson's project(version:), compiled in as
 * RNIC_VERSION) and the DPDK the tool runs on.
 */
#ifndef RNIC_VERSION_H
#define RNIC_VERSION_H

#include <stdio.h>
#include <string.h>

#include <rte_version.h>

/* Print "TOOL (softrnic) VERSION" and the DPDK version on stdout. */
static inline void
rnic_print_version(const char *tool)
{
	printf("%s (softrnic) %s\n%s\n", tool, RNIC_VERSION, rte_version());
}

/*
 * Whether the command line asks for the version: "--version" anywhere in it (before EAL sees an option it
 * does not know). The tool then prints it and exits 0.
 */
static inline int
rnic_version_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--version") == 0)
			return 1;
	return 0;
}

#endif /* RNIC_VERSION_H */
