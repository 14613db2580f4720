/* SPDX-License-Identifier: BSD-3-Clause
 * Event queues: what the application waits on for async events and completion events. A ring of fixed-size
 * events plus an eventfd in semaphore mode, so the fd is readable exactly while an event is pending and an
 * application can poll()/epoll() it like a libibverbs async_fd or completion channel fd.
 */
#ifndef RNIC_EVQ_H
#define RNIC_EVQ_H

#include <pthread.h>
#include <stdint.h>

#include <rte_ring.h>

struct rnic_evq {
	struct rte_ring *ring;
	int fd;
};

/* Create a queue of `count` events of `size` bytes (a multiple of 4); 0 or -ENOMEM. */
int rnic_evq_create(struct rnic_evq *q, const char *name, uint32_t size, uint32_t count, int socket_id);
void rnic_evq_free(struct rnic_evq *q);

/* Wait until an event fd (a CM channel's) polls readable, or EAGAIN at once when the application made it
 * non-blocking (a read of librdmacm's fd says so). 0 or an errno; ECONNRESET when its far end closed (rnicd
 * went away). */
int rnic_evq_wait_fd(int fd);

/* The gets waiting on a CM channel's fd (in-process or an rnicd client's), under the channel's lock: a
 * channel destroyed under them (rping's event thread waits so while its main thread ends) is freed after the
 * last, and a get that finds it destroyed never returns, as one of librdmacm's does not (its read of the
 * closed fd). channel: the object to free, which holds the waiters. */
struct rnic_evq_waiters {
	uint32_t count;
	uint8_t destroyed;
};

/* A get starts waiting. Takes the lock. */
void rnic_evq_waiter_enter(pthread_mutex_t *lock, struct rnic_evq_waiters *w);
/* A get that found no event: rnic_evq_wait_fd(fd), then never returns if the channel was destroyed meanwhile.
 * Takes the lock. */
int rnic_evq_waiter_wait(pthread_mutex_t *lock, struct rnic_evq_waiters *w, int fd, void *channel);
/* Under the lock (which it lets go): a get that found the channel destroyed never returns. */
void __rte_noreturn rnic_evq_waiter_park(pthread_mutex_t *lock, struct rnic_evq_waiters *w, void *channel);
/* The get is done (with an event taken before a destroy, or an error). Takes the lock. */
void rnic_evq_waiter_leave(pthread_mutex_t *lock, struct rnic_evq_waiters *w, void *channel);
/* Under the lock: the channel destroyed; 1 if no get waits and the caller frees it, else the last get does. */
int rnic_evq_waiters_destroy(struct rnic_evq_waiters *w);

/* Queue an event and wake the fd. Any thread, lock-free; -ENOSPC when the queue is full (event lost). */
int rnic_evq_post(struct rnic_evq *q, void *event, uint32_t size);

/* Take one event: blocks unless the fd is non-blocking (then -1 with errno EAGAIN); 0 or -1 with errno. */
int rnic_evq_get(struct rnic_evq *q, void *event, uint32_t size);

#endif /* RNIC_EVQ_H */
