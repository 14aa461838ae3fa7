/* Live statistics (target/core/stats.h): the counters every loop updates and
 * their aggregation.  Rendering them for the admin socket is
 * stats-render.c's job. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loop.h"
#include "stats.h"
#include "target.h"

/* ---- counters ---- */

void
stats_io_add(struct stats_io *dst, const struct stats_io *src)
{
	unsigned i, b;

	for (i = 0; i < RB_OP__COUNT; i++) {
		struct stats_op *d = &dst->op[i];
		const struct stats_op *s = &src->op[i];

		d->count += s->count;
		d->bytes += s->bytes;
		d->errors += s->errors;
		d->sum_ns += s->sum_ns;
		if (s->max_ns > d->max_ns)
			d->max_ns = s->max_ns;
		for (b = 0; b < STATS_NBUCKETS; b++)
			d->hist[b] += s->hist[b];
	}
	for (i = 0; i < RB_OP__COUNT; i++) {
		unsigned st;

		for (st = 0; st < STATS_STAGE__COUNT; st++) {
			struct stats_hist *d = &dst->stage[i][st];
			const struct stats_hist *s = &src->stage[i][st];

			d->count += s->count;
			d->sum_ns += s->sum_ns;
			for (b = 0; b < STATS_NBUCKETS; b++)
				d->hist[b] += s->hist[b];
		}
	}
	for (i = 0; i < STATS_ERR__COUNT; i++)
		dst->errors_by[i] += src->errors_by[i];
	dst->reads_cached += src->reads_cached;
	dst->writes_cached += src->writes_cached;
}


uint64_t
stats_percentile_us(const struct stats_op *o, unsigned pct)
{
	uint64_t need, seen = 0, max_us, bound;
	unsigned b;

	if (o->count == 0)
		return 0;
	/* The rank of the percentile, rounded up: p50 of 3 is the 2nd. */
	need = (o->count * pct + 99) / 100;
	if (need == 0)
		need = 1;
	max_us = (o->max_ns + 999) / 1000;
	for (b = 0; b < STATS_NBUCKETS; b++) {
		seen += o->hist[b];
		if (seen >= need)
			break;
	}
	bound = b >= STATS_NBUCKETS - 1 ? max_us : 1ull << b;
	return bound < max_us ? bound : max_us;
}

const char *const stats_refusal_names[STATS_REFUSED__COUNT] = {
	[STATS_REFUSED_BAD_PRIVATE_DATA] = "bad_private_data",
	[STATS_REFUSED_ADDRESS]          = "address_not_allowed",
	[STATS_REFUSED_UNKNOWN_EXPORT]   = "unknown_export",
	[STATS_REFUSED_BUSY]             = "busy",
	[STATS_REFUSED_SHUTTING_DOWN]    = "shutting_down",
	[STATS_REFUSED_AUTH]             = "auth_failure",
	[STATS_REFUSED_PROTOCOL]         = "protocol_error",
	[STATS_REFUSED_RESOURCES]        = "no_resources",
	[STATS_REFUSED_CONN_LIMIT]       = "connection_limit",
	[STATS_REFUSED_HANDSHAKE_LIMIT]  = "handshake_limit",
	[STATS_REFUSED_ADDRESS_LIMIT]    = "address_limit",
};

void
stats_count(struct target *t, uint64_t *counter)
{
	target_lock(t);
	(*counter)++;
	target_unlock(t);
}

/* One event of kind `kind` in counters[0..n-1], under t->lock (a kind out
 * of range is not counted). */
static void
count_kind(struct target *t, uint64_t *counters, unsigned n, unsigned kind)
{
	if (kind < n)
		stats_count(t, &counters[kind]);
}

void
stats_refused(struct target *t, enum stats_refusal why)
{
	count_kind(t, t->stats.refused, STATS_REFUSED__COUNT, (unsigned)why);
}

void
stats_refused_status(struct target *t, uint16_t status, int at_hello)
{
	enum stats_refusal why;

	switch (status) {
	case RB_EPROTO:
	case RB_EINVAL:
		why = at_hello ? STATS_REFUSED_PROTOCOL : STATS_REFUSED_BAD_PRIVATE_DATA;
		break;
	case RB_EACCES:    why = STATS_REFUSED_ADDRESS; break;
	case RB_ENOENT:    why = STATS_REFUSED_UNKNOWN_EXPORT; break;
	case RB_EBUSY:     why = STATS_REFUSED_BUSY; break;
	case RB_ESHUTDOWN: why = STATS_REFUSED_SHUTTING_DOWN; break;
	default:           why = STATS_REFUSED_RESOURCES; break;
	}
	stats_refused(t, why);
}

const char *const stats_revocation_names[STATS_REVOKED__COUNT] = {
	[STATS_REVOKED_ADDRESS] = "address_not_allowed",
	[STATS_REVOKED_SECRET]  = "secret_changed",
	[STATS_REVOKED_SIZE]    = "size_shrunk",
};

const char *const stats_reload_names[STATS_RELOAD__COUNT] = {
	[STATS_RELOAD_APPLIED]  = "applied",
	[STATS_RELOAD_REJECTED] = "rejected",
};

const char *const stats_probe_names[STATS_PROBE__COUNT] = {
	[STATS_PROBE_POSTED]     = "posted",
	[STATS_PROBE_FAILED]     = "failed",
	[STATS_PROBE_UNANSWERED] = "unanswered",
};

const char *const stats_stage_names[STATS_STAGE__COUNT] = {
	[STATS_STAGE_DATA]          = "data",
	[STATS_STAGE_BACKING_WRITE] = "backing_write",
	[STATS_STAGE_FLUSH]         = "flush",
	[STATS_STAGE_REPLY]         = "reply",
};

const char *const stats_error_names[STATS_ERR__COUNT] = {
	[STATS_ERR_IO]       = "io",
	[STATS_ERR_NOSPC]    = "nospc",
	[STATS_ERR_INVALID]  = "invalid",
	[STATS_ERR_PERM]     = "perm",
	[STATS_ERR_NOTSUP]   = "notsup",
	[STATS_ERR_TIMEDOUT] = "timedout",
	[STATS_ERR_SHUTDOWN] = "shutdown",
	[STATS_ERR_OTHER]    = "other",
};

void
stats_revoked(struct target *t, enum stats_revocation why)
{
	count_kind(t, t->stats.revoked, STATS_REVOKED__COUNT, (unsigned)why);
}

void
stats_export_gone(struct target *t, struct export *e)
{
	stats_io_add(&t->stats.gone, &e->stats);
}
