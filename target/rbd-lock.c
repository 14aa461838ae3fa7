/* The exclusive lock of a writable RBD image, taken and given back by a
 * thread of its own (target/rbd-lock.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rbd-lock.h"

struct imglock {
	rbd_image_t image;
	int notify_fd;
	char name[64];
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	/* Under mu: */
	int want;                   /* the loop has writes for the image */
	int owner;                  /* we hold the lock */
	int stopping;
	int refused_logged;         /* said once per wait that another holds it */
};

static void
imglock_notify(struct imglock *l)
{
	uint64_t one = 1;

	if (write(l->notify_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("export %s: lock: eventfd write", l->name);
}

/* Who holds it, for the log ("client.4123 (192.0.2.10:0/1234)"-like). */
static void
imglock_holder(struct imglock *l, char *buf, size_t len)
{
	rbd_lock_mode_t mode;
	char *owners[4];
	size_t n = 4;

	snprintf(buf, len, "another client");
	if (rbd_lock_get_owners(l->image, &mode, owners, &n) == 0 && n > 0) {
		snprintf(buf, len, "%s", owners[0]);
		rbd_lock_get_owners_cleanup(owners, n);
	}
}

static void
imglock_try(struct imglock *l)
{
	char who[128];
	int r;

	pthread_mutex_unlock(&l->mu);
	r = rbd_lock_acquire(l->image, RBD_LOCK_MODE_EXCLUSIVE);
	if (r < 0 && !l->refused_logged)
		imglock_holder(l, who, sizeof(who));
	pthread_mutex_lock(&l->mu);
	if (r == 0) {
		l->owner = 1;
		l->refused_logged = 0;
		log_info("export %s: holds the image's exclusive lock: this target writes it",
			 l->name);
	} else if (!l->refused_logged) {
		l->refused_logged = 1;
		log_warnx("export %s: rbd_lock_acquire: %s (held by %s): writes wait for the "
			  "lock (retried every second)", l->name, strerror(-r), who);
	}
}

static void
imglock_give_back(struct imglock *l)
{
	int r;

	l->owner = 0;
	pthread_mutex_unlock(&l->mu);
	r = rbd_lock_release(l->image);
	pthread_mutex_lock(&l->mu);
	if (r < 0)
		log_warnx("export %s: rbd_lock_release: %s", l->name, strerror(-r));
	else
		log_info("export %s: idle: released the image's exclusive lock", l->name);
}

static void *
imglock_main(void *arg)
{
	struct imglock *l = arg;
	struct timespec ts;

	pthread_mutex_lock(&l->mu);
	while (!l->stopping) {
		if (l->want && !l->owner)
			imglock_try(l);
		else if (!l->want && l->owner)
			imglock_give_back(l);
		if (l->want)
			imglock_notify(l);     /* got it, or the loop checks its deadline */
		if (l->stopping)
			break;
		if (l->want == l->owner) {
			pthread_cond_wait(&l->cond, &l->mu);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&l->cond, &l->mu, &ts);
	}
	if (l->owner)
		imglock_give_back(l);
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

struct imglock *
imglock_create(rbd_image_t image, const char *name, int notify_fd)
{
	struct imglock *l = calloc(1, sizeof(*l));
	int r;

	if (l == NULL) {
		log_warnx("export %s: lock: out of memory", name);
		return NULL;
	}
	l->image = image;
	l->notify_fd = notify_fd;
	snprintf(l->name, sizeof(l->name), "%s", name);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cond, NULL);
	r = pthread_create(&l->thread, NULL, imglock_main, l);
	if (r != 0) {
		log_warnx("export %s: lock: pthread_create: %s", name, strerror(r));
		goto out_free;
	}
	return l;

out_free:
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mu);
	free(l);
	return NULL;
}

void
imglock_destroy(struct imglock *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	l->stopping = 1;
	l->want = 0;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

int
imglock_want(struct imglock *l)
{
	int owner;

	pthread_mutex_lock(&l->mu);
	if (!l->want) {
		l->want = 1;
		pthread_cond_signal(&l->cond);
	}
	owner = l->owner;
	pthread_mutex_unlock(&l->mu);
	return owner;
}

void
imglock_idle(struct imglock *l)
{
	pthread_mutex_lock(&l->mu);
	if (l->want) {
		l->want = 0;
		pthread_cond_signal(&l->cond);
	}
	pthread_mutex_unlock(&l->mu);
}

int
imglock_owner(struct imglock *l)
{
	int owner;

	pthread_mutex_lock(&l->mu);
	owner = l->owner;
	pthread_mutex_unlock(&l->mu);
	return owner;
}
