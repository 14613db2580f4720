/* SPDX-License-Identifier: BSD-3-Clause
 * Starts and stops the engine with the arguments it is given: exit 0 when rnic_engine_init accepts them,
 * 1 when it refuses them (with its error logged). Meson runs it with good and bad engine arguments.
 */
#include <stdio.h>

#include "rnic.h"

int
main(int argc, char **argv)
{
	int ret = rnic_engine_init(argc, argv);

	if (ret < 0) {
		fprintf(stderr, "engine_args: rnic_engine_init refused the arguments (%d)\n", ret);
		return 1;
	}
	return rnic_engine_fini() == 0 ? 0 : 2;
}
