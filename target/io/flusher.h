/* Group commit for one backing file, driven by the event loop.
 *
 * A write that must be durable, or a FLUSH, is handed to the flusher with
 * flusher_submit() after its data reached the file (its write job
 * completed).  When no fdatasync is running, the flusher takes every job
 * waiting at that moment as one batch and submits one fdatasync job to the
 * loop's ioq (io_uring's IORING_OP_FSYNC with IORING_FSYNC_DATASYNC, or a
 * worker); when it returns, the whole batch completes with its result.
 * Jobs submitted while an fdatasync runs wait for the next one: a batch's
 * sync always *started* after each of its writes completed, so one sync
 * covers every write completed before it.  One event loop's thread only:
 * with `threads = N` each export has one flusher per loop (export.c),
 * sharing the failed state below. */
#ifndef RDMABLK_TARGET_FLUSHER_H
#define RDMABLK_TARGET_FLUSHER_H

#include <stdint.h>

#include "ioq.h"
#include "workq.h"

struct flusher_stats {
	uint64_t syncs;         /* fdatasync calls */
	uint64_t jobs;          /* jobs completed by them */
	uint64_t max_batch;     /* largest batch one fdatasync covered */
	uint64_t errors;        /* failed fdatasync calls */
};

/* After a failed fdatasync (or a lost write, flusher_fail) the export is
 * "failed" for good: Linux may have dropped the dirty pages and marked
 * them clean, so a later fdatasync can return 0 over lost data
 * (fsyncgate).  From then on every job the flusher completes gets an
 * error, whatever its own fdatasync returned, so nothing is ever
 * replied to as durable again (EIO); only reopening the export (a reload
 * replaces the flusher) clears it.  An RBD export also reopens itself
 * (rbd-reopen.h, flusher_reopened): with the client cache off, every
 * write it acknowledged is on the OSDs, not in pages that could be lost. */
struct flusher;
struct flusher *flusher_create(int fd, const char *name, struct ioq *io);
/* Another loop's flusher of leader's file: its syncs run on io, through a
 * file it opens again; failed is leader's (flusher_fail on any fails all). */
struct flusher *flusher_create_peer(struct flusher *leader, struct ioq *io);
/* A flusher whose backing does its own I/O (an RBD export's: its sync is
 * rbd_aio_flush on the image): the sync job goes to submit(j), with
 * j->backing = backing (struct job). */
void flusher_set_backing(struct flusher *f, void *backing, void (*submit)(struct job *j));
/* No fdatasync may be running (every submitted job has completed). */
void flusher_destroy(struct flusher *f);
/* j->done(j) runs once a sync that started after this call returned, with
 * j->result set to its result (0 or -errno). */
void flusher_submit(struct flusher *f, struct job *j);
/* Enter the failed state (idempotent; logged once): err is -errno, what
 * names the operation that failed. */
void flusher_fail(struct flusher *f, int err, const char *what);
/* Leave the failed state (logged with how); for an RBD export only. */
void flusher_reopened(struct flusher *f, const char *how);
/* 0, or the -errno that failed the export. */
int  flusher_failed(const struct flusher *f);
/* "fdatasync: Input/output error" and the like; "" when not failed. */
const char *flusher_failure(const struct flusher *f);
/* 1 while an fdatasync is running or jobs wait. */
int  flusher_busy(const struct flusher *f);
void flusher_get_stats(const struct flusher *f, struct flusher_stats *st);

#endif
