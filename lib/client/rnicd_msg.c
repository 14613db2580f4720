/* SPDX-License-Identifier: BSD-3-Clause
 * rnicd's messages: one SOCK_SEQPACKET record each way, with at most RNICD_MAX_FDS file descriptors
 * (SCM_RIGHTS).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_common.h>

#include "rnicd_proto.h"

int
rnicd_send_msg_fds(int sock, const void *buf, size_t len, const int *fds, int nb_fds)
{
	union {
		char buf[CMSG_SPACE(RNICD_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)(uintptr_t)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nb_fds < 0 || nb_fds > RNICD_MAX_FDS)
		return -EINVAL;
	if (nb_fds > 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE((size_t)nb_fds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nb_fds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nb_fds * sizeof(int));
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

int
rnicd_send_msg(int sock, const void *buf, size_t len, int fd)
{
	return rnicd_send_msg_fds(sock, buf, len, &fd, fd >= 0 ? 1 : 0);
}

ssize_t
rnicd_recv_msg_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nb_fds, int *truncated)
{
	union {
		char buf[CMSG_SPACE((RNICD_MAX_FDS + 1) * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	*nb_fds = 0;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
	/* Keep the first max_fds descriptors; close any other (a peer may send more than it should). */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		size_t nb;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nb = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nb; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nb_fds < max_fds) {
				fds[(*nb_fds)++] = got;
			} else {
				close(got);
				*truncated = 1;	/* more descriptors than the message may carry */
			}
		}
	}
	return n;
}

ssize_t
rnicd_recv_msg(int sock, void *buf, size_t len, int *fd, int *truncated)
{
	int fds[RNICD_MAX_FDS], nb;
	ssize_t n = rnicd_recv_msg_fds(sock, buf, len, fds, RNICD_MAX_FDS, &nb, truncated);

	/* Keep the first descriptor if the caller wants one; close any other. */
	if (fd != NULL)
		*fd = nb > 0 ? fds[0] : -1;
	for (int i = fd != NULL ? 1 : 0; i < nb; i++)
		close(fds[i]);
	return n;
}

int
rnicd_call_fds(int sock, struct rnicd_req *req, uint32_t cmd, const int *fds_out, int nb_out, struct rnicd_rep *rep,
	       int *fds_in, int max_in)
{
	int truncated, fds[RNICD_MAX_FDS], nb;
	ssize_t n;
	int ret;

	req->cmd = cmd;
	req->version = RNICD_PROTO_VERSION;
	ret = rnicd_send_msg_fds(sock, req, rnicd_req_size(cmd), fds_out, nb_out);
	if (ret < 0)
		return -ret;
	n = rnicd_recv_msg_fds(sock, rep, sizeof(*rep), fds, RNICD_MAX_FDS, &nb, &truncated);
	if (n < 0)
		return (int)-n;
	if (n < (ssize_t)offsetof(struct rnicd_rep, u) || truncated) {
		for (int i = 0; i < nb; i++)
			close(fds[i]);
		return n == 0 ? ECONNRESET : EPROTO;	/* 0: the daemon went away */
	}
	/* The descriptors the caller takes, in order; any other is closed. */
	for (int i = 0; i < RTE_MAX(nb, max_in); i++) {
		if (i < max_in)
			fds_in[i] = i < nb ? fds[i] : -1;
		else
			close(fds[i]);
	}
	return rep->status;
}

int
rnicd_call(int sock, struct rnicd_req *req, uint32_t cmd, int fd_out, struct rnicd_rep *rep, int *fd_in)
{
	int fd = -1;
	int ret = rnicd_call_fds(sock, req, cmd, &fd_out, fd_out >= 0 ? 1 : 0, rep, &fd, 1);

	if (fd_in != NULL)
		*fd_in = fd;
	else if (fd >= 0)
		close(fd);
	return ret;
}
