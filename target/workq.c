/* Worker threads for backing-store I/O and the completion queue back to the
 * event loop (target/workq.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "workq.h"

static const char zeros[64 * 1024];

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
	}
}

int
job_try_now(struct job *j)
{
	struct iovec iov = { .iov_base = j->buf, .iov_len = j->len };
	ssize_t n;

	if (j->op != JOB_READ)
		return 0;
	n = preadv2(j->fd, &iov, 1, (off_t)j->off, RWF_NOWAIT);
	if (n < 0 && errno == EOPNOTSUPP)
		return -1;
	if (n != (ssize_t)j->len)
		return 0;    /* not all cached, past EOF, or an error: the worker decides */
	j->result = 0;
	return 1;
}

/* ---- worker threads ---- */

struct workq {
	pthread_mutex_t lock;
	pthread_cond_t  cond;
	struct job *head, *tail;
	int stopping;
	unsigned nthreads;
	pthread_t *threads;
	struct compq *cq;
};

static void *
worker_main(void *arg)
{
	struct workq *wq = arg;
	struct job *j;

	pthread_mutex_lock(&wq->lock);
	for (;;) {
		while (wq->head == NULL && !wq->stopping)
			pthread_cond_wait(&wq->cond, &wq->lock);
		if (wq->head == NULL)
			break;
		j = wq->head;
		wq->head = j->next;
		if (wq->head == NULL)
			wq->tail = NULL;
		pthread_mutex_unlock(&wq->lock);
		j->next = NULL;
		job_execute(j);
		compq_push(wq->cq, j);
		pthread_mutex_lock(&wq->lock);
	}
	pthread_mutex_unlock(&wq->lock);
	return NULL;
}

struct workq *
workq_create(unsigned nthreads, struct compq *cq)
{
	struct workq *wq = calloc(1, sizeof(*wq));
	unsigned i;
	int r;

	if (wq == NULL) {
		log_warnx("workq: out of memory");
		return NULL;
	}
	wq->threads = calloc(nthreads, sizeof(*wq->threads));
	if (wq->threads == NULL) {
		log_warnx("workq: out of memory");
		goto out_free;
	}
	wq->cq = cq;
	pthread_mutex_init(&wq->lock, NULL);
	pthread_cond_init(&wq->cond, NULL);
	for (i = 0; i < nthreads; i++) {
		r = pthread_create(&wq->threads[i], NULL, worker_main, wq);
		if (r != 0) {
			log_warnx("workq: pthread_create: %s", strerror(r));
			goto out_stop;
		}
		wq->nthreads++;
	}
	return wq;

out_stop:
	workq_destroy(wq);
	return NULL;
out_free:
	free(wq);
	return NULL;
}

void
workq_destroy(struct workq *wq)
{
	unsigned i;

	if (wq == NULL)
		return;
	pthread_mutex_lock(&wq->lock);
	wq->stopping = 1;
	pthread_cond_broadcast(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
	for (i = 0; i < wq->nthreads; i++)
		pthread_join(wq->threads[i], NULL);
	pthread_cond_destroy(&wq->cond);
	pthread_mutex_destroy(&wq->lock);
	free(wq->threads);
	free(wq);
}

void
workq_submit(struct workq *wq, struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&wq->lock);
	if (wq->tail != NULL)
		wq->tail->next = j;
	else
		wq->head = j;
	wq->tail = j;
	pthread_cond_signal(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
}

/* ---- completion queue ---- */

struct compq {
	pthread_mutex_t lock;
	struct job *head, *tail;
	int efd;
};

struct compq *
compq_create(void)
{
	struct compq *cq = calloc(1, sizeof(*cq));

	if (cq == NULL) {
		log_warnx("compq: out of memory");
		return NULL;
	}
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cq->efd < 0) {
		log_warn("compq: eventfd");
		free(cq);
		return NULL;
	}
	pthread_mutex_init(&cq->lock, NULL);
	return cq;
}

void
compq_destroy(struct compq *cq)
{
	if (cq == NULL)
		return;
	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq);
}

int
compq_fd(const struct compq *cq)
{
	return cq->efd;
}

void
compq_push(struct compq *cq, struct job *j)
{
	uint64_t one = 1;
	int was_empty;

	j->next = NULL;
	pthread_mutex_lock(&cq->lock);
	was_empty = cq->head == NULL;
	if (cq->tail != NULL)
		cq->tail->next = j;
	else
		cq->head = j;
	cq->tail = j;
	pthread_mutex_unlock(&cq->lock);
	/* The eventfd counter only needs to be non-zero while jobs wait. */
	if (was_empty && write(cq->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("compq: eventfd write");
}

struct job *
compq_take(struct compq *cq)
{
	struct job *j;
	uint64_t v;

	pthread_mutex_lock(&cq->lock);
	if (read(cq->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("compq: eventfd read");
	j = cq->head;
	cq->head = cq->tail = NULL;
	pthread_mutex_unlock(&cq->lock);
	return j;
}
