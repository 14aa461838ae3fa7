/* The client's private state, shared by the files that make up the public
 * client: client.c (open/close, a live connection for each request),
 * opts.c (rb_opts checked into a connection config), reconnect.c (the
 * first connection with retries, reconnect and failover with back-off) and
 * retire.c (dead connections torn down off the request path).  The rest of
 * the library sees struct rb_client only through internal.h's accessors. */
#ifndef RDMABLK_INITIATOR_CLIENT_H
#define RDMABLK_INITIATOR_CLIENT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>

#include "internal.h"

struct retire;

struct rb_client {
	struct rb_conn_cfg    cfg;
	uint64_t              timeout_ns;
	unsigned              retry;
	struct rb_export_desc desc;
	struct rb_stats       stats;
	struct rb_secret      secret;     /* wiped in rb_client_close */
	struct rb_target      targets[RB_MAX_TARGETS];  /* failover order */
	unsigned              ntargets;   /* >= 1 */
	uint64_t              attempt_ns; /* one connect attempt, ntargets > 1 */

	pthread_mutex_t       lock;       /* conn, connecting */
	pthread_cond_t        cond;       /* a connect attempt finished */
	struct rb_conn       *conn;       /* current; may be dead */
	unsigned              cur;        /* the target conn is (was) on */
	int                   connecting;
	LIST_HEAD(, retire)   retired;    /* teardown threads not yet joined */
	struct rb_aio_ctx    *aio;        /* asynchronous requests (aio.c) */
	struct rb_group      *group;      /* ntargets > 1: the device's (group.c) */
};

/* opts.c: check o and fill c's config, targets and timeouts (need_export:
 * a data connection, not a LIST).  0 or a negative errno, logged. */
int rb_client_cfg_from_opts(struct rb_client *c, const struct rb_opts *o,
			    int need_export);

/* reconnect.c: the first connection, retry+1 rounds over every target;
 * sets c->cur.  0 or a negative errno, logged. */
int rb_client_first_connect(struct rb_client *c, int list_only,
			    struct rb_conn **out);
/* Connect again from target `from` (trying `first` first) until
 * deadline_ns, failing over along the list; the new connection and *at,
 * or NULL and *err.  Called by one
 * thread at a time (c->connecting). */
struct rb_conn *rb_client_reconnect(struct rb_client *c, unsigned from, unsigned first,
				    uint64_t deadline_ns, unsigned *at, int *err);

/* retire.c: drop the client's reference to a dead connection on a thread
 * of its own; join the teardown threads that finished (all: every one). */
void rb_client_retire(struct rb_client *c, struct rb_conn *conn);
void rb_client_join_retired(struct rb_client *c, int all);

#endif
