/* Backing-store I/O issued from the event loop (run to completion).
 *
 * The event-loop thread hands a struct job to its ioq; the ioq runs it on
 * the loop's own io_uring when it can, and on a worker thread (workq.c)
 * only when io_uring cannot serve it:
 *
 *   io_uring   READ, WRITE (short transfers are resubmitted for the rest),
 *              TRIM and ZERO of a regular file (fallocate), SYNC (fdatasync)
 *   worker     BLKDISCARD / BLKZEROOUT of a block device (ioctls io_uring
 *              lacks), a ZERO whose fallocate the file system refuses
 *              (the worker falls back to writing zeros), and every job when
 *              io_uring is unavailable (an old kernel, a seccomp filter,
 *              kernel.io_uring_disabled) or `io-engine = threads`
 *
 * A job whose backing does its own I/O (j->submit set: an RBD export's,
 * rbd.h) goes there instead; librbd's completions come to the loop through
 * the image's own eventfd.
 *
 * Either way j->done(j) runs on the event-loop thread, from ioq_reap()
 * (the ring's or the workers' completions) or from ioq_flush() (a job that
 * completed while it was being submitted).  (A READ the page cache holds
 * never gets here: request.c serves it with preadv2(RWF_NOWAIT) first.)  The loop
 * watches ioq_fd() (the ring's eventfd) and ioq_worker_fd(). */
#ifndef RDMABLK_TARGET_IOQ_H
#define RDMABLK_TARGET_IOQ_H

#include <stdint.h>
#include <sys/queue.h>

#include "workq.h"

enum ioq_engine {
	IOQ_IO_URING,
	IOQ_THREADS,
};

struct ioq_stats {
	uint64_t uring_jobs;        /* jobs completed through io_uring */
	uint64_t uring_resubmits;   /* short reads/writes continued */
	uint64_t worker_jobs;       /* jobs completed by a worker thread */
	uint64_t submit_calls;      /* io_uring_submit() calls (syscalls) */
};

/* Work to do just before the next submit (a flusher starting its batch
 * once the round's writes have all joined it). */
struct ioq_deferred {
	SLIST_ENTRY(ioq_deferred) link;
	void (*fn)(struct ioq_deferred *d);
	int queued;
};

struct ioq;
/* want: the configured engine; io_uring falls back to threads (logged
 * once) when the kernel refuses a ring.  nthreads workers either way. */
struct ioq *ioq_create(enum ioq_engine want, unsigned entries, unsigned nthreads);
/* Every submitted job must have completed. */
void ioq_destroy(struct ioq *q);
enum ioq_engine ioq_engine(const struct ioq *q);
const char *ioq_engine_name(enum ioq_engine e);
/* Queue j; it is handed to the kernel at the next ioq_flush(). */
void ioq_submit(struct ioq *q, struct job *j);
/* Run the deferred work, submit what was queued (one syscall), then
 * complete what is done; again while that queued more. */
void ioq_flush(struct ioq *q);
/* d->fn(d) runs at the next ioq_flush (once, however often deferred). */
void ioq_defer(struct ioq *q, struct ioq_deferred *d);
/* Complete every finished job (the ring's and the workers'). */
void ioq_reap(struct ioq *q);
/* Readable when the ring has completions (-1 with threads only). */
int  ioq_fd(const struct ioq *q);
/* Readable when a worker finished a job. */
int  ioq_worker_fd(const struct ioq *q);
/* 1 when ioq_flush has something to do (queued SQEs or deferred work). */
int  ioq_pending(const struct ioq *q);
/* Jobs submitted and not yet completed. */
unsigned ioq_inflight(const struct ioq *q);
void ioq_get_stats(const struct ioq *q, struct ioq_stats *st);

#endif
