/* Request slots and the pre-registered data pool, sized from the granted
 * queue depth and max-io.  Each slot owns one max-io data buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int
rb_slots_create(struct rb_conn *conn, char *errbuf)
{
	unsigned i, n = conn->exp.queue_depth;
	pthread_condattr_t ca;
	int r;

	/* The target RDMA WRITEs read data into these buffers and RDMA READs
	 * write data out of them.  The key is scoped to this connection's PD;
	 * s->rkey is where a per-request memory window key would go. */
	r = rb_region_create(&conn->data, conn->pd, (size_t)n * conn->exp.max_io,
			     conn->use_mw ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND :
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ, errbuf);
	if (r < 0)
		return r;
	conn->slots = calloc(n, sizeof(*conn->slots));
	if (conn->slots == NULL) {
		rb_seterr(errbuf, "out of memory");
		return -ENOMEM;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (i = 0; i < n; i++) {
		struct rb_slot *s = &conn->slots[i];

		s->ctx.kind = RB_WR_SEND_SLOT;
		s->ctx.index = i;
		s->state = RB_SLOT_FREE;
		pthread_cond_init(&s->cond, &ca);
		s->send_buf = (char *)conn->send.base + (size_t)i * RB_RECV_BUF_SIZE;
		s->data = (char *)conn->data.base + (size_t)i * conn->exp.max_io;
		s->rkey = conn->data.mr->rkey;
		s->next_free = i + 1 < n ? (int)i + 1 : -1;
		s->bind_ctx.kind = RB_WR_BIND;
		s->bind_ctx.index = i;
		s->inv_ctx.kind = RB_WR_LOCAL_INV;
		s->inv_ctx.index = i;
		conn->nslots = i + 1;   /* for rb_slots_destroy on failure */
		if (conn->use_mw) {
			/* The pool MR itself has no remote access: only a
			 * window bound for a live request can be used. */
			s->mw = ibv_alloc_mw(conn->pd, IBV_MW_TYPE_2);
			if (s->mw == NULL) {
				pthread_condattr_destroy(&ca);
				rb_seterr(errbuf, "ibv_alloc_mw (type 2): %s", strerror(errno));
				return -ENOMEM;
			}
			s->rkey = s->mw->rkey;
		}
	}
	pthread_condattr_destroy(&ca);
	conn->nslots = n;
	conn->free_head = 0;
	/* One credit stays free for keepalive NOPs when there is more than one. */
	conn->data_credits = n > 1 && conn->cfg.keepalive_ns ? n - 1 : n;
	return 0;
}

/* Before the QP is destroyed: a bound type-2 window holds a reference on
 * its QP, and rxe's QP destroy waits up to 50 s for such references (seen
 * on 6.1: __rxe_cleanup). Deallocating a window also revokes its key. */
void
rb_slots_revoke(struct rb_conn *conn)
{
	unsigned i;

	for (i = 0; i < conn->nslots; i++) {
		if (conn->slots[i].mw != NULL)
			ibv_dealloc_mw(conn->slots[i].mw);
		conn->slots[i].mw = NULL;
	}
}

/* Only after the QP is destroyed. */
void
rb_slots_destroy(struct rb_conn *conn)
{
	unsigned i;

	rb_slots_revoke(conn);
	for (i = 0; i < conn->nslots; i++)
		pthread_cond_destroy(&conn->slots[i].cond);
	free(conn->slots);
	conn->slots = NULL;
	conn->nslots = 0;
	rb_region_destroy(&conn->data);
}

struct rb_slot *
rb_slot_get_locked(struct rb_conn *conn, int keepalive)
{
	unsigned limit = keepalive ? conn->nslots : conn->data_credits;
	struct rb_slot *s;

	if (conn->free_head < 0 || conn->inflight >= limit)
		return NULL;
	s = &conn->slots[conn->free_head];
	conn->free_head = s->next_free;
	conn->inflight++;
	s->gen = (s->gen + 1) & ((UINT64_C(1) << (64 - RB_TAG_INDEX_BITS)) - 1);
	s->send_done = 0;
	s->replied = 0;
	s->waiter = 0;
	s->following = 0;
	s->bind_len = 0;
	s->direct = NULL;
	s->mw_live = 0;
	s->inv_posted = 0;
	s->aio = NULL;
	s->aio_next = -1;
	memset(&s->rep, 0, sizeof(s->rep));
	return s;
}

int
rb_slot_put_locked(struct rb_conn *conn, struct rb_slot *s)
{
	s->state = RB_SLOT_FREE;
	s->next_free = conn->free_head;
	conn->free_head = (int)s->ctx.index;
	conn->inflight--;
	return conn->slot_waiters > 0;
}

/* The send buffer may be reused only after its SEND completion (RDMA
 * rules): until it is reaped the slot waits as RELEASED. */
int
rb_slot_release_locked(struct rb_conn *conn, struct rb_slot *s)
{
	if (s->send_done)
		return rb_slot_put_locked(conn, s);
	s->state = RB_SLOT_RELEASED;
	conn->released++;
	return 0;
}
