/* Dead connections torn down off the request path: tearing down a
 * connection whose peer is gone can block in the kernel CM, and that time
 * must not count against a request's deadline. */
#include <pthread.h>
#include <stdlib.h>

#include "client.h"

/* A dead connection torn down off the request path.  The thread is
 * joinable, not detached: rb_client_close joins it, so none is still
 * returning through library code when the caller goes on (nbdkit unloads
 * the plugin right after its last .close). */
struct retire {
	struct rb_client *c;
	struct rb_conn   *conn;
	pthread_t         tid;
	int               done;     /* under c->lock: the thread is finishing */
	LIST_ENTRY(retire) link;    /* on c->retired */
};

static void *
retire_thread(void *arg)
{
	struct retire *rt = arg;
	struct rb_client *c = rt->c;

	rb_conn_unref(rt->conn);
	pthread_mutex_lock(&c->lock);
	rt->done = 1;
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Join the teardown threads that are finishing (all: every one, waiting
 * for those still tearing down). */
void
rb_client_join_retired(struct rb_client *c, int all)
{
	LIST_HEAD(, retire) joinable = LIST_HEAD_INITIALIZER(joinable);
	struct retire *rt, *next;

	pthread_mutex_lock(&c->lock);
	for (rt = LIST_FIRST(&c->retired); rt != NULL; rt = next) {
		next = LIST_NEXT(rt, link);
		if (all || rt->done) {
			LIST_REMOVE(rt, link);
			LIST_INSERT_HEAD(&joinable, rt, link);
		}
	}
	pthread_mutex_unlock(&c->lock);
	while ((rt = LIST_FIRST(&joinable)) != NULL) {
		LIST_REMOVE(rt, link);
		pthread_join(rt->tid, NULL);
		free(rt);
	}
}

/* Drop the client's reference to a dead connection off the request path:
 * tearing down a connection whose peer is gone can block in the kernel
 * CM, and that time must not count against the request's deadline. */
void
rb_client_retire(struct rb_client *c, struct rb_conn *conn)
{
	struct retire *rt;
	int r = -1;

	rb_client_join_retired(c, 0);
	rt = calloc(1, sizeof(*rt));
	if (rt != NULL) {
		rt->c = c;
		rt->conn = conn;
		r = pthread_create(&rt->tid, NULL, retire_thread, rt);
		if (r == 0) {
			pthread_mutex_lock(&c->lock);
			LIST_INSERT_HEAD(&c->retired, rt, link);
			pthread_mutex_unlock(&c->lock);
		} else {
			free(rt);
		}
	}
	if (r != 0)
		rb_conn_unref(conn);
}
