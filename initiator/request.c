/* One request on one connection: take a credit, copy in, post the SEND,
 * wait for the completion thread, copy out, give the credit back. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "util.h"

static void
deadline_ts(uint64_t deadline_ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(deadline_ns / 1000000000u);
	ts->tv_nsec = (long)(deadline_ns % 1000000000u);
}

/* Timed copy between the caller's memory and registered memory. */
static void
copy_timed(struct rb_conn *conn, void *dst, const void *src, size_t len)
{
	uint64_t t0 = rb_now_ns();

	memcpy(dst, src, len);
	__atomic_add_fetch(&conn->cfg.stats->copy_ns, rb_now_ns() - t0,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&conn->cfg.stats->copy_bytes, len, __ATOMIC_RELAXED);
}

/* Fill the wire request; WRITE data goes inline when it is small enough,
 * otherwise into the slot's pool buffer for the target to RDMA READ. */
static void
prepare(struct rb_conn *conn, struct rb_slot *s, const struct rb_io *io,
	struct rb_req_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->opcode = io->opcode;
	ri->flags = io->flags;
	ri->tag = rb_tag(s->ctx.index, s->gen);
	ri->offset = io->offset;
	ri->length = io->length;
	if (io->opcode == RB_OP_WRITE && io->length <= conn->exp.inline_max) {
		ri->flags |= RB_REQ_INLINE;
		copy_timed(conn, (char *)s->send_buf + sizeof(struct rb_request),
			   io->wbuf, io->length);
	} else if (io->opcode == RB_OP_WRITE || io->opcode == RB_OP_READ) {
		if (io->opcode == RB_OP_WRITE)
			copy_timed(conn, s->data, io->wbuf, io->length);
		if (conn->use_mw) {
			/* A fresh key per request; the window covers exactly
			 * these bytes, with only the access the op needs. */
			s->rkey = ibv_inc_rkey(s->rkey);
			s->bind_len = io->length;
			s->bind_access = io->opcode == RB_OP_READ ?
				IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
		}
		ri->addr = (uintptr_t)s->data;
		ri->rkey = s->rkey;
	}
}

int
rb_conn_request(struct rb_conn *conn, struct rb_io *io, uint64_t deadline_ns)
{
	struct rb_req_info ri;
	struct rb_rep_info rep;
	struct rb_slot *s;
	struct timespec ts;
	int r = 0;

	deadline_ts(deadline_ns, &ts);
	pthread_mutex_lock(&conn->lock);
	while (!conn->dead && (s = rb_slot_get_locked(conn, 0)) == NULL) {
		r = pthread_cond_timedwait(&conn->slot_cond, &conn->lock, &ts);
		if (r == ETIMEDOUT) {
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
	s->state = RB_SLOT_POSTED;
	s->waiter = 1;
	s->opcode = io->opcode;
	/* Set before posting: the completion thread sees it with the reply. */
	s->mw_live = conn->use_mw && (io->opcode == RB_OP_READ ||
		(io->opcode == RB_OP_WRITE && io->length > conn->exp.inline_max));
	pthread_mutex_unlock(&conn->lock);

	/* The slot is ours until we put it back: no lock for the copy. */
	prepare(conn, s, io, &ri);
	r = rb_post_request(conn, s, &ri);

	pthread_mutex_lock(&conn->lock);
	if (r < 0) {
		/* Not posted, so nothing references the slot. */
		rb_slot_put_locked(conn, s);
		rb_log(RB_LOG_ERROR, "%s: ibv_post_send: %s",
		       rb_opcode_name(io->opcode), strerror(-r));
		rb_conn_mark_dead_locked(conn, "cannot post a request");
		pthread_mutex_unlock(&conn->lock);
		return -EAGAIN;
	}
	while (s->state != RB_SLOT_DONE && !conn->dead) {
		r = pthread_cond_timedwait(&s->cond, &conn->lock, &ts);
		if (r == ETIMEDOUT && s->state != RB_SLOT_DONE) {
			rb_log(RB_LOG_ERROR, "%s %u@%llu: no reply from %s:%u within "
			       "the timeout", rb_opcode_name(io->opcode), io->length,
			       (unsigned long long)io->offset, conn->cfg.host,
			       conn->cfg.port);
			/* The target may still use the buffer: tear the whole
			 * connection down rather than reuse the slot. */
			rb_conn_mark_dead_locked(conn, "request timed out");
			pthread_mutex_unlock(&conn->lock);
			return -EIO;
		}
	}
	if (s->state != RB_SLOT_DONE) {
		/* Dead before the reply: the slot stays posted (its WR may be
		 * live until the QP is destroyed); the caller resends. */
		pthread_mutex_unlock(&conn->lock);
		return -EAGAIN;
	}
	rep = s->rep;
	pthread_mutex_unlock(&conn->lock);

	/* RC ordering: the reply's arrival implies the RDMA WRITE landed. */
	if (io->opcode == RB_OP_READ && rep.error == RB_OK)
		copy_timed(conn, io->rbuf, (char *)s->data + io->copy_off,
			   io->copy_len);

	pthread_mutex_lock(&conn->lock);
	rb_slot_put_locked(conn, s);
	pthread_mutex_unlock(&conn->lock);

	__atomic_add_fetch(&conn->cfg.stats->requests, 1, __ATOMIC_RELAXED);
	io->rep_flags = rep.flags;
	if (rep.error != RB_OK) {
		rb_log(RB_LOG_ERROR, "%s %u@%llu: target: %s (%s)",
		       rb_opcode_name(io->opcode), io->length,
		       (unsigned long long)io->offset, rb_reason(rep.error),
		       rb_error_name(rep.error));
		return -rb_error_to_errno(rep.error);
	}
	return 0;
}
