/* One RADOS client with one open image (target/rbd/rbd-session.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rbd-session.h"
#include "rbd.h"

static char *
dup_or_null(const char *s, int *bad)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*bad = 1;
	return d;
}

int
rbd_params_init(struct rbd_params *p, const char *path, const char *conf, const char *id,
		const char *keyring, int read_only, const char *name, char *err, size_t errlen)
{
	char pool[128], image[256];
	const char *why = "";
	int bad = 0;

	memset(p, 0, sizeof(*p));
	if (rbd_spec_parse(path, pool, sizeof(pool), image, sizeof(image), &why) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		return -1;
	}
	p->path = dup_or_null(path, &bad);
	p->pool = dup_or_null(pool, &bad);
	p->image = dup_or_null(image, &bad);
	p->conf = dup_or_null(conf, &bad);
	p->id = dup_or_null(id, &bad);
	p->keyring = dup_or_null(keyring, &bad);
	p->name = dup_or_null(name, &bad);
	p->read_only = read_only;
	if (bad) {
		rbd_params_free(p);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

void
rbd_params_free(struct rbd_params *p)
{
	free(p->path);
	free(p->pool);
	free(p->image);
	free(p->conf);
	free(p->id);
	free(p->keyring);
	free(p->name);
	memset(p, 0, sizeof(*p));
}

/* The client, configured before it connects. */
static int
session_connect(struct rbd_session *s, const struct rbd_params *p, char *err, size_t errlen)
{
	static const char *const settings[][2] = {
		/* A completed write must be on the OSDs, not in a client cache. */
		{ "rbd_cache", "false" },
		{ "client_mount_timeout", "10" },
		{ "rados_mon_op_timeout", "10" },
		{ "rados_osd_op_timeout", "30" },
	};
	char mon[256] = "";
	size_t i;
	int r;

	_Static_assert(RBD_MON_TIMEOUT_S == 10 && RBD_OSD_TIMEOUT_S == 30,
		       "the timeouts above are written out");
	r = rados_create(&s->cluster, p->id);
	if (r < 0) {
		snprintf(err, errlen, "ceph-id: rados_create(client.%s): %s", p->id, strerror(-r));
		return -1;
	}
	r = rados_conf_read_file(s->cluster, p->conf);
	if (r < 0) {
		snprintf(err, errlen, "ceph-conf: %s: %s", p->conf, strerror(-r));
		goto out_shutdown;
	}
	if (p->keyring != NULL && (r = rados_conf_set(s->cluster, "keyring", p->keyring)) < 0) {
		snprintf(err, errlen, "ceph-keyring: %s: %s", p->keyring, strerror(-r));
		goto out_shutdown;
	}
	for (i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		r = rados_conf_set(s->cluster, settings[i][0], settings[i][1]);
		if (r < 0) {
			snprintf(err, errlen, "rados_conf_set %s = %s: %s", settings[i][0],
				 settings[i][1], strerror(-r));
			goto out_shutdown;
		}
	}
	if (rados_conf_get(s->cluster, "mon_host", mon, sizeof(mon)) < 0 || mon[0] == '\0')
		snprintf(mon, sizeof(mon), "(none: no 'mon host' in %s)", p->conf);
	r = rados_connect(s->cluster);
	if (r == -ETIMEDOUT) {
		snprintf(err, errlen, "cannot reach the Ceph monitors at %s (ceph-conf %s) within "
			 "%d s (client_mount_timeout)", mon, p->conf, RBD_MON_TIMEOUT_S);
		goto out_shutdown;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot connect to the Ceph monitors at %s as client.%s "
			 "(ceph-conf %s%s%s): %s", mon, p->id, p->conf,
			 p->keyring != NULL ? ", ceph-keyring " : "",
			 p->keyring != NULL ? p->keyring : "", strerror(-r));
		goto out_shutdown;
	}
	return 0;

out_shutdown:
	rados_shutdown(s->cluster);
	s->cluster = NULL;
	return -1;
}

/* The instance the OSDs know this client by ("[v2:IP:0/NONCE,...]"). */
static void
session_addr(struct rbd_session *s, const struct rbd_params *p)
{
	char *addrs = NULL;
	int r = rados_getaddrs(s->cluster, &addrs);

	if (r < 0 || addrs == NULL) {
		/* Only a later fence needs it; it then refuses to reopen. */
		log_warnx("export %s: rados_getaddrs: %s", p->name, strerror(r < 0 ? -r : EINVAL));
		s->addr[0] = '\0';
		return;
	}
	snprintf(s->addr, sizeof(s->addr), "%s", addrs);
	rados_buffer_free(addrs);
}

/* Refuse an image whose own metadata turns the client cache back on. */
static int
session_check_image(struct rbd_session *s, const struct rbd_params *p, char *err,
		    size_t errlen)
{
	char val[16] = "";
	size_t vlen = sizeof(val);
	uint64_t features = 0;
	int r;

	if (rbd_metadata_get(s->image, "conf_rbd_cache", val, &vlen) == 0 &&
	    strcmp(val, "false") != 0) {
		snprintf(err, errlen, "image %s/%s sets rbd_cache = %s in its metadata; an "
			 "acknowledged write could sit in a client cache (rbd config image rm "
			 "%s/%s rbd_cache)", p->pool, p->image, val, p->pool, p->image);
		return -1;
	}
	r = rbd_get_size(s->image, &s->size);
	if (r < 0) {
		snprintf(err, errlen, "image %s/%s: rbd_get_size: %s", p->pool, p->image,
			 strerror(-r));
		return -1;
	}
	if (p->read_only)
		return 0;
	r = rbd_get_features(s->image, &features);
	if (r < 0) {
		snprintf(err, errlen, "image %s/%s: rbd_get_features: %s", p->pool, p->image,
			 strerror(-r));
		return -1;
	}
	if (!(features & RBD_FEATURE_EXCLUSIVE_LOCK)) {
		snprintf(err, errlen, "image %s/%s has no exclusive-lock feature, which a writable "
			 "export needs so that two targets never write it at once (rbd feature "
			 "enable %s/%s exclusive-lock)", p->pool, p->image, p->pool, p->image);
		return -1;
	}
	return 0;
}

struct rbd_session *
rbd_session_open(const struct rbd_params *p, int notify_fd, char *err, size_t errlen)
{
	struct rbd_session *s = calloc(1, sizeof(*s));
	int r;

	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (session_connect(s, p, err, errlen) < 0)
		goto out_free;
	session_addr(s, p);
	r = rados_ioctx_create(s->cluster, p->pool, &s->io);
	if (r < 0) {
		if (r == -ENOENT)
			snprintf(err, errlen, "%s: pool '%s' does not exist", p->path, p->pool);
		else
			snprintf(err, errlen, "%s: pool '%s': %s", p->path, p->pool, strerror(-r));
		goto out_shutdown;
	}
	r = p->read_only ? rbd_open_read_only(s->io, p->image, &s->image, NULL) :
		rbd_open(s->io, p->image, &s->image, NULL);
	if (r < 0) {
		if (r == -ENOENT)
			snprintf(err, errlen, "%s: no image '%s' in pool '%s'", p->path, p->image,
				 p->pool);
		else
			snprintf(err, errlen, "%s: rbd_open: %s", p->path, strerror(-r));
		goto out_ioctx;
	}
	if (session_check_image(s, p, err, errlen) < 0)
		goto out_close;
	r = rbd_set_image_notification(s->image, notify_fd, EVENT_TYPE_EVENTFD);
	if (r < 0) {
		snprintf(err, errlen, "%s: rbd_set_image_notification: %s", p->path, strerror(-r));
		goto out_close;
	}
	if (!p->read_only) {
		char on[16] = "";

		/* Break a silent holder's lock only where librbd blocklists
		 * it first (rbd-conf-check.c warns otherwise). */
		if (rados_conf_get(s->cluster, "rbd_blocklist_on_break_lock", on, sizeof(on)) < 0)
			on[0] = '\0';
		s->lock = imglock_create(s->image, s->io, strcmp(on, "true") == 0, p->name,
					 notify_fd);
		if (s->lock == NULL) {
			snprintf(err, errlen, "%s: cannot start its lock thread", p->path);
			goto out_close;
		}
	}
	return s;

out_close:
	rbd_close(s->image);
out_ioctx:
	rados_ioctx_destroy(s->io);
out_shutdown:
	rados_shutdown(s->cluster);
out_free:
	free(s);
	return NULL;
}

void
rbd_session_close(struct rbd_session *s)
{
	if (s == NULL)
		return;
	imglock_destroy(s->lock);   /* releases the lock */
	rbd_close(s->image);        /* waits for librbd's own in-flight work */
	rados_ioctx_destroy(s->io);
	rados_shutdown(s->cluster);
	free(s);
}

/* One entry of a getaddrs list, as the mon's "osd blocklist add" takes it. */
static int
fence_one(struct rbd_session *s, const char *entry, char *err, size_t errlen)
{
	char a[160];
	const char *colon;
	int r;

	snprintf(a, sizeof(a), "%s", entry);
	r = rados_blocklist_add(s->cluster, a, RBD_FENCE_S);
	if (r == -EINVAL && (colon = strchr(entry, ':')) != NULL &&
	    strchr(colon + 1, ':') != NULL) {
		/* "v2:IP:PORT/NONCE": older parsers want it without the type. */
		snprintf(a, sizeof(a), "%s", colon + 1);
		r = rados_blocklist_add(s->cluster, a, RBD_FENCE_S);
	}
	if (r < 0)
		snprintf(err, errlen, "blocklisting the old client instance %s: %s", entry,
			 strerror(-r));
	return r < 0 ? -1 : 0;
}

int
rbd_session_fence(struct rbd_session *s, const char *addr, char *err, size_t errlen)
{
	char list[160], *entry, *save = NULL;
	size_t n;
	int fenced = 0;

	if (addr[0] == '\0') {
		snprintf(err, errlen, "the old client instance's address is unknown, so it cannot "
			 "be blocklisted");
		return -1;
	}
	/* "[v2:10.0.0.1:0/123,v1:10.0.0.1:0/123]" or one bare entry. */
	snprintf(list, sizeof(list), "%s", addr[0] == '[' ? addr + 1 : addr);
	n = strlen(list);
	if (n > 0 && list[n - 1] == ']')
		list[n - 1] = '\0';
	for (entry = strtok_r(list, ",", &save); entry != NULL;
	     entry = strtok_r(NULL, ",", &save))
		if (fence_one(s, entry, err, errlen) == 0)
			fenced++;
	/* One entry is enough: the OSDs match an instance by IP and nonce. */
	return fenced > 0 ? 0 : -1;
}
