/* The event loops: their resources, threads and the locks between them
 * (loop.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"

/* The ring is sized for one loop's connections' backing I/O. */
#define LOOP_RING_ENTRIES 256

static int
loop_watch(struct loop *l, int fd, uint32_t events, struct ep_handler *eh, ep_handler_fn *fn,
	   const char *what)
{
	if (ep_watch(l->epfd, fd, events, eh, fn, l) < 0) {
		log_warn("loop %u: epoll_ctl (%s)", l->idx, what);
		return -1;
	}
	return 0;
}

static void
loop_wake_event(struct ep_handler *eh, uint32_t events)
{
	struct loop *l = eh->obj;
	uint64_t n;

	(void)events;
	if (read(l->wakefd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("loop %u: wake eventfd", l->idx);
}

static void
loop_ioq_event(struct ep_handler *eh, uint32_t events)
{
	struct loop *l = eh->obj;

	(void)events;
	ioq_reap(l->ioq);
}

static int
loop_create_wake(struct loop *l)
{
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->wakefd < 0) {
		log_warn("loop %u: eventfd", l->idx);
		return -1;
	}
	return loop_watch(l, l->wakefd, EPOLLIN, &l->wake_eh, loop_wake_event, "wake eventfd");
}

/* Loops other than 0: the CM channel its connections migrate to (the
 * listener watches it, listener_start). */
static int
loop_create_peer(struct loop *l)
{
	char who[16];

	snprintf(who, sizeof(who), "loop %u", l->idx);
	l->cm_channel = cm_channel_create(l->t, who);
	return l->cm_channel == NULL ? -1 : 0;
}

static void
loop_destroy(struct loop *l)
{
	if (l == NULL)
		return;
	if (!LIST_EMPTY(&l->conns))
		log_warnx("loop %u: connections left at exit", l->idx);
	if (l->cm_channel != NULL)
		rdma_destroy_event_channel(l->cm_channel);
	if (l->wakefd >= 0)
		close(l->wakefd);
	ioq_destroy(l->ioq);
	if (l->epfd >= 0)
		close(l->epfd);
	pthread_cond_destroy(&l->resume);
	pthread_mutex_destroy(&l->park_mu);
	pthread_mutex_destroy(&l->run_lock);
	free(l);
}

static struct loop *
loop_create(struct target *t, unsigned idx)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (l == NULL) {
		log_warnx("loop %u: out of memory", idx);
		return NULL;
	}
	l->t = t;
	l->idx = idx;
	l->wakefd = -1;
	LIST_INIT(&l->conns);
	pthread_mutex_init(&l->run_lock, NULL);
	pthread_mutex_init(&l->park_mu, NULL);
	pthread_cond_init(&l->resume, NULL);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		log_warn("loop %u: epoll_create1", idx);
		goto out_destroy;
	}
	l->ioq = ioq_create(t->cfg->io_engine, LOOP_RING_ENTRIES, t->cfg->io_threads);
	if (l->ioq == NULL)
		goto out_destroy;
	if (loop_watch(l, ioq_worker_fd(l->ioq), EPOLLIN, &l->ioq_eh, loop_ioq_event,
		       "worker completion eventfd") < 0)
		goto out_destroy;
	/* Edge-triggered: the ring's CQ is drained on every event and at the
	 * end of every round, so the eventfd itself is never read. */
	if (ioq_fd(l->ioq) >= 0 &&
	    loop_watch(l, ioq_fd(l->ioq), EPOLLIN | EPOLLET, &l->ioq_eh, loop_ioq_event,
		       "io_uring eventfd") < 0)
		goto out_destroy;
	if (loop_create_wake(l) < 0 || (idx > 0 && loop_create_peer(l) < 0))
		goto out_destroy;
	return l;

out_destroy:
	loop_destroy(l);
	return NULL;
}

int
loops_create(struct target *t, unsigned n)
{
	unsigned i;

	t->loops = calloc(n, sizeof(*t->loops));
	if (t->loops == NULL) {
		log_warnx("loops: out of memory");
		return -1;
	}
	pthread_mutex_init(&t->lock, NULL);
	for (i = 0; i < n; i++) {
		t->loops[i] = loop_create(t, i);
		if (t->loops[i] == NULL)
			return -1;      /* loops_destroy frees the others */
		t->nloops = i + 1;
	}
	t->epfd = t->loops[0]->epfd;
	if (n > 1)
		log_info("%u event loops (threads = %u)", n, n);
	return 0;
}

static void *
loop_thread(void *arg)
{
	struct loop *l = arg;

	loop_run(l);
	return NULL;
}

int
loops_start(struct target *t)
{
	unsigned i;
	int r;

	for (i = 1; i < t->nloops; i++) {
		r = pthread_create(&t->loops[i]->thread, NULL, loop_thread, t->loops[i]);
		if (r != 0) {
			log_warnx("loop %u: pthread_create: %s", i, strerror(r));
			return -1;
		}
		t->loops[i]->started = 1;
	}
	return 0;
}

void
loops_join(struct target *t)
{
	unsigned i;

	for (i = 1; i < t->nloops; i++)
		if (t->loops[i]->started) {
			loop_wake(t->loops[i]);
			pthread_join(t->loops[i]->thread, NULL);
			t->loops[i]->started = 0;
		}
}

void
loops_destroy(struct target *t)
{
	unsigned i;

	if (t->loops == NULL)
		return;
	loops_join(t);
	for (i = 0; i < t->nloops; i++)
		loop_destroy(t->loops[i]);
	free(t->loops);
	t->loops = NULL;
	t->nloops = 0;
	t->epfd = -1;
	pthread_mutex_destroy(&t->lock);
}

static void
loop_set_stop(struct loop *l, int stop)
{
	pthread_mutex_lock(&l->park_mu);
	l->stop_req = stop;
	if (!stop)
		pthread_cond_broadcast(&l->resume);
	pthread_mutex_unlock(&l->park_mu);
}

void
loops_stop_world(struct target *t)
{
	unsigned i;

	/* Ask first, so that each loop parks at the end of its round
	 * instead of taking its run_lock straight back. */
	for (i = 1; i < t->nloops; i++)
		loop_set_stop(t->loops[i], 1);
	for (i = 1; i < t->nloops; i++)
		pthread_mutex_lock(&t->loops[i]->run_lock);
}

void
loops_start_world(struct target *t)
{
	unsigned i;

	for (i = 1; i < t->nloops; i++) {
		pthread_mutex_unlock(&t->loops[i]->run_lock);
		loop_set_stop(t->loops[i], 0);
		loop_wake(t->loops[i]);
	}
}

void
loops_abort(struct target *t)
{
	if (t->shutting_down)
		return;
	loops_stop_world(t);
	t->shutting_down = 1;
	t->shutdown_ns = 0;     /* past the drain bound: fail at the next tick */
	loops_start_world(t);
}

struct loop *
loops_pick(struct target *t)
{
	struct loop *best = t->loops[0];
	unsigned i;

	for (i = 1; i < t->nloops; i++)
		if (t->loops[i]->nconns < best->nconns)
			best = t->loops[i];
	return best;
}

void
loop_wake(struct loop *l)
{
	uint64_t one = 1;

	if (write(l->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("loop %u: wake", l->idx);
}

void
target_lock(struct target *t)
{
	if (t->nloops > 1)
		pthread_mutex_lock(&t->lock);
}

void
target_unlock(struct target *t)
{
	if (t->nloops > 1)
		pthread_mutex_unlock(&t->lock);
}

void
loops_ioq_stats(struct target *t, struct ioq_stats *st, unsigned *inflight, unsigned *peak)
{
	struct ioq_stats one;
	unsigned i;

	memset(st, 0, sizeof(*st));
	*inflight = *peak = 0;
	for (i = 0; i < t->nloops; i++) {
		ioq_get_stats(t->loops[i]->ioq, &one);
		st->uring_jobs += one.uring_jobs;
		st->uring_resubmits += one.uring_resubmits;
		st->worker_jobs += one.worker_jobs;
		st->submit_calls += one.submit_calls;
		*inflight += ioq_inflight(t->loops[i]->ioq);
		if (t->loops[i]->slow_jobs_peak > *peak)
			*peak = t->loops[i]->slow_jobs_peak;
	}
}
