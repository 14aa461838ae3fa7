/* Unit test for target/io/flusher.c (group commit on the event loop) and
 * target/io/ioq.c (backing I/O on io_uring, or worker threads) against a temp
 * file, driven the way the daemon's event loop drives them: one thread
 * submits, flushes, waits on the ioq's fds and reaps.  Each check runs with
 * both engines.  No RDMA needed.  Prints one line per check; exits 0 or 1. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../target/io/flusher.h"
#include "../../target/io/ioq.h"
#include "../../target/log.h"
#include "../../target/io/workq.h"
#include "check.h"

#define NWRITES 32
#define BLOCK   4096

struct w {
	struct job job;
	struct flusher *fl;
	int wrote;                 /* write completed (result in write_result) */
	int write_result;
	uint64_t syncs_at_write;   /* the flusher's completed syncs then */
	int synced;                /* durability completed */
	uint64_t syncs_at_sync;
	char data[BLOCK];
};

static void
w_synced(struct job *j)
{
	struct w *w = j->owner;
	struct flusher_stats st;

	flusher_get_stats(w->fl, &st);
	w->synced = 1;
	w->syncs_at_sync = st.syncs;
}

static void
w_written(struct job *j)
{
	struct w *w = j->owner;
	struct flusher_stats st;

	w->wrote = 1;
	w->write_result = j->result;
	if (j->result != 0 || w->fl == NULL)
		return;
	flusher_get_stats(w->fl, &st);
	w->syncs_at_write = st.syncs;
	j->done = w_synced;
	flusher_submit(w->fl, j);
}

static void
plain_done(struct job *j)
{
	(*(int *)j->owner)++;
}

/* Event-loop rounds until nothing is in flight: submit (the flushers'
 * deferred batches first), wait for a completion, reap. */
static void
drain(struct ioq *q)
{
	struct pollfd p[2];
	int n, i;

	for (i = 0; i < 1000; i++) {
		ioq_flush(q);
		if (ioq_inflight(q) == 0)
			return;
		n = 0;
			if (ioq_fd(q) >= 0) {
			p[n].fd = ioq_fd(q);
			p[n++].events = POLLIN;
		}
		p[n].fd = ioq_worker_fd(q);
		p[n++].events = POLLIN;
		poll(p, (nfds_t)n, 100);
		/* The daemon watches the ring's eventfd edge-triggered and
		 * never reads it; with poll(), clear it. */
		if (ioq_fd(q) >= 0 && (p[0].revents & POLLIN)) {
			uint64_t v;

			if (read(ioq_fd(q), &v, sizeof(v)) < 0 && errno != EAGAIN)
				check(0, "read the ring's eventfd");
		}
		ioq_reap(q);
	}
	check(0, "drained within 1000 rounds");
}

static void
test_engine(enum ioq_engine want, int fd)
{
	static struct w ws[NWRITES];
	struct flusher_stats st;
	struct ioq_stats qs;
	struct flusher *fl;
	struct ioq *q;
	char what[160], got[BLOCK];
	const char *name = ioq_engine_name(want);
	int i, ok, order_ok, done;

	q = ioq_create(want, 8, 2);
	snprintf(what, sizeof(what), "[%s] ioq created", name);
	check(q != NULL, what);
	if (q == NULL)
		return;
	if (want == IOQ_IO_URING && ioq_engine(q) != IOQ_IO_URING) {
		printf("   io_uring unavailable here: the fallback engine runs the checks\n");
		name = "threads (fallback)";
	}
	fl = flusher_create(fd, "test", q);
	snprintf(what, sizeof(what), "[%s] flusher created", name);
	check(fl != NULL, what);
	if (fl == NULL) {
		ioq_destroy(q);
		return;
	}

	/* NWRITES durable writes in one round (more than the 8-entry SQ). */
	memset(ws, 0, sizeof(ws));
	for (i = 0; i < NWRITES; i++) {
		memset(ws[i].data, 'a' + i % 26, BLOCK);
		ws[i].fl = fl;
		ws[i].job.op = JOB_WRITE;
		ws[i].job.fd = fd;
		ws[i].job.src = ws[i].data;
		ws[i].job.off = (uint64_t)i * BLOCK;
		ws[i].job.len = BLOCK;
		ws[i].job.done = w_written;
		ws[i].job.owner = &ws[i];
		ioq_submit(q, &ws[i].job);
	}
	drain(q);
	ok = 1;
	order_ok = 1;
	for (i = 0; i < NWRITES; i++) {
		ok &= ws[i].wrote && ws[i].write_result == 0 && ws[i].synced &&
		      ws[i].job.result == 0;
		/* Its sync completed after its write did, and was not one
		 * that had already completed then. */
		order_ok &= ws[i].syncs_at_sync > ws[i].syncs_at_write;
		ok &= pread(fd, got, BLOCK, (off_t)i * BLOCK) == BLOCK &&
		      memcmp(got, ws[i].data, BLOCK) == 0;
	}
	snprintf(what, sizeof(what), "[%s] every write written, then durable with success", name);
	check(ok, what);
	snprintf(what, sizeof(what), "[%s] every write's fdatasync completed after its write", name);
	check(order_ok, what);
	flusher_get_stats(fl, &st);
	printf("   [%s] %llu waits, %llu fdatasync calls, largest batch %llu\n", name,
	       (unsigned long long)st.jobs, (unsigned long long)st.syncs,
	       (unsigned long long)st.max_batch);
	snprintf(what, sizeof(what), "[%s] group commit: fewer fdatasync calls than writes", name);
	check(st.jobs == NWRITES && st.syncs < st.jobs && st.max_batch > 1, what);
	check(!flusher_busy(fl), "flusher idle after the batch");

	/* A lone FLUSH (a sync with no write before it) completes. */
	{
		struct w f;

		memset(&f, 0, sizeof(f));
		f.fl = fl;
		f.job.op = JOB_SYNC;
		f.job.fd = fd;
		f.job.done = w_synced;
		f.job.owner = &f;
		f.job.result = 1;
		flusher_submit(fl, &f.job);
		drain(q);
		snprintf(what, sizeof(what), "[%s] a lone FLUSH completes", name);
		check(f.synced && f.job.result == 0, what);
	}

	/* A failed write comes back with its error and is never synced. */
	{
		struct w bad;

		flusher_get_stats(fl, &st);
		memset(&bad, 0, sizeof(bad));
		bad.fl = fl;
		bad.job.op = JOB_WRITE;
		bad.job.fd = -1;
		bad.job.src = bad.data;
		bad.job.len = BLOCK;
		bad.job.done = w_written;
		bad.job.owner = &bad;
		ioq_submit(q, &bad.job);
		drain(q);
		{
			struct flusher_stats after;

			flusher_get_stats(fl, &after);
			snprintf(what, sizeof(what),
				 "[%s] a failed write: EBADF, no fdatasync for it", name);
			check(bad.wrote && bad.write_result == -EBADF && !bad.synced &&
			      after.jobs == st.jobs, what);
		}
	}

	/* A READ that runs past EOF: the data, then zeros. */
	{
		static char buf[2 * BLOCK];
		struct job j;
		int n = 0;
		off_t end = lseek(fd, 0, SEEK_END);

		memset(buf, 0x77, sizeof(buf));
		memset(&j, 0, sizeof(j));
		j.op = JOB_READ;
		j.fd = fd;
		j.buf = buf;
		j.off = (uint64_t)end - BLOCK;
		j.len = sizeof(buf);
		j.done = plain_done;
		j.owner = &n;
		ioq_submit(q, &j);
		drain(q);
		ok = n == 1 && j.result == 0 && pread(fd, got, BLOCK, end - BLOCK) == BLOCK &&
		     memcmp(buf, got, BLOCK) == 0;
		for (i = BLOCK; i < 2 * BLOCK; i++)
			ok &= buf[i] == 0;
		snprintf(what, sizeof(what), "[%s] a READ past EOF: data, then zeros", name);
		check(ok, what);
	}

	/* ZERO and TRIM of a regular file (fallocate; a worker writes zeros
	 * where the file system has no ZERO_RANGE). */
	{
		struct job j;

		memset(&j, 0, sizeof(j));
		j.op = JOB_ZERO;
		j.fd = fd;
		j.off = BLOCK;
		j.len = 2 * BLOCK;
		j.done = plain_done;
		j.owner = &done;
		done = 0;
		ioq_submit(q, &j);
		drain(q);
		ok = done == 1 && j.result == 0 && pread(fd, got, BLOCK, 2 * BLOCK) == BLOCK;
		for (i = 0; i < BLOCK; i++)
			ok &= got[i] == 0;
		snprintf(what, sizeof(what), "[%s] ZERO zeroes the range", name);
		check(ok, what);
		j.op = JOB_TRIM;
		j.done = plain_done;
		ioq_submit(q, &j);
		drain(q);
		snprintf(what, sizeof(what), "[%s] TRIM succeeds", name);
		check(done == 2 && j.result == 0, what);
	}

	ioq_get_stats(q, &qs);
	printf("   [%s] %llu jobs on io_uring, %llu on workers, %llu submit calls\n", name,
	       (unsigned long long)qs.uring_jobs, (unsigned long long)qs.worker_jobs,
	       (unsigned long long)qs.submit_calls);
	if (ioq_engine(q) == IOQ_IO_URING) {
		check(qs.uring_jobs >= NWRITES && qs.submit_calls < qs.uring_jobs,
		      "[io_uring] the writes and syncs ran on the ring, batched per submit");
	} else {
		snprintf(what, sizeof(what), "[%s] every job ran on a worker", name);
		check(qs.uring_jobs == 0 && qs.worker_jobs >= NWRITES, what);
	}
	check(ioq_inflight(q) == 0, "nothing left in flight");
	flusher_destroy(fl);
	ioq_destroy(q);
}

/* fdatasync fails (a pipe has none): every waiter of the batch gets the
 * error, and it is counted. */
static void
test_sync_error(enum ioq_engine want)
{
	struct flusher_stats st;
	struct flusher *fl;
	struct ioq *q;
	struct w a, b;
	char what[120];
	int p[2];

	if (pipe(p) < 0) {
		check(0, "pipe");
		return;
	}
	q = ioq_create(want, 8, 1);
	fl = q != NULL ? flusher_create(p[1], "pipe", q) : NULL;
	if (fl == NULL) {
		check(0, "ioq and flusher for the pipe");
		ioq_destroy(q);
		return;
	}
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.fl = b.fl = fl;
	a.job.op = b.job.op = JOB_SYNC;
	a.job.done = b.job.done = w_synced;
	a.job.owner = &a;
	b.job.owner = &b;
	flusher_submit(fl, &a.job);
	flusher_submit(fl, &b.job);
	drain(q);
	flusher_get_stats(fl, &st);
	snprintf(what, sizeof(what), "[%s] a failed fdatasync fails its whole batch, counted",
		 ioq_engine_name(ioq_engine(q)));
	check(a.synced && b.synced && a.job.result == -EINVAL && b.job.result == -EINVAL &&
	      st.syncs == 1 && st.errors == 1, what);
	check(flusher_failed(fl) == -EINVAL && strstr(flusher_failure(fl), "fdatasync") != NULL,
	      "the failed fdatasync failed the export");
	flusher_reopened(fl, "unit test");
	check(flusher_failed(fl) == 0 && flusher_failure(fl)[0] == '\0',
	      "flusher_reopened (an RBD export's reopen) clears the failed state");
	flusher_destroy(fl);
	ioq_destroy(q);
	close(p[0]);
	close(p[1]);
}

/* The worker engine's page-cache fast path for READs (RWF_NOWAIT). */
static void
test_try_now(int fd)
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

int
main(void)
{
	char path[] = "/tmp/rdmablk-test-flusher.XXXXXX";
	int fd;

	log_init(1, LOG_LEVEL_WARN);
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	if (ftruncate(fd, 64 * BLOCK) < 0) {
		perror("ftruncate");
		return 1;
	}
	test_engine(IOQ_IO_URING, fd);
	test_engine(IOQ_THREADS, fd);
	test_sync_error(IOQ_IO_URING);
	test_sync_error(IOQ_THREADS);
	test_try_now(fd);
	close(fd);
	printf("%s\n", failures ? "test-flusher: FAILED" : "test-flusher: all checks passed");
	return failures ? 1 : 0;
}
