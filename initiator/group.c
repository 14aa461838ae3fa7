/* The connections of one device move together (docs/rbd.md, Failover).
 *
 * Each ublk queue and each NBD connection has a client of its own; with
 * several targets (hostname=A,B) each would fail over on its own, and one
 * left on A would keep A's export busy, and so A the image's lock, while
 * the others' writes wait at B.  The clients of one process that name the
 * same export on the same target list form a group: the group remembers
 * the target its members last connected to, and a member whose connection
 * is on another one leaves it (timer.c) and reconnects there first
 * (client.c, reconnect.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include "client.h"

struct rb_group {
	LIST_ENTRY(rb_group) link;
	char     key[RB_EXPORT_NAME_MAX + 1 + RB_MAX_TARGETS * 72];
	unsigned refs;
	unsigned cur;               /* the target its members go to */
	uint64_t gen;               /* bumped when cur changes */
	LIST_HEAD(, rb_group_watch) watchers;   /* kicked when it does */
};

static pthread_mutex_t groups_mu = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, rb_group) groups = LIST_HEAD_INITIALIZER(groups);

static void
group_key(const struct rb_client *c, char *key, size_t len)
{
	size_t n;
	unsigned i;

	n = (size_t)snprintf(key, len, "%s", c->cfg.export_name);
	for (i = 0; i < c->ntargets && n < len; i++)
		n += (size_t)snprintf(key + n, len - n, " %s:%u", c->targets[i].host,
				      c->targets[i].port);
}

struct rb_group *
rb_group_join(const struct rb_client *c, unsigned cur)
{
	char key[sizeof(((struct rb_group *)0)->key)];
	struct rb_group *g;

	group_key(c, key, sizeof(key));
	pthread_mutex_lock(&groups_mu);
	LIST_FOREACH(g, &groups, link)
		if (strcmp(g->key, key) == 0)
			break;
	if (g == NULL) {
		g = calloc(1, sizeof(*g));
		if (g != NULL) {
			memcpy(g->key, key, sizeof(g->key));
			LIST_INIT(&g->watchers);
			g->cur = cur;
			LIST_INSERT_HEAD(&groups, g, link);
		}
	}
	if (g != NULL)
		g->refs++;
	pthread_mutex_unlock(&groups_mu);
	if (g == NULL)
		rb_log(RB_LOG_WARN, "out of memory: this connection fails over on its own");
	return g;
}

void
rb_group_leave(struct rb_group *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&groups_mu);
	if (--g->refs == 0) {
		LIST_REMOVE(g, link);
		free(g);
	}
	pthread_mutex_unlock(&groups_mu);
}

unsigned
rb_group_target(struct rb_group *g, unsigned fallback, uint64_t *gen)
{
	unsigned cur = fallback;

	if (g == NULL)
		return cur;
	pthread_mutex_lock(&groups_mu);
	cur = g->cur;
	if (gen != NULL)
		*gen = g->gen;
	pthread_mutex_unlock(&groups_mu);
	return cur;
}

int
rb_group_left(struct rb_group *g, unsigned idx, uint64_t seen_gen)
{
	uint64_t gen;

	return g != NULL && rb_group_target(g, idx, &gen) != idx && gen != seen_gen;
}

void
rb_group_moved(struct rb_group *g, unsigned idx)
{
	struct rb_group_watch *w;
	uint64_t one = 1;

	if (g == NULL)
		return;
	pthread_mutex_lock(&groups_mu);
	if (g->cur != idx) {
		g->cur = idx;
		g->gen++;
		LIST_FOREACH(w, &g->watchers, link)
			if (write(w->fd, &one, sizeof(one)) < 0)
				rb_log(RB_LOG_DEBUG, "kick a housekeeping thread: %s",
				       strerror(errno));
	}
	pthread_mutex_unlock(&groups_mu);
}

void
rb_group_watch(struct rb_group *g, struct rb_group_watch *w, int fd)
{
	if (g == NULL)
		return;
	w->fd = fd;
	pthread_mutex_lock(&groups_mu);
	LIST_INSERT_HEAD(&g->watchers, w, link);
	pthread_mutex_unlock(&groups_mu);
}

void
rb_group_unwatch(struct rb_group *g, struct rb_group_watch *w)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&groups_mu);
	LIST_REMOVE(w, link);
	pthread_mutex_unlock(&groups_mu);
}
