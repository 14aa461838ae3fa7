/* RBD exports: `path = rbd:POOL/IMAGE`, served through librbd's async I/O.
 *
 * One struct rbd_backing per export: its session, i.e. its own RADOS
 * client (ceph-conf, ceph-id, ceph-keyring) and the open image with the
 * client cache off
 * (rbd_cache = false: a completed write is on the OSDs, docs/durability.md),
 * and an eventfd that librbd signals when an I/O completes
 * (rbd_set_image_notification).  The event loop watches that fd and calls
 * rbd_backing_reap(), which runs each finished job's j->done on the loop
 * thread: no worker thread is involved in the I/O path.
 *
 * Writable images are written only while this target holds the image's
 * exclusive lock, taken explicitly (rbd_lock_acquire: no automatic hand-over
 * to another client while we live), by a lock thread on the first write
 * after the export was idle, and released when its last connection closed
 * (docs/rbd.md).  Writes that arrive before the lock is ours wait for it, at
 * most RBD_LOCK_WAIT_S, then fail with EIO; so do flushes (librbd refuses
 * them too without the lock).  Reads never wait.
 *
 * A write that failed fails the export (flusher.h).  The export then
 * reopens its image by itself once the cluster answers (rbd-reopen.h):
 * a new session (rbd-session.h) blocklists the failed one's client
 * instance, so that none of its timed-out writes can land later, and is
 * swapped in once the old one has no I/O in flight.
 *
 * Everything but the lock and reopen threads is event-loop only. */
#ifndef RDMABLK_TARGET_RBD_H
#define RDMABLK_TARGET_RBD_H

#include <stddef.h>
#include <stdint.h>

#include "io/workq.h"
#include "rbd-lock.h"

#define RBD_PREFIX          "rbd:"
#define RBD_DEFAULT_CONF    "/etc/ceph/ceph.conf"
#define RBD_DEFAULT_ID      "admin"
/* Connecting to the monitors (client_mount_timeout) and every monitor
 * command (rados_mon_op_timeout): a cluster that is away at start is an
 * error after this long, never a hang. */
#define RBD_MON_TIMEOUT_S   10
/* Every OSD operation (rados_osd_op_timeout): I/O to a cluster that went
 * away fails with EIO after this long. */
#define RBD_OSD_TIMEOUT_S   30
/* A write waits at most this long for the image's exclusive lock (a dead
 * holder's watch must lapse first, osd_client_watch_timeout, 30 s by
 * default). */
#define RBD_LOCK_WAIT_S     60

struct rbd_opts {
	const char *conf;           /* ceph.conf path */
	const char *id;             /* client name without "client." */
	const char *keyring;        /* or NULL */
	int read_only;
	const char *name;           /* the export's, for the log */
};

/* 1 when path names an RBD image (starts with "rbd:"). */
int rbd_is_spec(const char *path);
/* Split "rbd:POOL/IMAGE"; 0, or -1 with *why set. */
int rbd_spec_parse(const char *path, char *pool, size_t poollen, char *image,
		   size_t imagelen, const char **why);

struct rbd_backing;
/* Connect and open the image.  NULL on failure, with one line in err
 * that names what was wrong (the mon and the timeout, the pool, the
 * image, the file). */
struct rbd_backing *rbd_backing_create(const char *path, const struct rbd_opts *o,
				       char *err, size_t errlen);
/* Waits for its I/O, releases the lock, closes the image and the client. */
void rbd_backing_destroy(struct rbd_backing *b);
uint64_t rbd_backing_size(const struct rbd_backing *b);
/* Readable when jobs completed (for the loop's epoll set). */
int  rbd_backing_fd(const struct rbd_backing *b);
/* Start j (READ, WRITE, TRIM, ZERO, SYNC = rbd_aio_flush); j->done(j)
 * runs later from rbd_backing_reap, never from inside this call. */
void rbd_backing_submit(struct rbd_backing *b, struct job *j);
/* The same for a job whose j->backing is the image (struct job's submit). */
void rbd_job_submit(struct job *j);
/* Complete finished jobs; start writes that waited for the lock; fail
 * those that waited too long. */
void rbd_backing_reap(struct rbd_backing *b);
/* The export has no connection any more: give the lock back. */
void rbd_backing_idle(struct rbd_backing *b);
/* Jobs submitted and not completed. */
unsigned rbd_backing_inflight(const struct rbd_backing *b);
/* Called by the event loop once a round (exports.c): failed says the
 * export is failed (a write failed).  A failed export starts a reopen
 * (rbd-reopen.h), at most once every RBD_REOPEN_RETRY_S; once its new
 * session is fenced and the old one has no I/O in flight, the new one is
 * swapped in and this returns 1: the export may clear its failed state.
 * Never waits for the cluster. */
int rbd_backing_tick(struct rbd_backing *b, int failed);
/* For --stats: the image's exclusive lock (a read-only export takes
 * none: state none, all zero), the sessions swapped in after failures,
 * and the last client instance blocklisted for it ("" for none). */
struct rbd_stats {
	struct imglock_stats lock;
	uint64_t reopens;
	char fenced[160];
};
void rbd_backing_get_stats(const struct rbd_backing *b, struct rbd_stats *st);
/* The last client instance a reopen blocklisted, or "". */
const char *rbd_backing_fenced(const struct rbd_backing *b);

#endif
