/* An RBD export reopens its image by itself after a failure (rbd.h).
 *
 * A write that failed (the cluster went away: rados_osd_op_timeout, or
 * this client was blocklisted) fails the export, as a failed fdatasync
 * does a file's.  Unlike a file's, an RBD export's acknowledged writes are
 * all on the OSDs already (the client cache is off), so nothing
 * acknowledged was lost; what is unsafe is the failed client instance,
 * whose timed-out writes the OSDs may still apply, later than newer ones.
 * So the export starts a reopen, which on its own thread:
 *
 *   CONNECTING  opens a new session (rbd_session_open), again every
 *               RBD_REOPEN_RETRY_S while the cluster does not answer;
 *               blocklists the old instance through it (rbd_session_fence);
 *   READY       hands the new session to the event loop (rbd_reopen_swap),
 *               which swaps it in once the old one has no I/O in flight;
 *   CLOSING     closes the old session, which may wait for the cluster;
 *   FINISHED    the thread has exited: rbd_reopen_destroy will not block.
 *
 * The event loop never waits for the cluster: it only asks (ready, swap,
 * finished) and is woken through notify_fd when the new session is ready.
 * rbd_reopen_destroy before the swap stops the thread and closes both
 * sessions. */
#ifndef RDMABLK_TARGET_RBD_REOPEN_H
#define RDMABLK_TARGET_RBD_REOPEN_H

#include "rbd-session.h"

/* Between two attempts to reach the cluster. */
#define RBD_REOPEN_RETRY_S  5

struct rbd_reopen;
/* Takes old: from now on the reopen closes it (the loop may go on reading
 * through it until the swap).  NULL (logged) when no thread starts. */
struct rbd_reopen *rbd_reopen_start(const struct rbd_params *p, struct rbd_session *old,
				    int notify_fd);
/* 1 once the new session is fenced and ready to swap in. */
int  rbd_reopen_ready(struct rbd_reopen *ro);
/* The new session when ready (and old may then be closed: the caller has
 * no I/O in flight on it), else NULL. */
struct rbd_session *rbd_reopen_swap(struct rbd_reopen *ro);
/* 1 when the thread has exited. */
int  rbd_reopen_finished(struct rbd_reopen *ro);
/* Stop and join; closes the sessions it still owns. */
void rbd_reopen_destroy(struct rbd_reopen *ro);

#endif
