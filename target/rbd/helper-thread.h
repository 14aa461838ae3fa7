/* A thread that an object owns: it sleeps on the object's condition
 * variable, under the object's mutex, and stops when told.  The RBD
 * image lock (rbd-lock.c) and an RBD export's reopen (rbd-reopen.c) each
 * have one. */
#ifndef RDMABLK_TARGET_HELPER_THREAD_H
#define RDMABLK_TARGET_HELPER_THREAD_H

#include <pthread.h>

struct helper_thread {
	pthread_t thread;
	pthread_mutex_t mu;         /* the owner's state is under it too */
	pthread_cond_t cond;        /* signalled on every change of that state */
	int stopping;               /* under mu */
};

/* Initialise mu and cond and start fn(arg): 0, or the pthread_create
 * error (nothing is left to destroy then). */
int  helper_thread_start(struct helper_thread *h, void *(*fn)(void *), void *arg);
/* Set stopping, wake the thread and join it; then destroy mu and cond. */
void helper_thread_stop(struct helper_thread *h);
/* Under mu: sleep up to seconds, or until signalled (or spuriously
 * woken); 1 when stopping. */
int  helper_thread_sleep(struct helper_thread *h, int seconds);

#endif
