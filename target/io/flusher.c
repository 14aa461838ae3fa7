/* Group commit on the event loop, one flusher per backing file
 * (target/io/flusher.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flusher.h"
#include "log.h"

/* flusher_fail's: the failed state is one per export, whichever loop's
 * flusher (or write) found the failure. */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

struct flusher {
	struct ioq *io;
	struct job sync;             /* the running fdatasync */
	struct ioq_deferred kick;    /* start a batch before the next submit */
	int running;
	struct job_list batch;       /* covered by the running fdatasync */
	struct job_list waiting;     /* for the next one */
	char name[64];
	struct flusher *leader;      /* holds failed/failure: itself, or loop 0's */
	int own_fd;                  /* -1, or the fd a peer opened for its syncs */
	int failed;                  /* 0, or the -errno that failed the export */
	char failure[96];            /* what failed, for the log and --stats */
	struct flusher_stats stats;
};

/* Everything queued now was written before this sync starts. */
static void
flusher_start(struct flusher *f)
{
	if (f->running || STAILQ_EMPTY(&f->waiting))
		return;
	STAILQ_CONCAT(&f->batch, &f->waiting);
	f->running = 1;
	ioq_submit(f->io, &f->sync);
}

static void
flusher_sync_done(struct job *sync)
{
	struct flusher *f = sync->owner;
	struct job_list batch;
	struct job *j;
	int r = sync->result;
	uint64_t n = 0;

	/* ESHUTDOWN: an RBD session fenced off the image (request-exec.c,
	 * write_error_fails_export): the batch fails over, the export
	 * reopens, and nothing acknowledged was lost. */
	if (r < 0 && r != -ESHUTDOWN)
		flusher_fail(f, r, "fdatasync");
	/* Once failed, always failed: a sync that returned 0 after an earlier
	 * error may cover pages the kernel dropped. */
	if (flusher_failed(f) != 0 && r >= 0)
		r = -EIO;
	STAILQ_INIT(&batch);
	STAILQ_CONCAT(&batch, &f->batch);
	STAILQ_FOREACH(j, &batch, link)
		n++;
	f->stats.syncs++;
	f->stats.jobs += n;
	if (n > f->stats.max_batch)
		f->stats.max_batch = n;
	if (r < 0)
		f->stats.errors++;
	f->running = 0;
	/* Jobs that joined while this sync ran get the next one, started
	 * before the next submit, so that whatever else completes in this
	 * round joins it too. */
	if (!STAILQ_EMPTY(&f->waiting))
		ioq_defer(f->io, &f->kick);
	while ((j = STAILQ_FIRST(&batch)) != NULL) {
		STAILQ_REMOVE_HEAD(&batch, link);
		j->result = r;
		j->done(j);
	}
}

static void
flusher_kick(struct ioq_deferred *d)
{
	struct flusher *f = (struct flusher *)(void *)((char *)d - offsetof(struct flusher, kick));

	flusher_start(f);
}

struct flusher *
flusher_create(int fd, const char *name, struct ioq *io)
{
	struct flusher *f = calloc(1, sizeof(*f));

	if (f == NULL) {
		log_warnx("%s: flusher: out of memory", name);
		return NULL;
	}
	f->io = io;
	STAILQ_INIT(&f->batch);
	STAILQ_INIT(&f->waiting);
	f->leader = f;
	f->own_fd = -1;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->sync.op = JOB_SYNC;
	f->sync.fd = fd;
	f->sync.done = flusher_sync_done;
	f->sync.owner = f;
	f->kick.fn = flusher_kick;
	return f;
}

struct flusher *
flusher_create_peer(struct flusher *leader, struct ioq *io)
{
	struct flusher *f;
	char path[64];
	int fd;

	/* Its own open file: Linux reports a writeback error once to each
	 * open file (errseq), so a sync of this loop cannot miss an error
	 * that a concurrent sync of another loop consumed. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", leader->sync.fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		log_warn("%s: reopening the backing file for another loop's fdatasync",
			 leader->name);
		return NULL;
	}
	f = flusher_create(fd, leader->name, io);
	if (f == NULL) {
		close(fd);
		return NULL;
	}
	f->leader = leader;
	f->own_fd = fd;
	return f;
}

void
flusher_set_backing(struct flusher *f, void *backing, void (*submit)(struct job *j))
{
	f->sync.backing = backing;
	f->sync.submit = submit;
}

void
flusher_destroy(struct flusher *f)
{
	if (f == NULL)
		return;
	if (flusher_busy(f) || f->kick.queued) {
		/* Its sync job is still in the ioq: leak it, never free it. */
		log_warnx("%s: flusher still busy at its end", f->name);
		return;
	}
	if (f->own_fd >= 0)
		close(f->own_fd);
	free(f);
}

void
flusher_fail(struct flusher *f, int err, const char *what)
{
	struct flusher *l = f->leader;
	int e = err < 0 ? err : -EIO;

	pthread_mutex_lock(&fail_lock);
	if (l->failed == 0) {
		snprintf(l->failure, sizeof(l->failure), "%s: %s", what, strerror(-e));
		/* failure is complete before anyone sees failed set */
		__atomic_store_n(&l->failed, e, __ATOMIC_RELEASE);
		log_warnx("%s: %s: export failed; every write and FLUSH now fails with EIO "
			  "until it is reopened (%s)", l->name, l->failure,
			  l->sync.submit != NULL ? "an RBD export reopens itself once the cluster "
			  "answers" : "reload");
	}
	pthread_mutex_unlock(&fail_lock);
}

void
flusher_reopened(struct flusher *f, const char *how)
{
	struct flusher *l = f->leader;

	pthread_mutex_lock(&fail_lock);
	if (l->failed != 0) {
		log_info("%s: no longer failed (%s): %s", l->name, l->failure, how);
		__atomic_store_n(&l->failed, 0, __ATOMIC_RELEASE);
		l->failure[0] = '\0';
	}
	pthread_mutex_unlock(&fail_lock);
}

int
flusher_failed(const struct flusher *f)
{
	return __atomic_load_n(&f->leader->failed, __ATOMIC_ACQUIRE);
}

const char *
flusher_failure(const struct flusher *f)
{
	return f->leader->failure;
}

void
flusher_submit(struct flusher *f, struct job *j)
{
	STAILQ_INSERT_TAIL(&f->waiting, j, link);
	if (!f->running)
		ioq_defer(f->io, &f->kick);
}

int
flusher_busy(const struct flusher *f)
{
	return f->running || !STAILQ_EMPTY(&f->waiting);
}

void
flusher_get_stats(const struct flusher *f, struct flusher_stats *st)
{
	*st = f->stats;
}
