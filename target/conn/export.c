/* Runtime exports: one backing fd and one flusher (group commit) per export, shared by all
 * its connections (so a FLUSH on one connection covers writes acknowledged
 * on any other: RB_EXP_MULTI_CONN).  exports_apply() installs a freshly
 * parsed config at startup and on SIGHUP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "conn.h"
#include "core/loop.h"
#include "core/target.h"
#include "log.h"
#include "rbd/rbd-session.h"
#include "rbd/rbd.h"

/* The peers first: they read the leader's failed state. */
static void
export_destroy_flushers(struct export *e)
{
	unsigned i;

	for (i = e->nflushers; i-- > 0;)
		flusher_destroy(e->flushers[i]);
	free(e->flushers);
}

static void
export_destroy(struct export *e)
{
	struct flusher_stats st;

	export_flusher_stats(e, &st);
	log_debug("export %s: %llu fdatasync calls covered %llu waiters (largest batch %llu)",
		  e->cfg->name, (unsigned long long)st.syncs, (unsigned long long)st.jobs,
		  (unsigned long long)st.max_batch);
	export_destroy_flushers(e);
	if (e->cfg->rbd != NULL)
		epoll_ctl(e->epfd, EPOLL_CTL_DEL, rbd_backing_fd(e->cfg->rbd), NULL);
	else if (!e->cfg->read_only && fdatasync(e->cfg->fd) < 0)
		log_warn("export %s: final fdatasync", e->cfg->name);
	cfg_export_free(e->cfg);   /* closes the fd, or the image (which flushes) */
	free(e);
}

static void
export_rbd_event(struct ep_handler *eh, uint32_t events)
{
	(void)events;
	rbd_backing_reap(eh->obj);
}

/* An RBD export's completions come to the loop through the image's eventfd. */
static int
export_watch_rbd(struct target *t, struct export *e, struct cfg_export *ce)
{

	flusher_set_backing(e->flusher, ce->rbd, rbd_job_submit);
	e->no_nowait = 1;           /* no page cache in front of librbd */
	e->no_nowait_write = 1;
	e->epfd = t->epfd;
	if (ep_watch(t->epfd, rbd_backing_fd(ce->rbd), EPOLLIN, &e->rbd_eh, export_rbd_event,
		     ce->rbd) < 0) {
		log_warn("export %s: epoll_ctl (librbd's eventfd)", ce->name);
		return -1;
	}
	return 0;
}

/* One flusher per loop, each submitting its syncs to its loop's ioq. */
static int
export_create_flushers(struct target *t, struct export *e, struct cfg_export *ce)
{
	char name[64];

	e->flushers = calloc(t->nloops, sizeof(*e->flushers));
	if (e->flushers == NULL) {
		log_warnx("export %s: out of memory", ce->name);
		return -1;
	}
	snprintf(name, sizeof(name), "export %.50s", ce->name);
	e->flusher = e->flushers[0] = flusher_create(ce->fd, name, t->loops[0]->ioq);
	if (e->flusher == NULL)
		goto out_free;
	for (e->nflushers = 1; e->nflushers < t->nloops; e->nflushers++) {
		e->flushers[e->nflushers] =
			flusher_create_peer(e->flusher, t->loops[e->nflushers]->ioq);
		if (e->flushers[e->nflushers] == NULL)
			goto out_destroy;
	}
	return 0;

out_destroy:
	export_destroy_flushers(e);
	return -1;
out_free:
	free(e->flushers);
	return -1;
}

static struct export *
export_create(struct target *t, struct cfg_export *ce)
{
	struct export *e = calloc(1, sizeof(*e));

	if (e == NULL) {
		log_warnx("export %s: out of memory", ce->name);
		return NULL;
	}
	if (export_create_flushers(t, e, ce) < 0)
		goto out_free;
	if (ce->rbd != NULL && export_watch_rbd(t, e, ce) < 0)
		goto out_flushers;
	e->cfg = ce;
	return e;

out_flushers:
	export_destroy_flushers(e);
out_free:
	free(e);
	return NULL;
}

void
export_flusher_stats(const struct export *e, struct flusher_stats *st)
{
	struct flusher_stats one;
	unsigned i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < e->nflushers; i++) {
		flusher_get_stats(e->flushers[i], &one);
		st->syncs += one.syncs;
		st->jobs += one.jobs;
		st->errors += one.errors;
		if (one.max_batch > st->max_batch)
			st->max_batch = one.max_batch;
	}
}

struct export *
export_find(struct target *t, const char *name)
{
	struct export *e;

	STAILQ_FOREACH(e, &t->exports, link)
		if (!e->removed && strcmp(e->cfg->name, name) == 0)
			return e;
	return NULL;
}

/* Unlink and free removed exports that no connection uses any more. */
static void
exports_reap(struct target *t)
{
	struct export *e, *next;

	for (e = STAILQ_FIRST(&t->exports); e != NULL; e = next) {
		next = STAILQ_NEXT(e, link);
		if (e->removed && e->nconns == 0) {
			STAILQ_REMOVE(&t->exports, e, export, link);
			log_info("export %s removed", e->cfg->name);
			stats_export_gone(t, e);
			export_destroy(e);
		}
	}
}

int
export_take_conn(struct target *t, struct export *e)
{
	int r = 0;

	target_lock(t);
	if (e->cfg->max_connections != 0 && e->nconns >= e->cfg->max_connections)
		r = -1;
	else
		e->nconns++;
	target_unlock(t);
	return r;
}

/* Under t->lock.  The export list changes only with the other loops
 * stopped (loop.h): another loop's last connection leaves the freeing
 * to loop 0. */
void
export_put_conn(struct target *t, struct export *e)
{
	e->nconns--;
	if (e->nconns == 0 && e->cfg->rbd != NULL)
		rbd_backing_idle(e->cfg->rbd);     /* give the image's lock back */
	if (!e->removed || e->nconns != 0)
		return;
	if (t->nloops == 1) {
		exports_reap(t);
		return;
	}
	__atomic_store_n(&t->reap_pending, 1, __ATOMIC_RELAXED);
	loop_wake(t->loops[0]);
}

void
exports_reap_pending(struct target *t)
{
	if (!__atomic_load_n(&t->reap_pending, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&t->reap_pending, 0, __ATOMIC_RELAXED);
	loops_stop_world(t);
	exports_reap(t);
	loops_start_world(t);
}

void
exports_tick(struct target *t)
{
	struct export *e;

	STAILQ_FOREACH(e, &t->exports, link) {
		if (e->cfg->rbd == NULL)
			continue;
		/* A removed export only finishes a reopen under way. */
		if (rbd_backing_tick(e->cfg->rbd, !e->removed && flusher_failed(e->flusher))) {
			char how[256];

			snprintf(how, sizeof(how), "a new client instance reopened the image; "
				 "the old one, %s, is blocklisted for %d s",
				 rbd_backing_fenced(e->cfg->rbd), RBD_FENCE_S);
			flusher_reopened(e->flusher, how);
		}
	}
}

static void
export_remove(struct target *t, struct export *e)
{
	struct conn *c;
	unsigned li;

	e->removed = 1;
	FOR_EACH_CONN(t, li, c)
		if (c->rq.exp == e)
			conn_drain(c);
}

/* Same backing file with the same semantics: keep the running export. */
static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
same_backing(const struct cfg_export *a, const struct cfg_export *b)
{
	if (a->is_rbd || b->is_rbd)
		return a->is_rbd && b->is_rbd && strcmp(a->path, b->path) == 0 &&
		       same_str(a->ceph_conf, b->ceph_conf) && same_str(a->ceph_id, b->ceph_id) &&
		       same_str(a->ceph_keyring, b->ceph_keyring) &&
		       a->read_only == b->read_only && a->durability == b->durability;
	return a->dev == b->dev && a->ino == b->ino && a->read_only == b->read_only &&
	       a->durability == b->durability && a->is_blockdev == b->is_blockdev &&
	       a->direct_io == b->direct_io;
}

int
exports_apply(struct target *t, struct config *nc)
{
	STAILQ_HEAD(, cfg_export) list = STAILQ_HEAD_INITIALIZER(list);
	struct cfg_export *ce;
	struct export *e, *old;
	int added = 0, kept = 0;

	/* The exports leave nc: each becomes a running export's, or is freed. */
	STAILQ_CONCAT(&list, &nc->exports);
	nc->nexports = 0;
	STAILQ_FOREACH(e, &t->exports, link)
		e->keep = 0;
	while ((ce = STAILQ_FIRST(&list)) != NULL) {
		STAILQ_REMOVE_HEAD(&list, link);
		old = export_find(t, ce->name);
		if (old != NULL && flusher_failed(old->flusher) != 0) {
			/* The admin's reload reopens a failed export (flusher.h):
			 * a new file descriptor and flusher; its connections,
			 * which saw the failure, are drained. */
			log_info("export %s: reopening it after its failure (%s)", ce->name,
				 flusher_failure(old->flusher));
			export_remove(t, old);
		} else if (old != NULL && same_backing(old->cfg, ce)) {
			/* Swap in the new description/allow/limits, keep the fd. */
			int fd = old->cfg->fd;
			struct rbd_backing *rbd = old->cfg->rbd;

			old->cfg->fd = ce->fd;
			ce->fd = fd;
			old->cfg->rbd = ce->rbd;
			ce->rbd = rbd;
			{
				struct cfg_export *prev = old->cfg;

				old->cfg = ce;
				cfg_export_free(prev);
			}
			old->keep = 1;
			kept++;
			continue;
		}
		if (old != NULL && !old->removed) {
			log_info("export %s changed its backing store: replacing it", ce->name);
			export_remove(t, old);
		}
		e = export_create(t, ce);
		if (e == NULL) {
			cfg_export_free(ce);
			continue;
		}
		e->keep = 1;
		STAILQ_INSERT_TAIL(&t->exports, e, link);
		added++;
		log_info("export %s: %s, %llu bytes%s%s, durability %s", e->cfg->name,
			 e->cfg->path, (unsigned long long)e->cfg->size,
			 e->cfg->read_only ? ", read-only" : "",
			 e->cfg->direct_io ? ", direct-io" : "",
			 e->cfg->durability == DURABILITY_ALWAYS ? "always" : "fua");
	}
	STAILQ_FOREACH(e, &t->exports, link)
		if (!e->removed && !e->keep)
			export_remove(t, e);
	/* Kept exports took their new allow, key and size: take back from
	 * their connections what those no longer grant. */
	conns_revoke(t);
	exports_reap(t);
	return added + kept;
}

void
exports_destroy_all(struct target *t)
{
	struct export *e;

	STAILQ_FOREACH(e, &t->exports, link)
		e->removed = 1;
	exports_reap(t);
}

int
exports_any_allows(struct target *t, const struct sockaddr *sa)
{
	struct export *e;

	STAILQ_FOREACH(e, &t->exports, link)
		if (!e->removed && cfg_export_allows(e->cfg, sa))
			return 1;
	return 0;
}

uint32_t
export_flags(const struct export *e)
{
	/* TTL: every request's ttl is honoured (request-exec.c).  EXTENTS:
	 * every backend answers BLOCK_STATUS (extents.h, rbd-extents.h). */
	uint32_t f = RB_EXP_MULTI_CONN | RB_EXP_TTL | RB_EXP_EXTENTS;

	if (e->cfg->shared)
		f |= RB_EXP_SHARED;
	if (e->cfg->read_only)
		return f | RB_EXP_READ_ONLY;
	f |= RB_EXP_FLUSH | RB_EXP_FUA | RB_EXP_TRIM | RB_EXP_ZEROES;
	if (e->cfg->durability == DURABILITY_ALWAYS)
		f |= RB_EXP_DURABLE_ALL;
	return f;
}
