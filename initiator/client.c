/* The public client: open (the first connection, reconnect.c), close, and
 * a live connection for each request, reconnecting when the current one
 * died (one thread connects, the others wait) and resending what was never
 * answered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "deadline.h"
#include "util.h"

static void
desc_from_conn(struct rb_export_desc *d, const struct rb_conn *conn)
{
	memset(d, 0, sizeof(*d));
	d->size = conn->exp.size;
	d->flags = conn->exp.flags;
	d->min_block = conn->exp.min_block;
	d->pref_block = conn->exp.pref_block;
	d->max_io = conn->exp.max_io;
	d->inline_max = conn->exp.inline_max;
	d->queue_depth = conn->exp.queue_depth;
	snprintf(d->description, sizeof(d->description), "%s", conn->exp.description);
}

int
rb_client_open(const struct rb_opts *o, struct rb_client **out)
{
	struct rb_client *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;
	int r;

	if (c == NULL) {
		rb_log(RB_LOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	LIST_INIT(&c->retired);
	r = rb_client_cfg_from_opts(c, o, 1);
	if (r < 0)
		goto out_free;
	if (c->ntargets > 1)
		c->group = rb_group_join(c, 0);
	r = rb_client_first_connect(c, 0, &c->conn);
	if (r < 0)
		goto out_leave;
	desc_from_conn(&c->desc, c->conn);
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = c;
	return 0;

out_leave:
	rb_group_leave(c->group);
out_free:
	rb_secret_wipe(&c->secret);
	free(c);
	return r;
}

/* Every caller must have returned from its I/O. */
void
rb_client_close(struct rb_client *c)
{
	if (c == NULL)
		return;
	rb_aio_ctx_destroy(c->aio);
	if (c->conn != NULL)
		rb_conn_unref(c->conn);
	rb_client_join_retired(c, 1);
	rb_group_leave(c->group);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	rb_secret_wipe(&c->secret);
	free(c);
}

const struct rb_export_desc *
rb_client_export(const struct rb_client *c)
{
	return &c->desc;
}

void
rb_client_stats(struct rb_client *c, struct rb_stats *s)
{
	s->requests = __atomic_load_n(&c->stats.requests, __ATOMIC_RELAXED);
	s->resent = __atomic_load_n(&c->stats.resent, __ATOMIC_RELAXED);
	s->reconnects = __atomic_load_n(&c->stats.reconnects, __ATOMIC_RELAXED);
	s->failovers = __atomic_load_n(&c->stats.failovers, __ATOMIC_RELAXED);
	s->copy_ns = __atomic_load_n(&c->stats.copy_ns, __ATOMIC_RELAXED);
	s->copy_bytes = __atomic_load_n(&c->stats.copy_bytes, __ATOMIC_RELAXED);
	s->keepalives = __atomic_load_n(&c->stats.keepalives, __ATOMIC_RELAXED);
	s->leader_sleeps = __atomic_load_n(&c->stats.leader_sleeps, __ATOMIC_RELAXED);
	s->follower_wakes = __atomic_load_n(&c->stats.follower_wakes, __ATOMIC_RELAXED);
	s->handoffs = __atomic_load_n(&c->stats.handoffs, __ATOMIC_RELAXED);
	s->empty_event_reads = __atomic_load_n(&c->stats.empty_event_reads, __ATOMIC_RELAXED);
	s->pool_bytes = __atomic_load_n(&c->stats.pool_bytes, __ATOMIC_RELAXED);
	s->inline_read_bytes = __atomic_load_n(&c->stats.inline_read_bytes, __ATOMIC_RELAXED);
	s->imm_read_replies = __atomic_load_n(&c->stats.imm_read_replies, __ATOMIC_RELAXED);
}

/* A live connection with a reference for the caller, or NULL and *err. */
struct rb_conn *
rb_client_get_conn(struct rb_client *c, uint64_t deadline_ns, int *err)
{
	struct rb_conn *conn, *old;
	unsigned from, first, at = 0;
	struct timespec ts = rb_deadline_timespec(deadline_ns);

	pthread_mutex_lock(&c->lock);
	for (;;) {
		conn = c->conn;
		if (conn != NULL && !__atomic_load_n(&conn->dead, __ATOMIC_ACQUIRE)) {
			rb_conn_ref(conn);
			pthread_mutex_unlock(&c->lock);
			return conn;
		}
		if (c->connecting) {
			if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT) {
				pthread_mutex_unlock(&c->lock);
				rb_log(RB_LOG_ERROR, "%s:%u: not reconnected within the "
				       "timeout", c->targets[c->cur].host,
				       c->targets[c->cur].port);
				*err = -EIO;
				return NULL;
			}
			continue;
		}
		old = c->conn;
		c->conn = NULL;
		c->connecting = 1;
		from = c->cur;
		/* Where the device's other connections went, else the next. */
		first = rb_group_target(c->group, from, NULL);
		if (first == from)
			first = (from + 1) % c->ntargets;
		pthread_mutex_unlock(&c->lock);

		if (old != NULL) {
			/* Its QP is in the error state (the fence): wait until
			 * none of its unanswered writes can still start at
			 * its target before anything is resent (ttl.c). */
			rb_hold_until(rb_conn_hold_ns(old), old->cfg.host);
			rb_client_retire(c, old);
		}
		conn = rb_client_reconnect(c, from, first, deadline_ns, &at, err);

		pthread_mutex_lock(&c->lock);
		c->connecting = 0;
		c->conn = conn;
		if (conn != NULL)
			c->cur = at;
		pthread_cond_broadcast(&c->cond);
		if (conn == NULL) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
	}
}

uint64_t
rb_client_timeout_ns(const struct rb_client *c)
{
	return c->timeout_ns;
}

void
rb_client_count_resent(struct rb_client *c)
{
	__atomic_add_fetch(&c->stats.resent, 1, __ATOMIC_RELAXED);
}

struct rb_aio_ctx **
rb_client_aio(struct rb_client *c)
{
	return &c->aio;
}

int
rb_client_submit(struct rb_client *c, struct rb_io *io)
{
	uint64_t deadline = rb_deadline_after(c->timeout_ns);
	struct rb_conn *conn;
	int r;

	for (;;) {
		conn = rb_client_get_conn(c, deadline, &r);
		if (conn == NULL)
			return r;
		r = rb_conn_request(conn, io, deadline);
		rb_conn_unref(conn);
		if (r != -EAGAIN)
			return r;
		/* Never acknowledged: resend on a new connection. */
		rb_client_count_resent(c);
		if (rb_now_ns() >= deadline) {
			rb_log(RB_LOG_ERROR, "%s %u@%llu: connection lost and not "
			       "restored within the timeout", rb_opcode_name(io->opcode),
			       io->length, (unsigned long long)io->offset);
			return -EIO;
		}
	}
}

int
rb_list_exports(const struct rb_opts *o, rb_list_fn *cb, void *opaque)
{
	struct rb_client c;
	struct rb_conn *conn;
	char errbuf[RB_ERRBUF] = "";
	int r;

	memset(&c, 0, sizeof(c));
	r = rb_client_cfg_from_opts(&c, o, 0);
	if (r < 0)
		return r;
	r = rb_client_first_connect(&c, 1, &conn);
	if (r < 0)
		return r;
	r = rb_handshake_list(conn, rb_deadline_after(c.timeout_ns), cb, opaque, errbuf);
	if (r < 0 && errbuf[0] != '\0')
		rb_log(RB_LOG_ERROR, "%s", errbuf);
	rb_conn_unref(conn);
	return r;
}
