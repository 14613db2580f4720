/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd: softrnic as a shared service beside a virtual switch (doc/rnicd.md). It owns the ports and the
 * engine's lcores and serves many application processes over a UNIX socket: control verbs as requests,
 * the data path through memory shared with each client. Runs in the foreground (systemd style); SIGTERM or
 * SIGINT ends every client session, stops the engine and exits 0.
 *
 *   rnicd [--socket PATH] [--config FILE] [--max-qp N] [--max-cq N] [--max-mr N] [--max-pd N]
 *         [--max-mem BYTES] [--dbq-size N] [--tenant SPEC]... [-- EAL arguments [-- engine arguments]]
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include "rnicd.h"

RTE_LOG_REGISTER(rnicd_logtype, rnicd, INFO);

#define DEFAULT_SOCKET "/run/rnicd.sock"
#define MAX_CLIENTS 1024
#define MAX_ARGS 128

struct rnicd rnicd = {
	.quota = {
		.max_pd = 16, .max_cq = 64, .max_qp = 64, .max_mr = 256,
		.max_bytes = 1ull << 30, .dbq_size = 4096,
	},
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static const char usage[] =
	"usage: rnicd [options] [-- EAL arguments [-- engine arguments]]\n"
	"  --socket PATH     UNIX socket clients connect to (default " DEFAULT_SOCKET ")\n"
	"  --config FILE     options from a file: one 'name value' per line, '#' comments\n"
	"  --max-qp N, --max-cq N, --max-mr N, --max-pd N   objects one client may hold\n"
	"  --max-mem BYTES   memory one client may share with the daemon (queues, CQs, registered buffers)\n"
	"  --dbq-size N      doorbells a client's queue holds (a power of two, at least --max-qp)\n"
	"  --tenant SPEC     quotas of a tenant over all its connections: default|uid=N|gid=N|cgroup=/path\n"
	"                    [max-conn N] [max-ctx N] [max-qp N] [max-cq N] [max-mr N] [max-pd N] [max-mem BYTES]\n"
	"  EAL default: -l 0,1 --no-huge -m 1024 --no-pci --file-prefix rnicd; engine arguments as\n"
	"  rnic_engine_usage (without --port: the embedded loopback pair rnic0/rnic1)\n"
	"  clients: RNIC_DAEMON=PATH in their environment\n";

static char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)] = DEFAULT_SOCKET;

/* ------------------------------------------------------------------------------------------------------ */
/* Options and the configuration file                                                                       */

static int
parse_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < min || v > max) {
		fprintf(stderr, "rnicd: --%s: '%s' is not a number in %llu..%llu\n", name, text,
			(unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int
set_u32(const char *name, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int ret = parse_u64(name, text, min, max, &v);

	if (ret == 0)
		*out = (uint32_t)v;
	return ret;
}

int
rnicd_parse_number(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_u64(name, text, min, max, out);
}

static int parse_config(const char *file, int depth);

/* One option by name (command line or configuration file). */
static int
set_option(const char *name, const char *value, int depth)
{
	struct rnicd_quota *q = &rnicd.quota;

	if (strcmp(name, "socket") == 0) {
		if (strlen(value) == 0 || strlen(value) >= sizeof(socket_path)) {
			fprintf(stderr, "rnicd: --socket: '%s': empty or too long\n", value);
			return -EINVAL;
		}
		snprintf(socket_path, sizeof(socket_path), "%s", value);
		return 0;
	}
	if (strcmp(name, "config") == 0)
		return parse_config(value, depth + 1);
	if (strcmp(name, "tenant") == 0)
		return rnicd_tenant_config("--tenant", value);
	if (strcmp(name, "max-qp") == 0)
		return set_u32(name, value, 0, 65536, &q->max_qp);
	if (strcmp(name, "max-cq") == 0)
		return set_u32(name, value, 0, 65536, &q->max_cq);
	if (strcmp(name, "max-mr") == 0)
		return set_u32(name, value, 0, 65536, &q->max_mr);
	if (strcmp(name, "max-pd") == 0)
		return set_u32(name, value, 0, 65536, &q->max_pd);
	if (strcmp(name, "max-mem") == 0)
		return parse_u64(name, value, 4096, 1ull << 44, &q->max_bytes);
	if (strcmp(name, "dbq-size") == 0) {
		int ret = set_u32(name, value, 64, 1u << 20, &q->dbq_size);

		if (ret == 0 && (q->dbq_size & (q->dbq_size - 1)) != 0) {
			fprintf(stderr, "rnicd: --dbq-size: %s is not a power of two\n", value);
			return -EINVAL;
		}
		return ret;
	}
	fprintf(stderr, "rnicd: unknown option '%s'\n%s", name, usage);
	return -EINVAL;
}

static int
parse_config(const char *file, int depth)
{
	char line[512];
	FILE *f;
	int ret = 0, lineno = 0;

	if (depth > 4) {
		fprintf(stderr, "rnicd: %s: configuration files include each other\n", file);
		return -ELOOP;
	}
	f = fopen(file, "r");
	if (f == NULL) {
		fprintf(stderr, "rnicd: --config %s: %s\n", file, strerror(errno));
		return -errno;
	}
	while (ret == 0 && fgets(line, sizeof(line), f) != NULL) {
		char name[64], value[sizeof(line)], extra[2];
		char *hash = strchr(line, '#');
		int n;

		lineno++;
		if (hash != NULL)
			*hash = '\0';
		/* A tenant's line holds several pairs: "tenant uid=1000 max-qp 8 max-mem 1048576". */
		if (sscanf(line, "%63s", name) == 1 && strcmp(name, "tenant") == 0) {
			snprintf(value, sizeof(value), "%s:%d", file, lineno);
			ret = rnicd_tenant_config(value, strstr(line, "tenant") + 6);
			continue;
		}
		n = sscanf(line, "%63s %511s %1s", name, value, extra);
		if (n <= 0)
			continue;
		if (n != 2) {
			fprintf(stderr, "rnicd: %s:%d: expected 'name value'\n", file, lineno);
			ret = -EINVAL;
			break;
		}
		ret = set_option(name, value, depth);
	}
	fclose(f);
	return ret;
}

/* rnicd's options, up to "--"; the rest goes to rnic_engine_init. Returns the index after "--" or argc. */
static int
parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 0 }, { "config", required_argument, NULL, 0 },
		{ "max-qp", required_argument, NULL, 0 }, { "max-cq", required_argument, NULL, 0 },
		{ "max-mr", required_argument, NULL, 0 }, { "max-pd", required_argument, NULL, 0 },
		{ "max-mem", required_argument, NULL, 0 }, { "dbq-size", required_argument, NULL, 0 },
		{ "tenant", required_argument, NULL, 0 },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int opt, index;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+h", longopts, &index)) != -1) {
		if (opt == 'h') {
			fputs(usage, stdout);
			exit(0);
		}
		if (opt != 0) {
			fprintf(stderr, "rnicd: bad option '%s'\n%s", argv[optind - 1], usage);
			return -EINVAL;
		}
		if (set_option(longopts[index].name, optarg, 0) != 0)
			return -EINVAL;
	}
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0) {
		fprintf(stderr, "rnicd: unexpected argument '%s'\n%s", argv[optind], usage);
		return -EINVAL;
	}
	/* A client's QPs have at most one doorbell each in its queue (rnic_qp_ring_doorbell): room for all. */
	if (rnicd.quota.dbq_size < rnicd.quota.max_qp) {
		fprintf(stderr, "rnicd: --dbq-size %u is smaller than --max-qp %u: one doorbell per QP must fit\n",
			rnicd.quota.dbq_size, rnicd.quota.max_qp);
		return -EINVAL;
	}
	return optind;
}

/* ------------------------------------------------------------------------------------------------------ */
/* Telemetry                                                                                                */

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct rnicd_stats *st = &rnicd.stats;

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&rnicd.lock);
#define ADD(f) rte_tel_data_add_dict_u64(d, #f, st->f)
	ADD(clients_connected); ADD(clients_total); ADD(clients_gone);
	ADD(qps_live); ADD(cqs_live); ADD(mrs_live); ADD(pds_live);
	ADD(qps_freed); ADD(cqs_freed); ADD(mrs_freed); ADD(pds_freed);
	ADD(shared_bytes); ADD(bad_requests); ADD(quota_refusals); ADD(tenants);
#undef ADD
	pthread_mutex_unlock(&rnicd.lock);
	return 0;
}

static int
tel_clients(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&rnicd.lock);
	for (const struct rnicd_session *s = rnicd.sessions; s != NULL; s = s->next) {
		struct rte_tel_data *c = rte_tel_data_alloc();
		char name[32];

		if (c == NULL)
			break;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_int(c, "pid", s->pid);
		rte_tel_data_add_dict_int(c, "uid", (int)s->uid);
		rte_tel_data_add_dict_string(c, "tenant", s->tenant->name);
		rte_tel_data_add_dict_string(c, "cgroup", s->cgroup);
		rte_tel_data_add_dict_string(c, "device",
					     s->ctx != NULL ? rnic_get_device_name(s->ctx->device) : "(none)");
		rte_tel_data_add_dict_u64(c, "qps", s->count[OBJ_QP]);
		rte_tel_data_add_dict_u64(c, "cqs", s->count[OBJ_CQ]);
		rte_tel_data_add_dict_u64(c, "mrs", s->count[OBJ_MR]);
		rte_tel_data_add_dict_u64(c, "pds", s->count[OBJ_PD]);
		rte_tel_data_add_dict_u64(c, "shared_bytes", s->bytes);
		snprintf(name, sizeof(name), "client%u", s->id);
		rte_tel_data_add_dict_container(d, name, c, 0);
	}
	pthread_mutex_unlock(&rnicd.lock);
	return 0;
}

void
rnicd_telemetry_register(void)
{
	rte_telemetry_register_cmd("/rnicd/stats", tel_stats,
				   "rnicd: clients connected / gone, objects live / freed after a client went");
	rte_telemetry_register_cmd("/rnicd/clients", tel_clients,
				   "rnicd: every client session: pid, uid, tenant, device, objects, shared memory");
	rte_telemetry_register_cmd("/rnicd/tenants", rnicd_tenant_telemetry,
				   "rnicd: every tenant: quotas used / max / refused, doorbells, packets, bytes");
}

/* ------------------------------------------------------------------------------------------------------ */
/* The control loop                                                                                         */

static int
listen_on(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (s < 0)
		return -errno;
	unlink(path);	/* a socket left by an earlier run */
	if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(s, 64) != 0) {
		int err = errno;

		close(s);
		return -err;
	}
	return s;
}

/* Poll the listening socket, the signals and every session; serve until SIGTERM / SIGINT. */
static void
serve(int lsock, int sigfd)
{
	static struct pollfd pfd[MAX_CLIENTS + 2];
	static struct rnicd_session *who[MAX_CLIENTS + 2];

	for (;;) {
		nfds_t n = 2;

		pfd[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = lsock, .events = POLLIN };
		for (struct rnicd_session *s = rnicd.sessions; s != NULL && n < RTE_DIM(pfd); s = s->next) {
			who[n] = s;
			pfd[n++] = (struct pollfd){ .fd = s->sock, .events = POLLIN };
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			RNICD_LOG(ERR, "poll: %s", strerror(errno));
			return;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				RNICD_LOG(NOTICE, "%s: shutting down", strsignal((int)si.ssi_signo));
			return;
		}
		for (nfds_t i = 2; i < n; i++) {
			if (pfd[i].revents == 0)
				continue;
			/* Requests first: a client that sent and closed still gets its last one read. */
			if ((pfd[i].revents & POLLIN) && rnicd_session_serve(who[i]) == 0)
				continue;
			rnicd_session_end(who[i]);	/* says so in the log (rate-limited per tenant) */
		}
		if (pfd[1].revents & POLLIN) {
			/* Non-blocking: a client that does not read its replies must not stall the daemon. */
			int c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (c < 0)
				continue;
			if (rnicd.stats.clients_connected >= MAX_CLIENTS || rnicd_session_new(c) == NULL) {
				/* A tenant's own refusals are logged once per tenant (tenant.c). */
				if (rnicd.stats.clients_connected >= MAX_CLIENTS || errno == ENOMEM)
					RNICD_LOG(ERR, "refusing a client: %s", rnicd.stats.clients_connected >=
						  MAX_CLIENTS ? "too many clients" : "out of memory");
				close(c);
			}
		}
	}
}

int
main(int argc, char **argv)
{
	static char *defaults[] = { "-l", "0,1", "--no-huge", "-m", "1024", "--no-pci", "--file-prefix",
				    "rnicd" };
	char *eargv[MAX_ARGS];
	int eargc = 0, at, lsock, sigfd, ret;
	sigset_t sigs;

	at = parse_args(argc, argv);
	if (at < 0)
		return 2;
	eargv[eargc++] = argv[0];
	if (at >= argc) {
		for (unsigned int i = 0; i < RTE_DIM(defaults); i++)
			eargv[eargc++] = defaults[i];
	} else {
		for (int i = at; i < argc && eargc < MAX_ARGS - 1; i++)
			eargv[eargc++] = argv[i];
	}
	eargv[eargc] = NULL;

	/* Blocked before EAL starts its threads, so the signals wait for signalfd in the control loop. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (sigfd < 0) {
		perror("rnicd: signalfd");
		return 1;
	}
	if (getenv("RNIC_DAEMON") != NULL)
		unsetenv("RNIC_DAEMON");	/* the daemon is never a client of itself */
	ret = rnic_engine_init(eargc, eargv);
	if (ret < 0) {
		fprintf(stderr, "rnicd: the engine did not initialise: %s\n", strerror(-ret));
		return 1;
	}
	rnicd_telemetry_register();
	rnicd_canary_fill();
	ret = rnic_engine_start();
	lsock = ret == 0 ? listen_on(socket_path) : ret;
	if (lsock < 0) {
		RNICD_LOG(ERR, "cannot serve on %s: %s", socket_path, strerror(-lsock));
		rnic_engine_fini();
		return 1;
	}
	RNICD_LOG(NOTICE, "serving on %s (per client: %u QPs, %u CQs, %u MRs, %u PDs, %llu bytes)", socket_path,
		  rnicd.quota.max_qp, rnicd.quota.max_cq, rnicd.quota.max_mr, rnicd.quota.max_pd,
		  (unsigned long long)rnicd.quota.max_bytes);

	serve(lsock, sigfd);

	close(lsock);
	unlink(socket_path);
	while (rnicd.sessions != NULL)
		rnicd_session_end(rnicd.sessions);
	rnic_engine_stop();
	ret = rnic_engine_fini();
	rnicd_tenant_fini();
	close(sigfd);
	RNICD_LOG(NOTICE, "stopped");
	return ret == 0 ? 0 : 1;
}
