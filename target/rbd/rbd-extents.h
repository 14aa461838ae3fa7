/* BLOCK_STATUS on an RBD image: rbd_diff_iterate2 is synchronous, so it
 * runs on a thread of the image's own, never on the event loop.  A job's
 * extents go into j->buf in wire form (extents.h); the thread then writes
 * the image's eventfd, and the loop's reap takes the finished jobs. */
#ifndef RDMABLK_TARGET_RBD_EXTENTS_H
#define RDMABLK_TARGET_RBD_EXTENTS_H

#include <rbd/librbd.h>

#include "io/workq.h"

struct rbd_extents;

/* Its thread starts at once; efd is written when a job is done.  NULL
 * (logged) on failure. */
struct rbd_extents *rbd_extents_create(int efd, const char *name);
/* Every submitted job must have been taken back. */
void rbd_extents_destroy(struct rbd_extents *x);
/* Queue a JOB_EXTENTS on image, which stays open until it is taken back
 * (the caller counts it as started on the image). */
void rbd_extents_submit(struct rbd_extents *x, rbd_image_t image, struct job *j);
/* The jobs done since the last call, in out. */
void rbd_extents_take(struct rbd_extents *x, struct job_list *out);

#endif
