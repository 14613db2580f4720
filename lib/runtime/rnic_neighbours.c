/* SPDX-License-Identifier: BSD-3-Clause
 * Neighbours: the --neigh arguments (static neighbours, rnic_neigh.h) and the neighbour thread that runs
 * ARP/ND for the devices with a port to a real network.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>

#include "rnic_neigh.h"
#include "rnic_runtime.h"

/* The neighbour thread while the engine runs: the devices it serves are those with a port to a real network
 * and a pipeline when the engine started. */
static struct {
	pthread_t thread;
	int running;
	unsigned int nb_devices;
	struct rnic_device *device[RNIC_MAX_DEVICES];
} neigh;

/* --neigh IP,MAC: a static neighbour (rnic_neigh_static_add). */
int
rnic_neighbours_add(const char *text)
{
	char ip[INET6_ADDRSTRLEN + 1];
	const char *comma = strrchr(text, ',');
	struct rte_ether_addr mac;
	union rnic_gid gid;

	if (comma == NULL || (size_t)(comma - text) >= sizeof(ip)) {
		RNIC_LOG(ERR, "--neigh %s: expected IP,MAC (at most %d)", text, RNIC_MAX_STATIC_NEIGHBORS);
		return -EINVAL;
	}
	snprintf(ip, sizeof(ip), "%.*s", (int)(comma - text), text);
	if (rnic_parse_gid(ip, &gid) != 0 || rte_ether_unformat_addr(comma + 1, &mac) != 0) {
		RNIC_LOG(ERR, "--neigh %s: expected IP,MAC", text);
		return -EINVAL;
	}
	if (rnic_neigh_static_add(&gid, mac.addr_bytes) != 0) {
		RNIC_LOG(ERR, "--neigh %s: expected IP,MAC (at most %d)", text, RNIC_MAX_STATIC_NEIGHBORS);
		return -EINVAL;
	}
	return 0;
}

#define NEIGH_TICK_US 1000		/* the neighbour thread's period: answers and timers are this late at most */

/* The neighbour thread: announce each device's address (gratuitous ARP, unsolicited NA), then answer, learn,
 * resolve and expire every tick. A control thread: it sleeps, and never touches a QP. */
static void *
neigh_loop(void *arg)
{
	RTE_SET_USED(arg);
	for (unsigned int i = 0; i < neigh.nb_devices; i++)
		rnic_neigh_announce(neigh.device[i]);
	while (__atomic_load_n(&neigh.running, __ATOMIC_ACQUIRE)) {
		uint64_t now = rte_get_tsc_cycles();

		for (unsigned int i = 0; i < neigh.nb_devices; i++)
			rnic_neigh_poll(neigh.device[i], now);
		rte_delay_us_sleep(NEIGH_TICK_US);
	}
	return NULL;
}

/* Devices whose port leads out of the process (not the loopback pair) have neighbours to resolve. */
int
rnic_neigh_thread_start(void)
{
	int ret;

	neigh.nb_devices = 0;
	for (int i = 0; i < rnic_rt.nb_devices; i++)
		if (!rnic_rt.device[i]->loopback && rnic_rt.device[i]->neigh != NULL)
			neigh.device[neigh.nb_devices++] = rnic_rt.device[i];
	if (neigh.nb_devices == 0)
		return 0;
	__atomic_store_n(&neigh.running, 1, __ATOMIC_RELEASE);
	ret = rte_ctrl_thread_create(&neigh.thread, "rnic-neigh", NULL, neigh_loop, NULL);
	if (ret != 0) {	/* a negative errno */
		neigh.running = 0;
		RNIC_LOG(ERR, "cannot start the neighbour thread: %s", strerror(-ret));
	}
	return ret;
}

void
rnic_neigh_thread_stop(void)
{
	if (!__atomic_load_n(&neigh.running, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&neigh.running, 0, __ATOMIC_RELEASE);
	pthread_join(neigh.thread, NULL);
}
