/* rdmablk initiator library: a block device client over RDMA (RC, RDMA CM).
 *
 * One struct rb_client is one logical connection to one export.  It is safe
 * to call every I/O function from many threads at once on one client; up to
 * the granted queue depth of requests are then in flight together.  When the
 * connection dies (target restart, keepalive timeout, transport error) the
 * next request reconnects with bounded back-off and requests that were never
 * acknowledged are resent; a write is reported done only after the target
 * replied success for it.
 *
 * Every function returns 0 or a negative errno value: -EIO (transport
 * failure, timeout, target I/O error), -EPERM (read-only export), -ENOSPC,
 * -EINVAL, ... (see rb_error_to_errno in common/protocol.h).  The reason for
 * a failure is logged once, where it happened, through the log hook.
 *
 * Data path cost: the caller's buffer is copied into (writes) or out of
 * (reads) a pre-registered pool buffer, so no memory is registered on the
 * I/O path (an asynchronous caller can register its own memory instead:
 * rb_aio_set_region).  The copy is timed; rb_client_stats() reports the cumulative
 * copy time and bytes (see initiator/NOTES.md for measured numbers).
 */
#ifndef RDMABLK_H
#define RDMABLK_H

#include <stddef.h>
#include <stdint.h>

#include "version.h"          /* RDMABLK_VERSION */

#define RB_DEFAULT_QUEUE_DEPTH  32
#define RB_DEFAULT_MAX_IO       (1024u * 1024u)
#define RB_DEFAULT_TIMEOUT_S    30
#define RB_DEFAULT_KEEPALIVE_S  2
/* The most targets one hostname= list may name. */
#define RB_MAX_TARGETS          16

/* One target of a hostname= list, resolved (rb_opts_resolve). */
struct rb_target {
	char     host[64];         /* numeric IPv4 or IPv6 address */
	uint16_t port;
};

struct rb_opts {
	const char *host;          /* numeric IPv4 or IPv6 address of the target */
	uint16_t    port;          /* default RB_DEFAULT_PORT */
	/* Several targets exporting one shared backend (hostname=A,B,...),
	 * in failover order, filled by rb_opts_resolve; host is then
	 * targets[0].host.  0: host and port name the only target.  With
	 * more than one, rb_client_open refuses an export that the target
	 * does not mark shared (RB_EXP_SHARED, docs/durability.md). */
	unsigned         ntargets;
	struct rb_target targets[RB_MAX_TARGETS];
	const char *export_name;   /* required for rb_client_open */
	unsigned    queue_depth;   /* wanted outstanding requests (1..1024) */
	uint32_t    max_io;        /* wanted largest request, bytes */
	unsigned    timeout_s;     /* per-request deadline, also bounds connecting */
	unsigned    keepalive_s;   /* NOP when idle this long; 0 disables */
	unsigned    retry;         /* extra attempts for the first connection */
	int         busy_poll;     /* RB_BUSY_POLL_*: how a waiting thread waits */
	const char *secret_file;   /* shared secret for an export that has one;
				    * must not be readable by group/others */
	int         mr;            /* RB_MR_WINDOW (default, rb_opts_init) or RB_MR_STATIC */
	const char *source;        /* numeric local address to connect from, or NULL
				    * (the kernel picks): the target may pick the
				    * key by the initiator's address */

	/* Private to rb_opts_set/rb_opts_resolve/rb_opts_free (params.c):
	 * the copies host, export_name and secret_file point to. */
	char       *hostname_;     /* as given, before rb_opts_resolve */
	char       *host_;
	char       *export_;
	char       *secret_;
	char       *source_;
};

/* How the initiator exposes its data buffers to the target (see
 * docs/security.md).  WINDOW: a type-2 memory window bound per request over
 * exactly that request's bytes and invalidated when it completes (falls
 * back to STATIC, with a warning, on devices without windows).  STATIC: one
 * pool-wide MR whose key stays valid for the connection's lifetime. */
#define RB_MR_WINDOW 0
#define RB_MR_STATIC 1

/* busy-poll=: NO (the library's default) arms the CQs and sleeps; YES spins
 * while any reply is due, never arming; ADAPTIVE spins about two mean round
 * trips while one request is out, then arms and sleeps (common/spin.h). */
#define RB_BUSY_POLL_NO       0
#define RB_BUSY_POLL_YES      1
#define RB_BUSY_POLL_ADAPTIVE 2

/* Fills the defaults; host and export_name stay NULL. */
void rb_opts_init(struct rb_opts *o);

/* The initiator parameters shared by every front end (the nbdkit plugin,
 * rdmablk-ublk): apply one key=value to o (copying strings; release them
 * with rb_opts_free).  Keys: hostname port export queue-depth timeout retry
 * keepalive busy-poll secret-file mr source-address.  0; -ENOENT for an unknown key (the
 * caller may own it); -EINVAL for a bad value.  On error, err (errlen
 * bytes) says what was wrong, naming the key. */
int  rb_opts_set(struct rb_opts *o, const char *key, const char *value,
		 char *err, size_t errlen);
/* After the last rb_opts_set: resolve every entry of hostname= into the
 * numeric address RDMA CM needs (o->targets, o->host = the first); an
 * entry without :PORT gets port=.  0 or -EINVAL (with err naming the
 * entry). */
int  rb_opts_resolve(struct rb_opts *o, char *err, size_t errlen);
/* Frees what rb_opts_set copied; o is left with the defaults. */
void rb_opts_free(struct rb_opts *o);

/* What the target granted for this export (from its HELLO_REPLY). */
struct rb_export_desc {
	uint64_t size;             /* bytes */
	uint32_t flags;            /* RB_EXP_* from protocol.h */
	uint32_t min_block;
	uint32_t pref_block;
	uint32_t max_io;
	uint32_t inline_max;
	unsigned queue_depth;      /* granted */
	char     description[128];
};

struct rb_stats {
	uint64_t requests;         /* replies received for data requests */
	uint64_t resent;           /* requests resent after a reconnect */
	uint64_t reconnects;       /* connections made after the first */
	uint64_t failovers;        /* reconnects to another target of the list */
	uint64_t copy_ns;          /* cumulative time in pool <-> caller copies */
	uint64_t copy_bytes;       /* bytes copied */
	uint64_t keepalives;       /* NOPs sent */
	/* The leader/follower wait (initiator/NOTES.md): */
	uint64_t leader_sleeps;    /* a waiting leader slept in poll() */
	uint64_t follower_wakes;   /* a waiting follower was woken by a condvar */
	uint64_t handoffs;         /* leadership passed to a follower */
	uint64_t empty_event_reads; /* reads of an armed CQ's channel that found no event */
	uint64_t pool_bytes;       /* request pool registered, summed over connections */
	uint64_t inline_read_bytes; /* READ data that came in replies (copied: in copy_bytes) */
	uint64_t imm_read_replies; /* of those replies, sent as the data alone (READ_IMM) */
};

/* I/O flags. */
#define RB_IO_FUA      0x1u    /* write/trim/zero: durable before returning */
#define RB_IO_NO_HOLE  0x2u    /* zero: allocate, do not punch a hole */

struct rb_client;

int  rb_client_open(const struct rb_opts *o, struct rb_client **out);
void rb_client_close(struct rb_client *c);
const struct rb_export_desc *rb_client_export(const struct rb_client *c);
void rb_client_stats(struct rb_client *c, struct rb_stats *s);

/* Any length; split into max_io pieces.  Unaligned ranges are allowed for
 * reads; writes, trims and zeroes must be aligned to min_block. */
int rb_read(struct rb_client *c, void *buf, size_t len, uint64_t off);
/* With RB_IO_FUA, fails with -EIO unless the target confirmed durability. */
int rb_write(struct rb_client *c, const void *buf, size_t len, uint64_t off,
	     unsigned flags);
/* Durable on the target's stable storage when it returns 0. */
int rb_flush(struct rb_client *c);
int rb_trim(struct rb_client *c, uint64_t len, uint64_t off, unsigned flags);
int rb_zero(struct rb_client *c, uint64_t len, uint64_t off, unsigned flags);

/* Block status, for an export whose flags have RB_EXP_EXTENTS (else
 * -ENOTSUP): the allocation of [off, off + len), rounded out to min_block
 * and within the export (else -EINVAL), as extents (struct rb_extent_info
 * and RB_EXT_* in protocol.h) that start at the rounded-down off, follow
 * each other and cover a prefix of the range: at least one, at most max
 * (and RB_EXTENTS_MAX, and 4 GiB, per call).  *n says how many. */
struct rb_extent_info;
int rb_block_status(struct rb_client *c, uint64_t len, uint64_t off,
		    struct rb_extent_info *ext, unsigned max, unsigned *n);

/* Asynchronous requests, for a caller that must not block per request (a
 * ublk queue thread).  One thread drives a client asynchronously: it
 * submits, polls rb_aio_fd() for readiness and reaps its own completions;
 * there is no completion thread (the reaping is the sync calls' own CQ
 * polling, initiator/NOTES.md).  Do not mix with the sync calls on the
 * same client.  The guarantees are the sync calls': a request that was
 * never acknowledged is resent on a new connection, a write is reported
 * done only after the target replied success (FUA/FLUSH: durable), and a
 * request that cannot complete within `timeout` fails with -EIO.
 * Reconnecting happens inside rb_aio_submit/rb_aio_reap, so they may then
 * block until the oldest request's deadline; the device has no target
 * then anyway. */
#define RB_AIO_READ   0
#define RB_AIO_WRITE  1
#define RB_AIO_FLUSH  2
#define RB_AIO_TRIM   3
#define RB_AIO_ZERO   4

struct rb_aio {
	/* Set by the caller before rb_aio_submit: */
	unsigned  op;          /* RB_AIO_* */
	unsigned  flags;       /* RB_IO_FUA, RB_IO_NO_HOLE */
	void     *buf;         /* READ destination, WRITE source: len bytes */
	uint32_t  len;         /* at most the export's max_io */
	uint64_t  off;
	uint64_t  user;        /* the caller's tag, untouched */
	/* Set when reaped: 0 or a negative errno. */
	int       result;
	/* The library's while the request is submitted; meaningless to the
	 * caller. */
	uint64_t  private_[2];
};

/* Queue a request; it is posted at once when a credit is free.  0, or a
 * negative errno for a request that can never be sent (bad alignment,
 * read-only export, len above max_io): nothing was queued then. */
int rb_aio_submit(struct rb_client *c, struct rb_aio *a);
/* Reap what completed (and post what waited for a credit or a
 * reconnection): cb is called once per finished request, in this thread.
 * Returns the number reaped.  When it returns, rb_aio_fd() becomes
 * readable on the next completion; call it again then, and at least every
 * second while requests are outstanding (it enforces `timeout`). */
typedef void rb_aio_done_fn(void *opaque, struct rb_aio *a);
int rb_aio_reap(struct rb_client *c, rb_aio_done_fn *cb, void *opaque);
/* As rb_aio_reap, for a caller that spins: the CQs are polled but not
 * armed, so nothing raises rb_aio_fd() for what comes next.  Call
 * rb_aio_reap (which arms) before sleeping on the fd. */
int rb_aio_poll(struct rb_client *c, rb_aio_done_fn *cb, void *opaque);
/* Direct requests: [base, base + len) is the caller's I/O memory (a ublk
 * queue's buffers).  A READ, or a WRITE above the inline size, whose buf
 * lies inside it is moved by the target straight from or into that memory
 * (registered once per connection, exposed per request through a window
 * over exactly its bytes, or the region's key with mr=static), with no copy
 * through the pool.  A connection that dies with such requests posted is cut
 * off from the memory (windows revoked, region deregistered) before they
 * are resent or failed.  The memory must stay mapped until
 * rb_client_close.  Once, before the first rb_aio_submit: 0 or -EINVAL. */
int rb_aio_set_region(struct rb_client *c, void *base, size_t len);
/* A file descriptor that is readable (POLLIN) when rb_aio_reap has work;
 * stable for the client's lifetime.  -1 on error (logged).  With
 * busy-poll=yes the CQs are never armed, so a reply raises nothing: call
 * rb_aio_reap in a loop while requests are outstanding.  After
 * rb_aio_poll, call rb_aio_reap before sleeping on it. */
int rb_aio_fd(struct rb_client *c);
/* Requests submitted and not yet reaped. */
unsigned rb_aio_outstanding(struct rb_client *c);

/* Ask the target for the exports this address may see: cb is called once
 * per export; a non-zero return from cb stops and is returned. */
typedef int rb_list_fn(void *opaque, const char *name, const char *description);
int rb_list_exports(const struct rb_opts *o, rb_list_fn *cb, void *opaque);

/* Logging hook.  Default: errors and warnings to stderr prefixed
 * "rdmablk: ", info and debug messages dropped.  The hook may be called
 * from any thread that waits for a reply, and from the library's
 * housekeeping thread. */
enum rb_log_level {
	RB_LOG_ERROR,   /* a request, a connect or a setting failed */
	RB_LOG_WARN,    /* something is wrong but handled: a connection lost, a weaker mode */
	RB_LOG_INFO,    /* a routine event an operator may want to see: reconnected, failed over */
	RB_LOG_DEBUG,   /* detail for debugging */
};
/* "error", "warning", "info", "debug". */
const char *rb_log_level_name(enum rb_log_level level);
typedef void rb_log_fn(enum rb_log_level level, const char *msg);
void rb_set_log(rb_log_fn *fn);

/* Returns a short description of the installed verbs library, e.g.
 * "libibverbs.so.1.14.44.0, 1 device(s)", for --dump-plugin. */
const char *rb_verbs_info(char *buf, size_t size);

#endif
