/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd's listening socket and its systemd side (app/rnicd/socket.c, doc/rnicd.md "Running it").
 */
#ifndef RNICD_SOCKET_H
#define RNICD_SOCKET_H

#include <sys/types.h>
#include <sys/un.h>

/* Where clients connect: the options (--socket, --socket-mode, --socket-group) and the socket made of them. */
struct rnicd_socket {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	mode_t mode;			/* permissions of the socket file: connecting needs write permission */
	gid_t gid;			/* its group; (gid_t)-1 keeps the daemon's */
	int fd;				/* listening, non-blocking; -1 before rnicd_socket_open */
	int activated;			/* systemd passed it (LISTEN_FDS): systemd owns the file */
	dev_t dev;			/* the file this daemon bound, removed at exit only if the path still */
	ino_t ino;			/* names it */
};

/*
 * Listen: on the socket systemd passed (socket activation: LISTEN_PID / LISTEN_FDS name this process), or
 * on sk->path, which must be free: absent, or a socket nothing listens on (a stale one, removed). A socket
 * another daemon still serves, or a file that is not a socket, is left alone and refused. 0 or a negative
 * errno (the reason logged).
 */
int rnicd_socket_open(struct rnicd_socket *sk);

/* Stop listening; remove the socket file if this daemon made it and it is still the one at the path. */
void rnicd_socket_close(struct rnicd_socket *sk);

/* A state for systemd's service manager (sd_notify: "READY=1", "RELOADING=1", "STOPPING=1", "STATUS=...")
 * on $NOTIFY_SOCKET; nothing without it. */
void rnicd_notify(const char *state);

#endif /* RNICD_SOCKET_H */
