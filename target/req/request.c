/* The request state machine (target/req/request.h).
 *
 * req_process() is the only function that moves a request between states:
 * completion handlers (req_rdma_done, req_send_done, req_data_done,
 * req_unposted, req_job_done) only record what happened (a WR count, a
 * failed transfer, a returned job) and call it, as SPDK's
 * nvmf_rdma_request_process does.  Its backing-I/O steps are in
 * request-exec.c.  When the connection is in error, requests that wait
 * for nothing go straight to COMPLETED, and requests with a WR or a job
 * outstanding wait for it (a flushed WR or a returned job) and then
 * complete: nothing is released while the device or a worker may still
 * touch it. */
#include <errno.h>
#include <string.h>

#include "core/loop.h"
#include "log.h"
#include "request.h"

/* A pool buffer or send-queue room may be there now. */
static void
req_wake(struct waiter *w)
{
	struct req *r = (struct req *)((char *)w - offsetof(struct req, wait));

	req_process(r);
}

void
req_init(struct req *r, struct req_queue *q)
{
	memset(r, 0, sizeof(*r));
	r->rdma_ctx.type = WR_RDMA;
	r->rdma_ctx.obj = r;
	r->data_ctx.type = WR_DATA;
	r->data_ctx.obj = r;
	r->send_ctx.type = WR_SEND;
	r->send_ctx.obj = r;
	r->q = q;
	r->wait.wake = req_wake;
	r->state = REQ_FREE;
}

void
req_start(struct req *r, struct req_msg *msg)
{
	r->state = REQ_NEW;
	r->msg = msg;
	r->buf = NULL;
	r->io_result = 0;
	r->job_back = 0;
	r->rdma_failed = 0;
	r->status = RB_OK;
	r->rep_flags = 0;
	r->wr_pending = 0;
	r->send_slots = 0;
	r->data_orphan = 0;
	r->start_ns = r->q->t->cfg->stats ? rb_now_ns() : 0;
	r->t_data = r->t_backing = r->t_flush = 0;
	r->q->active++;
	req_process(r);
}

/* A stage of r ended now: the first time only, and only with stats on. */
static void
req_stamp(const struct req *r, uint64_t *at)
{
	if (r->start_ns != 0 && *at == 0)
		*at = rb_now_ns();
}

/* Its reply completed: the time of each stage it went through
 * (stats.h, enum stats_stage), into its connection's figures. */
static void
req_stages(struct req *r)
{
	const uint64_t ends[] = {
		[STATS_STAGE_DATA] = r->t_data,
		[STATS_STAGE_BACKING_WRITE] = r->t_backing,
		[STATS_STAGE_FLUSH] = r->t_flush,
	};
	uint64_t prev = r->start_ns, now;
	unsigned st;

	if (r->start_ns == 0)
		return;
	for (st = 0; st < sizeof(ends) / sizeof(ends[0]); st++) {
		if (ends[st] == 0)
			continue;
		stats_stage(&r->q->stats, r->info.opcode, st, ends[st] - prev);
		prev = ends[st];
	}
	now = rb_now_ns();
	stats_stage(&r->q->stats, r->info.opcode, STATS_STAGE_REPLY, now - prev);
}

int
is_write_type(uint8_t op)
{
	return op == RB_OP_WRITE || op == RB_OP_WRITE_ZEROES || op == RB_OP_TRIM;
}

/* The export failed (flusher.h): a write-type request or FLUSH gets EIO. */
int
req_refused_failed(const struct req *r)
{
	return (is_write_type(r->info.opcode) || r->info.opcode == RB_OP_FLUSH) &&
	       flusher_failed(r->q->exp->flusher) != 0;
}

/* NEW: decode and validate.  Returns the next state. */
static enum req_state
req_validate(struct req *r)
{
	struct req_queue *q = r->q;
	const char *why = "?";
	int rc;

	rc = rb_request_decode(r->msg->buf, r->msg->len, &r->info, &why);
	if (rc < 0) {
		q->ops->fail(q, why);
		return REQ_COMPLETED;
	}
	/* Start its backing I/O within ttl seconds of its arrival, or never. */
	r->start_by_ns = r->info.ttl == 0 ? 0 :
		r->msg->arrived_ns + (uint64_t)r->info.ttl * 1000000000u;
	r->status = rb_request_validate(&r->info, &q->lim, &why);
	if (r->status != RB_OK) {
		log_debug("%s: %s tag %llu: %s (%s)", q->peer,
			  rb_opcode_name(r->info.opcode),
			  (unsigned long long)r->info.tag, rb_error_name(r->status), why);
		return REQ_READY_TO_REPLY;
	}
	if ((r->info.opcode == RB_OP_TRIM || r->info.opcode == RB_OP_WRITE_ZEROES) &&
	    r->info.length > RB_DISCARD_MAX) {
		log_debug("%s: %s tag %llu: EINVAL (%u bytes, more than the %u a TRIM or "
			  "WRITE_ZEROES may cover)", q->peer, rb_opcode_name(r->info.opcode),
			  (unsigned long long)r->info.tag, r->info.length, RB_DISCARD_MAX);
		r->status = RB_EINVAL;
		return REQ_READY_TO_REPLY;
	}
	if (req_refused_failed(r)) {
		log_debug("%s: %s tag %llu: EIO (export %s failed: %s)", q->peer,
			  rb_opcode_name(r->info.opcode), (unsigned long long)r->info.tag,
			  q->exp->cfg->name, flusher_failure(q->exp->flusher));
		r->status = RB_EIO;
		return REQ_READY_TO_REPLY;
	}
	switch (r->info.opcode) {
	case RB_OP_NOP:
		return REQ_READY_TO_REPLY;
	case RB_OP_READ:
	case RB_OP_BLOCK_STATUS:    /* the reply and its extents go out of a buffer */
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
	struct req_queue *q = r->q;
	struct ibv_send_wr *wr = &r->wr_rdma;

	if (!q->ops->sq_reserve(q, r, 1))
		return REQ_NEED_SQ_READ;
	r->sge_rdma.addr = (uintptr_t)r->buf;
	r->sge_rdma.length = r->info.length;
	r->sge_rdma.lkey = pool_lkey(q->pool);
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = (uintptr_t)&r->rdma_ctx;
	wr->opcode = IBV_WR_RDMA_READ;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->sg_list = &r->sge_rdma;
	wr->num_sge = 1;
	wr->wr.rdma.remote_addr = r->info.addr;
	wr->wr.rdma.rkey = r->info.rkey;
	r->wr_pending = 1;
	q->ops->queue_send(q, wr, wr);
	return REQ_TRANSFERRING_FROM_HOST;
}

/* Repost the receive buffer (the initiator may reuse the credit as soon as
 * it sees the reply), then queue the reply, chained after the RDMA WRITE of
 * a READ's data.  RC ordering places the data before the reply arrives.
 * Only the SEND is signaled: its completion also means the WRITE is done
 * (same QP, in order), so it frees both SQ slots and then the buffer. */
static enum req_state
req_reply(struct req *r)
{
	struct req_queue *q = r->q;
	struct rb_rep_info rep = { .flags = r->rep_flags, .error = r->status,
				   .tag = r->info.tag };
	int with_data = r->info.opcode == RB_OP_READ && r->status == RB_OK;
	/* An inline READ: one SEND gathers the reply's header (the buffer's
	 * own registered area) and the data, and no key is touched; with
	 * READ_IMM the SEND carries the data alone, the tag's low half in
	 * its immediate. */
	int data_inline = with_data && (r->info.flags & RB_REQ_INLINE);
	int data_imm = data_inline && q->read_imm;
	/* A BLOCK_STATUS reply is sent from its pool buffer: the extents
	 * are already there, after room for the reply (request-exec.c). */
	int with_extents = r->info.opcode == RB_OP_BLOCK_STATUS && r->status == RB_OK;
	struct ibv_send_wr *wr_data = &r->wr_rdma, *wr_rep = &r->wr_send;
	unsigned n = with_data && !data_inline ? 2 : 1;
	struct ibv_sge *sge = r->sge_send;
	size_t len;

	if (!q->ops->sq_reserve(q, r, n))
		return REQ_NEED_SQ_REPLY;
	if (rep.error != RB_OK)
		rep.flags = 0;
	if (with_extents)
		len = rb_reply_extents_encode(r->buf, &rep, r->job.nextents);
	else if (data_imm)
		len = r->info.length;
	else if (data_inline)
		len = rb_reply_data_encode(pool_hdr(q->pool, r->buf), &rep, r->info.length);
	else
		len = rb_reply_encode(r->reply, &rep);
	if (q->ops->post_recv(q, r->msg) < 0) {
		q->ops->sq_release(q, n);
		return REQ_COMPLETED;
	}
	r->msg = NULL;
	q->credits_used--;

	memset(wr_rep, 0, sizeof(*wr_rep));
	wr_rep->num_sge = 1;
	if (data_imm) {
		sge[0].addr = (uintptr_t)r->buf;
		sge[0].length = r->info.length;
		sge[0].lkey = pool_lkey(q->pool);
	} else if (data_inline) {
		sge[0].addr = (uintptr_t)pool_hdr(q->pool, r->buf);
		sge[0].length = sizeof(struct rb_reply);
		sge[0].lkey = pool_lkey(q->pool);
		sge[1].addr = (uintptr_t)r->buf;
		sge[1].length = r->info.length;
		sge[1].lkey = pool_lkey(q->pool);
		wr_rep->num_sge = 2;
	} else {
		sge[0].addr = (uintptr_t)(with_extents ? r->buf : r->reply);
		sge[0].length = (uint32_t)len;
		sge[0].lkey = with_extents ? pool_lkey(q->pool) : 0;
	}
	wr_rep->wr_id = (uintptr_t)&r->send_ctx;
	wr_rep->opcode = IBV_WR_SEND;
	if (data_imm) {
		wr_rep->opcode = IBV_WR_SEND_WITH_IMM;
		wr_rep->imm_data = rb_reply_imm(r->info.tag);
	}
	/* The initiator asked (RB_HELLO_SEND_INV) that the reply kill the
	 * key of the request's memory window: only the key this request
	 * carried, and only for requests that carried one. */
	if (q->send_inv && r->info.rkey != 0 && !(r->info.flags & RB_REQ_INLINE) &&
	    (r->info.opcode == RB_OP_READ || r->info.opcode == RB_OP_WRITE)) {
		wr_rep->opcode = IBV_WR_SEND_WITH_INV;
		wr_rep->invalidate_rkey = r->info.rkey;
	}
	wr_rep->send_flags = IBV_SEND_SIGNALED |
		(with_extents || data_inline ? 0 : IBV_SEND_INLINE);
	wr_rep->sg_list = sge;
	r->send_slots = n;
	r->wr_pending = 1;
	if (with_data && !data_inline) {
		memset(wr_data, 0, sizeof(*wr_data));
		r->sge_rdma.addr = (uintptr_t)r->buf;
		r->sge_rdma.length = r->info.length;
		r->sge_rdma.lkey = pool_lkey(q->pool);
		wr_data->wr_id = (uintptr_t)&r->data_ctx;
		wr_data->opcode = IBV_WR_RDMA_WRITE;
		wr_data->send_flags = 0;     /* unsignaled: the SEND covers it */
		wr_data->sg_list = &r->sge_rdma;
		wr_data->num_sge = 1;
		wr_data->wr.rdma.remote_addr = r->info.addr;
		wr_data->wr.rdma.rkey = r->info.rkey;
		wr_data->next = wr_rep;
		q->ops->queue_send(q, wr_data, wr_rep);
	} else {
		q->ops->queue_send(q, wr_rep, wr_rep);
	}
	if (r->start_ns != 0)
		stats_reply(&q->stats, r->info.opcode, r->info.length, rep.error,
			    r->start_ns);
	/* The buffer is held until the SEND's completion in either state. */
	return with_data && !data_inline ? REQ_TRANSFERRING_TO_HOST : REQ_REPLYING;
}

static void
req_release(struct req *r)
{
	struct req_queue *q = r->q;

	waiter_cancel(&r->wait);
	if (r->cap_wait) {
		r->cap_wait = 0;
		q->cap_waiters--;
	}
	if (r->slot_wait) {
		r->slot_wait = 0;
		q->slot_waiters--;
	}
	req_slow_put(r);
	if (r->buf != NULL) {
		pool_put(q->pool, r->buf);
		r->buf = NULL;
		q->bufs_held--;
	}
	if (r->msg != NULL) {
		/* Never replied: give the credit back, and the buffer to the
		 * receive queue if the connection still lives. */
		q->credits_used--;
		if (!q->failed)
			q->ops->post_recv(q, r->msg);
		r->msg = NULL;
	}
	r->state = REQ_FREE;
	SLIST_INSERT_HEAD(&q->free_reqs, r, free_link);
	q->active--;
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
		/* Until it returns, the job owns r->buf. */
		return r->job_back ? REQ_COMPLETED : r->state;
	case REQ_FREE:
		return REQ_FREE;
	default:
		return REQ_COMPLETED;
	}
}

/* The job-returned event (req_job_done), consumed by the state that waited
 * for it: 1 once after the job came back. */
static int
job_back_take(struct req *r)
{
	if (!r->job_back)
		return 0;
	r->job_back = 0;
	return 1;
}

void
req_process(struct req *r)
{
	struct req_queue *q = r->q;
	enum req_state prev;

	do {
		prev = r->state;
		if (q->failed && r->state != REQ_COMPLETED) {
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
			if (q->bufs_held >= q->buf_cap) {
				/* conn_resume wakes it when one of ours is freed. */
				if (!r->cap_wait) {
					r->cap_wait = 1;
					q->cap_waiters++;
				}
				return;
			}
			if (r->cap_wait) {
				r->cap_wait = 0;
				q->cap_waiters--;
			}
			r->buf = pool_get(q->pool);
			if (r->buf == NULL) {
				pool_wait(q->pool, &r->wait);
				return;
			}
			q->bufs_held++;
			r->state = r->info.opcode == RB_OP_WRITE ?
				REQ_NEED_SQ_READ : REQ_READY_TO_EXECUTE;
			break;
		case REQ_NEED_SQ_READ:
			r->state = req_post_rdma_read(r);
			break;
		case REQ_TRANSFERRING_FROM_HOST:
			if (r->wr_pending > 0)
				break;     /* the RDMA READ is out */
			if (r->rdma_failed) {
				r->status = RB_EIO;
				r->state = REQ_READY_TO_REPLY;
			} else {
				req_stamp(r, &r->t_data);
				r->state = REQ_READY_TO_EXECUTE;
			}
			break;
		case REQ_READY_TO_EXECUTE:
			/* An inline WRITE's data came with it. */
			if (r->info.opcode == RB_OP_WRITE)
				req_stamp(r, &r->t_data);
			r->state = req_execute(r);
			break;
		case REQ_EXECUTING:
			if (job_back_take(r))
				r->state = req_job_returned(r);
			break;
		case REQ_EXECUTED:
			req_stamp(r, is_write_type(r->info.opcode) ? &r->t_backing : &r->t_data);
			r->state = req_executed(r);
			break;
		case REQ_DURABILITY_WAIT:
			if (job_back_take(r)) {
				req_stamp(r, &r->t_flush);
				r->state = req_synced(r);
			}
			break;
		case REQ_READY_TO_REPLY:
		case REQ_NEED_SQ_REPLY:
			r->state = req_reply(r);
			break;
		case REQ_TRANSFERRING_TO_HOST:
		case REQ_REPLYING:
			if (r->wr_pending == 0) {
				req_stages(r);
				r->state = REQ_COMPLETED;
			}
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
	if (!ok)
		r->rdma_failed = 1;
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
	switch (ctx->type) {
	case WR_RDMA:
		r->wr_pending--;
		break;
	case WR_DATA:
		return;           /* its SEND, next in the chain, is unposted too */
	case WR_SEND:
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
