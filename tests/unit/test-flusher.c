/* Unit test for target/flusher.c (group commit) against a temp file:
 * N threads each pwrite a block and wait for durability, many times.
 * Every wait must complete with success, and fewer fdatasync calls than
 * waits must have covered them all (batches form under concurrency).
 * No RDMA needed.  Prints one line per check; exits 0 or 1. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../target/flusher.h"
#include "../../target/log.h"
#include "../../target/workq.h"

#define NTHREADS 8
#define ROUNDS   50

static struct flusher *fl;
static int fd;
static int failures;

struct waiter {
	struct job job;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
};

static void
waiter_done(struct job *j)
{
	struct waiter *w = j->owner;

	pthread_mutex_lock(&w->lock);
	w->done = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void *
writer(void *arg)
{
	long id = (long)arg;
	char block[4096];
	struct waiter w;
	int i;

	memset(&w, 0, sizeof(w));
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	for (i = 0; i < ROUNDS; i++) {
		memset(block, (int)(id * ROUNDS + i), sizeof(block));
		if (pwrite(fd, block, sizeof(block), (off_t)(id * sizeof(block))) !=
		    (ssize_t)sizeof(block))
			return (void *)1;
		/* The write returned: now wait until it is durable. */
		memset(&w.job, 0, sizeof(w.job));
		w.job.op = JOB_SYNC;
		w.job.fd = fd;
		w.job.done = waiter_done;
		w.job.owner = &w;
		w.job.result = 1;
		w.done = 0;
		flusher_submit(fl, &w.job);
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		if (w.job.result != 0)
			return (void *)1;
	}
	return NULL;
}

static void
check(int cond, const char *what)
{
	printf("%s: %s\n", cond ? "ok" : "FAIL", what);
	if (!cond)
		failures++;
}

int
main(void)
{
	char path[] = "/tmp/rdmablk-test-flusher.XXXXXX";
	pthread_t th[NTHREADS];
	struct flusher_stats st;
	int bad = 0;
	long i;
	void *ret;

	log_init(1, LOG_LEVEL_WARN);
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	fl = flusher_create(fd, "test");
	check(fl != NULL, "flusher created");
	if (fl == NULL)
		return 1;
	for (i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, writer, (void *)i);
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], &ret);
		bad += ret != NULL;
	}
	check(bad == 0, "every write was acknowledged durable with success");
	flusher_get_stats(fl, &st);
	printf("   %llu waits, %llu fdatasync calls, largest batch %llu\n",
	       (unsigned long long)st.jobs, (unsigned long long)st.syncs,
	       (unsigned long long)st.max_batch);
	check(st.jobs == NTHREADS * ROUNDS, "every wait counted");
	check(st.syncs < st.jobs, "group commit: fewer fdatasync calls than waits");
	check(st.max_batch > 1, "some fdatasync covered more than one write");
	check(st.errors == 0, "no fdatasync errors");

	/* A sync submitted to an idle flusher completes on its own. */
	{
		struct waiter w;

		memset(&w, 0, sizeof(w));
		pthread_mutex_init(&w.lock, NULL);
		pthread_cond_init(&w.cond, NULL);
		w.job.op = JOB_SYNC;
		w.job.fd = fd;
		w.job.done = waiter_done;
		w.job.owner = &w;
		w.job.result = 1;
		flusher_submit(fl, &w.job);
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		check(w.job.result == 0, "a lone FLUSH completes");
	}
	/* A durable write through a worker: pwrite, then straight on to the
	 * flusher, back once with synced set; a failed write skips the sync. */
	{
		struct workq *wq = workq_create(1);
		struct flusher_stats before, after;
		static char data[4096];
		struct waiter w;
		int k;

		check(wq != NULL, "workq created");
		memset(data, 0x3c, sizeof(data));
		for (k = 0; k < 2 && wq != NULL; k++) {
			flusher_get_stats(fl, &before);
			memset(&w, 0, sizeof(w));
			pthread_mutex_init(&w.lock, NULL);
			pthread_cond_init(&w.cond, NULL);
			w.job.op = JOB_WRITE;
			w.job.fd = k == 0 ? fd : -1;     /* the second one fails: EBADF */
			w.job.src = data;
			w.job.off = 0;
			w.job.len = sizeof(data);
			w.job.sync_after = fl;
			w.job.done = waiter_done;
			w.job.owner = &w;
			workq_submit(wq, &w.job);
			pthread_mutex_lock(&w.lock);
			while (!w.done)
				pthread_cond_wait(&w.cond, &w.lock);
			pthread_mutex_unlock(&w.lock);
			flusher_get_stats(fl, &after);
			if (k == 0)
				check(w.job.result == 0 && w.job.synced &&
				      after.jobs == before.jobs + 1,
				      "a durable write comes back synced, through the flusher");
			else
				check(w.job.result == -EBADF && !w.job.synced &&
				      after.jobs == before.jobs,
				      "a failed write comes back unsynced, without a flush");
		}
		if (wq != NULL)
			workq_destroy(wq);
	}
	flusher_destroy(fl);

	/* The event loop's page-cache fast path for READs. */
	{
		static char out[8192], in[8192];
		struct job j;
		int hit;

		memset(out, 0x5a, sizeof(out));
		check(pwrite(fd, out, sizeof(out), 1 << 20) == (ssize_t)sizeof(out),
		      "pwrite for the fast path");
		memset(&j, 0, sizeof(j));
		j.op = JOB_READ;
		j.fd = fd;
		j.buf = in;
		j.off = 1 << 20;
		j.len = sizeof(in);
		j.result = 1;
		hit = job_try_now(&j);
		if (hit < 0) {
			/* This filesystem lacks RWF_NOWAIT (e.g. tmpfs before 6.6). */
			check(errno == EOPNOTSUPP, "RWF_NOWAIT unsupported here: said so (-1)");
		} else {
			check(hit == 1 && j.result == 0 && memcmp(in, out, sizeof(in)) == 0,
			      "a cached READ is done at once");
			j.off = (1 << 20) + 4096;    /* runs past EOF: the worker zero-fills */
			check(job_try_now(&j) == 0, "a READ past EOF goes to a worker");
		}
		j.op = JOB_WRITE;
		j.off = 0;
		check(job_try_now(&j) == 0, "a WRITE always goes to a worker");
	}
	close(fd);
	printf("%s\n", failures ? "test-flusher: FAILED" : "test-flusher: all checks passed");
	return failures ? 1 : 0;
}
