/* SPDX-License-Identifier: BSD-3-Clause
 * rnic-crcbench: the CRC-32 candidates for the ICRC, measured in one run against a memcpy baseline.
 * Prints one JSON line per (implementation, size): cycles per buffer, GB/s, and the ratio to memcpy.
 *   rnic-crcbench [EAL args]      e.g. rnic-crcbench --no-huge -m 64 --no-pci --no-shconf -l 0
 */
#include <stdio.h>
#include <string.h>

#include <isa-l/crc.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_net_crc.h>

#include "rnic_version.h"

#define ITERATIONS 200000
#define MAX_SIZE 4096

static uint8_t src[MAX_SIZE] __rte_cache_aligned;
static uint8_t dst[MAX_SIZE] __rte_cache_aligned;
static volatile uint32_t sink;

static uint32_t
run_dpdk(const uint8_t *buf, uint32_t len)
{
	return rte_net_crc_calc(buf, len, RTE_NET_CRC32_ETH);
}

static uint32_t
run_isal(const uint8_t *buf, uint32_t len)
{
	return crc32_gzip_refl(0, buf, len);
}

static uint32_t
run_memcpy(const uint8_t *buf, uint32_t len)
{
	memcpy(dst, buf, len);
	return dst[len - 1];
}

static const struct {
	const char *name;
	uint32_t (*fn)(const uint8_t *buf, uint32_t len);
} impls[] = {
	{ "memcpy", run_memcpy },
	{ "rte_net_crc", run_dpdk },
	{ "isal_crc32_gzip_refl", run_isal },
};

int
main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 64, 256, 1024, 4096 };
	double hz;

	if (rnic_version_asked(argc, argv)) {
		rnic_print_version("rnic-crcbench");
		return 0;
	}
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "rnic-crcbench: EAL initialisation failed\n");
		return 1;
	}
	rte_net_crc_set_alg(RTE_NET_CRC_AVX512);	/* falls back to SSE4.2/PCLMULQDQ where AVX-512 is absent */
	for (uint32_t i = 0; i < MAX_SIZE; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	if (run_dpdk(src, MAX_SIZE) != run_isal(src, MAX_SIZE)) {
		fprintf(stderr, "rnic-crcbench: the two CRC implementations disagree\n");
		return 1;
	}
	hz = (double)rte_get_tsc_hz();
	for (unsigned int s = 0; s < RTE_DIM(sizes); s++) {
		double base_cycles = 0;

		for (unsigned int i = 0; i < RTE_DIM(impls); i++) {
			uint64_t start = rte_rdtsc_precise();

			for (unsigned int it = 0; it < ITERATIONS; it++)
				sink = impls[i].fn(src, sizes[s]);
			double cycles = (double)(rte_rdtsc_precise() - start) / ITERATIONS;

			if (i == 0)
				base_cycles = cycles;
			printf("{\"impl\": \"%s\", \"bytes\": %u, \"cycles\": %.1f, \"gbytes_per_s\": %.2f, "
			       "\"vs_memcpy\": %.2f}\n", impls[i].name, sizes[s], cycles,
			       sizes[s] / (cycles / hz) / 1e9, cycles / base_cycles);
		}
	}
	rte_eal_cleanup();
	return 0;
}
