/* One RADOS client instance with one open RBD image (target/rbd/rbd.h).
 *
 * An RBD export does its I/O through one session at a time.  A session is
 * opened whole (client, pool, image, the image's checks, the completion
 * eventfd, the lock thread of a writable image) and closed whole; every
 * call here may wait for the cluster, up to its timeouts, so the event
 * loop calls them only at start or reload, and the reopen thread
 * (rbd-reopen.h) the rest of the time.
 *
 * A session is one client instance of the cluster's (addr: the entity
 * address the OSDs know it by).  Once it timed out with writes in flight,
 * the cluster may still apply those writes later; before another session
 * writes the image, rbd_session_fence() blocklists the old instance, so
 * that the OSDs refuse whatever it still sends (docs/rbd.md). */
#ifndef RDMABLK_TARGET_RBD_SESSION_H
#define RDMABLK_TARGET_RBD_SESSION_H

#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stddef.h>
#include <stdint.h>

#include "rbd-lock.h"

/* What an export's sessions are opened with: owned copies, so that a
 * reopen long after the configuration was reloaded still has them. */
struct rbd_params {
	char *path;                 /* "rbd:POOL/IMAGE", for messages */
	char *pool, *image;
	char *conf;                 /* ceph.conf path */
	char *id;                   /* client name without "client." */
	char *keyring;              /* or NULL */
	int read_only;
	char *name;                 /* the export's, for the log */
};

struct rbd_session {
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t image;
	struct imglock *lock;       /* writable images only */
	uint64_t size;
	char addr[160];             /* this client instance (rados_getaddrs) */
};

/* Connect, open and check the image, and have librbd signal notify_fd
 * when an I/O completes.  NULL on failure, with one line in err that
 * names what was wrong (the mon and the timeout, the pool, the image). */
struct rbd_session *rbd_session_open(const struct rbd_params *p, int notify_fd,
				     char *err, size_t errlen);
/* Releases the lock, closes the image and the client (no I/O of ours may
 * be in flight). */
void rbd_session_close(struct rbd_session *s);
/* Blocklist the client instance addr (another session's, timed out)
 * through s, for RBD_FENCE_S: 0, or -1 with err set. */
int rbd_session_fence(struct rbd_session *s, const char *addr, char *err, size_t errlen);

/* How long a fenced instance stays blocklisted: it is closed right after,
 * so this only has to outlast the ops it may still have on the wire. */
#define RBD_FENCE_S 3600

int  rbd_params_init(struct rbd_params *p, const char *path, const char *conf,
		     const char *id, const char *keyring, int read_only, const char *name,
		     char *err, size_t errlen);
void rbd_params_free(struct rbd_params *p);

#endif
