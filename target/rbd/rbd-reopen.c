/* The reopen of a failed RBD export's image, on a thread of its own
 * (target/rbd/rbd-reopen.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper-thread.h"
#include "log.h"
#include "rbd-reopen.h"

enum reopen_state {
	REOPEN_CONNECTING,
	REOPEN_READY,
	REOPEN_CLOSING,
	REOPEN_FINISHED,
};

struct rbd_reopen {
	const struct rbd_params *p; /* the backing's, which outlives this */
	int notify_fd;
	struct helper_thread ht;    /* its mu guards what follows */
	enum reopen_state state;
	struct rbd_session *old;    /* ours to close */
	struct rbd_session *fresh;  /* ours until the swap */
};

static void
reopen_notify(struct rbd_reopen *ro)
{
	uint64_t one = 1;

	if (write(ro->notify_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("export %s: reopen: eventfd write", ro->p->name);
}

/* A fenced new session, or NULL when stopped first.  Logs the first
 * failure and each different one after it, not every retry. */
static struct rbd_session *
reopen_connect(struct rbd_reopen *ro)
{
	char err[512], last[512] = "";
	struct rbd_session *s;
	int stop;

	for (;;) {
		s = rbd_session_open(ro->p, ro->notify_fd, err, sizeof(err));
		if (s != NULL && s->size < ro->old->size) {
			snprintf(err, sizeof(err), "%s: the image shrank from %llu to %llu bytes",
				 ro->p->path, (unsigned long long)ro->old->size,
				 (unsigned long long)s->size);
			rbd_session_close(s);
			s = NULL;
		}
		if (s != NULL && rbd_session_fence(s, ro->old->addr, err, sizeof(err)) < 0) {
			rbd_session_close(s);
			s = NULL;
		}
		if (s != NULL)
			return s;
		if (strcmp(err, last) != 0) {
			log_warnx("export %s: reopening: %s; trying again every %d s", ro->p->name,
				  err, RBD_REOPEN_RETRY_S);
			snprintf(last, sizeof(last), "%s", err);
		}
		pthread_mutex_lock(&ro->ht.mu);
		stop = helper_thread_sleep(&ro->ht, RBD_REOPEN_RETRY_S);
		pthread_mutex_unlock(&ro->ht.mu);
		if (stop)
			return NULL;
	}
}

static void *
reopen_main(void *arg)
{
	struct rbd_reopen *ro = arg;
	struct rbd_session *s = reopen_connect(ro), *old = NULL, *fresh = NULL;

	pthread_mutex_lock(&ro->ht.mu);
	if (s != NULL) {
		ro->fresh = s;
		ro->state = REOPEN_READY;
		reopen_notify(ro);
		/* The loop swaps it in once the old session is idle. */
		while (ro->state == REOPEN_READY && !ro->ht.stopping)
			pthread_cond_wait(&ro->ht.cond, &ro->ht.mu);
	}
	ro->state = REOPEN_CLOSING;
	old = ro->old;
	ro->old = NULL;
	fresh = ro->fresh;          /* not taken: stopped before the swap */
	ro->fresh = NULL;
	pthread_mutex_unlock(&ro->ht.mu);
	rbd_session_close(fresh);
	rbd_session_close(old);
	pthread_mutex_lock(&ro->ht.mu);
	ro->state = REOPEN_FINISHED;
	pthread_mutex_unlock(&ro->ht.mu);
	return NULL;
}

struct rbd_reopen *
rbd_reopen_start(const struct rbd_params *p, struct rbd_session *old, int notify_fd)
{
	struct rbd_reopen *ro = calloc(1, sizeof(*ro));
	int r;

	if (ro == NULL) {
		log_warnx("export %s: reopen: out of memory", p->name);
		return NULL;
	}
	ro->p = p;
	ro->old = old;
	ro->notify_fd = notify_fd;
	ro->state = REOPEN_CONNECTING;
	r = helper_thread_start(&ro->ht, reopen_main, ro);
	if (r != 0) {
		log_warnx("export %s: cannot start the reopen thread: %s", p->name, strerror(r));
		free(ro);
		return NULL;
	}
	return ro;
}

static enum reopen_state
reopen_state(struct rbd_reopen *ro)
{
	enum reopen_state st;

	pthread_mutex_lock(&ro->ht.mu);
	st = ro->state;
	pthread_mutex_unlock(&ro->ht.mu);
	return st;
}

int
rbd_reopen_ready(struct rbd_reopen *ro)
{
	return reopen_state(ro) == REOPEN_READY;
}

int
rbd_reopen_finished(struct rbd_reopen *ro)
{
	return reopen_state(ro) == REOPEN_FINISHED;
}

struct rbd_session *
rbd_reopen_swap(struct rbd_reopen *ro)
{
	struct rbd_session *s = NULL;

	pthread_mutex_lock(&ro->ht.mu);
	if (ro->state == REOPEN_READY) {
		s = ro->fresh;
		ro->fresh = NULL;
		ro->state = REOPEN_CLOSING;
		pthread_cond_signal(&ro->ht.cond);
	}
	pthread_mutex_unlock(&ro->ht.mu);
	return s;
}

void
rbd_reopen_destroy(struct rbd_reopen *ro)
{
	if (ro == NULL)
		return;
	helper_thread_stop(&ro->ht);
	free(ro);
}
