/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd's messages: one SOCK_SEQPACKET record each way, with at most one file descriptor (SCM_RIGHTS).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnicd_proto.h"

int
rnicd_send_msg(int sock, const void *buf, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)(uintptr_t)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);

		if (n == (ssize_t)len)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EPROTO;
	}
}

ssize_t
rnicd_recv_msg(int sock, void *buf, size_t len, int *fd, int *truncated)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	if (fd != NULL)
		*fd = -1;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
	/* Keep the first descriptor if the caller wants one; close any other (a peer may send several). */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		size_t nb;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nb = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nb; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd != NULL && *fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	return n;
}

int
rnicd_call(int sock, struct rnicd_req *req, uint32_t cmd, int fd_out, struct rnicd_rep *rep, int *fd_in)
{
	int truncated, fd = -1;
	ssize_t n;
	int ret;

	req->cmd = cmd;
	req->version = RNICD_PROTO_VERSION;
	ret = rnicd_send_msg(sock, req, rnicd_req_size(cmd), fd_out);
	if (ret < 0)
		return -ret;
	n = rnicd_recv_msg(sock, rep, sizeof(*rep), &fd, &truncated);
	if (n < 0)
		return (int)-n;
	if (n < (ssize_t)offsetof(struct rnicd_rep, u) || truncated) {
		if (fd >= 0)
			close(fd);
		return n == 0 ? ECONNRESET : EPROTO;	/* 0: the daemon went away */
	}
	if (fd_in != NULL)
		*fd_in = fd;
	else if (fd >= 0)
		close(fd);
	return rep->status;
}
