/* Request slots and the data pool, sized from the granted queue depth and
 * max-io.  Each slot owns one max-io data buffer.  The pool is registered
 * (pinned) only once a request needs it: direct requests never do. */
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

	/* Mapped only: rb_slots_pool_ready registers it. */
	r = rb_region_map(&conn->data, (size_t)n * conn->exp.max_io, errbuf);
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
		s->send_buf = (char *)conn->send.base + (size_t)i * RB_MSG_BUF_SIZE;
		s->data = (char *)conn->data.base + (size_t)i * conn->exp.max_io;
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
	for (i = n; i-- > 0;)   /* slot 0 first */
		SLIST_INSERT_HEAD(&conn->free_slots, &conn->slots[i], free_link);
	/* One credit stays free for keepalive NOPs when there is more than one. */
	conn->data_credits = n > 1 && conn->cfg.keepalive_ns ? n - 1 : n;
	return 0;
}

/* Before a request that moves data through the pool is claimed: 0 once
 * the pool is registered, or -ENOMEM when it cannot be.  A registration
 * that failed is logged once and not tried again on this connection: each
 * try pins and unpins the pages it got, and a limit (ulimit -l) does not
 * move while the connection lives.  The
 * target RDMA WRITEs read data into its buffers and RDMA READs write data
 * out of them: with mr=window only through a window bound per request
 * (the MR itself has no remote access), with mr=static through the MR's
 * key, scoped to this connection's PD. */
int
rb_slots_pool_ready(struct rb_conn *conn)
{
	char err[RB_ERRBUF];
	int ready;

	if (__atomic_load_n(&conn->pool_ready, __ATOMIC_ACQUIRE) == 1)
		return 0;
	pthread_mutex_lock(&conn->pool_lock);
	if (conn->pool_ready == 0) {
		if (rb_region_register(&conn->data, conn->pd, conn->use_mw ?
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND :
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ, err) < 0) {
			rb_log(RB_LOG_ERROR, "%s:%u: the request pool: %s; requests that "
			       "need it fail with ENOMEM", conn->cfg.host, conn->cfg.port, err);
			__atomic_store_n(&conn->pool_ready, -1, __ATOMIC_RELEASE);
		} else {
			__atomic_add_fetch(&conn->cfg.stats->pool_bytes, conn->data.size,
					   __ATOMIC_RELAXED);
			__atomic_store_n(&conn->pool_ready, 1, __ATOMIC_RELEASE);
		}
	}
	ready = conn->pool_ready;
	pthread_mutex_unlock(&conn->pool_lock);
	return ready == 1 ? 0 : -ENOMEM;
}

/* Before the QP is destroyed: a bound type-2 window holds a reference on
 * its QP, and rxe's QP destroy waits up to 50 s for such references (seen
 * on 6.1: __rxe_cleanup). Deallocating a window also revokes its key.  A
 * window that cannot be deallocated keeps a valid key over the memory it
 * was bound to: it stays (s->mw, tried again at destroy) and the fence is
 * marked failed, so that memory is never reused or freed. */
unsigned
rb_slots_revoke(struct rb_conn *conn)
{
	unsigned i, failed = 0;
	int r = 0, err = 0;

	for (i = 0; i < conn->nslots; i++) {
		struct rb_slot *s = &conn->slots[i];

		if (s->mw == NULL)
			continue;
		r = conn->fault_fence ? EBUSY : ibv_dealloc_mw(s->mw);
		if (r != 0) {
			failed++;
			err = r;
			continue;
		}
		s->mw = NULL;
	}
	if (failed > 0 && !conn->fence_failed)
		rb_log(RB_LOG_ERROR, "%s:%u: %u memory window(s) cannot be deallocated: %s; "
		       "the memory under them is never reused", conn->cfg.host, conn->cfg.port,
		       failed, strerror(err));
	if (failed > 0)
		conn->fence_failed = 1;
	return failed;
}

/* Only after the QP is destroyed. */
void
rb_slots_destroy(struct rb_conn *conn)
{
	unsigned i, live = rb_slots_revoke(conn);

	for (i = 0; i < conn->nslots; i++)
		pthread_cond_destroy(&conn->slots[i].cond);
	free(conn->slots);
	conn->slots = NULL;
	conn->nslots = 0;
	if (live > 0) {
		/* Keys over the pool still work: it stays mapped, registered
		 * and out of use until the process exits. */
		rb_log(RB_LOG_ERROR, "%s:%u: the pool's %zu bytes stay allocated: %u window(s) "
		       "over them could not be revoked", conn->cfg.host, conn->cfg.port,
		       conn->data.size, live);
		memset(&conn->data, 0, sizeof(conn->data));
		return;
	}
	rb_region_destroy(&conn->data);
}

struct rb_slot *
rb_slot_get_locked(struct rb_conn *conn, int keepalive)
{
	unsigned limit = keepalive ? conn->nslots : conn->data_credits;
	struct rb_slot *s;

	s = SLIST_FIRST(&conn->free_slots);
	if (s == NULL || conn->inflight >= limit)
		return NULL;
	SLIST_REMOVE_HEAD(&conn->free_slots, free_link);
	conn->inflight++;
	s->gen = (s->gen + 1) & ((UINT64_C(1) << (64 - RB_TAG_INDEX_BITS)) - 1);
	s->owned = !keepalive;
	s->window = 0;
	s->gather = 0;
	s->sent = 0;
	s->following = 0;
	s->bind_len = 0;
	s->direct = NULL;
	memset(&s->rin, 0, sizeof(s->rin));
	s->aio = NULL;
	memset(&s->rep, 0, sizeof(s->rep));
	__atomic_store_n(&s->state, RB_SLOT_POSTED, __ATOMIC_RELEASE);
	return s;
}

/* The state moves only below.  Stored atomically: an owner may look at its
 * own slot without the lock (cq.c, wait.c). */
static void
set_state(struct rb_slot *s, enum rb_slot_state st)
{
	__atomic_store_n(&s->state, st, __ATOMIC_RELEASE);
}

/* -> FREE: back on the free list. */
static unsigned
to_free_locked(struct rb_conn *conn, struct rb_slot *s)
{
	if (s->state == RB_SLOT_RELEASED)
		conn->released--;
	set_state(s, RB_SLOT_FREE);
	SLIST_INSERT_HEAD(&conn->free_slots, s, free_link);
	conn->inflight--;
	return conn->slot_waiters > 0 ? RB_SLOT_DO_CREDIT : 0;
}

/* Nobody owns s any more.  The send buffer may be reused only after its
 * SEND completion (RDMA rules): until it is reaped the slot waits as
 * RELEASED. */
static unsigned
to_released_locked(struct rb_conn *conn, struct rb_slot *s)
{
	if (s->sent)
		return to_free_locked(conn, s);
	set_state(s, RB_SLOT_RELEASED);
	conn->released++;
	return 0;
}

/* Replied and the window (if any) is invalid: nothing writes the slot any
 * more.  DONE for an owner; a keepalive NOP is finished here. */
static unsigned
to_done_locked(struct rb_conn *conn, struct rb_slot *s)
{
	if (s->owned) {
		set_state(s, RB_SLOT_DONE);
		return RB_SLOT_DO_WAKE_OWNER;
	}
	if (s->rep.error != RB_OK)
		rb_log(RB_LOG_DEBUG, "keepalive NOP failed: %s",
		       rb_error_name(s->rep.error));
	conn->nop_inflight = 0;
	return to_released_locked(conn, s);
}

/* Replied, and the window (if any) is invalid.  A SEND that gathers the
 * caller's bytes may still read them until its completion: REPLIED until
 * then, with the send CQ armed by whoever sleeps (wait.c). */
static unsigned
replied_locked(struct rb_conn *conn, struct rb_slot *s)
{
	if (!s->gather || s->sent)
		return to_done_locked(conn, s);
	set_state(s, RB_SLOT_REPLIED);
	__atomic_add_fetch(&conn->sends_awaited, 1, __ATOMIC_RELEASE);
	return RB_SLOT_DO_ARM_SEND;
}

/* Leaving REPLIED. */
static void
unawait_send_locked(struct rb_conn *conn, struct rb_slot *s)
{
	if (s->state == RB_SLOT_REPLIED)
		__atomic_sub_fetch(&conn->sends_awaited, 1, __ATOMIC_RELEASE);
}

unsigned
rb_slot_event_locked(struct rb_conn *conn, struct rb_slot *s, enum rb_slot_event ev)
{
	switch (ev) {
	case RB_SLOT_EV_SENT:
		s->sent = 1;
		if (s->state == RB_SLOT_REPLIED) {
			unawait_send_locked(conn, s);
			return to_done_locked(conn, s);
		}
		return s->state == RB_SLOT_RELEASED ? to_free_locked(conn, s) : 0;
	case RB_SLOT_EV_REPLY:
		if (s->state != RB_SLOT_POSTED)
			return 0;
		if (s->window) {
			set_state(s, RB_SLOT_INVALIDATING);
			return RB_SLOT_DO_POST_INV;
		}
		return replied_locked(conn, s);
	case RB_SLOT_EV_REPLY_INV:
		return s->state == RB_SLOT_POSTED ? replied_locked(conn, s) : 0;
	case RB_SLOT_EV_INVALIDATED:
		return s->state == RB_SLOT_INVALIDATING ? replied_locked(conn, s) : 0;
	case RB_SLOT_EV_OWNER_DONE:
		return s->state == RB_SLOT_DONE ? to_released_locked(conn, s) : 0;
	case RB_SLOT_EV_POST_FAILED:
		/* Not posted, so nothing references the slot (even if the
		 * connection died meanwhile and orphaned it). */
		return s->state == RB_SLOT_POSTED || s->state == RB_SLOT_ORPHANED ?
			to_free_locked(conn, s) : 0;
	case RB_SLOT_EV_CONN_DEAD:
		/* Unanswered: orphaned for good.  A DONE slot keeps its reply.
		 * A REPLIED one never hears of its flushed SEND: it is resent,
		 * as a request whose reply was lost would be. */
		if (s->state != RB_SLOT_POSTED && s->state != RB_SLOT_INVALIDATING &&
		    s->state != RB_SLOT_REPLIED)
			return 0;
		unawait_send_locked(conn, s);
		set_state(s, RB_SLOT_ORPHANED);
		return s->owned ? RB_SLOT_DO_WAKE_OWNER : 0;
	}
	return 0;
}
