/* Group commit for one backing file.
 *
 * A write that must be durable, or a FLUSH, submits a JOB_SYNC job after its
 * data reached the file (pwrite returned).  The flusher thread takes every
 * job waiting at that moment as one batch, runs one fdatasync, and completes
 * the whole batch with its result.  Jobs submitted while an fdatasync runs
 * wait for the next one: a batch's sync always *started* after each of its
 * writes completed, so one sync covers every write completed before it. */
#ifndef RDMABLK_TARGET_FLUSHER_H
#define RDMABLK_TARGET_FLUSHER_H

#include <stdint.h>

#include "workq.h"

struct flusher_stats {
	uint64_t syncs;         /* fdatasync calls */
	uint64_t jobs;          /* JOB_SYNC jobs completed */
	uint64_t max_batch;     /* largest batch one fdatasync covered */
	uint64_t errors;        /* failed fdatasync calls */
};

struct flusher;
struct flusher *flusher_create(int fd, const char *name);
/* Completes every queued job first. */
void flusher_destroy(struct flusher *f);
void flusher_submit(struct flusher *f, struct job *j);
void flusher_get_stats(struct flusher *f, struct flusher_stats *st);

#endif
