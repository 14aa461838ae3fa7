/* The public client: first connection with retries, and reconnecting with
 * bounded back-off when a connection dies.  With several targets
 * (hostname=A,B,...) a reconnect is a failover: it tries the next target of
 * the list first, wrapping around, and the requests that had no reply are
 * resent there (request.c, aio.c) exactly as after a reconnect to one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "util.h"

#define BACKOFF_FIRST_NS   (50 * 1000000ull)
#define BACKOFF_MAX_NS     (2000 * 1000000ull)
#define RETRY_FIRST_NS     (500 * 1000000ull)
#define RETRY_MAX_NS       (8000 * 1000000ull)
#define MAX_QUEUE_DEPTH    1024
/* With several targets, one connect attempt gets timeout / ntargets, but at
 * least this, so that a silent host cannot eat the whole budget. */
#define ATTEMPT_MIN_NS     (2000 * 1000000ull)

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
	struct retire        *retired;    /* teardown threads not yet joined */
	struct rb_aio_ctx    *aio;        /* asynchronous requests (aio.c) */
};

void
rb_opts_init(struct rb_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = RB_DEFAULT_PORT;
	o->queue_depth = RB_DEFAULT_QUEUE_DEPTH;
	o->max_io = RB_DEFAULT_MAX_IO;
	o->timeout_s = RB_DEFAULT_TIMEOUT_S;
	o->keepalive_s = RB_DEFAULT_KEEPALIVE_S;
	o->mr = RB_MR_WINDOW;
}

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Errors that another attempt cannot fix. */
static int
permanent(int r)
{
	return r == -ENOENT || r == -EACCES || r == -EPROTO || r == -ENODEV ||
	       r == -EINVAL || r == -EPERM || r == -ENOMEM;
}

static int
cfg_from_opts(struct rb_client *c, const struct rb_opts *o, int need_export)
{
	const char *why = "";

	if (o->ntargets > RB_MAX_TARGETS) {
		rb_log(RB_LOG_ERROR, "%u targets given, at most %u", o->ntargets,
		       RB_MAX_TARGETS);
		return -EINVAL;
	}
	if (o->ntargets == 0 &&
	    (o->host == NULL || strlen(o->host) >= sizeof(c->cfg.host))) {
		rb_log(RB_LOG_ERROR, "no target address given");
		return -EINVAL;
	}
	if (o->source != NULL && strlen(o->source) >= sizeof(c->cfg.source)) {
		rb_log(RB_LOG_ERROR, "source address '%s' is too long", o->source);
		return -EINVAL;
	}
	if (need_export && (o->export_name == NULL ||
			    rb_export_name_valid(o->export_name, &why) < 0)) {
		rb_log(RB_LOG_ERROR, "export name '%s': %s",
		       o->export_name ? o->export_name : "", o->export_name ? why : "missing");
		return -EINVAL;
	}
	if (o->queue_depth < 1 || o->queue_depth > MAX_QUEUE_DEPTH) {
		rb_log(RB_LOG_ERROR, "queue depth %u is not in 1..%u",
		       o->queue_depth, MAX_QUEUE_DEPTH);
		return -EINVAL;
	}
	if (o->max_io < 4096 || o->max_io % 4096 != 0 || o->max_io > (64u << 20)) {
		rb_log(RB_LOG_ERROR, "max-io %u is not a multiple of 4096 in 4K..64M",
		       o->max_io);
		return -EINVAL;
	}
	if (o->timeout_s == 0) {
		rb_log(RB_LOG_ERROR, "timeout must be at least 1 second");
		return -EINVAL;
	}
	memset(&c->cfg, 0, sizeof(c->cfg));
	if (o->ntargets > 0) {
		memcpy(c->targets, o->targets, o->ntargets * sizeof(o->targets[0]));
		c->ntargets = o->ntargets;
	} else {
		snprintf(c->targets[0].host, sizeof(c->targets[0].host), "%s", o->host);
		c->targets[0].port = o->port;
		c->ntargets = 1;
	}
	snprintf(c->cfg.host, sizeof(c->cfg.host), "%s", c->targets[0].host);
	c->cfg.port = c->targets[0].port;
	if (o->source != NULL)
		snprintf(c->cfg.source, sizeof(c->cfg.source), "%s", o->source);
	if (o->export_name != NULL)
		snprintf(c->cfg.export_name, sizeof(c->cfg.export_name), "%s",
			 o->export_name);
	c->cfg.queue_depth = o->queue_depth;
	c->cfg.max_io = o->max_io;
	c->cfg.keepalive_ns = (uint64_t)o->keepalive_s * 1000000000u;
	c->cfg.busy_poll = o->busy_poll;
	c->cfg.stats = &c->stats;
	c->cfg.mr_static = o->mr == RB_MR_STATIC;
	if (o->mr != RB_MR_WINDOW && o->mr != RB_MR_STATIC) {
		rb_log(RB_LOG_ERROR, "mr: unknown mode %d", o->mr);
		return -EINVAL;
	}
	c->timeout_ns = (uint64_t)o->timeout_s * 1000000000u;
	c->attempt_ns = c->timeout_ns / c->ntargets;
	if (c->attempt_ns < ATTEMPT_MIN_NS)
		c->attempt_ns = ATTEMPT_MIN_NS;
	c->retry = o->retry;
	if (need_export && o->secret_file != NULL) {
		char msg[512];

		if (rb_secret_load(o->secret_file, &c->secret, msg, sizeof(msg)) < 0) {
			rb_log(RB_LOG_ERROR, "%s", msg);
			return -EACCES;
		}
		c->cfg.secret = &c->secret;
	}
	return 0;
}

/* One connect attempt's deadline: the whole of it for a single target,
 * a share of it when other targets wait their turn. */
static uint64_t
attempt_deadline(const struct rb_client *c, uint64_t deadline_ns)
{
	uint64_t until;

	if (c->ntargets == 1)
		return deadline_ns;
	until = rb_now_ns() + c->attempt_ns;
	return until < deadline_ns ? until : deadline_ns;
}

/* Connect to target idx of the list.  With several targets the export
 * must be shared: a FLUSH acknowledged by one target promises nothing
 * about another's backend otherwise (docs/durability.md). */
static int
connect_to(struct rb_client *c, unsigned idx, int list_only, uint64_t deadline_ns,
	   struct rb_conn **out, char *errbuf)
{
	struct rb_conn_cfg cfg = c->cfg;
	struct rb_conn *conn;
	int r;

	snprintf(cfg.host, sizeof(cfg.host), "%s", c->targets[idx].host);
	cfg.port = c->targets[idx].port;
	r = rb_conn_create(&cfg, list_only, attempt_deadline(c, deadline_ns), &conn,
			   errbuf);
	if (r < 0)
		return r;
	if (!list_only && c->ntargets > 1 && !(conn->exp.flags & RB_EXP_SHARED)) {
		rb_seterr(errbuf, "export '%s' on %s:%u is not shared (no 'shared = "
			  "yes' in its [export]): a list of several targets "
			  "(hostname=A,B) needs a backend they all serve, since a "
			  "FLUSH acknowledged by one promises nothing about another",
			  cfg.export_name, cfg.host, cfg.port);
		rb_conn_unref(conn);
		return -EINVAL;
	}
	*out = conn;
	return 0;
}

/* The first connection: retry+1 rounds, each bounded by the timeout; a
 * round tries every target in list order. */
static int
first_connect(struct rb_client *c, int list_only, struct rb_conn **out)
{
	char errbuf[RB_MAX_TARGETS][RB_ERRBUF];
	uint64_t backoff = RETRY_FIRST_NS, round_end;
	unsigned attempt, i, npermanent;
	int r = -EIO, rs[RB_MAX_TARGETS];

	for (attempt = 0; attempt <= c->retry; attempt++) {
		if (attempt > 0) {
			rb_log(RB_LOG_DEBUG, "%s; retrying in %llu ms (%u left)",
			       errbuf[c->ntargets - 1],
			       (unsigned long long)(backoff / 1000000),
			       c->retry - attempt + 1);
			sleep_ns(backoff);
			backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
		}
		round_end = rb_now_ns() + c->timeout_ns;
		npermanent = 0;
		for (i = 0; i < c->ntargets; i++) {
			errbuf[i][0] = '\0';
			rs[i] = connect_to(c, i, list_only, round_end, out, errbuf[i]);
			if (rs[i] == 0) {
				c->cur = i;
				return 0;
			}
			if (c->ntargets > 1)
				rb_log(RB_LOG_ERROR, "target %u of %u: %s", i + 1,
				       c->ntargets, errbuf[i]);
			if (permanent(rs[i]))
				npermanent++;
		}
		if (npermanent == c->ntargets)
			break;
	}
	if (c->ntargets == 1) {
		rb_log(RB_LOG_ERROR, "%s", errbuf[0]);
		return rs[0];
	}
	rb_log(RB_LOG_ERROR, "none of the %u targets could be used", c->ntargets);
	r = rs[0];
	for (i = 1; i < c->ntargets; i++)
		if (rs[i] != r)
			r = -EIO;
	return r;
}

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
	r = cfg_from_opts(c, o, 1);
	if (r < 0)
		goto out_free;
	r = first_connect(c, 0, &c->conn);
	if (r < 0)
		goto out_free;
	desc_from_conn(&c->desc, c->conn);
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = c;
	return 0;

out_free:
	rb_secret_wipe(&c->secret);
	free(c);
	return r;
}

static void join_retired(struct rb_client *c, int all);

/* Every caller must have returned from its I/O. */
void
rb_client_close(struct rb_client *c)
{
	if (c == NULL)
		return;
	rb_aio_ctx_destroy(c->aio);
	if (c->conn != NULL)
		rb_conn_unref(c->conn);
	join_retired(c, 1);
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
}

/* A dead connection torn down off the request path.  The thread is
 * joinable, not detached: rb_client_close joins it, so none is still
 * returning through library code when the caller goes on (nbdkit unloads
 * the plugin right after its last .close). */
struct retire {
	struct rb_client *c;
	struct rb_conn   *conn;
	pthread_t         tid;
	int               done;     /* under c->lock: the thread is finishing */
	struct retire    *next;     /* on c->retired */
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
static void
join_retired(struct rb_client *c, int all)
{
	struct retire **pp, *rt, *joinable = NULL;

	pthread_mutex_lock(&c->lock);
	for (pp = &c->retired; (rt = *pp) != NULL;) {
		if (all || rt->done) {
			*pp = rt->next;
			rt->next = joinable;
			joinable = rt;
		} else {
			pp = &rt->next;
		}
	}
	pthread_mutex_unlock(&c->lock);
	while ((rt = joinable) != NULL) {
		joinable = rt->next;
		pthread_join(rt->tid, NULL);
		free(rt);
	}
}

/* Drop the client's reference to a dead connection off the request path:
 * tearing down a connection whose peer is gone can block in the kernel
 * CM, and that time must not count against the request's deadline. */
static void
retire(struct rb_client *c, struct rb_conn *conn)
{
	struct retire *rt;
	int r = -1;

	join_retired(c, 0);
	rt = calloc(1, sizeof(*rt));
	if (rt != NULL) {
		rt->c = c;
		rt->conn = conn;
		r = pthread_create(&rt->tid, NULL, retire_thread, rt);
		if (r == 0) {
			pthread_mutex_lock(&c->lock);
			rt->next = c->retired;
			c->retired = rt;
			pthread_mutex_unlock(&c->lock);
		} else {
			free(rt);
		}
	}
	if (r != 0)
		rb_conn_unref(conn);
}

/* A new connection must describe the same export we promised callers. */
static int
same_export(const struct rb_client *c, const struct rb_conn *conn, char *errbuf)
{
	const struct rb_export_info *e = &conn->exp;

	if (e->size != c->desc.size || e->max_io < c->desc.max_io ||
	    e->min_block > c->desc.min_block ||
	    (e->flags & RB_EXP_READ_ONLY) != (c->desc.flags & RB_EXP_READ_ONLY)) {
		rb_seterr(errbuf, "export '%s' changed across a reconnect (size, "
			  "block sizes or read-only)", c->cfg.export_name);
		return -EIO;
	}
	return 0;
}

/* Connect again until the deadline, with exponential back-off capped at
 * BACKOFF_MAX_NS between rounds.  A round tries every target once, the
 * next after `from` (the one that failed) first and `from` last; with one
 * target that is `from` alone.  Called by exactly one thread at a time. */
static struct rb_conn *
reconnect(struct rb_client *c, unsigned from, uint64_t deadline_ns,
	  unsigned *at, int *err)
{
	char errbuf[RB_ERRBUF] = "";
	uint64_t backoff = BACKOFF_FIRST_NS, now;
	unsigned k, i = from, nfinal;
	struct rb_conn *conn;
	int r = -EIO;

	for (;;) {
		nfinal = 0;
		for (k = 1; k <= c->ntargets; k++) {
			i = (from + k) % c->ntargets;
			r = connect_to(c, i, 0, deadline_ns, &conn, errbuf);
			if (r == 0) {
				r = same_export(c, conn, errbuf);
				if (r == 0)
					goto out_connected;
				rb_conn_unref(conn);
				nfinal++;       /* another attempt cannot fix it */
			} else if (permanent(r)) {
				nfinal++;
			}
			if (c->ntargets > 1)
				rb_log(RB_LOG_DEBUG, "failover: target %u of %u: %s",
				       i + 1, c->ntargets, errbuf);
			if (rb_now_ns() >= deadline_ns)
				break;
		}
		if (nfinal == c->ntargets)
			break;
		now = rb_now_ns();
		if (now + backoff >= deadline_ns)
			break;
		rb_log(RB_LOG_DEBUG, "reconnect: %s; next attempt in %llu ms",
		       errbuf, (unsigned long long)(backoff / 1000000));
		sleep_ns(backoff);
		backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
	}
	if (c->ntargets == 1)
		rb_log(RB_LOG_ERROR, "reconnect to %s:%u failed: %s",
		       c->targets[0].host, c->targets[0].port, errbuf);
	else
		rb_log(RB_LOG_ERROR, "failover from %s:%u failed: none of the %u "
		       "targets could be used within the timeout; last: %s", c->targets[from].host,
		       c->targets[from].port, c->ntargets, errbuf);
	*err = r == -ETIMEDOUT || !permanent(r) ? -EIO : r;
	return NULL;

out_connected:
	__atomic_add_fetch(&c->stats.reconnects, 1, __ATOMIC_RELAXED);
	if (i != from) {
		__atomic_add_fetch(&c->stats.failovers, 1, __ATOMIC_RELAXED);
		rb_log(RB_LOG_ERROR, "failed over from %s:%u to %s:%u (target %u of %u)",
		       c->targets[from].host, c->targets[from].port,
		       c->targets[i].host, c->targets[i].port, i + 1, c->ntargets);
	} else {
		rb_log(RB_LOG_ERROR, "reconnected to %s:%u", c->targets[i].host,
		       c->targets[i].port);
	}
	*at = i;
	return conn;
}

/* A live connection with a reference for the caller, or NULL and *err. */
struct rb_conn *
rb_client_get_conn(struct rb_client *c, uint64_t deadline_ns, int *err)
{
	struct rb_conn *conn, *old;
	unsigned from, at = 0;
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000u),
			       .tv_nsec = (long)(deadline_ns % 1000000000u) };

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
		pthread_mutex_unlock(&c->lock);

		if (old != NULL)
			retire(c, old);
		conn = reconnect(c, from, deadline_ns, &at, err);

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
	uint64_t deadline = rb_now_ns() + c->timeout_ns;
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
	r = cfg_from_opts(&c, o, 0);
	if (r < 0)
		return r;
	r = first_connect(&c, 1, &conn);
	if (r < 0)
		return r;
	r = rb_handshake_list(conn, rb_now_ns() + c.timeout_ns, cb, opaque, errbuf);
	if (r < 0 && errbuf[0] != '\0')
		rb_log(RB_LOG_ERROR, "%s", errbuf);
	rb_conn_unref(conn);
	return r;
}
