/* rdmablk-target configuration: parse a file into a fresh struct config.
 * Used for -n, at startup and on SIGHUP; a reload swaps the result in only
 * when it parsed without errors. */
#ifndef RDMABLK_TARGET_CONFIG_H
#define RDMABLK_TARGET_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "auth.h"
#include "io/ioq.h"
#include "protocol.h"
#include "rbd/rbd.h"
#include "util.h"

#define CONFIG_DEFAULT_QUEUE_DEPTH 128
#define CONFIG_MAX_QUEUE_DEPTH     RB_MAX_QUEUE_DEPTH
#define CONFIG_DEFAULT_MAX_IO      (1u << 20)
#define CONFIG_MAX_MAX_IO          (16u << 20)
#define CONFIG_DEFAULT_POOL        (64ull << 20)
#define CONFIG_DEFAULT_INLINE_MAX  4096u
#define CONFIG_MAX_THREADS         256   /* io-threads */
#define CONFIG_MAX_LOOPS           64    /* threads: event loops */
#define CONFIG_BLOCK               512u
#define CONFIG_DEFAULT_ADMIN_SOCKET "/run/rdmablk/target.sock"
#define CONFIG_DEFAULT_KEEPALIVE   10u   /* seconds */
#define CONFIG_DEFAULT_HANDSHAKE   15u   /* seconds */
#define CONFIG_MAX_SECONDS         3600u
/* Connections before and after authentication (docs/security.md): every accepted
 * connection pins its receive ring, so none of these is unlimited. */
#define CONFIG_DEFAULT_MAX_CONNS_TOTAL    256u
#define CONFIG_DEFAULT_MAX_HANDSHAKES     64u
#define CONFIG_DEFAULT_MAX_CONNS_PER_ADDR 32u
#define CONFIG_MAX_CONNS                  65535u
#define CONFIG_DEFAULT_FILE        "/etc/rdmablk/rdmablk.conf"

enum durability {
	DURABILITY_ALWAYS,    /* every write is on stable storage before its reply */
	DURABILITY_FUA,       /* only FUA writes and FLUSH are */
};

/* The key of an `allow` line that ends with secret-file=PATH: the addresses
 * on that line authenticate with it instead of the export's secret-file. */
struct cfg_allow_key {
	char    *file;
	int      line;
	struct rb_secret secret;             /* loaded key; wiped when freed */
};

struct cfg_export {
	STAILQ_ENTRY(cfg_export) link;
	int      line;                       /* of its [export NAME] header */
	char     name[RB_EXPORT_NAME_MAX + 1];
	char    *path;
	char     description[RB_DESCRIPTION_MAX + 1];
	uint64_t size_wanted;                /* `size =`, 0 when absent */
	int      read_only;
	enum durability durability;
	struct rb_prefix *allow;             /* NULL/0: any address */
	size_t   nallow;
	unsigned *allow_key;                 /* per allow entry: 1 + index in keys, 0: none */
	struct cfg_allow_key *keys;          /* the allow lines' secret-file= */
	size_t   nkeys;
	int      listed;                     /* `listed =`; -1: unless it needs a secret */
	unsigned max_connections;            /* 0: unlimited */
	int      shared;                     /* `shared =`: RB_EXP_SHARED (default: is_rbd) */
	int      direct_io;                  /* `direct-io =`: O_DIRECT, no page cache */
	char    *secret_file;                /* `secret-file =`, or NULL */
	/* path = rbd:POOL/IMAGE (rbd.h); the ceph-* keys only apply there. */
	int      is_rbd;
	char    *ceph_conf;                  /* `ceph-conf =`, or NULL: RBD_DEFAULT_CONF */
	char    *ceph_id;                    /* `ceph-id =`, or NULL: RBD_DEFAULT_ID */
	char    *ceph_keyring;               /* `ceph-keyring =`, or NULL */
	int      ceph_conf_line, ceph_keyring_line, ceph_line; /* first: any ceph-* */
	struct rb_secret secret;             /* loaded key; wiped when freed */

	/* Filled when the path is opened (not in check-only mode, where
	 * fd stays -1 and rbd NULL after the check). */
	int      fd;
	struct rbd_backing *rbd;             /* an RBD export's open image, or NULL */
	int      is_blockdev;
	uint64_t size;                       /* bytes, multiple of 512 */
	uint64_t dev, ino;                   /* identity, for reload diffs */
};

struct config {
	char    *file;
	char     listen_host[64];
	struct sockaddr_storage listen;
	socklen_t listen_len;
	uint16_t port;
	unsigned queue_depth;
	uint32_t max_io;
	unsigned threads;                    /* `threads =`: event loops (loop.h) */
	unsigned io_threads;                 /* `io-threads =`: workers per loop's ioq */
	enum ioq_engine io_engine;           /* `io-engine =`: io_uring or threads */
	int      log_level;                  /* enum log_level */
	uint64_t buffer_pool;
	uint32_t inline_max;
	char     admin_socket[108];          /* sun_path; "" for none */
	/* `metrics-listen = ADDR:PORT` (metrics.h); len 0: none, the default */
	char     metrics_listen_str[64];
	struct sockaddr_storage metrics_listen;
	socklen_t metrics_listen_len;
	int      admin_socket_set;           /* named in the file, not the default */
	int      stats;                      /* count requests (stats = yes) */
	unsigned keepalive;                  /* s of silence before a probe; 0: none */
	unsigned handshake_timeout;          /* s from accept to HELLO answered */
	unsigned max_conns_total;            /* `max-connections-total =` */
	unsigned max_handshakes;             /* `max-handshakes =`: HELLO/AUTH not done */
	unsigned max_conns_per_addr;         /* `max-connections-per-address =` */
	STAILQ_HEAD(, cfg_export) exports;   /* in file order */
	unsigned nexports;
};

/* CONFIG_CHECK: only check (-n): open paths to prove they can be, but
 * never create or extend files. */
#define CONFIG_CHECK 0x1
/* CONFIG_NO_OPEN: do not touch the export paths at all (--stats only needs
 * the [target] section). */
#define CONFIG_NO_OPEN 0x2

/* Receives one "FILE:LINE: message" per error. */
typedef void config_error_fn(void *arg, const char *msg);

/* A warning about a config: to fn when it is set, else to the log. */
void config_say(config_error_fn *fn, void *arg, const char *msg);

/* Returns the config when there were no errors, else NULL; *nerrors counts
 * them.  err == NULL reports through log_warnx. */
struct config *config_load(const char *file, int flags, config_error_fn *err,
			   void *arg, unsigned *nerrors);
void config_free(struct config *c);
/* A reload (config-target.c): every [target] key that needs a restart and
 * differs in nc from the running config run gets one "reload: KEY = NEW
 * needs a restart; keeping OLD" (to fn, or log_warnx when fn is NULL),
 * and its running value back in nc.  Returns how many. */
unsigned config_keep_restart_only(const struct config *run, struct config *nc,
				  config_error_fn *fn, void *arg);
/* After config_keep_restart_only: what the kept values rule out in nc (an
 * RBD export while the running threads is above 1), one "reload: ..."
 * message each (to fn, or log_warnx).  Returns how many: a reload with
 * any is refused whole. */
unsigned config_reload_conflicts(const struct config *nc, config_error_fn *fn, void *arg);
/* Put c->port into c->listen. */
void config_listen_port(struct config *c);
/* backing-open.c: the key of the export's section an error is about. */
enum backing_key {
	BACKING_KEY_PATH,
	BACKING_KEY_SIZE,
	BACKING_KEY_CEPH_CONF,
	BACKING_KEY_CEPH_KEYRING,
};

struct backing_err {
	enum backing_key key;
	char msg[600];                       /* "path: FILE: why", ... */
};

/* Open e's path (file, block device, or RBD image) to prove it usable and
 * learn its size, identity and kind (fd, rbd, is_blockdev, size, dev,
 * ino).  A file is created or extended to size_wanted unless check (-n),
 * which closes it again.  0, or -1 with err filled. */
int backing_open(struct cfg_export *e, int check, struct backing_err *err);
/* exposure.c: one "FILE:LINE: warning: ..." (to fn, or log_warnx when fn
 * is NULL) per writable export with neither secret-file nor allow list:
 * the config is valid, but any initiator may write that export; and the
 * RBD exports that cannot fail over from a hung target (config_warn_rbd).
 * Returns how many. */
unsigned config_warn(const struct config *c, config_error_fn *fn, void *arg);
/* rbd-conf-check.c: an RBD export whose ceph.conf turns
 * rbd_blocklist_on_break_lock off cannot fail over from a hung target in
 * time (config_warn calls it). */
unsigned config_warn_rbd(const struct config *c, config_error_fn *fn, void *arg);
/* 1 when the ceph.conf at path turns rbd_blocklist_on_break_lock off for
 * clients, with *line its line. */
int ceph_conf_no_blocklist(const char *path, int *line);
/* Free one export (closing its fd), e.g. after moving it out of a config. */
void cfg_export_free(struct cfg_export *e);

const struct cfg_export *config_find_export(const struct config *c,
					    const char *name);
/* 1 when sa may use export e. */
int cfg_export_allows(const struct cfg_export *e, const struct sockaddr *sa);
/* The key sa must prove for export e: that of the longest allow prefix that
 * matches sa, if its line has a secret-file=, else the export's
 * secret-file.  NULL when none is needed.  HELLO and the reload re-check
 * (revoke.c) both ask here. */
const struct rb_secret *cfg_export_secret(const struct cfg_export *e,
					  const struct sockaddr *sa);
/* 1 when LIST shows e to sa: `listed = yes`, or no `listed` and no key
 * needed from sa. */
int cfg_export_listed(const struct cfg_export *e, const struct sockaddr *sa);

#endif
