/* The Prometheus text exposition (format 0.0.4) of the target's
 * statistics (target/ops/metrics.h).  Like --stats it renders on loop 0 with
 * the other loops stopped between rounds, from the same snapshots
 * (stats-snapshot.h).  Names follow Prometheus' conventions: base units,
 * _total counters, and labels of bounded cardinality (export, op, stage,
 * error, reason, state, device), never one per connection or address. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/target.h"
#include "io/flusher.h"
#include "io/pool.h"
#include "metrics.h"
#include "sbuf.h"
#include "stats-snapshot.h"
#include "version.h"

static void
family(struct sbuf *b, const char *name, const char *type, const char *help)
{
	sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* NAME{LABEL="VALUE"} N for each reason of a counter by reason. */
static void
by_reason(struct sbuf *b, const char *name, const char *help, const char *label,
	  const char *const *names, const uint64_t *v, unsigned n)
{
	unsigned i;

	family(b, name, "counter", help);
	for (i = 0; i < n; i++)
		sb_printf(b, "%s{%s=\"%s\"} %llu\n", name, label, names[i],
			  (unsigned long long)v[i]);
}

/* The non-removed exports (a removed one may linger with its old
 * connections, under a name a new one took). */
#define FOR_EACH_LIVE_EXPORT(t, e) \
	STAILQ_FOREACH((e), &(t)->exports, link) if (!(e)->removed)

static void
target_families(struct target *t, struct sbuf *b)
{
	family(b, "rdmablk_build_info", "gauge", "The rdmablk version this target runs.");
	sb_printf(b, "rdmablk_build_info{version=\"%s\"} 1\n", RDMABLK_VERSION);
	family(b, "rdmablk_uptime_seconds", "gauge", "Seconds since the target started.");
	sb_printf(b, "rdmablk_uptime_seconds %.3f\n",
		  (double)(rb_now_ns() - t->stats.start_ns) / 1e9);
	family(b, "rdmablk_connections", "gauge",
	       "Connections the target holds now, handshakes included.");
	sb_printf(b, "rdmablk_connections %u\n", t->nconns);
	family(b, "rdmablk_handshakes", "gauge", "Connections whose handshake is in progress.");
	sb_printf(b, "rdmablk_handshakes %u\n", t->nhandshakes);
	family(b, "rdmablk_connections_accepted_total", "counter",
	       "Connections the RDMA CM accepted.");
	sb_printf(b, "rdmablk_connections_accepted_total %llu\n",
		  (unsigned long long)t->stats.accepted);
	family(b, "rdmablk_connections_closed_total", "counter", "Connections freed.");
	sb_printf(b, "rdmablk_connections_closed_total %llu\n",
		  (unsigned long long)t->stats.closed);
	by_reason(b, "rdmablk_refusals_total", "Connections refused, by reason.", "reason",
		  stats_refusal_names, t->stats.refused, STATS_REFUSED__COUNT);
	by_reason(b, "rdmablk_revocations_total",
		  "Live connections a reload revoked, by reason.", "reason",
		  stats_revocation_names, t->stats.revoked, STATS_REVOKED__COUNT);
	by_reason(b, "rdmablk_reloads_total", "SIGHUP reloads, by result.", "result",
		  stats_reload_names, t->stats.reloads, STATS_RELOAD__COUNT);
}

static void
pool_families(struct target *t, struct sbuf *b)
{
	struct device *d;
	unsigned i, total, used;

	family(b, "rdmablk_pool_buffers", "gauge",
	       "Registered buffers in the pool of an RDMA device.");
	STAILQ_FOREACH(d, &t->devices, link) {
		for (total = 0, i = 0; i < d->npools; i++)
			total += pool_nbufs(d->pools[i]);
		sb_printf(b, "rdmablk_pool_buffers{device=\"%s\"} %u\n",
			  ibv_get_device_name(d->verbs->device), total);
	}
	family(b, "rdmablk_pool_buffers_in_use", "gauge",
	       "Pool buffers requests hold now, of an RDMA device.");
	STAILQ_FOREACH(d, &t->devices, link) {
		for (used = 0, i = 0; i < d->npools; i++)
			used += pool_nbufs(d->pools[i]) - pool_nfree(d->pools[i]);
		sb_printf(b, "rdmablk_pool_buffers_in_use{device=\"%s\"} %u\n",
			  ibv_get_device_name(d->verbs->device), used);
	}
}

/* One labelled sample per live export: NAME{export="E"<extra>} */
static void
export_label(struct sbuf *b, const char *name, const struct export *e)
{
	sb_printf(b, "%s{export=", name);
	sb_label_str(b, e->cfg->name);
}

/* Each live export's figures, taken once per scrape (each walks every
 * connection): in export order, n of them.  NULL when out of memory. */
struct export_snap {
	struct stats_io io;
	uint64_t in_flight;
};

static struct export_snap *
export_snaps(struct target *t, unsigned *n)
{
	struct export_snap *v;
	struct export *e;
	unsigned i = 0;

	*n = 0;
	FOR_EACH_LIVE_EXPORT(t, e)
		(*n)++;
	v = calloc(*n > 0 ? *n : 1, sizeof(*v));
	if (v == NULL)
		return NULL;
	FOR_EACH_LIVE_EXPORT(t, e) {
		stats_export_snapshot(t, e, &v[i].io, &v[i].in_flight);
		i++;
	}
	return v;
}

/* The families of the exports' request figures. */
static void
export_io_families(struct target *t, struct sbuf *b, const struct export_snap *v)
{
	const struct export *e;
	unsigned i, k;

	family(b, "rdmablk_requests_total", "counter", "Requests replied to, by export and op.");
	k = 0;
	FOR_EACH_LIVE_EXPORT(t, e) {
		for (i = 0; i < RB_OP__COUNT; i++) {
			export_label(b, "rdmablk_requests_total", e);
			sb_printf(b, ",op=\"%s\"} %llu\n", stats_op_names[i],
				  (unsigned long long)v[k].io.op[i].count);
		}
		k++;
	}
	family(b, "rdmablk_bytes_total", "counter",
	       "Bytes of successful requests (read, written, trimmed, zeroed, asked the "
	       "block status of), by export and op.");
	k = 0;
	FOR_EACH_LIVE_EXPORT(t, e) {
		for (i = 0; i < RB_OP__COUNT; i++) {
			if (i == RB_OP_FLUSH || i == RB_OP_NOP)
				continue;
			export_label(b, "rdmablk_bytes_total", e);
			sb_printf(b, ",op=\"%s\"} %llu\n", stats_op_names[i],
				  (unsigned long long)v[k].io.op[i].bytes);
		}
		k++;
	}
	family(b, "rdmablk_request_errors_total", "counter",
	       "Requests replied to with an error, by export and kind.");
	k = 0;
	FOR_EACH_LIVE_EXPORT(t, e) {
		for (i = 0; i < STATS_ERR__COUNT; i++) {
			export_label(b, "rdmablk_request_errors_total", e);
			sb_printf(b, ",error=\"%s\"} %llu\n", stats_error_names[i],
				  (unsigned long long)v[k].io.errors_by[i]);
		}
		k++;
	}
	family(b, "rdmablk_requests_in_flight", "gauge", "Requests in flight, by export.");
	k = 0;
	FOR_EACH_LIVE_EXPORT(t, e) {
		export_label(b, "rdmablk_requests_in_flight", e);
		sb_printf(b, "} %llu\n", (unsigned long long)v[k++].in_flight);
	}
}

static void
export_families(struct target *t, struct sbuf *b)
{
	struct export_snap *snaps;
	struct rbd_stats rs;
	struct export *e;
	unsigned i, s, n;

	snaps = export_snaps(t, &n);
	if (snaps == NULL) {
		b->full = 1;            /* no half exposition: the scrape gets a 500 */
		return;
	}
	export_io_families(t, b, snaps);
	free(snaps);
	family(b, "rdmablk_export_connections", "gauge", "Connections to an export.");
	FOR_EACH_LIVE_EXPORT(t, e) {
		export_label(b, "rdmablk_export_connections", e);
		sb_printf(b, "} %u\n", e->nconns);
	}
	family(b, "rdmablk_export_failed", "gauge",
	       "1 when an fdatasync of the export failed: its writes and flushes get EIO "
	       "until it is reopened (docs/durability.md).");
	FOR_EACH_LIVE_EXPORT(t, e) {
		export_label(b, "rdmablk_export_failed", e);
		sb_printf(b, "} %d\n", flusher_failed(e->flusher) ? 1 : 0);
	}
	family(b, "rdmablk_rbd_lock_state", "gauge",
	       "The exclusive lock of an RBD export's image: 1 for the state it is in.");
	FOR_EACH_LIVE_EXPORT(t, e) {
		if (!stats_rbd_figures(e, &rs))
			continue;
		for (s = IMGLOCK_NONE; s <= IMGLOCK_LOST; s++) {
			export_label(b, "rdmablk_rbd_lock_state", e);
			sb_printf(b, ",state=\"%s\"} %d\n", stats_imglock_state_name(s),
				  rs.lock.state == s);
		}
	}
	family(b, "rdmablk_rbd_lock_events_total", "counter",
	       "An RBD export's lock: acquired, taken over from a silent owner, lost, "
	       "broken (the owner blocklisted first).");
	FOR_EACH_LIVE_EXPORT(t, e) {
		const char *const ev[] = { "acquired", "takeover", "lost", "break" };
		uint64_t v[4];

		if (!stats_rbd_figures(e, &rs))
			continue;
		v[0] = rs.lock.acquired;
		v[1] = rs.lock.takeovers;
		v[2] = rs.lock.lost;
		v[3] = rs.lock.breaks;
		for (i = 0; i < 4; i++) {
			export_label(b, "rdmablk_rbd_lock_events_total", e);
			sb_printf(b, ",event=\"%s\"} %llu\n", ev[i], (unsigned long long)v[i]);
		}
	}
	family(b, "rdmablk_rbd_reopens_total", "counter",
	       "Sessions an RBD export opened anew after a failure.");
	FOR_EACH_LIVE_EXPORT(t, e) {
		if (!stats_rbd_figures(e, &rs))
			continue;
		export_label(b, "rdmablk_rbd_reopens_total", e);
		sb_printf(b, "} %llu\n", (unsigned long long)rs.reopens);
	}
}

/* One histogram series: cumulative buckets at the log2 microsecond
 * bounds (stats.h), +Inf, sum and count.  labels is "op=\"read\"" or so. */
static void
histogram(struct sbuf *b, const char *name, const char *labels, const uint64_t *hist,
	  uint64_t count, uint64_t sum_ns)
{
	uint64_t cum = 0;
	unsigned i;

	for (i = 0; i < STATS_NBUCKETS - 1; i++) {
		cum += hist[i];
		sb_printf(b, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels,
			  (double)(1ull << i) * 1e-6, (unsigned long long)cum);
	}
	sb_printf(b, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
		  (unsigned long long)count);
	sb_printf(b, "%s_sum{%s} %.9f\n", name, labels, (double)sum_ns / 1e9);
	sb_printf(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)count);
}

static void
latency_families(struct target *t, struct sbuf *b)
{
	struct stats_io io;
	uint64_t inf;
	char labels[64];
	unsigned i, s;

	stats_total_snapshot(t, &io, &inf);
	family(b, "rdmablk_request_duration_seconds", "histogram",
	       "From a request's start to its reply being posted, by op.");
	for (i = 0; i < RB_OP__COUNT; i++) {
		snprintf(labels, sizeof(labels), "op=\"%s\"", stats_op_names[i]);
		histogram(b, "rdmablk_request_duration_seconds", labels, io.op[i].hist,
			  io.op[i].count, io.op[i].sum_ns);
	}
	family(b, "rdmablk_request_stage_seconds", "histogram",
	       "The time of each stage of a request, by op: data (placed by RDMA READ, "
	       "or read from the backing store), backing_write, flush (fdatasync), reply "
	       "(until its SEND completed).");
	for (i = 0; i < RB_OP__COUNT; i++)
		for (s = 0; s < STATS_STAGE__COUNT; s++) {
			const struct stats_hist *h = &io.stage[i][s];

			snprintf(labels, sizeof(labels), "op=\"%s\",stage=\"%s\"",
				 stats_op_names[i], stats_stage_names[s]);
			histogram(b, "rdmablk_request_stage_seconds", labels, h->hist,
				  h->count, h->sum_ns);
		}
}

int
metrics_render(struct target *t, size_t max, char **out, size_t *len)
{
	struct sbuf b = { .max = max };

	/* Every loop's connections and counters hold still meanwhile. */
	loops_stop_world(t);
	target_families(t, &b);
	pool_families(t, &b);
	export_families(t, &b);
	latency_families(t, &b);
	loops_start_world(t);
	return sb_take(&b, out, len);
}
