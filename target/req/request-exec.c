/* A request's backing I/O (target/req/request.h): which job it becomes,
 * the page-cache fast path for READs, TRIM and WRITE_ZEROES in pieces
 * under the connection's slow-job quota, and what its result means
 * (an error, durability through the flusher).  request.c's req_process
 * calls these; it alone moves the state. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/loop.h"
#include "log.h"
#include "rbd/rbd.h"
#include "request.h"

/* The largest piece of a TRIM or WRITE_ZEROES handed to the backing store
 * at once (RB_DISCARD_MAX is the largest request). */
#define REQ_DISCARD_CHUNK (64u << 20)

static void req_job_complete(struct job *j);

/* Test hook (docs/testing.md): RDMABLK_TEST_START_STALE=1 starts every
 * request's backing I/O however late, as before ttls, so that a test
 * shows it can see the stale write this prevents. */
int
req_start_stale(void)
{
	static int on = -1;

	if (on < 0) {
		on = rb_test_hook_on("RDMABLK_TEST_START_STALE");
		if (on)
			log_warnx("test hook: requests start however late, even for a "
				  "failed connection (RDMABLK_TEST_START_STALE)");
	}
	return on;
}

int
req_expired(const struct req *r)
{
	if (req_start_stale())
		return 0;
	return r->q->failed ||
	       (r->start_by_ns != 0 && rb_now_ns() >= r->start_by_ns);
}

/* A job that waits before it starts (an RBD lock, a worker's queue)
 * asks this on the event loop first (workq.h). */
static int
req_job_may_start(const struct job *j)
{
	return !req_expired(j->owner);
}

/* Its ttl passed before its backing I/O could start: nothing was done,
 * and the initiator, which has given up on this copy, may resend it. */
static enum req_state
req_not_started(struct req *r)
{
	struct req_queue *q = r->q;

	log_info("%s: %s tag %llu: not started within its ttl of %u s: ETIMEDOUT", q->peer,
		  rb_opcode_name(r->info.opcode), (unsigned long long)r->info.tag,
		  r->info.ttl);
	r->status = RB_ETIMEDOUT;
	return REQ_READY_TO_REPLY;
}

/* A write-type request must be on stable storage before its reply. */
static int
req_needs_sync(const struct req *r)
{
	return r->q->exp->cfg->durability == DURABILITY_ALWAYS ||
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
	case -ESHUTDOWN:
		/* Fenced off a shared RBD image: the OSDs take nothing more
		 * from this target, and with no client cache (rbd-session.c)
		 * no acknowledged write is lost.  The initiator resends it to
		 * the next target; this export reopens its image (rbd.c). */
		return 0;
	default:
		return err < 0;
	}
}

/* 1 when r's job was done now, on this thread (job_try_now): a READ
 * wholly in the page cache, or an inline WRITE into the page cache while
 * the gate of pagecache.h is open, with no io_uring round trip, no io-wq
 * worker and no completion event.
 * A miss goes to the ioq.  An export whose file refuses RWF_NOWAIT reads
 * stops trying them (said once); an RBD export has no page cache. */
static int
req_try_now(struct req *r)
{
	struct export *e = r->q->exp;
	int *refused = r->job.op == JOB_READ ? &e->no_nowait : &e->no_nowait_write;
	int hit;

	/* Set by any loop, read by all: relaxed (a stale 0 costs one try).
	 * With O_DIRECT there is no page cache to hit: a RWF_NOWAIT read
	 * would wait for the device, on the loop. */
	if (e->cfg->direct_io || __atomic_load_n(refused, __ATOMIC_RELAXED))
		return 0;
	hit = job_try_now(&r->job);
	if (hit < 0) {
		__atomic_store_n(refused, 1, __ATOMIC_RELAXED);
		log_info("export %s: the file does not support RWF_NOWAIT; every READ goes to %s",
			 e->cfg->name,
			 ioq_engine(r->q->loop->ioq) == IOQ_IO_URING ? "io_uring" : "a worker");
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
 * (q->slow_quota) for its whole run: a connection's discards never hold
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

/* Give back the slow-job slot a TRIM or WRITE_ZEROES held for its run. */
void
req_slow_put(struct req *r)
{
	if (r->slow_held) {
		r->slow_held = 0;
		r->q->slow_inflight--;
	}
}

enum req_state
req_execute(struct req *r)
{
	struct req_queue *q = r->q;
	struct export *e = q->exp;
	struct ioq *io = q->loop->ioq;
	struct job *j = &r->job;

	if (req_expired(r)) {
		if (r->slot_wait) {
			r->slot_wait = 0;
			q->slot_waiters--;
		}
		return req_not_started(r);
	}
	if (is_slow_op(r->info.opcode)) {
		if (q->slow_inflight >= q->slow_quota) {
			/* conn_resume wakes it when one of ours is done. */
			if (!r->slot_wait) {
				r->slot_wait = 1;
				q->slot_waiters++;
			}
			return REQ_READY_TO_EXECUTE;
		}
		if (r->slot_wait) {
			r->slot_wait = 0;
			q->slot_waiters--;
		}
	}
	memset(j, 0, sizeof(*j));
	j->fd = e->cfg->fd;
	if (e->cfg->rbd != NULL) { /* an RBD export: librbd instead of fd */
		j->submit = rbd_job_submit;
		j->backing = e->cfg->rbd;
	}
	j->is_blockdev = e->cfg->is_blockdev;
	j->off = r->info.offset;
	j->len = r->info.length;
	j->done = req_job_complete;
	j->owner = r;
	j->start_by_ns = req_start_stale() ? 0 : r->start_by_ns;
	j->may_start = req_job_may_start;
	switch (r->info.opcode) {
	case RB_OP_READ:
		j->op = JOB_READ;
		j->buf = r->buf;
		if (req_try_now(r)) {
			/* A page-cache hit: done on the event loop. */
			r->io_result = 0;
			if (r->start_ns != 0)
				q->stats.reads_cached++;
			return REQ_EXECUTED;
		}
		break;
	case RB_OP_WRITE:
		j->op = JOB_WRITE;
		j->src = (r->info.flags & RB_REQ_INLINE) ? r->info.inline_data : r->buf;
		/* Small (inline) writes only: a larger one may not block the
		 * loop for long either, but copies more than it saves. */
		if ((r->info.flags & RB_REQ_INLINE) && req_try_now(r)) {
			r->io_result = 0;
			if (r->start_ns != 0)
				q->stats.writes_cached++;
			return REQ_EXECUTED;
		}
		break;
	case RB_OP_TRIM:
		j->op = JOB_TRIM;
		break;
	case RB_OP_WRITE_ZEROES:
		j->op = JOB_ZERO;
		j->no_hole = (r->info.flags & RB_REQ_NO_HOLE) != 0;
		break;
	case RB_OP_BLOCK_STATUS:
		/* The extents go where the reply will be sent from. */
		j->op = JOB_EXTENTS;
		j->buf = (char *)r->buf + sizeof(struct rb_reply);
		j->block = q->lim.min_block;
		break;
	}
	if (is_slow_op(r->info.opcode)) {
		req_chunk_next(r, r->info.offset);
		r->slow_held = 1;
		q->slow_inflight++;
		if (q->slow_inflight > q->loop->slow_jobs_peak)
			q->loop->slow_jobs_peak = q->slow_inflight;
	}
	if (r->info.opcode == RB_OP_FLUSH) {
		/* One group-committed fdatasync covers every write replied to
		 * before this FLUSH arrived, on any connection. */
		j->op = JOB_SYNC;
		q->io_inflight++;
		flusher_submit(e->flushers[q->loop->idx], j);
		return REQ_DURABILITY_WAIT;
	}
	q->io_inflight++;
	ioq_submit(io, j);
	return REQ_EXECUTING;
}

/* EXECUTING, its job returned: the next piece of a TRIM or WRITE_ZEROES
 * (unless this one failed; the slow-job slot is kept until the last
 * one), else EXECUTED. */
enum req_state
req_job_returned(struct req *r)
{
	struct req_queue *q = r->q;

	if (is_slow_op(r->info.opcode) && r->io_result == 0 &&
	    r->chunk_end < r->info.offset + r->info.length && !req_expired(r)) {
		req_chunk_next(r, r->chunk_end);
		q->io_inflight++;
		ioq_submit(q->loop->ioq, &r->job);
		return REQ_EXECUTING;
	}
	req_slow_put(r);
	return REQ_EXECUTED;
}

/* DURABILITY_WAIT, its sync returned: durable, or the sync's error. */
enum req_state
req_synced(struct req *r)
{
	struct req_queue *q = r->q;

	if (r->io_result < 0) {
		log_warnx("%s: export %s: fdatasync: %s", q->peer, q->exp->cfg->name,
			  strerror(-r->io_result));
		r->status = rb_errno_to_error(-r->io_result);
	} else {
		r->rep_flags |= RB_REP_DURABLE;
	}
	return REQ_READY_TO_REPLY;
}

/* The backing I/O returned.  A write-type request that must be durable and
 * succeeded joins the flusher's next batch (group commit). */
enum req_state
req_executed(struct req *r)
{
	struct req_queue *q = r->q;
	struct export *e = q->exp;

	if (r->io_result == -ECANCELED)
		return req_not_started(r);    /* its job never started (workq.h) */
	if (is_slow_op(r->info.opcode) && r->io_result == 0 &&
	    r->chunk_end < r->info.offset + r->info.length) {
		/* Its ttl passed between two pieces: the rest was not done. */
		req_slow_put(r);
		return req_not_started(r);
	}
	if (r->io_result < 0) {
		log_warnx("%s: export %s: %s at %llu+%u: %s", q->peer, e->cfg->name,
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
		q->io_inflight++;
		flusher_submit(e->flushers[q->loop->idx], &r->job);
		return REQ_DURABILITY_WAIT;
	}
	return REQ_READY_TO_REPLY;
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
	r->io_result = r->job.result;
	r->job_back = 1;
	r->q->io_inflight--;
	req_process(r);
}
