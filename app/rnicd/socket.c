/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd's listening socket: bound by the daemon, or handed over by systemd (socket activation), and the
 * service manager's readiness protocol (sd_notify). One daemon per socket path: a second one started on
 * the path of a live daemon refuses to start and leaves the first one's socket alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnicd.h"
#include "rnicd_socket.h"

#define LISTEN_BACKLOG 64
#define SD_LISTEN_FDS_START 3		/* systemd passes sockets from fd 3 on (sd_listen_fds(3)) */

/* ------------------------------------------------------------------------------------------------------ */
/* Socket activation                                                                                        */

/* The one socket systemd passed to this process: 1 (sk->fd set), 0 when it passed none, or -errno. */
static int
take_activated(struct rnicd_socket *sk)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	struct sockaddr_un addr;
	socklen_t alen = sizeof(addr);
	int type = 0, domain = 0, listening = 0, n;
	socklen_t len = sizeof(int);

	if (pid == NULL || fds == NULL || strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	n = atoi(fds);
	/* The variables are for this process only, not for anything it starts. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (n != 1) {
		RNICD_LOG(ERR, "systemd passed %d sockets: rnicd listens on one (ListenSequentialPacket=)", n);
		return -EINVAL;
	}
	sk->fd = SD_LISTEN_FDS_START;
	if (getsockopt(sk->fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
	    getsockopt(sk->fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
	    getsockopt(sk->fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
	    domain != AF_UNIX || type != SOCK_SEQPACKET || !listening) {
		RNICD_LOG(ERR, "the socket systemd passed is not a listening AF_UNIX SOCK_SEQPACKET socket "
			  "(ListenSequentialPacket=PATH)");
		sk->fd = -1;
		return -EINVAL;
	}
	if (fcntl(sk->fd, F_SETFD, FD_CLOEXEC) != 0 ||
	    fcntl(sk->fd, F_SETFL, fcntl(sk->fd, F_GETFL) | O_NONBLOCK) != 0)
		return -errno;
	if (getsockname(sk->fd, (struct sockaddr *)&addr, &alen) == 0 && alen > offsetof(struct sockaddr_un, sun_path))
		snprintf(sk->path, sizeof(sk->path), "%.*s", (int)(alen - offsetof(struct sockaddr_un, sun_path)),
			 addr.sun_path);
	sk->activated = 1;
	return 1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* A socket of our own                                                                                      */

static void
socket_addr(const char *path, struct sockaddr_un *addr)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	snprintf(addr->sun_path, sizeof(addr->sun_path), "%s", path);
}

/*
 * Whether the path is free for a new socket: 0 when nothing is there, or when a socket is there that
 * nothing listens on (a daemon that did not end cleanly left it: removed now). A socket something still
 * accepts on is another daemon's (or another program's): -EADDRINUSE; any other file: -EEXIST.
 */
static int
path_free(const char *path)
{
	struct sockaddr_un addr;
	struct stat st;
	int probe, ret, err;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		RNICD_LOG(ERR, "%s exists and is not a socket: not replacing it", path);
		return -EEXIST;
	}
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -errno;
	socket_addr(path, &addr);
	ret = connect(probe, (struct sockaddr *)&addr, sizeof(addr));
	err = errno;
	close(probe);
	if (ret == 0 || err == EAGAIN || err == EPROTOTYPE) {
		/* EAGAIN: a listener whose backlog is full; EPROTOTYPE: a listener of another socket type. */
		RNICD_LOG(ERR, "%s: another daemon is serving on it: not taking it over", path);
		return -EADDRINUSE;
	}
	if (err != ECONNREFUSED) {
		RNICD_LOG(ERR, "%s: %s", path, strerror(err));
		return -err;
	}
	RNICD_LOG(NOTICE, "%s: removing a stale socket (nothing listens on it)", path);
	if (unlink(path) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Bind and listen on sk->path with the configured group and mode; the file is made 0600 and opened up to
 * sk->mode only once its group is set. */
static int
bind_path(struct rnicd_socket *sk)
{
	struct sockaddr_un addr;
	struct stat st;
	mode_t umask_before;
	int ret;

	sk->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sk->fd < 0)
		return -errno;
	socket_addr(sk->path, &addr);
	umask_before = umask(0177);
	ret = bind(sk->fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(umask_before);
	if (ret != 0) {
		ret = -errno;
		close(sk->fd);
		sk->fd = -1;
		return ret;
	}
	if ((sk->gid != (gid_t)-1 && chown(sk->path, (uid_t)-1, sk->gid) != 0) || chmod(sk->path, sk->mode) != 0 ||
	    stat(sk->path, &st) != 0 || listen(sk->fd, LISTEN_BACKLOG) != 0) {
		ret = -errno;
		unlink(sk->path);
		close(sk->fd);
		sk->fd = -1;
		return ret;
	}
	sk->dev = st.st_dev;
	sk->ino = st.st_ino;
	return 0;
}

/* Check the path and bind it, with the socket's directory locked so that two daemons starting together
 * cannot both find it free. */
static int
claim_path(struct rnicd_socket *sk)
{
	char dir[sizeof(sk->path)];
	int dfd, ret;

	snprintf(dir, sizeof(dir), "%s", sk->path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		flock(dfd, LOCK_EX);
	ret = path_free(sk->path);
	if (ret == 0) {
		ret = bind_path(sk);
		if (ret < 0)
			RNICD_LOG(ERR, "cannot serve on %s: %s", sk->path, strerror(-ret));
	}
	if (dfd >= 0)
		close(dfd);		/* and its lock */
	return ret;
}

int
rnicd_socket_open(struct rnicd_socket *sk)
{
	int ret;

	sk->fd = -1;
	sk->activated = 0;
	ret = take_activated(sk);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	return claim_path(sk);
}

void
rnicd_socket_close(struct rnicd_socket *sk)
{
	struct stat st;

	if (sk->fd < 0)
		return;
	close(sk->fd);
	sk->fd = -1;
	/* Another daemon may have taken the path since (after someone removed ours): its file stays. */
	if (!sk->activated && stat(sk->path, &st) == 0 && st.st_dev == sk->dev && st.st_ino == sk->ino)
		unlink(sk->path);
}

/* ------------------------------------------------------------------------------------------------------ */
/* sd_notify                                                                                                */

void
rnicd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len;
	int s;

	if (path == NULL || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(addr.sun_path))
		return;
	memcpy(addr.sun_path, path, len);
	if (path[0] == '@')
		addr.sun_path[0] = '\0';	/* an abstract socket */
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	if (sendto(s, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		RNICD_LOG(WARNING, "sd_notify %s: %s", path, strerror(errno));
	close(s);
}
