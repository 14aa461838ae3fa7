/* The event loop: one thread, one epoll set for the CM channel, every
 * connection's completion channel, the io_uring's eventfd (and the worker
 * threads' completion eventfd) and a signalfd.  The thread that receives a
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

#include "admin.h"
#include "conn.h"
#include "log.h"
#include "memlock.h"
#include "rbd.h"
#include "request.h"
#include "target.h"

#define LOOP_TICK_MS 1000
/* SIGTERM lets connections finish what they received for this long, then
 * fails those still open; a connection in error is freed once its WRs
 * flushed (conn.c gives up on them after 30 s more) and its backing I/O
 * returned.  So SIGTERM completes in bounded time even when a peer takes
 * none of its replies. */
#define LOOP_DRAIN_S 20

static void
loop_reload(struct target *t)
{
	struct config *nc;
	unsigned nerrors = 0;

	log_info("SIGHUP: reloading %s", t->config_file);
	nc = config_load(t->config_file, 0, NULL, NULL, &nerrors);
	if (nc == NULL) {
		log_warnx("reload: %u error%s in %s; keeping the running configuration",
			  nerrors, nerrors == 1 ? "" : "s", t->config_file);
		return;
	}
	if (memcmp(&nc->listen, &t->cfg->listen, sizeof(nc->listen)) != 0 ||
	    nc->port != t->cfg->port)
		log_warnx("reload: listen/port changes need a restart; still on %s port %u",
			  t->cfg->listen_host, t->cfg->port);
	if (nc->max_io != t->cfg->max_io || nc->buffer_pool != t->cfg->buffer_pool ||
	    nc->threads != t->cfg->threads || nc->io_engine != t->cfg->io_engine)
		log_warnx("reload: max-io, buffer-pool, threads and io-engine changes need "
			  "a restart");
	/* What may change live. */
	t->cfg->queue_depth = nc->queue_depth;
	t->cfg->inline_max = nc->inline_max;
	t->cfg->log_level = nc->log_level;
	t->cfg->stats = nc->stats;
	t->cfg->keepalive = nc->keepalive;
	t->cfg->handshake_timeout = nc->handshake_timeout;
	/* New limits apply to new connections; none already set up is cut. */
	t->cfg->max_conns_total = nc->max_conns_total;
	t->cfg->max_handshakes = nc->max_handshakes;
	t->cfg->max_conns_per_addr = nc->max_conns_per_addr;
	memlock_check(t->cfg);
	if (strcmp(nc->admin_socket, t->cfg->admin_socket) != 0)
		log_warnx("reload: admin-socket changes need a restart; still on %s",
			  t->cfg->admin_socket[0] ? t->cfg->admin_socket : "none");
	if (log_get_level() < LOG_LEVEL_DEBUG)
		log_set_level(nc->log_level);
	config_warn(nc, NULL, NULL);
	exports_apply(t, nc);
	config_free(nc);
}

static void
loop_shutdown(struct target *t, int signo)
{
	struct conn *c;

	if (t->shutting_down)
		return;
	log_info("%s: stopping: finishing in-flight requests (at most %u s)", strsignal(signo),
		 LOOP_DRAIN_S);
	t->shutting_down = 1;
	t->shutdown_ns = rb_now_ns();
	for (c = t->conns; c != NULL; c = c->next)
		conn_drain(c);
}

static void
loop_signal(struct target *t)
{
	struct signalfd_siginfo si;

	while (read(t->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			loop_reload(t);
			break;
		case SIGTERM:
		case SIGINT:
			loop_shutdown(t, (int)si.ssi_signo);
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
loop_kick_all(struct target *t)
{
	int again = 0;
	struct device *d;
	struct conn *c, *next;
	uint64_t now = rb_now_ns();

	for (d = t->devices; d != NULL; d = d->next)
		pool_service(d->pool);
	/* Deadlines have one-second granularity: not on every round. */
	if (now >= t->next_watch_ns) {
		t->next_watch_ns = now + (uint64_t)LOOP_TICK_MS * 1000000u;
		for (c = t->conns; c != NULL; c = c->next)
			if (c->state != CONN_ERROR)
				conn_watch(c, now);
		if (t->shutting_down && now - t->shutdown_ns >= LOOP_DRAIN_S * 1000000000ull)
			for (c = t->conns; c != NULL; c = c->next)
				conn_fail(c, "not drained within the shutdown bound");
	}
	for (c = t->conns; c != NULL; c = next) {
		next = c->next;
		conn_kick(c);
	}
	/* After all of them: a request of one connection may now wait for a
	 * buffer that another connection's SEND completion frees. */
	for (c = t->conns; c != NULL; c = c->next)
		if (c->state != CONN_ERROR && conn_send_arm(c))
			again = 1;
	for (d = t->devices; d != NULL; d = d->next)
		if (pool_has_waiters(d->pool) && pool_nfree(d->pool) > 0)
			again = 1;
	return again;
}

int
loop_run(struct target *t)
{
	struct epoll_event evs[32];
	struct ep_handler *eh;
	int i, n, pass, again = 0;

	while (!(t->shutting_down && t->conns == NULL)) {
		n = epoll_wait(t->epfd, evs, 32, again ? 0 : LOOP_TICK_MS);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_warn("epoll_wait");
			return -1;
		}
		for (i = 0; i < n; i++) {
			eh = evs[i].data.ptr;
			switch (eh->type) {
			case EP_CM:
				listener_handle_events(t);
				break;
			case EP_COMP:
				conn_handle_cq_event(eh->obj);
				break;
			case EP_IOQ:
				ioq_reap(t->ioq);
				break;
			case EP_SIGNAL:
				loop_signal(t);
				break;
			case EP_RBD:
				rbd_backing_reap(eh->obj);
				break;
			case EP_ADMIN:
			case EP_ADMIN_CLIENT:
				admin_handle(t, eh, evs[i].events);
				break;
			}
		}
		/* Submit the round's backing I/O (one syscall) and finish
		 * what the page cache served at once; resume waiters and post
		 * each connection's WRs as one chain; again while that queued
		 * more backing I/O (a few times at most: a submit the kernel
		 * keeps refusing is retried next round). */
		for (pass = 0; pass < 4; pass++) {
			ioq_flush(t->ioq);
			again = loop_kick_all(t);
			if (!ioq_pending(t->ioq))
				break;
		}
		/* Backing I/O still unsubmitted after the last pass goes out
		 * on the next round, not after a second's sleep. */
		if (ioq_pending(t->ioq))
			again = 1;
		admin_expire(t);
	}
	return 0;
}
