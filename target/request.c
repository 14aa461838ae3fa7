/* The request state machine (target/request.h).
 *
 * req_process() is the only function that moves a request between states;
 * completion handlers record what happened and call it.  When the
 * connection is in error, requests that wait for nothing go straight to
 * COMPLETED, and requests with a WR or a job outstanding wait for it (a
 * flushed WR or a returned job) and then complete: nothing is released
 * while the device or a worker may still touch it. */
#include <errno.h>
#include <string.h>

#include "conn.h"
#include "log.h"
#include "request.h"

static void req_job_complete(struct job *j);

/* The largest piece of a TRIM or WRITE_ZEROES handed to the backing store
 * at once (RB_DISCARD_MAX is the largest request). */
#define REQ_DISCARD_CHUNK (64u << 20)

static void
req_pool_wake(struct pool_waiter *w)
{
	struct req *r = (struct req *)((char *)w - offsetof(struct req, pw));

	req_process(r);
}

void
req_init(struct req *r, struct conn *c)
{
	memset(r, 0, sizeof(*r));
	r->rdma_ctx.type = WR_RDMA;
	r->rdma_ctx.obj = r;
	r->data_ctx.type = WR_DATA;
	r->data_ctx.obj = r;
	r->send_ctx.type = WR_SEND;
	r->send_ctx.obj = r;
	r->c = c;
	r->pw.wake = req_pool_wake;
	r->state = REQ_FREE;
}

void
req_start(struct req *r, struct recv_buf *rb)
{
	r->state = REQ_NEW;
	r->rb = rb;
	r->buf = NULL;
	r->io_result = 0;
	r->need_durable = 0;
	r->status = RB_OK;
	r->rep_flags = 0;
	r->wr_pending = 0;
	r->send_slots = 0;
	r->data_orphan = 0;
	r->start_ns = r->c->t->cfg->stats ? rb_now_ns() : 0;
	r->c->active++;
	req_process(r);
}

static int
is_write_type(uint8_t op)
{
	return op == RB_OP_WRITE || op == RB_OP_WRITE_ZEROES || op == RB_OP_TRIM;
}

/* A write-type request must be on stable storage before its reply. */
static int
req_needs_sync(const struct req *r)
{
	return r->c->exp->cfg->durability == DURABILITY_ALWAYS ||
	       (r->info.flags & RB_REQ_FUA);
}

/* A write error that may have lost data fails the export (flusher.h).
 * Errors that change nothing on the store do not: no space, no quota, an
 * operation or range the file refuses. */
static int
write_error_fails_export(int err)
{
	switch (err) {
	case -ENOSPC:
	case -EDQUOT:
	case -EFBIG:
	case -EINVAL:
	case -EOPNOTSUPP:
		return 0;
	default:
		return err < 0;
	}
}

/* The export failed (flusher.h): a write-type request or FLUSH gets EIO. */
static int
req_refused_failed(const struct req *r)
{
	return (is_write_type(r->info.opcode) || r->info.opcode == RB_OP_FLUSH) &&
	       flusher_failed(r->c->exp->flusher) != 0;
}

/* NEW: decode and validate.  Returns the next state. */
static enum req_state
req_validate(struct req *r)
{
	struct conn *c = r->c;
	const char *why = "?";
	int rc;

	rc = rb_request_decode(r->rb->buf, r->rb->len, &r->info, &why);
	if (rc < 0) {
		conn_fail(c, why);
		return REQ_COMPLETED;
	}
	r->status = rb_request_validate(&r->info, &c->lim, &why);
	if (r->status != RB_OK) {
		log_debug("%s: %s tag %llu: %s (%s)", c->peer,
			  rb_opcode_name(r->info.opcode),
			  (unsigned long long)r->info.tag, rb_error_name(r->status), why);
		return REQ_READY_TO_REPLY;
	}
	if ((r->info.opcode == RB_OP_TRIM || r->info.opcode == RB_OP_WRITE_ZEROES) &&
	    r->info.length > RB_DISCARD_MAX) {
		log_debug("%s: %s tag %llu: EINVAL (%u bytes, more than the %u a TRIM or "
			  "WRITE_ZEROES may cover)", c->peer, rb_opcode_name(r->info.opcode),
			  (unsigned long long)r->info.tag, r->info.length, RB_DISCARD_MAX);
		r->status = RB_EINVAL;
		return REQ_READY_TO_REPLY;
	}
	if (req_refused_failed(r)) {
		log_debug("%s: %s tag %llu: EIO (export %s failed: %s)", c->peer,
			  rb_opcode_name(r->info.opcode), (unsigned long long)r->info.tag,
			  c->exp->cfg->name, flusher_failure(c->exp->flusher));
		r->status = RB_EIO;
		return REQ_READY_TO_REPLY;
	}
	switch (r->info.opcode) {
	case RB_OP_NOP:
		return REQ_READY_TO_REPLY;
	case RB_OP_READ:
		return REQ_NEED_BUFFER;
	case RB_OP_WRITE:
		if (r->info.flags & RB_REQ_INLINE)
			return REQ_READY_TO_EXECUTE;
		return REQ_NEED_BUFFER;
	default:
		return REQ_READY_TO_EXECUTE;
	}
}

/* Queue the RDMA READ of a WRITE's data; it is posted with the round's
 * other WRs of this connection (conn_post_sends). */
static enum req_state
req_post_rdma_read(struct req *r)
{
	struct conn *c = r->c;
	struct ibv_send_wr *wr = &r->wr_rdma;

	if (!conn_sq_reserve(c, r, 1))
		return REQ_NEED_SQ_READ;
	r->sge_rdma.addr = (uintptr_t)r->buf;
	r->sge_rdma.length = r->info.length;
	r->sge_rdma.lkey = pool_lkey(c->dev->pool);
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = (uintptr_t)&r->rdma_ctx;
	wr->opcode = IBV_WR_RDMA_READ;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->sg_list = &r->sge_rdma;
	wr->num_sge = 1;
	wr->wr.rdma.remote_addr = r->info.addr;
	wr->wr.rdma.rkey = r->info.rkey;
	r->wr_pending = 1;
	c->reads_pending++;
	conn_queue_send(c, wr, wr);
	return REQ_TRANSFERRING_FROM_HOST;
}

/* 1 when r's READ was wholly in the page cache and is done, on this thread,
 * with one preadv2(RWF_NOWAIT): no io_uring round trip, no completion
 * event, an exact count of cache hits.  A miss goes to the ioq.  An
 * export whose file refuses RWF_NOWAIT stops trying (said once). */
static int
req_read_cached(struct req *r)
{
	struct export *e = r->c->exp;
	int hit;

	if (e->no_nowait)
		return 0;
	hit = job_try_now(&r->job);
	if (hit < 0) {
		e->no_nowait = 1;
		log_info("export %s: the file does not support RWF_NOWAIT; every "
			 "READ goes to %s", e->cfg->name,
			 ioq_engine(r->c->t->ioq) == IOQ_IO_URING ? "io_uring" : "a worker");
	}
	return hit > 0;
}

static int
is_slow_op(uint8_t op)
{
	return op == RB_OP_TRIM || op == RB_OP_WRITE_ZEROES;
}

/* A TRIM or WRITE_ZEROES runs as pieces of at most REQ_DISCARD_CHUNK, one
 * after the other, and takes one of the connection's slow-job slots
 * (c->slow_quota) for its whole run: a connection's discards never hold
 * more than its share of the workers, each for a bounded time. */
static void
req_chunk_next(struct req *r, uint64_t from)
{
	uint64_t end = r->info.offset + r->info.length;

	r->job.off = from;
	r->job.len = (uint32_t)(end - from > REQ_DISCARD_CHUNK ? REQ_DISCARD_CHUNK : end - from);
	r->job.result = 0;
	r->job.done_bytes = 0;
	r->chunk_end = from + r->job.len;
}

static enum req_state
req_execute(struct req *r)
{
	struct conn *c = r->c;
	struct export *e = c->exp;
	struct ioq *io = c->t->ioq;
	struct job *j = &r->job;

	if (is_slow_op(r->info.opcode)) {
		if (c->slow_inflight >= c->slow_quota) {
			/* conn_resume wakes it when one of ours is done. */
			if (!r->slot_wait) {
				r->slot_wait = 1;
				c->slot_waiters++;
			}
			return REQ_READY_TO_EXECUTE;
		}
		if (r->slot_wait) {
			r->slot_wait = 0;
			c->slot_waiters--;
		}
	}
	memset(j, 0, sizeof(*j));
	j->fd = e->cfg->fd;
	j->rbd = e->cfg->rbd;      /* an RBD export: librbd instead of fd */
	j->is_blockdev = e->cfg->is_blockdev;
	j->off = r->info.offset;
	j->len = r->info.length;
	j->done = req_job_complete;
	j->owner = r;
	switch (r->info.opcode) {
	case RB_OP_READ:
		j->op = JOB_READ;
		j->buf = r->buf;
		if (req_read_cached(r)) {
			/* A page-cache hit: done on the event loop. */
			r->io_result = 0;
			if (r->start_ns != 0)
				c->stats.reads_cached++;
			return REQ_EXECUTED;
		}
		break;
	case RB_OP_WRITE:
		j->op = JOB_WRITE;
		j->src = (r->info.flags & RB_REQ_INLINE) ? r->info.inline_data : r->buf;
		break;
	case RB_OP_TRIM:
		j->op = JOB_TRIM;
		break;
	case RB_OP_WRITE_ZEROES:
		j->op = JOB_ZERO;
		j->no_hole = (r->info.flags & RB_REQ_NO_HOLE) != 0;
		break;
	}
	if (is_slow_op(r->info.opcode)) {
		req_chunk_next(r, r->info.offset);
		c->slow_inflight++;
		if (c->slow_inflight > c->t->stats.slow_jobs_peak)
			c->t->stats.slow_jobs_peak = c->slow_inflight;
	}
	if (r->info.opcode == RB_OP_FLUSH) {
		/* One group-committed fdatasync covers every write replied to
		 * before this FLUSH arrived, on any connection. */
		j->op = JOB_SYNC;
		c->io_inflight++;
		flusher_submit(e->flusher, j);
		return REQ_DURABILITY_WAIT;
	}
	c->io_inflight++;
	ioq_submit(io, j);
	return REQ_EXECUTING;
}

/* The backing I/O returned.  A write-type request that must be durable and
 * succeeded joins the flusher's next batch (group commit). */
static enum req_state
req_executed(struct req *r)
{
	struct conn *c = r->c;
	struct export *e = c->exp;

	if (r->io_result < 0) {
		log_warnx("%s: export %s: %s at %llu+%u: %s", c->peer, e->cfg->name,
			  rb_opcode_name(r->info.opcode),
			  (unsigned long long)r->info.offset, r->info.length,
			  strerror(-r->io_result));
		r->status = rb_errno_to_error(-r->io_result);
		if (is_write_type(r->info.opcode) && write_error_fails_export(r->io_result))
			flusher_fail(e->flusher, r->io_result, rb_opcode_name(r->info.opcode));
		return REQ_READY_TO_REPLY;
	}
	if (req_refused_failed(r)) {
		/* It failed while this one ran: no plain acknowledgement either. */
		r->status = RB_EIO;
		return REQ_READY_TO_REPLY;
	}
	if (is_write_type(r->info.opcode) && req_needs_sync(r)) {
		c->io_inflight++;
		flusher_submit(e->flusher, &r->job);
		return REQ_DURABILITY_WAIT;
	}
	return REQ_READY_TO_REPLY;
}

/* Repost the receive buffer (the initiator may reuse the credit as soon as
 * it sees the reply), then queue the reply, chained after the RDMA WRITE of
 * a READ's data.  RC ordering places the data before the reply arrives.
 * Only the SEND is signaled: its completion also means the WRITE is done
 * (same QP, in order), so it frees both SQ slots and then the buffer. */
static enum req_state
req_reply(struct req *r)
{
	struct conn *c = r->c;
	struct rb_rep_info rep = { .flags = r->rep_flags, .error = r->status,
				   .tag = r->info.tag };
	int with_data = r->info.opcode == RB_OP_READ && r->status == RB_OK;
	struct ibv_send_wr *wr_data = &r->wr_rdma, *wr_rep = &r->wr_send;
	unsigned n = with_data ? 2 : 1;
	size_t len;

	if (!conn_sq_reserve(c, r, n))
		return REQ_READY_TO_REPLY;
	if (rep.error != RB_OK)
		rep.flags = 0;
	len = rb_reply_encode(r->reply, &rep);
	if (conn_post_recv(c, r->rb) < 0) {
		c->sq_used -= n;
		return REQ_COMPLETED;
	}
	r->rb = NULL;
	c->credits_used--;

	memset(wr_rep, 0, sizeof(*wr_rep));
	r->sge_send.addr = (uintptr_t)r->reply;
	r->sge_send.length = (uint32_t)len;
	r->sge_send.lkey = 0;
	wr_rep->wr_id = (uintptr_t)&r->send_ctx;
	wr_rep->opcode = IBV_WR_SEND;
	/* The initiator asked (RB_HELLO_SEND_INV) that the reply kill the
	 * key of the request's memory window: only the key this request
	 * carried, and only for requests that carried one. */
	if (c->send_inv && r->info.rkey != 0 && !(r->info.flags & RB_REQ_INLINE) &&
	    (r->info.opcode == RB_OP_READ || r->info.opcode == RB_OP_WRITE)) {
		wr_rep->opcode = IBV_WR_SEND_WITH_INV;
		wr_rep->invalidate_rkey = r->info.rkey;
	}
	wr_rep->send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr_rep->sg_list = &r->sge_send;
	wr_rep->num_sge = 1;
	r->send_slots = n;
	r->wr_pending = 1;
	if (with_data) {
		memset(wr_data, 0, sizeof(*wr_data));
		r->sge_rdma.addr = (uintptr_t)r->buf;
		r->sge_rdma.length = r->info.length;
		r->sge_rdma.lkey = pool_lkey(c->dev->pool);
		wr_data->wr_id = (uintptr_t)&r->data_ctx;
		wr_data->opcode = IBV_WR_RDMA_WRITE;
		wr_data->send_flags = 0;     /* unsignaled: the SEND covers it */
		wr_data->sg_list = &r->sge_rdma;
		wr_data->num_sge = 1;
		wr_data->wr.rdma.remote_addr = r->info.addr;
		wr_data->wr.rdma.rkey = r->info.rkey;
		wr_data->next = wr_rep;
		conn_queue_send(c, wr_data, wr_rep);
	} else {
		conn_queue_send(c, wr_rep, wr_rep);
	}
	if (r->start_ns != 0)
		stats_reply(&c->stats, r->info.opcode, r->info.length, rep.error == RB_OK,
			    r->start_ns);
	return with_data ? REQ_TRANSFERRING_TO_HOST : REQ_REPLYING;
}

static void
req_release(struct req *r)
{
	struct conn *c = r->c;

	if (r->pw.queued)
		pool_cancel(c->dev->pool, &r->pw);
	if (r->sq_waiting)
		conn_sq_cancel(c, r);
	if (r->cap_wait) {
		r->cap_wait = 0;
		c->cap_waiters--;
	}
	if (r->slot_wait) {
		r->slot_wait = 0;
		c->slot_waiters--;
	}
	if (r->buf != NULL) {
		pool_put(c->dev->pool, r->buf);
		r->buf = NULL;
		c->bufs_held--;
	}
	if (r->rb != NULL) {
		/* Never replied: give the credit back, and the buffer to the
		 * receive queue if the connection still lives. */
		c->credits_used--;
		if (c->state != CONN_ERROR)
			conn_post_recv(c, r->rb);
		r->rb = NULL;
	}
	r->state = REQ_FREE;
	r->next = c->free_reqs;
	c->free_reqs = r;
	c->active--;
}

/* With the connection in error: where may a request go? */
static enum req_state
req_state_on_error(struct req *r)
{
	switch (r->state) {
	case REQ_TRANSFERRING_FROM_HOST:
	case REQ_TRANSFERRING_TO_HOST:
	case REQ_REPLYING:
		return r->wr_pending > 0 ? r->state : REQ_COMPLETED;
	case REQ_EXECUTING:
	case REQ_DURABILITY_WAIT:
		return r->state;     /* the job still owns r->buf */
	case REQ_FREE:
		return REQ_FREE;
	default:
		return REQ_COMPLETED;
	}
}

void
req_process(struct req *r)
{
	struct conn *c = r->c;
	enum req_state prev;

	do {
		prev = r->state;
		if (c->state == CONN_ERROR && r->state != REQ_COMPLETED) {
			r->state = req_state_on_error(r);
			if (r->state != REQ_COMPLETED)
				return;
		}
		switch (r->state) {
		case REQ_FREE:
			return;
		case REQ_NEW:
			r->state = req_validate(r);
			break;
		case REQ_NEED_BUFFER:
			if (c->bufs_held >= c->buf_cap) {
				/* conn_resume wakes it when one of ours is freed. */
				if (!r->cap_wait) {
					r->cap_wait = 1;
					c->cap_waiters++;
				}
				return;
			}
			if (r->cap_wait) {
				r->cap_wait = 0;
				c->cap_waiters--;
			}
			r->buf = pool_get(c->dev->pool);
			if (r->buf == NULL) {
				pool_wait(c->dev->pool, &r->pw);
				return;
			}
			c->bufs_held++;
			r->state = r->info.opcode == RB_OP_WRITE ?
				REQ_NEED_SQ_READ : REQ_READY_TO_EXECUTE;
			break;
		case REQ_NEED_SQ_READ:
			r->state = req_post_rdma_read(r);
			break;
		case REQ_TRANSFERRING_FROM_HOST:
			/* req_rdma_done() moves it on. */
			break;
		case REQ_READY_TO_EXECUTE:
			r->state = req_execute(r);
			break;
		case REQ_EXECUTING:
			break;
		case REQ_EXECUTED:
			r->state = req_executed(r);
			break;
		case REQ_DURABILITY_WAIT:
			break;
		case REQ_READY_TO_REPLY:
			r->state = req_reply(r);
			break;
		case REQ_TRANSFERRING_TO_HOST:
		case REQ_REPLYING:
			if (r->wr_pending == 0)
				r->state = REQ_COMPLETED;
			break;
		case REQ_COMPLETED:
			req_release(r);
			return;
		}
	} while (r->state != prev);
}

void
req_rdma_done(struct req *r, int ok)
{
	r->wr_pending--;
	r->c->reads_pending--;
	if (r->state == REQ_TRANSFERRING_FROM_HOST) {
		if (!ok)
			r->status = RB_EIO;
		r->state = ok ? REQ_READY_TO_EXECUTE : REQ_READY_TO_REPLY;
	}
	req_process(r);
}

void
req_send_done(struct req *r, int ok)
{
	(void)ok;
	r->wr_pending--;
	req_process(r);
}

void
req_data_done(struct req *r, int ok)
{
	(void)ok;
	/* It failed (an unsignaled WR completes only then), so the QP is in
	 * error and the SEND after it will flush; unless that SEND was never
	 * posted, in which case this completion is the one r waits for. */
	if (r->data_orphan) {
		r->data_orphan = 0;
		r->wr_pending--;
	}
	req_process(r);
}

void
req_unposted(struct req *r, const struct wr_ctx *ctx, int data_posted)
{
	struct conn *c = r->c;

	switch (ctx->type) {
	case WR_RDMA:
		c->sq_used--;
		c->reads_pending--;
		r->wr_pending--;
		break;
	case WR_DATA:
		c->sq_used--;     /* its SEND, next in the chain, is unposted too */
		return;
	case WR_SEND:
		c->sq_used--;
		if (data_posted)
			r->data_orphan = 1;   /* now waiting for the WRITE's flush */
		else
			r->wr_pending--;
		break;
	default:
		return;
	}
	req_process(r);
}

/* The ioq or the flusher, on the event-loop thread: the job is done. */
static void
req_job_complete(struct job *j)
{
	req_job_done(j->owner);
}

void
req_job_done(struct req *r)
{
	struct conn *c = r->c;

	r->io_result = r->job.result;
	if (r->state == REQ_EXECUTING && is_slow_op(r->info.opcode)) {
		/* The next piece, unless this one failed or the connection
		 * is going away; the slot is kept until the last one. */
		if (r->io_result == 0 && c->state != CONN_ERROR &&
		    r->chunk_end < r->info.offset + r->info.length) {
			req_chunk_next(r, r->chunk_end);
			ioq_submit(c->t->ioq, &r->job);
			return;
		}
		c->slow_inflight--;
	}
	c->io_inflight--;
	if (r->state == REQ_EXECUTING) {
		r->state = REQ_EXECUTED;
	} else if (r->state == REQ_DURABILITY_WAIT) {
		if (r->io_result < 0) {
			log_warnx("%s: export %s: fdatasync: %s", c->peer, c->exp->cfg->name,
				  strerror(-r->io_result));
			r->status = rb_errno_to_error(-r->io_result);
		} else {
			r->rep_flags |= RB_REP_DURABLE;
		}
		r->state = REQ_READY_TO_REPLY;
	}
	req_process(r);
}
