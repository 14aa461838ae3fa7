/* RBD exports through librbd's async I/O, completed on the event loop
 * (target/rbd.h). */
#include <errno.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "rbd-lock.h"
#include "rbd.h"
#include "util.h"

#define RBD_POLL_BATCH 32

struct rbd_backing {
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t image;
	int efd;                    /* librbd's completion notification */
	uint64_t size;
	int read_only;
	char name[64];              /* the export's */
	unsigned inflight;          /* submitted, j->done not yet run */
	struct job *failed_head, *failed_tail;  /* refused at submit: done at the next reap */
	struct job *wait_head, *wait_tail;      /* writes waiting for the lock */
	uint64_t wait_start_ns;     /* when the first of them began to wait */
	struct imglock *lock;       /* writable images only */
};

int
rbd_is_spec(const char *path)
{
	return strncmp(path, RBD_PREFIX, strlen(RBD_PREFIX)) == 0;
}

static int
rbd_name_ok(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s == '/' || *s == '@' || *s <= ' ' || *s == 0x7f)
			return 0;
	return 1;
}

int
rbd_spec_parse(const char *path, char *pool, size_t poollen, char *image, size_t imagelen,
	       const char **why)
{
	const char *s = path + strlen(RBD_PREFIX), *slash;

	if (!rbd_is_spec(path)) {
		*why = "does not start with rbd:";
		return -1;
	}
	slash = strchr(s, '/');
	if (slash == NULL || slash == s || slash[1] == '\0') {
		*why = "expected rbd:POOL/IMAGE";
		return -1;
	}
	if ((size_t)(slash - s) >= poollen || strlen(slash + 1) >= imagelen) {
		*why = "pool or image name too long";
		return -1;
	}
	memcpy(pool, s, (size_t)(slash - s));
	pool[slash - s] = '\0';
	snprintf(image, imagelen, "%s", slash + 1);
	if (!rbd_name_ok(pool) || !rbd_name_ok(image)) {
		*why = "pool and image names may not contain '/', '@', spaces or control "
		       "characters (snapshots and namespaces are not supported)";
		return -1;
	}
	return 0;
}

/* The client, configured before it connects. */
static int
rbd_client_create(struct rbd_backing *b, const struct rbd_opts *o, char *err, size_t errlen)
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
	r = rados_create(&b->cluster, o->id);
	if (r < 0) {
		snprintf(err, errlen, "ceph-id: rados_create(client.%s): %s", o->id, strerror(-r));
		return -1;
	}
	r = rados_conf_read_file(b->cluster, o->conf);
	if (r < 0) {
		snprintf(err, errlen, "ceph-conf: %s: %s", o->conf, strerror(-r));
		goto out_shutdown;
	}
	if (o->keyring != NULL && (r = rados_conf_set(b->cluster, "keyring", o->keyring)) < 0) {
		snprintf(err, errlen, "ceph-keyring: %s: %s", o->keyring, strerror(-r));
		goto out_shutdown;
	}
	for (i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		r = rados_conf_set(b->cluster, settings[i][0], settings[i][1]);
		if (r < 0) {
			snprintf(err, errlen, "rados_conf_set %s = %s: %s", settings[i][0],
				 settings[i][1], strerror(-r));
			goto out_shutdown;
		}
	}
	if (rados_conf_get(b->cluster, "mon_host", mon, sizeof(mon)) < 0 || mon[0] == '\0')
		snprintf(mon, sizeof(mon), "(none: no 'mon host' in %s)", o->conf);
	r = rados_connect(b->cluster);
	if (r == -ETIMEDOUT) {
		snprintf(err, errlen, "cannot reach the Ceph monitors at %s (ceph-conf %s) within "
			 "%d s (client_mount_timeout)", mon, o->conf, RBD_MON_TIMEOUT_S);
		goto out_shutdown;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot connect to the Ceph monitors at %s as client.%s "
			 "(ceph-conf %s%s%s): %s", mon, o->id, o->conf,
			 o->keyring != NULL ? ", ceph-keyring " : "",
			 o->keyring != NULL ? o->keyring : "", strerror(-r));
		goto out_shutdown;
	}
	return 0;

out_shutdown:
	rados_shutdown(b->cluster);
	b->cluster = NULL;
	return -1;
}

/* Refuse an image whose own metadata turns the client cache back on. */
static int
rbd_check_image(struct rbd_backing *b, const char *pool, const char *image, char *err,
		size_t errlen)
{
	char val[16] = "";
	size_t vlen = sizeof(val);
	uint64_t features = 0;
	int r;

	if (rbd_metadata_get(b->image, "conf_rbd_cache", val, &vlen) == 0 &&
	    strcmp(val, "false") != 0) {
		snprintf(err, errlen, "image %s/%s sets rbd_cache = %s in its metadata; an "
			 "acknowledged write could sit in a client cache (rbd config image rm "
			 "%s/%s rbd_cache)", pool, image, val, pool, image);
		return -1;
	}
	r = rbd_get_size(b->image, &b->size);
	if (r < 0) {
		snprintf(err, errlen, "image %s/%s: rbd_get_size: %s", pool, image, strerror(-r));
		return -1;
	}
	if (b->read_only)
		return 0;
	r = rbd_get_features(b->image, &features);
	if (r < 0) {
		snprintf(err, errlen, "image %s/%s: rbd_get_features: %s", pool, image,
			 strerror(-r));
		return -1;
	}
	if (!(features & RBD_FEATURE_EXCLUSIVE_LOCK)) {
		snprintf(err, errlen, "image %s/%s has no exclusive-lock feature, which a writable "
			 "export needs so that two targets never write it at once (rbd feature "
			 "enable %s/%s exclusive-lock)", pool, image, pool, image);
		return -1;
	}
	return 0;
}

struct rbd_backing *
rbd_backing_create(const char *path, const struct rbd_opts *o, char *err, size_t errlen)
{
	struct rbd_backing *b = calloc(1, sizeof(*b));
	char pool[128], image[256];
	const char *why = "";
	int r;

	if (b == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->efd = -1;
	b->read_only = o->read_only;
	snprintf(b->name, sizeof(b->name), "%s", o->name);
	if (rbd_spec_parse(path, pool, sizeof(pool), image, sizeof(image), &why) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		goto out_free;
	}
	if (rbd_client_create(b, o, err, errlen) < 0)
		goto out_free;
	r = rados_ioctx_create(b->cluster, pool, &b->io);
	if (r < 0) {
		if (r == -ENOENT)
			snprintf(err, errlen, "%s: pool '%s' does not exist", path, pool);
		else
			snprintf(err, errlen, "%s: pool '%s': %s", path, pool, strerror(-r));
		goto out_shutdown;
	}
	r = o->read_only ? rbd_open_read_only(b->io, image, &b->image, NULL) :
		rbd_open(b->io, image, &b->image, NULL);
	if (r < 0) {
		if (r == -ENOENT)
			snprintf(err, errlen, "%s: no image '%s' in pool '%s'", path, image, pool);
		else
			snprintf(err, errlen, "%s: rbd_open: %s", path, strerror(-r));
		goto out_ioctx;
	}
	if (rbd_check_image(b, pool, image, err, errlen) < 0)
		goto out_close;
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0) {
		snprintf(err, errlen, "%s: eventfd: %s", path, strerror(errno));
		goto out_close;
	}
	r = rbd_set_image_notification(b->image, b->efd, EVENT_TYPE_EVENTFD);
	if (r < 0) {
		snprintf(err, errlen, "%s: rbd_set_image_notification: %s", path, strerror(-r));
		goto out_close_efd;
	}
	if (!o->read_only) {
		b->lock = imglock_create(b->image, o->name, b->efd);
		if (b->lock == NULL) {
			snprintf(err, errlen, "%s: cannot start its lock thread", path);
			goto out_close_efd;
		}
	}
	return b;

out_close_efd:
	close(b->efd);
out_close:
	rbd_close(b->image);
out_ioctx:
	rados_ioctx_destroy(b->io);
out_shutdown:
	rados_shutdown(b->cluster);
out_free:
	free(b);
	return NULL;
}

void
rbd_backing_destroy(struct rbd_backing *b)
{
	if (b == NULL)
		return;
	if (b->inflight != 0)
		log_warnx("export %s: %u RBD jobs still in flight at its end", b->name,
			  b->inflight);
	imglock_destroy(b->lock);   /* releases the lock */
	rbd_close(b->image);        /* waits for librbd's own in-flight work */
	close(b->efd);
	rados_ioctx_destroy(b->io);
	rados_shutdown(b->cluster);
	free(b);
}

uint64_t
rbd_backing_size(const struct rbd_backing *b)
{
	return b->size;
}

int
rbd_backing_fd(const struct rbd_backing *b)
{
	return b->efd;
}

unsigned
rbd_backing_inflight(const struct rbd_backing *b)
{
	return b->inflight;
}

int
rbd_backing_lock_owner(const struct rbd_backing *b)
{
	return b->lock != NULL && imglock_owner(b->lock);
}

static void
job_list_push(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail != NULL)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

/* Complete j at the next reap (never inside the submit). */
static void
rbd_fail_later(struct rbd_backing *b, struct job *j, int err)
{
	uint64_t one = 1;

	j->result = err;
	job_list_push(&b->failed_head, &b->failed_tail, j);
	if (write(b->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("export %s: eventfd write", b->name);
}

/* librbd refuses a write, and also a flush, on an image with the
 * exclusive-lock feature from a client that does not hold the lock and
 * took it explicitly before (EROFS): both wait for it. */
static int
needs_lock(const struct job *j)
{
	return j->op == JOB_WRITE || j->op == JOB_TRIM || j->op == JOB_ZERO ||
	       j->op == JOB_SYNC;
}

static void
rbd_start(struct rbd_backing *b, struct job *j)
{
	rbd_completion_t c;
	int r;

	r = rbd_aio_create_completion(j, NULL, &c);
	if (r < 0) {
		rbd_fail_later(b, j, r);
		return;
	}
	switch (j->op) {
	case JOB_READ:
		r = rbd_aio_read(b->image, j->off, j->len, j->buf, c);
		break;
	case JOB_WRITE:
		r = rbd_aio_write(b->image, j->off, j->len, j->src, c);
		break;
	case JOB_TRIM:
		r = rbd_aio_discard(b->image, j->off, j->len, c);
		break;
	case JOB_ZERO:
		r = rbd_aio_write_zeroes(b->image, j->off, j->len, c,
					 j->no_hole ? RBD_WRITE_ZEROES_FLAG_THICK_PROVISION : 0, 0);
		break;
	case JOB_SYNC:
		r = rbd_aio_flush(b->image, c);
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r < 0) {
		rbd_aio_release(c);
		rbd_fail_later(b, j, r);
	}
}

void
rbd_backing_submit(struct rbd_backing *b, struct job *j)
{
	j->result = 0;
	j->done_bytes = 0;
	b->inflight++;
	if (b->read_only) {
		/* No lock on a read-only image; nothing to flush either. */
		if (j->op == JOB_READ || j->op == JOB_SYNC)
			rbd_start(b, j);
		else
			rbd_fail_later(b, j, -EROFS);
		return;
	}
	if (needs_lock(j) && (b->wait_head != NULL || !imglock_want(b->lock))) {
		/* In order behind the writes already waiting. */
		if (b->wait_head == NULL)
			b->wait_start_ns = rb_now_ns();
		job_list_push(&b->wait_head, &b->wait_tail, j);
		return;
	}
	rbd_start(b, j);
}

static void
rbd_complete(struct rbd_backing *b, struct job *j)
{
	b->inflight--;
	j->done(j);
}

/* Writes that waited: start them once the lock is ours, fail them after
 * RBD_LOCK_WAIT_S. */
static void
rbd_lock_waiters(struct rbd_backing *b)
{
	struct job *j;
	int owner, expired;

	if (b->wait_head == NULL)
		return;
	owner = imglock_want(b->lock);
	expired = rb_now_ns() - b->wait_start_ns >= RBD_LOCK_WAIT_S * 1000000000ull;
	if (!owner && !expired)
		return;
	if (!owner)
		log_warnx("export %s: no exclusive lock after %d s: failing the writes that "
			  "waited for it with EIO", b->name, RBD_LOCK_WAIT_S);
	while ((j = b->wait_head) != NULL) {
		b->wait_head = j->next;
		if (b->wait_head == NULL)
			b->wait_tail = NULL;
		j->next = NULL;
		if (owner) {
			rbd_start(b, j);
		} else {
			j->result = -EIO;
			rbd_complete(b, j);
		}
	}
}

void
rbd_backing_reap(struct rbd_backing *b)
{
	rbd_completion_t comps[RBD_POLL_BATCH];
	struct job *j, *failed;
	uint64_t v;
	ssize_t ret;
	int i, n;

	if (read(b->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("export %s: eventfd read", b->name);
	do {
		n = rbd_poll_io_events(b->image, comps, RBD_POLL_BATCH);
		for (i = 0; i < n; i++) {
			j = rbd_aio_get_arg(comps[i]);
			ret = rbd_aio_get_return_value(comps[i]);
			rbd_aio_release(comps[i]);
			j->result = ret < 0 ? (int)ret : 0;
			if (ret >= 0)
				j->done_bytes = j->len;
			rbd_complete(b, j);
		}
	} while (n == RBD_POLL_BATCH);
	failed = b->failed_head;
	b->failed_head = b->failed_tail = NULL;
	for (j = failed; j != NULL; j = failed) {
		failed = j->next;
		j->next = NULL;
		rbd_complete(b, j);
	}
	rbd_lock_waiters(b);
}

void
rbd_backing_idle(struct rbd_backing *b)
{
	if (b->lock != NULL && b->wait_head == NULL && b->inflight == 0)
		imglock_idle(b->lock);
}
