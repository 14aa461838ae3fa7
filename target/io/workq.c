/* Worker threads for backing-store I/O and the completion queue back to the
 * event loop (target/io/workq.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "workq.h"

/* ---- worker threads ---- */

struct workq {
	pthread_mutex_t lock;
	pthread_cond_t  cond;
	struct job_list jobs;
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
		while (STAILQ_EMPTY(&wq->jobs) && !wq->stopping)
			pthread_cond_wait(&wq->cond, &wq->lock);
		j = STAILQ_FIRST(&wq->jobs);
		if (j == NULL)
			break;
		STAILQ_REMOVE_HEAD(&wq->jobs, link);
		pthread_mutex_unlock(&wq->lock);
		/* Not after its initiator gave up on it (workq.h). */
		if (job_may_start(j, 0))
			job_execute(j);
		else
			j->result = -ECANCELED;
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
	STAILQ_INIT(&wq->jobs);
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
	pthread_mutex_lock(&wq->lock);
	STAILQ_INSERT_TAIL(&wq->jobs, j, link);
	pthread_cond_signal(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
}

/* ---- completion queue ---- */

struct compq {
	pthread_mutex_t lock;
	struct job_list done;
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
	STAILQ_INIT(&cq->done);
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

	/* The eventfd counter is non-zero exactly while jobs wait: both
	 * change under the lock, so compq_take reads the counter only when
	 * there is something to take, and never finds it empty. */
	pthread_mutex_lock(&cq->lock);
	was_empty = STAILQ_EMPTY(&cq->done);
	STAILQ_INSERT_TAIL(&cq->done, j, link);
	if (was_empty && write(cq->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("compq: eventfd write");
	pthread_mutex_unlock(&cq->lock);
}

void
compq_take(struct compq *cq, struct job_list *out)
{
	uint64_t v;

	STAILQ_INIT(out);
	pthread_mutex_lock(&cq->lock);
	/* The loop calls this for the ring's wake-ups too: no read then. */
	if (!STAILQ_EMPTY(&cq->done) && read(cq->efd, &v, sizeof(v)) < 0 &&
	    errno != EAGAIN)
		log_warn("compq: eventfd read");
	STAILQ_CONCAT(out, &cq->done);
	pthread_mutex_unlock(&cq->lock);
}
