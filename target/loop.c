/* One event loop (loops.h): one thread, one epoll set for its CM channel,
 * every connection's completion channel, its io_uring's eventfd (and its
 * worker threads' completion eventfd) and its wake eventfd; loop 0 also
 * has the signalfd and the admin socket.  The thread that receives a
 * request also submits its backing I/O and reaps its completion (ioq.h).
 * After each round, waiting requests are resumed, the round's backing I/O
 * is submitted in one call, and finished connections are freed (never in
 * the middle of a round: the round's other events may still point at
 * them). */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <stdint.h>

#include "admin.h"
#include "conn.h"
#include "log.h"
#include "loops.h"
#include "memlock.h"
#include "metrics.h"
#include "rbd.h"
#include "reqserv.h"
#include "request.h"
#include "target.h"

#define LOOP_TICK_MS 1000
/* SIGTERM lets connections finish what they received for this long, then
 * fails those still open; a connection in error is freed once its WRs
 * flushed (conn.c gives up on them after 30 s more) and its backing I/O
 * returned.  So SIGTERM completes in bounded time even when a peer takes
 * none of its replies. */
#define LOOP_DRAIN_S 20

int
ep_watch(int epfd, int fd, uint32_t events, struct ep_handler *eh, enum ep_type type, void *obj)
{
	struct epoll_event ev;

	eh->type = type;
	eh->obj = obj;
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = eh;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void
loop_reload(struct target *t)
{
	struct config *nc, *old;
	unsigned nerrors = 0;

	log_info("SIGHUP: reloading %s", t->config_file);
	nc = config_load(t->config_file, 0, NULL, NULL, &nerrors);
	if (nc == NULL) {
		log_warnx("reload: %u error%s in %s; keeping the running configuration",
			  nerrors, nerrors == 1 ? "" : "s", t->config_file);
		stats_count(t, &t->stats.reloads[STATS_RELOAD_REJECTED]);
		return;
	}
	/* Restart-only keys keep their running values (each refused by name);
	 * then the new config replaces the running one, here and only here. */
	config_keep_restart_only(t->cfg, nc, NULL, NULL);
	if (config_reload_conflicts(nc, NULL, NULL) > 0) {
		log_warnx("reload: %s cannot run with what needs a restart; keeping the "
			  "running configuration", t->config_file);
		config_free(nc);
		stats_count(t, &t->stats.reloads[STATS_RELOAD_REJECTED]);
		return;
	}
	if (log_get_level() < LOG_LEVEL_DEBUG)
		log_set_level(nc->log_level);
	config_warn(nc, NULL, NULL);
	exports_apply(t, nc);
	old = t->cfg;
	t->cfg = nc;
	memlock_check(t->cfg);
	config_free(old);
	stats_count(t, &t->stats.reloads[STATS_RELOAD_APPLIED]);
}

static void
loop_shutdown(struct target *t, int signo)
{
	struct conn *c;
	unsigned li;

	if (t->shutting_down)
		return;
	log_info("%s: stopping: finishing in-flight requests (at most %u s)", strsignal(signo),
		 LOOP_DRAIN_S);
	t->shutting_down = 1;
	t->shutdown_ns = rb_now_ns();
	FOR_EACH_CONN(t, li, c)
		conn_drain(c);
}

static void
loop_signal(struct target *t)
{
	struct signalfd_siginfo si;

	while (read(t->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			loops_stop_world(t);
			loop_reload(t);
			loops_start_world(t);
			break;
		case SIGTERM:
		case SIGINT:
			loops_stop_world(t);
			loop_shutdown(t, (int)si.ssi_signo);
			loops_start_world(t);
			break;
		default:
			break;
		}
	}
}

/* Returns 1 when this round freed room that a waiter has not seen yet
 * (a buffer of one connection's request, freed after pool_service ran, or
 * send-queue room freed after conn_resume ran): run another round at once
 * instead of sleeping until the next event. */
static int
loop_after_round(struct loop *l)
{
	struct target *t = l->t;
	int again = 0;
	struct device *d;
	struct conn *c, *next;
	uint64_t now = rb_now_ns();

	for (d = t->devices; d != NULL; d = d->next)
		pool_service(d->pools[l->idx]);
	/* Deadlines have one-second granularity: not on every round. */
	if (now >= l->next_watch_ns) {
		l->next_watch_ns = now + (uint64_t)LOOP_TICK_MS * 1000000u;
		LIST_FOREACH(c, &l->conns, link)
			if (c->state != CONN_ERROR)
				conn_watch(c, now);
		if (t->shutting_down && now - t->shutdown_ns >= LOOP_DRAIN_S * 1000000000ull)
			LIST_FOREACH(c, &l->conns, link)
				conn_fail(c, "not drained within the shutdown bound");
	}
	for (c = LIST_FIRST(&l->conns); c != NULL; c = next) {
		next = LIST_NEXT(c, link);     /* c may be freed */
		conn_after_round(c);
	}
	/* After all of them: a request of one connection may now wait for a
	 * buffer that another connection's SEND completion frees. */
	LIST_FOREACH(c, &l->conns, link)
		if (c->state != CONN_ERROR && conn_send_arm(c))
			again = 1;
	for (d = t->devices; d != NULL; d = d->next)
		if (pool_has_waiters(d->pools[l->idx]) && pool_nfree(d->pools[l->idx]) > 0)
			again = 1;
	return again;
}

static void
loop_wake_read(struct loop *l)
{
	uint64_t n;

	if (read(l->wakefd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("loop %u: wake eventfd", l->idx);
}

static void
loop_dispatch(struct loop *l, struct epoll_event *ev)
{
	struct target *t = l->t;
	struct ep_handler *eh = ev->data.ptr;

	switch (eh->type) {
	case EP_CM:
		listener_handle_events(t, l->idx == 0 ? t->cm_channel : l->cm_channel);
		break;
	case EP_COMP:
		conn_handle_cq_event(eh->obj);
		break;
	case EP_IOQ:
		ioq_reap(l->ioq);
		break;
	case EP_WAKE:
		loop_wake_read(l);
		break;
	case EP_SIGNAL:
		loop_signal(t);
		break;
	case EP_RBD:
		rbd_backing_reap(eh->obj);
		break;
	case EP_REQSERV:
	case EP_REQSERV_CLIENT:
		reqserv_handle(t, eh, ev->events);
		break;
	}
}

/* A loop other than 0 runs its rounds holding its run_lock, and drops it
 * only while it sleeps: loop 0 stops it there (loops.h). */
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
		for (i = 0; i < n; i++)
			loop_dispatch(l, &evs[i]);
		/* Submit the round's backing I/O (one syscall) and finish
		 * what the page cache served at once; resume waiters and post
		 * each connection's WRs as one chain; again while that queued
		 * more backing I/O (a few times at most: a submit the kernel
		 * keeps refusing is retried next round). */
		for (pass = 0; pass < 4; pass++) {
			ioq_flush(l->ioq);
			again = loop_after_round(l);
			if (!ioq_pending(l->ioq))
				break;
		}
		/* Backing I/O still unsubmitted after the last pass goes out
		 * on the next round, not after a second's sleep. */
		if (ioq_pending(l->ioq))
			again = 1;
		if (l->idx == 0) {
			exports_reap_pending(t);
			exports_tick(t);
			admin_expire(t);
			metrics_expire(t);
		}
	}
	if (locked)
		pthread_mutex_unlock(&l->run_lock);
	return 0;
}
