/* Connecting: the first connection with retries, and reconnecting with
 * bounded back-off when a connection dies.  With several targets
 * (hostname=A,B,...) a reconnect is a failover: it tries the next target of
 * the list first, wrapping around, and the requests that had no reply are
 * resent there (request.c, aio.c) exactly as after a reconnect to one. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "deadline.h"
#include "util.h"

#define BACKOFF_FIRST_NS   (50 * 1000000ull)
#define BACKOFF_MAX_NS     (2000 * 1000000ull)
#define RETRY_FIRST_NS     (500 * 1000000ull)
#define RETRY_MAX_NS       (8000 * 1000000ull)

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

/* One connect attempt's deadline: the whole of it for a single target,
 * a share of it when other targets wait their turn. */
static uint64_t
attempt_deadline(const struct rb_client *c, uint64_t deadline_ns)
{
	uint64_t until;

	if (c->ntargets == 1)
		return deadline_ns;
	until = rb_deadline_after(c->attempt_ns);
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
	cfg.group = c->group;
	cfg.target_idx = idx;
	rb_group_target(c->group, idx, &cfg.group_gen);
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
int
rb_client_first_connect(struct rb_client *c, int list_only, struct rb_conn **out)
{
	char errbuf[RB_MAX_TARGETS][RB_ERRBUF];
	uint64_t backoff = RETRY_FIRST_NS, round_end;
	unsigned attempt, i, k, first, npermanent;
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
		round_end = rb_deadline_after(c->timeout_ns);
		npermanent = 0;
		/* List order, from where the device's other connections are. */
		first = rb_group_target(c->group, 0, NULL);
		for (k = 0; k < c->ntargets; k++) {
			i = (first + k) % c->ntargets;
			errbuf[i][0] = '\0';
			rs[i] = connect_to(c, i, list_only, round_end, out, errbuf[i]);
			if (rs[i] == 0) {
				c->cur = i;
				rb_group_moved(c->group, i);
				return 0;
			}
			if (c->ntargets > 1)
				rb_log(RB_LOG_WARN, "target %u of %u: %s", i + 1,
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
 * BACKOFF_MAX_NS between rounds.  A round tries every target once, `first`
 * first (the next after `from`, the one that failed, or where the device's
 * other connections went); with one target that is `from` alone.  Called by
 * exactly one thread at a time. */
struct rb_conn *
rb_client_reconnect(struct rb_client *c, unsigned from, unsigned first,
		    uint64_t deadline_ns, unsigned *at, int *err)
{
	char errbuf[RB_ERRBUF] = "";
	uint64_t backoff = BACKOFF_FIRST_NS, now;
	unsigned k, i = from, nfinal;
	struct rb_conn *conn;
	int r = -EIO;

	for (;;) {
		nfinal = 0;
		for (k = 0; k < c->ntargets; k++) {
			i = (first + k) % c->ntargets;
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
	rb_group_moved(c->group, i);
	if (i != from) {
		__atomic_add_fetch(&c->stats.failovers, 1, __ATOMIC_RELAXED);
		rb_log(RB_LOG_INFO, "failed over from %s:%u to %s:%u (target %u of %u)",
		       c->targets[from].host, c->targets[from].port,
		       c->targets[i].host, c->targets[i].port, i + 1, c->ntargets);
	} else {
		rb_log(RB_LOG_INFO, "reconnected to %s:%u", c->targets[i].host,
		       c->targets[i].port);
	}
	*at = i;
	return conn;
}
