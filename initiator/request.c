/* One request on one connection: take a credit, copy in, post the SEND
 * (and the window's BIND), wait (leading or following, wait.c), copy out,
 * give the credit back.  The keepalive NOP (timer.c) is posted here too. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "internal.h"
#include "util.h"

/* Timed copy between the caller's memory and registered memory. */
void
rb_copy_timed(struct rb_conn *conn, void *dst, const void *src, size_t len)
{
	uint64_t t0 = rb_now_ns();

	memcpy(dst, src, len);
	__atomic_add_fetch(&conn->cfg.stats->copy_ns, rb_now_ns() - t0,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&conn->cfg.stats->copy_bytes, len, __ATOMIC_RELAXED);
}

/* Post the request SEND of slot s (with, for a window, its BIND ahead of
 * it); under conn->lock or by its owner. */
int
rb_post_request(struct rb_conn *conn, struct rb_slot *s, const struct rb_req_info *ri)
{
	struct ibv_send_wr wr, bind, *bad;
	struct ibv_sge sge[2];
	int r;

	rb_conn_send_wr(conn, &wr, &sge[0], s->send_buf,
			rb_request_encode(s->send_buf, ri), &s->ctx);
	if (s->gather) {
		/* The header from the send buffer, the data from the caller's
		 * registered bytes: the wire carries what a copy would. */
		sge[0].length -= ri->length;
		sge[1].addr = (uintptr_t)s->direct;
		sge[1].length = ri->length;
		sge[1].lkey = conn->direct_mr->lkey;
		wr.num_sge = 2;
	}
	if (s->bind_len == 0)
		return -ibv_post_send(conn->id->qp, &wr, &bad);
	/* Bind the slot's window over exactly the request's bytes, on this
	 * QP, ahead of the SEND: the target sees the key only after the
	 * bind (send queue order). */
	memset(&bind, 0, sizeof(bind));
	bind.wr_id = (uintptr_t)&s->bind_ctx;
	bind.opcode = IBV_WR_BIND_MW;
	bind.bind_mw.mw = s->mw;
	bind.bind_mw.rkey = s->rkey;
	bind.bind_mw.bind_info.mr = s->direct != NULL ? conn->direct_mr : conn->data.mr;
	bind.bind_mw.bind_info.addr = (uintptr_t)(s->direct != NULL ? s->direct : s->data);
	bind.bind_mw.bind_info.length = s->bind_len;
	bind.bind_mw.bind_info.mw_access_flags = (unsigned)s->bind_access;
	bind.next = &wr;
	/* The test hook: name a stale current key, which the device must
	 * refuse (rxe: IBV_WC_MW_BIND_ERR), like any failed bind. */
	if (conn->fault_bind != 0 &&
	    __atomic_add_fetch(&conn->binds, 1, __ATOMIC_RELAXED) % conn->fault_bind == 0)
		s->mw->rkey = ibv_inc_rkey(s->rkey);
	r = ibv_post_send(conn->id->qp, &bind, &bad);
	/* Providers read mw->rkey as the window's current key (rxe checks
	 * it against its own): once bound, that is the new key. */
	if (r == 0 || bad == &wr)
		s->mw->rkey = s->rkey;
	return -r;
}

/* A WRITE small enough to travel in its request SEND, or a READ whose
 * data comes back in its reply.  A pool READ always: the reply's copy
 * replaces the pool's.  A direct READ only when the reply is the data
 * alone (READ_IMM): one packet instead of the RDMA WRITE's and the
 * reply's, and no window to bind and kill, for one copy of at most 4 KiB
 * (docs/performance.md, "A 4 KiB read reply in one packet"). */
static int
io_inline(const struct rb_conn *conn, const struct rb_io *io)
{
	if (io->opcode == RB_OP_READ)
		return conn->read_inline && (!io->direct || conn->read_imm) &&
		       io->length <= RB_READ_INLINE_MAX;
	return io->opcode == RB_OP_WRITE && io->length <= conn->exp.inline_max;
}

/* 1 when io's data moves through a slot's pool buffer (prepare): the pool
 * must be registered (rb_slots_pool_ready) before its slot is claimed. */
int
rb_io_uses_pool(const struct rb_conn *conn, const struct rb_io *io)
{
	return (io->opcode == RB_OP_READ || io->opcode == RB_OP_WRITE) &&
	       !io_inline(conn, io) && !io->direct;
}

/* Fill the wire request; WRITE data goes inline when it is small enough,
 * otherwise into the slot's pool buffer for the target to RDMA READ (or,
 * direct, stays in the caller's registered memory: direct.c). */
static void
prepare(struct rb_conn *conn, struct rb_slot *s, const struct rb_io *io,
	struct rb_req_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->opcode = io->opcode;
	ri->ttl = s->ttl;
	ri->flags = io->flags;
	ri->tag = rb_tag(s->ctx.index, s->gen);
	ri->offset = io->offset;
	ri->length = io->length;
	if (io_inline(conn, io) && io->opcode == RB_OP_READ) {
		/* No key, no window: the reply brings the data, and the
		 * reaper copies the caller's part of it out (cq.c, to
		 * s->rin, set with the claim). */
		ri->flags |= RB_REQ_INLINE;
	} else if (io_inline(conn, io)) {
		ri->flags |= RB_REQ_INLINE;
		if (s->gather)  /* the SEND gathers them (rb_post_request) */
			s->direct = (void *)(uintptr_t)io->wbuf;
		else
			rb_copy_timed(conn, (char *)s->send_buf + sizeof(struct rb_request),
				   io->wbuf, io->length);
	} else if (io->opcode == RB_OP_WRITE || io->opcode == RB_OP_READ) {
		/* Direct: the target moves the caller's own bytes.  The
		 * pool's branch is rb_io_uses_pool's, which registered it. */
		s->direct = rb_io_uses_pool(conn, io) ? NULL : io->opcode == RB_OP_READ ?
			io->rbuf : (void *)(uintptr_t)io->wbuf;
		if (io->opcode == RB_OP_WRITE && s->direct == NULL)
			rb_copy_timed(conn, s->data, io->wbuf, io->length);
		if (conn->use_mw) {
			/* The window covers exactly these bytes (its fresh key
			 * was chosen with the slot), with only the access the
			 * op needs. */
			s->bind_len = io->length;
			s->bind_access = io->opcode == RB_OP_READ ?
				IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
		}
		ri->addr = (uintptr_t)(s->direct != NULL ? s->direct : s->data);
		/* A window (always for direct: direct.c), or the pool's key. */
		ri->rkey = conn->use_mw ? s->rkey : conn->data.mr->rkey;
	}
}

/* Under the lock, no credit free.  Slots RELEASED (waiting for a SEND
 * completion nobody is armed for) or a keepalive NOP with no leader to reap
 * it would otherwise sit until the housekeeping thread's next round (up to a
 * keepalive away): reap them here, then wait a little and look again. */
#define SLOT_REPOLL_NS (2 * 1000000ull)

static int
wait_for_credit_locked(struct rb_conn *conn, uint64_t deadline_ns)
{
	struct timespec ts;
	uint64_t until = deadline_ns;
	int r;

	if (conn->leader < 0 && (conn->released > 0 || conn->nop_inflight)) {
		pthread_mutex_unlock(&conn->lock);
		rb_cq_poll_empty(conn, NULL, NULL);
		pthread_mutex_lock(&conn->lock);
		if (!SLIST_EMPTY(&conn->free_slots) && conn->inflight < conn->data_credits)
			return 0;
		until = rb_deadline_after(SLOT_REPOLL_NS);
		if (until > deadline_ns)
			until = deadline_ns;
	}
	ts = rb_deadline_timespec(until);
	conn->slot_waiters++;
	r = pthread_cond_timedwait(&conn->slot_cond, &conn->lock, &ts);
	conn->slot_waiters--;
	if (r == ETIMEDOUT && until == deadline_ns)
		return -ETIMEDOUT;
	return 0;
}

void
rb_conn_claim_locked(struct rb_conn *conn, struct rb_slot *s, const struct rb_io *io)
{
	s->opcode = io->opcode;
	/* Under the lock: rb_conn_hold_ns reads them once the connection died. */
	s->post_ns = rb_now_ns();
	s->ttl = (conn->exp.flags & RB_EXP_TTL) && !conn->test_no_ttl && io->deadline_ns != 0 ?
		rb_ttl_for(io->deadline_ns, s->post_ns) : 0;
	/* Set under the lock, before posting: whoever reaps the reply reads
	 * them under the lock too.  A fresh window key per request. */
	s->window = conn->use_mw && (io->opcode == RB_OP_READ || io->opcode == RB_OP_WRITE) &&
		!io_inline(conn, io);
	if (s->window)
		s->rkey = ibv_inc_rkey(s->rkey);
	/* A direct inline WRITE: no copy into the send buffer. */
	s->gather = io->direct && io->opcode == RB_OP_WRITE && io->length > 0 &&
		io_inline(conn, io);
	/* An inline READ: where the reaper puts the caller's part of the
	 * reply's data. */
	if (io->opcode == RB_OP_READ && io_inline(conn, io)) {
		s->rin.dst = io->rbuf;
		s->rin.len = io->length;
		s->rin.off = io->copy_off;
		s->rin.n = io->copy_len;
	}
}

int
rb_conn_post(struct rb_conn *conn, struct rb_slot *s, const struct rb_io *io)
{
	struct rb_req_info ri;
	unsigned todo;
	int r;

	/* The slot is ours until we put it back: no lock for the copy. */
	prepare(conn, s, io, &ri);
	r = rb_post_request(conn, s, &ri);
	if (r == 0)
		return 0;
	pthread_mutex_lock(&conn->lock);
	todo = rb_slot_event_locked(conn, s, RB_SLOT_EV_POST_FAILED);
	rb_log(RB_LOG_ERROR, "%s: ibv_post_send: %s",
	       rb_opcode_name(io->opcode), strerror(-r));
	rb_conn_mark_dead_locked(conn, "cannot post a request");
	pthread_mutex_unlock(&conn->lock);
	if (todo & RB_SLOT_DO_CREDIT)
		pthread_cond_signal(&conn->slot_cond);
	return -EAGAIN;
}

/* A BLOCK_STATUS reply's extents, from the slot's buffer into io (before
 * the slot is released): 0, or -1 for extents that break the protocol. */
static int
take_extents(const struct rb_conn *conn, struct rb_io *io, const struct rb_rep_info *rep)
{
	const char *why = "";
	unsigned i;

	if (rb_extents_check(rep, io->length, conn->exp.min_block, &why) != RB_OK) {
		rb_log(RB_LOG_ERROR, "%s:%u: bad reply to BLOCK_STATUS %u@%llu: %s",
		       conn->cfg.host, conn->cfg.port, io->length,
		       (unsigned long long)io->offset, why);
		return -1;
	}
	io->ext_n = rep->nextents < io->ext_max ? rep->nextents : io->ext_max;
	for (i = 0; i < io->ext_n; i++)
		rb_extent_get(rep, i, &io->ext[i]);
	return 0;
}

int
rb_conn_finish(struct rb_conn *conn, struct rb_slot *s, struct rb_io *io)
{
	struct rb_rep_info rep;
	unsigned todo;
	int bad = 0;

	/* DONE: nothing writes the slot's reply or data any more (RC
	 * ordering: the reply's arrival implies the RDMA WRITE landed, and
	 * the window is invalid). */
	rep = s->rep;
	if (io->opcode == RB_OP_READ && rep.error == RB_OK && s->direct == NULL &&
	    s->rin.len == 0)
		rb_copy_timed(conn, io->rbuf, (char *)s->data + io->copy_off,
			   io->copy_len);
	if (io->opcode == RB_OP_BLOCK_STATUS && rep.error == RB_OK)
		bad = take_extents(conn, io, &rep);

	pthread_mutex_lock(&conn->lock);
	todo = rb_slot_event_locked(conn, s, RB_SLOT_EV_OWNER_DONE);
	pthread_mutex_unlock(&conn->lock);
	if (todo & RB_SLOT_DO_CREDIT)
		pthread_cond_signal(&conn->slot_cond);

	__atomic_add_fetch(&conn->cfg.stats->requests, 1, __ATOMIC_RELAXED);
	io->rep_flags = rep.flags;
	if (rep.error == RB_ETIMEDOUT || rep.error == RB_ESHUTDOWN) {
		/* Nothing was done.  Not started within its ttl (the image's
		 * lock, say): send it again.  A target that shuts down or was
		 * fenced off a shared image: send it to the next one. */
		rb_log(RB_LOG_WARN, "%s %u@%llu: %s:%u: %s (%s): resending it",
		       rb_opcode_name(io->opcode), io->length,
		       (unsigned long long)io->offset, conn->cfg.host, conn->cfg.port,
		       rb_reason(rep.error), rb_error_name(rep.error));
		if (rep.error == RB_ESHUTDOWN) {
			pthread_mutex_lock(&conn->lock);
			rb_conn_mark_dead_locked(conn, "the target is shutting down or "
						 "fenced off the image (ESHUTDOWN)");
			pthread_mutex_unlock(&conn->lock);
		}
		return -EAGAIN;
	}
	if (rep.error != RB_OK) {
		rb_log(RB_LOG_ERROR, "%s %u@%llu: target: %s (%s)",
		       rb_opcode_name(io->opcode), io->length,
		       (unsigned long long)io->offset, rb_reason(rep.error),
		       rb_error_name(rep.error));
		return -rb_error_to_errno(rep.error);
	}
	if (bad) {
		pthread_mutex_lock(&conn->lock);
		rb_conn_mark_dead_locked(conn, "protocol violation");
		pthread_mutex_unlock(&conn->lock);
		return -EIO;
	}
	return 0;
}

int
rb_conn_request(struct rb_conn *conn, struct rb_io *io, uint64_t deadline_ns)
{
	struct rb_slot *s;
	int r;

	io->deadline_ns = deadline_ns;
	if (rb_io_uses_pool(conn, io) && rb_slots_pool_ready(conn) < 0)
		return -ENOMEM;
	pthread_mutex_lock(&conn->lock);
	while (!conn->dead && (s = rb_slot_get_locked(conn, 0)) == NULL) {
		if (wait_for_credit_locked(conn, deadline_ns) < 0) {
			pthread_mutex_unlock(&conn->lock);
			rb_log(RB_LOG_ERROR, "%s %u@%llu: timed out waiting for a "
			       "free request slot", rb_opcode_name(io->opcode),
			       io->length, (unsigned long long)io->offset);
			return -EIO;
		}
	}
	if (conn->dead) {
		pthread_mutex_unlock(&conn->lock);
		return -EAGAIN;
	}
	rb_conn_claim_locked(conn, s, io);
	pthread_mutex_unlock(&conn->lock);

	r = rb_conn_post(conn, s, io);
	if (r < 0)
		return r;
	r = rb_wait_slot(conn, s, deadline_ns);
	if (r == -EIO) {
		rb_log(RB_LOG_ERROR, "%s %u@%llu: no reply from %s:%u within the "
		       "timeout", rb_opcode_name(io->opcode), io->length,
		       (unsigned long long)io->offset, conn->cfg.host, conn->cfg.port);
		/* Not reported while its copy could still start there. */
		rb_hold_until(rb_conn_hold_ns(conn), conn->cfg.host);
	}
	if (r < 0)
		return r;   /* the slot is ORPHANED: its WRs may be live */
	return rb_conn_finish(conn, s, io);
}
