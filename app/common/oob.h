/* SPDX-License-Identifier: BSD-3-Clause
 * The out-of-band channel of the two-process tools (rnic-pingpong, rnic-perf): a TCP connection over which
 * the peers exchange what their QPs need (QPN, PSN, GID, rkey, address), as perftest does.
 */
#ifndef RNIC_APP_OOB_H
#define RNIC_APP_OOB_H

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

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

/* Send mine and receive theirs (len bytes each). 0 or -1. */
static inline int
oob_exchange(int fd, const void *mine, void *theirs, size_t len)
{
	return write(fd, mine, len) == (ssize_t)len && recv(fd, theirs, len, MSG_WAITALL) == (ssize_t)len ? 0 : -1;
}

#endif /* RNIC_APP_OOB_H */
