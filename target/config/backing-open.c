/* Open and size an export's backing store (config.h: backing_open): a
 * file or block device, or an RBD image.  config.c calls it for every
 * export it parses, to prove the path usable (also with -n). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

static int
berr(struct backing_err *err, enum backing_key key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record the error; returns -1. */
static int
berr(struct backing_err *err, enum backing_key key, const char *fmt, ...)
{
	va_list ap;

	err->key = key;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* An RBD export's ceph-conf and ceph-keyring must be files this process
 * can read; a keyring must not be readable by everyone. */
static int
rbd_files_ok(const struct cfg_export *e, const char *conf, struct backing_err *err)
{
	struct stat st;

	if (access(conf, R_OK) < 0)
		return berr(err, BACKING_KEY_CEPH_CONF, "ceph-conf: %s%s: %s", conf,
			    e->ceph_conf == NULL ? " (the default)" : "", strerror(errno));
	if (e->ceph_keyring == NULL)
		return 0;
	if (stat(e->ceph_keyring, &st) < 0 || access(e->ceph_keyring, R_OK) < 0)
		return berr(err, BACKING_KEY_CEPH_KEYRING, "ceph-keyring: %s: %s",
			    e->ceph_keyring, strerror(errno));
	if (st.st_mode & S_IROTH)
		return berr(err, BACKING_KEY_CEPH_KEYRING, "ceph-keyring: %s is readable by "
			    "everyone (mode %04o): chmod o-rwx it", e->ceph_keyring,
			    (unsigned)(st.st_mode & 07777));
	return 0;
}

/* Connect to the cluster and open the image, to prove it usable (also with
 * -n: a wrong pool, image or monitor is an error there, in bounded time). */
static int
rbd_export_open(struct cfg_export *e, int check, struct backing_err *err)
{
	const char *conf = e->ceph_conf != NULL ? e->ceph_conf : RBD_DEFAULT_CONF;
	struct rbd_opts o = {
		.conf = conf,
		.id = e->ceph_id != NULL ? e->ceph_id : RBD_DEFAULT_ID,
		.keyring = e->ceph_keyring,
		.read_only = e->read_only,
		.name = e->name,
	};
	char why[512];
	int rc = 0;

	if (rbd_files_ok(e, conf, err) < 0)
		return -1;
	e->rbd = rbd_backing_create(e->path, &o, why, sizeof(why));
	if (e->rbd == NULL)
		return berr(err, strncmp(why, "ceph-conf", 9) == 0 ? BACKING_KEY_CEPH_CONF :
			    BACKING_KEY_PATH, "path: %s", why);
	e->size = rbd_backing_size(e->rbd);
	if (e->size_wanted != 0 && e->size_wanted != e->size)
		rc = berr(err, BACKING_KEY_SIZE, "size: %s is an image of %llu bytes, not %llu "
			  "(rbd resize it)", e->path, (unsigned long long)e->size,
			  (unsigned long long)e->size_wanted);
	else if (e->size == 0 || e->size % CONFIG_BLOCK != 0)
		rc = berr(err, BACKING_KEY_PATH, "path: %s: size %llu is not a non-zero "
			  "multiple of 512", e->path, (unsigned long long)e->size);
	else if (!check)
		return 0;
	rbd_backing_destroy(e->rbd);
	e->rbd = NULL;
	return rc;
}

/* Open the backing file to prove it usable; create or extend it to `size`
 * unless only checking. */
static int
file_open(struct cfg_export *e, int check, struct backing_err *err)
{
	int oflags = (e->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		(e->direct_io ? O_DIRECT : 0);
	int rc = -1;
	struct stat st;

	if (e->size_wanted != 0 && !e->read_only && !check)
		oflags |= O_CREAT;
	e->fd = open(e->path, oflags, 0600);
	if (e->fd < 0) {
		int saved = errno;
		char *dup, *dir;
		int ok = 0;

		/* -n must not create the file, but `size` would. */
		if (saved == ENOENT && check && e->size_wanted != 0 && !e->read_only &&
		    (dup = strdup(e->path)) != NULL) {
			dir = dirname(dup);
			ok = access(dir, W_OK) == 0;
			free(dup);
		}
		if (ok) {
			e->size = e->size_wanted;
			return 0;
		}
		if (saved == EINVAL && e->direct_io)
			return berr(err, BACKING_KEY_PATH, "path: %s: its file system refuses "
				    "O_DIRECT (direct-io = yes)", e->path);
		return berr(err, BACKING_KEY_PATH, "path: %s: %s", e->path, strerror(saved));
	}
	if (fstat(e->fd, &st) < 0) {
		rc = berr(err, BACKING_KEY_PATH, "path: %s: fstat: %s", e->path,
			  strerror(errno));
		goto out_close;
	}
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes;
		int lbs = 0;

		if (ioctl(e->fd, BLKGETSIZE64, &bytes) < 0) {
			rc = berr(err, BACKING_KEY_PATH, "path: %s: BLKGETSIZE64: %s", e->path,
				  strerror(errno));
			goto out_close;
		}
		e->is_blockdev = 1;
		if (e->direct_io && (ioctl(e->fd, BLKSSZGET, &lbs) < 0 ||
				     (unsigned)lbs > CONFIG_BLOCK)) {
			rc = berr(err, BACKING_KEY_PATH, "path: %s: direct-io: its logical block "
				  "size is %d bytes; requests are aligned to %u", e->path, lbs,
				  CONFIG_BLOCK);
			goto out_close;
		}
		if (e->size_wanted != 0 && e->size_wanted != bytes) {
			rc = berr(err, BACKING_KEY_SIZE, "size: %s is a block device of %llu "
				  "bytes, not %llu", e->path, (unsigned long long)bytes,
				  (unsigned long long)e->size_wanted);
			goto out_close;
		}
		e->size = bytes;
	} else if (S_ISREG(st.st_mode)) {
		uint64_t cur = (uint64_t)st.st_size;

		e->size = cur;
		if (e->size_wanted != 0 && e->size_wanted < cur) {
			rc = berr(err, BACKING_KEY_SIZE, "size: %s is %llu bytes; refusing to "
				  "shrink it to %llu", e->path, (unsigned long long)cur,
				  (unsigned long long)e->size_wanted);
			goto out_close;
		}
		if (e->size_wanted > cur) {
			if (e->read_only) {
				rc = berr(err, BACKING_KEY_SIZE, "size: cannot extend %s: the "
					  "export is read-only", e->path);
				goto out_close;
			}
			if (!check && ftruncate(e->fd, (off_t)e->size_wanted) < 0) {
				rc = berr(err, BACKING_KEY_SIZE, "size: %s: ftruncate: %s",
					  e->path, strerror(errno));
				goto out_close;
			}
			e->size = e->size_wanted;
		}
	} else {
		rc = berr(err, BACKING_KEY_PATH, "path: %s: not a regular file or block "
			  "device", e->path);
		goto out_close;
	}
	if (e->size == 0) {
		rc = berr(err, BACKING_KEY_PATH, "path: %s is empty (set size = to create it)",
			  e->path);
		goto out_close;
	}
	if (e->size % CONFIG_BLOCK != 0) {
		rc = berr(err, BACKING_KEY_PATH, "path: %s: size %llu is not a multiple of 512",
			  e->path, (unsigned long long)e->size);
		goto out_close;
	}
	if (!check)
		return 0;
	rc = 0;

out_close:
	close(e->fd);
	e->fd = -1;
	return rc;
}

int
backing_open(struct cfg_export *e, int check, struct backing_err *err)
{
	return e->is_rbd ? rbd_export_open(e, check, err) : file_open(e, check, err);
}
