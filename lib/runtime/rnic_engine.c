/* SPDX-License-Identifier: BSD-3-Clause
 * The engine: EAL and port bring-up, the devices on the ports, and its start and stop. This is what the
 * kernel driver and the firmware do for a hardware RNIC; the parts live beside it (doc/architecture.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "rnic_cq.h"
#include "rnic_provider.h"
#include "rnic_fault.h"
#include "rnic_neigh.h"
#include "rnic_runtime.h"

struct rnic_runtime rnic_rt;

/* Headers around a RoCEv2 payload inside the IP MTU: IPv6 40, UDP 8, BTH 12, RETH 16, ICRC 4. */
#define ROCE_OVERHEAD 80

/* The largest RoCE MTU up to the one asked for whose frames fit the kernel interface of the port (a veth
 * or a NIC under AF_PACKET has the kernel's MTU, 1500 by default), the frames its driver carries
 * (net_af_packet's framesz=) and its mbufs (net_af_xdp's are a page each); ports without either keep it. */
static enum rnic_mtu
fit_mtu(uint16_t port_id, const struct rte_mempool *pool, enum rnic_mtu mtu)
{
	int link = rnic_port_interface_mtu(port_id), frame = rnic_port_max_frame(port_id);
	int room = (int)rnic_port_mbuf_frame(port_id, pool);
	enum rnic_mtu fit = mtu;

	while (fit > RNIC_MTU_256 && (128 << fit) + ROCE_OVERHEAD + RTE_ETHER_HDR_LEN > room)
		fit--;
	if (fit != mtu)
		RNIC_LOG(INFO, "port %u: its mbufs hold frames of %d bytes: RoCE MTU %d", port_id, room, 128 << fit);
	mtu = fit;

	while (link > 0 && fit > RNIC_MTU_256 && (128 << fit) + ROCE_OVERHEAD > link)
		fit--;
	if (fit != mtu)
		RNIC_LOG(INFO, "port %u: interface MTU %d: RoCE MTU %d", port_id, link, 128 << fit);
	if (frame > 0 && (128 << fit) + ROCE_OVERHEAD + RTE_ETHER_HDR_LEN > frame) {
		while (fit > RNIC_MTU_256 && (128 << fit) + ROCE_OVERHEAD + RTE_ETHER_HDR_LEN > frame)
			fit--;
		RNIC_LOG(INFO, "port %u: net_af_packet frames hold %d bytes: RoCE MTU %d (MTU 4096 needs "
			 RNIC_AF_PACKET_JUMBO_ARGS ")", port_id, frame, 128 << fit);
	}
	return fit;
}

/* Default addresses of the loopback pair's two devices; they exist only inside this process. */
static const char *const default_ip[2] = { "10.77.0.1", "10.77.0.2" };

/* Whether every shard's parser runs on one lcore: the fault layer's state of a port (its link, shared by
 * the port's RX queues) belongs to the one lcore polling them (rnic_fault.c). */
static int
parsers_on_one_lcore(const struct rnic_stage_map *m)
{
	for (uint16_t k = 1; k < m->nb_shards; k++)
		if (m->lcore[RNIC_STAGE_PARSER][k] != m->lcore[RNIC_STAGE_PARSER][0])
			return 0;
	return 1;
}

/* The ports the arguments name, or the loopback pair: a ring per queue when parsers read its queues from
 * several lcores, else one per direction (cheaper). */
static int
resolve_ports(struct rnic_engine_args *args, const struct rnic_stage_map *map, uint16_t *port_id,
	      uint16_t nb_queues)
{
	int ret;

	if (args->nb_ports == 0) {
		ret = rnic_port_loopback_create(&rnic_rt.loopback, "rnic_lb", (int)rte_socket_id(), nb_queues,
						!parsers_on_one_lcore(map));
		if (ret < 0)
			return ret;
		rnic_rt.have_loopback = 1;
		port_id[0] = rnic_rt.loopback.port[0];
		port_id[1] = rnic_rt.loopback.port[1];
		args->nb_ports = 2;
		return 0;
	}
	for (unsigned int i = 0; i < args->nb_ports; i++) {
		if (rte_eth_dev_get_port_by_name(args->port_name[i], &port_id[i]) != 0) {
			RNIC_LOG(ERR, "--port %s: no such ethdev (give it to EAL with --vdev or -a)",
				 args->port_name[i]);
			return -ENODEV;
		}
	}
	return 0;
}

/* Whether the map runs every shard's requester (and completer, which shares its TX queue) and responder on one
 * lcore: then they may share one TX queue, which only one lcore may use. */
static int
shards_share_lcores(const struct rnic_stage_map *m)
{
	for (uint16_t k = 0; k < m->nb_shards; k++)
		if (m->lcore[RNIC_STAGE_REQUESTER][k] != m->lcore[RNIC_STAGE_RESPONDER][k])
			return 0;
	return 1;	/* "devices" maps: each device's stages on one lcore */
}

/*
 * Queue pairs per port: two per shard (a requester and a responder TX queue, so two lcores never share one).
 * A port that offers fewer but one per shard (net_af_xdp on a veth has one: veth reports no combined
 * channels) gets one per shard when the map lets each shard's stages share it; else the port is refused
 * with the vdev argument to give (rnic_port_start).
 */
static uint16_t
port_queues(const uint16_t *port_id, unsigned int nb_ports, const struct rnic_stage_map *m, uint8_t *shared)
{
	uint16_t two = (uint16_t)(2 * RTE_MAX(m->nb_shards, (uint16_t)1));

	*shared = 0;
	for (unsigned int i = 0; i < nb_ports; i++) {
		int offered = rnic_port_queue_pairs(port_id[i]);

		if (offered >= two || offered < two / 2 || !shards_share_lcores(m))
			continue;
		RNIC_LOG(INFO, "port %u has %d queue pairs: each shard's requester and responder share one", port_id[i],
			 offered);
		*shared = 1;
	}
	return *shared ? two / 2 : two;
}

static int
create_devices(struct rnic_engine_args *args, const struct rnic_stage_map *map, uint16_t *nb_queues)
{
	uint16_t port_id[RNIC_MAX_DEVICES];
	struct rnic_device_conf conf;
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	uint8_t shared;
	int ret;

	ret = resolve_ports(args, map, port_id, *nb_queues);
	if (ret < 0)
		return ret;
	*nb_queues = port_queues(port_id, args->nb_ports, map, &shared);
	for (unsigned int i = 0; i < args->nb_ports; i++) {
		int socket_id = rte_eth_dev_socket_id(port_id[i]);

		snprintf(pool_name, sizeof(pool_name), "rnic_pool%u", i);
		/* The private area keeps the parser's descriptor of a received frame (rnic_mbuf_desc). */
		rnic_rt.pool[i] = rnic_port_pool_create(port_id[i], pool_name, args->mbufs,
							RTE_ALIGN(sizeof(struct rnic_pkt_desc), RTE_MBUF_PRIV_ALIGN),
							socket_id < 0 ? (int)rte_socket_id() : socket_id);
		if (rnic_rt.pool[i] == NULL) {
			RNIC_LOG(ERR, "port %u: cannot create a pool of %u mbufs: %s (more memory: EAL -m)",
				 port_id[i], args->mbufs, rte_strerror(rte_errno));
			return -ENOMEM;
		}
		ret = rnic_port_start(port_id[i], rnic_rt.pool[i], DEFAULT_PORT_DESC, *nb_queues);
		if (ret < 0)
			return ret;
		rnic_rt.started_port[rnic_rt.nb_started_ports++] = port_id[i];

		memset(&conf, 0, sizeof(conf));
		snprintf(conf.name, sizeof(conf.name), "rnic%u", i);
		conf.port_id = port_id[i];
		conf.shared_tx_queue = shared;
		conf.mtu = fit_mtu(port_id[i], rnic_rt.pool[i], args->mtu);
		conf.lim = args->lim;
		conf.cc = args->cc;
		/* Room for a doorbell from every QP at once: a post never finds the ring full for lack of it. */
		conf.doorbell_ring_size = RTE_MAX(16384u, rte_align32pow2(args->lim.max_qp + 1));
		conf.gid_count = 1;
		if (i < args->nb_ips) {
			memcpy(conf.gid, args->ip[i], sizeof(conf.gid));
			conf.gid_count = (int)args->nb_gids[i];
		} else if (rnic_rt.have_loopback)
			rnic_parse_gid(default_ip[i], &conf.gid[0]);
		else if (rnic_port_interface_gid(port_id[i], conf.gid[0].raw) != 0) {
			RNIC_LOG(ERR, "port %s: no --ip given for it, and no interface address to take", args->port_name[i]);
			return -EINVAL;
		}
		ret = rnic_device_create(&conf, &rnic_rt.device[i]);
		if (ret < 0)
			return ret;
		rnic_rt.device[i]->loopback = (uint8_t)rnic_rt.have_loopback;
		rnic_rt.nb_devices++;
		ret = rnic_engine_device_add(rnic_rt.device[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* --pcap: an interface per device's port, named after the device. */
static int
start_capture(const struct rnic_capture_conf *conf, uint16_t nb_queues)
{
	struct rnic_capture_port ports[RNIC_MAX_DEVICES];

	for (int i = 0; i < rnic_rt.nb_devices; i++)
		ports[i] = (struct rnic_capture_port){ .port_id = rnic_rt.started_port[i],
						       .device = rnic_rt.device[i]->name };
	return rnic_capture_start(conf, ports, (unsigned int)rnic_rt.nb_devices, nb_queues, (int)rte_socket_id());
}

static void
release_devices(void)
{
	rnic_engine_devices_clear();
	for (int i = rnic_rt.nb_devices - 1; i >= 0; i--) {
		for (uint16_t k = 0; k < rnic_rt.device[i]->nb_shards; k++)
			rnic_pipeline_free(rnic_rt.device[i]->pipeline[k]);
		rnic_device_destroy(rnic_rt.device[i]);
	}
	rnic_rt.nb_devices = 0;
	rnic_capture_stop();
	if (rnic_rt.pdump)
		rnic_capture_pdump_uninit();
	rnic_rt.pdump = 0;
	rnic_fault_detach_all();
	for (unsigned int i = 0; i < rnic_rt.nb_started_ports; i++)
		rnic_port_close(rnic_rt.started_port[i]);
	rnic_rt.nb_started_ports = 0;
	if (rnic_rt.have_loopback)
		rnic_port_loopback_free(&rnic_rt.loopback);
	rnic_rt.have_loopback = 0;
	for (unsigned int i = 0; i < RNIC_MAX_DEVICES; i++) {
		rte_mempool_free(rnic_rt.pool[i]);
		rnic_rt.pool[i] = NULL;
		rnic_rt.device[i] = NULL;
	}
	rnic_rcu_free();
}

/*
 * EAL's runtime directory (/var/run/dpdk/PREFIX) is removed when the process exits, if it is empty then: EAL
 * makes it even with --no-shconf and leaves it behind, one per file prefix, run after run. Its telemetry
 * socket in it goes at exit (an atexit handler of EAL's), so the removal is one too, registered before EAL's
 * runs first: handlers run in the reverse order. A directory that still holds something stays.
 */
static char rnic_runtime_dir[PATH_MAX];

static int exit_handler;	/* remove_runtime_dir is registered */

static void
remove_runtime_dir(void)
{
	if (rnic_runtime_dir[0] != '\0')
		rmdir(rnic_runtime_dir);	/* fails, harmlessly, while it holds anything */
}

static void
eal_cleanup(void)
{
	snprintf(rnic_runtime_dir, sizeof(rnic_runtime_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
}

int
rnic_engine_init(int argc, char **argv)
{
	struct rnic_engine_args args;
	struct rnic_stage_map map;
	uint16_t nb_queues;
	int consumed, ret;

	if (rnic_rt.initialized || rnic_provider_remote()) {
		RNIC_LOG(ERR, "rnic_engine_init: the engine is already initialised");
		return -EALREADY;
	}
	/* Client mode: rnicd owns the ports and the engine; this process needs neither EAL nor hugepages. */
	if (getenv("RNIC_DAEMON") != NULL && getenv("RNIC_DAEMON")[0] != '\0') {
		const struct rnic_provider *remote = rnic_provider_find(1);

		ret = remote != NULL ? remote->init(getenv("RNIC_DAEMON")) : -ENOTSUP;
		if (ret == 0)
			rnic_provider_set(remote);
		return ret < 0 ? ret : argc;
	}
	if (!exit_handler)
		exit_handler = atexit(remove_runtime_dir) == 0;
	consumed = rte_eal_init(argc, argv);
	if (consumed < 0) {
		ret = -rte_errno;
		RNIC_LOG(ERR, "EAL initialisation failed: %s", rte_strerror(rte_errno));
		return ret;
	}
	/* What EAL left starts with "--" (rte_eal_init consumes it) or is the application's. */
	ret = rnic_engine_parse_args(argc - consumed, argv + consumed, &args);
	if (ret == 0)
		ret = rnic_stage_map_of(&args, &map);
	/* Two queues per shard and direction: the shard's requester and responder each transmit on their own. */
	nb_queues = (uint16_t)(2 * RTE_MAX(map.nb_shards, (uint16_t)1));
	if (ret == 0)
		ret = rnic_rcu_create();
	if (ret == 0) {
		rnic_latency_on = !args.no_latency;
		rnic_rt.idle_sleep_us = args.idle_sleep_us;
		ret = rnic_latency_init();
	}
	if (ret == 0)
		ret = create_devices(&args, &map, &nb_queues);
	if (ret == 0 && args.nb_faults > 0 && !parsers_on_one_lcore(&map)) {
		RNIC_LOG(ERR, "--fault: a port's faults run on the one lcore that polls its RX queues: give the "
			 "parsers one lcore (parser=L), not one per shard");
		ret = -EINVAL;
	}
	if (ret == 0 && args.nb_faults > 0)
		ret = rnic_fault_attach_specs(args.fault, args.nb_faults, rnic_rt.started_port,
					      rnic_rt.nb_started_ports, nb_queues);
	if (ret == 0 && args.capture.path != NULL)
		ret = start_capture(&args.capture, nb_queues);
	/* dpdk-dumpcap and dpdk-proc-info attach as secondary processes: not with --no-shconf. */
	if (ret == 0)
		rnic_rt.pdump = rnic_capture_pdump_init(rnic_rt.pool[0]) == 0;
	if (ret == 0) {
		rnic_rt.initialized = 1;	/* rnic_engine_add_stage needs it */
		ret = rnic_stage_map_apply(&map);
		rnic_rt.initialized = ret == 0;
	}
	if (ret < 0) {
		rnic_cq_set_progress(NULL);
		release_devices();
		eal_cleanup();
		return ret;
	}
	rnic_rt.initialized = 1;
	rnic_provider_set(rnic_provider_find(0));
	rnic_telemetry_register();
	/* Every argument after argv[0] was either EAL's or the engine's. */
	return argc - 1;
}

int
rnic_engine_fini(void)
{
	if (rnic_provider_remote()) {
		const struct rnic_provider *remote = rnic_provider_get();

		rnic_provider_set(NULL);
		remote->fini();
		return 0;
	}
	if (!rnic_rt.initialized)
		return -EINVAL;
	for (int i = 0; i < rnic_rt.nb_devices; i++) {
		if (rnic_rt.device[i]->open_contexts != 0) {
			RNIC_LOG(ERR, "rnic_engine_fini: device %s still has open contexts", rnic_rt.device[i]->name);
			return -EBUSY;
		}
	}
	rnic_engine_stop();
	release_devices();
	memset(rnic_rt.lcore, 0, sizeof(rnic_rt.lcore));
	rnic_cq_set_progress(NULL);
	rnic_neigh_static_clear();
	rnic_rt.initialized = 0;
	rnic_provider_set(NULL);
	eal_cleanup();
	return 0;
}
