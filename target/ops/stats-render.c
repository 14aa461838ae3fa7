/* Live statistics (target/core/stats.h): the two renderings served over the
 * admin socket, JSON and a human table.  Rendering runs on loop 0 with the
 * other loops stopped between rounds (loop.h), so it sees a consistent
 * snapshot of every loop's counters; only an RBD export's lock figures come
 * from its lock thread, under its mutex. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn/conn.h"
#include "core/loop.h"
#include "core/target.h"
#include "rbd/rbd.h"
#include "sbuf.h"
#include "stats-snapshot.h"

/* ---- snapshots ---- */

/* Counters by reason (refusals, revocations): their sum, and the two
 * renderings, a JSON member and a clause of the human table's line. */
static uint64_t
counts_total(const uint64_t *v, unsigned n)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		sum += v[i];
	return sum;
}

/* "KEY": {["total": N, ]"name": N, ...}: the total only for counters of
 * reasons, each event counted under one. */
static void
json_counts(struct sbuf *b, const char *key, const char *const *names,
	    const uint64_t *v, unsigned n, int total)
{
	unsigned i;

	sb_printf(b, "  \"%s\": {", key);
	if (total)
		sb_printf(b, "\"total\": %llu, ", (unsigned long long)counts_total(v, n));
	for (i = 0; i < n; i++)
		sb_printf(b, "%s\"%s\": %llu", i ? ", " : "", names[i],
			  (unsigned long long)v[i]);
	sb_printf(b, "},\n");
}

/* "LABEL: N name, N name, ..." with every counter. */
static void
human_fields(struct sbuf *b, const char *label, const char *const *names,
	     const uint64_t *v, unsigned n)
{
	unsigned i;

	sb_printf(b, "%s:", label);
	for (i = 0; i < n; i++)
		sb_printf(b, "%s %llu %s", i ? "," : "", (unsigned long long)v[i], names[i]);
}

/* "LABEL N, reason N, ..." with only the reasons that occurred. */
static void
human_counts(struct sbuf *b, const char *label, const char *const *names,
	     const uint64_t *v, unsigned n)
{
	unsigned i;

	sb_printf(b, "%s %llu", label, (unsigned long long)counts_total(v, n));
	for (i = 0; i < n; i++)
		if (v[i] != 0)
			sb_printf(b, ", %s %llu", names[i], (unsigned long long)v[i]);
}

/* ---- JSON ---- */

static void
json_io(struct sbuf *b, const struct stats_io *s, uint64_t in_flight, const char *ind)
{
	const struct stats_op *o = s->op;
	uint64_t errors = 0;
	unsigned i;

	for (i = 0; i < RB_OP__COUNT; i++)
		errors += o[i].errors;
	sb_printf(b, "\"reads\": %llu, \"writes\": %llu, \"flushes\": %llu, "
		  "\"trims\": %llu, \"zeroes\": %llu, \"nops\": %llu, \"block_statuses\": %llu,\n",
		  (unsigned long long)o[RB_OP_READ].count,
		  (unsigned long long)o[RB_OP_WRITE].count,
		  (unsigned long long)o[RB_OP_FLUSH].count,
		  (unsigned long long)o[RB_OP_TRIM].count,
		  (unsigned long long)o[RB_OP_WRITE_ZEROES].count,
		  (unsigned long long)o[RB_OP_NOP].count,
		  (unsigned long long)o[RB_OP_BLOCK_STATUS].count);
	sb_printf(b, "%s\"bytes_read\": %llu, \"bytes_written\": %llu, "
		  "\"bytes_trimmed\": %llu, \"bytes_zeroed\": %llu,\n", ind,
		  (unsigned long long)o[RB_OP_READ].bytes,
		  (unsigned long long)o[RB_OP_WRITE].bytes,
		  (unsigned long long)o[RB_OP_TRIM].bytes,
		  (unsigned long long)o[RB_OP_WRITE_ZEROES].bytes);
	sb_printf(b, "%s\"errors\": %llu, \"in_flight\": %llu, \"reads_cached\": %llu, "
		  "\"writes_cached\": %llu,\n", ind, (unsigned long long)errors,
		  (unsigned long long)in_flight, (unsigned long long)s->reads_cached,
		  (unsigned long long)s->writes_cached);
	sb_printf(b, "%s\"latency_us\": {", ind);
	for (i = 0; i < RB_OP__COUNT; i++)
		sb_printf(b, "%s\n%s  \"%s\": {\"count\": %llu, \"errors\": %llu, "
			  "\"p50\": %llu, \"p99\": %llu, \"max\": %llu, \"sum\": %llu}",
			  i ? "," : "", ind, stats_op_names[i],
			  (unsigned long long)o[i].count, (unsigned long long)o[i].errors,
			  (unsigned long long)stats_percentile_us(&o[i], 50),
			  (unsigned long long)stats_percentile_us(&o[i], 99),
			  (unsigned long long)((o[i].max_ns + 999) / 1000),
			  (unsigned long long)(o[i].sum_ns / 1000));
	sb_printf(b, "\n%s}", ind);
}

/* "loops": each event loop's connections and backing jobs. */
static void
loops_json(struct target *t, struct sbuf *b)
{
	struct ioq_stats st;
	unsigned i;

	sb_printf(b, "  \"loops\": [");
	for (i = 0; i < t->nloops; i++) {
		ioq_get_stats(t->loops[i]->ioq, &st);
		sb_printf(b, "%s{\"loop\": %u, \"connections\": %u, \"backing_jobs\": %llu}",
			  i ? ", " : "", i, t->loops[i]->nconns,
			  (unsigned long long)(st.uring_jobs + st.worker_jobs));
	}
	sb_printf(b, "],\n");
}

/* One "loop N: ..." line each, with more than one loop. */
static void
loops_human(struct target *t, struct sbuf *b)
{
	struct ioq_stats st;
	unsigned i;

	for (i = 0; t->nloops > 1 && i < t->nloops; i++) {
		ioq_get_stats(t->loops[i]->ioq, &st);
		sb_printf(b, "loop %u: %u connections, %llu backing jobs\n", i,
			  t->loops[i]->nconns,
			  (unsigned long long)(st.uring_jobs + st.worker_jobs));
	}
}

/* Where backing I/O ran: the loops' io_uring or worker threads, summed
 * over the loops (loops_json lists each). */
static void
json_backing_io(struct target *t, struct sbuf *b)
{
	struct ioq_stats st;
	unsigned inflight, peak;

	loops_ioq_stats(t, &st, &inflight, &peak);
	sb_printf(b, "  \"backing_io\": {\"engine\": \"%s\", \"uring_jobs\": %llu, "
		  "\"uring_resubmits\": %llu, \"uring_submit_calls\": %llu, "
		  "\"worker_jobs\": %llu, \"in_flight\": %u, "
		  "\"discard_zero_peak_per_connection\": %u},\n",
		  ioq_engine_name(ioq_engine(t->loops[0]->ioq)), (unsigned long long)st.uring_jobs,
		  (unsigned long long)st.uring_resubmits, (unsigned long long)st.submit_calls,
		  (unsigned long long)st.worker_jobs, inflight, peak);
}

/* ", \"lock\": {...}, \"reopens\": N, \"fenced\": S"; nothing for a file export. */
static void
json_rbd_lock(struct sbuf *b, const struct export *e)
{
	struct rbd_stats st;

	if (!stats_rbd_figures(e, &st))
		return;
	sb_printf(b, ",\n      \"lock\": {\"state\": \"%s\", \"acquired\": %llu, "
		  "\"takeovers\": %llu, \"lost\": %llu, \"breaks\": %llu},\n"
		  "      \"reopens\": %llu, \"fenced\": ",
		  stats_imglock_state_name(st.lock.state), (unsigned long long)st.lock.acquired,
		  (unsigned long long)st.lock.takeovers, (unsigned long long)st.lock.lost,
		  (unsigned long long)st.lock.breaks, (unsigned long long)st.reopens);
	sb_json_str(b, st.fenced);
}

static void
json_render(struct target *t, struct sbuf *b)
{
	struct stats_io io;
	uint64_t inf;
	struct export *e;
	struct conn *c;
	unsigned li;
	int first;

	sb_printf(b, "{\n  \"version\": 1,\n  \"pid\": %d,\n  \"uptime_s\": %llu,\n"
		  "  \"stats\": %s,\n", (int)getpid(),
		  (unsigned long long)((rb_now_ns() - t->stats.start_ns) / 1000000000u),
		  t->cfg->stats ? "true" : "false");
	sb_printf(b, "  \"connections\": {\"current\": %u, \"handshakes\": %u, "
		  "\"accepted\": %llu, \"closed\": %llu},\n", t->nconns, t->nhandshakes,
		  (unsigned long long)t->stats.accepted, (unsigned long long)t->stats.closed);
	json_counts(b, "refused", stats_refusal_names, t->stats.refused, STATS_REFUSED__COUNT, 1);
	json_counts(b, "revoked", stats_revocation_names, t->stats.revoked, STATS_REVOKED__COUNT, 1);
	json_counts(b, "reloads", stats_reload_names, t->stats.reloads, STATS_RELOAD__COUNT, 0);
	json_counts(b, "liveness_probes", stats_probe_names, t->stats.probes,
		    STATS_PROBE__COUNT, 0);
	json_backing_io(t, b);
	loops_json(t, b);

	stats_total_snapshot(t, &io, &inf);
	sb_printf(b, "  \"total\": {\n    ");
	json_io(b, &io, inf, "    ");
	sb_printf(b, "\n  },\n  \"exports\": [");

	first = 1;
	STAILQ_FOREACH(e, &t->exports, link) {
		struct flusher_stats fs;

		export_flusher_stats(e, &fs);
		stats_export_snapshot(t, e, &io, &inf);
		sb_printf(b, "%s\n    {\"name\": ", first ? "" : ",");
		sb_json_str(b, e->cfg->name);
		sb_printf(b, ", \"path\": ");
		sb_json_str(b, e->cfg->path);
		sb_printf(b, ", \"removed\": %s, \"state\": \"%s\", \"failure\": ",
			  e->removed ? "true" : "false",
			  flusher_failed(e->flusher) ? "failed" : "ok");
		sb_json_str(b, flusher_failure(e->flusher));
		sb_printf(b, ", \"connections\": %u, \"sessions\": %llu,\n      ", e->nconns,
			  (unsigned long long)e->sessions);
		json_io(b, &io, inf, "      ");
		sb_printf(b, ",\n      \"group_commit\": {\"syncs\": %llu, "
			  "\"requests_covered\": %llu, \"max_batch\": %llu, \"errors\": %llu}",
			  (unsigned long long)fs.syncs, (unsigned long long)fs.jobs,
			  (unsigned long long)fs.max_batch, (unsigned long long)fs.errors);
		json_rbd_lock(b, e);
		sb_printf(b, "}");
		first = 0;
	}
	sb_printf(b, "%s],\n  \"connection_list\": [", first ? "" : "\n  ");

	first = 1;
	FOR_EACH_CONN(t, li, c) {
		sb_printf(b, "%s\n    {\"id\": %llu, \"loop\": %u, \"peer\": ",
			  first ? "" : ",", (unsigned long long)c->id, li);
		sb_json_str(b, c->peer);
		sb_printf(b, ", \"export\": ");
		if (c->rq.exp != NULL)
			sb_json_str(b, c->rq.exp->cfg->name);
		else
			sb_printf(b, "null");
		sb_printf(b, ", \"state\": \"%s\", \"queue_depth\": %u,\n      ",
			  conn_state_name(c->state), c->qd);
		json_io(b, &c->rq.stats, c->rq.credits_used, "      ");
		sb_printf(b, "}");
		first = 0;
	}
	sb_printf(b, "%s]\n}\n", first ? "" : "\n  ");
}

/* ---- the human table ---- */

static const char *
human_bytes(uint64_t v, char *buf, size_t size)
{
	static const char units[] = "KMGTPE";
	double d = (double)v;
	int u = -1;

	if (v < 1024) {
		snprintf(buf, size, "%llu", (unsigned long long)v);
		return buf;
	}
	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f%c", d, units[u]);
	return buf;
}

static void
human_io_row(struct sbuf *b, const char *name, const struct stats_io *s,
	     uint64_t in_flight)
{
	const struct stats_op *o = s->op;
	char rd[16], wr[16];
	uint64_t errors = 0;
	unsigned i;

	for (i = 0; i < RB_OP__COUNT; i++)
		errors += o[i].errors;
	sb_printf(b, "%-16s %5llu %8llu %8llu %7llu %6llu %6llu %6llu %8s %8s %6llu\n", name,
		  (unsigned long long)in_flight,
		  (unsigned long long)o[RB_OP_READ].count,
		  (unsigned long long)o[RB_OP_WRITE].count,
		  (unsigned long long)o[RB_OP_FLUSH].count,
		  (unsigned long long)o[RB_OP_TRIM].count,
		  (unsigned long long)o[RB_OP_WRITE_ZEROES].count,
		  (unsigned long long)o[RB_OP_NOP].count,
		  human_bytes(o[RB_OP_READ].bytes, rd, sizeof(rd)),
		  human_bytes(o[RB_OP_WRITE].bytes, wr, sizeof(wr)),
		  (unsigned long long)errors);
}

static void
human_latency(struct sbuf *b, const char *name, const struct stats_io *s)
{
	unsigned i;

	for (i = 0; i < RB_OP__COUNT; i++) {
		const struct stats_op *o = &s->op[i];

		if (o->count == 0)
			continue;
		sb_printf(b, "%-16s %-6s %10llu %8llu %8llu %8llu\n", name, stats_op_names[i],
			  (unsigned long long)o->count,
			  (unsigned long long)stats_percentile_us(o, 50),
			  (unsigned long long)stats_percentile_us(o, 99),
			  (unsigned long long)((o->max_ns + 999) / 1000));
	}
}

static void
human_rbd_lock(struct sbuf *b, const struct export *e)
{
	struct rbd_stats st;

	if (!stats_rbd_figures(e, &st))
		return;
	sb_printf(b, "export %s: exclusive lock %s (acquired %llu, taken over %llu, lost %llu, "
		  "broken %llu)\n", e->cfg->name, stats_imglock_state_name(st.lock.state),
		  (unsigned long long)st.lock.acquired, (unsigned long long)st.lock.takeovers,
		  (unsigned long long)st.lock.lost, (unsigned long long)st.lock.breaks);
	if (st.reopens != 0)
		sb_printf(b, "export %s: reopened %llu times after failures; last fenced "
			  "instance %s\n", e->cfg->name, (unsigned long long)st.reopens, st.fenced);
}

static const char io_header[] =
	"%-16s %5s %8s %8s %7s %6s %6s %6s %8s %8s %6s\n";

static void
human_render(struct target *t, struct sbuf *b)
{
	uint64_t up = (rb_now_ns() - t->stats.start_ns) / 1000000000u, inf;
	struct stats_io io;
	struct export *e;
	struct conn *c;
	unsigned li;
	char name[32];

	sb_printf(b, "rdmablk-target pid %d, up %llud %02llu:%02llu:%02llu, stats %s\n",
		  (int)getpid(), (unsigned long long)(up / 86400),
		  (unsigned long long)(up / 3600 % 24), (unsigned long long)(up / 60 % 60),
		  (unsigned long long)(up % 60), t->cfg->stats ? "on" : "off (stats = no)");
	sb_printf(b, "connections: %u now (%u in the handshake), %llu accepted, %llu closed; ",
		  t->nconns, t->nhandshakes, (unsigned long long)t->stats.accepted,
		  (unsigned long long)t->stats.closed);
	human_counts(b, "refused", stats_refusal_names, t->stats.refused, STATS_REFUSED__COUNT);
	human_counts(b, "; revoked by reloads", stats_revocation_names, t->stats.revoked,
		     STATS_REVOKED__COUNT);
	sb_printf(b, "\n");
	human_fields(b, "reloads", stats_reload_names, t->stats.reloads, STATS_RELOAD__COUNT);
	human_fields(b, "; liveness probes", stats_probe_names, t->stats.probes,
		     STATS_PROBE__COUNT);
	sb_printf(b, "\n");
	{
		struct ioq_stats st;
		unsigned inflight, peak;

		loops_ioq_stats(t, &st, &inflight, &peak);
		loops_human(t, b);
		sb_printf(b, "backing I/O: %s; %llu jobs on io_uring (%llu short, continued; "
			  "%llu submit calls), %llu on worker threads\n\n",
			  ioq_engine_name(ioq_engine(t->loops[0]->ioq)),
			  (unsigned long long)st.uring_jobs,
			  (unsigned long long)st.uring_resubmits,
			  (unsigned long long)st.submit_calls,
			  (unsigned long long)st.worker_jobs);
	}

	sb_printf(b, io_header, "EXPORT", "INFL", "READS", "WRITES", "FLUSHES", "TRIMS",
		  "ZEROES", "NOPS", "READ", "WRITTEN", "ERRORS");
	STAILQ_FOREACH(e, &t->exports, link) {
		stats_export_snapshot(t, e, &io, &inf);
		human_io_row(b, e->cfg->name, &io, inf);
	}
	stats_total_snapshot(t, &io, &inf);
	human_io_row(b, "(total)", &io, inf);

	STAILQ_FOREACH(e, &t->exports, link)
		if (flusher_failed(e->flusher))
			sb_printf(b, "export %s: export failed (%s): writes and FLUSH get EIO "
				  "until a reload reopens it\n", e->cfg->name,
				  flusher_failure(e->flusher));
	STAILQ_FOREACH(e, &t->exports, link)
		human_rbd_lock(b, e);

	if (t->nconns != 0) {
		sb_printf(b, "\n%-4s %-22s %-16s %-9s %4s\n", "CONN", "PEER", "EXPORT", "STATE",
			  "LOOP");
		FOR_EACH_CONN(t, li, c)
			sb_printf(b, "%-4llu %-22s %-16s %-9s %4u\n", (unsigned long long)c->id,
				  c->peer, c->rq.exp != NULL ? c->rq.exp->cfg->name : "-",
				  conn_state_name(c->state), li);
		sb_printf(b, "\n");
		sb_printf(b, io_header, "CONN", "INFL", "READS", "WRITES", "FLUSHES", "TRIMS",
			  "ZEROES", "NOPS", "READ", "WRITTEN", "ERRORS");
		FOR_EACH_CONN(t, li, c) {
			snprintf(name, sizeof(name), "%llu", (unsigned long long)c->id);
			human_io_row(b, name, &c->rq.stats, c->rq.credits_used);
		}
	}

	sb_printf(b, "\n%-16s %-6s %10s %8s %8s %8s\n", "LATENCY (us)", "OP", "COUNT",
		  "P50", "P99", "MAX");
	STAILQ_FOREACH(e, &t->exports, link) {
		stats_export_snapshot(t, e, &io, &inf);
		human_latency(b, e->cfg->name, &io);
	}

	sb_printf(b, "\n%-16s %10s %10s %9s %9s %6s\n", "GROUP COMMIT", "SYNCS", "COVERED",
		  "AVG-BATCH", "MAX-BATCH", "ERRORS");
	STAILQ_FOREACH(e, &t->exports, link) {
		struct flusher_stats fs;

		export_flusher_stats(e, &fs);
		sb_printf(b, "%-16s %10llu %10llu %9.1f %9llu %6llu\n", e->cfg->name,
			  (unsigned long long)fs.syncs, (unsigned long long)fs.jobs,
			  fs.syncs ? (double)fs.jobs / (double)fs.syncs : 0.0,
			  (unsigned long long)fs.max_batch, (unsigned long long)fs.errors);
	}
}

int
stats_render(struct target *t, int human, size_t max, char **out, size_t *len)
{
	struct sbuf b = { .max = max };

	/* Every loop's connections and counters hold still meanwhile. */
	loops_stop_world(t);
	if (human)
		human_render(t, &b);
	else
		json_render(t, &b);
	loops_start_world(t);
	return sb_take(&b, out, len);
}
