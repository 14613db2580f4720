/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd: softrnic as a shared service beside a virtual switch (doc/rnicd.md). It owns the ports and the
 * engine's lcores and serves many application processes over a UNIX socket: control verbs as requests,
 * the data path through memory shared with each client. Runs in the foreground (systemd style, Type=notify,
 * socket activation); SIGHUP reads the configuration again; SIGTERM or SIGINT ends every client session,
 * stops the engine and exits 0.
 *
 *   rnicd [--socket PATH] [--socket-mode MODE] [--socket-group GROUP] [--config FILE] [--max-qp N]
 *         [--max-cq N] [--max-mr N] [--max-pd N] [--max-mem BYTES] [--dbq-size N] [--tenant SPEC]...
 *         [-- EAL arguments [-- engine arguments]]
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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
#include "rnicd_socket.h"
#include "rnic_version.h"

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
	"  --socket PATH     UNIX socket clients connect to (default " DEFAULT_SOCKET "); refused if another\n"
	"                    daemon serves on it. Under systemd socket activation, the socket passed instead\n"
	"  --socket-mode M   its permissions, in octal (default 0660: connecting needs write permission)\n"
	"  --socket-group G  its group (name or number; default: the daemon's)\n"
	"  --config FILE     options from a file: one 'name value' per line, '#' comments\n"
	"  --max-qp N, --max-cq N, --max-mr N, --max-pd N   objects one client may hold\n"
	"  --max-mem BYTES   memory one client may share with the daemon (queues, CQs, registered buffers)\n"
	"  --dbq-size N      doorbells a client's queue holds (a power of two, at least --max-qp)\n"
	"  --tenant SPEC     quotas and GIDs of a tenant over all its connections: default|uid=N|gid=N|cgroup=/path\n"
	"                    [max-conn N] [max-ctx N] [max-qp N] [max-cq N] [max-mr N] [max-pd N] [max-mem BYTES]\n"
	"                    [gids I[,I...]] (the GID indexes its QPs may send from)\n"
	"  --version         print softrnic's and DPDK's versions\n"
	"  EAL default: -l 0,1 --no-huge -m 1024 --no-pci --file-prefix rnicd; engine arguments as\n"
	"  rnic_engine_usage (without --port: the embedded loopback pair rnic0/rnic1)\n"
	"  clients: RNIC_DAEMON=PATH in their environment\n";

/* The socket clients connect to: 0660, so that root and the members of --socket-group can connect. */
static struct rnicd_socket sock = { .path = DEFAULT_SOCKET, .mode = 0660, .gid = (gid_t)-1, .fd = -1 };

/* ------------------------------------------------------------------------------------------------------ */
/* Options and the configuration file                                                                       */

/* Where the option being set comes from, for its error messages: a configuration file's line, or (file
 * NULL) the command line. */
static struct {
	const char *file;
	int line;
} where;

/* An option's value refused: "rnicd: FILE:LINE: name: ..." or "rnicd: --name: ...". Returns -EINVAL. */
static int __rte_format_printf(2, 3)
option_error(const char *name, const char *fmt, ...)
{
	va_list ap;

	if (where.file != NULL)
		fprintf(stderr, "rnicd: %s:%d: %s: ", where.file, where.line, name);
	else
		fprintf(stderr, "rnicd: --%s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

/* A number in min..max; with size suffixes allowed, K, M, G or T after it multiply by 2^10, 2^20, 2^30 or
 * 2^40 (max-mem 1G). */
static int
parse_number(const char *name, const char *text, uint64_t min, uint64_t max, int sizes, uint64_t *out)
{
	static const char suffixes[] = "KMGT";
	const char *unit;
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(text, &end, sizes ? 10 : 0);
	if (sizes && end != text && *end != '\0' && end[1] == '\0' &&
	    (unit = strchr(suffixes, *end & ~0x20)) != NULL) {
		shift = 10 * (unsigned int)(unit - suffixes + 1);
		end++;
	}
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > (max >> shift) ||
	    (v << shift) < min)
		return option_error(name, "'%s' is not a number in %llu..%llu%s", text, (unsigned long long)min,
				    (unsigned long long)max, sizes ? " (suffixes K, M, G, T: binary multiples)" : "");
	*out = v << shift;
	return 0;
}

static int
parse_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_number(name, text, min, max, 0, out);
}

static int
set_u32(const char *name, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	int ret = parse_u64(name, text, min, max, &v);

	if (ret == 0)
		*out = (uint32_t)v;
	return ret;
}

/* Permissions in octal, as chmod takes them (0660). */
static int
parse_mode(const char *name, const char *text, mode_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 8);
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > 0777)
		return option_error(name, "'%s' is not a file mode in octal, 0 .. 0777", text);
	*out = (mode_t)v;
	return 0;
}

/* A group by name or number. */
static int
parse_group(const char *name, const char *text, gid_t *out)
{
	const struct group *g = getgrnam(text);
	char *end;
	unsigned long v;

	if (g != NULL) {
		*out = g->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v >= (gid_t)-1)
		return option_error(name, "'%s' is no group of this system", text);
	*out = (gid_t)v;
	return 0;
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
		if (strlen(value) == 0 || strlen(value) >= sizeof(sock.path))
			return option_error(name, "'%s': empty or too long", value);
		snprintf(sock.path, sizeof(sock.path), "%s", value);
		return 0;
	}
	if (strcmp(name, "socket-mode") == 0)
		return parse_mode(name, value, &sock.mode);
	if (strcmp(name, "socket-group") == 0)
		return parse_group(name, value, &sock.gid);
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
		return parse_number(name, value, 4096, 1ull << 44, 1, &q->max_bytes);
	if (strcmp(name, "dbq-size") == 0) {
		int ret = set_u32(name, value, 64, 1u << 20, &q->dbq_size);

		if (ret == 0 && (q->dbq_size & (q->dbq_size - 1)) != 0)
			return option_error(name, "%s is not a power of two", value);
		return ret;
	}
	if (where.file != NULL)
		return option_error(name, "not an option of rnicd (rnicd --help lists them)");
	fprintf(stderr, "rnicd: unknown option '%s'\n%s", name, usage);
	return -EINVAL;
}

/* The options of one configuration file, with "FILE:LINE:" in every error. */
static int
parse_config(const char *file, int depth)
{
	const __typeof__(where) outer = where;	/* a file read from a file: back to the outer one after */
	char line[512];
	FILE *f;
	int ret = 0;

	if (depth > 4) {
		fprintf(stderr, "rnicd: %s: configuration files include each other\n", file);
		return -ELOOP;
	}
	f = fopen(file, "r");
	if (f == NULL) {
		ret = -errno;
		if (where.file != NULL)
			fprintf(stderr, "rnicd: %s:%d: config %s: %s\n", where.file, where.line, file, strerror(-ret));
		else
			fprintf(stderr, "rnicd: --config %s: %s\n", file, strerror(-ret));
		return ret;
	}
	where.file = file;
	where.line = 0;
	while (ret == 0 && fgets(line, sizeof(line), f) != NULL) {
		char name[64], value[sizeof(line)], extra[2];
		char *hash = strchr(line, '#');
		int n;

		where.line++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			fprintf(stderr, "rnicd: %s:%d: line longer than %zu characters\n", file, where.line,
				sizeof(line) - 2);
			ret = -EINVAL;
			break;
		}
		if (hash != NULL)
			*hash = '\0';
		/* A tenant's line holds several pairs: "tenant uid=1000 max-qp 8 max-mem 1048576". */
		if (sscanf(line, "%63s", name) == 1 && strcmp(name, "tenant") == 0) {
			snprintf(value, sizeof(value), "%s:%d", file, where.line);
			ret = rnicd_tenant_config(value, strstr(line, "tenant") + 6);
			continue;
		}
		n = sscanf(line, "%63s %511s %1s", name, value, extra);
		if (n <= 0)
			continue;
		if (n != 2) {
			fprintf(stderr, "rnicd: %s:%d: expected 'name value'\n", file, where.line);
			ret = -EINVAL;
			break;
		}
		ret = set_option(name, value, depth);
	}
	if (ret == 0 && ferror(f)) {
		fprintf(stderr, "rnicd: %s: read error\n", file);
		ret = -EIO;
	}
	fclose(f);
	where = outer;
	return ret;
}

/* rnicd's options, up to "--"; the rest goes to rnic_engine_init. Returns the index after "--" or argc. */
static int
parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 0 }, { "config", required_argument, NULL, 0 },
		{ "socket-mode", required_argument, NULL, 0 }, { "socket-group", required_argument, NULL, 0 },
		{ "max-qp", required_argument, NULL, 0 }, { "max-cq", required_argument, NULL, 0 },
		{ "max-mr", required_argument, NULL, 0 }, { "max-pd", required_argument, NULL, 0 },
		{ "max-mem", required_argument, NULL, 0 }, { "dbq-size", required_argument, NULL, 0 },
		{ "tenant", required_argument, NULL, 0 },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 },
	};
	int opt, index;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+h", longopts, &index)) != -1) {
		if (opt == 'h') {
			fputs(usage, stdout);
			exit(0);
		}
		if (opt == 'V') {
			rnic_print_version("rnicd");
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
	ADD(qps_freed); ADD(cqs_freed); ADD(mrs_freed); ADD(pds_freed); ADD(srqs_live); ADD(srqs_freed);
	ADD(cm_ids_live); ADD(cm_ids_freed); ADD(cm_requests_dropped);
	ADD(shared_bytes); ADD(bad_requests); ADD(connections_total); ADD(quota_refusals); ADD(tenants);
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

/* Client processes seen last, to count processes apart from connections: a process is one it was not
 * before, by pid and start time (a pid the kernel gave again is another process). A process that comes
 * back after PROCESSES_REMEMBERED others counts again. */
#define PROCESSES_REMEMBERED 1024
static struct rnicd_process {
	pid_t pid;
	unsigned long long start;	/* clock ticks after boot (/proc/PID/stat, field 22) */
} processes[PROCESSES_REMEMBERED];
static unsigned int next_process;

/* When the process started, or 0 if it cannot be told (it is gone, or the pid is unknown). */
static unsigned long long
process_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = pid > 0 ? fopen(path, "r") : NULL;
	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* After the command name (in parentheses, which may hold anything): state is field 3, start time 22. */
	p = strrchr(buf, ')');
	if (p != NULL && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
				"%*d %*d %llu", &start) != 1)
		start = 0;
	return start;
}

/* A connection accepted: counted, and its process counted if it is a new one. */
static void
count_client(pid_t pid)
{
	const struct rnicd_process me = { .pid = pid, .start = process_start(pid) };

	pthread_mutex_lock(&rnicd.lock);
	rnicd.stats.connections_total++;
	for (unsigned int i = 0; i < PROCESSES_REMEMBERED && pid > 0; i++) {
		if (processes[i].pid == me.pid && processes[i].start == me.start) {
			pthread_mutex_unlock(&rnicd.lock);
			return;
		}
	}
	processes[next_process++ % PROCESSES_REMEMBERED] = me;
	rnicd.stats.clients_total++;
	pthread_mutex_unlock(&rnicd.lock);
}

/* rnicd's own options (before "--"), and the quotas compiled in, for SIGHUP to read them again. */
static int opt_argc;
static char **opt_argv;
static struct rnicd_quota startup_quota;

/*
 * SIGHUP: the options and configuration files again, from the compiled-in quotas, as at start. The per-client
 * limits apply from now on (to objects created after; none is taken away); the socket and the doorbell
 * queue size (every client's queue has it) stay until a restart. A configuration with an error changes
 * nothing.
 */
static void
reload(void)
{
	const struct rnicd_socket running = sock;
	const struct rnicd_quota before = rnicd.quota;
	int ret;

	rnicd_notify("RELOADING=1");
	pthread_mutex_lock(&rnicd.lock);
	rnicd.quota = startup_quota;
	rnicd_tenant_config_reset();
	optind = 0;			/* getopt from the start again */
	ret = parse_args(opt_argc, opt_argv);
	if (ret >= 0 && (strcmp(sock.path, running.path) != 0 || sock.mode != running.mode ||
			 sock.gid != running.gid || rnicd.quota.dbq_size != before.dbq_size))
		RNICD_LOG(WARNING, "SIGHUP: socket, socket-mode, socket-group and dbq-size change at a restart only");
	sock = running;
	if (ret >= 0 && rnicd.quota.max_qp > before.dbq_size) {
		fprintf(stderr, "rnicd: max-qp %u is larger than the doorbell queues (dbq-size %u)\n",
			rnicd.quota.max_qp, before.dbq_size);
		ret = -EINVAL;
	}
	rnicd.quota.dbq_size = before.dbq_size;
	if (ret < 0) {
		rnicd.quota = before;
		rnicd_tenant_config_restore();
	}
	rnicd_tenant_shares_apply();
	pthread_mutex_unlock(&rnicd.lock);
	if (ret < 0)
		RNICD_LOG(ERR, "SIGHUP: the configuration has an error (above): the running one stays");
	else
		RNICD_LOG(NOTICE, "SIGHUP: configuration read again: per client %u QPs, %u CQs, %u MRs, %u PDs, "
			  "%llu bytes", rnicd.quota.max_qp, rnicd.quota.max_cq, rnicd.quota.max_mr,
			  rnicd.quota.max_pd, (unsigned long long)rnicd.quota.max_bytes);
	rnicd_notify("READY=1");
}

/* Poll the listening socket, the signals and every session; serve until SIGTERM / SIGINT. */
static void
serve(int lsock, int sigfd)
{
	/* Per session: its connection, then the fds of its events (rnicd_events_fds, at most 2). */
	static struct pollfd pfd[3 * MAX_CLIENTS + 2];
	static struct rnicd_session *who[3 * MAX_CLIENTS + 2];
	static uint8_t is_event[3 * MAX_CLIENTS + 2];

	for (;;) {
		nfds_t n = 2;

		pfd[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = lsock, .events = POLLIN };
		for (struct rnicd_session *s = rnicd.sessions; s != NULL && n + 3 <= RTE_DIM(pfd); s = s->next) {
			int fds[2], nb = rnicd_events_fds(s, fds);

			who[n] = s;
			is_event[n] = 0;
			pfd[n++] = (struct pollfd){ .fd = s->sock, .events = POLLIN };
			for (int i = 0; i < nb; i++) {
				who[n] = s;
				is_event[n] = 1;
				pfd[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
			}
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			RNICD_LOG(ERR, "poll: %s", strerror(errno));
			return;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
				continue;
			if (si.ssi_signo == SIGHUP) {
				reload();
				continue;
			}
			RNICD_LOG(NOTICE, "%s: shutting down", strsignal((int)si.ssi_signo));
			return;
		}
		/* Events first: a session a request ends below is not in the list any more. */
		for (nfds_t i = 2; i < n; i++) {
			if (is_event[i] && pfd[i].revents != 0) {
				pthread_mutex_lock(&rnicd.lock);
				rnicd_events_forward(who[i]);
				pthread_mutex_unlock(&rnicd.lock);
			}
		}
		for (nfds_t i = 2; i < n; i++) {
			if (is_event[i] || pfd[i].revents == 0)
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
			struct rnicd_session *sn = NULL;

			if (rnicd.stats.clients_connected >= MAX_CLIENTS || (sn = rnicd_session_new(c)) == NULL) {
				/* A tenant's own refusals are logged once per tenant (tenant.c). */
				if (rnicd.stats.clients_connected >= MAX_CLIENTS || errno == ENOMEM)
					RNICD_LOG(ERR, "refusing a client: %s", rnicd.stats.clients_connected >=
						  MAX_CLIENTS ? "too many clients" : "out of memory");
				close(c);
				continue;
			}
			count_client(sn->pid);
		}
	}
}

/* The EAL (and engine) arguments: what follows "--", or the defaults. */
static int
eal_args(int argc, char **argv, int at, char **eargv)
{
	static char *defaults[] = { "-l", "0,1", "--no-huge", "-m", "1024", "--no-pci", "--file-prefix",
				    "rnicd" };
	int eargc = 0;

	eargv[eargc++] = argv[0];
	if (at >= argc) {
		for (unsigned int i = 0; i < RTE_DIM(defaults); i++)
			eargv[eargc++] = defaults[i];
	} else {
		for (int i = at; i < argc && eargc < MAX_ARGS - 1; i++)
			eargv[eargc++] = argv[i];
	}
	eargv[eargc] = NULL;
	return eargc;
}

/* The signals the control loop takes from a signalfd: blocked before EAL starts its threads, so that none
 * of them gets one. */
static int
signals_fd(void)
{
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	return signalfd(-1, &sigs, SFD_CLOEXEC);
}

int
main(int argc, char **argv)
{
	char *eargv[MAX_ARGS], status[256];
	int eargc, at, sigfd, ret;

	startup_quota = rnicd.quota;
	at = parse_args(argc, argv);
	if (at < 0)
		return 2;
	opt_argc = at < argc ? at - 1 : argc;	/* rnicd's own options, read again on SIGHUP */
	opt_argv = argv;
	eargc = eal_args(argc, argv, at, eargv);
	sigfd = signals_fd();
	if (sigfd < 0) {
		perror("rnicd: signalfd");
		return 1;
	}
	if (getenv("RNIC_DAEMON") != NULL)
		unsetenv("RNIC_DAEMON");	/* the daemon is never a client of itself */
	/* The socket first: a daemon that cannot have it starts nothing (no EAL, no runtime directory). */
	if (rnicd_socket_open(&sock) < 0)
		return 1;
	ret = rnic_engine_init(eargc, eargv);
	if (ret < 0) {
		fprintf(stderr, "rnicd: the engine did not initialise: %s\n", strerror(-ret));
		rnicd_socket_close(&sock);
		return 1;
	}
	rnicd_telemetry_register();
	rnicd_canary_fill();
	ret = rnic_engine_start();
	if (ret < 0) {
		RNICD_LOG(ERR, "the engine did not start: %s", strerror(-ret));
		rnicd_socket_close(&sock);
		rnic_engine_fini();
		return 1;
	}
	RNICD_LOG(NOTICE, "serving on %s%s (per client: %u QPs, %u CQs, %u MRs, %u PDs, %llu bytes)", sock.path,
		  sock.activated ? " (from systemd)" : "", rnicd.quota.max_qp, rnicd.quota.max_cq,
		  rnicd.quota.max_mr, rnicd.quota.max_pd, (unsigned long long)rnicd.quota.max_bytes);
	snprintf(status, sizeof(status), "READY=1\nSTATUS=serving on %s\nMAINPID=%d", sock.path, (int)getpid());
	rnicd_notify(status);

	serve(sock.fd, sigfd);

	rnicd_notify("STOPPING=1");
	rnicd_socket_close(&sock);
	while (rnicd.sessions != NULL)
		rnicd_session_end(rnicd.sessions);
	rnic_engine_stop();
	ret = rnic_engine_fini();
	rnicd_tenant_fini();
	close(sigfd);
	RNICD_LOG(NOTICE, "stopped");
	return ret == 0 ? 0 : 1;
}
