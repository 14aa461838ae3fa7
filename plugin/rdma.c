/* nbdkit-rdma-plugin: serve an rdmablk export over NBD.
 *
 *   nbdkit rdma hostname=10.55.0.1[,10.55.0.2:PORT,[fd00::1]:PORT...] export=disk0
 *               [port=10810] [queue-depth=N]
 *               [timeout=SECS] [retry=N] [keepalive=SECS] [busy-poll=BOOL|adaptive]
 *               [secret-file=FILE] [mr=window|static] [source-address=ADDR]
 *
 * Each NBD client connection (.open) gets its own RDMA connection (one QP);
 * nbdkit's worker threads for that connection share it, each reaping its
 * own reply (initiator/NOTES.md: leader/follower).  No verbs resource
 * exists before the fork: the probe connection is made in .after_fork.
 * Writes with FUA and flushes return only once the target has confirmed
 * the data is on stable storage (RB_REP_DURABLE).  FUA is native: every
 * writable export advertises RB_EXP_FUA, and the per-request flag saves
 * the separate FLUSH round trip nbdkit's emulation would add.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>


#include "auth.h"
#include "protocol.h"
#include "rdmablk.h"
#include "util.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Every parameter, parsed by the library (initiator/params.c). */
static struct rb_opts opts;

struct handle {
	struct rb_client *client;
	const struct rb_export_desc *desc;
	LIST_ENTRY(handle) link;        /* on open_handles */
};

/* Every handle .open returned that .close has not closed.  nbdkit (1.32,
 * server/connections.c: free_connection) skips .close for a connection
 * that ends after it was told to quit (SIGTERM), then calls .cleanup and
 * dlcloses us.  Such a client's housekeeping thread would go on running
 * plugin code that is no longer mapped: .cleanup closes them first.
 * Nor does nbdkit wait for a .close that a connection thread is still
 * running when its main thread goes on to .cleanup, .unload and dlclose:
 * closing counts those, and .cleanup waits for them (close_done).  Even
 * then a .close returns through its own last instructions after it said
 * it was done, so the plugin is linked -z nodelete: dlclose leaves it
 * mapped until the process exits. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t close_done = PTHREAD_COND_INITIALIZER;
static LIST_HEAD(, handle) open_handles = LIST_HEAD_INITIALIZER(open_handles);
static unsigned closing;
/* .cleanup waits this long for .close calls still running. */
#define CLOSE_WAIT_S 30

static void
handle_link(struct handle *h)
{
	pthread_mutex_lock(&open_lock);
	LIST_INSERT_HEAD(&open_handles, h, link);
	pthread_mutex_unlock(&open_lock);
}


/* nbdkit has errors and debug messages only: a warning is an error that
 * says so; routine events (reconnected, failed over) are debug messages,
 * seen with nbdkit -v. */
static void
rdmaplug_log(enum rb_log_level level, const char *msg)
{
	switch (level) {
	case RB_LOG_ERROR:
		nbdkit_error("%s", msg);
		break;
	case RB_LOG_WARN:
		nbdkit_error("warning: %s", msg);
		break;
	default:
		nbdkit_debug("%s", msg);
		break;
	}
}

static void
rdmaplug_load(void)
{
	/* nbdkit exits without joining its connection threads. */
	rb_crypto_no_atexit();
	rb_opts_init(&opts);
	/* A lone waiting thread spins about two round trips before it
	 * sleeps (docs/performance.md: the ADS A/B). */
	opts.busy_poll = RB_BUSY_POLL_ADAPTIVE;
}

static void
rdmaplug_unload(void)
{
	rb_opts_free(&opts);
}

static int
rdmaplug_config(const char *key, const char *value)
{
	char err[512];

	if (rb_opts_set(&opts, key, value, err, sizeof(err)) < 0) {
		nbdkit_error("%s", err);
		return -1;
	}
	return 0;
}

static int
rdmaplug_config_complete(void)
{
	char err[512];

	if (opts.hostname_ == NULL) {
		nbdkit_error("the hostname parameter is required: "
			     "nbdkit rdma hostname=ADDRESS export=NAME");
		return -1;
	}
	if (rb_opts_resolve(&opts, err, sizeof(err)) < 0) {
		nbdkit_error("%s", err);
		return -1;
	}
	if (opts.secret_file != NULL) {
		/* Refuse a bad secret file at startup, not at the first client. */
		struct rb_secret s;
		char msg[512];

		if (rb_secret_load(opts.secret_file, &s, msg, sizeof(msg)) < 0) {
			nbdkit_error("%s", msg);
			return -1;
		}
		rb_secret_wipe(&s);
	}
	if (opts.keepalive_s != 0 && opts.keepalive_s * 3 > opts.timeout_s)
		nbdkit_debug("keepalive=%u detects a dead target in about %u s, "
			     "after timeout=%u", opts.keepalive_s, opts.keepalive_s * 3,
			     opts.timeout_s);
	return 0;
}

#define rdmaplug_config_help \
	"hostname=<ADDR>      (required) The rdmablk target's address or name; or\n" \
	"                     several, comma-separated, for failover between targets of\n" \
	"                     one shared export: A,B:PORT,[IPV6]:PORT (in list order).\n" \
	"port=<PORT>          The targets' port where an entry has none (default 10810).\n" \
	"export=<NAME>        The export (default: the name the NBD client asks for).\n" \
	"queue-depth=<N>      Requests in flight per connection (default 32).\n" \
	"timeout=<SECS>       Per-request deadline, including reconnecting (default 30).\n" \
	"retry=<N>            Retry the first connection N times, with back-off (default 0).\n" \
	"keepalive=<SECS>     Probe an idle connection after SECS; a dead target is\n" \
	"                     noticed within about 3 x SECS; 0 disables (default 2).\n" \
	"busy-poll=<BOOL>|adaptive  Spin on the completion queue instead of sleeping;\n" \
	"                     adaptive (the default): spin about two round trips while\n" \
	"                     one request is out, then sleep.\n" \
	"secret-file=<FILE>   Shared secret for an export that has one (mode 0600);\n" \
	"                     the target must then prove it knows it too.\n" \
	"mr=window|static     Expose each request's buffer through a memory window bound\n" \
	"                     for that request only (the default), or the whole pool MR.\n" \
	"source-address=<ADDR> Connect from this local address (numeric); the target\n" \
	"                     may choose the key by it (allow = ... secret-file=)."

static void
rdmaplug_dump_plugin(void)
{
	char buf[256];

	printf("rdmablk_version=%s\n", RDMABLK_VERSION);
	printf("rdmablk_protocol_version=%d\n", RB_PROTO_VERSION);
	printf("rdmablk_verbs=%s\n", rb_verbs_info(buf, sizeof(buf)));
}

static void
opts_fill(struct rb_opts *o, const char *name)
{
	*o = opts;
	o->export_name = name;
}

static int
ignore_export(void *opaque, const char *name, const char *desc)
{
	(void)opaque;
	(void)name;
	(void)desc;
	return 0;
}

/* After the fork: fail startup now, with the reason, if the target is
 * unreachable or the export unknown.  The probe connection is dropped. */
static int
rdmaplug_after_fork(void)
{
	struct rb_client *c;
	struct rb_opts o;

	rb_set_log(rdmaplug_log);
	opts_fill(&o, opts.export_name);
	if (opts.export_name == NULL)
		return rb_list_exports(&o, ignore_export, NULL) < 0 ? -1 : 0;
	if (rb_client_open(&o, &c) < 0)
		return -1;
	rb_client_close(c);
	return 0;
}

static void *
rdmaplug_open(int readonly)
{
	const char *name = opts.export_name ? opts.export_name : nbdkit_export_name();
	struct handle *h;
	struct rb_opts o;

	(void)readonly;    /* nbdkit enforces it above us */
	if (name == NULL || name[0] == '\0') {
		nbdkit_error("no export name: set export= or have the client ask for one");
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		nbdkit_error("calloc: %m");
		return NULL;
	}
	opts_fill(&o, name);
	if (rb_client_open(&o, &h->client) < 0) {
		free(h);
		return NULL;
	}
	h->desc = rb_client_export(h->client);
	handle_link(h);
	return h;
}

static void
rdmaplug_close(void *handle)
{
	struct handle *h = handle;

	pthread_mutex_lock(&open_lock);
	LIST_REMOVE(h, link);
	closing++;
	pthread_mutex_unlock(&open_lock);
	rb_client_close(h->client);
	free(h);
	pthread_mutex_lock(&open_lock);
	closing--;
	pthread_cond_broadcast(&close_done);
	pthread_mutex_unlock(&open_lock);
}

/* .cleanup: let the .close calls that connection threads are still
 * running finish before nbdkit unloads the code they run. */
static void
wait_for_closes(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += CLOSE_WAIT_S;
	pthread_mutex_lock(&open_lock);
	while (closing > 0 &&
	       pthread_cond_timedwait(&close_done, &open_lock, &ts) != ETIMEDOUT)
		;
	if (closing > 0)
		nbdkit_error("%u connection(s) still closing after %d s; unloading anyway",
			     closing, CLOSE_WAIT_S);
	pthread_mutex_unlock(&open_lock);
}

/* After the last connection thread has returned, before .unload and
 * dlclose: close the clients whose .close nbdkit skipped (see
 * open_handles).  No callback runs on them any more. */
static void
rdmaplug_cleanup(void)
{
	struct handle *h;
	unsigned n = 0;

	wait_for_closes();
	for (;;) {
		pthread_mutex_lock(&open_lock);
		h = LIST_FIRST(&open_handles);
		if (h != NULL)
			LIST_REMOVE(h, link);
		pthread_mutex_unlock(&open_lock);
		if (h == NULL)
			break;
		rb_client_close(h->client);
		free(h);
		n++;
	}
	if (n > 0)
		nbdkit_debug("closed %u connection(s) nbdkit did not close "
			     "before unloading", n);
}

static int
add_export(void *opaque, const char *name, const char *desc)
{
	return nbdkit_add_export(opaque, name, desc[0] ? desc : NULL);
}

static int
rdmaplug_list_exports(int readonly, int is_tls, struct nbdkit_exports *exports)
{
	struct rb_opts o;

	(void)readonly;
	(void)is_tls;
	opts_fill(&o, NULL);
	return rb_list_exports(&o, add_export, exports) != 0 ? -1 : 0;
}

static int
first_export(void *opaque, const char *name, const char *desc)
{
	const char **out = opaque;

	(void)desc;
	*out = nbdkit_strdup_intern(name);
	return 1;
}

static const char *
rdmaplug_default_export(int readonly, int is_tls)
{
	const char *name = NULL;
	struct rb_opts o;

	(void)readonly;
	(void)is_tls;
	if (opts.export_name != NULL)
		return opts.export_name;
	opts_fill(&o, NULL);
	if (rb_list_exports(&o, first_export, &name) < 0)
		return NULL;
	if (name == NULL)
		nbdkit_error("the target offers no export to this address");
	return name;
}

static const char *
rdmaplug_export_description(void *handle)
{
	struct handle *h = handle;

	return h->desc->description[0] ? nbdkit_strdup_intern(h->desc->description)
				       : NULL;
}

static int64_t
rdmaplug_get_size(void *handle)
{
	struct handle *h = handle;

	return (int64_t)h->desc->size;
}

static int
rdmaplug_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
		    uint32_t *maximum)
{
	struct handle *h = handle;

	*minimum = h->desc->min_block;
	*preferred = h->desc->pref_block;
	*maximum = h->desc->max_io;
	return 0;
}

static int
has(void *handle, uint32_t flag)
{
	struct handle *h = handle;

	return (h->desc->flags & flag) != 0;
}

static int
rdmaplug_can_write(void *handle)
{
	return !has(handle, RB_EXP_READ_ONLY);
}

static int
rdmaplug_can_flush(void *handle)
{
	return has(handle, RB_EXP_FLUSH) || has(handle, RB_EXP_DURABLE_ALL);
}

static int
rdmaplug_can_fua(void *handle)
{
	if (has(handle, RB_EXP_FUA) || has(handle, RB_EXP_DURABLE_ALL))
		return NBDKIT_FUA_NATIVE;
	return rdmaplug_can_flush(handle) ? NBDKIT_FUA_EMULATE : NBDKIT_FUA_NONE;
}

static int
rdmaplug_can_trim(void *handle)
{
	return rdmaplug_can_write(handle) && has(handle, RB_EXP_TRIM);
}

static int
rdmaplug_can_zero(void *handle)
{
	return rdmaplug_can_write(handle) && has(handle, RB_EXP_ZEROES);
}

/* Honest: only when the target says zeroing is a cheap metadata update. */
static int
rdmaplug_can_fast_zero(void *handle)
{
	return rdmaplug_can_zero(handle) && has(handle, RB_EXP_FAST_ZERO);
}

static int
rdmaplug_can_multi_conn(void *handle)
{
	return has(handle, RB_EXP_MULTI_CONN);
}

/* No prefetch in the protocol, and reading data only to drop it would
 * cost a network round trip for nothing. */
static int
rdmaplug_can_cache(void *handle)
{
	(void)handle;
	return NBDKIT_CACHE_NONE;
}

static int
result(int r)
{
	if (r < 0) {
		nbdkit_set_error(-r);
		return -1;
	}
	return 0;
}

/* The library splits every request into max-io pieces. */
static int
rdmaplug_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
	       uint32_t flags)
{
	struct handle *h = handle;

	(void)flags;
	return result(rb_read(h->client, buf, count, offset));
}

static int
rdmaplug_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
		uint32_t flags)
{
	struct handle *h = handle;

	return result(rb_write(h->client, buf, count, offset,
			       flags & NBDKIT_FLAG_FUA ? RB_IO_FUA : 0));
}

static int
rdmaplug_flush(void *handle, uint32_t flags)
{
	struct handle *h = handle;

	(void)flags;
	/* durability=always without FLUSH: every replied write is durable. */
	if (!has(handle, RB_EXP_FLUSH) && has(handle, RB_EXP_DURABLE_ALL))
		return 0;
	return result(rb_flush(h->client));
}

static int
rdmaplug_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct handle *h = handle;

	return result(rb_trim(h->client, count, offset,
			      flags & NBDKIT_FLAG_FUA ? RB_IO_FUA : 0));
}

static int
rdmaplug_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct handle *h = handle;
	unsigned rf = 0;

	if ((flags & NBDKIT_FLAG_FAST_ZERO) && !has(handle, RB_EXP_FAST_ZERO)) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	if (flags & NBDKIT_FLAG_FUA)
		rf |= RB_IO_FUA;
	if (!(flags & NBDKIT_FLAG_MAY_TRIM))
		rf |= RB_IO_NO_HOLE;
	return result(rb_zero(h->client, count, offset, rf));
}

/* Block status: nbdkit answers NBD_CMD_BLOCK_STATUS ("base:allocation")
 * with what the target says, so that qemu-img and nbdcopy skip holes. */
static int
rdmaplug_can_extents(void *handle)
{
	return has(handle, RB_EXP_EXTENTS);
}

static int
rdmaplug_extents(void *handle, uint32_t count, uint64_t offset, uint32_t flags,
		 struct nbdkit_extents *extents)
{
	struct handle *h = handle;
	struct rb_extent_info ext[RB_EXTENTS_MAX];
	uint64_t at;
	unsigned i, n;
	int r;

	(void)flags;    /* REQ_ONE: nbdkit keeps the first one itself */
	r = rb_block_status(h->client, count, offset, ext, RB_EXTENTS_MAX, &n);
	if (r < 0)
		return result(r);
	/* The first one starts at offset rounded down to the block size:
	 * nbdkit clips what lies before offset. */
	at = offset - offset % h->desc->min_block;
	for (i = 0; i < n; i++) {
		uint32_t type = (ext[i].flags & RB_EXT_HOLE ? NBDKIT_EXTENT_HOLE : 0) |
				(ext[i].flags & RB_EXT_ZERO ? NBDKIT_EXTENT_ZERO : 0);

		if (nbdkit_add_extent(extents, at, ext[i].length, type) < 0)
			return -1;
		at += ext[i].length;
	}
	return 0;
}

static struct nbdkit_plugin plugin = {
	.name               = "rdma",
	.longname           = "nbdkit rdmablk (RDMA block device) plugin",
	.version            = RDMABLK_VERSION,
	.description        = "Serve an rdmablk export over NBD",
	.load               = rdmaplug_load,
	.unload             = rdmaplug_unload,
	.cleanup            = rdmaplug_cleanup,
	.config             = rdmaplug_config,
	.config_complete    = rdmaplug_config_complete,
	.config_help        = rdmaplug_config_help,
	.magic_config_key   = "hostname",
	.dump_plugin        = rdmaplug_dump_plugin,
	.after_fork         = rdmaplug_after_fork,
	.list_exports       = rdmaplug_list_exports,
	.default_export     = rdmaplug_default_export,
	.open               = rdmaplug_open,
	.close              = rdmaplug_close,
	.export_description = rdmaplug_export_description,
	.get_size           = rdmaplug_get_size,
	.block_size         = rdmaplug_block_size,
	.can_write          = rdmaplug_can_write,
	.can_flush          = rdmaplug_can_flush,
	.can_fua            = rdmaplug_can_fua,
	.can_trim           = rdmaplug_can_trim,
	.can_zero           = rdmaplug_can_zero,
	.can_fast_zero      = rdmaplug_can_fast_zero,
	.can_multi_conn     = rdmaplug_can_multi_conn,
	.can_cache          = rdmaplug_can_cache,
	.can_extents        = rdmaplug_can_extents,
	.extents            = rdmaplug_extents,
	.pread              = rdmaplug_pread,
	.pwrite             = rdmaplug_pwrite,
	.flush              = rdmaplug_flush,
	.trim               = rdmaplug_trim,
	.zero               = rdmaplug_zero,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
