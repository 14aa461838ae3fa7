/* Backing-store jobs, and worker threads for the jobs io_uring cannot run.
 *
 * A struct job describes one pread/pwrite/fallocate/ioctl/fdatasync.  The
 * event loop hands jobs to its ioq (ioq.h), which runs most of them on
 * io_uring; the rest go to worker threads (struct workq), which push each
 * finished job onto a completion queue (struct compq: a mutex-protected list
 * plus an eventfd that the event loop watches).  j->done is always called
 * on the event-loop thread.  Nothing here touches RDMA. */
#ifndef RDMABLK_TARGET_WORKQ_H
#define RDMABLK_TARGET_WORKQ_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>

enum job_op {
	JOB_READ,          /* pread len bytes at off into buf (zero past EOF) */
	JOB_WRITE,         /* pwrite len bytes from buf at off */
	JOB_TRIM,          /* punch a hole / BLKDISCARD */
	JOB_ZERO,          /* zero range / BLKZEROOUT / write zeros */
	JOB_SYNC,          /* fdatasync (a flusher's group commit) */
	JOB_EXTENTS,       /* BLOCK_STATUS: extents of off..len into buf (extents.h) */
};

struct job;
struct flusher;
typedef void job_done_fn(struct job *j);
STAILQ_HEAD(job_list, job);

struct job {
	/* on at most one list: a worker queue, the completion queue, a
	 * flusher's batch, an RBD image's lock or failure list */
	STAILQ_ENTRY(job) link;
	enum job_op op;
	int      fd;
	/* A backing that does its own asynchronous I/O instead of fd (an RBD
	 * image: rbd_job_submit, rbd.h): ioq_submit hands the job to
	 * submit(j), and j->done runs later on the loop.  NULL: fd. */
	void   (*submit)(struct job *j);
	void    *backing;          /* submit's own: the RBD image */
	int      is_blockdev;
	int      no_hole;          /* JOB_ZERO: must stay allocated */
	void    *buf;
	const void *src;           /* JOB_WRITE source */
	uint64_t off;
	uint32_t len;
	int      result;           /* 0 or -errno */
	uint32_t done_bytes;       /* io_uring: transferred so far (short I/O) */
	uint32_t block;            /* JOB_EXTENTS: boundaries are rounded to it */
	unsigned nextents;         /* JOB_EXTENTS: how many it wrote to buf */
	job_done_fn *done;         /* on the event-loop thread */
	void    *owner;
	/* A job that may wait before it starts (a worker's queue, an RBD
	 * image's lock) starts only if it is still wanted, else it completes
	 * with -ECANCELED having touched nothing (docs/durability.md):
	 * start_by_ns (0: no limit) is checked on any thread, may_start (NULL:
	 * always) on the event loop only.  A job that has moved bytes has
	 * started and is never cancelled. */
	uint64_t start_by_ns;
	int    (*may_start)(const struct job *j);
};
uint64_t rb_now_ns(void);
/* 1 when j may still start now: start_by_ns has not passed and, on the
 * event loop (on_loop), may_start says so. */
static inline int
job_may_start(const struct job *j, int on_loop)
{
	if (j->done_bytes != 0)
		return 1;           /* started: a short transfer's rest */
	if (j->start_by_ns != 0 && rb_now_ns() >= j->start_by_ns)
		return 0;
	return !on_loop || j->may_start == NULL || j->may_start(j);
}

/* backing.c: run one job synchronously (a worker thread's body; also
 * used by tests). */
void job_execute(struct job *j);
/* On the caller's thread, only if that need not wait long: a READ wholly
 * in the page cache (preadv2 RWF_NOWAIT), or a WRITE into the page cache
 * while its gate is open (pagecache.h).  1: done, j->result
 * set; 0: hand the job to the ioq (a short or failed write is redone
 * whole there); -1: the file does not support RWF_NOWAIT (EOPNOTSUPP), so
 * do not try reads again.  A miss may still start readahead (as io_uring's
 * first, non-blocking attempt does) before it returns. */
int  job_try_now(struct job *j);
/* 1 when io_uring can run j (or its next part): not a block device's
 * TRIM or WRITE_ZEROES, which need an ioctl. */
int  backing_ring_serves(const struct job *j);
struct io_uring_sqe;
/* Prepare sqe for what is left of j (past j->done_bytes). */
void backing_prep_sqe(struct io_uring_sqe *sqe, const struct job *j);

struct workq;
struct compq;
/* Finished jobs go onto cq. */
struct workq *workq_create(unsigned nthreads, struct compq *cq);
/* Joins the threads after running every queued job. */
void workq_destroy(struct workq *wq);
void workq_submit(struct workq *wq, struct job *j);

/* Completion queue from threads back to the event loop. */
struct compq *compq_create(void);
void compq_destroy(struct compq *cq);
int  compq_fd(const struct compq *cq);      /* readable when jobs are done */
void compq_push(struct compq *cq, struct job *j);
/* Move every finished job to out (emptied first), oldest first; clears
 * the eventfd. */
void compq_take(struct compq *cq, struct job_list *out);

#endif
