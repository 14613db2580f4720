/* SPDX-License-Identifier: BSD-3-Clause
 * The out-of-band channel of the two-process tools (rnic-pingpong, rnic-perf): a TCP connection over which
 * the peers exchange what their QPs need (QPN, PSN, GID, rkey, address), as perftest does.
 */
#ifndef RNIC_APP_OOB_H
#define RNIC_APP_OOB_H

#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#define OOB_CONNECT_TIMEOUT_S 20

/*
 * Connect to host on TCP port (client: host != NULL; the server may still be starting, so retry for a
 * while) or accept one connection on port (server: host == NULL). Returns the connected socket or -1.
 */
static inline int
oob_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1;

	if (host == NULL)
		hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -1;
	if (host != NULL) {
		for (int i = 0; i < OOB_CONNECT_TIMEOUT_S * 10; i++) {
			fd = socket(ai->ai_family, SOCK_STREAM, 0);
			if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			if (fd >= 0)
				close(fd);
			fd = -1;
			usleep(100000);
		}
	} else {
		int lfd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;

		if (lfd >= 0) {
			setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(lfd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(lfd, 1) == 0)
				fd = accept(lfd, NULL, NULL);
			close(lfd);
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* Connect to "HOST:PORT" (the last colon separates them): oob_connect's fd, or -1 (no colon, a host too
 * long). */
static inline int
oob_connect_to(const char *host_port)
{
	const char *colon = strrchr(host_port, ':');
	char host[256];

	if (colon == NULL || colon - host_port >= (ptrdiff_t)sizeof(host))
		return -1;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - host_port), host_port);
	return oob_connect(host, colon + 1);
}

/* Send mine and receive theirs (len bytes each). 0 or -1. */
static inline int
oob_exchange(int fd, const void *mine, void *theirs, size_t len)
{
	return write(fd, mine, len) == (ssize_t)len && recv(fd, theirs, len, MSG_WAITALL) == (ssize_t)len ? 0 : -1;
}

/* The steps of the goodbye, in the order a process takes its engine down. */
enum oob_goodbye_step {
	OOB_BEFORE_STOP,	/* before rnic_engine_stop */
	OOB_STOPPED,		/* between rnic_engine_stop and rnic_engine_fini */
	OOB_DOWN,		/* after rnic_engine_fini */
};

/*
 * Two engines joined by a port neither may lose while its lcores poll it (a memif peer that leaves while the
 * other side's lcores still poll the port crashes them in the PMD's receive): the server stops its lcores and
 * says so; then the client takes its engine down and says goodbye; then the server takes its own down. Each
 * wait lasts OOB_CONNECT_TIMEOUT_S at most. 0, or -1 when the peer did not answer.
 */
static inline int
oob_goodbye(int fd, int server, enum oob_goodbye_step step)
{
	struct timeval tv = { .tv_sec = OOB_CONNECT_TIMEOUT_S };
	char byte = 0;

	if (fd < 0 || (server ? step != OOB_STOPPED : step == OOB_STOPPED))
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (server)	/* stopped: then wait for the client's goodbye */
		return write(fd, &byte, 1) == 1 && recv(fd, &byte, 1, MSG_WAITALL) == 1 ? 0 : -1;
	if (step == OOB_BEFORE_STOP)	/* wait until the server's lcores no longer poll */
		return recv(fd, &byte, 1, MSG_WAITALL) == 1 ? 0 : -1;
	return write(fd, &byte, 1) == 1 ? 0 : -1;	/* down: goodbye */
}

#endif /* RNIC_APP_OOB_H */
