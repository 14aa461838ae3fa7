/* Group commit on the event loop, one flusher per backing file
 * (target/flusher.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flusher.h"
#include "log.h"

struct flusher {
	struct ioq *io;
	struct job sync;             /* the running fdatasync */
	struct ioq_deferred kick;    /* start a batch before the next submit */
	int running;
	struct job *batch;           /* covered by the running fdatasync */
	struct job *head, *tail;     /* waiting for the next one */
	char name[64];
	int failed;                  /* 0, or the -errno that failed the export */
	char failure[96];            /* what failed, for the log and --stats */
	struct flusher_stats stats;
};

/* Everything queued now was written before this sync starts. */
static void
flusher_start(struct flusher *f)
{
	if (f->running || f->head == NULL)
		return;
	f->batch = f->head;
	f->head = f->tail = NULL;
	f->running = 1;
	ioq_submit(f->io, &f->sync);
}

static void
flusher_sync_done(struct job *sync)
{
	struct flusher *f = sync->owner;
	struct job *batch = f->batch, *j, *next;
	int r = sync->result;
	uint64_t n;

	if (r < 0)
		flusher_fail(f, r, "fdatasync");
	/* Once failed, always failed: a sync that returned 0 after an earlier
	 * error may cover pages the kernel dropped. */
	if (f->failed != 0 && r >= 0)
		r = -EIO;
	for (n = 0, j = batch; j != NULL; j = j->next)
		n++;
	f->stats.syncs++;
	f->stats.jobs += n;
	if (n > f->stats.max_batch)
		f->stats.max_batch = n;
	if (r < 0)
		f->stats.errors++;
	f->batch = NULL;
	f->running = 0;
	/* Jobs that joined while this sync ran get the next one, started
	 * before the next submit, so that whatever else completes in this
	 * round joins it too. */
	if (f->head != NULL)
		ioq_defer(f->io, &f->kick);
	for (j = batch; j != NULL; j = next) {
		next = j->next;
		j->next = NULL;
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
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->sync.op = JOB_SYNC;
	f->sync.fd = fd;
	f->sync.done = flusher_sync_done;
	f->sync.owner = f;
	f->kick.fn = flusher_kick;
	return f;
}

void
flusher_set_rbd(struct flusher *f, struct rbd_backing *rbd)
{
	f->sync.rbd = rbd;
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
	free(f);
}

void
flusher_fail(struct flusher *f, int err, const char *what)
{
	if (f->failed != 0)
		return;
	f->failed = err < 0 ? err : -EIO;
	snprintf(f->failure, sizeof(f->failure), "%s: %s", what, strerror(-f->failed));
	log_warnx("%s: %s: export failed; every write and FLUSH now fails with EIO "
		  "until it is reopened (reload)", f->name, f->failure);
}

int
flusher_failed(const struct flusher *f)
{
	return f->failed;
}

const char *
flusher_failure(const struct flusher *f)
{
	return f->failure;
}

void
flusher_submit(struct flusher *f, struct job *j)
{
	j->next = NULL;
	if (f->tail != NULL)
		f->tail->next = j;
	else
		f->head = j;
	f->tail = j;
	if (!f->running)
		ioq_defer(f->io, &f->kick);
}

int
flusher_busy(const struct flusher *f)
{
	return f->running || f->head != NULL;
}

void
flusher_get_stats(const struct flusher *f, struct flusher_stats *st)
{
	*st = f->stats;
}
