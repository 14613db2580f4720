/* SPDX-License-Identifier: BSD-3-Clause
 * Event queues (rnic_evq.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rte_errno.h>

#include "rnic_evq.h"
#include "rnic_priv.h"

int
rnic_evq_create(struct rnic_evq *q, const char *name, uint32_t size, uint32_t count, int socket_id)
{
	q->ring = rte_ring_create_elem(name, size, count, socket_id, RING_F_SC_DEQ);
	q->fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (q->ring == NULL || q->fd < 0) {
		RNIC_LOG(ERR, "%s: cannot create an event queue: %s", name,
			 q->ring == NULL ? rte_strerror(rte_errno) : strerror(errno));
		rnic_evq_free(q);
		return -ENOMEM;
	}
	return 0;
}

void
rnic_evq_free(struct rnic_evq *q)
{
	rte_ring_free(q->ring);
	q->ring = NULL;
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}

void
rnic_evq_waiter_enter(pthread_mutex_t *lock, struct rnic_evq_waiters *w)
{
	pthread_mutex_lock(lock);
	w->count++;
	pthread_mutex_unlock(lock);
}

void
rnic_evq_waiter_park(pthread_mutex_t *lock, struct rnic_evq_waiters *w, void *channel)
{
	if (--w->count == 0)
		free(channel);
	pthread_mutex_unlock(lock);
	for (;;)
		pause();
}

int
rnic_evq_waiter_wait(pthread_mutex_t *lock, struct rnic_evq_waiters *w, int fd, void *channel)
{
	int err = rnic_evq_wait_fd(fd);

	pthread_mutex_lock(lock);
	if (w->destroyed)
		rnic_evq_waiter_park(lock, w, channel);
	pthread_mutex_unlock(lock);
	return err;
}

void
rnic_evq_waiter_leave(pthread_mutex_t *lock, struct rnic_evq_waiters *w, void *channel)
{
	int last;

	pthread_mutex_lock(lock);
	last = --w->count == 0 && w->destroyed;
	pthread_mutex_unlock(lock);
	if (last)
		free(channel);
}

int
rnic_evq_waiters_destroy(struct rnic_evq_waiters *w)
{
	w->destroyed = 1;
	return w->count == 0;
}

int
rnic_evq_post(struct rnic_evq *q, void *event, uint32_t size)
{
	const uint64_t one = 1;

	if (rte_ring_mp_enqueue_elem(q->ring, event, size) != 0)
		return -ENOSPC;
	/* The count follows the event, so a reader that got a count always finds its event. */
	if (write(q->fd, &one, sizeof(one)) != sizeof(one))
		RNIC_LOG_LIMITED(ERR, "event queue %s: eventfd write: %s", q->ring->name, strerror(errno));
	return 0;
}

int
rnic_evq_get(struct rnic_evq *q, void *event, uint32_t size)
{
	uint64_t count;

	while (read(q->fd, &count, sizeof(count)) < 0)
		if (errno != EINTR)
			return -1;
	/* Every count was written after its event was queued, so the event is there. */
	if (rte_ring_sc_dequeue_elem(q->ring, event, size) != 0) {
		errno = EIO;
		return -1;
	}
	return 0;
}

int
rnic_evq_wait_fd(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return errno;
	if (flags & O_NONBLOCK)
		return EAGAIN;
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return errno;
	return (pfd.revents & (POLLHUP | POLLERR)) && !(pfd.revents & POLLIN) ? ECONNRESET : 0;
}
