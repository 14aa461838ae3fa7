/* Live statistics of rdmablk-target, served over the admin socket (admin.c).
 *
 * Every counter lives in a fixed-size struct embedded in its owner (struct
 * conn, struct export, struct target) and is updated on the event-loop
 * thread only: no atomics, no locks, no allocation per request.  The one
 * per-request cost is a clock read at its start, one at the end of each
 * stage it goes through (two to five in all) and a few increments, and
 * `stats = no` skips even those.
 *
 * A connection counts its own requests.  When it closes, its counters are
 * added to its export's; an export's figures are that sum plus its live
 * connections'.  An export that goes away (SIGHUP) is added to the
 * target's, so "total" covers the daemon's whole life.
 *
 * Latency runs from the request's start (a free slot took it) to its reply
 * being posted, and goes into log2 buckets of microseconds: bucket 0 holds
 * latencies under 1 us, bucket i (i >= 1) those in [2^(i-1), 2^i) us.  A
 * percentile is the upper bound of the bucket it falls in (capped at the
 * exact maximum), so it overstates by at most a factor of two. */
#ifndef RDMABLK_TARGET_STATS_H
#define RDMABLK_TARGET_STATS_H

#include <stdint.h>

#include "protocol.h"
#include "util.h"

#define STATS_NBUCKETS 32         /* the last one holds everything from ~18 min */

struct stats_op {
	uint64_t count;               /* replies sent, errors included */
	uint64_t bytes;               /* length of the successful ones */
	uint64_t errors;              /* replies with a status other than RB_OK */
	uint64_t max_ns;
	uint64_t sum_ns;              /* for the mean: the benchmark's breakdown */
	uint64_t hist[STATS_NBUCKETS];
};

/* Where a request spends its time, stage by stage (request.c stamps
 * them): each stage's own duration, from the end of the one before it (the
 * first from the request's start).
 *   DATA           the data is placed: a WRITE's RDMA READ (an inline one's
 *                  data came with it), a READ's backing read
 *   BACKING_WRITE  a WRITE's, TRIM's or WRITE_ZEROES's backing write
 *   FLUSH          its fdatasync (a FLUSH, or a write that must be durable)
 *   REPLY          until the reply's SEND completed (a READ's RDMA WRITE
 *                  of its data with it)
 * A request counts only in the stages it went through. */
enum stats_stage {
	STATS_STAGE_DATA,
	STATS_STAGE_BACKING_WRITE,
	STATS_STAGE_FLUSH,
	STATS_STAGE_REPLY,
	STATS_STAGE__COUNT
};

struct stats_hist {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t hist[STATS_NBUCKETS];    /* log2 microseconds, as latency's */
};

/* Failed replies by their error, a bounded set of kinds. */
enum stats_error {
	STATS_ERR_IO,                 /* EIO: the backing store or the transfer */
	STATS_ERR_NOSPC,              /* ENOSPC */
	STATS_ERR_INVALID,            /* EINVAL, EOVERFLOW: a malformed request */
	STATS_ERR_PERM,               /* EPERM: a write to a read-only export */
	STATS_ERR_NOTSUP,             /* ENOTSUP */
	STATS_ERR_TIMEDOUT,           /* ETIMEDOUT: not started within its ttl */
	STATS_ERR_SHUTDOWN,           /* ESHUTDOWN: stopping, or fenced off an image */
	STATS_ERR_OTHER,
	STATS_ERR__COUNT
};

/* Indexed by RB_OP_* (READ, WRITE, FLUSH, TRIM, WRITE_ZEROES, NOP,
 * BLOCK_STATUS). */
struct stats_io {
	struct stats_op op[RB_OP__COUNT];
	struct stats_hist stage[RB_OP__COUNT][STATS_STAGE__COUNT];
	uint64_t errors_by[STATS_ERR__COUNT];
	uint64_t reads_cached;        /* READs served from the page cache on the event
	                               * loop (preadv2 RWF_NOWAIT), before any io_uring
	                               * or worker trip */
	uint64_t writes_cached;       /* inline WRITEs the page cache took on the event
	                               * loop (pwritev2 RWF_NOWAIT) */
};

/* Why a connection was refused, at CONNECT_REQUEST or at HELLO. */
enum stats_refusal {
	STATS_REFUSED_BAD_PRIVATE_DATA,   /* CM private data: magic, version, depth */
	STATS_REFUSED_ADDRESS,            /* peer address not allowed */
	STATS_REFUSED_UNKNOWN_EXPORT,
	STATS_REFUSED_BUSY,               /* max-connections reached */
	STATS_REFUSED_SHUTTING_DOWN,
	STATS_REFUSED_AUTH,               /* authentication failed */
	STATS_REFUSED_PROTOCOL,           /* a malformed HELLO */
	STATS_REFUSED_RESOURCES,          /* out of memory or verbs resources */
	/* At CONNECT_REQUEST, before anything is allocated ([target] limits): */
	STATS_REFUSED_CONN_LIMIT,         /* max-connections-total reached */
	STATS_REFUSED_HANDSHAKE_LIMIT,    /* max-handshakes in progress */
	STATS_REFUSED_ADDRESS_LIMIT,      /* max-connections-per-address reached */
	STATS_REFUSED__COUNT
};

/* Why a reload revoked a live connection (revoke.c). */
enum stats_revocation {
	STATS_REVOKED_ADDRESS,            /* its address left the export's allow list */
	STATS_REVOKED_SECRET,             /* its peer's key was added or changed */
	STATS_REVOKED_SIZE,               /* the export shrank below what it negotiated */
	STATS_REVOKED__COUNT
};

/* SIGHUP reloads (daemon.c). */
enum stats_reload {
	STATS_RELOAD_APPLIED,
	STATS_RELOAD_REJECTED,            /* errors in the file: the running config stays */
	STATS_RELOAD__COUNT
};

/* Liveness probes (liveness.c): the failed and unanswered are among the posted. */
enum stats_probe {
	STATS_PROBE_POSTED,
	STATS_PROBE_FAILED,               /* completed with an error other than a flush */
	STATS_PROBE_UNANSWERED,           /* not completed within the probe's deadline */
	STATS_PROBE__COUNT
};

struct stats_target {
	uint64_t start_ns;
	uint64_t accepted;                /* connections the CM accepted */
	uint64_t closed;                  /* connections freed */
	uint64_t refused[STATS_REFUSED__COUNT];
	uint64_t revoked[STATS_REVOKED__COUNT];
	uint64_t reloads[STATS_RELOAD__COUNT];
	uint64_t probes[STATS_PROBE__COUNT];
	struct stats_io gone;             /* of exports removed by a reload */
	/* the most TRIM/WRITE_ZEROES one connection ran at once is each
	 * loop's slow_jobs_peak (loop.h) */
};

/* The hot path: one reply posted.  Inline so that request.c pays for a
 * few adds and no call. */
static inline unsigned
stats_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b;

	if (us == 0)
		return 0;
	b = 64u - (unsigned)__builtin_clzll(us);    /* us in [2^(b-1), 2^b) */
	return b < STATS_NBUCKETS ? b : STATS_NBUCKETS - 1;
}

static inline enum stats_error
stats_error_kind(uint16_t err)
{
	switch (err) {
	case RB_EIO:       return STATS_ERR_IO;
	case RB_ENOSPC:    return STATS_ERR_NOSPC;
	case RB_EINVAL:
	case RB_EOVERFLOW: return STATS_ERR_INVALID;
	case RB_EPERM:     return STATS_ERR_PERM;
	case RB_ENOTSUP:   return STATS_ERR_NOTSUP;
	case RB_ETIMEDOUT: return STATS_ERR_TIMEDOUT;
	case RB_ESHUTDOWN: return STATS_ERR_SHUTDOWN;
	default:           return STATS_ERR_OTHER;
	}
}

static inline void
stats_reply(struct stats_io *s, uint8_t opcode, uint32_t length, uint16_t error,
	    uint64_t start_ns)
{
	struct stats_op *o;
	uint64_t ns;

	if (opcode >= RB_OP__COUNT)
		return;
	o = &s->op[opcode];
	ns = rb_now_ns() - start_ns;
	o->count++;
	if (error == RB_OK) {
		o->bytes += length;
	} else {
		o->errors++;
		s->errors_by[stats_error_kind(error)]++;
	}
	if (ns > o->max_ns)
		o->max_ns = ns;
	o->sum_ns += ns;
	o->hist[stats_bucket(ns)]++;
}

/* One stage of a request took ns (request.c, when its reply completed). */
static inline void
stats_stage(struct stats_io *s, uint8_t opcode, enum stats_stage st, uint64_t ns)
{
	struct stats_hist *h;

	if (opcode >= RB_OP__COUNT)
		return;
	h = &s->stage[opcode][st];
	h->count++;
	h->sum_ns += ns;
	h->hist[stats_bucket(ns)]++;
}

/* dst += src */
void stats_io_add(struct stats_io *dst, const struct stats_io *src);
/* The latency below which a fraction pct/100 of o's requests fall, in
 * microseconds (a bucket's upper bound, at most the maximum); 0 when empty. */
uint64_t stats_percentile_us(const struct stats_op *o, unsigned pct);
/* The names --stats and the metrics give each refusal and revocation
 * reason, stage and error kind (stats.c). */
extern const char *const stats_refusal_names[STATS_REFUSED__COUNT];
extern const char *const stats_revocation_names[STATS_REVOKED__COUNT];
extern const char *const stats_reload_names[STATS_RELOAD__COUNT];
extern const char *const stats_probe_names[STATS_PROBE__COUNT];
extern const char *const stats_stage_names[STATS_STAGE__COUNT];
extern const char *const stats_error_names[STATS_ERR__COUNT];

struct target;
struct conn;
struct export;

/* Hooks from the rest of the daemon. */
void stats_refused(struct target *t, enum stats_refusal why);
/* Map a refusal status (listener.c: at_hello 0; conn.c: at_hello 1). */
void stats_refused_status(struct target *t, uint16_t status, int at_hello);
void stats_revoked(struct target *t, enum stats_revocation why);
/* One more of a stats_target or struct export event counter, under t->lock. */
void stats_count(struct target *t, uint64_t *counter);
void stats_export_gone(struct target *t, struct export *e);

/* The admin socket's replies: a JSON document or a human table, each
 * ending in a newline.  Returns 0, or -1 when the reply would not fit in
 * max bytes.  *out is malloc'ed. */
int stats_render(struct target *t, int human, size_t max, char **out, size_t *len);

#endif
