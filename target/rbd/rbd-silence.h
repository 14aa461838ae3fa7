/* Is the owner of an RBD image's exclusive lock silent?  (target/rbd/rbd-lock.c)
 *
 * A hung holder (SIGSTOP, a stuck call, a cut network) keeps its watch on
 * the image header until the OSDs time it out (osd_client_watch_timeout,
 * 30 s by default), and until then librbd will not break its lock: a
 * failover to another target would wait that long.  A holder that is
 * alive answers a notify on the header at once (librbd acknowledges it, an
 * empty one being the legacy "header changed"); a silent one does not. */
#ifndef RDMABLK_TARGET_RBD_SILENCE_H
#define RDMABLK_TARGET_RBD_SILENCE_H

#include <rados/librados.h>
#include <rbd/librbd.h>

/* 1 when owner (an entity address, as rbd_lock_get_owners names it) has a
 * watch on image's header and does not acknowledge a notify within
 * timeout_s; 0 when it answered, or has no watch (librbd breaks such a
 * lock itself), or the probe could not be made (logged, for the export
 * name). */
int rbd_owner_silent(rados_ioctx_t io, rbd_image_t image, const char *owner,
		     unsigned timeout_s, const char *name);

#endif
