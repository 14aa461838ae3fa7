/* RBD exports through librbd's async I/O, completed on the event loop
 * (target/rbd/rbd.h). */
#include <errno.h>
#include <rbd/librbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "rbd-extents.h"
#include "rbd-lock.h"
#include "rbd-module.h"
#include "rbd-reopen.h"
#include "rbd-session.h"
#include "rbd.h"
#include "util.h"

#define RBD_POLL_BATCH 32

struct rbd_backing {
	struct rbd_params p;        /* what its sessions open */
	struct rbd_session *s;      /* the I/O goes through this one */
	struct rbd_reopen *ro;      /* after a failure: the next session, or NULL */
	int efd;                    /* librbd's completion notification, every session's */
	uint64_t size;              /* the export's: the first session's image size */
	unsigned inflight;          /* submitted, j->done not yet run */
	unsigned on_image;          /* of those, started on s->image */
	struct job_list failed;     /* refused at submit: done at the next reap */
	struct job_list waiting;    /* writes waiting for the lock */
	struct job_list held;       /* submitted while a new session waits for the swap */
	uint64_t wait_start_ns;     /* when the first of them began to wait */
	uint64_t reopen_after_ns;   /* no new reopen before this */
	int drain_logged;           /* said that the swap waits for the old session */
	uint64_t reopens;           /* sessions swapped in after a failure */
	struct imglock_stats lock_base; /* the closed sessions' lock counters */
	char fenced[160];           /* the last instance blocklisted, or "" */
	struct rbd_extents *x;      /* BLOCK_STATUS's thread, from the first one on */
};

struct rbd_backing *
rbd_backing_create(const char *path, const struct rbd_opts *o, char *err, size_t errlen)
{
	struct rbd_backing *b = calloc(1, sizeof(*b));

	if (b == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	STAILQ_INIT(&b->failed);
	STAILQ_INIT(&b->waiting);
	STAILQ_INIT(&b->held);
	if (rbd_params_init(&b->p, path, o->conf, o->id, o->keyring, o->read_only, o->name,
			    err, errlen) < 0)
		goto out_free;
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0) {
		snprintf(err, errlen, "%s: eventfd: %s", path, strerror(errno));
		goto out_params;
	}
	b->s = rbd_session_open(&b->p, b->efd, err, errlen);
	if (b->s == NULL)
		goto out_close_efd;
	b->size = b->s->size;
	return b;

out_close_efd:
	close(b->efd);
out_params:
	rbd_params_free(&b->p);
out_free:
	free(b);
	return NULL;
}

void
rbd_backing_destroy(struct rbd_backing *b)
{
	if (b == NULL)
		return;
	if (b->inflight != 0)
		log_warnx("export %s: %u RBD jobs still in flight at its end", b->p.name,
			  b->inflight);
	rbd_extents_destroy(b->x);
	if (b->ro != NULL)
		rbd_reopen_destroy(b->ro);  /* closes b->s, its old session */
	else
		rbd_session_close(b->s);
	close(b->efd);
	rbd_params_free(&b->p);
	free(b);
}

uint64_t
rbd_backing_size(const struct rbd_backing *b)
{
	return b->size;
}

int
rbd_backing_fd(const struct rbd_backing *b)
{
	return b->efd;
}

unsigned
rbd_backing_inflight(const struct rbd_backing *b)
{
	return b->inflight;
}

void
rbd_backing_get_stats(const struct rbd_backing *b, struct rbd_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->lock.state = IMGLOCK_NONE;
	if (b->s->lock != NULL)
		imglock_get_stats(b->s->lock, &st->lock);
	st->lock.acquired += b->lock_base.acquired;
	st->lock.takeovers += b->lock_base.takeovers;
	st->lock.lost += b->lock_base.lost;
	st->lock.breaks += b->lock_base.breaks;
	st->reopens = b->reopens;
	snprintf(st->fenced, sizeof(st->fenced), "%s", b->fenced);
}

/* Complete j at the next reap (never inside the submit). */
static void
rbd_fail_later(struct rbd_backing *b, struct job *j, int err)
{
	uint64_t one = 1;

	j->result = err;
	STAILQ_INSERT_TAIL(&b->failed, j, link);
	if (write(b->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("export %s: eventfd write", b->p.name);
}

/* librbd refuses a write, and also a flush, on an image with the
 * exclusive-lock feature from a client that does not hold the lock and
 * took it explicitly before (EROFS): both wait for it. */
static int
needs_lock(const struct job *j)
{
	return j->op == JOB_WRITE || j->op == JOB_TRIM || j->op == JOB_ZERO ||
	       j->op == JOB_SYNC;
}

static void
rbd_start(struct rbd_backing *b, struct job *j)
{
	rbd_completion_t c;
	int r;

	if (j->op == JOB_EXTENTS) {
		/* Synchronous in librbd: on the image's own thread. */
		if (b->x == NULL && (b->x = rbd_extents_create(b->efd, b->p.name)) == NULL) {
			rbd_fail_later(b, j, -ENOMEM);
			return;
		}
		rbd_extents_submit(b->x, b->s->image, j);
		b->on_image++;
		return;
	}
	r = rbd_aio_create_completion(j, NULL, &c);
	if (r < 0) {
		rbd_fail_later(b, j, r);
		return;
	}
	switch (j->op) {
	case JOB_READ:
		r = rbd_aio_read(b->s->image, j->off, j->len, j->buf, c);
		break;
	case JOB_WRITE:
		r = rbd_aio_write(b->s->image, j->off, j->len, j->src, c);
		break;
	case JOB_TRIM:
		r = rbd_aio_discard(b->s->image, j->off, j->len, c);
		break;
	case JOB_ZERO:
		r = rbd_aio_write_zeroes(b->s->image, j->off, j->len, c,
					 j->no_hole ? RBD_WRITE_ZEROES_FLAG_THICK_PROVISION : 0, 0);
		break;
	case JOB_SYNC:
		r = rbd_aio_flush(b->s->image, c);
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r < 0) {
		rbd_aio_release(c);
		rbd_fail_later(b, j, r);
		return;
	}
	b->on_image++;
}

/* The session's lock state as --stats shows it: asks for nothing. */
static enum imglock_state
rbd_lock_state(struct rbd_backing *b)
{
	struct imglock_stats st;

	imglock_get_stats(b->s->lock, &st);
	return st.state;
}

/* 1 when this session holds the image's lock, or held it and lost it
 * (then a flush must go to librbd and fail). */
static int
rbd_lock_held(struct rbd_backing *b)
{
	enum imglock_state st = rbd_lock_state(b);

	return st == IMGLOCK_OWNER || st == IMGLOCK_LOST;
}

/* Start j, or queue it for the lock, or for the session about to be
 * swapped in. */
static void
rbd_route(struct rbd_backing *b, struct job *j)
{
	enum imglock_state lock;

	if (!job_may_start(j, 1)) {
		/* Its initiator gave up on it while it was held. */
		rbd_fail_later(b, j, -ECANCELED);
		return;
	}
	if (b->ro != NULL && rbd_reopen_ready(b->ro)) {
		/* Nothing new on the fenced session: it would fail. */
		STAILQ_INSERT_TAIL(&b->held, j, link);
		return;
	}
	if (b->p.read_only) {
		/* No lock on a read-only image; nothing to flush either. */
		if (j->op == JOB_READ || j->op == JOB_SYNC || j->op == JOB_EXTENTS)
			rbd_start(b, j);
		else
			rbd_fail_later(b, j, -EROFS);
		return;
	}
	if (!needs_lock(j)) {
		rbd_start(b, j);
		return;
	}
	if (j->op == JOB_SYNC && b->on_image == 0 && !rbd_lock_held(b)) {
		/* With no client cache (rbd_cache off) a write is acknowledged
		 * only once the OSDs have it, here or at another target, and
		 * nothing of this client is on the image: a flush has nothing
		 * to wait for.  Not waiting for the lock (up to
		 * RBD_LOCK_WAIT_S) lets a FLUSH right after a failover answer
		 * within its initiator's timeout. */
		rbd_fail_later(b, j, 0);    /* completes it, successfully */
		return;
	}
	lock = imglock_want(b->s->lock);
	if (lock == IMGLOCK_LOST) {
		/* Another client writes the image now: this target is fenced
		 * off it, and its initiators must go there (ESHUTDOWN). */
		rbd_fail_later(b, j, -ESHUTDOWN);
		return;
	}
	if (!STAILQ_EMPTY(&b->waiting) || lock != IMGLOCK_OWNER) {
		/* In order behind the writes already waiting. */
		if (STAILQ_EMPTY(&b->waiting))
			b->wait_start_ns = rb_now_ns();
		STAILQ_INSERT_TAIL(&b->waiting, j, link);
		return;
	}
	rbd_start(b, j);
}

void
rbd_backing_submit(struct rbd_backing *b, struct job *j)
{
	j->result = 0;
	j->done_bytes = 0;
	b->inflight++;
	rbd_route(b, j);
}

static void
rbd_complete(struct rbd_backing *b, struct job *j)
{
	b->inflight--;
	j->done(j);
}

/* Jobs that wait (for the lock, or for a new session) and that their
 * initiator gave up on: their connection failed, or their ttl passed.
 * They complete with -ECANCELED, never having started (workq.h). */
static void
rbd_cull(struct rbd_backing *b, struct job_list *q)
{
	struct job_list keep, gone;
	struct job *j;

	STAILQ_INIT(&keep);
	STAILQ_INIT(&gone);
	while ((j = STAILQ_FIRST(q)) != NULL) {
		STAILQ_REMOVE_HEAD(q, link);
		if (job_may_start(j, 1)) {
			STAILQ_INSERT_TAIL(&keep, j, link);
		} else {
			j->result = -ECANCELED;
			STAILQ_INSERT_TAIL(&gone, j, link);
		}
	}
	STAILQ_CONCAT(q, &keep);
	while ((j = STAILQ_FIRST(&gone)) != NULL) {
		STAILQ_REMOVE_HEAD(&gone, link);
		rbd_complete(b, j);
	}
}

/* Writes that waited: start them once the lock is ours (those still
 * wanted: rbd_cull), fail them after RBD_LOCK_WAIT_S, or with ESHUTDOWN
 * once the lock was lost. */
static void
rbd_lock_waiters(struct rbd_backing *b)
{
	struct job *j;
	enum imglock_state lock;
	int expired;

	rbd_cull(b, &b->waiting);
	if (STAILQ_EMPTY(&b->waiting))
		return;
	lock = imglock_want(b->s->lock);
	expired = rb_now_ns() - b->wait_start_ns >= RBD_LOCK_WAIT_S * 1000000000ull;
	if (lock == IMGLOCK_WAITING && !expired)
		return;
	if (lock == IMGLOCK_WAITING)
		log_warnx("export %s: no exclusive lock after %d s: failing the writes that "
			  "waited for it with EIO", b->p.name, RBD_LOCK_WAIT_S);
	while ((j = STAILQ_FIRST(&b->waiting)) != NULL) {
		STAILQ_REMOVE_HEAD(&b->waiting, link);
		if (lock == IMGLOCK_OWNER) {
			rbd_start(b, j);
		} else {
			j->result = lock == IMGLOCK_LOST ? -ESHUTDOWN : -EIO;
			rbd_complete(b, j);
		}
	}
}

void
rbd_backing_reap(struct rbd_backing *b)
{
	rbd_completion_t comps[RBD_POLL_BATCH];
	struct job_list failed;
	struct job *j;
	uint64_t v;
	ssize_t ret;
	int i, n;

	if (read(b->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("export %s: eventfd read", b->p.name);
	do {
		n = rbd_poll_io_events(b->s->image, comps, RBD_POLL_BATCH);
		for (i = 0; i < n; i++) {
			j = rbd_aio_get_arg(comps[i]);
			b->on_image--;
			ret = rbd_aio_get_return_value(comps[i]);
			rbd_aio_release(comps[i]);
			j->result = ret < 0 ? (int)ret : 0;
			if (ret >= 0)
				j->done_bytes = j->len;
			else if (ret == -ESHUTDOWN && b->s->lock != NULL && b->ro == NULL)
				/* Blocklisted before the lock thread noticed
				 * (or with the lock idle): fenced, reopen.
				 * Not during a reopen: that fence is our own. */
				imglock_fenced(b->s->lock);
			rbd_complete(b, j);
		}
	} while (n == RBD_POLL_BATCH);
	rbd_extents_take(b->x, &failed);
	while ((j = STAILQ_FIRST(&failed)) != NULL) {
		STAILQ_REMOVE_HEAD(&failed, link);
		b->on_image--;
		if (j->result == -ESHUTDOWN && b->s->lock != NULL && b->ro == NULL)
			imglock_fenced(b->s->lock);
		rbd_complete(b, j);
	}
	STAILQ_INIT(&failed);
	STAILQ_CONCAT(&failed, &b->failed);
	while ((j = STAILQ_FIRST(&failed)) != NULL) {
		STAILQ_REMOVE_HEAD(&failed, link);
		rbd_complete(b, j);
	}
	rbd_lock_waiters(b);
}

void
rbd_backing_idle(struct rbd_backing *b)
{
	if (b->s->lock != NULL && STAILQ_EMPTY(&b->waiting) && b->inflight == 0)
		imglock_idle(b->s->lock);
}

/* The new session in, the old one out (it has no I/O in flight): the old
 * one's lock figures carry over, held jobs start on the new one. */
static void
rbd_swap(struct rbd_backing *b)
{
	struct imglock_stats old;
	struct rbd_session *fresh;
	struct job_list held;
	struct job *j;
	char addr[sizeof(b->fenced)];

	/* Read the old session before the swap: the reopen thread closes
	 * it as soon as rbd_reopen_swap returns.  It fenced that session's
	 * instance, b->s's. */
	memset(&old, 0, sizeof(old));
	if (b->s->lock != NULL)
		imglock_get_stats(b->s->lock, &old);
	snprintf(addr, sizeof(addr), "%s", b->s->addr);
	fresh = rbd_reopen_swap(b->ro);
	if (fresh == NULL)
		return;
	b->lock_base.acquired += old.acquired;
	b->lock_base.takeovers += old.takeovers;
	b->lock_base.lost += old.lost;
	b->lock_base.breaks += old.breaks;
	memcpy(b->fenced, addr, sizeof(b->fenced));
	b->s = fresh;               /* the reopen thread closes the old one */
	b->reopens++;
	STAILQ_INIT(&held);
	STAILQ_CONCAT(&held, &b->held);
	while ((j = STAILQ_FIRST(&held)) != NULL) {
		STAILQ_REMOVE_HEAD(&held, link);
		rbd_route(b, j);
	}
}

int
rbd_backing_tick(struct rbd_backing *b, int failed)
{
	uint64_t now;

	/* A failed connection's waiting jobs go now, not when the lock or
	 * the new session comes. */
	rbd_cull(b, &b->held);
	rbd_lock_waiters(b);

	if (b->ro != NULL && rbd_reopen_finished(b->ro)) {
		rbd_reopen_destroy(b->ro);
		b->ro = NULL;
	}
	if (b->ro != NULL) {
		if (!rbd_reopen_ready(b->ro))
			return 0;
		if (b->on_image != 0) {
			if (!b->drain_logged)
				log_info("export %s: a new client instance is ready; the swap waits "
				 "for %u requests still on the old one (rados_osd_op_timeout %d s)",
				 b->p.name, b->on_image, RBD_OSD_TIMEOUT_S);
			b->drain_logged = 1;
			return 0;
		}
		b->drain_logged = 0;
		rbd_swap(b);
		return 1;
	}
	/* Another target broke our lock and blocklisted this client
	 * instance: only a new one can write the image again. */
	if (!failed && b->s->lock != NULL)
		failed = rbd_lock_state(b) == IMGLOCK_LOST;
	now = rb_now_ns();
	if (!failed || now < b->reopen_after_ns)
		return 0;
	b->reopen_after_ns = now + RBD_REOPEN_RETRY_S * 1000000000ull;
	b->ro = rbd_reopen_start(&b->p, b->s, b->efd);
	return 0;
}

const char *
rbd_backing_fenced(const struct rbd_backing *b)
{
	return b->fenced;
}

/* The module's one export (target/rbd/rbd-module.h). */
extern const struct rbd_module rdmablk_rbd_module;
const struct rbd_module rdmablk_rbd_module = {
	.abi = RBD_MODULE_ABI,
	.size = sizeof(struct rbd_module),
	.create = rbd_backing_create,
	.destroy = rbd_backing_destroy,
	.size_of = rbd_backing_size,
	.fd = rbd_backing_fd,
	.submit = rbd_backing_submit,
	.reap = rbd_backing_reap,
	.idle = rbd_backing_idle,
	.inflight = rbd_backing_inflight,
	.tick = rbd_backing_tick,
	.get_stats = rbd_backing_get_stats,
	.fenced = rbd_backing_fenced,
};
