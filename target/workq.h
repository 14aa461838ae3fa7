/* Backing-store I/O off the event loop.
 *
 * A struct job describes one pread/pwrite/fallocate/ioctl/fdatasync.  Worker
 * threads (struct workq) run them; a finished job goes to its `done`
 * callback, which in the daemon is compq_push(): a mutex-protected list plus
 * an eventfd that the event loop watches.  Nothing here touches RDMA. */
#ifndef RDMABLK_TARGET_WORKQ_H
#define RDMABLK_TARGET_WORKQ_H

#include <pthread.h>
#include <stdint.h>

enum job_op {
	JOB_READ,          /* pread len bytes at off into buf (zero past EOF) */
	JOB_WRITE,         /* pwrite len bytes from buf at off */
	JOB_TRIM,          /* punch a hole / BLKDISCARD */
	JOB_ZERO,          /* zero range / BLKZEROOUT / write zeros */
	JOB_SYNC,          /* durability wait: completed by a flusher */
};

struct job;
struct flusher;
typedef void job_done_fn(struct job *j);

struct job {
	struct job *next;
	enum job_op op;
	int      fd;
	int      is_blockdev;
	int      no_hole;          /* JOB_ZERO: must stay allocated */
	void    *buf;
	const void *src;           /* JOB_WRITE source */
	uint64_t off;
	uint32_t len;
	uint64_t flush_gen;        /* JOB_SYNC: the flush generation it needs */
	int      result;           /* 0 or -errno */
	/* A write that must be durable: when it succeeds, the worker hands it
	 * straight to this flusher (no trip through the event loop), and the
	 * job comes back with synced set and the fdatasync's result. */
	struct flusher *sync_after;
	int      synced;
	job_done_fn *done;
	void    *owner;
};

/* Run one job synchronously (a worker thread's body; also used by tests). */
void job_execute(struct job *j);
/* On the caller's thread, only if that need not wait: a READ wholly in the
 * page cache (preadv2 RWF_NOWAIT).  1: done, j->result set; 0: hand the
 * job to a worker; -1: the file does not support RWF_NOWAIT (EOPNOTSUPP),
 * so do not try again.  A miss may still start readahead (as io_uring's
 * first, non-blocking attempt does) before it returns. */
int  job_try_now(struct job *j);

struct workq;
struct workq *workq_create(unsigned nthreads);
/* Joins the threads after running every queued job. */
void workq_destroy(struct workq *wq);
void workq_submit(struct workq *wq, struct job *j);

/* Completion queue from threads back to the event loop. */
struct compq;
struct compq *compq_create(void);
void compq_destroy(struct compq *cq);
int  compq_fd(const struct compq *cq);      /* readable when jobs are done */
void compq_push(struct compq *cq, struct job *j);
/* Take every finished job, oldest first (clears the eventfd). */
struct job *compq_take(struct compq *cq);

#endif
