/* Pre-registered buffer pool (target/pool.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pool.h"

struct pool {
	char *mem;
	size_t bufsize;
	unsigned nbufs, nfree;
	unsigned *free_stack;
	struct ibv_mr *mr;
	struct pool_waiter *wait_head, *wait_tail;
};

struct pool *
pool_create(struct ibv_pd *pd, size_t bufsize, unsigned nbufs)
{
	struct pool *p = calloc(1, sizeof(*p));
	unsigned i;
	int r;

	if (p == NULL) {
		log_warnx("pool: out of memory");
		return NULL;
	}
	p->bufsize = bufsize;
	p->nbufs = nbufs;
	p->free_stack = calloc(nbufs, sizeof(*p->free_stack));
	if (p->free_stack == NULL) {
		log_warnx("pool: out of memory");
		goto out_free;
	}
	r = posix_memalign((void **)&p->mem, 4096, bufsize * nbufs);
	if (r != 0) {
		log_warnx("pool: cannot allocate %zu bytes: %s", bufsize * nbufs, strerror(r));
		goto out_free_stack;
	}
	memset(p->mem, 0, bufsize * nbufs);
	/* Local write only: RDMA READ lands here; nothing remote may touch it. */
	p->mr = ibv_reg_mr(pd, p->mem, bufsize * nbufs, IBV_ACCESS_LOCAL_WRITE);
	if (p->mr == NULL) {
		log_warn("pool: ibv_reg_mr of %zu bytes (check ulimit -l)", bufsize * nbufs);
		goto out_free_mem;
	}
	for (i = 0; i < nbufs; i++)
		p->free_stack[i] = nbufs - 1 - i;
	p->nfree = nbufs;
	return p;

out_free_mem:
	free(p->mem);
out_free_stack:
	free(p->free_stack);
out_free:
	free(p);
	return NULL;
}

void
pool_destroy(struct pool *p)
{
	if (p == NULL)
		return;
	if (p->nfree != p->nbufs)
		log_warnx("pool: destroyed with %u of %u buffers in use",
			  p->nbufs - p->nfree, p->nbufs);
	ibv_dereg_mr(p->mr);
	free(p->mem);
	free(p->free_stack);
	free(p);
}

void *
pool_get(struct pool *p)
{
	if (p->nfree == 0)
		return NULL;
	return p->mem + (size_t)p->free_stack[--p->nfree] * p->bufsize;
}

void
pool_put(struct pool *p, void *buf)
{
	size_t idx = (size_t)((char *)buf - p->mem) / p->bufsize;

	p->free_stack[p->nfree++] = (unsigned)idx;
}

uint32_t pool_lkey(const struct pool *p) { return p->mr->lkey; }
size_t pool_bufsize(const struct pool *p) { return p->bufsize; }
unsigned pool_nfree(const struct pool *p) { return p->nfree; }
unsigned pool_nbufs(const struct pool *p) { return p->nbufs; }

void
pool_wait(struct pool *p, struct pool_waiter *w)
{
	if (w->queued)
		return;
	w->next = NULL;
	w->queued = 1;
	if (p->wait_tail != NULL)
		p->wait_tail->next = w;
	else
		p->wait_head = w;
	p->wait_tail = w;
}

void
pool_cancel(struct pool *p, struct pool_waiter *w)
{
	struct pool_waiter **pp, *prev = NULL;

	if (!w->queued)
		return;
	for (pp = &p->wait_head; *pp != NULL; prev = *pp, pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			if (p->wait_tail == w)
				p->wait_tail = prev;
			break;
		}
	}
	w->queued = 0;
	w->next = NULL;
}

int
pool_has_waiters(const struct pool *p)
{
	return p->wait_head != NULL;
}

void
pool_service(struct pool *p)
{
	struct pool_waiter *w;

	while (p->nfree > 0 && (w = p->wait_head) != NULL) {
		p->wait_head = w->next;
		if (p->wait_head == NULL)
			p->wait_tail = NULL;
		w->next = NULL;
		w->queued = 0;
		w->wake(w);
	}
}
