/* What a job does to the backing file (target/io/workq.h): the
 * pread/pwrite/fallocate/ioctl/fdatasync a worker thread runs, the
 * page-cache-only READ the event loop tries first, and the io_uring
 * operation the event loop's ring runs instead (ioq.c submits it). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <liburing.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "extents.h"
#include "pagecache.h"
#include "util.h"
#include "workq.h"

/* Aligned for O_DIRECT (direct-io). */
static const char zeros[64 * 1024] __attribute__((aligned(4096)));

static int
full_pread(int fd, void *buf, uint32_t len, uint64_t off)
{
	uint32_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			/* Past EOF of a regular file reads as zeros. */
			memset((char *)buf + done, 0, len - done);
			break;
		}
		done += (uint32_t)n;
	}
	return 0;
}

static int
full_pwrite(int fd, const void *buf, uint64_t len, uint64_t off, int repeat)
{
	uint64_t done = 0;

	while (done < len) {
		size_t chunk = (size_t)(len - done);
		ssize_t n;

		if (repeat && chunk > sizeof(zeros))
			chunk = sizeof(zeros);
		n = pwrite(fd, repeat ? buf : (const char *)buf + done, chunk,
			   (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOSPC;
		done += (uint64_t)n;
	}
	return 0;
}

static int
do_trim(struct job *j)
{
	if (j->is_blockdev) {
		uint64_t range[2] = { j->off, j->len };

		if (ioctl(j->fd, BLKDISCARD, range) < 0)
			return errno == EOPNOTSUPP ? 0 : -errno;
		return 0;
	}
	if (fallocate(j->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)j->off, (off_t)j->len) < 0)
		/* TRIM is advisory: a file system without holes ignores it. */
		return errno == EOPNOTSUPP ? 0 : -errno;
	return 0;
}

static int
do_zero(struct job *j)
{
	if (j->is_blockdev) {
		uint64_t range[2] = { j->off, j->len };

		if (ioctl(j->fd, BLKZEROOUT, range) == 0)
			return 0;
		if (errno != EOPNOTSUPP && errno != EINVAL)
			return -errno;
	} else {
		if (fallocate(j->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
			      (off_t)j->off, (off_t)j->len) == 0)
			return 0;
		if (!j->no_hole &&
		    fallocate(j->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)j->off, (off_t)j->len) == 0)
			return 0;
		if (errno != EOPNOTSUPP)
			return -errno;
	}
	return full_pwrite(j->fd, zeros, j->len, j->off, 1);
}

void
job_execute(struct job *j)
{
	switch (j->op) {
	case JOB_READ:
		j->result = full_pread(j->fd, j->buf, j->len, j->off);
		break;
	case JOB_WRITE:
		j->result = full_pwrite(j->fd, j->src, j->len, j->off, 0);
		break;
	case JOB_TRIM:
		j->result = do_trim(j);
		break;
	case JOB_ZERO:
		j->result = do_zero(j);
		break;
	case JOB_SYNC:
		j->result = fdatasync(j->fd) < 0 ? -errno : 0;
		break;
	case JOB_EXTENTS: {
		struct rb_extent_list l;

		rb_extent_list_init(&l, j->buf);
		j->result = extents_of_fd(j->fd, j->is_blockdev, j->off, j->len, j->block, &l);
		j->nextents = l.n;
		break;
	}
	}
}

int
job_try_now(struct job *j)
{
	struct iovec iov = { .iov_base = j->buf, .iov_len = j->len };
	uint64_t t0, t1;
	ssize_t n;

	switch (j->op) {
	case JOB_READ:
		n = preadv2(j->fd, &iov, 1, (off_t)j->off, RWF_NOWAIT);
		if (n < 0 && errno == EOPNOTSUPP)
			return -1;
		break;
	case JOB_WRITE:
		t0 = rb_now_ns();
		if (!pagecache_calm(t0))
			return 0;
		n = pwrite(j->fd, j->src, j->len, (off_t)j->off);
		t1 = rb_now_ns();
		pagecache_took(t1, t1 - t0);
		break;
	default:
		return 0;
	}
	if (n != (ssize_t)j->len)
		return 0;    /* not all of it now, past EOF, or an error: the ioq decides */
	j->result = 0;
	return 1;
}

/* ---- on io_uring ---- */

int
backing_ring_serves(const struct job *j)
{
	switch (j->op) {
	case JOB_READ:
	case JOB_WRITE:
	case JOB_SYNC:
		return 1;
	case JOB_TRIM:
	case JOB_ZERO:
		return !j->is_blockdev;
	case JOB_EXTENTS:
		return 0;       /* lseek: a worker's */
	}
	return 0;
}

void
backing_prep_sqe(struct io_uring_sqe *sqe, const struct job *j)
{
	uint32_t d = j->done_bytes;

	switch (j->op) {
	case JOB_READ:
		io_uring_prep_read(sqe, j->fd, (char *)j->buf + d, j->len - d, j->off + d);
		break;
	case JOB_WRITE:
		io_uring_prep_write(sqe, j->fd, (const char *)j->src + d, j->len - d,
				    j->off + d);
		break;
	case JOB_TRIM:
		io_uring_prep_fallocate(sqe, j->fd,
					FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					(off_t)j->off, (off_t)j->len);
		break;
	case JOB_ZERO:
		io_uring_prep_fallocate(sqe, j->fd,
					FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
					(off_t)j->off, (off_t)j->len);
		break;
	case JOB_SYNC:
		io_uring_prep_fsync(sqe, j->fd, IORING_FSYNC_DATASYNC);
		break;
	case JOB_EXTENTS:
		break;          /* never on the ring (backing_ring_serves) */
	}
}
