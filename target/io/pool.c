/* Pre-registered buffer pool (target/io/pool.h). */
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
	struct waitq waiters;
};

struct pool *
pool_create(struct ibv_pd *pd, size_t bufsize, unsigned nbufs)
{
	struct pool *p = calloc(1, sizeof(*p));
	size_t size;
	unsigned i;
	int r;

	if (p == NULL) {
		log_warnx("pool: out of memory");
		return NULL;
	}
	p->bufsize = bufsize;
	p->nbufs = nbufs;
	waitq_init(&p->waiters);
	p->free_stack = calloc(nbufs, sizeof(*p->free_stack));
	if (p->free_stack == NULL) {
		log_warnx("pool: out of memory");
		goto out_free;
	}
	size = (bufsize + POOL_HDR_SIZE) * nbufs;
	r = posix_memalign((void **)&p->mem, 4096, size);
	if (r != 0) {
		log_warnx("pool: cannot allocate %zu bytes: %s", size, strerror(r));
		goto out_free_stack;
	}
	memset(p->mem, 0, size);
	/* Local write only: RDMA READ lands here; nothing remote may touch it. */
	p->mr = ibv_reg_mr(pd, p->mem, size, IBV_ACCESS_LOCAL_WRITE);
	if (p->mr == NULL) {
		log_warn("pool: ibv_reg_mr of %zu bytes (check ulimit -l)", size);
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

/* Which buffer buf is. */
static size_t
buf_index(const struct pool *p, const void *buf)
{
	return (size_t)((const char *)buf - p->mem) / p->bufsize;
}

void
pool_put(struct pool *p, void *buf)
{
	p->free_stack[p->nfree++] = (unsigned)buf_index(p, buf);
}

void *
pool_hdr(struct pool *p, const void *buf)
{
	return p->mem + p->bufsize * p->nbufs + buf_index(p, buf) * POOL_HDR_SIZE;
}

uint32_t pool_lkey(const struct pool *p) { return p->mr->lkey; }
size_t pool_bufsize(const struct pool *p) { return p->bufsize; }
unsigned pool_nfree(const struct pool *p) { return p->nfree; }
unsigned pool_nbufs(const struct pool *p) { return p->nbufs; }

void
pool_wait(struct pool *p, struct waiter *w)
{
	waitq_add(&p->waiters, w);
}

int
pool_has_waiters(const struct pool *p)
{
	return !waitq_empty(&p->waiters);
}

void
pool_service(struct pool *p)
{
	while (p->nfree > 0 && !waitq_empty(&p->waiters))
		waitq_wake_first(&p->waiters);
}
