/* Group-committing flusher thread, one per backing file (target/flusher.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flusher.h"
#include "log.h"

struct flusher {
	pthread_mutex_t lock;
	pthread_cond_t  cond;
	struct job *head, *tail;     /* waiting for the next fdatasync */
	int stopping;
	int fd;
	char name[64];
	pthread_t thread;
	struct flusher_stats stats;
};

static void *
flusher_main(void *arg)
{
	struct flusher *f = arg;
	struct job *batch, *j, *next;
	uint64_t n;
	int r;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (f->head == NULL && !f->stopping)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->head == NULL)
			break;
		/* Everything queued now was written before this sync starts. */
		batch = f->head;
		f->head = f->tail = NULL;
		pthread_mutex_unlock(&f->lock);

		r = fdatasync(f->fd) < 0 ? -errno : 0;
		if (r < 0)
			log_warnx("%s: fdatasync: %s", f->name, strerror(-r));
		/* Count before completing: whoever sees a completion must
		 * also see it in the stats. */
		for (n = 0, j = batch; j != NULL; j = j->next)
			n++;
		pthread_mutex_lock(&f->lock);
		f->stats.syncs++;
		f->stats.jobs += n;
		if (n > f->stats.max_batch)
			f->stats.max_batch = n;
		if (r < 0)
			f->stats.errors++;
		pthread_mutex_unlock(&f->lock);

		for (j = batch; j != NULL; j = next) {
			next = j->next;
			j->next = NULL;
			j->result = r;
			j->done(j);
		}
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

struct flusher *
flusher_create(int fd, const char *name)
{
	struct flusher *f = calloc(1, sizeof(*f));
	int r;

	if (f == NULL) {
		log_warnx("%s: flusher: out of memory", name);
		return NULL;
	}
	f->fd = fd;
	snprintf(f->name, sizeof(f->name), "%s", name);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	r = pthread_create(&f->thread, NULL, flusher_main, f);
	if (r != 0) {
		log_warnx("%s: flusher: pthread_create: %s", name, strerror(r));
		pthread_cond_destroy(&f->cond);
		pthread_mutex_destroy(&f->lock);
		free(f);
		return NULL;
	}
	return f;
}

void
flusher_destroy(struct flusher *f)
{
	if (f == NULL)
		return;
	pthread_mutex_lock(&f->lock);
	f->stopping = 1;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void
flusher_submit(struct flusher *f, struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&f->lock);
	if (f->tail != NULL)
		f->tail->next = j;
	else
		f->head = j;
	f->tail = j;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

void
flusher_get_stats(struct flusher *f, struct flusher_stats *st)
{
	pthread_mutex_lock(&f->lock);
	*st = f->stats;
	pthread_mutex_unlock(&f->lock);
}
