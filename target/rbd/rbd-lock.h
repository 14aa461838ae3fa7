/* The exclusive lock of one writable RBD image (target/rbd/rbd.h, docs/rbd.md).
 *
 * rbd_lock_acquire() and rbd_lock_release() are synchronous and may wait
 * for the cluster (a dead holder's watch must lapse before librbd breaks
 * its lock), so a thread of this object's own makes those calls; the
 * event loop only asks for the lock (imglock_want) and gives it back
 * (imglock_idle), and learns of a change through notify_fd, which the
 * thread writes when it got the lock, and once a second while the loop
 * waits for it.  While it holds the lock it asks librbd once a second
 * whether the lock is still its own (a client whose watch lapsed, e.g. a
 * paused target, can have it broken by another and be blocklisted): that
 * is the "lost" state of --stats.  No I/O runs on this thread. */
#ifndef RDMABLK_TARGET_RBD_LOCK_H
#define RDMABLK_TARGET_RBD_LOCK_H

#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdint.h>

enum imglock_state {
	IMGLOCK_NONE,               /* not ours, and nothing asks for it */
	IMGLOCK_WAITING,            /* writes wait while another client holds it */
	IMGLOCK_OWNER,              /* ours: this target writes the image */
	IMGLOCK_LOST,               /* we took it, and librbd says it is ours no more */
};

/* For --stats. */
struct imglock_stats {
	enum imglock_state state;
	uint64_t acquired;          /* times this target took the lock */
	uint64_t takeovers;         /* of those, from another client that held it */
	uint64_t lost;              /* times it was found lost (not released by us) */
	uint64_t breaks;            /* silent holders whose lock it broke */
};

/* A holder that keeps its watch on the image but does not answer a notify
 * within this many seconds has its lock broken (and is blocklisted first):
 * see docs/rbd.md, "Failover". */
#define RBD_SILENT_S 5

struct imglock;
/* name: the export's, for the log.  notify_fd: an eventfd of the loop. */
/* may_break: librbd blocklists a holder whose lock it breaks
 * (rbd_blocklist_on_break_lock), so a silent holder's lock may be broken. */
struct imglock *imglock_create(rbd_image_t image, rados_ioctx_t io, int may_break,
			       const char *name, int notify_fd);
/* Stops the thread and releases the lock if held (no write may be in
 * flight). */
void imglock_destroy(struct imglock *l);
/* IMGLOCK_OWNER when the lock is ours now (writes may go);
 * IMGLOCK_LOST when we took it and lost it (writes must fail over:
 * another client writes the image now); else IMGLOCK_WAITING, and the
 * thread tries to take it. */
enum imglock_state imglock_want(struct imglock *l);
/* Nothing needs the lock any more: the thread releases it. */
void imglock_idle(struct imglock *l);
/* The OSDs refused an op of this client instance (ESHUTDOWN: it is on the
 * blocklist): fenced for good (IMGLOCK_LOST), and the lock lost if it was
 * held, whether or not librbd noticed yet. */
void imglock_fenced(struct imglock *l);
void imglock_get_stats(struct imglock *l, struct imglock_stats *st);

#endif
