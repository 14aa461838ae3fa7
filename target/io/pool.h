/* Pre-registered data buffers, one pool per device PD.
 *
 * All buffers are registered once, at startup (or on the first connection of
 * a device when listening on a wildcard address), with IBV_ACCESS_LOCAL_WRITE
 * only: the target never exposes its memory to remote access.  Nothing is
 * registered on the I/O path.  When the pool is empty a request waits on the
 * pool's FIFO (back-pressure) instead of failing. */
#ifndef RDMABLK_TARGET_POOL_H
#define RDMABLK_TARGET_POOL_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#include "waitq.h"

/* Behind the buffers, each buffer's small registered area: a reply's
 * header gathered ahead of the buffer's data (pool_hdr). */
#define POOL_HDR_SIZE 64

struct pool;
struct pool *pool_create(struct ibv_pd *pd, size_t bufsize, unsigned nbufs);
void pool_destroy(struct pool *p);

void    *pool_get(struct pool *p);          /* NULL when empty */
void     pool_put(struct pool *p, void *buf);
/* POOL_HDR_SIZE registered bytes (pool_lkey) that belong to buf, apart from its
 * bufsize bytes: a reply's header, gathered ahead of buf's data. */
void    *pool_hdr(struct pool *p, const void *buf);
uint32_t pool_lkey(const struct pool *p);
size_t   pool_bufsize(const struct pool *p);
unsigned pool_nfree(const struct pool *p);
unsigned pool_nbufs(const struct pool *p);

/* Queue w for a buffer: w->wake runs (from pool_service) when one may be
 * free.  waiter_cancel (waitq.h) takes it off again. */
void pool_wait(struct pool *p, struct waiter *w);
/* 1 while some request waits for a buffer. */
int  pool_has_waiters(const struct pool *p);
/* Wake waiters while buffers are free; called by the event loop after each
 * round so that wake-ups never nest inside another request's driver. */
void pool_service(struct pool *p);

#endif
