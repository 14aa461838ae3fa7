/* A FIFO of waiters (<sys/queue.h> TAILQ).  Requests wait on one for a
 * pool buffer (pool.c) or for send-queue room (sendq.c); a waiter is on
 * at most one queue at a time, and waiter_cancel takes it off whichever
 * that is.  Event-loop thread only. */
#ifndef RDMABLK_TARGET_WAITQ_H
#define RDMABLK_TARGET_WAITQ_H

#include <stddef.h>
#include <sys/queue.h>

struct waitq;

struct waiter {
	TAILQ_ENTRY(waiter) link;
	struct waitq *q;                    /* the queue it is on, or NULL */
	void (*wake)(struct waiter *w);     /* what it waited for may be there */
};

struct waitq {
	TAILQ_HEAD(, waiter) head;
};

static inline void
waitq_init(struct waitq *q)
{
	TAILQ_INIT(&q->head);
}

static inline struct waiter *
waitq_first(const struct waitq *q)
{
	return TAILQ_FIRST(&q->head);
}

static inline int
waitq_empty(const struct waitq *q)
{
	return TAILQ_EMPTY(&q->head);
}

static inline void
waiter_cancel(struct waiter *w)
{
	if (w->q == NULL)
		return;
	TAILQ_REMOVE(&w->q->head, w, link);
	w->q = NULL;
}

/* Queue w at the tail of q; a no-op when it is on q already. */
static inline void
waitq_add(struct waitq *q, struct waiter *w)
{
	if (w->q == q)
		return;
	waiter_cancel(w);
	TAILQ_INSERT_TAIL(&q->head, w, link);
	w->q = q;
}

/* Take the first waiter off q and wake it. */
static inline void
waitq_wake_first(struct waitq *q)
{
	struct waiter *w = waitq_first(q);

	if (w == NULL)
		return;
	waiter_cancel(w);
	w->wake(w);
}

#endif
