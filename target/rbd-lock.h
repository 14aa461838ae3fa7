/* The exclusive lock of one writable RBD image (target/rbd.h, docs/rbd.md).
 *
 * rbd_lock_acquire() and rbd_lock_release() are synchronous and may wait
 * for the cluster (a dead holder's watch must lapse before librbd breaks
 * its lock), so a thread of this object's own makes those calls; the
 * event loop only asks for the lock (imglock_want) and gives it back
 * (imglock_idle), and learns of a change through notify_fd, which the
 * thread writes when it got the lock, and once a second while the loop
 * waits for it.  No I/O runs on this thread. */
#ifndef RDMABLK_TARGET_RBD_LOCK_H
#define RDMABLK_TARGET_RBD_LOCK_H

#include <rbd/librbd.h>

struct imglock;
/* name: the export's, for the log.  notify_fd: an eventfd of the loop. */
struct imglock *imglock_create(rbd_image_t image, const char *name, int notify_fd);
/* Stops the thread and releases the lock if held (no write may be in
 * flight). */
void imglock_destroy(struct imglock *l);
/* 1 when the lock is ours now (writes may go); else 0, and the thread
 * tries to take it. */
int  imglock_want(struct imglock *l);
/* Nothing needs the lock any more: the thread releases it. */
void imglock_idle(struct imglock *l);
int  imglock_owner(struct imglock *l);

#endif
