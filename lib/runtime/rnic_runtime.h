/* SPDX-License-Identifier: BSD-3-Clause
 * The runtime's own header (not for the modules below it): the engine's state and how its parts - arguments,
 * stage map, lcore loop and RCU, neighbours - hand it to each other (doc/architecture.md).
 */
#ifndef RNIC_RUNTIME_H
#define RNIC_RUNTIME_H

#include <pthread.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>

#include "rnic_capture.h"
#include "rnic_pipeline.h"
#include "rnic_port.h"
#include "rnic_priv.h"

#define RNIC_STAGE_BUDGET 32
#define DEFAULT_MBUFS 8191
#define DEFAULT_PORT_DESC 1024
#define MAX_CONFIG_ARGS 256
#define MAX_CONFIG_BYTES 16384
#define IDLE_LOOPS_BEFORE_SLEEP 1024	/* --idle-sleep: polling loops without work before the first sleep */
#define RNIC_RETIRE_QUEUE_SIZE 1024	/* releases waiting for a late lcore (rnic_engine_retire), at most */
#define MAX_IDLE_SLEEP_US 10000		/* well below rnic_engine_quiesce's 1 s: a sleeping lcore still quiesces */

/* One lcore's stages; aligned, as each lcore writes its own cycle counts on every loop. */
struct rnic_lcore_stages {
	unsigned int count;
	struct rnic_stage stage[RNIC_MAX_STAGES_PER_LCORE];
	uint64_t busy_cycles;		/* loops in which a stage found work */
	uint64_t idle_cycles;		/* loops in which none did */
} __rte_cache_aligned;

/* Engine arguments, parsed from what follows "--" in rnic_engine_init's argv. */
struct rnic_engine_args {
	unsigned int nb_ports;			/* 0: the embedded loopback pair */
	char port_name[RNIC_MAX_DEVICES][RTE_ETH_NAME_MAX_LEN];
	unsigned int nb_ips;			/* devices with --ip */
	union rnic_gid ip[RNIC_MAX_DEVICES][RNIC_GID_TBL_LEN];	/* each device's GID table, GID 0 first */
	unsigned int nb_gids[RNIC_MAX_DEVICES];
	enum rnic_mtu mtu;
	uint32_t mbufs;
	struct rnic_limits lim;
	struct rnic_cc_params cc;		/* --cc */
	const char *stages;			/* NULL: "two" with two worker lcores or more, else "one" */
	struct rnic_capture_conf capture;	/* --pcap FILE and how: every frame of every port, by default */
	int capture_options;			/* --pcap-snaplen, --pcap-count or --pcap-filter given */
	const char *fault[RNIC_MAX_DEVICES + 1];	/* fault injection on the ports' RX (rnic_fault.h) */
	unsigned int nb_faults;
	int no_latency;				/* no per-stage latency stamps */
	uint32_t idle_sleep_us;			/* 0: poll without pause */
};

/* Where each stage runs: per stage, one lcore per shard (the doorbell and parser stages: one lcore); or, for
 * the "devices" map, every stage of device i on the i-th engine lcore (rnic_engine_lcore_order). */
struct rnic_stage_map {
	uint16_t nb_shards;		/* 0: no data path (no engine lcore) */
	uint8_t per_device;
	unsigned int nb[RNIC_STAGE_MAX];
	unsigned int lcore[RNIC_STAGE_MAX][RNIC_MAX_SHARDS];
	unsigned int nb_device_lcores;	/* "devices=L+L...": device i on the i-th (cyclically) */
	unsigned int device_lcore[RNIC_MAX_DEVICES];
};

/* The engine's state: the ports and devices it brought up, and each lcore's stages. Whether the lcores run
 * and the RCU state they report to are in rnic_engine_state (rnic_priv.h), for the modules below: worker
 * lcores report a quiescent state after every loop iteration (rnic_engine_quiesce); the main lcore is online
 * only while rnic_engine_progress runs its stages. */
struct rnic_runtime {
	int initialized;
	uint32_t idle_sleep_us;		/* --idle-sleep: an idle worker lcore sleeps this long per loop */
	int have_loopback;
	struct rnic_loopback loopback;
	unsigned int nb_started_ports;
	uint16_t started_port[RNIC_MAX_DEVICES];
	int nb_devices;
	struct rnic_device *device[RNIC_MAX_DEVICES];
	struct rte_mempool *pool[RNIC_MAX_DEVICES];
	struct rnic_lcore_stages lcore[RTE_MAX_LCORE];
	int pdump;			/* dpdk-dumpcap may attach (rte_pdump): a shared configuration */
};

extern struct rnic_runtime rnic_rt;

/* rnic_engine_args.c: the engine arguments (argv after EAL's, --config FILE expanded into words). */
int rnic_engine_parse_args(int argc, char **argv, struct rnic_engine_args *args);
int rnic_parse_gid(const char *text, union rnic_gid *gid);
int rnic_parse_u32(const char *opt, const char *text, uint32_t min, uint32_t max, uint32_t *out);

/* rnic_stage_map.c: the stage map of the arguments, then each device's pipelines placed by it. */
int rnic_stage_map_of(const struct rnic_engine_args *args, struct rnic_stage_map *m);
int rnic_stage_map_apply(const struct rnic_stage_map *m);

/* rnic_lcore.c: the RCU state the worker lcores report to and its defer queue (rnic_engine_retire). */
int rnic_rcu_create(void);
void rnic_rcu_free(void);

/* rnic_neighbours.c: --neigh and the neighbour thread (ARP/ND, rnic_neigh.h). */
int rnic_neighbours_add(const char *text);
int rnic_neigh_thread_start(void);
void rnic_neigh_thread_stop(void);

#endif /* RNIC_RUNTIME_H */
