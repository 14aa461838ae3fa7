/* Unit test for target/io/pool.c, the pre-registered buffer pool: one
 * registration of nbufs x bufsize with local write access only, get until
 * exhausted, put back, and the FIFO of requests waiting for a buffer
 * (wait, waiter_cancel, service).  No RDMA needed: this test defines ibv_reg_mr
 * and ibv_dereg_mr itself, so pool.c's calls land here and the test sees
 * what the pool asked the device for. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../target/io/pool.h"
#include "../../target/io/waitq.h"

#include "check.h"

static struct ibv_mr fake_mr;
static struct ibv_pd fake_pd;
static int reg_calls, dereg_calls, reg_access;
static void *reg_addr;
static size_t reg_length;

struct ibv_mr *
(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	reg_calls++;
	reg_addr = addr;
	reg_length = length;
	reg_access = access;
	memset(&fake_mr, 0, sizeof(fake_mr));
	fake_mr.pd = pd;
	fake_mr.addr = addr;
	fake_mr.length = length;
	fake_mr.lkey = 0x1234;
	return &fake_mr;
}

int
ibv_dereg_mr(struct ibv_mr *mr)
{
	dereg_calls += mr == &fake_mr;
	return 0;
}

/* A request waiting for a buffer: its wake-up takes one (or, finding none,
 * waits again, as a request does). */
struct req_waiter {
	struct waiter w;
	struct pool *pool;
	int id;
	void *buf;
};

static int woken[8], nwoken;

static void
waiter_wake(struct waiter *pw)
{
	struct req_waiter *w = (struct req_waiter *)((char *)pw - offsetof(struct req_waiter, w));

	if (nwoken < 8)
		woken[nwoken++] = w->id;
	w->buf = pool_get(w->pool);
	if (w->buf == NULL)
		pool_wait(w->pool, &w->w);
}

static void
waiter_init(struct req_waiter *w, struct pool *p, int id)
{
	memset(w, 0, sizeof(*w));
	w->w.wake = waiter_wake;
	w->pool = p;
	w->id = id;
}

/* The buffer is one of the pool's: inside the registration, on a bufsize
 * boundary. */
static int
is_pool_buf(const void *buf, size_t bufsize, unsigned nbufs)
{
	uintptr_t off = (uintptr_t)buf - (uintptr_t)reg_addr;

	return buf != NULL && (uintptr_t)buf >= (uintptr_t)reg_addr &&
	       off < bufsize * nbufs && off % bufsize == 0;
}

static void
check_create_and_exhaust(void)
{
	struct pool *p = pool_create(&fake_pd, 4096, 4);
	void *b[4], *extra;
	int i, j, distinct = 1, inside = 1;

	check(p != NULL, "create: a pool of 4 x 4096");
	if (p == NULL)
		return;
	check(reg_calls == 1 && reg_length == 4 * (4096 + 64) && fake_mr.pd == &fake_pd,
	      "create: one registration of all buffers and their header areas, on the PD given");
	check(reg_access == IBV_ACCESS_LOCAL_WRITE,
	      "create: local write only, never remote access");
	check(((uintptr_t)reg_addr & 4095) == 0, "create: the buffers are page aligned");
	check(pool_lkey(p) == 0x1234 && pool_bufsize(p) == 4096 && pool_nbufs(p) == 4 &&
	      pool_nfree(p) == 4, "create: lkey, bufsize, nbufs, all free");

	for (i = 0; i < 4; i++) {
		b[i] = pool_get(p);
		inside &= is_pool_buf(b[i], 4096, 4);
		for (j = 0; j < i; j++)
			distinct &= b[i] != b[j];
	}
	check(inside, "get: each buffer lies inside the registration, on a boundary");
	check(distinct, "get: four gets, four different buffers");
	distinct = 1;
	inside = 1;
	for (i = 0; i < 4; i++) {
		uintptr_t h = (uintptr_t)pool_hdr(p, b[i]), base = (uintptr_t)reg_addr;

		inside &= h >= base + 4 * 4096 && h + 64 <= base + reg_length;
		for (j = 0; j < i; j++)
			distinct &= pool_hdr(p, b[j]) != (void *)h;
	}
	check(inside, "hdr: each header area lies in the registration, past every buffer");
	check(distinct, "hdr: each buffer has a header area of its own");
	check(pool_nfree(p) == 0, "get: all four in use");
	check(pool_get(p) == NULL, "exhausted: get returns NULL");

	pool_put(p, b[2]);
	check(pool_nfree(p) == 1, "put: one free again");
	extra = pool_get(p);
	check(extra == b[2], "put: the buffer put back is the one the next get returns");
	check(pool_get(p) == NULL, "put then get: exhausted again");

	for (i = 0; i < 4; i++)
		pool_put(p, b[i]);
	check(pool_nfree(p) == 4, "put: all four back");
	pool_destroy(p);
	check(dereg_calls == 1, "destroy: the registration is released");
}

static void
check_waiters(void)
{
	struct pool *p = pool_create(&fake_pd, 512, 2);
	struct req_waiter w[7];
	void *a, *b;
	int i;

	check(p != NULL, "waiters: a pool of 2 x 512");
	if (p == NULL)
		return;
	for (i = 1; i <= 6; i++)
		waiter_init(&w[i], p, i);
	a = pool_get(p);
	b = pool_get(p);
	check(!pool_has_waiters(p), "waiters: none at first");

	pool_wait(p, &w[1].w);
	pool_wait(p, &w[2].w);
	pool_wait(p, &w[1].w);          /* already queued: no second entry */
	check(pool_has_waiters(p), "wait: requests wait while the pool is empty");
	nwoken = 0;
	pool_service(p);
	check(nwoken == 0, "service: nothing free, nobody woken");

	pool_put(p, a);
	pool_service(p);
	check(nwoken == 1 && woken[0] == 1 && w[1].buf == a,
	      "service: one buffer free, the first waiter takes it");
	check(pool_has_waiters(p) && w[2].buf == NULL, "service: the second still waits");

	pool_put(p, b);
	pool_service(p);
	check(nwoken == 2 && woken[1] == 2 && w[2].buf == b && !pool_has_waiters(p),
	      "service: the next buffer goes to the second, in order; none waits");

	/* Exhausted again (1 and 2 hold both buffers). */
	nwoken = 0;
	pool_wait(p, &w[3].w);
	pool_wait(p, &w[4].w);
	pool_wait(p, &w[5].w);
	waiter_cancel(&w[4].w);        /* from the middle */
	waiter_cancel(&w[5].w);        /* the tail */
	waiter_cancel(&w[5].w);        /* not queued: nothing */
	pool_wait(p, &w[6].w);          /* after a cancelled tail */
	pool_put(p, w[1].buf);
	pool_put(p, w[2].buf);
	pool_service(p);
	check(nwoken == 2 && woken[0] == 3 && woken[1] == 6,
	      "cancel: the cancelled are never woken, the rest in order");
	check(w[3].buf != NULL && w[6].buf != NULL && w[4].buf == NULL && w[5].buf == NULL &&
	      !pool_has_waiters(p), "cancel: only the waiting got buffers, nobody waits");
	pool_put(p, w[3].buf);
	pool_put(p, w[6].buf);
	check(pool_nfree(p) == 2, "waiters: every buffer back");
	pool_destroy(p);
}

int
main(void)
{
	check_create_and_exhaust();
	check_waiters();
	printf("test-pool: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
