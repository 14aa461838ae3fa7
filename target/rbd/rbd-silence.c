/* Is the owner of an RBD image's exclusive lock silent? (target/rbd/rbd-silence.h) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "rbd-silence.h"

#define MAX_WATCHERS 32

/* The owner's watch on the header: 1 and its (gid, cookie), or 0. */
static int
owner_watch(rbd_image_t image, const char *owner, uint64_t *gid, uint64_t *cookie,
	    const char *name)
{
	rbd_image_watcher_t w[MAX_WATCHERS];
	size_t n = MAX_WATCHERS, i;
	int r, found = 0;

	r = rbd_watchers_list(image, w, &n);
	if (r < 0) {
		log_warnx("export %s: rbd_watchers_list: %s", name, strerror(-r));
		return 0;
	}
	for (i = 0; i < n && !found; i++) {
		if (strcmp(w[i].addr, owner) == 0) {
			*gid = (uint64_t)w[i].id;
			*cookie = w[i].cookie;
			found = 1;
		}
	}
	rbd_watchers_list_cleanup(w, n);
	return found;
}

int
rbd_owner_silent(rados_ioctx_t io, rbd_image_t image, const char *owner,
		 unsigned timeout_s, const char *name)
{
	struct notify_ack_t *acks = NULL;
	struct notify_timeout_t *tos = NULL;
	size_t nacks = 0, ntos = 0, len = 0, i;
	char oid[128], id[64], *reply = NULL;
	uint64_t gid, cookie;
	int r, silent = 0;

	if (!owner_watch(image, owner, &gid, &cookie, name))
		return 0;
	r = rbd_get_id(image, id, sizeof(id));
	if (r < 0) {
		log_warnx("export %s: rbd_get_id: %s", name, strerror(-r));
		return 0;
	}
	snprintf(oid, sizeof(oid), "rbd_header.%s", id);
	r = rados_notify2(io, oid, "", 0, (uint64_t)timeout_s * 1000u, &reply, &len);
	if (r == 0 || reply == NULL) {
		if (reply != NULL)
			rados_buffer_free(reply);
		if (r < 0 && r != -ETIMEDOUT)
			log_warnx("export %s: notify %s: %s", name, oid, strerror(-r));
		return 0;   /* every watcher answered, or no verdict */
	}
	if (rados_decode_notify_response(reply, len, &acks, &nacks, &tos, &ntos) == 0) {
		for (i = 0; i < ntos; i++)
			if (tos[i].notifier_id == gid && tos[i].cookie == cookie)
				silent = 1;
		rados_free_notify_response(acks, nacks, tos);
	}
	rados_buffer_free(reply);
	return silent;
}
