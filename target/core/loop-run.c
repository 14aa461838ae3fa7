/* One event loop's rounds (loop.h): wait on the loop's epoll set, hand
 * each event to its handler (struct ep_handler), then let the daemon do
 * its work after the round (struct loop_hooks): the round's backing I/O
 * is submitted in one call, waiting requests are resumed, and finished
 * connections are freed (never in the middle of a round: the round's
 * other events may still point at them).  The loop knows its fds only as
 * handlers: what they are is their owners' business. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <stdint.h>

#include "log.h"
#include "loop.h"
#include "target.h"

/* With nothing to do, a loop wakes once a second all the same: deadlines
 * and loop 0's tick run from the round's end. */
#define LOOP_TICK_MS 1000

int
ep_watch(int epfd, int fd, uint32_t events, struct ep_handler *eh, ep_handler_fn *fn, void *obj)
{
	struct epoll_event ev;

	eh->fn = fn;
	eh->obj = obj;
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = eh;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* A loop other than 0, back from epoll_wait: retake its run_lock once
 * loop 0 does not stop the world (loops_stop_world). */
static void
loop_relock(struct loop *l)
{
	pthread_mutex_lock(&l->park_mu);
	while (l->stop_req)
		pthread_cond_wait(&l->resume, &l->park_mu);
	pthread_mutex_unlock(&l->park_mu);
	pthread_mutex_lock(&l->run_lock);
}

/* A loop other than 0 runs its rounds holding its run_lock, and drops it
 * only while it sleeps: loop 0 stops it there (loop.h). */
int
loop_run(struct loop *l)
{
	struct target *t = l->t;
	struct epoll_event evs[32];
	int i, n, pass, again = 0, locked = l->idx > 0;

	if (locked)
		pthread_mutex_lock(&l->run_lock);
	while (!(t->shutting_down && LIST_EMPTY(&l->conns))) {
		if (locked)
			pthread_mutex_unlock(&l->run_lock);
		n = epoll_wait(l->epfd, evs, 32, again ? 0 : LOOP_TICK_MS);
		if (locked)
			loop_relock(l);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_warn("loop %u: epoll_wait", l->idx);
			if (locked)
				pthread_mutex_unlock(&l->run_lock);
			return -1;
		}
		for (i = 0; i < n; i++) {
			struct ep_handler *eh = evs[i].data.ptr;

			eh->fn(eh, evs[i].events);
		}
		/* Submit the round's backing I/O (one syscall) and finish
		 * what the page cache served at once; resume waiters and post
		 * each connection's WRs as one chain; again while that queued
		 * more backing I/O (a few times at most: a submit the kernel
		 * keeps refusing is retried next round). */
		for (pass = 0; pass < 4; pass++) {
			ioq_flush(l->ioq);
			again = t->hooks->after_round(l);
			if (!ioq_pending(l->ioq))
				break;
		}
		/* Backing I/O still unsubmitted after the last pass goes out
		 * on the next round, not after a second's sleep. */
		if (ioq_pending(l->ioq))
			again = 1;
		if (l->idx == 0)
			t->hooks->tick(t);
	}
	if (locked)
		pthread_mutex_unlock(&l->run_lock);
	return 0;
}
