/* The exclusive lock of a writable RBD image, taken and given back by a
 * thread of its own (target/rbd/rbd-lock.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper-thread.h"
#include "log.h"
#include "rbd-lock.h"
#include "rbd-silence.h"
#include "util.h"

struct imglock {
	rbd_image_t image;
	rados_ioctx_t io;           /* the image's pool: a notify to its header */
	int may_break;              /* librbd blocklists a holder whose lock it breaks */
	int notify_fd;
	char name[64];
	struct helper_thread ht;    /* its mu guards what follows */
	int want;                   /* the loop has writes for the image */
	int owner;                  /* we hold the lock */
	int refused_logged;         /* said once per wait that another holds it */
	int lost;                   /* owner, but librbd says the lock is not ours */
	int fenced;                 /* lost it, or the cluster blocklisted this client
				     * instance: for good (IMGLOCK_LOST), only a new
				     * instance (the export's reopen) writes again */
	uint64_t acquired, takeovers, nlost, breaks;
	/* Lock thread only: */
	char holder[128];           /* who held it when this wait began, or "" */
	uint64_t probe_ns;          /* the last silence probe of the holder */
};

static void
imglock_notify(struct imglock *l)
{
	uint64_t one = 1;

	if (write(l->notify_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("export %s: lock: eventfd write", l->name);
}

/* Who holds it, for the log ("client.4123 (192.0.2.10:0/1234)"-like):
 * 1 and the holder in buf when the image's lock record names one. */
static int
imglock_holder(struct imglock *l, char *buf, size_t len)
{
	rbd_lock_mode_t mode;
	char *owners[4];
	size_t n = 4;
	int held = 0;

	snprintf(buf, len, "another client");
	if (rbd_lock_get_owners(l->image, &mode, owners, &n) == 0 && n > 0) {
		snprintf(buf, len, "%s", owners[0]);
		rbd_lock_get_owners_cleanup(owners, n);
		held = 1;
	}
	return held;
}

/* The holder is alive but silent (hung, stopped, cut off): librbd would
 * wait for its watch to lapse (osd_client_watch_timeout, 30 s by default)
 * before it breaks the lock, longer than an initiator waits.  Break it
 * now, as `rbd lock break` does: librbd blocklists the holder first
 * (rbd_blocklist_on_break_lock), so it can never write again, even when
 * it wakes.  At most once every RBD_SILENT_S.  Without the mutex: 1 when
 * it broke the lock. */
static int
imglock_break_silent(struct imglock *l)
{
	char owner[sizeof(l->holder)];
	int r;

	if (!l->may_break || rb_now_ns() - l->probe_ns < RBD_SILENT_S * 1000000000ull)
		return 0;
	l->probe_ns = rb_now_ns();
	if (!imglock_holder(l, owner, sizeof(owner)) ||
	    !rbd_owner_silent(l->io, l->image, owner, RBD_SILENT_S, l->name))
		return 0;
	log_warnx("export %s: the lock's holder %s keeps its watch but answers nothing for "
		  "%d s: breaking its lock, blocklisting it first", l->name, owner, RBD_SILENT_S);
	r = rbd_lock_break(l->image, RBD_LOCK_MODE_EXCLUSIVE, owner);
	if (r < 0) {
		log_warnx("export %s: rbd_lock_break of %s: %s", l->name, owner, strerror(-r));
		return 0;
	}
	return 1;
}

/* With the mutex: this client instance is fenced off the image for good
 * (IMGLOCK_LOST); only the export's reopen, a new instance, writes it
 * again.  Counted lost when it held the lock. */
static void
imglock_lose(struct imglock *l)
{
	l->fenced = 1;
	if (l->owner && !l->lost) {
		l->lost = 1;
		l->nlost++;
	}
	pthread_cond_signal(&l->ht.cond);
}

/* A try while another client held the lock at the start of this wait
 * (or refused it to us since) is a takeover when it succeeds: the holder
 * released it, or librbd broke a dead holder's lock. */
static void
imglock_try(struct imglock *l)
{
	int r, held = l->refused_logged, broke = 0;
	uint64_t t0;

	pthread_mutex_unlock(&l->ht.mu);
	if (!held)
		held = imglock_holder(l, l->holder, sizeof(l->holder));
	if (held)
		broke = imglock_break_silent(l);
	t0 = rb_now_ns();
	r = rbd_lock_acquire(l->image, RBD_LOCK_MODE_EXCLUSIVE);
	log_debug("export %s: rbd_lock_acquire: %s after %llu ms", l->name,
		  r == 0 ? "ok" : strerror(-r), (unsigned long long)((rb_now_ns() - t0) / 1000000u));
	pthread_mutex_lock(&l->ht.mu);
	l->breaks += (uint64_t)broke;
	if (r == -ESHUTDOWN) {
		/* EBLOCKLISTED: another target broke our lock and fenced us,
		 * or an operator did; no retry can succeed. */
		if (l->fenced)
			return;         /* imglock_fenced said so meanwhile */
		imglock_lose(l);
		log_warnx("export %s: rbd_lock_acquire: this client instance is blocklisted: "
			  "its writes fail over, and the export reopens the image", l->name);
		return;
	}
	if (r == 0) {
		l->owner = 1;
		l->lost = 0;
		l->refused_logged = 0;
		l->acquired++;
		if (held) {
			l->takeovers++;
			log_info("export %s: holds the image's exclusive lock, taken over from "
				 "%s: this target writes it", l->name, l->holder);
		} else {
			log_info("export %s: holds the image's exclusive lock: this target "
				 "writes it", l->name);
		}
	} else if (!l->refused_logged) {
		l->refused_logged = 1;
		log_warnx("export %s: rbd_lock_acquire: %s (held by %s): writes wait for the "
			  "lock (retried every second)", l->name, strerror(-r), l->holder);
	}
}

/* While we hold it: is it still ours?  librbd asks the image's header
 * object, so a holder that has been blocklisted learns it here within a
 * second, even with no I/O of its own: the OSD refuses the question
 * (ESHUTDOWN). */
static void
imglock_check(struct imglock *l)
{
	int r, is_owner = 1;

	if (l->fenced)
		return;
	pthread_mutex_unlock(&l->ht.mu);
	r = rbd_is_exclusive_lock_owner(l->image, &is_owner);
	pthread_mutex_lock(&l->ht.mu);
	if (l->fenced || !l->owner)
		return;                 /* imglock_fenced, or given back, meanwhile */
	if (r == -ESHUTDOWN) {
		imglock_lose(l);
		log_warnx("export %s: the OSDs refuse this client instance (blocklisted): it "
			  "lost the image's exclusive lock: its writes fail over, and the export "
			  "reopens the image", l->name);
		return;
	}
	if (r < 0 || is_owner)
		return;
	imglock_lose(l);
	log_warnx("export %s: lost the image's exclusive lock without releasing it (another "
		  "client broke it, or the cluster blocklisted this one): its writes fail",
		  l->name);
}

static void
imglock_give_back(struct imglock *l)
{
	int r;

	l->owner = 0;
	l->lost = 0;
	pthread_mutex_unlock(&l->ht.mu);
	r = rbd_lock_release(l->image);
	pthread_mutex_lock(&l->ht.mu);
	if (r < 0)
		log_warnx("export %s: rbd_lock_release: %s", l->name, strerror(-r));
	else
		log_info("export %s: idle: released the image's exclusive lock", l->name);
}

static void *
imglock_main(void *arg)
{
	struct imglock *l = arg;

	pthread_mutex_lock(&l->ht.mu);
	while (!l->ht.stopping) {
		if (l->fenced && !l->owner) {
			/* Nothing to try: wait to be destroyed (the reopen). */
			pthread_cond_wait(&l->ht.cond, &l->ht.mu);
			continue;
		}
		if (l->want && !l->owner) {
			imglock_try(l);
			imglock_notify(l);     /* got it, or the loop checks its deadline */
		} else if (!l->want && l->owner) {
			imglock_give_back(l);
		} else if (l->owner) {
			imglock_check(l);      /* once a second while we hold it */
		}
		if (l->ht.stopping)
			break;
		if (!l->want && !l->owner) {
			pthread_cond_wait(&l->ht.cond, &l->ht.mu);
			continue;
		}
		helper_thread_sleep(&l->ht, 1);
	}
	if (l->owner)
		imglock_give_back(l);
	pthread_mutex_unlock(&l->ht.mu);
	return NULL;
}

struct imglock *
imglock_create(rbd_image_t image, rados_ioctx_t io, int may_break, const char *name,
	       int notify_fd)
{
	struct imglock *l = calloc(1, sizeof(*l));
	int r;

	if (l == NULL) {
		log_warnx("export %s: lock: out of memory", name);
		return NULL;
	}
	l->image = image;
	l->io = io;
	l->may_break = may_break;
	l->notify_fd = notify_fd;
	snprintf(l->name, sizeof(l->name), "%s", name);
	r = helper_thread_start(&l->ht, imglock_main, l);
	if (r != 0) {
		log_warnx("export %s: lock: pthread_create: %s", name, strerror(r));
		free(l);
		return NULL;
	}
	return l;
}

void
imglock_destroy(struct imglock *l)
{
	if (l == NULL)
		return;
	helper_thread_stop(&l->ht);
	free(l);
}

enum imglock_state
imglock_want(struct imglock *l)
{
	enum imglock_state st;

	pthread_mutex_lock(&l->ht.mu);
	if (!l->want) {
		l->want = 1;
		pthread_cond_signal(&l->ht.cond);
	}
	st = l->fenced ? IMGLOCK_LOST : !l->owner ? IMGLOCK_WAITING : IMGLOCK_OWNER;
	pthread_mutex_unlock(&l->ht.mu);
	return st;
}

void
imglock_idle(struct imglock *l)
{
	pthread_mutex_lock(&l->ht.mu);
	if (l->want) {
		l->want = 0;
		l->refused_logged = 0;     /* the next wait starts afresh */
		pthread_cond_signal(&l->ht.cond);
	}
	pthread_mutex_unlock(&l->ht.mu);
}

void
imglock_fenced(struct imglock *l)
{
	pthread_mutex_lock(&l->ht.mu);
	if (!l->fenced) {
		imglock_lose(l);
		log_warnx("export %s: the OSDs refuse this client instance (blocklisted)%s: "
			  "its writes fail over, and the export reopens the image", l->name,
			  l->lost ? ": it lost the image's exclusive lock" : "");
	}
	pthread_mutex_unlock(&l->ht.mu);
}

void
imglock_get_stats(struct imglock *l, struct imglock_stats *st)
{
	pthread_mutex_lock(&l->ht.mu);
	if (l->fenced)
		st->state = IMGLOCK_LOST;
	else if (l->owner)
		st->state = IMGLOCK_OWNER;
	else
		st->state = l->want ? IMGLOCK_WAITING : IMGLOCK_NONE;
	st->acquired = l->acquired;
	st->takeovers = l->takeovers;
	st->lost = l->nlost;
	st->breaks = l->breaks;
	pthread_mutex_unlock(&l->ht.mu);
}
