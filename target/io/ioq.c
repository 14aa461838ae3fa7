/* The event loop's backing-store I/O: io_uring, or worker threads where
 * io_uring cannot serve (target/io/ioq.h). */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ioq.h"
#include "log.h"

struct ioq {
	enum ioq_engine engine;
	struct io_uring ring;
	int efd;                    /* registered with the ring; -1 without one */
	unsigned queued;            /* SQEs prepared, not yet taken by the kernel */
	unsigned inflight;          /* jobs submitted, not yet completed */
	struct workq *wq;
	struct compq *cq;
	SLIST_HEAD(, ioq_deferred) deferred;
	struct ioq_stats stats;
};

const char *
ioq_engine_name(enum ioq_engine e)
{
	return e == IOQ_IO_URING ? "io_uring" : "threads";
}

static int
ioq_ring_init(struct ioq *q, unsigned entries)
{
	int r;

	r = io_uring_queue_init(entries, &q->ring, 0);
	if (r < 0) {
		log_warnx("io_uring unavailable (%s): backing I/O runs on worker threads",
			  strerror(-r));
		return -1;
	}
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0) {
		log_warn("io_uring: eventfd");
		goto out_exit_ring;
	}
	r = io_uring_register_eventfd(&q->ring, q->efd);
	if (r < 0) {
		log_warnx("io_uring_register_eventfd: %s: backing I/O runs on worker threads",
			  strerror(-r));
		goto out_close_efd;
	}
	return 0;

out_close_efd:
	close(q->efd);
	q->efd = -1;
out_exit_ring:
	io_uring_queue_exit(&q->ring);
	return -1;
}

struct ioq *
ioq_create(enum ioq_engine want, unsigned entries, unsigned nthreads)
{
	struct ioq *q = calloc(1, sizeof(*q));

	if (q == NULL) {
		log_warnx("ioq: out of memory");
		return NULL;
	}
	q->efd = -1;
	SLIST_INIT(&q->deferred);
	q->engine = IOQ_THREADS;
	if (want == IOQ_IO_URING && ioq_ring_init(q, entries) == 0)
		q->engine = IOQ_IO_URING;
	q->cq = compq_create();
	if (q->cq == NULL)
		goto out_ring;
	q->wq = workq_create(nthreads, q->cq);
	if (q->wq == NULL)
		goto out_compq;
	log_info("backing I/O: %s%s", ioq_engine_name(q->engine),
		 q->engine == IOQ_IO_URING ?
		 " on the event loop (block-device trim/zero on worker threads)" :
		 " (worker threads)");
	return q;

out_compq:
	compq_destroy(q->cq);
out_ring:
	if (q->engine == IOQ_IO_URING) {
		io_uring_queue_exit(&q->ring);
		close(q->efd);
	}
	free(q);
	return NULL;
}

void
ioq_destroy(struct ioq *q)
{
	if (q == NULL)
		return;
	if (q->inflight != 0)
		log_warnx("ioq: %u backing jobs still in flight at exit", q->inflight);
	workq_destroy(q->wq);
	compq_destroy(q->cq);
	if (q->engine == IOQ_IO_URING) {
		io_uring_queue_exit(&q->ring);
		close(q->efd);
	}
	free(q);
}

enum ioq_engine
ioq_engine(const struct ioq *q)
{
	return q->engine;
}

int
ioq_fd(const struct ioq *q)
{
	return q->efd;
}

int
ioq_worker_fd(const struct ioq *q)
{
	return compq_fd(q->cq);
}

int
ioq_pending(const struct ioq *q)
{
	return q->queued > 0 || !SLIST_EMPTY(&q->deferred);
}

unsigned
ioq_inflight(const struct ioq *q)
{
	return q->inflight;
}

void
ioq_get_stats(const struct ioq *q, struct ioq_stats *st)
{
	*st = q->stats;
}

/* ---- io_uring ---- */

static struct io_uring_sqe *
ioq_get_sqe(struct ioq *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (sqe == NULL) {
		/* The SQ ring is full: hand it to the kernel and go on. */
		q->stats.submit_calls++;
		io_uring_submit(&q->ring);
		/* The kernel may take fewer than all (or refuse with
		 * EAGAIN/EBUSY): what it left stays queued for ioq_flush. */
		q->queued = io_uring_sq_ready(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
	}
	return sqe;
}

/* Prepare the SQE for what is left of j.  0, or -1 when the ring has no
 * room even after a submit (the caller hands j to a worker). */
static int
ioq_prep(struct ioq *q, struct job *j)
{
	struct io_uring_sqe *sqe = ioq_get_sqe(q);

	if (sqe == NULL)
		return -1;
	backing_prep_sqe(sqe, j);
	io_uring_sqe_set_data(sqe, j);
	q->queued++;
	return 0;
}

static void
ioq_to_worker(struct ioq *q, struct job *j)
{
	workq_submit(q->wq, j);
}

void
ioq_submit(struct ioq *q, struct job *j)
{
	if (j->submit != NULL) {
		/* The backing's own async I/O (librbd's), completed on the loop. */
		j->submit(j);
		return;
	}
	j->done_bytes = 0;
	j->result = 0;
	q->inflight++;
	if (q->engine == IOQ_IO_URING && backing_ring_serves(j) && ioq_prep(q, j) == 0)
		return;
	ioq_to_worker(q, j);
}

static void
ioq_complete(struct ioq *q, struct job *j)
{
	q->inflight--;
	j->done(j);
}

/* One CQE: finish j, continue a short transfer, or fall back. */
static void
ioq_ring_done(struct ioq *q, struct job *j, int res)
{
	if (res >= 0 && (j->op == JOB_READ || j->op == JOB_WRITE)) {
		j->done_bytes += (uint32_t)res;
		if (res == 0 && j->done_bytes < j->len) {
			if (j->op == JOB_READ) {
				/* Past EOF of a regular file reads as zeros. */
				memset((char *)j->buf + j->done_bytes, 0,
				       j->len - j->done_bytes);
				j->done_bytes = j->len;
			} else {
				res = -ENOSPC;
			}
		}
		if (res >= 0 && j->done_bytes < j->len) {
			q->stats.uring_resubmits++;
			if (ioq_prep(q, j) == 0)
				return;
			/* No SQE: let a worker do the rest. */
			ioq_to_worker(q, j);
			return;
		}
	}
	if (res == -EOPNOTSUPP) {
		if (j->op == JOB_TRIM) {
			res = 0;    /* TRIM is advisory (as job_execute) */
		} else if (j->op == JOB_ZERO) {
			/* No ZERO_RANGE here: the worker punches a hole or
			 * writes zeros (job_execute's whole chain). */
			ioq_to_worker(q, j);
			return;
		}
	}
	j->result = res < 0 ? res : 0;
	q->stats.uring_jobs++;
	ioq_complete(q, j);
}

static void
ioq_ring_reap(struct ioq *q)
{
	struct io_uring_cqe *cqe;
	struct job *j;
	int res;

	while (io_uring_peek_cqe(&q->ring, &cqe) == 0) {
		j = io_uring_cqe_get_data(cqe);
		res = cqe->res;
		io_uring_cqe_seen(&q->ring, cqe);
		ioq_ring_done(q, j, res);
	}
}

void
ioq_defer(struct ioq *q, struct ioq_deferred *d)
{
	if (d->queued)
		return;
	d->queued = 1;
	SLIST_INSERT_HEAD(&q->deferred, d, link);
}

static void
ioq_run_deferred(struct ioq *q)
{
	struct ioq_deferred *d;

	while ((d = SLIST_FIRST(&q->deferred)) != NULL) {
		SLIST_REMOVE_HEAD(&q->deferred, link);
		d->queued = 0;
		d->fn(d);
	}
}

void
ioq_flush(struct ioq *q)
{
	int r;

	ioq_run_deferred(q);
	if (q->engine != IOQ_IO_URING)
		return;
	while (q->queued > 0) {
		q->stats.submit_calls++;
		r = io_uring_submit(&q->ring);
		if (r < 0) {
			/* The SQEs stay queued: the next round retries. */
			if (r != -EAGAIN && r != -EBUSY && r != -EINTR)
				log_warnx("io_uring_submit: %s", strerror(-r));
			ioq_ring_reap(q);
			return;
		}
		/* The kernel stops at the first SQE it cannot take: the rest
		 * stay queued (ioq_pending), for this loop or the next round. */
		q->queued = io_uring_sq_ready(&q->ring);
		/* What completed during the submit (a buffered write, often),
		 * and short transfers continued, which queue more. */
		ioq_ring_reap(q);
		ioq_run_deferred(q);
		if (r == 0)
			return;
	}
}

void
ioq_reap(struct ioq *q)
{
	struct job_list done;
	struct job *j;

	if (q->engine == IOQ_IO_URING)
		ioq_ring_reap(q);
	compq_take(q->cq, &done);
	while ((j = STAILQ_FIRST(&done)) != NULL) {
		STAILQ_REMOVE_HEAD(&done, link);
		q->stats.worker_jobs++;
		ioq_complete(q, j);
	}
}
