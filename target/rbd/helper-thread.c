/* A thread an object owns, stopped on request (target/rbd/helper-thread.h). */
#include <time.h>

#include "helper-thread.h"

int
helper_thread_start(struct helper_thread *h, void *(*fn)(void *), void *arg)
{
	int r;

	h->stopping = 0;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cond, NULL);
	r = pthread_create(&h->thread, NULL, fn, arg);
	if (r != 0) {
		pthread_cond_destroy(&h->cond);
		pthread_mutex_destroy(&h->mu);
	}
	return r;
}

void
helper_thread_stop(struct helper_thread *h)
{
	pthread_mutex_lock(&h->mu);
	h->stopping = 1;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->mu);
}

int
helper_thread_sleep(struct helper_thread *h, int seconds)
{
	struct timespec ts;

	if (h->stopping)
		return 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	pthread_cond_timedwait(&h->cond, &h->mu, &ts);
	return h->stopping;
}
