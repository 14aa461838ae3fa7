/* What the daemon does on its event loops besides handling events
 * (struct loop_hooks, target.h): each loop's work after a round (buffer
 * waiters, connection deadlines, posting what the round queued), loop 0's
 * tick (exports, the admin and metrics clients), and the signals: SIGHUP
 * reloads the configuration, SIGTERM and SIGINT drain and stop. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "conn/conn.h"
#include "core/loop.h"
#include "core/target.h"
#include "daemon.h"
#include "log.h"
#include "ops/admin.h"
#include "ops/memlock.h"
#include "ops/metrics.h"

/* SIGTERM lets connections finish what they received for this long, then
 * fails those still open; a connection in error is freed once its WRs
 * flushed (conn.c gives up on them after 30 s more) and its backing I/O
 * returned.  So SIGTERM completes in bounded time even when a peer takes
 * none of its replies. */
#define DAEMON_DRAIN_S 20
/* Connection deadlines have one-second granularity. */
#define DAEMON_WATCH_NS 1000000000ull

static void
daemon_reload(struct target *t)
{
	struct config *nc, *old;
	unsigned nerrors = 0;

	log_info("SIGHUP: reloading %s", t->config_file);
	nc = config_load(t->config_file, 0, NULL, NULL, &nerrors);
	if (nc == NULL) {
		log_warnx("reload: %u error%s in %s; keeping the running configuration",
			  nerrors, nerrors == 1 ? "" : "s", t->config_file);
		goto out_rejected;
	}
	/* Restart-only keys keep their running values (each refused by name);
	 * then the new config replaces the running one, here and only here. */
	config_keep_restart_only(t->cfg, nc, NULL, NULL);
	if (config_reload_conflicts(nc, NULL, NULL) > 0) {
		log_warnx("reload: %s cannot run with what needs a restart; keeping the "
			  "running configuration", t->config_file);
		goto out_free_config;
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
	return;

out_free_config:
	config_free(nc);
out_rejected:
	stats_count(t, &t->stats.reloads[STATS_RELOAD_REJECTED]);
}

static void
daemon_shutdown(struct target *t, int signo)
{
	struct conn *c;
	unsigned li;

	if (t->shutting_down)
		return;
	log_info("%s: stopping: finishing in-flight requests (at most %u s)", strsignal(signo),
		 DAEMON_DRAIN_S);
	t->shutting_down = 1;
	t->shutdown_ns = rb_now_ns();
	FOR_EACH_CONN(t, li, c)
		conn_drain(c);
}

static void
daemon_signal(struct ep_handler *eh, uint32_t events)
{
	struct target *t = eh->obj;
	struct signalfd_siginfo si;

	(void)events;
	while (read(t->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			loops_stop_world(t);
			daemon_reload(t);
			loops_start_world(t);
			break;
		case SIGTERM:
		case SIGINT:
			loops_stop_world(t);
			daemon_shutdown(t, (int)si.ssi_signo);
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
daemon_after_round(struct loop *l)
{
	struct target *t = l->t;
	int again = 0;
	struct device *d;
	struct conn *c, *next;
	uint64_t now = rb_now_ns();

	STAILQ_FOREACH(d, &t->devices, link)
		pool_service(d->pools[l->idx]);
	/* Deadlines have one-second granularity: not on every round. */
	if (now >= l->next_watch_ns) {
		l->next_watch_ns = now + DAEMON_WATCH_NS;
		LIST_FOREACH(c, &l->conns, link)
			if (c->state != CONN_ERROR)
				conn_watch(c, now);
		if (t->shutting_down && now - t->shutdown_ns >= DAEMON_DRAIN_S * 1000000000ull)
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
	STAILQ_FOREACH(d, &t->devices, link)
		if (pool_has_waiters(d->pools[l->idx]) && pool_nfree(d->pools[l->idx]) > 0)
			again = 1;
	return again;
}

/* Loop 0, after each round. */
static void
daemon_tick(struct target *t)
{
	exports_reap_pending(t);
	exports_tick(t);
	admin_expire(t);
	metrics_expire(t);
}

static const struct loop_hooks daemon_hooks = {
	.after_round = daemon_after_round,
	.tick = daemon_tick,
};

int
daemon_setup(struct target *t)
{
	sigset_t set;

	t->hooks = &daemon_hooks;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	t->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (t->sigfd < 0) {
		log_warn("signalfd");
		return -1;
	}
	if (ep_watch(t->epfd, t->sigfd, EPOLLIN, &t->sig_eh, daemon_signal, t) < 0) {
		log_warn("epoll_ctl (signalfd)");
		return -1;
	}
	return 0;
}
